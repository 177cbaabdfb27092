"""Open-time benchmark: stores of 500, 2,000 and 5,000 leaves written by the real zagg writer.

    python benchmarks/bench_open.py [--work ../bench] [--zagg-python /path/to/zagg/venv/bin/python]

Stores missing under ``--work`` are written first with ``../shared/tools/zagg_write.py``
(it needs zagg 0.61 in a Python 3.12 venv; see ``../shared/tools/README.md``). For each size
it prints the median of 5 opens beside the floor — a plain loop reading and ``json.loads``-ing
every stamp the open reads — and their ratio, requests by kind, and the peak traced memory of
one open; then ``open_store`` / ``open_pyramid`` on the pyramid and multi-product stores when
``--pyramids`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Iterator
from pathlib import Path

import moczarr
from moczarr import open_store
from moczarr.openers.pyramid import open_pyramid
from moczarr.storage import count_requests

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO.parent / "shared" / "tools" / "zagg_write.py"


def size_parser(description: str) -> argparse.ArgumentParser:
    """The arguments every size sweep takes: ``--work`` (where ``single_{n}/store`` are), ``--sizes``, ``--repeats``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.fspath(REPO.parent / "bench"))
    parser.add_argument("--sizes", default="500,2000,5000")
    parser.add_argument("--repeats", type=int, default=5)
    return parser


def existing_stores(work: str | Path, sizes: str) -> Iterator[tuple[int, Path]]:
    """``(n, store)`` for each size whose ``{work}/single_{n}/store`` exists; a missing one is said and skipped."""
    for n in [int(x) for x in sizes.split(",")]:
        store = Path(work) / f"single_{n}" / "store"
        if store.is_dir():
            yield n, store
        else:
            print(f"single_{n}: no store at {store}; skipped")


def ensure_store(work: Path, kind: str, leaves: int, zagg_python: str) -> Path:
    out = work / f"{kind}_{leaves}"
    if not (out / "store").is_dir():
        print(f"writing {out} with the zagg writer ...", flush=True)
        subprocess.run(
            [zagg_python, str(WRITER), kind, "--out", str(out), "--leaves", str(leaves), "--workers", "2", "--force"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return out / "store"


def stamp_floor(store: Path) -> tuple[float, int]:
    """Median seconds of reading + parsing every admitted leaf's stamp in a plain loop, and the count."""
    ds = moczarr.open_hive(store)
    manifest = moczarr.read_manifest(store)
    paths = [
        os.fspath(store / moczarr.ids.leaf_path(d, None, manifest.path_grouping) / "zarr.json")
        for d in ds.attrs["morton_hive"]["leaves"]
    ]

    def loop():
        t0 = time.perf_counter()
        for p in paths:
            with open(p, "rb") as f:
                json.loads(f.read())
        return time.perf_counter() - t0

    loop()
    return statistics.median(loop() for _ in range(5)), len(paths)


def measure(label: str, fn, repeats: int = 5, floor: float | None = None) -> dict:
    fn()  # warm the filesystem cache and imports
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    with count_requests() as counter:
        fn()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    row = {
        "case": label,
        "median_s": statistics.median(times),
        "peak_mb": peak / 1e6,
        "requests": counter.summary(),
        "gets": counter.gets,
        "lists": counter.lists,
    }
    beside = f"   floor {floor * 1000:7.1f} ms  {row['median_s'] / floor:4.1f}x" if floor else ""
    print(
        f"{label:<34} median {row['median_s'] * 1000:8.1f} ms{beside}   peak {row['peak_mb']:7.1f} MB   "
        f"GET {row['gets']:5d}  LIST {row['lists']:3d}   {row['requests']}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.fspath(REPO.parent / "bench"))
    parser.add_argument("--zagg-python", default=sys.executable)
    parser.add_argument("--sizes", default="500,2000,5000")
    parser.add_argument("--pyramids", action="store_true", help="also open the pyramid and multi-product stores")
    args = parser.parse_args()
    work = Path(args.work)
    warnings.simplefilter("ignore", UserWarning)
    print(f"python {sys.version.split()[0]}, moczarr {moczarr.__version__}")
    print("\n== open_hive (lazy; no data chunk read) ==")
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        store = ensure_store(work, "single", n, args.zagg_python)
        floor, _ = stamp_floor(store)
        rows.append(measure(f"open_hive single_{n} (moc)", lambda store=store: moczarr.open_hive(store), floor=floor))
        measure(
            f"open_hive single_{n} (pandas)",
            lambda store=store: moczarr.open_hive(store, index_kind="pandas"),
            repeats=3,
            floor=floor,
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        leaves = last["requests"].get("GET stamp", 0) / max(first["requests"].get("GET stamp", 1), 1)
        print(f"scaling: {last['median_s'] / first['median_s']:.1f}x time for {leaves:.0f}x leaves")
    if not args.pyramids:
        return
    print("\n== open_store / open_pyramid (500 leaves per product) ==")
    pyramid = ensure_store(work, "pyramid", 500, args.zagg_python)
    measure("open_pyramid pyramid_500", lambda: open_pyramid(pyramid), repeats=3)
    measure("open_store pyramid_500", lambda: open_store(pyramid), repeats=3)
    multi = ensure_store(work, "multi", 500, args.zagg_python)
    products = moczarr.list_products(multi)
    print(f"multi_500 products: {products}")
    measure("open_store multi_500 (window=2019)", lambda: open_store(multi, window="2019"), repeats=3)


if __name__ == "__main__":
    main()
