"""Object-store faults: moto's real S3 server behind a fault-injecting proxy (both on 127.0.0.1).

Every open here either equals the local open of the same store or raises a
typed :class:`~moczarr.errors.StorageError` naming the object, within its
time bound; never a partial Dataset. Transient faults (5xx, ``SlowDown``,
resets, truncated bodies, latency) are retried inside the budget; fatal ones
(403) fail at once; a stalled object fails within the deadline; an error that
ends an open cancels the rest of its batch.

Every fault case runs on both object-store clients (``moczarr_backend``
``obstore``, the default for ``s3://``, and ``s3fs``): each must classify its
client's failures alike. Each test sets a small retry policy through
``storage_options`` so that it runs in seconds; the defaults themselves are
checked on the options the storage layer builds.
"""

from __future__ import annotations

import socket
import time
import warnings
from dataclasses import asdict

import numpy as np
import pytest
import xarray as xr

import moczarr
import moczarr.moraine
from moczarr.errors import (
    ArgumentError,
    StorageError,
    StoragePermissionError,
    StorageThrottledError,
    StorageTimeoutError,
)
from moczarr.metadata import Scanner
from moczarr.storage import (
    BACKEND_OPTION,
    CONNECT_TIMEOUT,
    DEFAULT_CONCURRENCY,
    READ_TIMEOUT,
    RetryPolicy,
    Storage,
    fsspec_options,
    obstore_options,
)
from tests.faultproxy import FaultProxy
from tests.helpers import fixture_path

BUCKET = "moczarr-faults"
HIVE = "zagg/single_8/store"
MORAINE = "moraine/ras_mean_v1"
LEAF_STAMP = ".zarr/zarr.json"  # a leaf's root zarr.json: the stamps the open batches
#: fast retries for the tests: 4 tries within 8 s, 20 ms backoff
FAST = {"attempts": 4, "deadline": 8.0, "backoff": 0.02, "max_backoff": 0.1}


def store_path(name: str):
    """The one place this file finds its stores (the lead may switch it to generated stores)."""
    return fixture_path(name)


@pytest.fixture(scope="module")
def servers(s3_server, store_layer):
    s3_server.bucket(BUCKET, public=True)
    for name in (HIVE, MORAINE):
        s3_server.upload_tree(store_path(name), BUCKET, name)
    with FaultProxy(s3_server.endpoint_url, max_stall=20.0) as proxy:
        yield s3_server, proxy


BACKENDS = ["obstore", "s3fs"]


@pytest.fixture(params=BACKENDS)
def proxy(servers, request):
    """The fault proxy, cleared; ``proxy.backend`` is the client the test's opens use."""
    _, proxy = servers
    proxy.clear()
    proxy.backend = request.param
    yield proxy
    proxy.clear()


def options(proxy: FaultProxy, *, retry: dict | None = None, **config) -> dict:
    opts = {"anon": True, "client_kwargs": {"endpoint_url": proxy.endpoint_url, "region_name": "us-east-1"}}
    opts[BACKEND_OPTION] = proxy.backend
    opts["moczarr_retry"] = dict(FAST if retry is None else retry)
    if config:
        opts["config_kwargs"] = config
    return opts


@pytest.fixture(scope="module")
def golden(store_layer):
    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.errors.MoczarrWarning)
        return moczarr.open_hive(store_path(HIVE)).load()


def open_remote(proxy, **kwargs) -> xr.Dataset:
    concurrency = kwargs.pop("concurrency", DEFAULT_CONCURRENCY)
    return moczarr.open_hive(f"s3://{BUCKET}/{HIVE}", storage_options=options(proxy, **kwargs), concurrency=concurrency)


def assert_golden(ds: xr.Dataset, golden: xr.Dataset) -> None:
    loaded = ds.load()
    np.testing.assert_array_equal(loaded["morton"].values, golden["morton"].values)
    xr.testing.assert_identical(loaded.drop_attrs(), golden.drop_attrs())


# -- the defaults -------------------------------------------------------------------------------------
def test_default_options_bound_every_request():
    opts, policy = fsspec_options("s3", {"anon": True}, concurrency=48)
    config = opts["config_kwargs"]
    assert config["connect_timeout"] == CONNECT_TIMEOUT == 5.0
    assert config["read_timeout"] == READ_TIMEOUT == 10.0
    assert config["retries"] == {"total_max_attempts": 1}  # botocore makes one attempt: moczarr retries
    assert config["max_pool_connections"] == 48  # the pool is sized to the concurrency
    assert policy == RetryPolicy() and policy.attempts == 4 and policy.deadline == 30.0
    assert "moczarr_retry" not in opts and opts["anon"] is True


def test_caller_options_win():
    opts, policy = fsspec_options(
        "s3",
        {
            "config_kwargs": {"read_timeout": 2, "max_pool_connections": 4},
            "moczarr_retry": {"attempts": 2, "deadline": 5},
        },
    )
    assert opts["config_kwargs"]["read_timeout"] == 2 and opts["config_kwargs"]["max_pool_connections"] == 4
    assert opts["config_kwargs"]["connect_timeout"] == CONNECT_TIMEOUT
    assert policy.attempts == 2 and policy.deadline == 5


@pytest.mark.parametrize("bad", [{"attempts": 0}, {"deadline": -1}, {"tries": 3}, "fast"])
def test_bad_retry_options_raise_typed(bad):
    with pytest.raises(ArgumentError, match="moczarr_retry") as info:  # a bad option, not a storage failure
        fsspec_options("s3", {"moczarr_retry": bad})
    assert not isinstance(info.value, StorageError)


def test_obstore_options_bound_every_request():
    opts = {"anon": True, "client_kwargs": {"endpoint_url": "http://127.0.0.1:1", "region_name": "us-east-1"}}
    mapped = obstore_options("s3://b/p", opts, RetryPolicy(), concurrency=48)
    client, retry = mapped.kwargs["client_options"], mapped.kwargs["retry_config"]
    assert client["connect_timeout"].total_seconds() == CONNECT_TIMEOUT
    assert client["read_timeout"].total_seconds() == READ_TIMEOUT
    assert client["pool_max_idle_per_host"] == "48"  # the pool is sized to the concurrency
    assert retry["max_retries"] == 0  # obstore makes one attempt: moczarr retries
    caller = {**opts, "config_kwargs": {"read_timeout": 2, "max_pool_connections": 4}}
    client = obstore_options("s3://b/p", caller, RetryPolicy(), concurrency=48).kwargs["client_options"]
    assert client["read_timeout"].total_seconds() == 2 and client["pool_max_idle_per_host"] == "4"


@pytest.mark.layers
def test_the_client_gets_the_bounds(proxy):
    storage = Storage.open(f"s3://{BUCKET}/{HIVE}", options(proxy), concurrency=24)
    assert storage.get_bytes("morton_hive.json") is not None
    if proxy.backend == "obstore":
        inner = storage.store._store.store
        assert type(inner).__name__ == "S3Store"
        client = inner.client_options
        assert (client["connect_timeout"], client["read_timeout"]) == ("5s", "10s")
        assert client["pool_max_idle_per_host"] == "24"
        assert inner.retry_config["max_retries"] == 0  # obstore's own loop is off: one budget, counted once
        return
    fs = storage.store._store.fs
    config = fs.s3.meta.config
    assert (config.connect_timeout, config.read_timeout) == (CONNECT_TIMEOUT, READ_TIMEOUT)
    assert config.max_pool_connections == 24
    assert fs.retries == 1  # s3fs's own loop is off: one budget, counted once


# -- transient faults are retried: equal results -------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize(
    "match,fault",
    [
        ("morton_hive.json", {"kind": "status", "status": 500, "code": "InternalError", "times": 2}),
        ("coverage.moc", {"kind": "status", "status": 503, "code": "SlowDown", "times": 2}),
        (LEAF_STAMP, {"kind": "status", "status": 500, "code": "InternalError", "times": 3}),
        (LEAF_STAMP, {"kind": "reset", "times": 2}),
        ("/c/", {"kind": "reset", "times": 3}),
        ("/c/", {"kind": "truncate", "times": 3}),
        ("/c/", {"kind": "status", "status": 503, "code": "SlowDown", "times": 3}),
        ("/c/", {"kind": "corrupt", "times": 3}),
        ("", {"kind": "latency", "seconds": 0.01}),
    ],
    ids=[
        "manifest-500",
        "moc-slowdown",
        "stamps-500",
        "stamps-reset",
        "chunks-reset",
        "chunks-truncated",
        "chunks-slowdown",
        "chunks-checksum",
        "latency",
    ],
)
def test_transient_faults_give_the_golden_answer(proxy, golden, match, fault):
    proxy.add(match, **fault)
    t0 = time.monotonic()
    assert_golden(open_remote(proxy), golden)
    assert time.monotonic() - t0 < 20
    if fault["kind"] != "latency":
        assert proxy.rules[0].hits == fault["times"]  # the faults were served, and survived


# -- persistent faults: a typed error naming the object, within the bound --------------------------------
@pytest.mark.layers
@pytest.mark.parametrize("reader", ["open", "scanner"])
def test_persistent_500_raises_storage_error_naming_the_key(proxy, reader):
    proxy.add("morton_hive.json", kind="status", status=500, code="InternalError")
    t0 = time.monotonic()
    with pytest.raises(StorageError, match=r"s3://moczarr-faults/zagg/single_8/store/morton_hive.json") as info:
        open_remote(proxy) if reader == "open" else summarize_remote(proxy)  # a Scanner: blocking reads
    assert time.monotonic() - t0 < FAST["deadline"]
    assert "4 tries" in str(info.value) and "InternalError" in str(info.value)
    assert info.value.__cause__ is not None  # the client's own failure, chained
    assert proxy.count("morton_hive.json") == FAST["attempts"]


@pytest.mark.layers
def test_persistent_slowdown_is_throttled(proxy):
    proxy.add(LEAF_STAMP, kind="status", status=503, code="SlowDown")
    with pytest.raises(StorageThrottledError, match=r"\.zarr/zarr\.json"):
        open_remote(proxy)


@pytest.mark.layers
def test_persistent_429_is_throttled_after_the_budget(proxy):
    proxy.add("morton_hive.json", kind="status", status=429, code="TooManyRequests")
    with pytest.raises(StorageThrottledError, match=r"morton_hive\.json"):
        open_remote(proxy)
    assert proxy.count("morton_hive.json") == FAST["attempts"]


@pytest.mark.layers
def test_unauthenticated_fails_at_once(proxy):
    proxy.add("morton_hive.json", kind="status", status=401, code="Unauthorized")
    with pytest.raises(StoragePermissionError, match=r"morton_hive\.json"):
        open_remote(proxy)
    assert proxy.count("morton_hive.json") == 1


@pytest.mark.layers
def test_a_refused_connection_is_retried_then_typed(proxy):
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = options(proxy)
    opts["client_kwargs"] = {**opts["client_kwargs"], "endpoint_url": f"http://127.0.0.1:{port}"}
    t0 = time.monotonic()
    with pytest.raises(StorageError, match=r"morton_hive\.json.*4 tries") as info:
        moczarr.open_hive(f"s3://{BUCKET}/{HIVE}", storage_options=opts)
    assert not isinstance(info.value, (StoragePermissionError, StorageTimeoutError))
    assert time.monotonic() - t0 < FAST["deadline"]


@pytest.mark.layers
def test_access_denied_fails_at_once_and_cancels_the_batch(proxy):
    proxy.add(LEAF_STAMP, kind="status", status=403, code="AccessDenied")
    with pytest.raises(
        StoragePermissionError, match=r"access denied.*\.zarr/zarr\.json|\.zarr/zarr\.json.*access denied"
    ):
        open_remote(proxy, concurrency=1)
    time.sleep(0.2)  # anything still in flight would have arrived by now
    assert proxy.count(LEAF_STAMP) == 1  # no retry of a 403, and the other 7 stamps were never sent


@pytest.mark.layers
def test_a_fatal_error_cancels_what_is_queued(proxy):
    proxy.add(LEAF_STAMP, kind="status", status=403, code="AccessDenied")
    with pytest.raises(StoragePermissionError):
        open_remote(proxy, concurrency=2)
    time.sleep(0.2)
    assert proxy.count(LEAF_STAMP) <= 2  # at most what was in flight, of 8 candidates


@pytest.mark.layers
def test_a_stalled_object_times_out_within_the_deadline(proxy):
    proxy.add(LEAF_STAMP, kind="stall", seconds=20)
    retry = {"attempts": 3, "deadline": 3.0, "backoff": 0.05}
    t0 = time.monotonic()
    with pytest.raises(StorageTimeoutError, match=r"\.zarr/zarr\.json.*timed out|timed out") as info:
        open_remote(proxy, retry=retry, read_timeout=1, connect_timeout=1)
    elapsed = time.monotonic() - t0
    assert elapsed < retry["deadline"] + 1.5, elapsed
    assert ".zarr/zarr.json" in str(info.value)


@pytest.mark.layers
def test_a_chunk_stalled_once_is_retried(proxy, golden):
    ds = open_remote(proxy, retry={"attempts": 2, "deadline": 4.0, "backoff": 0.05}, read_timeout=1)
    proxy.add("/c/", kind="stall", seconds=20, times=1)
    t0 = time.monotonic()
    assert_golden(ds, golden)
    assert proxy.rules[0].hits == 1 and time.monotonic() - t0 < 4.0


@pytest.mark.layers
def test_a_stalled_chunk_fails_the_compute_not_a_partial_dataset(proxy, golden):
    ds = open_remote(proxy, retry={"attempts": 2, "deadline": 2.0, "backoff": 0.05}, read_timeout=1)
    proxy.add("/c/", kind="stall", seconds=20)
    t0 = time.monotonic()
    with pytest.raises(StorageTimeoutError, match="/c/"):
        ds.load()
    assert time.monotonic() - t0 < 6.0
    proxy.clear()
    assert_golden(ds, golden)  # the same lazy Dataset computes whole once the store answers


@pytest.mark.layers
def test_persistent_chunk_500_raises_at_compute_naming_the_chunk(proxy):
    ds = open_remote(proxy)
    proxy.add("/c/", kind="status", status=500, code="InternalError")
    with pytest.raises(StorageError, match=r"/c/\d"):
        ds.load()


@pytest.mark.layers
def test_persistently_corrupt_bodies_fail_the_checksum_typed(proxy):
    ds = open_remote(proxy)
    proxy.add("/count/c/", kind="corrupt")
    with pytest.raises(StorageError, match=r"count/c/0.*Checksum|Checksum.*count/c/0"):
        ds["count"].compute()  # never the flipped bytes decoded as data


# -- the other readers ---------------------------------------------------------------------------------
@pytest.mark.layers
def test_moraine_marker_500_is_not_an_answer(proxy):
    url = f"s3://{BUCKET}/{MORAINE}"
    assert moczarr.moraine.is_moraine_pyramid(url, storage_options=options(proxy)) is True
    proxy.add("0.zarr/zarr.json", kind="status", status=500, code="InternalError")
    with pytest.raises(StorageError, match=r"0\.zarr"):
        moczarr.moraine.is_moraine_pyramid(url, storage_options=options(proxy))


@pytest.mark.layers
def test_moraine_level_retries_resets(proxy):
    url = f"s3://{BUCKET}/{MORAINE}"
    local = moczarr.moraine.open_moraine_level(store_path(MORAINE), 1).load()
    proxy.add("1.zarr/", kind="reset", times=2)
    remote = moczarr.moraine.open_moraine_level(url, 1, storage_options=options(proxy)).load()
    xr.testing.assert_identical(remote, local)


@pytest.mark.layers
def test_cli_prints_one_error_line_for_a_persistent_500(servers, capsys):
    """The CLI's ``--anon --endpoint-url`` options map onto obstore: the default client."""
    from moczarr_intake.cli import main

    _, proxy = servers
    proxy.clear()
    proxy.add("morton_hive.json", kind="status", status=500, code="InternalError")
    proxy.add("0.zarr", kind="status", status=500, code="InternalError")
    t0 = time.monotonic()
    code = main(["show", f"s3://{BUCKET}/{HIVE}", "--anon", "--endpoint-url", proxy.endpoint_url])
    err = capsys.readouterr().err
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "zagg/single_8/store" in err
    assert time.monotonic() - t0 < RetryPolicy().deadline


# -- a catalog's reads: a Scanner's blocking calls (obstore), under the same budget ---------------------
ARRAY_DOCS = "/8/h_"  # the array documents of the leaf a summary reads its variables from


def summarize_remote(proxy, *, concurrency: int = DEFAULT_CONCURRENCY, **kwargs):
    return Scanner(f"s3://{BUCKET}", options(proxy, **kwargs), concurrency).summarize(HIVE)


def summary_facts(summary) -> list:
    return [(p.name, p.shards, p.bbox, [asdict(v) for v in p.variables], p.windows) for p in summary.products]


@pytest.fixture(scope="module")
def local_summary(store_layer):
    return summary_facts(Scanner(store_path(HIVE)).summarize())


@pytest.mark.layers
@pytest.mark.parametrize(
    "match,fault",
    [
        ("morton_hive.json", {"kind": "status", "status": 500, "code": "InternalError", "times": 2}),
        ("coverage.moc", {"kind": "reset", "times": 2}),
        (LEAF_STAMP, {"kind": "status", "status": 503, "code": "SlowDown", "times": 3}),
        (ARRAY_DOCS, {"kind": "truncate", "times": 3}),
        (ARRAY_DOCS, {"kind": "corrupt", "times": 3}),
    ],
    ids=["manifest-500", "moc-reset", "stamp-slowdown", "arrays-truncated", "arrays-checksum"],
)
def test_a_scanners_transient_faults_give_the_local_summary(proxy, local_summary, match, fault):
    proxy.add(match, **fault)
    assert summary_facts(summarize_remote(proxy)) == local_summary
    assert proxy.rules[0].hits == fault["times"]  # the faults were served, and survived


@pytest.mark.layers
def test_a_scanners_listing_is_retried_alike(proxy):
    local = Scanner(store_path(HIVE)).list_entries([""])[0]
    proxy.add(BUCKET, kind="status", status=500, code="InternalError", times=2)  # the LIST: the one request
    remote = Scanner(f"s3://{BUCKET}", options(proxy)).list_entries([HIVE])[0]
    assert remote.folders == local.folders and list(remote.objects) == list(local.objects)
    assert proxy.rules[0].hits == 2


@pytest.mark.layers
def test_a_scanners_reads_take_no_event_loop_over_obstore(proxy, local_summary, monkeypatch):
    import moczarr.storage._storage as storage_module

    def no_loop(*args, **kwargs):
        raise AssertionError("a read went through the event loop")

    if proxy.backend == "obstore":
        monkeypatch.setattr(storage_module, "sync", no_loop)
    assert summary_facts(summarize_remote(proxy)) == local_summary


@pytest.mark.layers
def test_a_scanners_403_fails_at_once_and_stops_its_batch(proxy):
    proxy.add(BUCKET, kind="status", status=403, code="AccessDenied")  # every request: here, LISTs only
    scanner = Scanner(f"s3://{BUCKET}", options(proxy), concurrency=1)
    with pytest.raises(StoragePermissionError, match=r"s3://moczarr-faults/zagg/\w+/ \(LIST\)"):
        scanner.list_entries([f"zagg/{name}" for name in ("a", "b", "c", "d", "e", "f")])
    time.sleep(0.2)  # anything still in flight would have arrived by now
    assert proxy.count(BUCKET) == 1  # no retry of a 403, and the batch's other five LISTs were never sent


@pytest.mark.layers
def test_a_scanners_persistently_corrupt_body_fails_the_checksum(proxy):
    proxy.add(LEAF_STAMP, kind="corrupt")
    with pytest.raises(StorageError, match=r"\.zarr/zarr\.json.*Checksum|Checksum.*\.zarr/zarr\.json"):
        summarize_remote(proxy)


@pytest.mark.layers
def test_a_scanners_stalled_object_times_out_within_the_deadline(proxy):
    proxy.add(LEAF_STAMP, kind="stall", seconds=20)
    retry = {"attempts": 3, "deadline": 3.0, "backoff": 0.05}
    t0 = time.monotonic()
    with pytest.raises(StorageTimeoutError, match=r"\.zarr/zarr\.json"):
        summarize_remote(proxy, retry=retry, read_timeout=1, connect_timeout=1)
    assert time.monotonic() - t0 < retry["deadline"] + 1.5
