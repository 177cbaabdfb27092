"""Open-time benchmark: stores of 500, 2,000 and 5,000 leaves written by the real zagg writer.

    python benchmarks/bench_open.py [--work ../bench] [--sizes 500,2000,5000] [--repeats 7]
                                    [--zagg-python /path/to/zagg/venv/bin/python] [--pyramids] [--json rows.jsonl]

Stores missing under ``--work`` are written first with ``../shared/tools/zagg_write.py``
(it needs zagg 0.61 in a Python 3.12 venv; see ``../shared/tools/README.md``). For each size
it prints the median of ``--repeats`` opens beside the floor — a plain loop reading and
``json.loads``-ing every stamp the open reads, timed in turn with the opens — and the median of
their ratios, requests by kind, the peak traced memory of one open and the machine's load
average (1 minute) beside them; then ``open_store`` / ``open_pyramid`` on the pyramid and
multi-product stores when ``--pyramids`` is given. ``--json`` appends each row as a JSON line
(``benchmarks/run_all.py`` collects them).
"""

from __future__ import annotations

import argparse
import functools
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
    """The arguments every size sweep takes: ``--work`` (where ``single_{n}/store`` are), ``--sizes``,
    ``--repeats``, ``--json`` (a file each row is appended to as a JSON line)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.fspath(REPO.parent / "bench"))
    parser.add_argument("--sizes", default="500,2000,5000")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="append every row to this file as a JSON line")
    return parser


def load_average() -> float:
    """The machine's load average over the last minute (what else competes for the cores)."""
    return os.getloadavg()[0]


def emit(path: str | None, row: dict) -> None:
    """Append ``row`` (one figure beside its floor) to the JSON-lines file ``path``, when given."""
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def seconds(fn) -> float:
    """Wall seconds of ``fn()``, or what it returns when that is a float (a function timing its own part)."""
    t0 = time.perf_counter()
    out = fn()
    return out if isinstance(out, float) else time.perf_counter() - t0


def interleaved(fn, floor_fn, repeats: int, os_floor_fn=None, others: dict | None = None) -> dict:
    """Medians of ``fn`` and its floors (:func:`seconds`), timed in turn ``repeats`` times, and of their ratios.

    Timing them in turn exposes all to the same load; the median of the
    per-run ratios is steadier than the ratio of two medians on a shared
    machine. ``os_floor_fn`` is the same floor reading its files through the
    OS calls alone (:func:`read_os`), which moczarr's local reads use.
    ``others`` are more functions timed in the same turns, by name: each
    gives ``{name}_s`` and ``{name}_ratio`` (the median of ``fn`` / it).
    """
    floors = {"floor": floor_fn, **({"os_floor": os_floor_fn} if os_floor_fn else {}), **(others or {})}
    fn(), [f() for f in floors.values()]  # warm the filesystem cache, imports and clients
    times: dict[str, list[float]] = {"median": [], **{k: [] for k in floors}}
    for _ in range(repeats):
        for k, f in floors.items():
            times[k].append(seconds(f))
        times["median"].append(seconds(fn))
    out = {f"{k}_s": statistics.median(v) for k, v in times.items()}
    for k in floors:
        name = k.replace("floor", "ratio") if "floor" in k else f"{k}_ratio"
        out[name] = statistics.median(t / f for t, f in zip(times["median"], times[k], strict=True))
    return out


def read_plain(path: str) -> bytes:
    """A file's bytes the plain way: a Python file object."""
    with open(path, "rb") as f:
        return f.read()


def read_os(path: str) -> bytes:
    """A small file's bytes through the OS calls alone (every stamp and chunk of these stores is below 64 KiB)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


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


def stamp_loop(store: Path, read=read_plain):
    """The floor of an open: a plain loop reading (``read``) and ``json.loads``-ing every admitted leaf's stamp."""
    ds = moczarr.open_hive(store)
    manifest = moczarr.read_manifest(store)
    paths = [
        os.fspath(store / moczarr.ids.leaf_path(d, None, manifest.path_grouping) / "zarr.json")
        for d in ds.attrs["morton_hive"]["leaves"]
    ]

    def loop():
        for p in paths:
            json.loads(read(p))

    return loop


def measure(
    label: str, fn, repeats: int = 5, floor_fn=None, json_path: str | None = None, os_floor_fn=None, **extra
) -> dict:
    """Median time of ``fn`` (beside its floors' when given), its requests, its peak traced memory; printed."""
    if floor_fn is None:
        fn()
        timed = {"median_s": statistics.median(seconds(fn) for _ in range(repeats))}
    else:
        timed = interleaved(fn, floor_fn, repeats, os_floor_fn)
    with count_requests() as counter:
        fn()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    row = {
        "case": label,
        "floor_s": None,
        "ratio": None,
        **timed,
        "repeats": repeats,
        "load": load_average(),
        "peak_mb": peak / 1e6,
        "requests": counter.summary(),
        "gets": counter.gets,
        "lists": counter.lists,
        **extra,
    }
    beside = f"   floor {row['floor_s'] * 1000:7.1f} ms {row['ratio']:4.2f}x" if row["floor_s"] else ""
    if "os_floor_s" in row:
        beside += f"   os-read floor {row['os_floor_s'] * 1000:7.1f} ms {row['os_ratio']:4.2f}x"
    print(
        f"{label:<26} median {row['median_s'] * 1000:7.1f} ms{beside}   load {row['load']:4.1f}"
        f"   peak {row['peak_mb']:5.1f} MB   GET {row['gets']:5d}  LIST {row['lists']:3d}",
        flush=True,
    )
    emit(json_path, row)
    return row


def main() -> None:
    parser = size_parser(__doc__)
    parser.add_argument("--zagg-python", default=sys.executable)
    parser.add_argument("--pandas", action="store_true", help="also open with index_kind='pandas'")
    parser.add_argument("--pyramids", action="store_true", help="also open the pyramid and multi-product stores")
    args = parser.parse_args()
    work = Path(args.work)
    warnings.simplefilter("ignore", UserWarning)
    print(f"python {sys.version.split()[0]}, moczarr {moczarr.__version__}, {os.cpu_count()} cpus")
    print(f"\n== open_hive (lazy; no data chunk read), medians of {args.repeats} ==")
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        store = ensure_store(work, "single", n, args.zagg_python)
        floor = stamp_loop(store)
        rows.append(
            measure(
                f"open_hive single_{n}",
                functools.partial(moczarr.open_hive, store),
                args.repeats,
                floor,
                args.json,
                os_floor_fn=stamp_loop(store, read_os),
                figure="open",
                leaves=n,
                floor_is="read + json.loads of every stamp",
            )
        )
        if args.pandas:
            measure(
                f"open_hive single_{n} (pandas)",
                functools.partial(moczarr.open_hive, store, index_kind="pandas"),
                3,
                floor,
            )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(
            f"scaling: {last['median_s'] / first['median_s']:.1f}x time "
            f"for {last['leaves'] / first['leaves']:.1f}x leaves"
        )
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
