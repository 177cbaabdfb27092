"""Start-up benchmark of the command line: ``moczarr-catalog --help`` and an argument error, beside a bare interpreter.

    python benchmarks/bench_cli.py [--repeats 15]

Each figure is the median wall time of a fresh process running the installed
``moczarr-catalog`` console script (found beside this interpreter) with the
arguments shown; the floor is the same interpreter running ``python -c pass``.
The target (issue 19) is within 3x of the floor: the command loads the reader
(xarray, zarr, dask, mortie, pandas, pystac, rustac) only once a command
runs, and checks its flags before that. That none of them is imported is a
test: tests/catalog/test_catalog_cli.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = [
    ["--help"],
    ["build", "--help"],
    ["build", "store", "--out", "cat", "--license", "not a license!!"],  # refused by the flag check
    ["build", "store", "--out", "cat", "--href-base", "not-a-url"],
]


def timed(command: list[str], repeats: int, cwd: str | None = None, *, check: bool = False) -> float:
    """The median wall time of ``repeats`` fresh processes running ``command`` (``check``: each must exit 0)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    script = shutil.which("moczarr-catalog", path=str(Path(sys.executable).parent))
    if script is None:
        sys.exit("the moczarr-catalog console script is not installed beside this interpreter")
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as cwd:
        floor = timed([sys.executable, "-c", "pass"], args.repeats, cwd)
        print(f"{'moczarr-catalog ...':<70}{'ms':>8}{'floor ms':>10}{'ratio':>8}")
        for case in CASES:
            t = timed([sys.executable, script, *case], args.repeats, cwd)
            print(f"{' '.join(case):<70}{t * 1e3:>8.0f}{floor * 1e3:>10.0f}{t / floor:>7.2f}x", flush=True)
    print(f"{'floor: python -c pass':<70}{floor * 1e3:>8.0f}")


if __name__ == "__main__":
    main()
