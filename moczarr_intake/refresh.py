"""``moczarr-catalog update OUT``: follow the stores a catalog was built from, re-reading only what changed.

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
nothing is written at all (:func:`_nothing_to_write` says when). Roots that
appeared below a discovery prefix are added; roots that are gone (no longer
found below a prefix, or a given root whose listing shows no store any more)
are dropped, and their documents deleted.

An unchanged bare store costs one LIST; a multi-product root one more per
product; a moraine pyramid two.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import moczarr
from moczarr.errors import NotFoundError
from moczarr.metadata import DEFAULT_CONCURRENCY, ProductSummary, StoreSummary, Writer, is_remote, normalize_location

from .discover import HIVE, Found
from .outstore import ROOT_DOCUMENTS
from .reading import Read, Reading, Scanners, locate, read_all
from .record import RECORD_NAME, BuildRecord, StoreRecord, changed, state_known, state_of
from .stac import public_storage_options

#: the build options a record keeps, as ``build()`` takes them
BUILD_OPTIONS = ("thumbnails", "href_base", "stores_root", "catalog_url", "license", "strict")
#: the key of each entry document (:data:`~.outstore.ROOT_DOCUMENTS`) in a build's result
RESULT_KEYS = {"stac/catalog.json": "stac", "catalog.yaml": "intake", "catalog_v2.yaml": "intake_v2"}


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


def update(
    build: Callable[..., dict],
    out: str,
    *,
    storage_options: dict | None = None,
    progress: bool = False,
    scheduler: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> dict:
    """Refresh the catalog at ``out`` (see the module docstring) with ``build`` (:func:`moczarr_intake.cli.build`).

    ``storage_options``: how to read the stores and write ``out`` (default: the
    public options the record keeps, e.g. ``anon``/the endpoint). Returns the
    build's result plus ``"refresh"``: the roots ``read`` again, ``added``,
    ``removed`` and the count ``unchanged``. When nothing changed (and the
    catalog was written by this release, with the same publishable storage
    options), nothing is written: the result then holds ``"written": False``,
    the catalog's entry documents (``intake``, ``intake_v2``, ``stac``), the
    discovery lines as ``notes``, ``refresh``, and for an object-store output
    ``uploaded`` (no document written).
    """
    out = normalize_location(out)
    record = load_record(out, storage_options)
    options = storage_options if storage_options is not None else record.options.get("storage_options")
    scanners = Scanners(options, concurrency)
    found, discoveries = locate(
        record.roots, scanners, discover_below=record.discover, exclude=[out], progress=progress
    )
    present = [f for f in found if f.listings]  # a given root whose listing shows no store is gone
    previous = record.by_root()
    partial = {f.root: names for f in present if (names := changed_products(f, previous.get(f.root))) is not None}
    stale = [f for f in present if f.root not in partial and changed(f, previous.get(f.root))]
    fresh = {r.found.root: r for r in read_all(stale, scanners, progress=progress, scheduler=scheduler)}
    for f in present:
        if partial.get(f.root):
            fresh[f.root] = _merge_products(f, previous[f.root], partial[f.root], scanners)
    reads = [fresh[f.root] if f.root in fresh else previous[f.root].read(f) for f in present]
    refresh = _accounting(present, previous, stale, partial, reads)
    if _nothing_to_write(out, record, present, refresh, options):
        return _as_recorded(out, record, discoveries, refresh)
    kwargs = {k: record.options.get(k) for k in BUILD_OPTIONS if k in record.options}
    written = build(
        record.roots,
        out if is_remote(out) else Path(out),
        storage_options=options,
        reading=Reading(reads, discoveries),
        discover=record.discover,
        progress=progress,
        previous=record,
        **kwargs,
    )
    return {**written, "refresh": refresh}


def _nothing_to_write(out: str, record: BuildRecord, present: list[Found], refresh: dict, options) -> bool:
    """True when a rebuild would write the catalog at ``out`` exactly as it is.

    That is: no product read again, added or removed, the same roots in the
    same order, the storage options a document may carry equal to the
    recorded ones, and the record written by this moczarr release (another
    may write other documents from the same facts). A local catalog must
    still hold its documents; an object-store catalog's record is written
    after every document, so its presence says they are there.
    """
    if refresh["read"] or refresh["added"] or refresh["removed"]:
        return False
    if [f.root for f in present] != [s.root for s in record.stores] or record.written_by != moczarr.__version__:
        return False
    if public_storage_options(options) != record.options.get("storage_options"):
        return False
    return is_remote(out) or all(os.path.isfile(os.path.join(out, name)) for name in ROOT_DOCUMENTS)


def _as_recorded(out: str, record: BuildRecord, discoveries, refresh: dict) -> dict:
    """What :func:`update` returns when it has nothing to write: where the catalog is, what was compared."""
    written: dict = {
        "written": False,
        "notes": [d.summary() for d in discoveries],
        "refresh": refresh,
    }
    if is_remote(out):
        base = out.rstrip("/")
        written |= {RESULT_KEYS[path]: f"{base}/{path}" for path in ROOT_DOCUMENTS}
        written["uploaded"] = {"written": 0, "unchanged": len(record.documents), "deleted": 0}
    else:
        written |= {RESULT_KEYS[path]: Path(out) / path for path in ROOT_DOCUMENTS}
    return written


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


def _accounting(present, previous, stale, partial, reads) -> dict:
    """What an update did, by product (``root`` or ``root/product`` of a multi-product root): read, added, removed."""
    before = {root: _products(rec.root, rec.facts) for root, rec in previous.items()}
    now = {r.found.root: _products(r.found.root, r.summary.to_dict() if r.summary else {}) for r in reads}
    read = [p for f in stale if f.root in previous for p in now[f.root]]
    read += [f"{root}/{n}" for root, names in partial.items() for n in names if f"{root}/{n}" in before[root]]
    added = [p for f in stale if f.root not in previous for p in now[f.root]]
    added += [f"{root}/{n}" for root, names in partial.items() for n in names if f"{root}/{n}" not in before[root]]
    everything_now = {p for products in now.values() for p in products}
    removed = [p for products in before.values() for p in products if p not in everything_now]
    return {"read": read, "added": added, "removed": removed, "unchanged": len(everything_now) - len(read) - len(added)}


def _products(root: str, facts: dict) -> list[str]:
    """The products of a root as an update counts them: the root, or ``root/name`` per product of a multi root."""
    if facts.get("layout") == "multi":
        return [f"{root}/{p['name']}" for p in facts["products"]]
    return [root]
