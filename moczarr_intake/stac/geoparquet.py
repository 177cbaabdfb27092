"""Write what a STAC API server loads (``rustac serve``): the Items as stac-geoparquet, the Collections as JSON.

A served Item no longer sits beside the documents it was written with: the
API gives it its own ``self``, ``root``, ``parent`` and ``collection`` links.
So each row is made location-free: the catalog's structural links are
dropped (the server adds its own), and every relative href (asset hrefs, other
links, the ``moczarr:open`` hint's ``store_root``, an Item's
``moczarr:store_root``) is resolved against the Item's own document. A served
Item then opens with :func:`moczarr_intake.open_stac` wherever the API runs.

stac-geoparquet stores the rows of one file in one Arrow schema, so a key
present in one Item and absent in another (a variable in ``cube:variables``,
an optional hint argument) would read back as ``null``, and a served Item
would list variables it does not have. :func:`write_api_items` therefore
writes one file per Collection, and splits a Collection's Items further where
their keys differ (levels whose variables differ): no row of a file has a key
another lacks. An Item without geometry (a store with no usable coverage) or
outside any Collection has no row: the format needs a geometry, and a STAC
API searches by it and serves Items of Collections.

The Collections are written the same way, one location-free JSON document
each (:func:`write_api_collections`), so the API serves the catalog's own
Collections (titles, license, providers, extents, datacube fields, their
``open_store`` hints) rather than ones it derives from the Items.

:func:`write_api_outputs` writes both, only when no document would hold a
path of the building machine (a published catalog: stores under
``--href-base`` URLs, thumbnails under ``--catalog-url``).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Collection, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pystac
import rustac

from moczarr.errors import ArgumentError, MoczarrWarning, StorageError
from moczarr.metadata import is_remote, join_location, warn

from ..model.hrefs import local_path

#: links that tie an Item or Collection to the static catalog's files; a STAC API adds its own
STRUCTURAL_RELS = {"self", "root", "parent", "collection", "child", "item"}
#: the folder, beside the static catalog, of the Collections a STAC API server loads
API_COLLECTIONS = "api-collections"
#: the folder, beside the static catalog, of the stac-geoparquet Item files a STAC API server loads
API_ITEMS = "api-items"
#: the stac-geoparquet files' compression: snappy costs rustac about half the CPU of its default zstd on these
#: small files (2.9 against 5.1 ms a file), which are then about as large (every parquet reader reads it)
PARQUET_COMPRESSION = "snappy"
#: stac-geoparquet files written at once (rustac converts each file's rows holding the GIL: more buys nothing)
PARQUET_WRITERS = 4


@dataclass
class ApiDocuments:
    """The location-free documents (:func:`location_free`) of a catalog's Collections and Items, in catalog order.

    Computed once by :func:`api_documents` and shared by every output made of
    them (the STAC API outputs, the pgstac ndjson); each reader copies what it changes.
    """

    collections: list[dict]
    items: list[dict]


def api_documents(catalog: pystac.Catalog, skip: Collection[str] = ()) -> ApiDocuments:
    """The location-free documents of every Collection and Item of ``catalog`` (recursively).

    ``skip``: ids of Collections (with their Items) and of Items outside any
    Collection to leave out (those an update keeps from the previous build).
    """

    def skipped(item: pystac.Item) -> bool:
        return (item.collection_id if item.collection_id is not None else item.id) in skip

    return ApiDocuments(
        [location_free(c) for c in catalog.get_all_collections() if c.id not in skip],
        [location_free(i) for i in catalog.get_items(recursive=True) if not skipped(i)],
    )


@dataclass
class ApiOutputs:
    """What :func:`write_api_outputs` wrote: the Item files and Collection documents, or why nothing."""

    items: list[Path] = field(default_factory=list)
    collections: list[Path] = field(default_factory=list)
    skipped: str | None = None  # one line: why nothing was written (a machine path would be)
    notes: list[str] = field(default_factory=list)  # what the caller has to say about them (the CLI's lines)


def write_geoparquet(catalog_or_items, path: str | os.PathLike) -> Path | None:
    """Write the Items of a catalog (recursively), or the given Items, to ``path`` as stac-geoparquet.

    ``catalog_or_items``: a :class:`pystac.Catalog` (or Collection), or an
    iterable of :class:`pystac.Item` or Item dicts. Relative hrefs are
    resolved against each Item's self href (an Item read from or saved to
    disk has one); structural links are dropped. Items without geometry are
    left out with a :class:`moczarr.errors.MoczarrWarning` naming them. Returns
    ``path`` as a Path, or None when no Item has a geometry (no file is left
    at ``path`` then). Raises ValueError when there is no Item at all, when
    an element is not an Item, or when an Item with relative hrefs has no
    self href to resolve them against.
    """
    if isinstance(catalog_or_items, pystac.Catalog):
        items: Iterable = catalog_or_items.get_items(recursive=True)
    else:
        items = catalog_or_items
    docs = [location_free(item) for item in items]
    if not docs:
        raise ArgumentError("write_geoparquet: no Items to write")
    rows = _located_rows(docs, f"stac-geoparquet {os.fspath(path)}")
    path = Path(path)
    if not rows:
        path.unlink(missing_ok=True)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write_parquet(rows, path)


def write_api_collections(
    catalog: pystac.Catalog | None, folder: str | os.PathLike, documents: ApiDocuments | None = None
) -> list[Path]:
    """Write every Collection of ``catalog`` (recursively) as a location-free ``{folder}/{id}.json``.

    The documents a STAC API server loads beside the Items
    (``rustac serve items.parquet folder/*.json``). ``folder`` is emptied of
    earlier ``*.json`` first. ``documents``: the catalog's
    :func:`api_documents`, when the caller has them. Raises
    :class:`moczarr.errors.ArgumentError` when two Collections share an id (an
    API serves one per id).
    """
    folder = Path(folder)
    if documents is not None:
        collections = documents.collections
    else:
        assert catalog is not None, "write_api_collections: give a catalog or its documents"
        collections = [location_free(c) for c in catalog.get_all_collections()]
    ids = [c["id"] for c in collections]
    if len(set(ids)) < len(ids):
        raise ArgumentError(
            f"write_api_collections: Collection ids are not unique: {sorted({i for i in ids if ids.count(i) > 1})}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    written = []
    for collection in collections:
        path = folder / f"{collection['id']}.json"
        path.write_text(json.dumps(collection, indent=1) + "\n")
        written.append(path)
    return written


def location_free(item: pystac.Item | pystac.Collection | dict) -> dict:
    """An Item's (or Collection's) document with structural links dropped and relative hrefs made absolute (a copy)."""
    if isinstance(item, (pystac.Item, pystac.Collection)):
        base = item.get_self_href()
        doc = item.to_dict(include_self_link=False, transform_hrefs=False)
    elif isinstance(item, dict) and item.get("type") in ("Feature", "Collection"):
        doc = copy.deepcopy(item)
        base = next((link.get("href") for link in doc.get("links", []) if link.get("rel") == "self"), None)
    else:
        raise ArgumentError(f"write_geoparquet: {type(item).__name__} {getattr(item, 'id', '')!r} is not a STAC Item")

    def absolute(href):
        if not isinstance(href, str) or is_remote(href) or os.path.isabs(href):
            return href
        if base is None:
            raise ArgumentError(
                f"Item {doc.get('id')!r}: relative href {href!r} and no self href to resolve it against"
            )
        # a relative href is percent-encoded (hrefs.quote_path): kept so under a URL, decoded into a local path
        return join_location(base, "..", href if is_remote(base) else local_path(href))

    doc["links"] = [
        {**link, "href": absolute(link["href"])}
        for link in doc.get("links", [])
        if link.get("rel") not in STRUCTURAL_RELS
    ]
    fields = doc.get("properties", {}) if doc.get("type") == "Feature" else doc  # a Collection's own fields
    if "moczarr:store_root" in fields:
        fields["moczarr:store_root"] = absolute(fields["moczarr:store_root"])
    for asset in doc.get("assets", {}).values():
        asset["href"] = absolute(asset["href"])
        hint = asset.get("moczarr:open")
        if isinstance(hint, dict) and isinstance(hint.get("kwargs"), dict) and "store_root" in hint["kwargs"]:
            hint["kwargs"]["store_root"] = absolute(hint["kwargs"]["store_root"])
    return doc


def write_api_items(
    catalog: pystac.Catalog | None, folder: str | os.PathLike, documents: ApiDocuments | None = None
) -> list[Path]:
    """Write the Items of ``catalog`` as stac-geoparquet files in ``folder``, one per Collection (and key shape).

    ``{folder}/{collection}.parquet``; a Collection whose Items do not all
    have the same keys (levels with different variables) is split into
    ``{collection}.1.parquet``, ``{collection}.2.parquet``, ... in the order of
    its Items, so no row carries another's keys as ``null``. Items without
    geometry or outside any Collection are left out with a
    :class:`moczarr.errors.MoczarrWarning` naming them. ``folder`` is emptied
    of earlier ``*.parquet`` first. ``documents``: the catalog's
    :func:`api_documents`, when the caller has them. Returns the files written.
    """
    files, writing = _start_api_items(catalog, folder, documents)
    writing.wait()
    return files


def _start_api_items(
    catalog: pystac.Catalog | None, folder: str | os.PathLike, documents: ApiDocuments | None
) -> tuple[list[Path], _ParquetWriting]:
    """:func:`write_api_items` up to the files' bytes: the warnings said, the files being written in the background."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    if documents is not None:
        docs = documents.items
    else:
        assert catalog is not None, "write_api_items: give a catalog or its documents"
        docs = [location_free(i) for i in catalog.get_items(recursive=True)]
    loose = [doc["id"] for doc in docs if not doc.get("collection")]
    if loose:
        warn(f"STAC API Items: Items outside any Collection left out: {loose}", MoczarrWarning)
    files: list[tuple[list[dict], Path]] = []
    for collection, groups in _groups_by_collection([d for d in docs if d.get("collection")]):
        for n, rows in enumerate(groups, start=1):
            name = f"{collection}.parquet" if len(groups) == 1 else f"{collection}.{n}.parquet"
            located = _located_rows(rows, "STAC API Items")
            if located:
                files.append((located, folder / name))
    return [path for _, path in files], _ParquetWriting(files)


def _groups_by_collection(docs: list[dict]) -> Iterator[tuple[str, list[list[dict]]]]:
    """``(collection id, [rows of one key shape, ...])`` in the order the Items come."""
    by_collection: dict[str, dict[frozenset, list[dict]]] = {}
    for doc in docs:
        shapes = by_collection.setdefault(doc["collection"], {})
        shapes.setdefault(frozenset(_key_paths(doc)), []).append(doc)
    for collection, shapes in by_collection.items():
        yield collection, list(shapes.values())


def _key_paths(value, prefix: str = "") -> Iterator[str]:
    """Every key path of a JSON document's objects (``links`` aside: the server writes its own)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if prefix == "" and key == "links":
                continue
            yield f"{prefix}/{key}"
            yield from _key_paths(inner, f"{prefix}/{key}")


def _located_rows(docs: list[dict], where: str) -> list[dict]:
    """The documents with a geometry; the others are left out with a warning naming them (and ``where``)."""
    rows = [doc for doc in docs if doc.get("geometry")]
    if len(rows) < len(docs):
        left_out = [doc.get("id") for doc in docs if not doc.get("geometry")]
        warn(f"{where}: Items without geometry left out: {left_out}", MoczarrWarning)
    return rows


def _write_parquet(rows: list[dict], path: Path) -> Path:
    """``rows`` as the stac-geoparquet file ``path``, into its folder only while that folder exists.

    rustac creates missing folders; a writer still running after its build
    failed and removed the folder would otherwise make it again, outside
    the catalog. Raises :class:`~moczarr.errors.StorageError` then.
    """
    if not path.parent.is_dir():
        raise StorageError(f"stac-geoparquet {path.name}: its folder {path.parent} is gone; nothing written")
    rustac.write_sync(os.fspath(path), rows, format="parquet", parquet_compression=PARQUET_COMPRESSION)
    return path


class _ParquetWriting:
    """Stac-geoparquet files being written, :data:`PARQUET_WRITERS` at once; :meth:`wait` until all are written.

    A file of a few rows costs rustac a fixed 3-4 ms, most of it outside the
    GIL, so a few threads over ``write_sync`` overlap it (they take less CPU
    than rustac's async ``write`` on an event loop, which bridges every file
    through asyncio), while the caller writes the rest of the catalog.
    """

    def __init__(self, files: list[tuple[list[dict], Path]]):
        workers = max(1, min(PARQUET_WRITERS, len(files)))
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="moczarr-parquet")
        self._futures = [self._pool.submit(_write_parquet, rows, path) for rows, path in files]

    def wait(self) -> None:
        """Return once every file is written; raises the first failure (in the files' order), in the caller's thread.

        After a failure the files not yet started are not written.
        """
        try:
            for future in self._futures:
                future.result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


def machine_paths(catalog: pystac.Catalog | None, documents: ApiDocuments | None = None) -> list[str]:
    """Hrefs of the location-free Item and Collection documents that are paths of this machine, not URLs.

    ``documents``: the catalog's :func:`api_documents`, when the caller has them (``catalog`` may then be None).
    """
    if documents is None:
        assert catalog is not None, "machine_paths: give a catalog or its documents"
        documents = api_documents(catalog)
    return document_machine_paths(documents.collections + documents.items)


def document_machine_paths(docs: Iterable[dict]) -> list[str]:
    """Hrefs of location-free documents (as :func:`location_free` makes them) that are paths of this machine.

    A local path, absolute or not, or a ``file:`` URL: anything not a URL of a
    remote protocol. Ordered as first named, each once.
    """
    found: dict[str, None] = {}  # ordered and unique, in time linear in the hrefs
    for doc in docs:
        for href in _hrefs(doc):
            if href not in found and not is_remote(href):
                found[href] = None
    return list(found)


def _hrefs(doc: dict) -> Iterator[str]:
    """Every location a location-free document names: links, assets, open hints, ``moczarr:store_root``."""
    yield from (link["href"] for link in doc.get("links", []))
    fields = doc.get("properties", {}) if doc.get("type") == "Feature" else doc
    if isinstance(fields.get("moczarr:store_root"), str):
        yield fields["moczarr:store_root"]
    for asset in doc.get("assets", {}).values():
        yield asset["href"]
        kwargs = (asset.get("moczarr:open") or {}).get("kwargs") or {}
        yield from (kwargs[k] for k in ("store_root", "path") if isinstance(kwargs.get(k), str))


def check_api_names(catalog: pystac.Catalog | Iterable[str]) -> None:
    """Raise :class:`moczarr.errors.ArgumentError` when a child of ``catalog`` (or one of these child ids) would
    share a STAC API folder's name."""
    ids = {child.id for child in catalog.get_children()} if isinstance(catalog, pystac.Catalog) else set(catalog)
    clash = ids & {API_ITEMS, API_COLLECTIONS}
    if clash:
        raise ArgumentError(
            f"a store or product named {sorted(clash)[0]!r} would share the folder of the STAC API outputs"
        )


class PendingApiOutputs:
    """STAC API outputs being written (:func:`start_api_outputs`); :meth:`wait` returns them once on disk."""

    def __init__(self, outputs: ApiOutputs, writing: _ParquetWriting | None = None):
        self._outputs, self._writing = outputs, writing

    def wait(self) -> ApiOutputs:
        """The :class:`ApiOutputs`, every file written; raises what writing a file raised."""
        if self._writing is not None:
            self._writing.wait()
            self._writing = None
        return self._outputs


def write_api_outputs(
    catalog: pystac.Catalog, folder: str | os.PathLike, documents: ApiDocuments | None = None
) -> ApiOutputs:
    """The Items (:func:`write_api_items`) and Collections (:func:`write_api_collections`) in ``folder``.

    Written into ``{folder}/api-items/`` and ``{folder}/api-collections/``
    only when no document names a path of this machine (:func:`machine_paths`):
    a STAC API serves them from elsewhere, where such a path means nothing.
    Otherwise nothing is written (earlier outputs in ``folder`` are removed)
    and :attr:`ApiOutputs.skipped` says why in one line. Raises
    :class:`moczarr.errors.ArgumentError` when a store or product would share
    one of the two folders' names. ``documents``: the catalog's
    :func:`api_documents`, when the caller has them.
    """
    return start_api_outputs(catalog, folder, documents).wait()


def start_api_outputs(
    catalog: pystac.Catalog | None,
    folder: str | os.PathLike,
    documents: ApiDocuments | None = None,
    child_ids: Iterable[str] = (),
) -> PendingApiOutputs:
    """:func:`write_api_outputs`, returning once the Collections are written and the Items are being written.

    The stac-geoparquet files are written by background threads (most of
    their cost is outside the GIL), so the caller can write the rest of a
    catalog meanwhile; the catalog must not change until
    :meth:`PendingApiOutputs.wait`. Warnings and argument errors come from this
    call, in the caller's thread; when it raises, no file is being written.
    A file is written only into a folder that still exists (a failed build's
    removed staging folder is never made again). ``catalog`` may be None
    when ``documents`` are given, with the ids of the root's children in ``child_ids``.
    """
    folder = Path(folder)
    check_api_names(catalog if catalog is not None else child_ids)
    if documents is None:
        assert catalog is not None, "start_api_outputs: give a catalog or its documents"
        documents = api_documents(catalog)
    local = machine_paths(catalog, documents)
    if local:
        for name in (API_ITEMS, API_COLLECTIONS):
            shutil.rmtree(folder / name, ignore_errors=True)
        return PendingApiOutputs(
            ApiOutputs(
                skipped=f"STAC API outputs ({API_ITEMS}/, {API_COLLECTIONS}/) not written: they would hold "
                f"{len(local)} path(s) of this machine (e.g. {local[0]}); publish the stores with --href-base URL "
                "(and the catalog with --catalog-url URL when it has thumbnails)"
            )
        )
    # the Collections first: a failure writing them must leave no Item file being written in the background
    collections = write_api_collections(catalog, folder / API_COLLECTIONS, documents)
    items, writing = _start_api_items(catalog, folder / API_ITEMS, documents)
    return PendingApiOutputs(ApiOutputs(items=items, collections=collections), writing)
