"""``moczarr-catalog demo [--out DIR]``: :func:`moczarr_intake.pipeline.demo.demo`, its summary on stdout."""

from __future__ import annotations

from pathlib import Path


def add_parser(sub):
    p = sub.add_parser("demo", help="write the sample store, build and open its catalogs")
    p.add_argument(
        "--out", type=Path, default=None, help="keep the sample and its catalogs here (default: a temporary folder)"
    )
    return p


def run(args) -> int:
    from ..pipeline.demo import demo

    print(demo(args.out))
    return 0
