"""``moczarr-catalog demo [--out DIR]``: :func:`moczarr_intake.pipeline.demo.demo`, its summary on stdout."""

from __future__ import annotations

from pathlib import Path

from moczarr.errors import ArgumentError

from .common import command_parser


def add_parser(sub):
    p = command_parser(
        sub,
        "demo",
        "write the sample store, build and open its catalogs",
        "Write the bundled sample store (generated, so it works from an installed wheel), build its\n"
        "catalogs, open them with Intake and read one level; print what was written and read.",
        ["", "--out demo"],
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep the sample and its catalogs in this folder, created when missing (default: a temporary folder)",
    )
    return p


def run(args) -> int:
    from ..pipeline.demo import demo

    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise ArgumentError(f"--out {args.out} is a file: give a folder to keep the demo in (created when missing)")
    print(demo(args.out))
    return 0
