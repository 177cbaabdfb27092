"""Object-storage benchmark: open and load over a local S3 server with added latency, beside their floors.

    python benchmarks/bench_s3.py [--work ../bench] [--sizes 500,2000] [--latency-ms 20] [--concurrency 32]

A moto S3 server runs in a child process on 127.0.0.1 (it stops itself after
``--lifetime`` seconds); a latency proxy on 127.0.0.1 in this process delays
every request by ``--latency-ms`` and records the most requests in flight.
Each store ``{work}/single_{n}/store`` is uploaded (stamps, metadata, data
chunks). Printed per size, each beside its floor ``GETs x latency / in-flight
limit`` and the ratio:

- stamp and chunk reads: ``Storage.get_many`` over s3fs and over obstore
  (moczarr's backend for ``s3://`` with explicit options), and a bare
  ``obstore`` loop, all at the same in-flight limit;
- ``open_hive`` and ``.load()`` of every variable through moczarr, on each backend.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import moczarr
from moczarr import ids
from moczarr.storage import CountingStore, Storage, count_requests

REPO = Path(__file__).resolve().parents[1]
KEY, SECRET, REGION, BUCKET = "bench-key", "bench-secret", "us-east-1", "bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_moto(port: int, lifetime: float) -> None:
    """Child process: moto on 127.0.0.1:port until the lifetime ends or the parent goes."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request costs the server more than the request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    parent, deadline = os.getppid(), time.monotonic() + lifetime
    while time.monotonic() < deadline and os.getppid() == parent:
        time.sleep(0.5)
    server.stop()


class LatencyProxy:
    """A TCP relay 127.0.0.1:port -> upstream that holds each request ``latency`` seconds before sending it on.

    HTTP/1.1 sends one request at a time per connection, so delaying each
    client-to-server write delays each request. ``max_in_flight`` is the most
    connections at once waiting for a response since the last :meth:`reset`.
    """

    def __init__(self, upstream_port: int, latency: float, lifetime: float):
        self.upstream_port, self.latency, self.lifetime = upstream_port, latency, lifetime
        self.port = free_port()
        self.in_flight = self.max_in_flight = self.requests = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "LatencyProxy":
        self._thread.start()
        self._ready.wait(10)
        return self

    def reset(self) -> None:
        self.max_in_flight = self.in_flight
        self.requests = 0

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self._ready.set()
        async with server:
            await asyncio.sleep(self.lifetime)

    async def _handle(self, creader, cwriter) -> None:
        try:
            ureader, uwriter = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            cwriter.close()
            return
        waiting = [False]

        async def upstream():
            while data := await creader.read(65536):
                if not waiting[0]:
                    waiting[0] = True
                    self.requests += 1
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                    await asyncio.sleep(self.latency)
                uwriter.write(data)
                await uwriter.drain()
            uwriter.close()

        async def downstream():
            while data := await ureader.read(65536):
                if waiting[0]:
                    waiting[0] = False
                    self.in_flight -= 1
                cwriter.write(data)
                await cwriter.drain()
            cwriter.close()

        try:
            await asyncio.gather(upstream(), downstream())
        except (ConnectionError, OSError):
            pass
        finally:
            if waiting[0]:
                self.in_flight -= 1


def upload(endpoint: str, store: Path, prefix: str) -> int:
    """Stamps, metadata and data chunks of a store (what open and load read), 32 uploads at once."""
    import boto3
    from botocore.config import Config

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                      region_name=REGION, config=Config(max_pool_connections=32))
    files = [p for p in store.rglob("*") if p.is_file() and (
        p.name in ("zarr.json", "morton_hive.json") or p.parent.name == "c" or p == store / "coverage.moc")]
    files = [p for p in files if not (p.parent.name == "c" and p.parent.parent.name in ("morton", "cell_ids"))]

    def put(p: Path) -> None:
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}/{p.relative_to(store).as_posix()}", Body=p.read_bytes())

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(put, files))
    return len(files)


def s3fs_options(endpoint: str) -> dict:
    return {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION}}


def s3fs_storage(url: str, endpoint: str, limit: int) -> Storage:
    """A handle over s3fs, configured as moczarr configures it (one GET per object, pool = limit)."""
    from zarr.storage import FsspecStore

    opts = {**s3fs_options(endpoint), "max_concurrency": 1, "use_listings_cache": False,
            "config_kwargs": {"max_pool_connections": limit}}
    return Storage(CountingStore(FsspecStore.from_url(url, storage_options=opts, read_only=True)), location=url,
                   concurrency=limit)


def obstore_loop(endpoint: str, keys: list[str], concurrency: int) -> float:
    """Seconds to GET every key with a bare obstore loop, ``concurrency`` in flight."""
    import obstore
    from obstore.store import S3Store

    store = S3Store(BUCKET, endpoint=endpoint, access_key_id=KEY, secret_access_key=SECRET, region=REGION,
                    client_options={"allow_http": True}, virtual_hosted_style_request=False)

    async def go():
        sem = asyncio.Semaphore(concurrency)

        async def one(k):
            async with sem:
                result = await obstore.get_async(store, k)
                return await result.bytes_async()

        return await asyncio.gather(*(one(k) for k in keys))

    t0 = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - t0


def row(label: str, seconds: float, gets: int, latency: float, limit: int, proxy: LatencyProxy) -> None:
    floor = gets * latency / limit
    print(f"{label:<34}{seconds * 1e3:>10.0f}{floor * 1e3:>10.0f}{seconds / floor:>7.1f}x{gets:>8}"
          f"{proxy.max_in_flight:>10}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.fspath(REPO.parent / "bench"))
    parser.add_argument("--sizes", default="500,2000")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--lifetime", type=float, default=1800.0, help="seconds before the servers stop themselves")
    parser.add_argument("--serve-moto", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_moto:
        serve_moto(args.serve_moto, args.lifetime)
        return
    warnings.simplefilter("ignore", UserWarning)
    latency, limit = args.latency_ms / 1e3, args.concurrency
    moto_port = free_port()
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve-moto", str(moto_port), "--lifetime", str(args.lifetime)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        direct = f"http://127.0.0.1:{moto_port}"
        import boto3

        for _ in range(100):
            try:
                boto3.client("s3", endpoint_url=direct, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                             region_name=REGION).create_bucket(Bucket=BUCKET)
                break
            except Exception:  # the child is still starting
                time.sleep(0.2)
        proxy = LatencyProxy(moto_port, latency, args.lifetime).start()
        endpoint = f"http://127.0.0.1:{proxy.port}"
        print(f"python {sys.version.split()[0]}, moczarr {moczarr.__version__}, +{args.latency_ms:g} ms per request, "
              f"in-flight limit {limit}")
        print(f"{'case':<34}{'ms':>10}{'floor ms':>10}{'ratio':>8}{'GETs':>8}{'in flight':>10}")
        for n in [int(x) for x in args.sizes.split(",")]:
            store = Path(args.work) / f"single_{n}" / "store"
            if not store.is_dir():
                print(f"single_{n}: no store at {store}; skipped")
                continue
            t0 = time.perf_counter()
            count = upload(direct, store, f"single_{n}")
            print(f"-- single_{n}: uploaded {count} objects in {time.perf_counter() - t0:.0f} s", flush=True)
            url = f"s3://{BUCKET}/single_{n}"
            opts = s3fs_options(endpoint)
            local = moczarr.open_hive(store)
            manifest = moczarr.read_manifest(store)
            group = str(manifest.cell_order)
            leaves = [ids.leaf_path(d, None, manifest.path_grouping) for d in local.attrs["morton_hive"]["leaves"]]
            stamps = [f"{leaf}/zarr.json" for leaf in leaves]
            chunks = [f"{leaf}/{group}/{v}/c/0" for leaf in leaves for v in local.data_vars]

            backends = {
                "s3fs": lambda: s3fs_storage(url, endpoint, limit),
                "obstore": lambda: Storage.open(url, opts, limit),
            }
            for label, keys in (("stamps", stamps), ("chunks", chunks)):
                for backend, make in backends.items():
                    storage = make()
                    storage.get_many(stamps[:limit])  # connect
                    proxy.reset()
                    t0 = time.perf_counter()
                    storage.get_many(keys)
                    row(f"get_many {label} ({backend})", time.perf_counter() - t0, len(keys), latency, limit, proxy)
                proxy.reset()
                seconds = obstore_loop(endpoint, [f"single_{n}/{k}" for k in keys], limit)
                row(f"bare obstore loop {label}", seconds, len(keys), latency, limit, proxy)
            for backend, make in backends.items():
                moczarr.open_hive(make())  # warm the client
                proxy.reset()
                with count_requests() as counter:
                    t0 = time.perf_counter()
                    ds = moczarr.open_hive(make())
                    seconds = time.perf_counter() - t0
                row(f"open_hive single_{n} ({backend})", seconds, counter.gets, latency, limit, proxy)
                proxy.reset()
                with count_requests() as counter:
                    t0 = time.perf_counter()
                    ds.load()
                    seconds = time.perf_counter() - t0
                row(f"load single_{n} ({backend})", seconds, counter.gets, latency, limit, proxy)
    finally:
        child.terminate()
        child.wait(10)


if __name__ == "__main__":
    main()
