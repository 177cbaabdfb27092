"""``moczarr-catalog verify ROOT [ROOT ...] [--deep] [--json]``: check stores the way their operators need.

Each ROOT is told apart by content: a moraine pyramid folder is checked with
:func:`moczarr.moraine.verify.verify_moraine`, anything else as a morton-hive
root (bare or multi-product) with :func:`moczarr.verify_store`. Prints a
summary table and one line per finding (or, with ``--json``, one JSON
document listing every report). Exit status: 0 when no root has an error,
1 otherwise, 2 for bad usage (a root that does not exist, ``--window all``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import Counter
from typing import TYPE_CHECKING

from moczarr.errors import NotAHiveStoreError, WindowError

if TYPE_CHECKING:  # the reader is loaded when a root is verified, not when the command line is parsed
    from moczarr import VerifyReport

_ORDER = {"error": 0, "warning": 1, "info": 2}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``verify`` sub-command on an ``argparse`` sub-parser set."""
    p = subparsers.add_parser("verify", help="check stores and moraine pyramids for damage the reader cannot see")
    p.add_argument("roots", nargs="+", metavar="ROOT")
    p.add_argument("--deep", action="store_true", help="read every object and recompute the content hashes")
    p.add_argument("--json", action="store_true", help="print the reports as one JSON document")
    p.add_argument("--window", default=None, help="verify only this window of windowed products")
    p.add_argument("--anon", action="store_true", help="anonymous object-store access")
    p.add_argument("--endpoint-url", default=None, help="S3-compatible endpoint")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _storage_options(args) -> dict | None:
    opts: dict = {}
    if args.anon:
        opts["anon"] = True
    if args.endpoint_url:
        opts["client_kwargs"] = {"endpoint_url": args.endpoint_url}
    return opts or None


def verify_root(
    root: str, *, deep: bool, window: str | None, storage_options: dict | None, progress: bool
) -> VerifyReport:
    """One root's report: a moraine pyramid or a morton-hive root, with a progress bar over leaves on stderr."""
    from tqdm import tqdm

    from moczarr import verify_store
    from moczarr.moraine import is_moraine_pyramid, verify_moraine

    if is_moraine_pyramid(root, storage_options=storage_options):
        return verify_moraine(root, storage_options=storage_options)
    bar = tqdm(total=0, desc=root, unit="obj", file=sys.stderr, disable=not progress, leave=False)

    def tick(checked: int, found: int) -> None:
        if found:
            bar.total = (bar.total or 0) + found
            bar.refresh()
        if checked:
            bar.update(checked)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the report carries what the reader's warnings would say
            return verify_store(root, window=window, deep=deep, storage_options=storage_options, progress=tick)
    finally:
        bar.close()


def format_report(report: VerifyReport) -> str:
    """The summary table and one line per finding (errors first), as text."""
    status = "OK" if report.ok else "FAILED"
    sev = Counter(f.severity for f in report.findings)
    lines = [
        f"{report.store_root} ({'deep' if report.deep else 'shallow'}): {status} - "
        f"{sev['error']} errors, {sev['warning']} warnings, {sev['info']} info"
    ]
    if report.counts:
        width = max(len(k) for k in report.counts)
        lines += [f"  {k:<{width}}  {v:>8}" for k, v in sorted(report.counts.items())]
    kinds = Counter((f.severity, f.kind) for f in report.findings)
    if kinds:
        width = max(len(k) for _, k in kinds)
        lines.append(f"  {'finding':<{width}}  {'severity':<8}  {'n':>6}")
        for (severity, kind), n in sorted(kinds.items(), key=lambda kv: (_ORDER[kv[0][0]], kv[0][1])):
            lines.append(f"  {kind:<{width}}  {severity:<8}  {n:>6}")
    for f in sorted(report.findings, key=lambda f: _ORDER[f.severity]):
        lines.append(f"{f.severity.upper():<7} {f.kind} {f.object or '.'}: {f.message}")
    return "\n".join(lines)


def run(args) -> int:
    """Verify every root of parsed ``args``; print; return the exit status (0 ok, 1 an error, 2 bad usage)."""
    try:
        reports = [
            verify_root(
                root,
                deep=args.deep,
                window=args.window,
                storage_options=_storage_options(args),
                progress=not args.no_progress,
            )
            for root in args.roots
        ]
    except (WindowError, NotAHiveStoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        import json

        print(json.dumps([r.to_dict() for r in reports], indent=1))
    else:
        print("\n\n".join(format_report(r) for r in reports))
    return 0 if all(r.ok for r in reports) else 1


__all__ = ["add_parser", "format_report", "run", "verify_root"]
