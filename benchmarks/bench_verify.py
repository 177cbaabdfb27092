"""Verify-time benchmark: shallow and deep ``verify_store`` of zagg-written stores of 500 and 2,000 leaves.

    python benchmarks/bench_verify.py [--work ../bench] [--sizes 500 2000] [--repeats 3]

Stores are read from ``{work}/single_{n}/store`` (written by ``../shared/tools/zagg_write.py``; see
``bench_open.py`` to write them). For each size it prints the median wall time, the requests by kind
(``moczarr.count_requests``) and, beside each, its floor: the raw reads of the same objects without any
parsing or checking —

- shallow floor: one delimiter-LIST of every node the discovery walk visits, plus one GET of every leaf
  stamp (the objects a shallow verify cannot skip);
- deep floor: the shallow floor plus one GET of every other object inside every leaf (every chunk,
  metadata document and bitmap), each read once, at the verifier's batched concurrency. The floor takes
  its key list from the local filesystem, so it counts none of the one LIST per leaf the verifier pays
  (it must list to find what is on disk).

Measured on a shared 2-core machine (local files):

    single_500   shallow  0.20 s (floor  0.27 s),    513 GETs /   815 LISTs
                 deep     5.9 s  (floor  3.1 s),  11,513 GETs / 1,315 LISTs
    single_2000  shallow  0.77 s (floor  0.65 s),  2,013 GETs / 3,277 LISTs
                 deep    23.4 s  (floor 16.5 s),  46,013 GETs / 5,277 LISTs
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

from moczarr import count_requests, verify_store
from moczarr.storage import Storage

REPO = Path(__file__).resolve().parents[1]


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def leaf_roots(store: Path) -> list[str]:
    return sorted(str(p.relative_to(store)) for p in store.rglob("*.zarr") if p.name[0].isdigit() or p.name[0] == "-")


def shallow_floor(storage: Storage, leaves: list[str]) -> None:
    nodes = sorted({"/".join(leaf.split("/")[:i]) for leaf in leaves for i in range(len(leaf.split("/")))})
    storage.list_many(nodes)
    storage.get_many([f"{leaf}/zarr.json" for leaf in leaves])


def deep_floor(storage: Storage, store: Path, leaves: list[str]) -> None:
    shallow_floor(storage, leaves)
    keys = [
        str(p.relative_to(store))
        for leaf in leaves
        for p in (store / leaf).rglob("*")
        if p.is_file() and p != store / leaf / "zarr.json"
    ]  # the leaf stamps are in the shallow floor already
    storage.get_many(keys)


def run(store: Path, repeats: int) -> None:
    leaves = leaf_roots(store)
    print(f"\n{store}  ({len(leaves)} leaves)")
    print(f"  {'case':<16} {'median s':>9} {'GETs':>8} {'LISTs':>7}   requests")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, fn in [
            ("shallow verify", lambda: verify_store(store)),
            ("shallow floor", lambda: shallow_floor(Storage.open(store), leaves)),
            ("deep verify", lambda: verify_store(store, deep=True)),
            ("deep floor", lambda: deep_floor(Storage.open(store), store, leaves)),
        ]:
            fn()  # warm the filesystem cache and imports
            median, result = timed(fn, repeats)
            with count_requests() as counter:
                fn()
            extra = ""
            if result is not None:
                counts = result.counts
                extra = f"   ok={result.ok} leaves_stamped={counts['leaves_stamped']}"
                extra += f" arrays_hashed={counts['arrays_hashed']}"
            summary = ", ".join(f"{k} {v}" for k, v in counter.summary().items())
            print(f"  {label:<16} {median:>9.3f} {counter.gets:>8} {counter.lists:>7}   {summary}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=REPO.parent / "bench")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for n in args.sizes:
        store = args.work / f"single_{n}" / "store"
        if not store.is_dir():
            print(f"\n{store}: missing (write it with ../shared/tools/zagg_write.py single --leaves {n}); skipped")
            continue
        run(store, args.repeats)


if __name__ == "__main__":
    main()
