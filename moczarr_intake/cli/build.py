"""``moczarr-catalog build ROOT... --out DIR|URL``: :func:`moczarr_intake.build`, its flags made from
:class:`~moczarr_intake.model.options.BuildOptions`; notes on stderr, what was written on stdout."""

from __future__ import annotations

from pathlib import Path

from ..model.options import BuildOptions
from .common import (
    add_lock_flag,
    add_storage_flags,
    break_lock_first,
    print_notes,
    progress,
    storage_options,
    uploaded_line,
)


def add_parser(sub):
    p = sub.add_parser("build", help="write STAC and Intake catalogs for one or more stores")
    p.add_argument("roots", nargs="+")
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
