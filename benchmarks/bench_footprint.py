"""Catalog footprint cost: the outline of a store's root-MOC shards, against shard count.

    python benchmarks/bench_footprint.py [--work ../bench] [--sizes 500,2000,5000]

For each store ``{work}/single_{n}/store`` it prints the median time of
:func:`moczarr.places.footprint` and of mortie's dissolve of the compressed
cover (``mortie.to_geometry``, what the catalog summary used), and the growth
beside linear: each time over ``n / n_first`` times the first size's time.
"""

from __future__ import annotations

import statistics
import time

import mortie
import numpy as np
from bench_open import existing_stores, size_parser

from moczarr import read_manifest
from moczarr.openers.hive import root_shards
from moczarr.places import footprint
from moczarr.storage import Storage


def median_time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    args = size_parser(__doc__).parse_args()
    print(f"{'shards':>8}{'footprint ms':>14}{'vs linear':>11}{'mortie dissolve ms':>20}{'vs linear':>11}")
    first = None
    for _, store in existing_stores(args.work, args.sizes):
        storage = Storage.open(store)
        words = root_shards(storage, read_manifest(storage))
        new = median_time(lambda words=words: footprint(words), args.repeats)
        old = median_time(
            lambda words=words: mortie.to_geometry(np.asarray(mortie.compress_moc(words), dtype=np.uint64)), 3
        )
        first = first or (words.size, new, old)
        scale = words.size / first[0]
        print(
            f"{words.size:>8}{new * 1e3:>14.1f}{new / (scale * first[1]):>10.1f}x{old * 1e3:>20.1f}"
            f"{old / (scale * first[2]):>10.1f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
