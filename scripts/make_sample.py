#!/usr/bin/env python
"""Write the bundled sample store: ``python scripts/make_sample.py [OUT] [--seed N]``.

OUT defaults to ``catalogs/sample`` in the repository. An existing sample store
there (one holding the writer's ``sample.json``) is replaced; any other
non-empty folder is refused. The output is deterministic, so re-running on an
unchanged writer leaves ``git status`` clean.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(REPO / "catalogs" / "sample"), help="store root to write")
    parser.add_argument("--seed", type=int, default=0, help="RNG seed of the synthetic points (default 0)")
    args = parser.parse_args(argv)

    from moczarr.testing.hive import EXPECTATIONS_NAME, write_sample_store

    root = write_sample_store(args.out, seed=args.seed, overwrite=True)
    files = [p for p in root.rglob("*") if p.is_file()]
    expect = json.loads((root / EXPECTATIONS_NAME).read_text())
    products = expect["products"]
    print(f"wrote {root}: {len(files)} files, {sum(p.stat().st_size for p in files)} bytes")
    print(f"  points: {expect['input']['n_points']} from {expect['input']['n_granules']} granules")
    print(
        f"  elevation: {len(products['elevation']['leaves'])} leaves, overview levels "
        f"{sorted(products['elevation']['levels'], key=int, reverse=True)}"
    )
    for label, win in products["elevation_yearly"]["windows"].items():
        print(f"  elevation_yearly[{label}]: {len(win['leaves'])} leaves, {win['totals']['count_sum']} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
