"""The STAC documents of a catalog as plain dicts, each made once: Items, Collections, Catalogs, and their tree.

Each document is a dict laid out as pystac writes it (its keys in
``to_dict``'s order, ``links`` in its place, filled by :mod:`.save` once the
documents have their places); a :class:`Node` holds a document, its
place below the catalog folder, and the documents under it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pystac

from moczarr.metadata import (
    MANIFEST_NAME,
    ROOT_MOC_NAME,
    LevelInfo,
    StoreSummary,
    join_location,
    normalize_location,
    window_interval,
)

from .fields import (
    ENGINE,
    FILE,
    HIVE_MEDIA_TYPE,
    JSON_TYPE,
    MEDIA_TYPE,
    OPEN_LEVEL,
    OPEN_STORE,
    XARRAY,
    Product,
    collection_description,
    collection_fields,
    collection_summaries,
    iso,
    plural,
    product_license,
    providers,
    set_cube,
    set_time,
    set_version_and_scheme,
    temporal_extent,
)
from .thumbnails import PNG_TYPE, Quicklook

STAC_VERSION = pystac.get_stac_version()
#: the place of the whole sphere, a Collection's spatial extent when its store records none
WHOLE_SPHERE = [-180.0, -90.0, 180.0, 90.0]


@dataclass(eq=False)
class Node:
    """A document of the catalog and where it sits: its place (``path``, posix, below the catalog folder), parent,
    children (Catalogs and Collections) and Items. A ``kept`` node (a Collection an update keeps) is linked to,
    never written; ``product``: the product a Collection describes (for its quicklooks); ``quicklook``: what a
    level Item's quicklook drew (:class:`.thumbnails.Quicklook`, its value range the Item's render rescale)."""

    doc: dict
    kind: Literal["catalog", "collection", "item"]
    parent: Node | None = None
    path: str = "catalog.json"
    children: list[Node] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)
    kept: bool = False
    product: Product | None = None
    license_link: dict | None = None  # a Collection's link to its license, after its root link
    moraine: Any = None  # the pyramid a moraine Item describes (for its quicklook)
    quicklook: Quicklook | None = None

    @property
    def title(self) -> str | None:
        """The document's title (an Item's is a property)."""
        return self.doc.get("properties", {}).get("title") if self.kind == "item" else self.doc.get("title")

    def adopt(self, child: Node) -> Node:
        """Add ``child`` (a Catalog, Collection or Item) under this node; returns it."""
        child.parent = self
        (self.items if child.kind == "item" else self.children).append(child)
        return child

    def walk(self):
        """This node and every node below it: a node, then its Items, then its children's, in order."""
        yield self
        yield from self.items
        for child in self.children:
            yield from child.walk()


def catalog_doc(catalog_id: str, description: str, title: str | None, extra: dict | None = None) -> dict:
    """A Catalog document (``links`` left to fill)."""
    doc: dict[str, Any] = {
        "type": "Catalog",
        "id": catalog_id,
        "stac_version": STAC_VERSION,
        "description": description,
        "links": [],
    }
    doc.update(extra or {})
    if title is not None:
        doc["title"] = title
    return doc


def top_catalog(catalog_id: str, title: str | None, stores, moraine, n_products: int) -> Node:
    """The root Catalog."""
    parts = [plural(len(stores), "morton-hive store")] + ([plural(len(moraine), "moraine pyramid")] if moraine else [])
    return Node(
        catalog_doc(
            catalog_id,
            f"{' and '.join(parts)} ({plural(n_products, 'product')}). Morton-hive stores are sparse "
            "HEALPix datasets: a Collection per product, an Item per resolution level (and window); each level "
            "Item's data asset opens with xarray (engine moczarr, its xarray:open_kwargs) or "
            "moczarr_intake.open_stac. A moraine pyramid is one Item, an asset per level; "
            "open_stac(item, level=L) opens a level.",
            title or "moczarr catalog: " + " and ".join(parts),
        ),
        "catalog",
    )


def store_catalog(store: StoreSummary, catalog_id: str, label: str) -> Node:
    """The Catalog of a multi-product root."""
    names = [p.name for p in store.products]
    extra = {"moczarr:store": label, "moczarr:store_root": normalize_location(store.root), "moczarr:products": names}
    description = f"Multi-product morton-hive store {label}: products " + ", ".join(names)
    title = f"morton-hive store {label} ({plural(len(store.products), 'product')})"
    return Node(catalog_doc(catalog_id, description, title, extra), "catalog")


def stand_in(collection_id: str, title: str) -> Node:
    """A Collection kept from an earlier build: only what the documents linking to it show (id, title, place)."""
    return Node({"type": "Collection", "id": collection_id, "title": title}, "collection", kept=True)


def moraine_item(item: pystac.Item, item_id: str, info) -> Node:
    """The Item document of the moraine pyramid ``info`` (its :func:`.moraine.moraine_stac_item`), as ``item_id``."""
    item.id = item_id
    item.properties["moczarr:store_root"] = normalize_location(info.path)
    return Node(item.to_dict(include_self_link=False, transform_hrefs=False), "item", moraine=info)


def collection(prod: Product, *, license: str | None = None, license_url: str | None = None) -> Node:
    """The Collection of one product with its level Items, assets and open hint."""
    p = prod.summary
    known = sorted(iv for iv in (window_interval(w, p.schedule, p.manifest.temporal) for w in p.windows) if iv)
    extra, extensions = collection_fields(prod)
    licence, licence_url = product_license(p, license, license_url)
    kwargs: dict[str, Any] = {"store_root": prod.store_root}
    if prod.products_arg is not None:
        kwargs["products"] = list(prod.products_arg)
    assets, used = _assets(prod, {"function": OPEN_STORE, "kwargs": kwargs})
    doc = catalog_doc(prod.collection_id, collection_description(prod, bool(known)), None)
    doc["type"] = "Collection"
    doc["stac_extensions"] = sorted(extensions | used)
    doc.update(extra)
    doc["item_assets"] = ITEM_ASSETS
    doc["title"] = prod.title
    intervals = [[iso(a), iso(b)] for a, b in temporal_extent(p, known)]
    doc["extent"] = {"spatial": {"bbox": [prod.bbox or WHOLE_SPHERE]}, "temporal": {"interval": intervals}}
    doc["license"] = licence
    doc["keywords"] = [k for k in ("morton-hive", "HEALPix", "zarr", p.dataset.get("short_name")) if k]
    named = providers(p)
    if named:
        doc["providers"] = named
    doc["summaries"] = collection_summaries(p)
    doc["assets"] = assets
    if not doc["stac_extensions"]:
        del doc["stac_extensions"]
    node = Node(doc, "collection", product=prod)
    if licence_url:
        node.license_link = {"rel": "license", "href": licence_url, "type": "text/html", "title": f"license: {licence}"}
    for item in level_items(prod):
        node.adopt(Node(item, "item"))
    return node


ITEM_ASSETS = {
    "data": {"title": "the store root, opened at this Item's level", "type": MEDIA_TYPE, "roles": ["data"]},
    "morton-hive": {
        "title": "the store root as intake's MortonHive datatype",
        "type": HIVE_MEDIA_TYPE,
        "roles": ["data"],
    },
    "manifest": {"title": "morton-hive manifest", "type": JSON_TYPE, "roles": ["metadata"]},
    "coverage": {"title": "root coverage MOC", "type": JSON_TYPE, "roles": ["metadata"]},
    "thumbnail": {"title": "quicklook of the level's first dense variable", "type": PNG_TYPE, "roles": ["thumbnail"]},
}


def level_items(prod: Product) -> list[dict]:
    """One Item per declared level (per window on windowed products; plus the all-time folds)."""
    p = prod.summary
    decl = p.declaration
    windows: list[tuple[str | None, bool]] = [(w, False) for w in p.windows] if p.windowed else [(None, False)]
    intervals = {w: window_interval(w, p.schedule, p.manifest.temporal) for w in p.windows}
    known = [iv for iv in intervals.values() if iv]
    all_time_span = (min(a for a, _ in known), max(b for _, b in known)) if known else None
    items = []
    for level in p.levels:
        targets = list(windows)
        if p.windowed and level.artifact == "overview" and decl and decl.all_time:
            targets.append((None, True))
        for window, all_time in targets:
            span = intervals.get(window) if window else (all_time_span if all_time else None)
            items.append(level_item(prod, level, window, all_time, span))
    return items


def level_item(prod: Product, level: LevelInfo, window: str | None, all_time: bool, span) -> dict:
    """The Item of one level (and window, or the all-time folds), its assets and open hints included."""
    p = prod.summary
    suffix = f"-{window}" if window else ("-all" if all_time else "")
    props: dict[str, Any] = {
        "title": f"{prod.title}: cell order {level.cell_order} ({level.artifact}, ~{level.resolution_km:.3g} km)"
        + (f", window {window}" if window else ", all-time folds" if all_time else ""),
        "moczarr:product": p.name,
        "moczarr:cell_order": level.cell_order,
        "moczarr:node_order": level.node_order,
        "moczarr:artifact": level.artifact,
        "moczarr:window": window if window else ("all" if all_time else None),
        "moczarr:resolution_km": level.resolution_km,
        "moczarr:spec": p.spec,
        "gsd": level.resolution_km * 1000.0,
    }
    set_time(props, p, p.manifest.generated_at, span, window, all_time)
    extensions = set_cube(props, prod, level)
    set_version_and_scheme(props, extensions, prod)
    props["datetime"] = props.pop("datetime", None)  # pystac writes it last
    hint = {"store_root": prod.product_root, "cell_order": level.cell_order, "window": window}
    open_kwargs = {"engine": ENGINE, "cell_order": level.cell_order, "window": window}
    if all_time:
        hint["all_time"] = open_kwargs["all_time"] = True
    assets, used = _assets(prod, {"function": OPEN_LEVEL, "kwargs": hint}, open_kwargs)
    doc: dict[str, Any] = {
        "type": "Feature",
        "stac_version": STAC_VERSION,
        "stac_extensions": sorted(extensions | used),
        "id": f"{prod.collection_id}-o{level.cell_order}{suffix}",
        "geometry": prod.geometry,
        "bbox": prod.bbox,
        "properties": props,
        "links": [],
        "assets": assets,
        "collection": prod.collection_id,
    }
    if not prod.geometry:
        del doc["bbox"]
    return doc


def _asset(href: str, media_type: str, title: str, description: str | None, roles: list[str], extra: dict) -> dict:
    """An asset object as pystac writes it."""
    out: dict[str, Any] = {"href": href, "type": media_type, "title": title}
    if description is not None:
        out["description"] = description
    out.update(extra)
    out["roles"] = roles
    return out


def _copy(extra: dict) -> dict:
    """A copy of the hint fields of a ``data`` asset (their dicts are spelled in place, apart for each asset)."""
    out = {key: dict(value) for key, value in extra.items()}
    out["moczarr:open"]["kwargs"] = dict(out["moczarr:open"]["kwargs"])
    return out


def _assets(prod: Product, hint: dict, open_kwargs: dict | None = None) -> tuple[dict[str, dict], set[str]]:
    """``data``, ``morton-hive`` (Items), ``manifest`` and ``coverage`` assets, and the extensions they use.

    On an Item, ``data`` and ``morton-hive`` carry the xarray-assets hints
    (``xarray:open_kwargs``: engine, cell order, window) and ``moczarr:open``.
    """
    extensions: set[str] = set()
    root = normalize_location(prod.summary.root)
    refs = {"storage:refs": [prod.scheme[0]]} if prod.scheme else {}
    extra: dict[str, Any] = {"moczarr:open": hint}
    if open_kwargs is not None:
        extra["xarray:open_kwargs"] = dict(open_kwargs)
        if prod.public_options:
            extra["xarray:storage_options"] = dict(prod.public_options)
        extensions.add(XARRAY)
    title = f"store root of {prod.title}"
    description = None
    if open_kwargs is not None:
        title += f", opened at cell order {open_kwargs['cell_order']}"
        description = "xr.open_dataset(href, **xarray:open_kwargs) opens exactly this level (engine moczarr)"
    assets = {"data": _asset(root, MEDIA_TYPE, title, description, ["data"], {**extra, **refs})}
    if open_kwargs is not None:
        hive_title = f"{prod.title} as a morton-hive store (intake: MortonHive)"
        assets["morton-hive"] = _asset(root, HIVE_MEDIA_TYPE, hive_title, None, ["data"], {**_copy(extra), **refs})
    for key, name, meta_title in (
        ("manifest", MANIFEST_NAME, "morton-hive manifest"),
        ("coverage", ROOT_MOC_NAME, "root coverage MOC (morton-moc/1 ranges envelope)"),
    ):
        if key not in prod.sizes:
            continue
        size = prod.sizes[key]
        sized = {"file:size": int(size)} if size is not None else {}
        if sized:
            extensions.add(FILE)
        href = join_location(root, name)
        assets[key] = _asset(href, JSON_TYPE, meta_title, None, ["metadata"], {**sized, **refs})
    return assets, extensions
