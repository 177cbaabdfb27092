"""``moczarr-catalog``: build STAC + Intake catalogs for stores, show a store, run the demo.

    moczarr-catalog build ROOT... --out DIR [--thumbnails] [--href-base URL [--stores-root DIR]]
                          [--catalog-url URL] [--license ID|URL] [--strict] [--anon] [--endpoint-url URL]
    moczarr-catalog build PREFIX... --discover --out DIR|URL [--scheduler ADDRESS]
    moczarr-catalog update OUT [--scheduler ADDRESS]
    moczarr-catalog publish OUT --pgstac DSN
    moczarr-catalog show ROOT
    moczarr-catalog demo [--out DIR]
    moczarr-catalog verify ROOT... [--deep] [--json]

``build`` tells morton-hive roots and moraine pyramid folders apart by content,
writes ``DIR/stac/catalog.json`` (static STAC) and ``DIR/catalog.yaml``
(Intake, version 1 drivers) plus ``DIR/catalog_v2.yaml`` (Intake readers), and,
when every store has a URL (``--href-base``), what a STAC API server loads:
the Items as stac-geoparquet ``DIR/stac/api-items/*.parquet`` and the
Collections as ``DIR/stac/api-collections/*.json``. Every flag is checked
before anything is read. Each degraded product and each reader warning is one
line on stderr; a failure is one ``error:`` line and a non-zero exit
(``--strict``: exit 1 on any degrade). ``DIR`` is only changed when the build
succeeds.
"""

from __future__ import annotations

import argparse
import sys

from moczarr.errors import MoczarrError

from . import build, demo, publish, show, update, verify
from .common import one_line

#: the commands, in the order ``--help`` lists them: each module's ``add_parser`` and ``run``
COMMANDS = [build, show, demo, verify, update, publish]


def main(argv: list[str] | None = None) -> int:
    """The ``moczarr-catalog`` entry point: every failure is one ``error:`` line on stderr, never a traceback.

    Exit status 0 on success, 1 when a ``--strict`` build met a degraded
    product, 2 for any other failure (a :class:`~moczarr.errors.MoczarrError`:
    bad input, damaged store, failing object store; or anything else, named by
    its type), 130 when interrupted; argparse's usage errors keep its own 2.
    The ``verify`` command's own statuses (0 clean, 1 errors found) pass through.
    """
    from ..errors import DegradedBuildError

    try:
        return run(argv)
    except DegradedBuildError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1
    except MoczarrError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the promise is "never a traceback": name the failure instead
        print(f"error: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
        return 2


def parser() -> argparse.ArgumentParser:
    """The ``moczarr-catalog`` argument parser (building it imports nothing heavy)."""
    top = argparse.ArgumentParser(
        prog="moczarr-catalog", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = top.add_subparsers(dest="cmd", required=True)
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(run=command.run)
    return top


def run(argv: list[str] | None = None) -> int:
    """:func:`main` without the error wrapper (exceptions propagate)."""
    args = parser().parse_args(argv)
    return args.run(args)
