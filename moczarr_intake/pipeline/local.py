"""The build into a local folder: every root read, the products named and checked, the catalog written."""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from moczarr.errors import ArgumentError, ContentError, MoczarrWarning

from ..errors import DegradedBuildError, warning_lines
from ..model.access import withheld_options
from ..model.options import BuildOptions, check_out
from .results import BuildResult
from .write import BuildRecordInputs, write_catalog

if TYPE_CHECKING:
    from moczarr.metadata import ProductSummary

    from ..living.record import BuildRecord
    from ..model.entries import CatalogEntries
    from ..model.hrefs import HrefPolicy
    from ..roots.scan import Reading


def build_into(
    roots,
    out: Path,
    options: BuildOptions,
    *,
    progress: bool,
    reading: Reading | None = None,
    previous: BuildRecord | None = None,
    out_location: str | None = None,
) -> BuildResult:
    """The build into the local folder ``out`` (``out_location``: the URL it is staged for, if any)."""
    from ..model.entries import catalog_entries
    from ..model.hrefs import HrefPolicy

    # a discovered prefix may hold the catalog folder (discovery leaves it out); a store root may not
    out = check_out(out, [] if options.discover else [os.fspath(r) for r in roots])
    storage_options = options.storage_options
    named = previous if previous is not None else _record_at(out, out_location, storage_options)
    reading, caught = _read_stores(roots, out, options, progress=progress, reading=reading)
    _leave_out_unnameable(reading)
    entries = catalog_entries(reading.summaries, reading.moraine, named.identities() if named else None)
    notes = build_notes(entries, reading, caught)
    if options.strict and notes:
        raise DegradedBuildError(f"--strict: {len(notes)} problem(s): " + "; ".join(notes))
    policy = HrefPolicy.for_roots(reading.locations, out, options.href_base, options.stores_root)
    for location in reading.locations:  # a store outside --stores-root is refused before anything is written
        policy.locate(location)
    if options.tiles_url:
        check_tile_addresses(reading, policy, options.catalog_url)
    inputs = BuildRecordInputs(reading, list(roots), options, out_location, previous)
    api = write_catalog(entries, out, policy, inputs, progress=progress)
    notes += _output_notes(policy, storage_options, api.skipped) + api.notes
    return BuildResult(
        intake=out / "catalog.yaml",
        intake_v2=out / "catalog_v2.yaml",
        stac=out / "stac" / "catalog.json",
        notes=notes,
        summaries=reading.summaries,
        moraine=reading.moraine,
        entries=entries,
        api_items=[out / "stac" / p.parent.name / p.name for p in api.items],
        api_collections=[out / "stac" / p.parent.name / p.name for p in api.collections],
    )


def check_tile_addresses(reading: Reading, policy: HrefPolicy, catalog_url: str | None) -> None:
    """Refuse ``--tiles-url`` when a store's published address would be a path of this machine (or relative in a
    catalog published at no URL): the tile server, elsewhere, could not open it. Raises :class:`ArgumentError`."""
    from ..model.hrefs import INSIDE, MACHINE

    for summary in reading.summaries:
        kind, _ = policy.locate(summary.root)
        if kind == MACHINE or (kind == INSIDE and catalog_url is None):
            raise ArgumentError(
                f"--tiles-url: the store {summary.root} would be written as a path of this machine, which the "
                "tile server cannot open: give --href-base (the URL the stores are served at)"
            )


def degrade_reasons(product: ProductSummary) -> list[str]:
    """Why a product's catalog entry is less than the store would give (empty: not degraded)."""
    reasons = []
    if not product.coverage_usable:
        reasons.append(
            f"no usable root coverage.moc: footprint, bbox and shard count ({product.n_shards}) from the discovery walk"
            if product.shards
            else "no usable root coverage.moc and no leaf found: bbox, geometry and cell extent unknown"
        )
    elif not product.shards:
        reasons.append("the root coverage.moc is empty: no footprint")
    if not product.variables:
        reasons.append("no committed leaf schema could be read: no variables listed")
    if product.windowed and not product.windows:
        reasons.append("windowed product with no window found")
    return reasons


def build_notes(entries: CatalogEntries, reading: Reading, caught: list) -> list[str]:
    """One line per discovery walk, per root or product left out or degraded (naming why), per distinct warning."""
    notes = [d.summary() for d in reading.discoveries]
    notes += [f"degraded: {where}: left out of the catalog: {why}" for where, why in reading.damaged]
    notes += [
        f"degraded: {e.collection_id}: {reason}" for e in entries.products for reason in degrade_reasons(e.product)
    ]
    return notes + warning_lines([w for w in caught if not _said_already(w, entries)])


def _said_already(caught, entries: CatalogEntries) -> bool:
    """True for a reader's fallback warning about a product whose ``degraded:`` line names the same cause."""
    from moczarr.errors import CoverageFallbackWarning
    from moczarr.metadata import normalize_location

    if not issubclass(caught.category, CoverageFallbackWarning):
        return False
    where = str(caught.message).split(": no usable root coverage.moc", 1)
    if len(where) < 2:
        return False
    fallen = {normalize_location(e.product.root) for e in entries.products if not e.product.coverage_usable}
    return normalize_location(where[0]) in fallen


def _record_at(out: Path, out_location: str | None, storage_options) -> BuildRecord | None:
    """The build record of the catalog this build replaces (None: there is none), read for the names it keeps.

    Raises :class:`~moczarr.errors.ArgumentError` naming the record and the field when it is damaged.
    """
    from moczarr.metadata import Writer

    from ..living.record import RECORD_NAME, BuildRecord

    if out_location is None:
        path = out / RECORD_NAME
        return BuildRecord.from_json(path.read_bytes(), str(path), str(out)) if path.is_file() else None
    payload = Writer(out_location, storage_options).get(RECORD_NAME)
    return None if payload is None else BuildRecord.from_json(payload, f"{out_location}/{RECORD_NAME}")


def _read_stores(roots, out: Path, options: BuildOptions, *, progress: bool, reading) -> tuple[Reading, list]:
    """The facts of every root (:func:`~moczarr_intake.roots.scan.read_roots`, unless ``reading`` has them) and the
    reader warnings met meanwhile; raises :class:`~moczarr.errors.ContentError` when nothing is left to catalog
    (every root found damaged, or no moraine pyramid after all), naming the prefixes walked and why."""
    from ..roots.scan import read_roots

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        if reading is None:
            reading = read_roots(
                [os.fspath(r) for r in roots],
                options.storage_options,
                discover_below=options.discover,
                exclude=[str(out)],
                progress=progress,
                scheduler=options.scheduler,
            )
    if not reading.summaries and not reading.moraine:
        why = [f"{where}: {reason}" for where, reason in reading.damaged] or ["no product found"]
        below = ", ".join(d.prefix for d in reading.discoveries)
        raise ContentError("nothing to catalog" + (f" below {below}" if below else "") + ": " + "; ".join(why))
    return reading, caught


#: why a store, product or pyramid whose location is not valid UTF-8 is left out
NOT_UTF8 = "its path is not valid UTF-8, so no document can name it (rename the folder)"


def _leave_out_unnameable(reading: Reading) -> None:
    """Move every store, product or pyramid whose location is not valid UTF-8 to the damaged (one odd folder never
    fails the build: a ``degraded:`` line names it, its bytes shown escaped); raises when nothing is left."""
    for r in reading.reads:
        if r.moraine is not None and not _utf8(r.moraine.path):
            r.damaged.append((_shown(r.moraine.path), NOT_UTF8))
            r.moraine = None
        if r.summary is None:
            continue
        bad = [p for p in r.summary.products if not _utf8(p.root)]
        if bad or not _utf8(r.summary.root):
            kept = [p for p in r.summary.products if _utf8(p.root)] if _utf8(r.summary.root) else []
            r.damaged += [(_shown(p.root), NOT_UTF8) for p in r.summary.products if p not in kept]
            r.summary = dataclasses.replace(r.summary, products=kept) if kept else None
    if not reading.summaries and not reading.moraine:
        raise ContentError("nothing to catalog: " + "; ".join(f"{where}: {why}" for where, why in reading.damaged))


def _utf8(location: str) -> bool:
    try:
        location.encode("utf-8")
    except UnicodeEncodeError:  # a name the file system gave as bytes (surrogate-escaped)
        return False
    return True


def _shown(location: str) -> str:
    return location.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _output_notes(policy: HrefPolicy, storage_options, api_skipped: str | None) -> list[str]:
    """The lines about what the written documents say: machine paths, withheld options, STAC API outputs."""
    notes = []
    if policy.machine_paths:
        notes.append(
            f"warning: {len(policy.machine_paths)} store address(es) written as paths of this machine "
            f"(e.g. {policy.machine_paths[0]}): pass --href-base URL (and --stores-root DIR) for a publishable catalog"
        )
    withheld = withheld_options(storage_options)
    if withheld:
        notes.append(
            f"note: storage option(s) {', '.join(withheld)} not written into the catalog (only anonymous access, "
            "endpoint, region and requester-pays are): a reader passes its own credentials at open time"
        )
    if api_skipped:
        notes.append(f"note: {api_skipped}")
    return notes
