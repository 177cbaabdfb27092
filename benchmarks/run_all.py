"""Every speed and memory figure of the reader in one run, each beside its floor, with the machine's load.

    python benchmarks/run_all.py [--work ../bench] [--sizes 2000,5000] [--repeats 7] [--s3-repeats 3]
                                 [--server rclone|moto] [--backends obstore] [--skip-s3]

Runs, one after the other in fresh interpreters (so one's memory and caches never weigh on the next):

- ``bench_open.py``: ``open_hive`` beside reading and ``json.loads``-ing every stamp it reads;
- ``bench_load.py``: ``.load()`` of every variable beside reading and decoding every chunk it reads,
  and the load's peak traced memory beside the decoded bytes (target: peak <= 2 x decoded + a constant);
- ``bench_s3.py``: open and ``.load()`` over an S3-compatible server on 127.0.0.1 behind a proxy adding
  20 ms to every request, beside ``GETs x latency / in-flight limit``.

Each script's own report is printed as it runs; then one table of every figure: the median of its
runs, its floor, the median of the per-run ratios (local cases are timed in turn with their floors;
``os-read`` is the same floor reading its files through ``os.open``/``os.read``, as moczarr's local
reads do, where the plain floor uses Python file objects), and the load average (1 minute) when it
was taken. On a machine shared with other work the ratios
are the figures to read (they move far less than absolute times), and the load column says how
busy the machine was. Stores are ``{work}/single_{n}/store`` (``bench_open.py`` writes missing ones
with the zagg writer).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(script: str, *args: str, rows: Path) -> None:
    """One benchmark script in a fresh interpreter, its rows appended to ``rows``; fails loudly."""
    cmd = [sys.executable, os.fspath(HERE / script), *args, "--json", os.fspath(rows)]
    print(f"\n$ {' '.join([Path(cmd[1]).name, *cmd[2:]])}", flush=True)
    subprocess.run(cmd, check=True)


def table(rows: list[dict]) -> None:
    """Every figure beside its floor (and, for local reads, beside the floor reading through the OS calls alone)."""
    print(
        f"\n{'figure':<30}{'median':>10}{'floor':>10}{'ratio':>7}{'os-read':>9}{'ratio':>7}{'runs':>5}{'load':>6}"
        "  floor is"
    )
    for r in rows:
        if r["figure"] == "memory":
            value, floor = f"{r['peak_mb']:.2f} MB", f"{r['decoded_mb']:.2f} MB"
            note = f"{r['floor_is']}; peak - 2 x decoded = {r['excess_mb']:+.2f} MB"
        else:
            value, floor = f"{r['median_s'] * 1e3:.0f} ms", f"{r['floor_s'] * 1e3:.0f} ms"
            note = r["floor_is"]
        lean = f"{r['os_floor_s'] * 1e3:.0f} ms{r['os_ratio']:>6.2f}x" if "os_floor_s" in r else f"{'':>9}{'':>7}"
        print(
            f"{r['case']:<30}{value:>10}{floor:>10}{r['ratio']:>6.2f}x{lean:>16}{r['repeats']:>5}"
            f"{r['load']:>6.1f}  {note}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.fspath(HERE.parent.parent / "bench"))
    parser.add_argument("--sizes", default="2000,5000")
    parser.add_argument("--repeats", type=int, default=7, help="runs of each local case")
    parser.add_argument("--s3-repeats", type=int, default=3, help="runs of each object-storage case")
    parser.add_argument("--server", choices=("rclone", "moto"), default="rclone")
    parser.add_argument("--backends", default="obstore")
    parser.add_argument("--skip-s3", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="moczarr-bench-") as tmp:
        rows = Path(tmp) / "rows.jsonl"
        common = ["--work", args.work, "--sizes", args.sizes]
        run("bench_open.py", *common, "--repeats", str(args.repeats), rows=rows)
        run("bench_load.py", *common, "--repeats", str(args.repeats), rows=rows)
        if not args.skip_s3:
            run(
                "bench_s3.py",
                *common,
                "--load-sizes",
                args.sizes,
                "--server",
                args.server,
                "--backends",
                args.backends,
                "--repeats",
                str(args.s3_repeats),
                rows=rows,
            )
        table([json.loads(line) for line in rows.read_text().splitlines()])
    print(f"\n{os.cpu_count()} cpus; load average now {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
