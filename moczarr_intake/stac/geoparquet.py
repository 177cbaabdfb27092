"""Write what a STAC API server loads (``rustac serve``): the Items as stac-geoparquet, the Collections as JSON.

A served Item no longer sits beside the documents it was written with: the
API gives it its own ``self``, ``root``, ``parent`` and ``collection`` links.
So each row is made location-free: the catalog's structural links are
dropped (the server adds its own), and every relative href (asset hrefs, other
links, the ``moczarr:open`` hint's ``store_root``, an Item's
``moczarr:store_root``) is resolved against the Item's own document. A served
Item then opens with :func:`moczarr_intake.open_stac` wherever the API runs.

stac-geoparquet stores Items in one Arrow schema, so a key absent from one Item
but present in another (a variable in ``cube:variables``, an optional hint
argument) reads back as ``null``: readers treat null and absent alike. An
Item without geometry (a store with no usable root coverage) has no row: the
format needs a geometry, and a STAC API searches by it.

The Collections are written the same way, one location-free JSON document
each (:func:`write_api_collections`), so the API serves the catalog's own
Collections (titles, license, providers, extents, datacube fields, their
``open_store`` hints) rather than ones it derives from the Items.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable
from pathlib import Path

import pystac
import rustac

from moczarr.errors import ArgumentError, MoczarrWarning
from moczarr.metadata import is_remote, join_location, warn

#: links that tie an Item or Collection to the static catalog's files; a STAC API adds its own
STRUCTURAL_RELS = {"self", "root", "parent", "collection", "child", "item"}
#: the folder, beside ``items.parquet``, of the Collections a STAC API server loads
API_COLLECTIONS = "api-collections"


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
    rows = [doc for doc in docs if doc.get("geometry")]
    if len(rows) < len(docs):
        left_out = [doc.get("id") for doc in docs if not doc.get("geometry")]
        warn(f"stac-geoparquet {os.fspath(path)}: Items without geometry left out: {left_out}", MoczarrWarning)
    path = Path(path)
    if not rows:
        path.unlink(missing_ok=True)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    rustac.write_sync(os.fspath(path), rows, format="parquet")
    return path


def write_api_collections(catalog: pystac.Catalog, folder: str | os.PathLike) -> list[Path]:
    """Write every Collection of ``catalog`` (recursively) as a location-free ``{folder}/{id}.json``.

    The documents a STAC API server loads beside the Items
    (``rustac serve items.parquet folder/*.json``). ``folder`` is emptied of
    earlier ``*.json`` first. Raises :class:`moczarr.errors.ArgumentError` when two
    Collections share an id (an API serves one per id).
    """
    folder = Path(folder)
    collections = list(catalog.get_all_collections())
    ids = [c.id for c in collections]
    if len(set(ids)) < len(ids):
        raise ArgumentError(
            f"write_api_collections: Collection ids are not unique: {sorted({i for i in ids if ids.count(i) > 1})}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    written = []
    for collection in collections:
        path = folder / f"{collection.id}.json"
        path.write_text(json.dumps(location_free(collection), indent=1) + "\n")
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
        return join_location(base, "..", href)

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
