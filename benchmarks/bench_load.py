"""Load-time benchmark: ``.load()`` of every variable beside its physical floor, and peak memory.

    python benchmarks/bench_load.py [--work ../bench] [--sizes 500,2000,5000] [--repeats 7] [--json rows.jsonl]

Stores are ``{work}/single_{n}/store`` (written by the zagg writer, see
``bench_open.py``). For each size it prints the median ``.load()`` time of a
fresh open (the open itself not timed) under dask's default (threaded)
scheduler, the floor — a plain loop that reads every data chunk the load
reads (keys known from the arithmetic) and decodes it (``numpy.frombuffer``,
zstd where the codec says so), timed in turn with the loads — and the median
of their ratios, with the machine's load average beside them; beside it the
same floor reading through the OS calls alone (``os.open``/``os.read``, as
moczarr's local reads do; ``open()`` builds a file object per chunk).

The load is timed as opened by default (``verify_chunks=False``) and, in the
same turns, with ``verify_chunks=True`` (every chunk checked against its
stamp's ``content_hashes``); ``check %`` is what the check adds to the
default load (the median of the per-run ratios), printed beside the floor of the
check itself (``hash ms``: the plain loop plus one ``sha256`` per decoded
chunk, minus the plain loop). Then
the peak traced memory (tracemalloc) of ``.load()`` after a fresh open,
beside the decoded bytes: the target is peak <= 2 x decoded + a constant
(dask's final concatenation of a variable's blocks already holds blocks and
result), so ``excess`` = peak - 2 x decoded should not grow with the store.
``record`` is the part of the peak held by the open's ``Storage.sizes``
(one entry per object read, chunks included, alive until the load ends) and
``other`` = peak - decoded - record is the rest: what the data plane and dask
hold beyond the result, which should be the same at every size.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import os
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from bench_open import emit, existing_stores, interleaved, load_average, read_os, read_plain, size_parser

import moczarr
from moczarr import ids
from moczarr.dataplane.reads import CellsSource
from moczarr.storage import count_requests


def chunk_plan(root: Path, ds) -> list[tuple[str, np.dtype, bool]]:
    """Every data chunk a full load reads: (path, stored dtype, zstd?), from the leaf ids and the schema."""
    manifest = moczarr.read_manifest(root)
    group = str(manifest.cell_order)
    leaves = [root / ids.leaf_path(d, None, manifest.path_grouping) / group for d in ds.attrs["morton_hive"]["leaves"]]
    plan = []
    for name, var in ds.data_vars.items():
        codecs = [c["name"] for c in json.loads((leaves[0] / name / "zarr.json").read_text())["codecs"]]
        plan += [(os.fspath(leaf / name / "c" / "0"), var.dtype, "zstd" in codecs) for leaf in leaves]
    return plan


def raw_floor(plan, read=read_plain, hashed: bool = False) -> float:
    """Seconds of a plain loop reading (``read``) and decoding every chunk of the plan (and ``sha256``-ing the
    values, ``hashed``)."""
    import zstandard

    dctx = zstandard.ZstdDecompressor()
    t0 = time.perf_counter()
    for path, dtype, zstd in plan:
        payload = read(path)
        if zstd:
            payload = dctx.decompress(payload)
        values = np.frombuffer(payload, dtype=dtype)
        if hashed:
            hashlib.sha256(values).hexdigest()
    return time.perf_counter() - t0


def timed_load(store: Path, verify_chunks: bool = False) -> float:
    """``.load()`` of a fresh open (the open not timed, so ``interleaved`` times the open too: subtracted here)."""
    ds = moczarr.open_hive(store, verify_chunks=verify_chunks)
    t0 = time.perf_counter()
    ds.load()
    return time.perf_counter() - t0


def main() -> None:
    args = size_parser(__doc__).parse_args()
    warnings.simplefilter("ignore", UserWarning)
    print(
        f"{'case':<20}{'load ms':>9}{'floor ms':>10}{'ratio':>7}{'os-read':>9}{'ratio':>7}"
        f"{'checked':>10}{'check %':>8}{'hash ms':>8}{'avg':>6}{'chunks':>8}{'tasks':>6}"
        f"{'peak MB':>9}{'decoded MB':>12}{'peak/dec':>10}{'excess MB':>11}{'record MB':>11}{'other MB':>10}"
    )
    for n, store in existing_stores(args.work, args.sizes):
        ds = moczarr.open_hive(store)
        plan = chunk_plan(store, ds)
        timed = interleaved(
            functools.partial(timed_load, store),
            functools.partial(raw_floor, plan),
            args.repeats,
            functools.partial(raw_floor, plan, read_os),
            others={
                "checked": functools.partial(timed_load, store, True),
                "hashed_floor": functools.partial(raw_floor, plan, read_plain, True),
            },
        )
        load, floor, ratio = timed["median_s"], timed["floor_s"], timed["ratio"]
        check_pct = (1 / timed["checked_ratio"] - 1) * 100  # the median of checked / default, less one
        hash_s = timed["hashed_floor_s"] - floor
        avg = load_average()
        with count_requests() as counter:
            moczarr.open_hive(store).load()
        tasks = sum(len(v.data.__dask_graph__()) for v in ds.variables.values() if v.chunks is not None)
        decoded = sum(v.nbytes for v in ds.variables.values() if v.chunks is not None)
        peak, record = peak_of_load(store)
        excess = peak - 2 * decoded
        print(
            f"{'load single_' + str(n):<20}{load * 1e3:>9.1f}{floor * 1e3:>10.1f}{ratio:>6.2f}x"
            f"{timed['os_floor_s'] * 1e3:>9.1f}{timed['os_ratio']:>6.2f}x"
            f"{timed['checked_s'] * 1e3:>10.1f}{check_pct:>7.1f}%{hash_s * 1e3:>8.1f}{avg:>6.1f}"
            f"{counter.kind('chunk:data'):>8}{tasks:>6}{peak / 1e6:>9.2f}{decoded / 1e6:>12.2f}"
            f"{peak / max(decoded, 1):>9.1f}x"
            f"{excess / 1e6:>11.2f}{record / 1e6:>11.2f}{(peak - decoded - record) / 1e6:>10.2f}",
            flush=True,
        )
        common = {"leaves": n, "repeats": args.repeats, "load": avg}
        emit(
            args.json,
            {
                "case": f"load single_{n}",
                "figure": "load",
                **timed,
                "floor_is": "read + decode of every data chunk",
                **common,
            },
        )
        emit(
            args.json,
            {
                "case": f"verify-on-read single_{n}",
                "figure": "check",
                "median_s": timed["checked_s"],
                "floor_s": load,
                "ratio": 1 / timed["checked_ratio"],
                "check_pct": check_pct,
                "hash_floor_s": hash_s,
                "floor_is": f"the default load, unchecked; sha256 of every chunk alone {hash_s * 1e3:.0f} ms",
                **common,
            },
        )
        emit(
            args.json,
            {
                "case": f"load peak single_{n}",
                "figure": "memory",
                "peak_mb": peak / 1e6,
                "decoded_mb": decoded / 1e6,
                "ratio": peak / max(decoded, 1),
                "excess_mb": excess / 1e6,
                "floor_is": "decoded bytes",
                **common,
            },
        )


def peak_of_load(store: Path) -> tuple[int, int]:
    """Peak traced bytes of ``.load()`` after a fresh open, and the bytes ``Storage.sizes`` grew by during it."""
    ds = moczarr.open_hive(store)
    storage = next(v.storage for v in graph_values(ds) if isinstance(v, CellsSource))
    before, table = set(storage.sizes), sys.getsizeof(storage.sizes)
    gc.collect()
    tracemalloc.start()
    ds.load()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    grown = sys.getsizeof(storage.sizes) - table + sum(sys.getsizeof(k) for k in storage.sizes if k not in before)
    return peak, grown


def graph_values(ds):
    """Every value in the dask graphs of a Dataset's variables (sources unwrapped from their graph nodes)."""
    for var in ds.variables.values():
        if var.chunks is None:
            continue
        for layer in var.data.__dask_graph__().layers.values():
            for value in layer.values():
                yield getattr(value, "value", value)


if __name__ == "__main__":
    main()
