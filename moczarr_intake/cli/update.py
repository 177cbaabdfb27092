"""``moczarr-catalog update OUT``: :func:`moczarr_intake.update`; the summary line (counts) on stdout, then one
line per kind naming the ids added, removed, changed and unchanged; notes and warnings on stderr."""

from __future__ import annotations

import warnings

from moczarr.errors import MoczarrWarning

from ..model.options import SCHEDULER_HELP
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
        "update",
        "refresh a built catalog: re-read only the stores that changed",
        "List the roots a build recorded (OUT/build-record.json) again, re-read only the stores that\n"
        "changed, and write the catalog again with the build's own options; ids and hrefs of unchanged\n"
        "products stay. Prints a summary line, then the ids added, removed, changed and unchanged.",
        ["out", "s3://bucket/catalog --endpoint-url https://s3.example.org"],
    )
    p.add_argument("out", metavar="OUT", help="the catalog folder or URL a build wrote (its build-record.json)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)
    p.add_argument(
        "--remove-missing",
        action="store_true",
        help="drop a given root whose listing shows no store (default: an error, the catalog left as it is); "
        "a root that cannot be listed is always an error",
    )
    p.add_argument(
        "--allow-new-ids",
        action="store_true",
        help="read a folder that can no longer be read as recorded (e.g. a multi-product root that gained a "
        "manifest) as it is now, taking its new ids (default: an error naming the old and new ids)",
    )
    add_storage_flags(p)
    add_lock_flag(p)
    return p


def run(args) -> int:
    from ..pipeline import update  # the reader loads only when a command runs

    break_lock_first(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        written = update(
            args.out,
            storage_options=storage_options(args),
            progress=progress(),
            scheduler=args.scheduler,
            remove_missing=args.remove_missing,
            allow_new_ids=args.allow_new_ids,
        )
    print_notes(written.notes, caught)
    r = written.refresh
    line = (
        f"updated {args.out}: {len(r.read)} changed, {len(r.added)} added, {len(r.removed)} removed, "
        f"{r.unchanged} unchanged"
    )
    if not written.written:
        print(f"{line}; nothing to write: the catalog is as the stores are")
    else:
        print(line + (f"; {uploaded_line(written)}" if written.uploaded is not None else ""))
    for text in id_lines(written.by_id):
        print(text)
    return 0


def id_lines(by_id) -> list[str]:
    """The update's report by id (:class:`~moczarr_intake.living.refresh.ById`), one line per kind that has any:
    ``added: a, b``, then removed, changed, unchanged, and ``renamed: FOLDER: old -> new`` per folder read anew
    (``--allow-new-ids``)."""
    kinds = {"added": by_id.added, "removed": by_id.removed, "changed": by_id.changed, "unchanged": by_id.unchanged}
    lines = [f"{kind}: {', '.join(ids)}" for kind, ids in kinds.items() if ids]
    return lines + [f"renamed: {r.folder}: {_ids(r.old)} -> {_ids(r.new)}" for r in by_id.renamed]


def _ids(ids: list[str]) -> str:
    return ", ".join(ids) or "-"
