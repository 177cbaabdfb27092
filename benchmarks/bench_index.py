"""Speed and memory of MortonRanges / MortonMocIndex on a synthetic global domain.

No store is read: the domain is ``--shards`` random order-7 shards (default
10**5) of 4**6 cells each (order 13, ~4 * 10**8 rows), built from mortie words
by rank arithmetic. Each operation is timed without tracing (median and best of
``--repeat`` runs) and then run once more under ``tracemalloc`` for its peak
allocation. Targets (issue 3): peak < 50 MB and < 50 ms per operation; at 10**6
rows the moc index at least 100 times smaller than a pandas index.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_index.py``
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
import warnings

import dask.array as da
import mortie
import numpy as np
import pandas as pd
import xarray as xr
from xarray.indexes import PandasIndex

from moczarr.indexes.moc_index import MortonMocIndex
from moczarr.indexes.ranges import MortonRanges

SHARD_ORDER, CELL_ORDER = 7, 13  # 4**6 cells per shard
BASES = ["1", "2", "3", "4", "5", "6", "-1", "-2", "-3", "-4", "-5", "-6"]


def all_shards() -> np.ndarray:
    """Every order-7 cell of the sphere (196,608 words), from mortie."""
    bases = mortie.decimal_to_word(np.array(BASES))
    return np.asarray(mortie.generate_morton_children(bases, SHARD_ORDER), dtype=np.uint64).ravel()


def measure(name: str, fn, repeat: int, rows: list) -> object:
    """Time ``fn`` ``repeat`` times, then once under tracemalloc; record a row."""
    times = []
    out = None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    del out
    gc.collect()
    tracemalloc.start()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rows.append((name, statistics.median(times), min(times), peak / 1e6))
    return out


def retained(build) -> tuple[object, float]:
    """Bytes still allocated (MB) while the object ``build()`` returns is alive."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    obj = build()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return obj, held / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=10**5)
    ap.add_argument("--picks", type=int, default=10**4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    pool = all_shards()
    shards_a = np.sort(rng.choice(pool, args.shards, replace=False))
    shards_b = np.sort(rng.choice(pool, args.shards, replace=False))  # overlaps about half of A
    rows: list = []

    r = measure(
        "build MortonRanges (from_subtrees)",
        lambda: MortonRanges.from_subtrees(shards_a, CELL_ORDER),
        args.repeat,
        rows,
    )
    r = MortonRanges.from_subtrees(shards_a, CELL_ORDER)
    rb = MortonRanges.from_subtrees(shards_b, CELL_ORDER)
    n = len(r)

    def build_ds(ranges):
        coords = xr.Coordinates.from_xindex(MortonMocIndex.from_ranges(ranges))
        data = da.zeros(len(ranges), chunks=4**6 * 8192, dtype=np.float32)
        return xr.Dataset({"v": ("cells", data)}, coords=coords)

    ds = measure("build index + lazy Dataset", lambda: build_ds(r), args.repeat, rows)
    ds = build_ds(r)
    idx = ds.xindexes["morton"]
    picks = r.word_at(np.sort(rng.choice(n, args.picks, replace=False)))
    scattered = rng.permutation(picks)
    measure(f"index.sel {args.picks:,} scattered words", lambda: idx.sel({"morton": scattered}), args.repeat, rows)
    measure(f"ds.sel {args.picks:,} words (ascending, index kept)", lambda: ds.sel(morton=picks), args.repeat, rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measure(
            f"ds.sel {args.picks:,} scattered words (index dropped)",
            lambda: ds.sel(morton=scattered),
            args.repeat,
            rows,
        )
    measure("ds.isel a slice (middle third)", lambda: ds.isel(cells=slice(n // 3, 2 * n // 3)), args.repeat, rows)
    measure("ds.sel a label slice", lambda: ds.sel(morton=slice(picks[100], picks[-100])), args.repeat, rows)
    idx_b = MortonMocIndex.from_ranges(rb)
    measure("align A, B: inner join (intersection)", lambda: idx.join(idx_b, "inner"), args.repeat, rows)
    measure("align A, B: outer join (union)", lambda: idx.join(idx_b, "outer"), args.repeat, rows)
    measure("A == B (equals, exact join check)", lambda: idx.equals(idx_b), args.repeat, rows)
    measure(
        "xr.align(A, A) same domain, join=exact", lambda: xr.align(ds, build_ds(r), join="exact"), args.repeat, rows
    )

    print(
        f"\ndomain A: {args.shards:,} shards x 4**6 cells = {n:,} rows at order {CELL_ORDER}, "
        f"{r.n_intervals:,} intervals, {r.nbytes / 1e6:.2f} MB of interval arrays"
    )
    print(f"domain B: {len(rb):,} rows, {rb.n_intervals:,} intervals; A & B = {len(r & rb):,} rows")
    print(f"\n{'operation':58s} {'median ms':>10s} {'best ms':>8s} {'peak MB':>8s}")
    for name, med, best, peak in rows:
        print(f"{name:58s} {med:10.2f} {best:8.2f} {peak:8.2f}")

    # --- 10**6 rows: memory against a pandas index, and a real xr.align ---------------------
    small = r.isel(slice(0, 10**6))
    small_b = r.isel(slice(500_000, 1_500_000))
    _moc_idx, moc_mb = retained(
        lambda: MortonMocIndex.from_ranges(
            MortonRanges.from_rank_intervals(small.lo.copy(), small.hi.copy(), CELL_ORDER)
        )
    )
    words = small.words()
    pd_idx, pd_mb = retained(lambda: PandasIndex(pd.Index(words.copy()), "cells"))
    probe = words[::100]
    _, pd_mb_lookup = retained(lambda: pd_idx.index.get_indexer(probe))  # builds the hash table
    print(f"\n10**6 rows ({small.n_intervals} intervals):")
    print(f"  moc index retained    {moc_mb * 1e3:10.3f} kB")
    print(f"  pandas index retained {pd_mb * 1e3:10.3f} kB (+{pd_mb_lookup * 1e3:.0f} kB hash table on first lookup)")
    print(
        f"  ratio                 {pd_mb / moc_mb:10.0f}x (excluding the hash table), "
        f"{(pd_mb + pd_mb_lookup) / moc_mb:.0f}x (including it)"
    )

    def ds_of(ranges, kind):
        if kind == "moc":
            return xr.Dataset(
                {"v": ("cells", np.ones(len(ranges), np.float32))},
                coords=xr.Coordinates.from_xindex(MortonMocIndex.from_ranges(ranges)),
            )
        return xr.Dataset(
            {"v": ("cells", np.ones(len(ranges), np.float32))}, coords={"morton": ("cells", ranges.words())}
        ).set_xindex("morton")

    small_rows: list = []
    for kind in ("moc", "pandas"):
        a, b = ds_of(small, kind), ds_of(small_b, kind)
        measure(
            f"{kind}: xr.align(inner) 10**6 x 10**6 rows, half overlap",
            lambda a=a, b=b: xr.align(a, b, join="inner"),
            args.repeat,
            small_rows,
        )
        measure(
            f"{kind}: ds.sel {args.picks:,} words on 10**6 rows",
            lambda a=a: a.sel(morton=probe[: args.picks]),
            args.repeat,
            small_rows,
        )
    print(f"\n{'operation (10**6 rows, numpy data)':58s} {'median ms':>10s} {'best ms':>8s} {'peak MB':>8s}")
    for name, med, best, peak in small_rows:
        print(f"{name:58s} {med:10.2f} {best:8.2f} {peak:8.2f}")


if __name__ == "__main__":
    main()
