"""Import-time benchmark: what ``import moczarr`` (and the entry points other tools import) costs, beside floors.

    python benchmarks/bench_import.py [--repeats 7]

(That ``import intake`` loads none of moczarr's heavy libraries, although
intake imports this project's plugin module, is a test: tests/project/test_imports.py.)

Each figure is the median wall time of a fresh interpreter running one
statement. Floors: an interpreter that imports nothing (``pass``) for the
light imports; importing the libraries an open needs (zarr, dask.array,
xarray, mortie) for the first use of an opener.
"""

from __future__ import annotations

import argparse
import sys

from bench_cli import timed as timed_command

CASES = [
    ("import moczarr", "pass"),
    ("import moczarr.metadata", "pass"),
    ("import xarray, moczarr.backend", "import xarray"),  # xarray listing its engines
    ("import moczarr; moczarr.open_hive", "import zarr, dask.array, xarray, mortie"),
]


def timed(statement: str, repeats: int) -> float:
    """The median wall time of a fresh interpreter running ``statement``, which must succeed."""
    return timed_command([sys.executable, "-c", statement], repeats, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}")
    print(f"{'statement':<40}{'ms':>8}  {'floor':<40}{'floor ms':>9}{'ratio':>8}")
    for statement, floor in CASES:
        t, f = timed(statement, args.repeats), timed(floor, args.repeats)
        print(f"{statement:<40}{t * 1e3:>8.0f}  {floor:<40}{f * 1e3:>9.0f}{t / f:>7.2f}x", flush=True)


if __name__ == "__main__":
    main()
