"""``moczarr-catalog show ROOT``: :func:`moczarr_intake.stores.describe_root`; the store on stdout, degraded
products and reader warnings on stderr."""

from __future__ import annotations

import warnings

from moczarr.errors import MoczarrWarning

from .common import add_storage_flags, command_parser, print_notes, storage_options


def add_parser(sub):
    p = command_parser(
        sub,
        "show",
        "print a store's roster, levels and extents",
        "Print what a store holds: its products, each product's levels (cell order, kind, resolution,\n"
        "variables), shards and extents. Degraded products and reader warnings are lines on stderr.",
        ["catalogs/sample", "s3://bucket/stores/icesat2 --anon --endpoint-url https://s3.example.org"],
    )
    p.add_argument("root", metavar="ROOT", help="the store root: a folder or an object-store URL")
    add_storage_flags(p)
    return p


def run(args) -> int:
    from ..stores import describe_root

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        text, degraded = describe_root(args.root, storage_options(args))
    print(text)
    print_notes(degraded, caught)
    return 0
