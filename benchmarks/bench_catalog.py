"""Catalog-build cost: requests per product and build time, against leaf count.

    python benchmarks/bench_catalog.py [--work ../bench] [--zagg-python PYTHON] [--sizes 50,500,5000]

Stores missing under ``--work`` are written as in ``bench_open.py`` (zagg 0.61, the ``test`` extra).
For each size it builds the STAC and Intake catalogs (``moczarr-catalog build``) into a temporary
folder and prints the requests by kind and the median build time of 3 runs. The requests should not
grow with the number of leaves, and the build time at most linearly: each size after the first is
printed beside the first size's time scaled by the leaf count (the issue's target: the 5,000-leaf
build within 2x of ten 500-leaf builds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from bench_open import REPO, ensure_store

from moczarr.storage import count_requests
from moczarr_intake import build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.fspath(REPO.parent / "bench"))
    parser.add_argument("--zagg-python", default=sys.executable)
    parser.add_argument("--sizes", default="50,500,5000")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    first = None
    for n in [int(x) for x in args.sizes.split(",")]:
        store = ensure_store(Path(args.work), "single", n, args.zagg_python)
        times = []
        for _ in range(3):
            with tempfile.TemporaryDirectory() as out:
                t0 = time.perf_counter()
                with count_requests() as counter:
                    written = build([str(store)], Path(out), progress=False)
                times.append(time.perf_counter() - t0)
        products = len(written.summaries[0].products)
        median = statistics.median(times)
        first = first or (n, median)
        scaled = first[1] * n / first[0]
        print(
            f"single_{n:<5} leaves: build median {median * 1000:7.1f} ms "
            f"(linear from {first[0]} leaves: {scaled * 1000:7.1f} ms, ratio {median / scaled:4.2f}x), "
            f"{counter.gets / products:.0f} GETs + {counter.lists / products:.0f} LISTs per product  "
            f"{counter.summary()}",
            flush=True,
        )


if __name__ == "__main__":
    main()
