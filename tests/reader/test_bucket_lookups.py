"""A bucket's region lookup (one ``HEAD``) over many buckets: at once, once per bucket, none when the region is given.

A catalog build with one store per bucket opens one client per bucket. An
S3 bucket whose region the options do not give is looked up with one
unsigned ``HEAD`` on the bucket (``moczarr.storage.bucket_region``); a
catalog's handles make it from the first read, in the thread that reads,
so N buckets read by N threads cost about one round trip of lookups, not N
in a row. Checked against moto's server behind the fault proxy: a proxy that
holds every ``HEAD`` until all the buckets' are in flight at once tells
lookups made together from lookups made one after another (no test is
timed).
"""

from __future__ import annotations

import pickle
import shutil
import threading
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from moczarr.storage import Storage, bucket_region, count_requests
from moczarr.testing import write_sample_store
from moczarr_intake.roots.scan import read_roots
from tests.faultproxy import FaultProxy
from tests.s3server import REGION

#: buckets of a build, one store each
BUCKETS = 8
#: the objects a catalog build reads of a store (the rest of the sample is not uploaded)
CATALOG_OBJECTS = ("morton_hive.json", "coverage.moc", "zarr.json")
#: seconds a held HEAD waits for the others before the proxy gives up on them (below the client's 5 s timeout)
PATIENCE = 3.0


class HeadsTogether(FaultProxy):
    """The fault proxy, holding each ``HEAD`` until ``parties`` of them are in flight at once.

    Lookups made one after another never get there: the first waits
    :data:`PATIENCE` seconds, the barrier breaks (:attr:`barrier` ``.broken``)
    and every ``HEAD`` from then on is forwarded at once. :attr:`most` is the
    most ``HEAD`` requests the proxy held at one time.
    """

    def __init__(self, upstream: str, parties: int):
        super().__init__(upstream)
        self.barrier = threading.Barrier(parties, timeout=PATIENCE)
        self.in_flight = self.most = 0

    def _handle(self, h) -> None:
        if h.command == "HEAD":
            with self.lock:
                self.in_flight += 1
                self.most = max(self.most, self.in_flight)
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                pass
            finally:
                with self.lock:
                    self.in_flight -= 1
        super()._handle(h)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The catalog objects of the sample's bare ``elevation`` store (a small one)."""
    sample = write_sample_store(tmp_path_factory.mktemp("lookups") / "sample") / "elevation"
    kept = tmp_path_factory.mktemp("lookups") / "elevation"
    for path in sample.rglob("*"):
        if path.is_file() and path.name in CATALOG_OBJECTS:
            (kept / path.relative_to(sample)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, kept / path.relative_to(sample))
    return kept


def new_buckets(s3, store, n: int) -> list[str]:
    """``n`` public buckets new to this process (lookups are cached), each holding ``store`` at ``p``."""
    run = uuid.uuid4().hex[:8]
    names = [s3.bucket(f"lookup-{run}-{i}", public=True) for i in range(n)]
    for name in names:
        s3.upload_tree(store, name, "p")
    return names


def anon(endpoint: str, **client) -> dict:
    return {"anon": True, "client_kwargs": {"endpoint_url": endpoint, **client}}


def test_the_buckets_of_a_build_are_looked_up_at_once(s3_server, store):
    """One store in each of 8 buckets: the 8 lookups are in flight together (one round trip, not 8), one each."""
    buckets = new_buckets(s3_server, store, BUCKETS)
    with HeadsTogether(s3_server.endpoint_url, BUCKETS) as proxy, count_requests() as counter:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reading = read_roots([f"s3://{b}/p" for b in buckets], anon(proxy.endpoint_url))
        assert not proxy.barrier.broken, f"the lookups came one after another (at most {proxy.most} at once)"
        assert proxy.most == BUCKETS
        assert proxy.count("", "HEAD") == counter["HEAD", "bucket"] == BUCKETS  # one per bucket
    assert [s.root for s in reading.summaries] == [f"s3://{b}/p" for b in buckets]


def test_a_region_given_is_never_looked_up(s3_server, store):
    buckets = new_buckets(s3_server, store, 3)
    with FaultProxy(s3_server.endpoint_url) as proxy, count_requests() as counter:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reading = read_roots([f"s3://{b}/p" for b in buckets], anon(proxy.endpoint_url, region_name=REGION))
        assert proxy.count("", "HEAD") == counter["HEAD", "bucket"] == 0
        assert counter.lists == len(buckets)  # the reads did go through the proxy
    assert len(reading.summaries) == len(buckets)


def test_a_bucket_asked_for_by_many_threads_at_once_is_looked_up_once(s3_server):
    bucket = s3_server.bucket(f"lookup-{uuid.uuid4().hex[:8]}", public=True)
    with FaultProxy(s3_server.endpoint_url) as proxy:
        proxy.add("", "latency", method="HEAD", seconds=0.3)  # the others ask while the first is on the wire
        with count_requests() as counter, ThreadPoolExecutor(BUCKETS) as pool:
            regions = list(pool.map(lambda _: bucket_region(bucket, proxy.endpoint_url), range(BUCKETS)))
        assert regions == [REGION] * BUCKETS
        assert proxy.count("", "HEAD") == counter["HEAD", "bucket"] == 1


def test_a_catalog_handle_looks_its_bucket_up_at_its_first_read(s3_server, store):
    """A handle of many threads (``blocking=True``) makes no request when opened; its first read looks up."""
    [bucket] = new_buckets(s3_server, store, 1)
    with s3_server.count_http() as http:
        storage = Storage.open(f"s3://{bucket}/p", anon(s3_server.endpoint_url), blocking=True)
        assert storage.store.address("morton_hive.json") == f"s3://{bucket}/p/morton_hive.json"
        clone = pickle.loads(pickle.dumps(storage.store))
    assert http.total == 0
    with s3_server.count_http() as http, count_requests() as counter:
        assert storage.get_bytes("morton_hive.json") == (store / "morton_hive.json").read_bytes()
    assert http.heads == counter["HEAD", "bucket"] == 1 and http.object_gets == 1
    with s3_server.count_http() as http:
        assert clone.get_blocking("morton_hive.json") == (store / "morton_hive.json").read_bytes()
    assert http.heads == 0 and http.object_gets == 1  # the region is known to the process now
