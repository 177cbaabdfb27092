"""Place the documents of a catalog, link them, spell their store addresses, draw quicklooks, and write them.

The documents (:mod:`.documents`) are written where pystac's best-practice
layout puts them (``{id}/catalog.json``, ``{id}/collection.json``,
``{id}/{id}.json`` below the parent's folder), with the links pystac gives
them (``root``, ``child``, ``item``, ``collection``, ``parent``, relative;
the ``self`` links of a published catalog absolute), in the bytes pystac's
``save`` writes (:func:`dumps`). The location-free copies a STAC API and
pgstac load (:func:`api_documents`) are made from the same documents.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Collection
from pathlib import Path

import pystac

from moczarr.metadata import is_remote, join_location

from ..model.access import is_http
from ..model.hrefs import HrefPolicy, local_path
from .documents import Node
from .fields import JSON_TYPE
from .geoparquet import STRUCTURAL_RELS, ApiDocuments
from .thumbnails import PNG_TYPE, draw_moraine_thumbnail, draw_thumbnail, level_quicklook

GEOJSON_TYPE = "application/geo+json"

#: a document as pystac's StacIO writes it (orjson's two-space indent where orjson is installed)
dumps: Callable[[dict], str] = pystac.StacIO.default().json_dumps


def place(top: Node) -> None:
    """Give every node below ``top`` its path, as pystac's best-practice layout (``normalize_hrefs``) does."""
    top.path = "catalog.json"
    for node in top.walk():
        folder = posixpath.dirname(node.path)
        for child in node.children:
            name = "collection.json" if child.kind == "collection" else "catalog.json"
            child.path = posixpath.join(folder, child.doc["id"], name)
        for item in node.items:
            item.path = posixpath.join(folder, item.doc["id"], f"{item.doc['id']}.json")


def _relative(target: Node, source: Node) -> str:
    """The href of ``target`` from ``source``'s document, as pystac spells it (``./`` or ``../`` first)."""
    href = posixpath.relpath(target.path, posixpath.dirname(source.path) or ".")
    return href if href.startswith("../") else "./" + href


def _link(rel: str, target: Node, source: Node, media_type: str = JSON_TYPE, href: str | None = None) -> dict:
    out = {"rel": rel, "href": href or _relative(target, source), "type": media_type}
    if target.title is not None:
        out["title"] = target.title
    return out


def link(top: Node, base: str | None) -> None:
    """Fill every written document's ``links``; ``base``: the published URL of the catalog folder (``self`` links on
    its Catalogs and Collections), or None (a self-contained catalog)."""
    for node in top.walk():
        if node.kept:
            continue
        links = [_link("root", top, node)]
        if node.license_link:
            links.append(node.license_link)
        links += [_link("child", child, node) for child in node.children]
        links += [_link("item", item, node, GEOJSON_TYPE) for item in node.items]
        if base is not None and node.kind != "item":  # untitled, before the parent link (as pystac places it)
            links.append({"rel": "self", "href": self_href(node, base), "type": JSON_TYPE})
        if node.parent is not None:
            if node.kind == "item" and node.parent.kind == "collection":
                links.append(_link("collection", node.parent, node))
            links.append(_link("parent", node.parent, node))
        node.doc["links"] = links


def write(top: Node, dest: Path) -> None:
    """Write every document but the kept ones to its place below ``dest``."""
    made: set[str] = set()
    for node in top.walk():
        if node.kept:
            continue
        folder = posixpath.dirname(node.path)
        if folder not in made:
            (dest / folder).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        with open(dest / node.path, "w", encoding="utf-8") as f:
            f.write(dumps(node.doc))


def spell_addresses(top: Node, policy: HrefPolicy, out_dir: Path) -> None:
    """Spell every store address by ``policy``: asset hrefs, open hints, ``moczarr:store_root``.

    A store inside the catalog folder becomes relative to each document; with
    ``href_base`` others become published URLs; URLs stay as given (see
    :class:`~moczarr_intake.hrefs.HrefPolicy` for the percent-encoding). An
    asset whose href is ``http(s)://`` loses its ``xarray:storage_options``
    (:func:`moczarr_intake.access.href_storage_options`).
    """

    def spell(value, owner_dir: Path):
        if isinstance(value, str) and (is_remote(value) or os.path.isabs(value)):
            return policy.stac_href(value, owner_dir)
        return value

    for node in top.walk():
        if node.kept:
            continue
        doc, owner = node.doc, out_dir / posixpath.dirname(node.path)
        fields = doc["properties"] if node.kind == "item" else doc
        if "moczarr:store_root" in fields:
            fields["moczarr:store_root"] = spell(fields["moczarr:store_root"], owner)
        for asset in doc.get("assets", {}).values():
            if asset["href"].startswith(("./", "../")):
                continue
            asset["href"] = spell(asset["href"], owner)
            if is_http(asset["href"]):  # an HTTP reader takes no S3 option: it needs only the address
                asset.pop("xarray:storage_options", None)
            hint = asset.get("moczarr:open")
            if isinstance(hint, dict):
                for key in ("store_root", "path"):
                    if key in hint.get("kwargs", {}):
                        hint["kwargs"][key] = spell(hint["kwargs"][key], owner)


def _thumbnail(href: str, title: str) -> dict:
    return {"href": href, "type": PNG_TYPE, "title": title, "roles": ["thumbnail"]}


def draw_thumbnails(top: Node, dest: Path, storage_options) -> None:
    """A quicklook PNG per hive level Item (its first dense variable) and Collection, and per moraine Item."""
    for node in top.walk():
        if node.kept:
            continue
        if node.kind == "collection" and node.product is not None:
            _draw_collection(node, dest, storage_options)
        elif node.kind == "item" and node.parent is top:
            folder = dest / posixpath.dirname(node.path)
            folder.mkdir(parents=True, exist_ok=True)
            what = draw_moraine_thumbnail(node.moraine, folder / "thumbnail.png", storage_options=storage_options)
            if what:
                node.doc["assets"]["thumbnail"] = _thumbnail("./thumbnail.png", f"quicklook: {what}")


def _draw_collection(node: Node, dest: Path, storage_options) -> None:
    """The quicklooks of a Collection's Items, and the Collection's (its first Item's, or its coverage's)."""
    prod = node.product
    assert prod is not None  # a Collection made of a product
    folder = dest / posixpath.dirname(node.path)
    folder.mkdir(parents=True, exist_ok=True)
    target = None
    for item in node.items:
        hint = item.doc["assets"]["data"]["xarray:open_kwargs"]
        item_dir = dest / posixpath.dirname(item.path)
        item_dir.mkdir(parents=True, exist_ok=True)
        drawn = level_quicklook(
            prod.product_root,
            hint["cell_order"],
            item_dir / "thumbnail.png",
            window=hint.get("window"),
            all_time=bool(hint.get("all_time")),
            storage_options=storage_options,
        )
        if drawn is not None:
            item.quicklook = drawn
            item.doc["assets"]["thumbnail"] = _thumbnail("./thumbnail.png", f"quicklook: {drawn.what}")
            target = target or item
    if target is not None:
        rel = os.path.relpath(dest / posixpath.dirname(target.path) / "thumbnail.png", folder).replace(os.sep, "/")
        node.doc["assets"]["thumbnail"] = _thumbnail(rel, target.doc["assets"]["thumbnail"]["title"])
    elif draw_thumbnail(prod.summary, folder / "thumbnail.png", geometry=prod.geometry):
        node.doc["assets"]["thumbnail"] = _thumbnail("./thumbnail.png", "coverage quicklook (no level could be drawn)")


def self_href(node: Node, base: str) -> str:
    """Where ``node``'s document lives: ``base`` (the catalog folder's absolute path or URL) joined with its place."""
    return f"{base}/{node.path}"


def api_documents(top: Node, base: str, skip: Collection[str] = ()) -> ApiDocuments:
    """The location-free documents of every Collection and Item below ``top`` (pystac's order) but the kept ones.

    ``base``: the catalog folder's absolute path or URL; ``skip``: ids of
    Collections (with their Items) and of Items outside any Collection to leave out.
    """
    collections: list[Node] = []

    def gather(node: Node) -> None:  # Catalog.get_all_collections' order
        collections.extend(c for c in node.children if c.kind == "collection")
        for child in node.children:
            gather(child)

    gather(top)
    items = [i for n in top.walk() for i in n.items]
    return ApiDocuments(
        [location_free(c, base) for c in collections if c.doc["id"] not in skip and not c.kept],
        [location_free(i, base) for i in items if i.doc.get("collection", i.doc["id"]) not in skip],
    )


def location_free(node: Node, base: str) -> dict:
    """A document with its structural links dropped and its relative hrefs made absolute (against its own place).

    A copy of what it changes (links, the fields, the assets and hints): the rest is shared with ``node.doc``.
    """
    doc = dict(node.doc)
    own = self_href(node, base)

    def absolute(href):
        if not isinstance(href, str) or is_remote(href) or os.path.isabs(href):
            return href
        # a relative href is percent-encoded (hrefs.quote_path): kept so under a URL, decoded into a local path
        return join_location(own, "..", href if is_remote(own) else local_path(href))

    doc["links"] = [{**x, "href": absolute(x["href"])} for x in doc["links"] if x["rel"] not in STRUCTURAL_RELS]
    if node.kind == "item":
        doc["properties"] = fields = dict(doc["properties"])
    else:
        fields = doc
    if "moczarr:store_root" in fields:
        fields["moczarr:store_root"] = absolute(fields["moczarr:store_root"])
    assets = {}
    for key, asset in doc.get("assets", {}).items():
        asset = {**asset, "href": absolute(asset["href"])}
        hint = asset.get("moczarr:open")
        if isinstance(hint, dict) and isinstance(hint.get("kwargs"), dict) and "store_root" in hint["kwargs"]:
            asset["moczarr:open"] = {**hint, "kwargs": {**hint["kwargs"]}}
            asset["moczarr:open"]["kwargs"]["store_root"] = absolute(hint["kwargs"]["store_root"])
        assets[key] = asset
    if "assets" in doc:
        doc["assets"] = assets
    return doc
