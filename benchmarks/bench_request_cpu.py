"""The client's CPU per small GET, through each layer of the read path, beside obstore's own cost.

    python benchmarks/bench_request_cpu.py [--objects 1000] [--concurrency 32] [--runs 3] [--scratch DIR]

A catalog build over object storage is bound by CPU, not the wire, on a small
machine (docs/performance.md, "Catalog builds"), and most of its reads are single
small objects asked for one after another by many threads (a summary's
manifest, root MOC, stamp). This prints, for ``--objects`` GETs of 600-byte
objects from ``rclone serve s3`` on 127.0.0.1 (no added latency: the figure is
CPU, not waiting), the CPU seconds of this process per request (Linux
``getrusage``, every thread) and the wall time per request:

- ``obstore get, threads`` (the floor): obstore's blocking ``get`` from
  ``--concurrency`` threads, the cheapest way its client sends a request;
- ``obstore get_async, one loop``: the same GETs as coroutines on one event
  loop, ``--concurrency`` in flight;
- ``Storage.get_many, one batch``: moczarr's read path (counting, retries,
  deadline, MD5 check) for all objects in one batch: one thread-to-loop hop;
- ``Storage.get_bytes, threads``: moczarr's read path one object at a time
  from ``--concurrency`` threads: one hop each;
- ``blocking Storage.get_bytes, threads``: the same through a handle opened
  with ``blocking=True``, as a catalog's summaries read (a ``Scanner``):
  obstore's blocking call in each thread, with moczarr's counting, retry
  budget and MD5 check around it, no event loop;
- ``blocking Storage.get_many, one batch``: that handle's batch of all objects,
  on the handle's threads;
- ``the hop alone``: zarr's ``sync`` of a coroutine that does nothing, from
  ``--concurrency`` threads: what carrying a call to the event loop and back costs.

``x floor`` is each row's CPU per request over the floor's. Medians of ``--runs``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_s3 import KEY, REGION, SECRET, free_port, start_server, wait_for_port

from moczarr.storage import Storage

BUCKET = "bench"
OBJECT_BYTES = 600


def cpu_seconds() -> float:
    """CPU seconds of this process so far, every thread, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(run: Callable[[], object], count: int, runs: int) -> tuple[float, float]:
    """``(cpu ms, wall ms)`` per request: medians over ``runs`` calls of ``run`` (each ``count`` requests)."""
    cpu, wall = [], []
    for _ in range(runs):
        c0, t0 = cpu_seconds(), time.perf_counter()
        run()
        cpu.append((cpu_seconds() - c0) * 1e3 / count)
        wall.append((time.perf_counter() - t0) * 1e3 / count)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=1000, help="GETs per run")
    parser.add_argument("--concurrency", type=int, default=32, help="threads, and requests in flight")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scratch", default=None, help="folder for the served objects (default: the temp folder)")
    args = parser.parse_args()
    import obstore
    from obstore.store import S3Store
    from zarr.core.sync import sync

    scratch = Path(tempfile.mkdtemp(prefix="bench-request-cpu-", dir=args.scratch))
    server = None
    try:
        folder = scratch / BUCKET / "x"
        folder.mkdir(parents=True)
        names = [f"o{i:05}" for i in range(args.objects)]
        for name in names:
            (folder / name).write_bytes(b"x" * OBJECT_BYTES)
        port = free_port()
        server = start_server("rclone", scratch, port, 600)
        wait_for_port(port)
        endpoint = f"http://127.0.0.1:{port}"
        options = {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION}}
        storage = Storage.open(f"s3://{BUCKET}/x", options, args.concurrency)
        blocking = Storage.open(f"s3://{BUCKET}/x", options, args.concurrency, blocking=True)
        raw = S3Store(
            BUCKET,
            endpoint=endpoint,
            access_key_id=KEY,
            secret_access_key=SECRET,
            region=REGION,
            client_options={"allow_http": True},
        )
        n, threads = args.objects, args.concurrency

        def in_threads(one: Callable[[str], object]) -> Callable[[], object]:
            def run() -> None:
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(one, names))

            return run

        async def on_one_loop() -> None:
            limit = asyncio.Semaphore(threads)

            async def one(name: str) -> bytes:
                async with limit:
                    result = await obstore.get_async(raw, f"x/{name}")
                    return bytes(await result.bytes_async())

            await asyncio.gather(*(one(name) for name in names))

        async def nothing() -> None:
            return None

        cases: list[tuple[str, Callable[[], object]]] = [
            ("obstore get, threads (floor)", in_threads(lambda name: obstore.get(raw, f"x/{name}").bytes())),
            ("obstore get_async, one loop", lambda: asyncio.run(on_one_loop())),
            ("Storage.get_many, one batch", lambda: storage.get_many(names)),
            ("Storage.get_bytes, threads", in_threads(storage.get_bytes)),
            ("blocking Storage.get_bytes, threads", in_threads(blocking.get_bytes)),
            ("blocking Storage.get_many, one batch", lambda: blocking.get_many(names)),
            ("the hop alone", in_threads(lambda name: sync(nothing()))),
        ]
        for _, run in cases[:6]:  # connections opened, code warm
            run()
        print(
            f"python {sys.version.split()[0]}, rclone on 127.0.0.1, {n} GETs of {OBJECT_BYTES} B a run, "
            f"{threads} threads / in flight, {os.cpu_count()} cores, medians of {args.runs}"
        )
        print(f"{'path':<40}{'cpu ms/req':>12}{'x floor':>9}{'wall ms/req':>13}")
        floor = None
        for label, run in cases:
            cpu, wall = measure(run, n, args.runs)
            floor = floor or cpu
            print(f"{label:<40}{cpu:>12.3f}{cpu / floor:>8.1f}x{wall:>13.3f}")
    finally:
        if server is not None:
            server.terminate()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
