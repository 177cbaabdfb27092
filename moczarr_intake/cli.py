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
import os
import re
import shutil
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from moczarr.errors import ContentError, MoczarrError, MoczarrWarning

from . import living_cli, verify_cli
from .access import withheld_options
from .arguments import check_license, check_out, check_stores_root, check_url
from .collector import fewer_collections

if TYPE_CHECKING:  # the command line loads the reader only when a command runs (``--help`` stays light)
    from moczarr.metadata import ProductSummary

    from .entries import CatalogEntries
    from .hrefs import HrefPolicy
    from .reading import Reading
    from .record import BuildRecord
    from .reuse import Reuse

#: what ``build`` writes into ``--out`` (each replaced whole when the build succeeds)
OUTPUTS = ["stac", "catalog.yaml", "catalog_v2.yaml"]


def _storage_options(args) -> dict | None:
    opts: dict = {}
    if getattr(args, "anon", False):
        opts["anon"] = True
    if getattr(args, "endpoint_url", None):
        opts["client_kwargs"] = {"endpoint_url": check_url(args.endpoint_url, "--endpoint-url")}
    return opts or None


def classify(root: str, storage_options: dict | None = None) -> str:
    """``"morton-hive"`` or ``"moraine"`` by content (anything else fails later, naming what is missing)."""
    from moczarr.moraine import is_moraine_pyramid

    if is_moraine_pyramid(root, storage_options=storage_options):
        return "moraine"
    return "morton-hive"


class DegradedBuildError(Exception):
    """A ``--strict`` build met a product it had to degrade."""


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
    lines = (f"warning: {w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, MoczarrWarning))
    return notes + list(dict.fromkeys(lines))


@fewer_collections()
def build(
    roots: list[str],
    out: Path,
    *,
    storage_options=None,
    thumbnails=False,
    progress=True,
    href_base: str | None = None,
    stores_root: str | None = None,
    catalog_url: str | None = None,
    license: str | None = None,
    strict: bool = False,
    discover: bool = False,
    scheduler: str | None = None,
    reading: Reading | None = None,
    out_location: str | None = None,
    previous: BuildRecord | None = None,
) -> dict:
    """Summarize every root, write STAC and both Intake YAML flavours under ``out``; returns what was written.

    Every argument is checked first (:mod:`moczarr_intake.arguments`), before
    anything is read: ``href_base`` and ``catalog_url`` absolute http(s), s3,
    gs or az URLs, ``license`` an SPDX license identifier or an http(s) URL,
    ``out`` a folder outside every store; each refusal is an
    :class:`~moczarr.errors.ArgumentError` naming the flag. Store addresses
    follow :class:`~moczarr_intake.hrefs.HrefPolicy`: with ``href_base``
    every local store is ``href_base`` joined with its path relative to
    ``stores_root`` (default the roots' common parent); without it, stores
    inside ``out`` are relative, URLs as given, others absolute paths of this
    machine (reported in ``"notes"``). ``catalog_url``: the URL ``out`` will be
    published at (absolute self links, RELATIVE_PUBLISHED). Of
    ``storage_options`` only where and how to reach the data is written
    (:mod:`moczarr_intake.access`): never a credential. The STAC API outputs
    are written only when no document would name a path of this machine.
    Everything is written to a temporary sibling of ``out`` and moved in at the
    end, so a failed build leaves ``out`` as it was.

    The result holds ``"notes"``: one line per product left out as damaged or
    degraded (naming why), per distinct reader warning, about machine-local
    hrefs, withheld storage options and STAC API outputs not written. With
    ``strict=True`` any degrade raises :class:`DegradedBuildError` before
    anything is written.

    ``previous``: the build record of the catalog at ``out`` that this build
    replaces (``update`` passes it; else the record at ``out``, if any, is
    read). Its products keep their ids and entry names (the record's
    identities, :func:`~moczarr_intake.entries.catalog_entries`). When the roots, their products and the
    options are those it records, the products whose facts are unchanged keep
    their documents and only the others are written, with the documents that
    list every product (:mod:`moczarr_intake.reuse`); the catalog is then the
    one a full build would write.
    """
    href_base = check_url(href_base, "--href-base")
    catalog_url = check_url(catalog_url, "--catalog-url")
    stores_root = check_stores_root(stores_root, href_base)
    licence, licence_url = check_license(license)
    from moczarr.metadata import is_remote  # the reader loads once the arguments are known to be good

    if is_remote(os.fspath(out)):
        from .outstore import build_to_url

        return build_to_url(
            build,
            roots,
            os.fspath(out),
            storage_options=storage_options,
            catalog_url=catalog_url,
            thumbnails=thumbnails,
            progress=progress,
            href_base=href_base,
            stores_root=stores_root,
            license=license,
            strict=strict,
            discover=discover,
            scheduler=scheduler,
            reading=reading,
            previous=previous,
        )
    # a discovered prefix may hold the catalog folder (discovery leaves it out); a store root may not
    out = check_out(out, [] if discover else [os.fspath(r) for r in roots])
    from .entries import catalog_entries
    from .hrefs import HrefPolicy

    named = previous if previous is not None else _record_at(out, out_location, storage_options)
    reading, caught = _read_stores(
        roots, out, storage_options, discover=discover, progress=progress, scheduler=scheduler, reading=reading
    )
    entries = catalog_entries(reading.summaries, reading.moraine, named.identities() if named else None)
    notes = build_notes(entries, reading, caught)
    if strict and notes:
        raise DegradedBuildError(f"--strict: {len(notes)} problem(s): " + "; ".join(notes))
    policy = HrefPolicy.for_roots(reading.locations, out, href_base, stores_root)
    for location in reading.locations:  # a store outside --stores-root is refused before anything is written
        policy.locate(location)
    record = BuildRecordInputs(
        reading,
        list(roots),
        discover,
        {
            "thumbnails": thumbnails,
            "href_base": href_base,
            "stores_root": stores_root,
            "catalog_url": catalog_url,
            "license": license,
            "strict": strict,
        },
        out_location,
        previous,
    )
    api = _write_catalogs(
        entries,
        out,
        policy,
        record,
        storage_options=storage_options,
        thumbnails=thumbnails,
        progress=progress,
        catalog_url=catalog_url,
        license=licence,
        license_url=licence_url,
    )
    notes += _output_notes(policy, storage_options, api.skipped) + api.notes
    return _written(out, reading, entries, notes, api)


def _record_at(out: Path, out_location: str | None, storage_options) -> BuildRecord | None:
    """The build record of the catalog this build replaces (None: there is none), read for the names it keeps.

    Raises :class:`~moczarr.errors.ArgumentError` naming the record and the field when it is damaged.
    """
    from moczarr.metadata import Writer

    from .record import RECORD_NAME, BuildRecord

    if out_location is None:
        path = out / RECORD_NAME
        return BuildRecord.from_json(path.read_bytes(), str(path), str(out)) if path.is_file() else None
    payload = Writer(out_location, storage_options).get(RECORD_NAME)
    return None if payload is None else BuildRecord.from_json(payload, f"{out_location}/{RECORD_NAME}")


def _read_stores(
    roots, out: Path, storage_options, *, discover: bool, progress: bool, scheduler, reading
) -> tuple[Reading, list]:
    """The facts of every root (:func:`~moczarr_intake.reading.read_roots`, unless ``reading`` has them) and the
    reader warnings met meanwhile; raises :class:`~moczarr.errors.ContentError` when nothing is left to catalog
    (every root found damaged, or no moraine pyramid after all), naming the prefixes walked and why."""
    from .reading import read_roots

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        if reading is None:
            reading = read_roots(
                [os.fspath(r) for r in roots],
                storage_options,
                discover_below=discover,
                exclude=[str(out)],
                progress=progress,
                scheduler=scheduler,
            )
    if not reading.summaries and not reading.moraine:
        why = [f"{where}: {reason}" for where, reason in reading.damaged] or ["no product found"]
        below = ", ".join(d.prefix for d in reading.discoveries)
        raise ContentError("nothing to catalog" + (f" below {below}" if below else "") + ": " + "; ".join(why))
    return reading, caught


def _written(out: Path, reading: Reading, entries: CatalogEntries, notes: list[str], api) -> dict:
    """What :func:`build` returns: the documents written under ``out``, the facts read, the notes."""
    return {
        "intake": out / "catalog.yaml",
        "intake_v2": out / "catalog_v2.yaml",
        "stac": out / "stac" / "catalog.json",
        "summaries": reading.summaries,
        "moraine": reading.moraine,
        "notes": notes,
        "entries": entries,
        "api_items": [out / "stac" / p.parent.name / p.name for p in api.items],
        "api_collections": [out / "stac" / p.parent.name / p.name for p in api.collections],
    }


class BuildRecordInputs(NamedTuple):
    """What the build record beside a catalog keeps (:mod:`.record`): the reading, the roots and the options; where
    the catalog goes (``out_location``: its URL when the build is staged for object storage) and the record of the
    catalog there (``previous``: an update's, whose unchanged products keep their documents)."""

    reading: Reading
    roots: list
    discover: bool
    options: dict
    out_location: str | None
    previous: BuildRecord | None = None


def _write_catalogs(
    entries: CatalogEntries,
    out: Path,
    policy: HrefPolicy,
    inputs: BuildRecordInputs,
    *,
    storage_options,
    catalog_url,
    **stac_kw,
):
    """Write STAC (and its API outputs), both YAML flavours and the record to a temporary sibling of ``out``, then
    move them in: the whole catalog, or only what changed when an update can keep the rest (:mod:`.reuse`).

    Returns the :class:`~moczarr_intake.stac.ApiOutputs` (paths in the temporary folder, or in ``out`` for an
    update that kept some), with the lines naming the Items they leave out in ``notes``. A local catalog is
    written holding its lock (:mod:`.lock`; one staged for object storage is locked at its URL); when the run
    before died writing it, nothing of it is kept.
    """
    import contextlib

    from .lock import catalog_lock

    local = inputs.out_location is None
    if local:
        out.parent.mkdir(parents=True, exist_ok=True)
    with catalog_lock(out, storage_options, "build") if local else contextlib.nullcontext() as lock:
        if lock is not None and lock.unsettled:
            inputs = inputs._replace(previous=None)
        return _write_chosen(entries, out, policy, inputs, storage_options, catalog_url, stac_kw)


def _write_chosen(entries, out, policy, inputs: BuildRecordInputs, storage_options, catalog_url, stac_kw):
    """:func:`_write_catalogs` under the lock: the partial write :func:`~.reuse.plan` allows, else the whole."""
    from .record import BuildRecord, recorded_options
    from .reuse import plan

    base = None if inputs.out_location is not None else str(out)
    record = BuildRecord.of(
        inputs.roots,
        inputs.discover,
        recorded_options(inputs.options, storage_options),
        inputs.reading,
        {},
        base,
        entries,
    )
    key = catalog_url or inputs.out_location or str(out)  # where it is published: what its pgstac Collections carry
    reuse = None
    if inputs.previous is not None:
        reuse = plan(entries, record, inputs.previous, inputs.out_location or str(out), key, storage_options)
    job = _CatalogJob(entries, out, policy, inputs, record, key, storage_options, catalog_url, stac_kw)
    if reuse is not None:
        try:
            return _write_staged(job, reuse)
        except _CannotReuse:
            pass
    return _write_staged(job, None)


class _CannotReuse(Exception):
    """An update's partial write met what only a full build writes right (the STAC API outputs are no longer
    written: a changed product names a path of this machine)."""


class _CatalogJob(NamedTuple):
    """What :func:`_write_staged` writes from: the entries, where, how hrefs are spelled, the record, the options."""

    entries: CatalogEntries
    out: Path
    policy: HrefPolicy
    inputs: BuildRecordInputs
    record: BuildRecord
    #: the catalog's published location, which its pgstac Collections carry (``moczarr:catalog``)
    key: str
    storage_options: dict | None
    catalog_url: str | None
    stac_kw: dict


def _write_staged(job: _CatalogJob, reuse: Reuse | None):
    """:func:`_write_catalogs` with ``reuse`` (None: write the whole catalog)."""
    import contextlib
    import shutil
    import tempfile

    from .catalog_yaml import v1_catalog, v2_catalog, write_yaml
    from .lock import held
    from .outstore import ROOT_DOCUMENTS
    from .publish import pgstac_documents
    from .record import RECORD_NAME, write_beside
    from .stac import start_api_outputs, write_stac
    from .staging import move_in

    entries, out, policy, inputs, record, key, storage_options, catalog_url, stac_kw = job
    keep = reuse.keep if reuse is not None else frozenset()
    hashes = inputs.out_location is not None  # the record then hashes every document, the API outputs' too
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    started: list = []  # (documents, pending API outputs), made before pystac writes the documents
    left_out: list = []  # warnings of the Items a STAC API cannot serve
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MoczarrWarning)  # the summaries' warnings are reported already

            def start_api(stac) -> None:
                documents = stac.documents  # made once, for the STAC API outputs and the pgstac ndjson
                children = [c.doc["id"] for c in stac.top.children]
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", MoczarrWarning)
                    started.append((documents, start_api_outputs(None, tmp / "stac", documents, children)))
                left_out.extend(caught)

            catalog = write_stac(
                summaries=list(entries.stores),
                moraine=[m.info for m in entries.moraine],
                out_dir=out / "stac",
                storage_options=storage_options,
                policy=policy,
                catalog_url=catalog_url + "/stac" if catalog_url else None,
                dest_dir=tmp / "stac",
                api_outputs=False,
                before_write=start_api,
                keep=keep,
                entries=entries,
                **stac_kw,
            )
        ((documents, pending),) = started
        hrefs = _stac_hrefs(catalog, entries, out, catalog_url)
        v1 = v1_catalog(entries, out, stac_hrefs=hrefs, storage_options=storage_options, policy=policy)
        write_yaml(v1, tmp / "catalog.yaml")
        write_yaml(v2_catalog(entries, out, storage_options=storage_options, policy=policy), tmp / "catalog_v2.yaml")
        ndjson = None
        if reuse is not None:
            if pending.wait().skipped:
                raise _CannotReuse
            # its warnings reach the caller as write_ndjson's do in a full build
            collections, items = pgstac_documents(None, key, documents)
            ndjson = reuse.pgstac_ndjson(catalog.collection_ids(), collections, items)
        elif hashes:  # the record hashes the API outputs too
            pending.wait()
        beside = write_beside(
            tmp,
            None,
            record,
            key,
            hashes=hashes,
            documents=documents,
            ndjson=ndjson,
            kept=reuse.kept_hashes() if reuse is not None and hashes else None,
        )
        api = pending.wait()
        api.notes = [f"note: {w.message}" for w in left_out if issubclass(w.category, MoczarrWarning)]
        lock = held(out)
        if lock is not None:  # the next run learns from it that this one died writing, should it
            lock.note(writing=True)
        last = [*ROOT_DOCUMENTS, RECORD_NAME]
        if hashes:  # the staging folder of an object-storage output, empty: :mod:`.outstore` places it
            out.mkdir(parents=True, exist_ok=True)
            for name in [*OUTPUTS, *beside]:
                if (tmp / name).exists():
                    os.replace(tmp / name, out / name)
        elif reuse is not None:  # a local catalog: the written products' documents replace theirs
            reuse.move_in(tmp, out, last)
        else:
            move_in(tmp, out, last=last, scope=[*OUTPUTS, *beside])
        if lock is not None:
            lock.written()
        if reuse is not None:
            api.items, api.collections = _api_files(out, record.documents if hashes else None)
    finally:
        for _, unfinished in started:  # nothing may still write into tmp as it is removed
            with contextlib.suppress(Exception):
                unfinished.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return api


def _api_files(out: Path, keys: dict[str, str] | None) -> tuple[list[Path], list[Path]]:
    """The STAC API files of the catalog at ``out`` (``keys``: its documents, when staged for object storage)."""
    from .stac import API_COLLECTIONS, API_ITEMS

    files: dict[str, list[Path]] = {}
    for folder in (API_ITEMS, API_COLLECTIONS):
        if keys is not None:
            names = [key.rsplit("/", 1)[1] for key in keys if key.startswith(f"stac/{folder}/")]
        else:
            names = os.listdir(out / "stac" / folder) if (out / "stac" / folder).is_dir() else []
        files[folder] = [out / "stac" / folder / name for name in sorted(names)]
    return files[API_ITEMS], files[API_COLLECTIONS]


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


def _stac_hrefs(catalog, entries: CatalogEntries, out: Path, catalog_url: str | None) -> dict[str, str]:
    """``{product root or pyramid path: the STAC document as a YAML entry spells it}``."""
    docs = catalog.self_hrefs()

    def spell(href: str) -> str:
        return href if catalog_url else "{{ CATALOG_DIR }}/" + os.path.relpath(href, out).replace(os.sep, "/")

    hrefs = {e.product.root: spell(docs[e.collection_id]) for e in entries.products if e.collection_id in docs}
    hrefs.update({m.info.path: spell(docs[m.item_id]) for m in entries.moraine if m.item_id in docs})
    return hrefs


def show(root: str, storage_options=None) -> str:
    """The roster, levels and extents of a store, as text (products left out as damaged are named last)."""
    return describe_root(root, storage_options)[0]


def describe_root(root: str, storage_options=None) -> tuple[str, list[str]]:
    """``(text, degraded lines)`` of :func:`show`: a damaged product of a multi-product root is a line, not the end."""
    from moczarr.metadata import summarize_store
    from moczarr.moraine import read_moraine_info

    if classify(root, storage_options) == "moraine":
        info = read_moraine_info(root, storage_options=storage_options)
        lines = [f"moraine {info.kind} pyramid {root}", f"  method {info.method}, {info.n_levels} levels"]
        lines += [f"  l{i}: {tuple(s)}" for i, s in enumerate(info.shapes)]
        return "\n".join(lines), []
    summary = summarize_store(root, storage_options, skip_damaged=True)
    lines = [f"{summary.layout} store {summary.root}: {len(summary.products)} product(s)"]
    for p in summary.products:
        lines += _product_lines(p)
    lines += [f"- {name}: damaged, not summarized" for name in summary.damaged]
    degraded = [
        f"degraded: {summary.root.rstrip('/')}/{name}: not summarized: {why}" for name, why in summary.damaged.items()
    ]
    return "\n".join(lines), degraded


def _product_lines(p: ProductSummary) -> list[str]:
    pyramid = p.pyramid_spec or "no pyramid"
    lines = [
        f"- {p.name}: {p.dataset.get('short_name')} v{p.dataset.get('version')} ({p.spec}, {pyramid})",
        f"    shards {p.n_shards} at order {p.shard_order}; bbox {_fmt_bbox(p.bbox)}; time {p.time_range or '-'}",
    ]
    if p.windowed:
        lines.append(f"    windows ({p.schedule}): {', '.join(p.windows)}")
    lines += [
        f"    o{lv.cell_order:<3} {lv.artifact:<9} ~{lv.resolution_km:8.2f} km  {', '.join(lv.variables)}"
        for lv in p.levels
    ]
    return lines


def _fmt_bbox(bbox) -> str:
    return "-" if not bbox else "[" + ", ".join(f"{v:.3f}" for v in bbox) + "]"


def demo(out: Path | None = None) -> str:
    """Write the sample store, build its catalogs, open them with intake, read one level, summarize.

    The sample is generated by :mod:`moczarr.testing` (so the demo works from an
    installed wheel); without ``out`` everything goes to a temporary folder that
    is removed afterwards.
    """
    import tempfile

    if out is None:
        with tempfile.TemporaryDirectory(prefix="moczarr-demo-") as tmp:
            return _demo(Path(tmp), kept=False)
    return _demo(Path(out), kept=True)


def _demo(out: Path, *, kept: bool) -> str:
    import intake

    from moczarr.testing import write_sample_store

    store = write_sample_store(out / "sample", overwrite=True)
    written = build([str(store)], out, progress=False)
    cat = intake.open_catalog(str(written["intake"]))
    names = list(cat)
    lines = [f"sample store {store} (written by moczarr.testing from synthetic points)"]
    lines.append(f"catalog {written['intake']} ({len(names)} entries: {', '.join(names)})")
    lines.append(f"STAC    {written['stac']}")
    level_entries = [n for n in names if not n.endswith("_tree")]
    entry = cat[level_entries[0]]
    orders = entry.describe()["user_parameters"][0]["allowed"]
    coarse = min(orders)
    ds = entry(order=coarse).read()
    lines.append(
        f"\n{level_entries[0]} at cell order {coarse} ({ds.attrs['zagg_level']['artifact']}): {ds.sizes['cells']} cells"
    )
    for name, var in ds.data_vars.items():
        lines.append(f"  {name:<10} {var.dtype!s:<8} min {float(var.min()):.6g}  max {float(var.max()):.6g}")
    native = entry.read()
    lines.append(
        f"{level_entries[0]} at native order {max(orders)}: {native.sizes['cells']} cells, "
        f"count total {int(native['count'].sum())}"
    )
    where = out if kept else Path("demo")
    lines.append("" if kept else "\n(the demo folder was temporary and is gone; keep one with --out demo)")
    lines.append("\nnext, try:")
    lines += [f"  {step}" for step in _next_steps(where, level_entries[0], coarse)]
    return "\n".join(lines)


def _next_steps(where: Path, entry: str, order: int) -> list[str]:
    """Three shell commands that work as printed in the current folder, whether or not the environment is active.

    The commands name this interpreter and its ``moczarr-catalog`` script by
    path (relative when they lie below the current folder), or by bare name
    when ``PATH`` finds exactly them.
    """
    import json
    import shlex

    python = _as_typed(sys.executable, "python")
    script = shutil.which("moczarr-catalog", path=os.path.dirname(sys.executable))
    cli = _as_typed(script, "moczarr-catalog") if script else f"{python} -m moczarr_intake.cli"
    code = (
        f"import intake; cat = intake.open_catalog({json.dumps(str(where / 'catalog.yaml'))}); "
        f"print(cat[{json.dumps(entry)}](order={order}).read())"
    )
    return [
        f"{cli} demo --out {shlex.quote(str(where))}",
        f"{cli} show {shlex.quote(str(where / 'sample'))}",
        f"{python} -c {shlex.quote(code)}",
    ]


def _as_typed(path: str, name: str) -> str:
    """How a shell here reaches the executable ``path``: ``name`` when PATH finds exactly it, else its path."""
    import shlex

    found = shutil.which(name)
    if found and os.path.abspath(found) == os.path.abspath(path):
        return name
    relative = os.path.relpath(path)
    if relative.startswith(os.pardir):
        return shlex.quote(os.path.abspath(path))
    return shlex.quote(relative if os.sep in relative else os.path.join(os.curdir, relative))


def main(argv: list[str] | None = None) -> int:
    """The ``moczarr-catalog`` entry point: every failure is one ``error:`` line on stderr, never a traceback.

    Exit status 0 on success, 1 when a ``--strict`` build met a degraded
    product, 2 for any other failure (a :class:`~moczarr.errors.MoczarrError`:
    bad input, damaged store, failing object store; or anything else, named by
    its type), 130 when interrupted; argparse's usage errors keep its own 2.
    The ``verify`` command's own statuses (0 clean, 1 errors found) pass through.
    """
    try:
        return run(argv)
    except DegradedBuildError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except MoczarrError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the promise is "never a traceback": name the failure instead
        print(f"error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    """``exc``'s message on one line, any ``user:password@`` (of a DSN, an endpoint, with or without its
    ``scheme://``, a password holding ``/`` too) shown as ``***@``; one already shown as ``user:***@`` (publish
    names the database's user) stays."""
    text = " ".join(str(exc).split()) or type(exc).__name__

    def hidden(m: re.Match) -> str:
        return m[0] if m[0].endswith(":***@") else f"{m[1] or ''}***@"

    return re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)?[^\s:/@\"']+:[^\s@\"']*@", hidden, text)


def parser() -> argparse.ArgumentParser:
    """The ``moczarr-catalog`` argument parser (building it imports nothing heavy)."""
    top = argparse.ArgumentParser(
        prog="moczarr-catalog", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = top.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write STAC and Intake catalogs for one or more stores")
    b.add_argument("roots", nargs="+")
    b.add_argument(
        "--out",
        required=True,
        help="the catalog folder (outside every store), or an object-store URL (s3://bucket/cat)",
    )
    b.add_argument("--discover", action="store_true", help="the roots are prefixes: catalog every store below them")
    b.add_argument("--thumbnails", action="store_true", help="attach quicklook PNGs of each level's data")
    b.add_argument(
        "--href-base",
        default=None,
        metavar="URL",
        help="where the stores will be published: hrefs become URL/<path relative to --stores-root>",
    )
    b.add_argument(
        "--stores-root",
        default=None,
        metavar="DIR",
        help="the folder --href-base stands for (default: the common parent of the roots)",
    )
    b.add_argument(
        "--catalog-url",
        default=None,
        metavar="URL",
        help="the URL --out will be published at (absolute self links on every Catalog and Collection)",
    )
    b.add_argument(
        "--license", default=None, help="license (an SPDX id or a URL) of products whose manifest records none"
    )
    b.add_argument(
        "--strict", action="store_true", help="fail (exit 1, nothing written) when any product had to be degraded"
    )
    s = sub.add_parser("show", help="print a store's roster, levels and extents")
    s.add_argument("root")
    d = sub.add_parser("demo", help="write the sample store, build and open its catalogs")
    d.add_argument(
        "--out", type=Path, default=None, help="keep the sample and its catalogs here (default: a temporary folder)"
    )
    verify_cli.add_parser(sub)
    u, pub = living_cli.add_parsers(sub, b)
    for p in (b, s, u, pub):
        p.add_argument("--anon", action="store_true", help="anonymous object-store access")
        p.add_argument("--endpoint-url", default=None, help="S3-compatible endpoint")
    for p in (b, u, pub):
        p.add_argument(
            "--break-lock",
            action="store_true",
            help="take over the lock of an object-store catalog whose holder (named when a run refuses) is gone",
        )
    return top


def run(argv: list[str] | None = None) -> int:
    """:func:`main` without the error wrapper (exceptions propagate)."""
    args = parser().parse_args(argv)
    commands = {
        "build": run_build,
        "show": run_show,
        "demo": run_demo,
        "verify": verify_cli.run,
        "update": run_living,
        "publish": run_living,
    }
    return commands[args.cmd](args)


def run_living(args) -> int:
    """``moczarr-catalog update`` and ``publish`` (:mod:`.living_cli`), each holding the catalog's lock."""
    with _command_lock(args):
        return living_cli.run(args, build, _storage_options(args), progress=sys.stderr.isatty())


def _command_lock(args):
    """The lock of the catalog at ``args.out`` for the command ``args.cmd`` (:mod:`.lock`), broken first when asked.

    ``publish`` refuses a catalog a killed run left unsettled.
    """
    from .lock import catalog_lock

    if args.break_lock:
        _break_lock(args)
    return catalog_lock(args.out, _storage_options(args), args.cmd, settled=args.cmd == "publish")


def _break_lock(args) -> None:
    from .lock import break_lock

    if holder := break_lock(args.out, _storage_options(args)):
        print(f"note: broke the lock of {holder}", file=sys.stderr)


def run_build(args) -> int:
    """``moczarr-catalog build``: notes on stderr, what was written on stdout."""
    if args.break_lock:  # the build takes the lock itself, once its arguments are known to be good
        _break_lock(args)
    written = build(
        args.roots,
        args.out,
        storage_options=_storage_options(args),
        thumbnails=args.thumbnails,
        href_base=args.href_base,
        stores_root=args.stores_root,
        catalog_url=args.catalog_url,
        license=args.license,
        strict=args.strict,
        progress=sys.stderr.isatty(),
        discover=args.discover,
        scheduler=args.scheduler,
    )
    for note in written["notes"]:
        print(note, file=sys.stderr)
    if "uploaded" in written:
        print(living_cli.uploaded_line(written))
        return 0
    parts = [str(written["intake"]), str(written["intake_v2"]), str(written["stac"])]
    if written["api_items"]:
        parts.append(f"{written['api_items'][0].parent}/ ({len(written['api_items'])} stac-geoparquet files)")
    if written["api_collections"]:
        parts.append(f"{written['api_collections'][0].parent}/ ({len(written['api_collections'])} Collections)")
    print("wrote " + ", ".join(parts))
    return 0


def run_show(args) -> int:
    """``moczarr-catalog show``: the store on stdout; degraded products and reader warnings on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        text, degraded = describe_root(args.root, _storage_options(args))
    print(text)
    for line in degraded:
        print(line, file=sys.stderr)
    for w in caught:
        if issubclass(w.category, MoczarrWarning):
            print(f"warning: {w.category.__name__}: {w.message}", file=sys.stderr)
    return 0


def run_demo(args) -> int:
    print(demo(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
