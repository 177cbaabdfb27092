"""``moczarr-catalog show ROOT``: :func:`moczarr_intake.stores.describe_root`; the store on stdout, degraded
products and reader warnings on stderr."""

from __future__ import annotations

import warnings

from moczarr.errors import MoczarrWarning

from .common import add_storage_flags, print_notes, storage_options


def add_parser(sub):
    p = sub.add_parser("show", help="print a store's roster, levels and extents")
    p.add_argument("root")
    add_storage_flags(p)
    return p


def run(args) -> int:
    from ..stores import describe_root

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        text, degraded = describe_root(args.root, storage_options(args))
    print(text)
    print_notes(degraded, caught, distinct=False)
    return 0
