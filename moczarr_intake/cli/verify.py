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

from moczarr.errors import NotAHiveStoreError, WindowError

from .common import add_storage_flags, command_parser, progress, storage_options

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``verify`` sub-command on an ``argparse`` sub-parser set."""
    p = command_parser(
        subparsers,
        "verify",
        "check stores and moraine pyramids for damage the reader cannot see",
        "Check each ROOT (a morton-hive root or a moraine pyramid folder, told apart by content): stamps,\n"
        "pointers, coverage and levels; with --deep every object read and its content hashes recomputed.\n"
        "Prints a summary table and one line per finding. Exit status 0 when no root has an error, 1\n"
        "otherwise, 2 for bad usage.",
        ["catalogs/sample", "catalogs/sample --deep --json", "s3://bucket/stores/icesat2 --anon"],
    )
    p.add_argument("roots", nargs="+", metavar="ROOT", help="a store root or moraine pyramid: a folder or a URL")
    p.add_argument("--deep", action="store_true", help="read every object and recompute the content hashes")
    p.add_argument("--json", action="store_true", help="print the reports as one JSON document")
    p.add_argument("--window", default=None, help="verify only this window of windowed products")
    add_storage_flags(p)
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bar on stderr (drawn only when stderr is a terminal)"
    )
    return p


def run(args) -> int:
    """Verify every root of parsed ``args`` (:func:`moczarr_intake.stores.verify_root`); print; return the exit
    status (0 ok, 1 an error, 2 bad usage)."""
    from ..stores import format_report, verify_root

    options = storage_options(args)
    bars = progress() and not args.no_progress
    try:
        reports = [
            verify_root(root, deep=args.deep, window=args.window, storage_options=options, progress=bars)
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
