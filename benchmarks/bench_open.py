"""Open-time benchmark: stores of 50, 500 and 2,000 leaves written by the real zagg writer.

    python benchmarks/bench_open.py [--work /tmp/bench] [--zagg-python /tmp/zw/bin/python]

Stores missing under ``--work`` are written first with ``../shared/tools/zagg_write.py``
(it needs zagg 0.61 in a Python 3.12 venv; see ``../shared/tools/README.md``). For each size
it prints the median of 5 opens, requests by kind, and the peak traced memory of one open;
then the same for ``open_store`` / ``open_pyramid`` on the pyramid and multi-product stores.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import moczarr
from moczarr.pyramid import open_pyramid
from moczarr.products import open_store
from moczarr.storage import count_requests

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO.parent / "shared" / "tools" / "zagg_write.py"


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


def measure(label: str, fn, repeats: int = 5) -> dict:
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
    print(
        f"{label:<34} median {row['median_s'] * 1000:8.1f} ms   peak {row['peak_mb']:7.1f} MB   "
        f"GET {row['gets']:5d}  LIST {row['lists']:3d}   {row['requests']}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="/tmp/bench")
    parser.add_argument("--zagg-python", default="/tmp/zw/bin/python")
    parser.add_argument("--sizes", default="50,500,2000")
    args = parser.parse_args()
    work = Path(args.work)
    warnings.simplefilter("ignore", UserWarning)
    print(f"python {sys.version.split()[0]}, moczarr {moczarr.__version__}")
    print("\n== open_hive (lazy; no data chunk read) ==")
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        store = ensure_store(work, "single", n, args.zagg_python)
        rows.append(measure(f"open_hive single_{n} (moc)", lambda: moczarr.open_hive(store)))
        measure(f"open_hive single_{n} (pandas)", lambda: moczarr.open_hive(store, index_kind="pandas"), repeats=3)
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(f"scaling: {last['median_s'] / first['median_s']:.1f}x time for {last['requests'].get('GET stamp', 0) / max(first['requests'].get('GET stamp', 1), 1):.0f}x leaves")
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
