"""Blocking reads (:class:`moczarr.storage._blocking.BlockingReads`): order, the one limit, a failure ends the batch.

The reads themselves, over a real S3 server with faults injected, are in
``test_faults.py`` (a Scanner's reads) and ``test_living.py`` (catalog builds).
"""

from __future__ import annotations

import pickle
import threading
import time

import pytest

from moczarr.storage import Storage
from moczarr.storage._blocking import BlockingReads


class Probe:
    """Calls that record how many ran at once and in which threads."""

    def __init__(self, seconds: float = 0.0):
        self.seconds = seconds
        self.lock = threading.Lock()
        self.now = self.most = 0
        self.started: list[int] = []
        self.threads: set[int] = set()

    def call(self, i: int, fail: bool = False):
        def run():
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
                self.started.append(i)
                self.threads.add(threading.get_ident())
            try:
                time.sleep(self.seconds)
                if fail:
                    raise PermissionError(f"call {i} refused")
                return i * 10
            finally:
                with self.lock:
                    self.now -= 1

        return run


def test_results_come_in_order_and_a_batch_of_one_stays_in_the_calling_thread():
    reads, probe = BlockingReads(4), Probe()
    assert reads.run([probe.call(7)]) == [70]
    assert probe.threads == {threading.get_ident()}
    assert reads.run([probe.call(i) for i in range(9)]) == [i * 10 for i in range(9)]


def test_no_more_than_the_limit_run_at_once():
    reads, probe = BlockingReads(3), Probe(seconds=0.02)
    assert reads.run([probe.call(i) for i in range(12)]) == [i * 10 for i in range(12)]
    assert probe.most == 3


def test_batches_from_many_threads_share_the_one_limit():
    reads, probe = BlockingReads(4), Probe(seconds=0.01)
    results = {}

    def batch(k: int):
        results[k] = reads.run([probe.call(k * 100 + i) for i in range(5)])

    threads = [threading.Thread(target=batch, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: [(k * 100 + i) * 10 for i in range(5)] for k in range(6)}
    assert probe.most == 4


def test_the_first_failure_ends_the_batch_and_what_waits_never_starts():
    reads, probe = BlockingReads(1), Probe(seconds=0.01)
    with pytest.raises(PermissionError, match="call 0 refused"):
        reads.run([probe.call(0, fail=True)] + [probe.call(i) for i in range(1, 8)])
    time.sleep(0.1)  # a call that was going to start would have by now
    assert probe.started == [0]


def test_a_failure_in_flight_does_not_wait_for_the_slow_calls():
    reads, probe = BlockingReads(4), Probe()
    slow = Probe(seconds=1.0)
    t0 = time.monotonic()
    with pytest.raises(PermissionError, match="call 1 refused"):
        reads.run([slow.call(0), probe.call(1, fail=True)])
    assert time.monotonic() - t0 < 0.5


def test_only_an_obstore_handle_reads_blocking_and_it_pickles_as_such(tmp_path):
    assert Storage.open(tmp_path, blocking=True)._blocking is None  # local reads are plain file reads already
    options = {"anon": True, "client_kwargs": {"endpoint_url": "http://127.0.0.1:9", "region_name": "us-east-1"}}
    remote = Storage.open("s3://bucket/prefix", options, concurrency=5, blocking=True)
    assert isinstance(remote._blocking, BlockingReads) and remote._blocking.concurrency == 5
    assert remote.below("a")._blocking is remote._blocking and remote.child("p")._blocking is remote._blocking
    assert Storage.open("s3://bucket/prefix", options)._blocking is None  # the event loop by default
    fsspec = Storage.open("s3://bucket/prefix", {**options, "moczarr_backend": "s3fs"}, blocking=True)
    assert fsspec._blocking is None  # s3fs has no blocking calls here: its reads stay on the loop
    again = pickle.loads(pickle.dumps(remote))
    assert isinstance(again._blocking, BlockingReads) and again._blocking is not remote._blocking
