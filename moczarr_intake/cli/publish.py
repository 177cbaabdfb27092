"""``moczarr-catalog publish OUT --pgstac DSN``: :func:`moczarr_intake.publish`; the report (:func:`publish_lines`)
on stdout, warnings on stderr, none of them spelling the DSN's password."""

from __future__ import annotations

import warnings

from .common import add_lock_flag, add_storage_flags, break_lock_first, command_parser, print_notes, storage_options


def add_parser(sub):
    p = command_parser(
        sub,
        "publish",
        "upsert a built catalog into a pgstac database (and delete what is gone)",
        "Load the Collections and Items a build wrote (OUT/pgstac/*.ndjson) into the pgstac database at\n"
        "--pgstac, and delete those this catalog published before and no longer builds. Needs the pgstac\n"
        "extra: pip install 'moczarr[pgstac]'. Give the password through $PGPASSWORD or ~/.pgpass: no\n"
        "message spells it.",
        [
            "out --pgstac postgresql://stac@db.example.org/stac",
            "s3://bucket/catalog --pgstac postgresql://stac@db/stac",
        ],
    )
    p.add_argument("out", help="the catalog folder or URL a build wrote (its pgstac/*.ndjson)")
    p.add_argument("--pgstac", required=True, metavar="DSN", help="the database, e.g. postgresql://user@host/db")
    add_storage_flags(p)
    add_lock_flag(p)
    return p


def run(args) -> int:
    from ..pipeline import publish  # pypgstac loads only when the command runs

    break_lock_first(args)
    with warnings.catch_warnings(record=True) as caught:  # recorded under the filters in force
        report = publish(args.out, args.pgstac, storage_options=storage_options(args))
    print_notes([], caught)
    for line in publish_lines(report):
        print(line)
    return 0


def publish_lines(report) -> list[str]:
    """What ``publish`` prints, a :class:`~moczarr_intake.pgstac.publish.PublishResult`: the summary line, then the ids.

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
