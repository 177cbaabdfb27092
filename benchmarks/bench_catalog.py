"""Catalog-build cost: requests per product and build time, against leaf count.

    python benchmarks/bench_catalog.py [--work /tmp/bench] [--zagg-python /tmp/zw/bin/python] [--sizes 50,500,5000]

Stores missing under ``--work`` are written with ``../shared/tools/zagg_write.py`` (zagg 0.61 in a
Python 3.12 venv). For each size it builds the STAC and Intake catalogs (``moczarr-catalog build``)
into a temporary folder and prints the requests by kind and the median build time of 3 runs. The
requests should not grow with the number of leaves.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from bench_open import ensure_store

from moczarr.storage import count_requests
from moczarr_intake.cli import build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="/tmp/bench")
    parser.add_argument("--zagg-python", default="/tmp/zw/bin/python")
    parser.add_argument("--sizes", default="50,500,5000")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for n in [int(x) for x in args.sizes.split(",")]:
        store = ensure_store(Path(args.work), "single", n, args.zagg_python)
        times = []
        for _ in range(3):
            with tempfile.TemporaryDirectory() as out:
                t0 = time.perf_counter()
                with count_requests() as counter:
                    written = build([str(store)], Path(out), progress=False)
                times.append(time.perf_counter() - t0)
        products = len(written["summaries"][0].products)
        print(
            f"single_{n:<5} leaves: build median {statistics.median(times) * 1000:7.1f} ms, "
            f"{counter.gets / products:.0f} GETs + {counter.lists / products:.0f} LISTs per product  {counter.summary()}",
            flush=True,
        )


if __name__ == "__main__":
    main()
