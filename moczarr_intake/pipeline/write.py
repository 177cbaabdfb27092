"""A catalog's documents written: STAC (and its API outputs), both Intake YAMLs, the pgstac ndjson and the build
record, staged in a temporary sibling of the output and switched in as one new generation
(:mod:`~moczarr_intake.living.staging`), the whole catalog or only what changed when an update can keep the rest
(:mod:`~moczarr_intake.living.reuse`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from moczarr.errors import MoczarrWarning
from moczarr.metadata import is_remote

from ..model.options import BuildOptions, check_license

if TYPE_CHECKING:
    from ..living.record import BuildRecord
    from ..living.reuse import Reuse
    from ..model.entries import CatalogEntries
    from ..model.hrefs import HrefPolicy
    from ..roots.scan import Reading
    from ..stac import ApiOutputs, StacCatalog
    from ..stac.geoparquet import ApiDocuments, PendingApiOutputs

#: what a build writes into its output (each replaced whole when the build succeeds)
OUTPUTS = ["stac", "catalog.yaml", "catalog_v2.yaml"]


class BuildRecordInputs(NamedTuple):
    """What the build record beside a catalog keeps (:mod:`~moczarr_intake.living.record`): the reading, the roots
    and the options; where the catalog goes (``out_location``: its URL when the build is staged for object
    storage) and the record of the catalog there (``previous``: an update's, whose unchanged products keep their
    documents)."""

    reading: Reading
    roots: list
    options: BuildOptions
    out_location: str | None
    previous: BuildRecord | None = None


class CatalogJob(NamedTuple):
    """What :func:`write_catalog` writes from: the entries, where, how hrefs are spelled, the record, the options."""

    entries: CatalogEntries
    out: Path
    policy: HrefPolicy
    inputs: BuildRecordInputs
    record: BuildRecord
    #: the catalog's published location, which its pgstac Collections carry (``moczarr:catalog``)
    key: str
    progress: bool


def write_catalog(entries: CatalogEntries, out: Path, policy: HrefPolicy, inputs: BuildRecordInputs, *, progress):
    """Write STAC (and its API outputs), both YAML flavours and the record to a temporary sibling of ``out``, then
    switch ``out`` to the new generation (:func:`~moczarr_intake.living.staging.switch`): the whole catalog, or
    only what changed when an update can keep the rest (:mod:`~moczarr_intake.living.reuse`).

    Returns the :class:`~moczarr_intake.stac.ApiOutputs` (paths in the temporary folder, or in ``out`` for an
    update that kept some), with the lines naming the Items they leave out in ``notes``. A local catalog is
    written holding its lock (:mod:`~moczarr_intake.living.lock`; one staged for object storage is locked at its
    URL); when the run before died writing it, nothing of it is kept.
    """
    from ..living.lock import catalog_lock

    local = inputs.out_location is None
    if local:
        out.parent.mkdir(parents=True, exist_ok=True)
    storage_options = inputs.options.storage_options
    with catalog_lock(out, storage_options, "build") if local else contextlib.nullcontext() as lock:
        if lock is not None and lock.unsettled:
            inputs = inputs._replace(previous=None)
        return _write_chosen(entries, out, policy, inputs, progress)


def _write_chosen(entries, out: Path, policy, inputs: BuildRecordInputs, progress: bool):
    """:func:`write_catalog` under the lock: the partial write :func:`~..living.reuse.plan` allows, else the whole."""
    from ..living.record import BuildRecord, recorded_options
    from ..living.reuse import plan

    options = inputs.options
    base = None if inputs.out_location is not None else str(out)
    recorded = recorded_options(options.recorded(), options.storage_options)
    record = BuildRecord.of(inputs.roots, options.discover, recorded, inputs.reading, {}, base, entries)
    # where it is published: what its pgstac Collections carry
    key = options.catalog_url or inputs.out_location or str(out)
    job = CatalogJob(entries, out, policy, inputs, record, key, progress)
    if inputs.previous is not None:
        reuse = plan(entries, record, inputs.previous, inputs.out_location or str(out), key, options.storage_options)
        if reuse is not None and (api := _write_staged(job, reuse)) is not None:
            return api
    api = _write_staged(job, None)
    assert api is not None  # a whole catalog is always written
    return api


class _Staged(NamedTuple):
    """The STAC catalog staged in ``tmp``: the tree, its API documents and the API outputs still being written."""

    catalog: StacCatalog
    documents: ApiDocuments
    pending: PendingApiOutputs
    #: warnings of the Items a STAC API cannot serve
    left_out: list


def _write_staged(job: CatalogJob, reuse: Reuse | None) -> ApiOutputs | None:
    """:func:`write_catalog` with ``reuse`` (None: write the whole catalog); None when the partial write cannot be
    done right (the STAC API outputs are no longer written: a changed product names a path of this machine)."""
    from ..living.staging import staging_folder

    out = job.out
    tmp = staging_folder(out)
    started: list = []  # pending API outputs, made before the documents are written
    try:
        staged = _stage_stac(job, reuse, tmp, started)
        _stage_yaml(job, staged.catalog, tmp)
        ndjson = None
        if reuse is not None:
            if staged.pending.wait().skipped:
                return None
            ndjson = _kept_ndjson(job, reuse, staged)
        elif job.inputs.out_location is not None:  # the record hashes the API outputs too
            staged.pending.wait()
        beside = _stage_beside(job, reuse, staged, ndjson, tmp)
        api = staged.pending.wait()
        api.notes = [f"note: {w.message}" for w in staged.left_out if issubclass(w.category, MoczarrWarning)]
        api.notes += [f"note: {line}" for line in staged.catalog.notes]
        if (note := _place(job, reuse, tmp, beside)) is not None:
            api.notes.append(note)
        if reuse is not None:
            hashed = job.inputs.out_location is not None
            api.items, api.collections = _api_files(out, job.record.documents if hashed else None)
    finally:
        for unfinished in started:  # nothing may still write into tmp as it is removed
            with contextlib.suppress(Exception):
                unfinished.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return api


def _stage_stac(job: CatalogJob, reuse: Reuse | None, tmp: Path, started: list) -> _Staged:
    """The STAC documents written into ``tmp``, the API outputs started from the finished tree."""
    from ..stac import start_api_outputs, write_stac

    options = job.inputs.options
    keep = reuse.keep if reuse is not None else frozenset()
    licence, licence_url = check_license(options.license)
    made: list = []  # (documents, pending API outputs)
    left_out: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MoczarrWarning)  # the summaries' warnings are reported already

        def start_api(stac) -> None:
            documents = stac.documents  # made once, for the STAC API outputs and the pgstac ndjson
            children = [c.doc["id"] for c in stac.top.children]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", MoczarrWarning)
                pending = start_api_outputs(None, tmp / "stac", documents, children)
                started.append(pending)
                made.append((documents, pending))
            left_out.extend(caught)

        catalog = write_stac(
            summaries=list(job.entries.stores),
            moraine=[m.info for m in job.entries.moraine],
            out_dir=job.out / "stac",
            storage_options=options.storage_options,
            policy=job.policy,
            catalog_url=options.catalog_url + "/stac" if options.catalog_url else None,
            dest_dir=tmp / "stac",
            api_outputs=False,
            before_write=start_api,
            keep=keep,
            entries=job.entries,
            thumbnails=options.thumbnails,
            progress=job.progress,
            license=licence,
            license_url=licence_url,
            tiles_url=options.tiles_url,
        )
    ((documents, pending),) = made
    return _Staged(catalog, documents, pending, left_out)


def _stage_yaml(job: CatalogJob, catalog, tmp: Path) -> None:
    """Both Intake YAML flavours written into ``tmp``, the version 1 entries linking their STAC documents."""
    from ..intake_yaml.catalog import v1_catalog, v2_catalog, write_yaml

    options = job.inputs.options
    hrefs = _stac_hrefs(catalog, job.entries, job.out, options.catalog_url)
    storage_options, policy = options.storage_options, job.policy
    v1 = v1_catalog(job.entries, job.out, stac_hrefs=hrefs, storage_options=storage_options, policy=policy)
    write_yaml(v1, tmp / "catalog.yaml")
    v2 = v2_catalog(job.entries, job.out, storage_options=storage_options, policy=policy)
    write_yaml(v2, tmp / "catalog_v2.yaml")


def _kept_ndjson(job: CatalogJob, reuse: Reuse, staged: _Staged) -> tuple[str, str]:
    """The pgstac ndjson of an update that keeps the lines of its unchanged products."""
    from ..pgstac.publish import pgstac_documents

    # its warnings reach the caller as write_ndjson's do in a full build
    collections, items = pgstac_documents(None, job.key, staged.documents)
    return reuse.pgstac_ndjson(staged.catalog.collection_ids(), collections, items)


def _stage_beside(job: CatalogJob, reuse: Reuse | None, staged: _Staged, ndjson, tmp: Path) -> list[str]:
    """The pgstac ndjson and the build record written into ``tmp``; returns their names."""
    from ..living.record import write_beside

    hashes = job.inputs.out_location is not None  # the record then hashes every document, the API outputs' too
    return write_beside(
        tmp,
        None,
        job.record,
        job.key,
        hashes=hashes,
        documents=staged.documents,
        ndjson=ndjson,
        kept=reuse.kept_hashes() if reuse is not None and hashes else None,
    )


def _place(job: CatalogJob, reuse: Reuse | None, tmp: Path, beside: list[str]) -> str | None:
    """The staged catalog put in place: whole, only what changed (``reuse``), or into its empty staging folder.

    A local catalog switches to the new generation in one step
    (:func:`~..living.staging.switch`), unless a store of it sits inside
    ``out``; returns None, or the ``note:`` line saying it was placed file
    by file instead (the lock then says this run is writing, so that the
    next run rewrites the whole catalog should this one die).
    """
    from ..living.lock import held
    from ..living.outstore import ROOT_DOCUMENTS
    from ..living.record import RECORD_NAME
    from ..living.staging import switch

    out = job.out
    lock = held(out)

    def writing() -> None:  # the next run learns from it that this one died writing, should it
        if lock is not None:
            lock.note(writing=True)

    last = [*ROOT_DOCUMENTS, RECORD_NAME]
    note = None
    if job.inputs.out_location is not None:  # the staging folder of an object-storage output: the upload places it
        writing()
        out.mkdir(parents=True, exist_ok=True)
        for name in [*OUTPUTS, *beside]:
            if (tmp / name).exists():
                os.replace(tmp / name, out / name)
    elif reuse is not None:  # a local catalog: the written products' documents replace theirs
        note = reuse.place(tmp, out, last, before_in_place=writing, in_place=_store_inside(job.entries, out))
    else:
        scope = [*OUTPUTS, *beside]
        note = switch(
            tmp, out, last=last, scope=scope, before_in_place=writing, in_place=_store_inside(job.entries, out)
        )
    if lock is not None:
        lock.written()
    return note


def _store_inside(entries: CatalogEntries, out: Path) -> str | None:
    """``the store ROOT sits inside it`` when a local store of the catalog is inside ``out``, else None."""
    real = Path(os.path.realpath(out))
    for root in [s.root for s in entries.stores] + [m.info.path for m in entries.moraine]:
        if not is_remote(root) and Path(os.path.realpath(root)).is_relative_to(real):
            return f"the store {root} sits inside it"
    return None


def _api_files(out: Path, keys: dict[str, str] | None) -> tuple[list[Path], list[Path]]:
    """The STAC API files of the catalog at ``out`` (``keys``: its documents, when staged for object storage)."""
    from ..stac import API_COLLECTIONS, API_ITEMS

    files: dict[str, list[Path]] = {}
    for folder in (API_ITEMS, API_COLLECTIONS):
        if keys is not None:
            names = [key.rsplit("/", 1)[1] for key in keys if key.startswith(f"stac/{folder}/")]
        else:
            names = os.listdir(out / "stac" / folder) if (out / "stac" / folder).is_dir() else []
        files[folder] = [out / "stac" / folder / name for name in sorted(names)]
    return files[API_ITEMS], files[API_COLLECTIONS]


def _stac_hrefs(catalog, entries: CatalogEntries, out: Path, catalog_url: str | None) -> dict[str, str]:
    """``{product root or pyramid path: the STAC document as a YAML entry spells it}``."""
    docs = catalog.self_hrefs()

    def spell(href: str) -> str:
        return href if catalog_url else "{{ CATALOG_DIR }}/" + os.path.relpath(href, out).replace(os.sep, "/")

    hrefs = {e.product.root: spell(docs[e.collection_id]) for e in entries.products if e.collection_id in docs}
    hrefs.update({m.info.path: spell(docs[m.item_id]) for m in entries.moraine if m.item_id in docs})
    return hrefs
