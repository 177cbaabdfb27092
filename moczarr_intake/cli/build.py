"""``moczarr-catalog build ROOT... --out DIR|URL``: :func:`moczarr_intake.build`, its flags made from
:class:`~moczarr_intake.model.options.BuildOptions`; notes on stderr, what was written on stdout."""

from __future__ import annotations

from pathlib import Path

from ..model.options import BuildOptions
from .common import (
    add_lock_flag,
    add_storage_flags,
    break_lock_first,
    command_parser,
    print_notes,
    progress,
    storage_options,
    uploaded_line,
)


def add_parser(sub):
    p = command_parser(
        sub,
        "build",
        "write STAC and Intake catalogs for one or more stores",
        "Write the catalogs of the stores at ROOT... into --out: stac/catalog.json (static STAC),\n"
        "catalog.yaml and catalog_v2.yaml (Intake) and build-record.json (what update reads). Morton-hive\n"
        "roots and moraine pyramid folders are told apart by content. Every flag is checked before\n"
        "anything is read; --out is changed only when the build succeeds. Each degraded product and each\n"
        "reader warning is one line on stderr; what was written is one line on stdout.",
        [
            "catalogs/sample --out out",
            "catalogs/sample --out out --href-base https://data.example.org/stores --license CC-BY-4.0",
            "s3://bucket/stores --discover --out s3://bucket/catalog --endpoint-url https://s3.example.org",
        ],
    )
    p.add_argument(
        "roots",
        nargs="+",
        metavar="ROOT",
        help="a store root: a folder or an object-store URL (with --discover, a prefix to search for stores)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the catalog folder (outside every store), or an object-store URL (s3://bucket/cat)",
    )
    for flag, kw in BuildOptions.flags():
        p.add_argument(flag, **kw)
    add_storage_flags(p)
    add_lock_flag(p)
    return p


def run(args) -> int:
    options = BuildOptions.from_args(args, storage_options(args)).checked()
    from ..pipeline import build  # the reader loads once the flags are known to be good

    break_lock_first(args)  # the build takes the lock itself, once its arguments are known to be good
    written = build(args.roots, args.out, options, progress=progress())
    print_notes(written.notes)
    if written.uploaded is not None:
        print(uploaded_line(written))
        return 0
    parts = [str(written.intake), str(written.intake_v2), str(written.stac)]
    if written.api_items:
        parts.append(f"{Path(written.api_items[0]).parent}/ ({len(written.api_items)} stac-geoparquet files)")
    if written.api_collections:
        parts.append(f"{Path(written.api_collections[0]).parent}/ ({len(written.api_collections)} Collections)")
    print("wrote " + ", ".join(parts))
    return 0
