"""Map-tile latency of the tile server (moczarr.tiles.app): p50 / p95 of 256x256 tiles beside their floors.

    python benchmarks/bench_tiles.py [--work ../bench] [--leaves 500] [--zoom-offsets 0,3] [--tiles 24]
                                     [--latency-ms 20] [--clients 16] [--server rclone|moto] [--no-s3]
                                     [--json rows.jsonl]

The store is ``{work}/single_{leaves}/store``, written first when missing with
``../shared/tools/zagg_write.py`` (``$MOCZARR_SHARED/tools``; run with this
interpreter: the test extra holds zagg). The server is the real application under uvicorn on 127.0.0.1,
in a thread of this process (so that forgetting its caches makes the cold cases). The clients are
the map client's: threads of a child process (this script with ``--serve-clients``, started once), so
that, as a browser's, their Python never competes with the server's for its GIL; each keeps its
HTTP/1.1 connection alive across requests. Tiles are ``.npy`` tiles of
WebMercatorQuad at each zoom of ``--zoom-offsets`` above the one whose pixels
first reach the store's cells (the tilejson's ``maxzoom``: a zoomed-out view
meeting hundreds of leaves; +3: a close view meeting tens), centred on
``--tiles`` leaves spread over the store.

For each place (the local folder, then the store in ``rclone serve s3`` of the
folder, or uploaded to moto's S3 server with ``--server moto``, behind the latency
proxy of ``bench_s3.py`` at ``+--latency-ms`` per request, unless
``--no-s3``) and each case it prints the median (p50) and the 95th percentile
(p95) of the requests' latencies:

- ``cold``: every opened store and level forgotten first (the store's
  manifest, root MOC, the stamps of the leaves the tile meets, then its chunks);
- ``warm``: the tile's level already opened (the tile asked once before);
- ``x1``: one client, one tile at a time; ``x{n}``: ``n`` distinct tiles asked
  at once, ``n`` = ``--clients`` or the zoom's tiles when fewer (cold: all
  after one forgetting, so they share the store's open); ``reader``:
  ``HiveReader.tile`` called in this process, no HTTP nor rendering (what the
  server adds is the difference). Each zoom's first tile is asked once,
  untimed, by the reader and the server before: what a process pays once
  (imports) is no tile's.

beside the floor of one tile, computed from the leaves the tile meets (the
shards holding its pixels' cells, found without the reader) and never from
the server:

- locally, ``tile floor``: a plain loop reading and decoding (zstd) the
  variable's chunk of each leaf the tile meets; ``open floor``: reading and
  ``json.loads``-ing the manifest, the root MOC and the drawn array's
  ``zarr.json`` in one met leaf (the store's, once) and each such leaf's
  stamp (the tile's);
- over S3, each floor is its dependent round trips at the latency (the
  chunks: one round per ``--limit`` GETs; the open: the manifest and root MOC
  in one round, then the stamps, then the array's metadata: a leaf's arrays
  are named by its stamp and a chunk's codecs by its ``zarr.json``) plus the
  local floor (the decoding);
- ``x{n}``: the ``n`` tiles share the machine's cores (``os.cpu_count()``), so
  their floor is the sum of their local floors over the cores (``n x`` the
  tile's, and the stamps of its open, ``/ cores``, and never below one
  tile's; the store's open is one); over S3 their round trips overlap, so the latency part is one tile's. (The
  server's in-flight limit (``TILE_CONCURRENCY``) is one per opened store, which the ``n`` tiles
  share: the rounds their GETs take at that limit are printed after the table.)

A served tile also pays what titiler's tile route costs around any reader:
the HTTP round trip, routing, the parsing of some thirty query parameters,
the ``.npy`` written out. The ``request floor`` (``req ms``) is that route
measured alone: the same tiles from a second server of the same application
whose reader answers each tile from memory (:class:`ReadyReader`, made once
per tile), by the same client process (one at a time for ``x1``, ``n`` at once
for ``x{n}``). Each served case prints its p50 against its floor (``p50/fl``,
as the reader's) and against its floor plus the request floor (``p50/fl+rq``).

The targets: warm tiles within 2x of the tile floor; a cold tile within 2x of
the open floor plus the tile floor.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from http.client import HTTPConnection, HTTPException
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from bench_open import emit, load_average
from bench_s3 import (
    KEY,
    REGION,
    SECRET,
    free_port,
    proxy_stats,
    s3_client,
    start_proxy,
    start_server,
    stop_children,
    wait_for_port,
)

import moczarr
from moczarr import ids
from moczarr.tiles import HiveReader
from moczarr.tiles.cache import TILE_CONCURRENCY

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(REPO))  # tests.loopback and tests.tiles_oracle: the suite's server and pixel oracle

from tests.loopback import serve_asgi  # noqa: E402
from tests.tiles_oracle import oracle_lonlat, oracle_words  # noqa: E402

GRID, VARIABLE = "WebMercatorQuad", "count"
WRITER = Path(os.environ.get("MOCZARR_SHARED", REPO.parent / "shared")) / "tools" / "zagg_write.py"


# -- the map client, in its own process ----------------------------------------------------------------
def serve_clients() -> None:
    """The clients' process: for each JSON line ``{"urls": [...], "at_once": bool}`` on stdin, GETs the URLs
    one after the other on one connection, or all at once, the i-th on its own thread and connection;
    writes their latencies (s, in the URLs' order) as one JSON line. Connections are kept alive across
    lines, as a browser keeps them. A non-200 answer ends the process with its traceback (the figures are
    of tiles)."""
    connections: dict[tuple[str, int], HTTPConnection] = {}

    def get(url: str, slot: int, latencies: list[float], index: int, start: threading.Barrier | None) -> None:
        parts = urllib.parse.urlsplit(url)
        key = (parts.netloc, slot)
        if key not in connections:
            connections[key] = HTTPConnection(parts.hostname, parts.port, timeout=300)
        conn, path = connections[key], f"{parts.path}?{parts.query}" if parts.query else parts.path
        if start is not None:
            start.wait()
        t0 = time.perf_counter()
        for attempt in (1, 2):
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                body = resp.read()
                break
            except (HTTPException, ConnectionError):  # the server closed an idle kept connection: open another
                conn.close()
                if attempt == 2:
                    raise
        if resp.status != 200:
            raise RuntimeError(f"GET {url}: {resp.status} {body[:200]!r}")
        latencies[index] = time.perf_counter() - t0

    for line in sys.stdin:
        ask = json.loads(line)
        urls = ask["urls"]
        latencies = [0.0] * len(urls)
        if ask["at_once"]:
            start = threading.Barrier(len(urls))
            threads = [threading.Thread(target=get, args=(u, i, latencies, i, start)) for i, u in enumerate(urls)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if not all(latencies):
                sys.exit("a request failed (its traceback is above)")
        else:
            for i, u in enumerate(urls):
                get(u, 0, latencies, i, None)
        print(json.dumps(latencies), flush=True)


class Clients:
    """The bench's handle on the clients' process (:func:`serve_clients`), started on entry, stopped on exit."""

    def __enter__(self) -> Clients:
        command = [sys.executable, os.fspath(Path(__file__).resolve()), "--serve-clients"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return self

    def get(self, urls: list[str], *, at_once: bool) -> list[float]:
        """Latencies (s) of GETs of ``urls``, one after the other or all at once; raises when one failed."""
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps({"urls": urls, "at_once": at_once}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the clients' process stopped (its error is above)")
        return json.loads(line)

    def __exit__(self, *exc) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(30)


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

    def local_floors(self, tile) -> Floors:
        """``tile``'s local floors: plain loops over what it needs."""
        import zstandard

        stamps, chunks = self.files(self.met(tile))
        codecs = json.loads((chunks[0].parent.parent / "zarr.json").read_text())["codecs"] if chunks else []
        zstd = any(c["name"] == "zstd" for c in codecs)
        dctx = zstandard.ZstdDecompressor()
        t0 = time.perf_counter()
        for path in chunks:
            payload = path.read_bytes()
            np.frombuffer(dctx.decompress(payload) if zstd else payload, dtype=np.uint8)
        t1 = time.perf_counter()
        json.loads((self.store / "morton_hive.json").read_text())
        (self.store / "coverage.moc").read_bytes()
        if chunks:  # the drawn array's metadata (its codecs), in one met leaf
            json.loads((chunks[0].parent.parent / "zarr.json").read_text())
        t2 = time.perf_counter()
        for path in stamps:
            json.loads(path.read_text())
        return Floors(t1 - t0, t2 - t1, time.perf_counter() - t2, len(chunks), len(stamps))


@dataclass(frozen=True)
class Floors:
    """A tile's floors at a place: the local work (s) of its chunks, of the store's open and of its stamps, how
    many chunks and stamps it needs, and over S3 the dependent rounds of its chunks and of its open."""

    tile: float
    store: float
    stamps: float
    chunks: float
    stamp_count: float
    chunk_rounds: int = 0
    open_rounds: int = 0
    latency: float = 0.0

    @classmethod
    def median(cls, floors: list[Floors]) -> Floors:
        """The median of each field of ``floors`` (local floors of a zoom's tiles, each measured a few times)."""
        return cls(*(statistics.median(getattr(f, name) for f in floors) for name in cls.__dataclass_fields__))

    def over_s3(self, latency: float, limit: int) -> Floors:
        """These floors with the round trips at ``latency``: one per ``limit`` chunks; the open's manifest and root
        MOC in one, then one per ``limit`` stamps, then one for the drawn array's metadata (a leaf's arrays are
        named by its stamp, and a chunk's codecs by its array's ``zarr.json``)."""
        chunk_rounds = max(1, math.ceil(self.chunks / limit))
        open_rounds = 2 + max(1, math.ceil(self.stamp_count / limit))
        return replace(self, chunk_rounds=chunk_rounds, open_rounds=open_rounds, latency=latency)

    def of(self, cold: bool, tiles: int, cores: int) -> float:
        """The floor (s) of a tile among ``tiles`` asked at once on ``cores`` cores: their local work shared over
        the cores (the store's open done once), their round trips overlapping (one tile's)."""
        share = max(tiles, cores) / cores
        local = (self.tile + (self.stamps if cold else 0.0)) * share + (self.store if cold else 0.0)
        return local + (self.chunk_rounds + (self.open_rounds if cold else 0)) * self.latency


class ReadyReader(HiveReader):
    """A :class:`HiveReader` whose tiles are made once, then answered from memory: served by the same
    application, it measures what the tile route costs around a tile that costs nothing."""

    made: ClassVar[dict[tuple, Any]] = {}

    def tile(self, tile_x: int, tile_y: int, tile_z: int, tilesize: int | None = None, **kwargs: Any):
        key = (self.input, self.variable, tile_x, tile_y, tile_z, tilesize)
        if key not in self.made:
            self.made[key] = super().tile(tile_x, tile_y, tile_z, tilesize, **kwargs)
        return self.made[key]


# -- the measurement ----------------------------------------------------------------------------------
def concurrency(tiles: list, clients: int) -> int:
    """Tiles asked at once in the ``x{n}`` cases: ``clients``, or every tile of the zoom when fewer."""
    return min(clients, len(tiles))


def measure(
    clients: Clients, server: str, ready: str, url: str, tiles, at_once: int, options: dict | None = None
) -> tuple[dict[str, list[float]], dict[int, float]]:
    """Latencies (s) of ``tiles`` by case: cold/warm, one client and ``at_once`` tiles at once; and ``reader``,
    the reader's own ``tile()`` in this process, no HTTP (what the server adds is the difference). Beside them,
    the request floor (s) by concurrency (1 and ``at_once``): the p50 of the same tiles from ``ready``, the
    server whose reader answers them from memory, by the same clients. The first tile is asked once before, by
    the reader and the server, untimed."""
    from moczarr.tiles import clear_cache

    params = urllib.parse.urlencode({"url": url, "variable": VARIABLE})
    urls = [f"{server}/tiles/{GRID}/{t.z}/{t.x}/{t.y}.npy?{params}" for t in tiles]
    many = f"x{at_once}"
    out: dict[str, list[float]] = {"cold reader": [], "warm reader": []}
    out.update({"cold x1": [], "warm x1": [], f"cold {many}": [], f"warm {many}": []})
    first = tiles[0]  # a server runs long: what the first tile of a process pays once (imports) is not a figure
    HiveReader(url, tms=t_grid(), variable=VARIABLE, storage_options=options).tile(first.x, first.y, first.z)
    clients.get(urls[:1], at_once=False)
    for t in tiles:  # asked warm twice, as the served tiles are
        for case in ("cold reader", "warm reader", "warm reader"):
            if case.startswith("cold"):
                clear_cache()
            t0 = time.perf_counter()
            HiveReader(url, tms=t_grid(), variable=VARIABLE, storage_options=options).tile(t.x, t.y, t.z)
            out[case].append(time.perf_counter() - t0)
    made = [u.replace(server, ready, 1) for u in urls]
    clients.get(made, at_once=False)  # each ready tile made once
    request = {1: statistics.median(s for _ in range(2) for s in clients.get(made, at_once=False))}
    batches = [[made[(start + i) % len(made)] for i in range(at_once)] for start in range(0, len(made), at_once)]
    request[at_once] = statistics.median(
        s for _ in range(2) for batch in batches for s in clients.get(batch, at_once=at_once > 1)
    )
    for u in urls:
        clear_cache()
        out["cold x1"] += clients.get([u], at_once=False)
    for _ in range(2):
        out["warm x1"] += clients.get(urls, at_once=False)
    for start in range(0, len(urls), at_once):
        batch = [urls[(start + i) % len(urls)] for i in range(at_once)]  # distinct tiles, wrapping round
        clear_cache()
        out[f"cold {many}"] += clients.get(batch, at_once=at_once > 1)
        for _ in range(2):
            out[f"warm {many}"] += clients.get(batch, at_once=at_once > 1)
    return out, request


def t_grid():
    import morecantile

    return morecantile.tms.get(GRID)


HEADER = (
    f"{'place':<12}{'case':<12}{'n':>5}{'floor ms':>10}{'req ms':>8}{'p50 ms':>9}{'p95 ms':>9}"
    f"{'p50/fl':>9}{'p95/fl':>9}{'p50/fl+rq':>11}{'avg':>6}"
)


def report(place: str, results: dict[str, list[float]], floors: Floors, request: dict[int, float], args) -> None:
    """One row a case: its p50 and p95 beside its floor, and a served case's beside its floor plus the request
    floor at its concurrency too."""
    cores = os.cpu_count() or 1
    for case, samples in results.items():
        cold, served = case.startswith("cold"), not case.endswith("reader")
        tiles = int(case.rsplit("x", 1)[1]) if served else 1
        floor = floors.of(cold, tiles, cores)
        p50, p95 = percentiles(samples)
        req = request[tiles] if served else None
        both = f"{p50 / (floor + req):>10.2f}x" if req is not None else f"{'':>11}"
        print(
            f"{place:<12}{case:<12}{len(samples):>5}{floor * 1e3:>10.1f}"
            f"{f'{req * 1e3:.1f}' if req is not None else '':>8}{p50 * 1e3:>9.1f}{p95 * 1e3:>9.1f}"
            f"{p50 / floor:>8.2f}x{p95 / floor:>8.2f}x{both}{load_average():>6.1f}",
            flush=True,
        )
        floor_is = "the leaves a tile meets: chunks" + (" + the open" if cold else "")
        if tiles > 1:
            floor_is += f", {tiles} tiles' local work over {cores} cores"
        row = {
            "case": f"tiles {place} {case}",
            "figure": "tile latency",
            "p50_s": p50,
            "p95_s": p95,
            "floor_s": floor,
            "ratio": p50 / floor,
            "samples": len(samples),
            "tiles_at_once": tiles,
            "cores": cores,
            "load": load_average(),
            "floor_is": floor_is,
        }
        if req is not None:
            row.update(request_floor_s=req, ratio_with_request=p50 / (floor + req))
        emit(args.json, row)


def upload_all(endpoint: str, store: Path, bucket: str, prefix: str) -> int:
    """Every file of ``store`` put under ``s3://bucket/prefix`` (32 at once)."""
    s3 = s3_client(endpoint)
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
    parser.add_argument(
        "--limit", type=int, default=TILE_CONCURRENCY, help="GETs in flight the floors count (the server's, per store)"
    )
    parser.add_argument("--no-s3", action="store_true", help="the local figures only")
    parser.add_argument(
        "--server",
        choices=("moto", "rclone"),
        default="rclone",
        help="the S3 server: rclone serve s3 of the folder (the bench extra), or moto's (Python: about 2.7 ms "
        "of CPU a GET on these cores, and slower the more are in flight: it measures moto, not the tiles)",
    )
    parser.add_argument("--json", help="append every row to this file as a JSON line")
    parser.add_argument("--lifetime", type=float, default=1800.0, help="seconds before the S3 servers stop")
    parser.add_argument("--serve-clients", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_clients:
        serve_clients()
        return
    warnings.simplefilter("ignore")
    from moczarr.tiles.app import create_app

    store = ensure_store(Path(args.work), args.leaves)
    plan = Plan(store)
    maxzoom = HiveReader(os.fspath(store), tms=plan.tms, variable=VARIABLE).maxzoom
    zooms = [maxzoom + int(z) for z in args.zoom_offsets.split(",")]
    print(
        f"python {sys.version.split()[0]}, moczarr {moczarr.__version__}, {os.cpu_count()} cores; "
        f"{store} ({args.leaves} leaves); {GRID} 256x256 .npy tiles at zooms {zooms} (maxzoom {maxzoom}); "
        "request floor: the tile route around tiles made before (ReadyReader)"
    )
    sets = {z: list(dict.fromkeys(plan.tms.tile(lon, lat, z) for lon, lat in plan.centres(args.tiles))) for z in zooms}
    floors: dict[int, Floors] = {}
    for z, tiles in sets.items():
        floors[z] = Floors.median([plan.local_floors(t) for t in tiles for _ in range(3)])
        pixels = statistics.median(plan.pixel_seconds(t) for t in tiles for _ in range(3))
        print(
            f"zoom {z}: {len(tiles)} tiles, a tile meets {floors[z].chunks:g} leaves (median); its 65,536 pixel "
            f"centres to cells (pyproj, then mortie) take {pixels * 1e3:.1f} ms, not in the floor"
        )
    print(HEADER)
    with Clients() as clients:
        allow = [os.fspath(store)]
        with (
            serve_asgi(create_app(allow=allow)) as server,
            serve_asgi(create_app(allow=allow, reader=ReadyReader)) as ready,
        ):
            for z, tiles in sets.items():
                at_once = concurrency(tiles, args.clients)
                results, request = measure(clients, server, ready, os.fspath(store), tiles, at_once)
                report(f"local z{z}", results, floors[z], request, args)
        if not args.no_s3:
            over_s3(clients, plan, sets, floors, args)


def over_s3(clients: Clients, plan: Plan, sets: dict, floors: dict[int, Floors], args) -> None:
    """The S3 rows: the store uploaded to moto (or served by rclone from the folder), read through the latency
    proxy (both child processes)."""
    from moczarr.tiles.app import create_app

    latency, store = args.latency_ms / 1e3, plan.store
    server_port, proxy_port = free_port(), free_port()
    buckets = Path(tempfile.mkdtemp(prefix="bench-tiles-"))
    if args.server == "rclone":  # rclone serves a folder, each sub-folder a bucket: the store is linked in
        (buckets / "bench").mkdir()
        (buckets / "bench" / "tiles").symlink_to(store.resolve(), target_is_directory=True)
    children = [start_server(args.server, buckets, server_port, args.lifetime, ("--copy-links",))]
    children.append(start_proxy(proxy_port, server_port, args.latency_ms, args.lifetime))
    try:
        wait_for_port(server_port)
        wait_for_port(proxy_port)
        if args.server == "moto":
            t0 = time.perf_counter()
            count = upload_all(f"http://127.0.0.1:{server_port}", store, "bench", "tiles")
            print(f"-- {count} objects uploaded to moto in {time.perf_counter() - t0:.0f} s", end="")
        else:
            print(f"-- the store served by rclone serve s3 from {buckets}", end="")
        print(f"; +{args.latency_ms:g} ms a request")
        endpoint = f"http://127.0.0.1:{proxy_port}"
        options = {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION}}
        proxy_stats(endpoint)
        notes = []
        allow = ["s3://bench/tiles"]
        with (
            serve_asgi(create_app(allow=allow, storage_options=options)) as server,
            serve_asgi(create_app(allow=allow, storage_options=options, reader=ReadyReader)) as ready,
        ):
            for z, tiles in sets.items():
                s3 = floors[z].over_s3(latency, args.limit)
                at_once = concurrency(tiles, args.clients)
                results, request = measure(clients, server, ready, "s3://bench/tiles", tiles, at_once, options)
                report(f"s3 z{z}", results, s3, request, args)
                _, chunk_paths = plan.files(plan.met(tiles[0]))
                keys = [f"tiles/{path.relative_to(store).as_posix()}" for path in chunk_paths]
                gets = statistics.median(measured_gets(endpoint, keys, args.limit) for _ in range(3))
                one = s3.of(False, 1, 1)
                notes.append(
                    f"s3 z{z}: the {len(keys)} chunk GETs of one tile alone (plain obstore, {args.limit} in flight): "
                    f"{gets * 1e3:.1f} ms, against the latency floor's {one * 1e3:.1f} ms"
                )
                shared = math.ceil(at_once * s3.chunks / args.limit)
                batch = [
                    f"tiles/{path.relative_to(store).as_posix()}"
                    for t in tiles[:at_once]
                    for path in plan.files(plan.met(t))[1]
                ]
                all_gets = statistics.median(measured_gets(endpoint, batch, args.limit) for _ in range(3))
                notes.append(
                    f"s3 z{z}: x{at_once}'s tiles share the server's in-flight limit ({args.limit}): their "
                    f"{len(batch)} chunk GETs take {shared} rounds at the latency "
                    f"({shared * latency * 1e3:.0f} ms; the floor counts one tile's {s3.chunk_rounds}); "
                    f"with plain obstore alone: {all_gets * 1e3:.1f} ms"
                )
        for note in notes:
            print(note)
        print(f"(most requests in flight at the proxy: {proxy_stats(endpoint)['max_in_flight']})")
    finally:
        stop_children(children)
        shutil.rmtree(buckets, ignore_errors=True)


if __name__ == "__main__":
    main()
