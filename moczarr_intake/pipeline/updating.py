"""An update: the catalog's build record read under its lock, the roots followed (:mod:`~moczarr_intake.living
.refresh`), and the build run again from what was read, unless nothing changed."""

from __future__ import annotations

from pathlib import Path

from moczarr.metadata import DEFAULT_CONCURRENCY, is_remote, normalize_location

from ..living.lock import catalog_lock
from ..living.outstore import ROOT_DOCUMENTS, Uploaded
from ..living.refresh import Refreshed, load_record, refresh, report_after
from ..model.options import BuildOptions
from .building import run_build
from .results import UpdateResult

#: the :class:`~.results.BuildResult` field of each entry document (:data:`~..living.outstore.ROOT_DOCUMENTS`)
RESULT_FIELDS = {"stac/catalog.json": "stac", "catalog.yaml": "intake", "catalog_v2.yaml": "intake_v2"}


def update(
    out: str,
    *,
    storage_options: dict | None = None,
    progress: bool = False,
    scheduler: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    remove_missing: bool = False,
    allow_new_ids: bool = False,
) -> UpdateResult:
    """Refresh the catalog at ``out`` (a folder or URL a build wrote): re-read only the stores that changed and
    build again with the options its build record keeps (:meth:`BuildOptions.from_record`).

    Holds the catalog's lock (:func:`~moczarr_intake.living.lock.catalog_lock`)
    from before the record is read until the catalog is written.
    ``storage_options``: how to read the stores and write ``out`` (default: the
    public options the record keeps, e.g. ``anon``/the endpoint);
    ``scheduler``: a dask.distributed address the reads run on.
    ``remove_missing``: drop a given root whose listing shows no store (and
    the stores of a prefix whose walk finds none of them) instead of failing.
    ``allow_new_ids``: read a folder that can no longer be read as recorded as
    it is now, taking its new ids (named in ``by_id.renamed``). What an
    update promises (ids stay; missing is not deleted) is said in
    :mod:`moczarr_intake.living.refresh`.

    Returns an :class:`~.results.UpdateResult`: the build's result,
    ``refresh`` (the products ``read`` again, ``added``, ``removed``, the
    count ``unchanged``, by location) and ``by_id`` (the Collection and
    moraine Item ids ``added``, ``removed``, ``changed``, ``unchanged`` and
    ``renamed``, as the written documents show them); ``notes`` also name the
    recorded stores kept as recorded. When nothing changed (and the catalog
    was written by this release, with the same publishable storage options),
    nothing is written: ``written`` is False, the entry documents are where
    the catalog has them, ``notes`` are the discovery lines, and an
    object-store output's ``uploaded`` counts no document written.

    Raises :class:`~moczarr.errors.NotFoundError` when ``out`` has no build
    record or for a missing root, :class:`~moczarr.errors.ContentError` for a
    folder whose ids would change, the lock's errors when another run holds
    it, the storage layer's for a listing that failed; nothing is written then.
    """
    out = normalize_location(out)
    with catalog_lock(out, storage_options, "update"):
        record = load_record(out, storage_options)
        found = refresh(
            out,
            record,
            storage_options=storage_options,
            progress=progress,
            scheduler=scheduler,
            concurrency=concurrency,
            remove_missing=remove_missing,
            allow_new_ids=allow_new_ids,
        )
        if found.as_is:
            return _as_recorded(out, found)
        options = BuildOptions.from_record(
            record.options, record.discover, storage_options=found.storage_options, scheduler=scheduler
        ).checked()
        where = out if is_remote(out) else Path(out)
        built = run_build(found.roots, where, options, progress=progress, reading=found.reading, previous=record)
    entries = built.entries if built.entries is not None else found.entries
    return UpdateResult(
        **{**vars(built), "notes": found.notes + built.notes},
        refresh=found.refresh,
        by_id=report_after(found, entries),
    )


def _as_recorded(out: str, found: Refreshed) -> UpdateResult:
    """What :func:`update` returns when it has nothing to write: where the catalog is, what was compared."""
    where: dict = {}
    uploaded = None
    if is_remote(out):
        base = out.rstrip("/")
        where = {RESULT_FIELDS[path]: f"{base}/{path}" for path in ROOT_DOCUMENTS}
        uploaded = Uploaded(0, len(found.record.documents), 0)
    else:
        where = {RESULT_FIELDS[path]: Path(out) / path for path in ROOT_DOCUMENTS}
    return UpdateResult(
        **where,
        notes=found.notes + [d.summary() for d in found.reading.discoveries],
        summaries=found.reading.summaries,
        moraine=found.reading.moraine,
        entries=found.entries,
        uploaded=uploaded,
        written=False,
        refresh=found.refresh,
        by_id=found.by_id,
    )
