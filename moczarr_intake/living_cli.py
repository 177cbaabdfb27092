"""The ``moczarr-catalog`` commands of a living catalog: ``update OUT`` and ``publish OUT --pgstac DSN``.

    moczarr-catalog build PREFIX... --discover --out OUT [--scheduler ADDRESS]
    moczarr-catalog update OUT [--scheduler ADDRESS] [--remove-missing] [--allow-new-ids]
    moczarr-catalog publish OUT --pgstac DSN

``update`` refreshes the catalog at ``OUT`` from the build record beside it
(:mod:`.refresh`): the summary line (counts) on stdout, then one line per
kind naming the ids added, removed, changed and unchanged; ``publish`` loads
it into a pgstac database (:mod:`.publish`).
"""

from __future__ import annotations

import sys
import warnings

from moczarr.errors import MoczarrWarning


def add_parsers(sub, build_parser):
    """Add ``--scheduler`` to ``build`` and the ``update`` and ``publish`` subcommands; returns the two parsers."""
    scheduler_help = "a dask.distributed scheduler address: the per-store reads run on that cluster"
    build_parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help=scheduler_help)
    u = sub.add_parser("update", help="refresh a built catalog: re-read only the stores that changed")
    u.add_argument("out", help="the catalog folder or URL a build wrote (its build-record.json)")
    u.add_argument("--scheduler", default=None, metavar="ADDRESS", help=scheduler_help)
    u.add_argument(
        "--remove-missing",
        action="store_true",
        help="drop a given root whose listing shows no store (default: an error, the catalog left as it is); "
        "a root that cannot be listed is always an error",
    )
    u.add_argument(
        "--allow-new-ids",
        action="store_true",
        help="read a folder that can no longer be read as recorded (e.g. a multi-product root that gained a "
        "manifest) as it is now, taking its new ids (default: an error naming the old and new ids)",
    )
    p = sub.add_parser("publish", help="upsert a built catalog into a pgstac database (and delete what is gone)")
    p.add_argument("out", help="the catalog folder or URL a build wrote (its pgstac/*.ndjson)")
    p.add_argument("--pgstac", required=True, metavar="DSN", help="the database, e.g. postgresql://user@host/db")
    return u, p


def run(args, build, storage_options: dict | None, *, progress: bool) -> int:
    """Run ``update`` or ``publish``; notes and warnings go to stderr, the result line to stdout."""
    from .living.refresh import update  # the reader loads only when a command runs

    if args.cmd == "publish":
        return run_publish(args, storage_options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        written = update(
            build,
            args.out,
            storage_options=storage_options,
            progress=progress,
            scheduler=args.scheduler,
            remove_missing=args.remove_missing,
            allow_new_ids=args.allow_new_ids,
        )
    for note in written["notes"]:
        print(note, file=sys.stderr)
    for line in dict.fromkeys(f"warning: {w.category.__name__}: {w.message}" for w in caught):
        print(line, file=sys.stderr)
    r = written["refresh"]
    line = (
        f"updated {args.out}: {len(r['read'])} changed, {len(r['added'])} added, {len(r['removed'])} removed, "
        f"{r['unchanged']} unchanged"
    )
    if written.get("written") is False:
        print(f"{line}; nothing to write: the catalog is as the stores are")
    else:
        print(line + (f"; {uploaded_line(written)}" if "uploaded" in written else ""))
    for text in id_lines(written["by_id"]):
        print(text)
    return 0


def id_lines(by_id: dict) -> list[str]:
    """The update's report by id, one line per kind that has any: ``added: a, b``, then removed, changed,
    unchanged, and ``renamed: FOLDER: old -> new`` per folder read anew (``--allow-new-ids``)."""
    kinds = ("added", "removed", "changed", "unchanged")
    lines = [f"{kind}: {', '.join(by_id[kind])}" for kind in kinds if by_id[kind]]
    return lines + [f"renamed: {r['folder']}: {_ids(r['old'])} -> {_ids(r['new'])}" for r in by_id["renamed"]]


def _ids(ids: list[str]) -> str:
    return ", ".join(ids) or "-"


def uploaded_line(written: dict) -> str:
    """What a build to object storage wrote: documents written, unchanged and deleted."""
    u = written["uploaded"]
    return (
        f"wrote {written['stac']}: {u['written']} documents written, {u['unchanged']} unchanged, {u['deleted']} deleted"
    )


def run_publish(args, storage_options: dict | None) -> int:
    """``publish OUT --pgstac DSN``: the report (:func:`publish_lines`) to stdout, warnings to stderr, none of
    them spelling the DSN's password."""
    from .living.refresh import load_record
    from .pgstac.publish import catalog_key_of, publish, redact  # pypgstac loads only when the command runs

    record = load_record(args.out, storage_options)
    key = catalog_key_of(args.out, record.options.get("catalog_url"))
    with warnings.catch_warnings(record=True) as caught:  # recorded under the filters in force, printed redacted
        report = publish(args.out, args.pgstac, storage_options=storage_options, catalog_key=key)
    for line in dict.fromkeys(f"warning: {w.category.__name__}: {w.message}" for w in caught):
        print(redact(line, args.pgstac), file=sys.stderr)
    for line in publish_lines(report):
        print(line)
    return 0


def publish_lines(report) -> list[str]:
    """What ``publish`` prints, a :class:`~.publish.Published` report: the summary line, then the ids.

    ``upserted collections: a, b``; ``upserted items: a 12, b 3`` (counts per
    Collection: every Item of the catalog is upserted on every run);
    ``deleted collections: c``; ``deleted items: a: x, y; c: z`` (every id: a
    deletion is what a portal's users notice). The deletion lines only when
    something was deleted.
    """
    lines = [
        f"published {len(report.collections)} Collections and {report.item_count} Items to pgstac; "
        f"deleted {report.items_deleted_count} Items and {len(report.collections_deleted)} Collections no longer built",
        f"upserted collections: {', '.join(report.collections)}",
        "upserted items: " + (", ".join(f"{c} {len(ids)}" for c, ids in report.items.items()) or "none"),
    ]
    if report.collections_deleted:
        lines.append(f"deleted collections: {', '.join(report.collections_deleted)}")
    if report.items_deleted:
        lines.append("deleted items: " + "; ".join(f"{c}: {', '.join(ids)}" for c, ids in report.items_deleted.items()))
    return lines
