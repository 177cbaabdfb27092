"""What every ``moczarr-catalog`` command shares: the storage and lock flags, the error line, the report lines."""

from __future__ import annotations

import argparse
import re
import sys

from ..errors import warning_lines
from ..model.options import check_url


def command_parser(sub, name: str, summary: str, description: str, examples: list[str]) -> argparse.ArgumentParser:
    """A command's parser: ``summary`` in the command list, ``description`` and ``examples`` (one command line
    each, without the program's name) in its ``--help``, plain text as written."""
    return sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog="examples:\n" + "\n".join(f"  moczarr-catalog {name} {e}".rstrip() for e in examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_storage_flags(p: argparse.ArgumentParser) -> None:
    """``--anon`` and ``--endpoint-url``, read by :func:`storage_options`."""
    p.add_argument("--anon", action="store_true", help="anonymous object-store access (a public bucket)")
    p.add_argument("--endpoint-url", default=None, metavar="URL", help="an S3-compatible endpoint (default: AWS's)")


def storage_options(args) -> dict | None:
    """The storage options of ``--anon`` and ``--endpoint-url`` (None: neither given).

    Raises :class:`~moczarr.errors.ArgumentError` when ``--endpoint-url`` is not an absolute URL.
    """
    opts: dict = {}
    if args.anon:
        opts["anon"] = True
    if args.endpoint_url:
        opts["client_kwargs"] = {"endpoint_url": check_url(args.endpoint_url, "--endpoint-url")}
    return opts or None


def add_lock_flag(p: argparse.ArgumentParser) -> None:
    """``--break-lock``, acted on by :func:`break_lock_first`."""
    p.add_argument(
        "--break-lock",
        action="store_true",
        help="take over the lock of an object-store catalog whose holder (named when a run refuses) is gone",
    )


def break_lock_first(args) -> None:
    """With ``--break-lock``, the lock of the catalog at ``args.out`` broken (a note names its holder)."""
    from ..living.lock import break_lock

    if args.break_lock and (holder := break_lock(args.out, storage_options(args))):
        print(f"note: broke the lock of {holder}", file=sys.stderr)


def progress() -> bool:
    """Progress bars only for a person watching stderr."""
    return sys.stderr.isatty()


def print_notes(notes, caught=()) -> None:
    """``notes``, then a line per reader warning among the recorded ``caught``, on stderr: each line once (a
    warning once per category and message, however many times the run met it)."""
    for line in dict.fromkeys([*notes, *warning_lines(caught)]):
        print(line, file=sys.stderr)


def uploaded_line(written) -> str:
    """What a build to object storage wrote: documents written, unchanged and deleted."""
    u = written.uploaded
    return f"wrote {written.stac}: {u.written} documents written, {u.unchanged} unchanged, {u.deleted} deleted"


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line, any ``user:password@`` (of a DSN, an endpoint, with or without its
    ``scheme://``, a password holding ``/`` too) shown as ``***@``; one already shown as ``user:***@`` (publish
    names the database's user) stays."""
    text = " ".join(str(exc).split()) or type(exc).__name__

    def hidden(m: re.Match) -> str:
        return m[0] if m[0].endswith(":***@") else f"{m[1] or ''}***@"

    return re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)?[^\s:/@\"']+:[^\s@\"']*@", hidden, text)
