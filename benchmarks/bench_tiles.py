"""Map-tile latency of the tile server (moczarr.tiles.app): p50 / p95 of 256x256 tiles beside their floors.

    python benchmarks/bench_tiles.py [--work ../bench] [--leaves 500] [--zoom-offsets 0,3] [--tiles 24]
                                     [--latency-ms 20] [--clients 16] [--no-s3] [--json rows.jsonl]

The store is ``{work}/single_{leaves}/store``, written first when missing with
``../shared/tools/zagg_write.py`` (``$MOCZARR_SHARED/tools``; run with this
interpreter: the test extra holds zagg). The server is the real application under uvicorn on 127.0.0.1,
in a thread of this process (so the reader's request counter sees its
requests); the clients are ``urllib`` threads. Tiles are ``.npy`` tiles of
WebMercatorQuad at each zoom of ``--zoom-offsets`` above the one whose pixels
first reach the store's cells (the tilejson's ``maxzoom``: a zoomed-out view
meeting hundreds of leaves; +3: a close view meeting tens), centred on
``--tiles`` leaves spread over the store.

For each place (the local folder, then the store in moto's S3 server behind
the latency proxy of ``bench_s3.py`` at ``+--latency-ms`` per request, unless
``--no-s3``) and each case it prints the median (p50) and the 95th percentile
(p95) of the requests' latencies:

- ``cold``: every opened store and level forgotten first (the store's
  manifest, root MOC, the stamps of the leaves the tile meets, then its chunks);
- ``warm``: the tile's level already opened (the tile asked once before);
- ``x1``: one client, one tile at a time; ``x{clients}``: that many tiles
  asked at once (cold: all after one forgetting, so they share one open);
  ``reader``: ``HiveReader.tile`` called in this thread, no HTTP nor
  rendering (what the server adds is the difference).

beside the floor of one tile, computed from the leaves the tile meets (the
shards holding its pixels' cells, found without the reader) and never from
the server:

- locally, ``tile floor``: a plain loop reading and decoding (zstd) the
  variable's chunk of each leaf the tile meets; ``open floor``: reading and
  ``json.loads``-ing the manifest, the root MOC and each such leaf's stamp;
- over S3, each floor is its dependent round trips at the latency (the
  chunks: one round per ``--limit`` GETs; the open: the manifest and root MOC
  in one round, then the stamps) plus the local floor (the decoding).

The targets: warm tiles within 2x of the tile floor; a cold tile within 2x of
the open floor plus the tile floor. The 16-client figures are latencies under
contention (16 tiles share two cores), printed beside the same floors.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from bench_open import emit, load_average
from bench_s3 import KEY, REGION, SECRET, free_port, proxy_stats, start_proxy, start_server, wait_for_port

import moczarr
from moczarr import ids
from moczarr.storage import DEFAULT_CONCURRENCY

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(REPO))  # tests.loopback and tests.tiles_oracle: the suite's server and pixel oracle

from tests.loopback import serve_asgi  # noqa: E402
from tests.tiles_oracle import oracle_lonlat, oracle_words  # noqa: E402

GRID, VARIABLE = "WebMercatorQuad", "count"
WRITER = Path(os.environ.get("MOCZARR_SHARED", REPO.parent / "shared")) / "tools" / "zagg_write.py"
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str) -> float:
    """Seconds to GET ``url`` whole (a non-200 answer is an error: the figures are of tiles)."""
    t0 = time.perf_counter()
    with DIRECT.open(url, timeout=300) as resp:
        resp.read()
        assert resp.status == 200, url
    return time.perf_counter() - t0


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p95 (nearest rank) of ``samples``, in seconds."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


# -- the store and its tiles --------------------------------------------------------------------------
def ensure_store(work: Path, leaves: int) -> Path:
    out = work / f"single_{leaves}"
    if not (out / "store").is_dir():
        print(f"writing {out} with the zagg writer ...", flush=True)
        command = [sys.executable, os.fspath(WRITER), "single", "--out", os.fspath(out), "--leaves", str(leaves)]
        subprocess.run([*command, "--workers", "2", "--force"], check=True, stdout=subprocess.DEVNULL)
    return out / "store"


class Plan:
    """The leaves each tile meets, computed apart from the reader: the shards holding its pixels' cells."""

    def __init__(self, store: Path):
        import morecantile

        self.store = store
        self.tms = morecantile.tms.get(GRID)
        self.manifest = moczarr.read_manifest(store)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            leaves = moczarr.open_hive(store).attrs["morton_hive"]["leaves"]
        self.leaves = dict(zip(np.asarray(ids.to_words(leaves), dtype=np.uint64).tolist(), leaves, strict=True))

    def centres(self, count: int) -> list[tuple[float, float]]:
        """Lon/lat of ``count`` leaves spread over the store (every k-th leaf)."""
        import mortie

        words = sorted(self.leaves)
        picked = words[:: max(1, len(words) // count)][:count]
        lat, lon = mortie.mort2geo(np.asarray(picked, dtype=np.uint64))
        return list(zip(np.atleast_1d(lon).tolist(), np.atleast_1d(lat).tolist(), strict=True))

    def met(self, tile) -> list[str]:
        """The leaves (decimals) holding a pixel centre of ``tile`` at the store's cell order."""
        import mortie

        lon, lat = oracle_lonlat(self.tms, tile, 256)
        words = oracle_words(lon, lat, self.manifest.cell_order)
        shards = np.unique(mortie.clip2order(self.manifest.shard_order, words[words != 0]))
        return [self.leaves[int(s)] for s in shards if int(s) in self.leaves]

    def pixel_seconds(self, tile) -> float:
        """Seconds to take ``tile``'s pixel centres to lon/lat (pyproj) and to cells (mortie): work every tile does
        beside reading, which the floors leave out."""
        import mortie

        t0 = time.perf_counter()
        lon, lat = oracle_lonlat(self.tms, tile, 256)
        mortie.geo2mort(lat, lon, order=self.manifest.cell_order)
        return time.perf_counter() - t0

    def files(self, leaves: list[str]) -> tuple[list[Path], list[Path]]:
        """The stamps and the variable's chunks of ``leaves``."""
        roots = [self.store / ids.leaf_path(d, None, self.manifest.path_grouping) for d in leaves]
        order = str(self.manifest.cell_order)
        return [r / "zarr.json" for r in roots], [r / order / VARIABLE / "c" / "0" for r in roots]

    def local_floors(self, tile) -> tuple[float, float, int, int]:
        """(tile floor s, open floor s, chunks, stamps) of ``tile``: plain loops over what it needs."""
        import zstandard

        stamps, chunks = self.files(self.met(tile))
        codecs = json.loads((chunks[0].parent.parent / "zarr.json").read_text())["codecs"] if chunks else []
        zstd = any(c["name"] == "zstd" for c in codecs)
        dctx = zstandard.ZstdDecompressor()
        t0 = time.perf_counter()
        for path in chunks:
            payload = path.read_bytes()
            np.frombuffer(dctx.decompress(payload) if zstd else payload, dtype=np.uint8)
        tile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        json.loads((self.store / "morton_hive.json").read_text())
        (self.store / "coverage.moc").read_bytes()
        for path in stamps:
            json.loads(path.read_text())
        return tile_s, time.perf_counter() - t0, len(chunks), len(stamps)


# -- the measurement ----------------------------------------------------------------------------------
def measure(server: str, url: str, tiles, clients: int, options: dict | None = None) -> dict[str, list[float]]:
    """Latencies (s) of ``tiles`` by case: cold/warm, one client and ``clients`` at once; and ``reader``, the
    reader's own ``tile()`` in this thread, no HTTP (what the server adds is the difference)."""
    from moczarr.tiles import HiveReader, clear_cache

    params = urllib.parse.urlencode({"url": url, "variable": VARIABLE})
    urls = [f"{server}/tiles/{GRID}/{t.z}/{t.x}/{t.y}.npy?{params}" for t in tiles]
    out: dict[str, list[float]] = {"cold x1": [], "warm x1": [], f"cold x{clients}": [], f"warm x{clients}": []}
    out["cold reader"], out["warm reader"] = [], []
    for t in tiles:
        for case in ("cold reader", "warm reader"):
            if case.startswith("cold"):
                clear_cache()
            t0 = time.perf_counter()
            HiveReader(url, tms=t_grid(), variable=VARIABLE, storage_options=options).tile(t.x, t.y, t.z)
            out[case].append(time.perf_counter() - t0)
    for u in urls:
        clear_cache()
        out["cold x1"].append(fetch(u))
    for _ in range(2):
        out["warm x1"] += [fetch(u) for u in urls]
    with ThreadPoolExecutor(clients) as pool:
        for start in range(0, len(urls), clients):
            batch = urls[start : start + clients]
            clear_cache()
            out[f"cold x{clients}"] += list(pool.map(fetch, batch))
            out[f"warm x{clients}"] += list(pool.map(fetch, batch))
            out[f"warm x{clients}"] += list(pool.map(fetch, batch))
    return out


def t_grid():
    import morecantile

    return morecantile.tms.get(GRID)


def report(place: str, results: dict[str, list[float]], tile_floor: float, open_floor: float, args) -> None:
    for case, samples in results.items():
        floor = tile_floor + (open_floor if case.startswith("cold") else 0.0)
        p50, p95 = percentiles(samples)
        print(
            f"{place:<12}{case:<12}{len(samples):>5}{floor * 1e3:>10.1f}{p50 * 1e3:>9.1f}{p95 * 1e3:>9.1f}"
            f"{p50 / floor:>8.2f}x{p95 / floor:>8.2f}x{load_average():>6.1f}",
            flush=True,
        )
        emit(
            args.json,
            {
                "case": f"tiles {place} {case}",
                "figure": "tile latency",
                "p50_s": p50,
                "p95_s": p95,
                "floor_s": floor,
                "ratio": p50 / floor,
                "samples": len(samples),
                "load": load_average(),
                "floor_is": "the leaves a tile meets: chunks" + (" + the open" if case.startswith("cold") else ""),
            },
        )


def upload_all(endpoint: str, store: Path, bucket: str, prefix: str) -> int:
    """Every file of ``store`` put under ``s3://bucket/prefix`` (32 at once)."""
    import boto3
    from botocore.config import Config

    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name=REGION,
        config=Config(max_pool_connections=32),
    )
    s3.create_bucket(Bucket=bucket)
    files = [p for p in store.rglob("*") if p.is_file()]

    def put(p: Path) -> None:
        s3.put_object(Bucket=bucket, Key=f"{prefix}/{p.relative_to(store).as_posix()}", Body=p.read_bytes())

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(put, files))
    return len(files)


def measured_gets(endpoint: str, keys: list[str], limit: int) -> float:
    """Seconds to GET ``keys`` (bucket ``bench``) with plain obstore at ``limit`` in flight: the wire floor this
    S3 server and proxy give, their own time per request included (the latency floor counts none of it)."""
    import asyncio

    import obstore
    from obstore.store import S3Store

    store = S3Store(
        "bench",
        endpoint=endpoint,
        access_key_id=KEY,
        secret_access_key=SECRET,
        region=REGION,
        client_options={"allow_http": True},
    )

    async def all_of() -> None:
        gate = asyncio.Semaphore(limit)

        async def one(key: str) -> None:
            async with gate:
                await (await obstore.get_async(store, key)).bytes_async()

        await asyncio.gather(*(one(key) for key in keys))

    t0 = time.perf_counter()
    asyncio.run(all_of())
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.fspath(REPO.parent / "bench"))
    parser.add_argument("--leaves", type=int, default=500)
    parser.add_argument("--tiles", type=int, default=24, help="distinct tiles (each a sample of every case)")
    parser.add_argument("--zoom-offsets", default="0,3", help="the zooms, as offsets from the tilejson's maxzoom")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--limit", type=int, default=DEFAULT_CONCURRENCY, help="the reader's in-flight limit")
    parser.add_argument("--no-s3", action="store_true", help="the local figures only")
    parser.add_argument("--json", help="append every row to this file as a JSON line")
    parser.add_argument("--lifetime", type=float, default=1800.0, help="seconds before the S3 servers stop")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from moczarr.tiles.app import create_app

    store = ensure_store(Path(args.work), args.leaves)
    plan = Plan(store)
    from moczarr.tiles import HiveReader

    maxzoom = HiveReader(os.fspath(store), tms=plan.tms, variable=VARIABLE).maxzoom
    zooms = [maxzoom + int(z) for z in args.zoom_offsets.split(",")]
    print(
        f"python {sys.version.split()[0]}, moczarr {moczarr.__version__}, {os.cpu_count()} cores; "
        f"{store} ({args.leaves} leaves); {GRID} 256x256 .npy tiles at zooms {zooms} (maxzoom {maxzoom})"
    )
    sets = {z: list(dict.fromkeys(plan.tms.tile(lon, lat, z) for lon, lat in plan.centres(args.tiles))) for z in zooms}
    floors = {}
    for z, tiles in sets.items():
        measured = [plan.local_floors(t) for t in tiles for _ in range(3)]
        floors[z] = [statistics.median(f[i] for f in measured) for i in range(4)]
        pixels = statistics.median(plan.pixel_seconds(t) for t in tiles for _ in range(3))
        print(
            f"zoom {z}: {len(tiles)} tiles, a tile meets {floors[z][2]:g} leaves (median); its 65,536 pixel "
            f"centres to cells (pyproj, then mortie) take {pixels * 1e3:.1f} ms, not in the floor"
        )
    header = f"{'place':<12}{'case':<12}{'n':>5}{'floor ms':>10}{'p50 ms':>9}{'p95 ms':>9}{'p50/fl':>9}{'p95/fl':>9}"
    print(header + f"{'avg':>6}")
    with serve_asgi(create_app(allow=[os.fspath(store)])) as server:
        for z, tiles in sets.items():
            results = measure(server, os.fspath(store), tiles, args.clients)
            report(f"local z{z}", results, floors[z][0], floors[z][1], args)
    if args.no_s3:
        return
    latency = args.latency_ms / 1e3
    server_port, proxy_port = free_port(), free_port()
    children = [start_server("moto", Path(tempfile.gettempdir()), server_port, args.lifetime)]
    children.append(start_proxy(proxy_port, server_port, args.latency_ms, args.lifetime))
    try:
        wait_for_port(server_port)
        wait_for_port(proxy_port)
        t0 = time.perf_counter()
        count = upload_all(f"http://127.0.0.1:{server_port}", store, "bench", "tiles")
        print(f"-- {count} objects uploaded to moto in {time.perf_counter() - t0:.0f} s; +{args.latency_ms:g} ms")
        endpoint = f"http://127.0.0.1:{proxy_port}"
        options = {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION}}
        proxy_stats(endpoint)
        with serve_asgi(create_app(allow=["s3://bench/tiles"], storage_options=options)) as server:
            for z, tiles in sets.items():
                tile_s, open_s, chunks, stamps = floors[z]
                s3_tile = tile_s + max(1, math.ceil(chunks / args.limit)) * latency
                s3_open = open_s + (1 + max(1, math.ceil(stamps / args.limit))) * latency
                results = measure(server, "s3://bench/tiles", tiles, args.clients, options)
                report(f"s3 z{z}", results, s3_tile, s3_open, args)
                _, chunk_paths = plan.files(plan.met(tiles[0]))
                keys = [f"tiles/{path.relative_to(store).as_posix()}" for path in chunk_paths]
                gets = statistics.median(measured_gets(endpoint, keys, args.limit) for _ in range(3))
                print(
                    f"s3 z{z}: the {len(keys)} chunk GETs of one tile alone (plain obstore, {args.limit} in flight): "
                    f"{gets * 1e3:.1f} ms, against the latency floor's {s3_tile * 1e3:.1f} ms"
                )
        print(f"(most requests in flight at the proxy: {proxy_stats(endpoint)['max_in_flight']})")
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()


if __name__ == "__main__":
    main()
