"""An update of the catalog at ``OUT``: follow the stores a catalog was built from, re-reading only what changed.

The build record at ``OUT`` (:mod:`.record`) names the roots, whether they were
discovery prefixes, and the build's options. An update lists the roots again
(the discovery walk, or one LIST per given root), compares each root's state
with the recorded one, reads only the roots that are new or changed (or
whose state a listing cannot tell), takes the recorded facts of the others,
and rebuilds the catalog from those with the recorded options: the same
documents a full build of the stores as they are now would write, of which
it writes those of the products whose facts changed and those listing every
product, the rest kept as they are (:mod:`.reuse` says when). When no
root changed, appeared or went, that would be the catalog as it is, and
nothing is written at all (:func:`_nothing_to_write` says when).

What an update promises (:func:`refresh`, and the build that follows it):

- **Ids stay.** Every product keeps the Collection id and entry name the
  record gives it (a moraine pyramid its Item id), and every recorded folder
  is read as it was: a recorded bare store that the walk now finds inside a
  multi-product root (a second store landed beside it) stays a bare root, as
  do the new stores beside it; a recorded multi-product root that the walk
  finds as one bare product store (the others went) stays a multi-product
  root. New products get names that collide with none kept. Where a folder
  can no longer be read as before (a multi-product root that gained its own
  manifest, a bare store's folder that now holds product folders), the update
  is an error naming the folder and its old and new ids, and writes nothing,
  unless ``allow_new_ids``.
- **Missing is not deleted.** Below a discovery prefix, a recorded store that
  the walk (a listing that succeeded) no longer finds is removed; one whose
  folder the walk still sees and skips (e.g. a digit tree without a manifest:
  a store being rewritten) is kept with its recorded facts, and a note says
  so. A given root whose listing shows no store, or a prefix whose walk finds
  no store at all where the record has some, is an error naming it, unless
  ``remove_missing``. A root that cannot be listed (denied, timed out, a
  server error) is always an error: the storage layer's.

An unchanged bare store costs one LIST; a multi-product root one more per
product; a moraine pyramid two.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import moczarr
from moczarr.errors import ContentError, NotFoundError
from moczarr.metadata import (
    DEFAULT_CONCURRENCY,
    ProductSummary,
    StoreSummary,
    Writer,
    is_product_name,
    is_remote,
    join_location,
    normalize_location,
)

from ..model.entries import CatalogEntries, RootIdentity, catalog_entries
from ..roots.discover import HIVE, MORAINE, Discovery, Found, probe
from ..roots.scan import Read, Reading, Scanners, locate, read_all
from ..stac import public_storage_options
from .outstore import ROOT_DOCUMENTS
from .record import RECORD_NAME, BuildRecord, StoreRecord, changed, state_known, state_of


def load_record(out: str, storage_options: dict | None = None) -> BuildRecord:
    """The build record at ``out``; raises :class:`~moczarr.errors.NotFoundError` when there is none."""
    writer = Writer(out, storage_options)
    payload = writer.get(RECORD_NAME)
    if payload is None:
        raise NotFoundError(
            f"{writer.location}: no {RECORD_NAME}; build the catalog there first (moczarr-catalog build)"
        )
    base = None if is_remote(writer.location) else writer.location
    return BuildRecord.from_json(payload, f"{writer.location}/{RECORD_NAME}", base)


@dataclass
class Refresh:
    """What an update read, by product location (``root``, or ``root/product`` of a multi-product root)."""

    #: products read again (their state changed)
    read: list[str]
    #: products new since the record
    added: list[str]
    #: recorded products no longer there (a listing that succeeded showed them gone)
    removed: list[str]
    #: how many products kept their recorded facts
    unchanged: int


@dataclass
class Renamed:
    """A recorded folder read anew (``allow_new_ids``): its ids before and now."""

    folder: str
    old: list[str]
    new: list[str]


@dataclass
class ById:
    """An update's report by Collection and moraine Item id, as the written documents show them."""

    added: list[str]
    removed: list[str]
    changed: list[str]
    unchanged: list[str]
    #: the folders read anew, taking new ids (``allow_new_ids``)
    renamed: list[Renamed] = field(default_factory=list)


@dataclass
class Refreshed:
    """What an update found (:func:`refresh`): the reading to build from, or that nothing is to be written."""

    record: BuildRecord
    #: the roots to build from (the record's, less those dropped)
    roots: list[str]
    reading: Reading
    entries: CatalogEntries
    refresh: Refresh
    by_id: ById
    #: the storage options the stores are read with (the caller's, else the record's public ones)
    storage_options: dict | None
    #: the lines naming the recorded stores kept as recorded
    notes: list[str]
    #: True when a rebuild would write the catalog exactly as it is (:func:`_nothing_to_write`)
    as_is: bool


def refresh(
    out: str,
    record: BuildRecord,
    *,
    storage_options: dict | None = None,
    progress: bool = False,
    scheduler: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    remove_missing: bool = False,
    allow_new_ids: bool = False,
) -> Refreshed:
    """List the roots of the catalog at ``out`` (normalized; ``record``: its build record) again and read what
    changed (see the module docstring); nothing is written here.

    ``storage_options``: how to read the stores (default: the public options
    the record keeps, e.g. ``anon``/the endpoint). ``remove_missing``: drop a
    given root whose listing shows no store (and the stores of a prefix whose
    walk finds none of them) instead of failing. ``allow_new_ids``: read a
    folder that can no longer be read as recorded as it is now, taking its
    new ids (named in ``by_id.renamed``).

    Raises :class:`~moczarr.errors.NotFoundError` for a missing root (above),
    :class:`~moczarr.errors.ContentError` for a folder whose ids would change,
    the storage layer's errors for a listing that failed.
    """
    identities = record.identities()
    options = storage_options if storage_options is not None else record.options.get("storage_options")
    scanners = Scanners(options, concurrency)
    found, discoveries = locate(
        record.roots, scanners, discover_below=record.discover, exclude=[out], progress=progress, allow_empty=True
    )
    followed = follow(record, identities, found, discoveries, scanners, remove_missing=remove_missing)
    present = followed.found
    previous = record.by_root()
    live = [f for f in present if f.root not in followed.kept]
    partial = {f.root: names for f in live if (names := changed_products(f, previous.get(f.root))) is not None}
    stale = [f for f in live if f.root not in partial and changed(f, previous.get(f.root))]
    fresh = {r.found.root: r for r in read_all(stale, scanners, progress=progress, scheduler=scheduler)}
    for f in live:
        if f.root in partial and (partial[f.root] or _products_differ(f, previous[f.root])):
            fresh[f.root] = _merge_products(f, previous[f.root], partial[f.root], scanners)
    reads = [fresh[f.root] if f.root in fresh else previous[f.root].read(f) for f in present]
    reading = Reading(reads, discoveries)
    entries = catalog_entries(reading.summaries, reading.moraine, identities)
    renamed = _renamed(followed.conflicts, identities, entries)
    if renamed and not allow_new_ids:
        raise ContentError(
            "; ".join(
                f"{r['folder']}: can no longer be read as before ({r['why']}): its ids would change from "
                f"{', '.join(r['old']) or '-'} to {', '.join(r['new']) or '-'}"
                for r in renamed
            )
            + "; nothing written: pass --allow-new-ids to take the new ids"
        )
    counts = _accounting(present, previous, stale, partial, reads)
    by_id = report_by_id(identities, entries, counts)
    by_id.renamed = [Renamed(r["folder"], r["old"], r["new"]) for r in renamed]
    roots = [r for r in record.roots if normalize_location(r) not in followed.dropped]
    as_is = _nothing_to_write(out, record, present, counts, options)
    return Refreshed(record, roots, reading, entries, counts, by_id, options, followed.notes, as_is)


def report_after(refreshed: Refreshed, entries: CatalogEntries) -> ById:
    """:attr:`Refreshed.by_id` as the documents a build wrote from ``entries`` show them."""
    by_id = report_by_id(refreshed.record.identities(), entries, refreshed.refresh)
    by_id.renamed = refreshed.by_id.renamed
    return by_id


@dataclass
class Followed:
    """The roots an update reads (:func:`follow`): each recorded folder as it was read, what was kept or dropped."""

    #: the roots in catalog order (a kept root as a :class:`~..roots.discover.Found` without listings)
    found: list[Found]
    #: recorded roots the walk saw and skipped: kept with their recorded facts
    kept: set[str] = field(default_factory=set)
    #: given roots dropped (``remove_missing``), normalized
    dropped: set[str] = field(default_factory=set)
    #: ``{root: why}`` of recorded roots that can no longer be read as before
    conflicts: dict[str, str] = field(default_factory=dict)
    #: one line per root kept as recorded
    notes: list[str] = field(default_factory=list)


def follow(
    record: BuildRecord,
    identities: Mapping[str, RootIdentity],
    found: list[Found],
    discoveries: list[Discovery],
    scanners: Scanners,
    *,
    remove_missing: bool = False,
) -> Followed:
    """The roots an update reads: ``found`` (what :func:`~..roots.scan.locate` listed) with each recorded folder read
    as the record says it was read (see the module docstring).

    Raises :class:`~moczarr.errors.NotFoundError` naming a given root whose
    listing shows no store, or a prefix whose walk finds no store where the
    record has some (unless ``remove_missing``).
    """
    if not record.discover:
        return _follow_given(identities, found, remove_missing)
    recorded = {s.root: identities.get(normalize_location(s.root)) for s in record.stores}
    by_root = {f.root: f for f in found}
    followed = Followed([])
    skipped = {location: why for d in discoveries for location, why in d.skipped}
    for root, ident in recorded.items():
        names = list(ident.products) if ident is not None and ident.layout == "multi" else []
        why = skipped.get(root) or next(
            (skipped[join_location(root, n)] for n in names if join_location(root, n) in skipped), None
        )
        if why is not None:
            followed.kept.add(root)
            followed.notes.append(f"kept as recorded: {root}: the walk skipped it ({why}); its documents stay")
            for other in [r for r in by_root if r == root or r.startswith(_below(root))]:
                del by_root[other]
            kind = MORAINE if ident is not None and ident.layout == "pyramid" else HIVE
            by_root[root] = Found(root, kind, {})
    for root, ident in recorded.items():
        if ident is None or root in by_root:
            continue
        parent, _, name = root.rpartition("/")
        multi = by_root.get(parent)
        if ident.layout == "bare" and multi is not None and _layout(multi) == "multi" and name in multi.listings:
            del by_root[parent]  # a store landed beside a recorded bare one: each is a bare root
            for n in (n for n in multi.listings if n):
                by_root[join_location(parent, n)] = Found(join_location(parent, n), HIVE, {"": multi.listings[n]})
        elif ident.layout == "multi":
            inside = [
                r
                for r, f in by_root.items()
                if r.startswith(_below(root)) and _layout(f) == "bare" and r not in recorded
                if is_product_name(r[len(_below(root)) :])
            ]
            if inside:  # the products left of a recorded multi-product root: still read as one
                scanner, rel = scanners.at(root)
                again = probe(scanner, rel)
                if again is not None and _layout(again) == "multi":
                    for r in inside:
                        del by_root[r]
                    again.discovered = True
                    by_root[root] = again
    for root, ident in recorded.items():
        if ident is None or root in followed.kept:
            continue
        f = by_root.get(root)
        if f is not None and _layout(f) != ident.layout:
            followed.conflicts[root] = f"read as {_spelled(ident.layout)}, now found as {_spelled(_layout(f))}"
        elif f is None and any(r.startswith(_below(root)) for r in by_root):
            followed.conflicts[root] = f"read as {_spelled(ident.layout)}, now holding other store roots"
    _check_prefixes(record, discoveries, by_root, remove_missing)
    followed.found = _in_catalog_order(list(by_root.values()), [d.prefix for d in discoveries])
    return followed


def _follow_given(identities: Mapping[str, RootIdentity], found: list[Found], remove_missing: bool) -> Followed:
    """:func:`follow` for roots given as such: each probed where it is; one whose listing shows no store is missing."""
    absent = [f.root for f in found if not f.listings]
    if absent and not remove_missing:
        raise NotFoundError(
            "; ".join(f"{root}: not found (its listing shows no store)" for root in absent)
            + "; the previous documents stay; pass --remove-missing to drop "
            + ("it" if len(absent) == 1 else "them")
        )
    followed = Followed([f for f in found if f.listings], dropped={normalize_location(r) for r in absent})
    for f in followed.found:
        ident = identities.get(normalize_location(f.root))
        if ident is not None and _layout(f) != ident.layout:
            followed.conflicts[f.root] = f"read as {_spelled(ident.layout)}, now found as {_spelled(_layout(f))}"
    return followed


def _check_prefixes(record: BuildRecord, discoveries: list[Discovery], by_root: dict, remove_missing: bool) -> None:
    """A prefix whose walk finds no root at all while the record has stores below it is not taken as emptied."""
    for d in discoveries:
        below = [s.root for s in record.stores if s.root == d.prefix or s.root.startswith(_below(d.prefix))]
        if below and not remove_missing and not any(r == d.prefix or r.startswith(_below(d.prefix)) for r in by_root):
            what = d.nothing or f"{d.prefix}: the walk found no store root"
            raise NotFoundError(
                f"{what}; the record has {len(below)} store(s) below it: the previous documents stay; pass "
                "--remove-missing to drop them"
            )


def _below(root: str) -> str:
    return root.rstrip("/") + "/"


def _layout(found: Found | None) -> str | None:
    """How a root is read: ``bare``, ``multi``, ``pyramid``; None for no root or one without listings."""
    if found is None or (found.kind == HIVE and "" not in found.listings):
        return None
    return found.layout


def _spelled(layout: str | None) -> str:
    return {"bare": "a bare store", "multi": "a multi-product root", "pyramid": "a moraine pyramid"}.get(
        layout or "", "no store"
    )


def _in_catalog_order(found: list[Found], prefixes: list[str]) -> list[Found]:
    """Roots as a walk lists them: by the first prefix holding them, then by location."""

    def key(f: Found) -> tuple[int, str]:
        held = [i for i, p in enumerate(prefixes) if f.root == p or f.root.startswith(_below(p))]
        return (held[0] if held else len(prefixes), f.root)

    return sorted(found, key=key)


def _renamed(conflicts: Mapping[str, str], identities: Mapping[str, RootIdentity], entries: CatalogEntries):
    """Per folder that can no longer be read as before: ``{"folder", "why", "old", "new"}`` (ids)."""
    now = entries.identities()
    out = []
    for root, why in conflicts.items():
        old = identities[normalize_location(root)].ids
        where = normalize_location(root)
        new = [i for r, ident in now.items() if r == where or r.startswith(_below(where)) for i in ident.ids]
        out.append({"folder": root, "why": why, "old": old, "new": new})
    return out


def report_by_id(before: Mapping[str, RootIdentity], entries: CatalogEntries, refresh: Refresh) -> ById:
    """The Collection and moraine Item ids an update ``added``, ``removed``, ``changed`` and left ``unchanged``.

    ``before``: the record's identities; ``entries``: the catalog now;
    ``refresh``: :func:`_accounting`'s (an id whose product was read again
    is changed; so is an id that now names another product).
    """
    old, new = _ids(before), _ids(entries.identities())
    read = set(refresh.read)
    changed = [i for i in new if i in old and (old[i] != new[i] or new[i] in read)]
    return ById(
        added=[i for i in new if i not in old],
        removed=[i for i in old if i not in new],
        changed=changed,
        unchanged=[i for i in new if i in old and i not in set(changed)],
    )


def _ids(identities: Mapping[str, RootIdentity]) -> dict[str, str]:
    """``{id: product location}`` (the root, or ``root/name`` of a multi-product root's product, as counted)."""
    out: dict[str, str] = {}
    for root, ident in identities.items():
        for name, names in ident.products.items():
            out[names.id] = f"{root}/{name}" if ident.layout == "multi" else root
        if ident.item is not None:
            out[ident.item.id] = root
    return out


def _products_differ(found: Found, previous: StoreRecord) -> bool:
    """True when a multi-product root's products are not the recorded ones (one went)."""
    return state_of(found)[""]["products"] != [p["name"] for p in previous.facts["products"]]


def _nothing_to_write(out: str, record: BuildRecord, present: list[Found], refresh: Refresh, options) -> bool:
    """True when a rebuild would write the catalog at ``out`` exactly as it is.

    That is: no product read again, added or removed, the same roots in the
    same order, the storage options a document may carry equal to the
    recorded ones, and the record written by this moczarr release (another
    may write other documents from the same facts). A local catalog must
    still hold its documents; an object-store catalog's record is written
    after every document, so its presence says they are there.
    """
    if refresh.read or refresh.added or refresh.removed:
        return False
    if [f.root for f in present] != [s.root for s in record.stores] or record.written_by != moczarr.__version__:
        return False
    if public_storage_options(options) != record.options.get("storage_options"):
        return False
    return is_remote(out) or all(os.path.isfile(os.path.join(out, name)) for name in ROOT_DOCUMENTS)


def changed_products(found: Found, previous: StoreRecord | None) -> list[str] | None:
    """The products of a multi-product root to read again, when the rest can be taken from the record.

    None when the root is not such a case (not a multi-product root both now
    and before, or its state not fully known): then the root as a whole is
    compared. A product whose state is equal keeps its recorded summary.
    """
    if previous is None or found.kind != HIVE or found.layout != "multi" or previous.facts.get("layout") != "multi":
        return None
    state = state_of(found)
    if not state_known(state):
        return None
    recorded = {p["name"] for p in previous.facts["products"]}
    return [n for n in state[""]["products"] if n not in recorded or state.get(n) != previous.state.get(n)]


def _merge_products(found: Found, previous: StoreRecord, names: list[str], scanners: Scanners) -> Read:
    """The multi-product root with ``names`` read again and its other products as recorded (same order)."""
    scanner, rel = scanners.at(found.root)
    summaries = scanner.summarize_products(rel, names, workers=scanners.concurrency)
    fresh: dict[str, ProductSummary] = dict(zip(names, summaries, strict=True))
    kept = {p.name: p for p in StoreSummary.from_dict(previous.facts).products}
    products = [fresh[n] if n in fresh else kept[n] for n in state_of(found)[""]["products"]]
    return Read(found, summary=StoreSummary(scanner.url(rel), "multi", products))


def _accounting(present, previous, stale, partial, reads) -> Refresh:
    """What an update did, by product (``root`` or ``root/product`` of a multi-product root): read, added, removed."""
    before = {root: _products(rec.root, rec.facts) for root, rec in previous.items()}
    now = {r.found.root: _products(r.found.root, r.summary.to_dict() if r.summary else {}) for r in reads}
    read = [p for f in stale if f.root in previous for p in now[f.root]]
    read += [f"{root}/{n}" for root, names in partial.items() for n in names if f"{root}/{n}" in before[root]]
    added = [p for f in stale if f.root not in previous for p in now[f.root]]
    added += [f"{root}/{n}" for root, names in partial.items() for n in names if f"{root}/{n}" not in before[root]]
    everything_now = {p for products in now.values() for p in products}
    removed = [p for products in before.values() for p in products if p not in everything_now]
    return Refresh(read, added, removed, len(everything_now) - len(read) - len(added))


def _products(root: str, facts: dict) -> list[str]:
    """The products of a root as an update counts them: the root, or ``root/name`` per product of a multi root."""
    if facts.get("layout") == "multi":
        return [f"{root}/{p['name']}" for p in facts["products"]]
    return [root]
