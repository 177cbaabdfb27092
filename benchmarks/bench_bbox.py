"""Small-bbox open on a many-leaf store: requests and time beside the full open.

    python benchmarks/bench_bbox.py [--store ../bench/single_5000/store] [--half-widths 0.3,1.5,4]

The store is a zagg-written single-product store (``bench_open.py`` writes
them: ``single_5000`` has 5,000 leaves). Boxes of ``2 * half-width`` degrees are is
centred on one leaf's centre; the physical floor of its open is one stamp GET
per *covered* shard (shards of the root MOC that the box meets, counted
independently here from mortie's own cover of the box at shard order) plus the
constant manifest, root MOC and schema reads. The full open pays one stamp per
leaf. Each line prints the median of 5 opens and the requests by kind.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import mortie
import numpy as np

import moczarr
from moczarr.storage import count_requests


def timed(fn, repeats: int = 5) -> tuple[float, object]:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--store", default=os.fspath(Path(__file__).resolve().parents[2] / "bench" / "single_5000" / "store")
    )
    parser.add_argument("--half-widths", default="0.3,1.5,4", help="half the box side, degrees (comma-separated)")
    args = parser.parse_args()
    root = Path(args.store)
    warnings.simplefilter("ignore", UserWarning)
    manifest = moczarr.read_manifest(str(root))
    env = json.loads((root / "coverage.moc").read_text())
    shards = _expand(env["ranges"], manifest.shard_order)
    print(f"python {sys.version.split()[0]}, moczarr {moczarr.__version__}, mortie {mortie.__version__}")
    print(
        f"store {root}: {shards.size} shards in the root MOC, "
        f"shard order {manifest.shard_order}, cell order {manifest.cell_order}"
    )

    full_s, full = timed(lambda: moczarr.open_hive(str(root)))
    with count_requests() as c_full:
        moczarr.open_hive(str(root))
    lat, lon = mortie.mort2geo(shards[[shards.size // 2, shards.size // 2]])
    lon0 = (float(lon[0]) + 180) % 360 - 180

    def line(label, seconds, counter, floor):
        print(
            f"{label:<28} median {seconds * 1000:8.1f} ms   GET {counter.gets:5d} (floor {floor:5d})   "
            f"stamps {counter.kind('stamp'):5d}   {counter.summary()}",
            flush=True,
        )

    n_arrays = c_full.kind("metadata")
    line("full open", full_s, c_full, full.attrs["morton_hive"]["n_leaves"] + 2 + n_arrays)
    for h in (float(x) for x in args.half_widths.split(",")):
        box = moczarr.BBox(lon0 - h, max(-90, float(lat[0]) - h), lon0 + h, min(90, float(lat[0]) + h))
        small_s, small = timed(lambda box=box: moczarr.open_hive(str(root), aoi=box))
        with count_requests() as c_small:
            moczarr.open_hive(str(root), aoi=box)
        # the floor, independently: mortie's flat cover of the box's corners ring at shard order, met with the MOC
        ring_lons = [box.west, box.east, box.east, box.west]
        ring_lats = [box.south, box.south, box.north, box.north]
        shard_cover = np.asarray(
            mortie.morton_coverage(ring_lats, ring_lons, order=manifest.shard_order), dtype=np.uint64
        )
        covered = np.intersect1d(shard_cover, shards).size
        line(f"bbox {2 * h:.1f} deg", small_s, c_small, covered + 2 + n_arrays)
        print(
            f"    {small.sizes['cells']} rows from {small.attrs['morton_hive']['n_leaves']} leaves; "
            f"{covered} shards of the MOC meet the box (the stamp floor)"
        )
    print(f"full open: {full.sizes['cells']} rows")


def _expand(ranges, order: int) -> np.ndarray:
    from moczarr.format.coverage import expand_ranges

    return expand_ranges(ranges, order, "coverage.moc")


if __name__ == "__main__":
    main()
