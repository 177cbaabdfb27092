"""Reads made in the caller's threads: the in-flight limit and batches of a handle read by many threads at once.

A catalog build reads hundreds of small objects from dozens of threads of its
own. Sent through the event loop, each request costs a hop to the loop's
thread and back and an asyncio task or two: about 0.7 ms of CPU, counting,
retries and checks included (``benchmarks/bench_request_cpu.py``); sent
through the client's blocking call in the calling thread (the GIL released
while it waits), about 0.3 ms. :class:`BlockingReads` is what such a
handle shares instead of its event-loop limit: one semaphore of
``concurrency`` slots, and the threads a batch of more than one read runs on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")


class BlockingReads:
    """One in-flight limit of ``concurrency`` slots for blocking reads from any thread, and the batch runner."""

    def __init__(self, concurrency: int):
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def run(self, calls: Sequence[Callable[[], T]]) -> list[T]:
        """Every ``call()``, in order, each holding a slot while it runs; the first failure ends the batch.

        A batch of one runs in the calling thread; a larger one on the
        handle's threads, all at once up to the limit. Once a call fails, the
        calls still waiting for a slot never start, and the first failure is
        raised without waiting for the calls in flight.
        """
        failures: list[BaseException] = []
        if len(calls) == 1:
            return [self._one(calls[0], failures)]
        pool = self._threads()
        futures = [pool.submit(self._one, call, failures) for call in calls]
        wait(futures, return_when=FIRST_EXCEPTION)
        if failures:
            for future in futures:
                future.cancel()
            raise failures[0]
        return [future.result() for future in futures]

    def _one(self, call: Callable[[], T], failures: list[BaseException]) -> T:
        with self._slots:
            if failures:
                raise _Skipped
            try:
                return call()
            except BaseException as exc:
                failures.append(exc)  # before the slot is released: no waiter starts after a failure
                raise

    def _threads(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="moczarr-read")
            return self._pool


class _Skipped(Exception):
    """A call of a batch that had already failed, not started (never raised to the caller)."""


__all__ = ["BlockingReads"]
