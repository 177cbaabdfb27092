"""Build STAC Collections and Items from store summaries, and assemble them into a static catalog.

Mapping (``docs/stac.md`` has the full table):

- a multi-product root -> a ``Catalog`` (a child of the top catalog);
- a product (the one product of a bare store, or one product of a multi-product
  root) -> a ``Collection``;
- a resolution level of a product -> an ``Item`` per window on windowed
  products (``{collection}-o{r}-{window}``; overview levels also get an
  ``{collection}-o{r}-all`` Item when the pyramid declares all-time folds), one
  Item otherwise (``{collection}-o{r}``).

Every store fact comes from :func:`moczarr.metadata.summarize_store`; building
a catalog makes no request beyond the summaries'. Each Item's and Collection's
``data`` asset carries a ``moczarr:open`` hint that :mod:`.open` follows back.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import posixpath
import re
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

import mortie
import numpy as np
import pystac
from tqdm import tqdm

from moczarr.errors import ArgumentError, MoczarrWarning
from moczarr.metadata import (
    MANIFEST_NAME,
    ROOT_MOC_NAME,
    LevelInfo,
    ProductSummary,
    StoreSummary,
    geometry_bbox,
    is_remote,
    join_location,
    normalize_location,
    parse_time,
    summarize_store,
    to_words,
    warn,
    window_interval,
)

from ..model.access import is_http, public_storage_options
from ..model.entries import CatalogEntries, catalog_entries
from ..model.hrefs import HrefPolicy
from ..model.naming import root_labels, slug
from .geoparquet import PendingApiOutputs, check_api_names, start_api_outputs
from .moraine import moraine_stac_item
from .thumbnails import (
    PNG_TYPE,
    draw_level_thumbnail,
    draw_moraine_thumbnail,
    draw_thumbnail,
)

#: media type of the ``data`` asset (the store root): plain zarr, so xarray-minded clients
#: (xpystac) dispatch to xarray, which the asset's ``xarray:open_kwargs`` point at the moczarr engine
MEDIA_TYPE = "application/vnd+zarr"
#: media type of the ``morton-hive`` asset (same href): the one intake's STAC reader maps to MortonHive
HIVE_MEDIA_TYPE = "application/vnd.morton-hive+zarr; version=3"
JSON_TYPE = "application/json"

DATACUBE = "https://stac-extensions.github.io/datacube/v2.2.0/schema.json"
VERSION = "https://stac-extensions.github.io/version/v1.2.0/schema.json"
FILE = "https://stac-extensions.github.io/file/v2.1.0/schema.json"
STORAGE = "https://stac-extensions.github.io/storage/v2.0.0/schema.json"
XARRAY = "https://stac-extensions.github.io/xarray-assets/v1.0.0/schema.json"
#: the xarray engine the ``xarray:open_kwargs`` hints name (``moczarr.backend``)
ENGINE = "moczarr"
#: ``datetime`` of an Item whose store records no observation time (stated in the Item)
PLACEHOLDER_TIME = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

#: the reader calls an open hint names (open_stac calls nothing else; the module paths are accepted too)
OPEN_LEVEL = "moczarr.open_level"
OPEN_STORE = "moczarr.open_store"


def iso(t: dt.datetime | None) -> str | None:
    return None if t is None else pystac.utils.datetime_to_str(t)


def data_type(dtype: str, kind: str) -> str:
    """A zarr dtype in the raster/file ``data_type`` vocabulary (``other`` for vlen and the rest)."""
    if kind == "ragged":
        return "other"
    table = {"complex64": "cfloat32", "complex128": "cfloat64"}
    if dtype in table:
        return table[dtype]
    if re.fullmatch(r"u?int(8|16|32|64)|float(16|32|64)", dtype):
        return dtype
    return "other"


@dataclass
class _Product:
    """What the builders need of a product beyond its summary (all computed without I/O)."""

    summary: ProductSummary
    collection_id: str
    store_root: str  # the root the Collection hint opens (a multi-product root or the bare store)
    product_root: str  # the product's own root (what open_level is given)
    products_arg: list[str] | None  # open_store(products=...) for a product of a multi-product root
    sizes: dict[str, int | None]  # asset name -> bytes (None: read but size unknown; missing: absent)
    scheme: tuple[str, dict] | None  # storage extension scheme (object-store roots)
    geometry: dict | None
    bbox: list[float] | None
    title: str = ""  # the Collection title (unique in the catalog)
    store_label: str = ""  # how the catalog names the store (never a machine path)
    public_options: dict | None = None  # storage options safe to publish (xarray:storage_options)
    #: order -> (node count, lowest and highest NESTED id) of the root coverage's nodes (:func:`_coverage_nodes`)
    coverage_nodes: dict[int, tuple[int, int, int]] = field(default_factory=dict, repr=False)


def _coverage_nodes(prod: _Product, order: int) -> tuple[int, int, int]:
    """``(count, lowest, highest)`` NESTED ids of the root coverage's nodes at ``order`` (once per order and product:
    every level and window of a product shares them)."""
    if order not in prod.coverage_nodes:
        nodes = sorted({d[: (2 if d.startswith("-") else 1) + order] for d in prod.summary.shards})
        nested, _ = mortie.mort2healpix(to_words(nodes))
        nested = np.atleast_1d(np.asarray(nested, dtype=np.int64))
        prod.coverage_nodes[order] = (len(nodes), int(nested.min()), int(nested.max()))
    return prod.coverage_nodes[order]


def _cells_dimension(prod: _Product, cell_order: int, node_order: int) -> dict:
    """The ``cells`` dimension: the NESTED id range and the size of the level's cell domain."""
    p = prod.summary
    res = f"HEALPix cells at order {cell_order} (~{mortie.order2res(cell_order):.3g} km)"
    rows = "rows in ascending morton word order (coordinates morton and cell_ids)"
    dim: dict[str, Any] = {
        "type": "other",
        "reference_system": f"HEALPix NESTED cell ids at order {cell_order} (coordinate cell_ids)",
    }
    if not p.shards:  # no usable root coverage: only the sphere bounds the ids
        dim["extent"] = [0, 12 * 4**cell_order - 1]
        dim["description"] = f"{res}, {rows}; extent unknown (no usable root coverage.moc)"
        return dim
    order = min(node_order, p.shard_order)
    count, lowest, highest = _coverage_nodes(prod, order)
    per = 4 ** (cell_order - order)  # NESTED: the children of id n at the next order are 4n..4n+3
    dim["extent"] = [lowest * per, highest * per + per - 1]
    dim["description"] = (
        f"{res}, {rows}; at most {count * per} cells: the {count} order-{order} node(s) "
        f"of the root coverage x {per} cells each"
    )
    return dim


def _cube_variables(p: ProductSummary, names: list[str], derived_fields: dict | None, derived: bool) -> dict:
    source = {v.name: v for v in p.variables}
    out = {}
    for name in names:
        info = source.get(name)
        kind = info.kind if info else "dense"
        dtype = info.dtype if info else "unknown"
        field = (derived_fields or {}).get(name) if derived else None
        if derived and isinstance(field, dict) and field.get("dtype") and kind != "ragged":
            dtype = field["dtype"]
        entry: dict[str, Any] = {
            "dimensions": list(info.dims) if info else ["cells"],
            "type": "data",
            "data_type": data_type(dtype, kind),
            "moczarr:dtype": dtype,
            "moczarr:kind": kind,
        }
        attrs = info.attrs if info else {}
        if isinstance(attrs.get("units"), str):
            entry["unit"] = attrs["units"]
        text = attrs.get("long_name") or attrs.get("description")
        if isinstance(text, str):
            entry["description"] = text
        elif kind == "ragged" and isinstance(attrs.get("ragged"), dict):
            element = attrs["ragged"].get("element") or {}
            entry["description"] = (
                f"ragged ({attrs['ragged'].get('spec')}): variable-length {element.get('dtype')} "
                f"elements of shape {element.get('shape')} per cell"
            )
        if derived and isinstance(field, dict) and field.get("class"):
            entry["moczarr:fold"] = {k: field[k] for k in ("class", "method") if k in field}
        out[name] = entry
    return out


def _level_items(prod: _Product) -> list[pystac.Item]:
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
            items.append(_level_item(prod, level, window, all_time, span))
    return items


def _level_item(prod: _Product, level: LevelInfo, window: str | None, all_time: bool, span) -> pystac.Item:
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
    _set_time(props, p, p.manifest.generated_at, span, window, all_time)
    extensions = _set_cube(props, prod, level)
    _set_version_and_scheme(props, extensions, prod)
    item = pystac.Item(
        id=f"{prod.collection_id}-o{level.cell_order}{suffix}",
        geometry=prod.geometry,
        bbox=prod.bbox if prod.geometry else None,
        datetime=parse_time(props.pop("datetime", None)),
        properties=props,
    )
    hint = {"store_root": prod.product_root, "cell_order": level.cell_order, "window": window}
    open_kwargs = {"engine": ENGINE, "cell_order": level.cell_order, "window": window}
    if all_time:
        hint["all_time"] = open_kwargs["all_time"] = True
    extensions |= _add_assets(item, prod, {"function": OPEN_LEVEL, "kwargs": hint}, open_kwargs)
    item.stac_extensions = sorted(extensions)
    return item


def _set_cube(props: dict, prod: _Product, level: LevelInfo) -> set[str]:
    """The datacube fields of a level Item (``cells``, ``time`` when a variable has it); returns the extensions."""
    p = prod.summary
    fields = p.declaration.fields if p.declaration else None
    dims = {"cells": _cells_dimension(prod, level.cell_order, level.node_order)}
    variables = _cube_variables(p, level.variables, fields, level.artifact != "source")
    if any("time" in v["dimensions"] for v in variables.values()):
        dims["time"] = {"type": "temporal", "extent": [props.get("start_datetime"), props.get("end_datetime")]}
    props["cube:dimensions"] = dims
    props["cube:variables"] = variables
    return {DATACUBE}


def _set_time(props: dict, p: ProductSummary, generated_at, span, window, all_time) -> None:
    """``datetime`` / ``start_datetime`` / ``end_datetime`` (observation time only), ``created``, and the rule used.

    Observation time: the window's interval, else the time range the root
    coverage or the manifest's temporal section records; ``datetime`` is then
    the interval's start (a STAC API server may drop a ``null`` one). The generation time
    (manifest ``generated_at``) goes to ``created``, never to ``datetime``.
    Without any observation time, ``datetime`` is :data:`PLACEHOLDER_TIME`,
    stated as such in ``moczarr:datetime_source`` and the description.
    """
    generated = parse_time(generated_at)
    if generated is not None:
        props["created"] = iso(generated)
    if span is not None:
        props["datetime"] = iso(span[0])
        props["start_datetime"], props["end_datetime"] = iso(span[0]), iso(span[1])
        props["moczarr:datetime_source"] = "window"
        props["description"] = (
            "the cross-window (all-time) folds; " if all_time else f"window {window}: "
        ) + "end_datetime is the exclusive end of the half-open [start, end) window interval; datetime is its start"
        return
    recorded = [parse_time(t) for t in (p.time_range or [])]
    if len(recorded) == 2 and all(recorded) and not window:
        props["datetime"] = iso(recorded[0])
        props["start_datetime"], props["end_datetime"] = iso(recorded[0]), iso(recorded[1])
        props["moczarr:datetime_source"] = "time_range"
        props["description"] = (
            "start/end_datetime: the observation time range the store records (root coverage.moc or manifest "
            "temporal section); datetime is its start"
        )
        return
    props["datetime"] = iso(PLACEHOLDER_TIME)
    props["moczarr:datetime_source"] = "placeholder"
    props["description"] = (
        "the store records no observation time: datetime (1970-01-01) is a placeholder, not a time of data"
        + ("; created is the product's generation time (manifest generated_at)" if generated else "")
    )


def _add_assets(owner, prod: _Product, hint: dict, open_kwargs: dict | None = None) -> set[str]:
    """``data``, ``morton-hive`` (Items), ``manifest`` and ``coverage`` assets; returns the extensions used.

    On an Item, ``data`` and ``morton-hive`` carry the xarray-assets hints
    (``xarray:open_kwargs``: engine, cell order, window) and ``moczarr:open``.
    """
    extensions: set[str] = set()
    root = normalize_location(prod.summary.root)
    extra: dict[str, Any] = {"moczarr:open": hint}
    if open_kwargs is not None:
        extra["xarray:open_kwargs"] = dict(open_kwargs)
        if prod.public_options:
            extra["xarray:storage_options"] = dict(prod.public_options)
        extensions.add(XARRAY)
    assets = {
        "data": pystac.Asset(
            href=root,
            title=f"store root of {prod.title}"
            + ("" if open_kwargs is None else f", opened at cell order {open_kwargs['cell_order']}"),
            description=None
            if open_kwargs is None
            else "xr.open_dataset(href, **xarray:open_kwargs) opens exactly this level (engine moczarr)",
            media_type=MEDIA_TYPE,
            roles=["data"],
            extra_fields=extra,
        )
    }
    if open_kwargs is not None:
        assets["morton-hive"] = pystac.Asset(
            href=root,
            title=f"{prod.title} as a morton-hive store (intake: MortonHive)",
            media_type=HIVE_MEDIA_TYPE,
            roles=["data"],
            extra_fields=json_copy(extra),
        )
    for key, name, title in (
        ("manifest", MANIFEST_NAME, "morton-hive manifest"),
        ("coverage", ROOT_MOC_NAME, "root coverage MOC (morton-moc/1 ranges envelope)"),
    ):
        if key not in prod.sizes:
            continue
        asset = pystac.Asset(href=join_location(root, name), title=title, media_type=JSON_TYPE, roles=["metadata"])
        size = prod.sizes[key]
        if size is not None:
            asset.extra_fields["file:size"] = int(size)
            extensions.add(FILE)
        assets[key] = asset
    for key, asset in assets.items():
        if prod.scheme:
            asset.extra_fields["storage:refs"] = [prod.scheme[0]]
        owner.add_asset(key, asset)
    return extensions


def json_copy(value):
    """A deep copy of a JSON-like value."""
    return json.loads(json.dumps(value))


# -- the Collection of one product --------------------------------------------------------------------
def _storage_scheme(root: str, storage_options: dict | None) -> tuple[str, dict] | None:
    """The storage extension (v2) scheme of an ``s3://`` root; None for other roots."""
    if not root.startswith(("s3://", "s3a://")):
        return None
    bucket = root.split("://", 1)[1].split("/", 1)[0]
    opts = storage_options or {}
    client = opts.get("client_kwargs") or {}
    endpoint = opts.get("endpoint_url") or client.get("endpoint_url")
    region = client.get("region_name") or opts.get("region_name") or opts.get("region")
    if endpoint:
        scheme: dict[str, Any] = {"type": "custom-s3", "platform": str(endpoint).rstrip("/"), "bucket": bucket}
    else:
        scheme = {"type": "aws-s3", "platform": "https://{bucket}.s3.{region}.amazonaws.com", "bucket": bucket}
    if region:
        scheme["region"] = str(region)
    if "requester_pays" in opts:
        scheme["requester_pays"] = bool(opts["requester_pays"])
    return f"s3-{bucket}", scheme


def _product(
    p: ProductSummary,
    collection_id: str,
    store_root: str,
    products_arg: list[str] | None,
    sizes: dict[str, int | None],
    storage_options: dict | None,
    *,
    title: str | None = None,
    store_label: str | None = None,
) -> _Product:
    geometry = p.footprint
    bbox = geometry_bbox(geometry) if geometry else p.bbox
    return _Product(
        summary=p,
        collection_id=collection_id,
        store_root=normalize_location(store_root),
        product_root=normalize_location(p.root),
        products_arg=products_arg,
        sizes=sizes,
        scheme=_storage_scheme(p.root, storage_options),
        geometry=geometry,
        bbox=bbox,
        title=title or _product_title(p, None),
        store_label=store_label or collection_id,
        public_options=public_storage_options(storage_options),
    )


def _product_title(p: ProductSummary, store_label: str | None) -> str:
    """``"ATL06 v006: atl06"``, plus ``" in store {label}"`` when several stores hold a product of this name."""
    short, version = p.dataset.get("short_name"), p.dataset.get("version")
    head = f"{short or p.name}" + (f" v{version}" if version not in (None, "") else "")
    text = head if (short or "").lower() == p.name else f"{head}: {p.name}"
    return text + (f" in store {store_label}" if store_label else "")


def product_collection(
    product: ProductSummary,
    *,
    collection_id: str | None = None,
    store_root: str | None = None,
    products_arg: list[str] | None = None,
    sizes: dict[str, int | None] | None = None,
    storage_options: dict | None = None,
) -> pystac.Collection:
    """The Collection of one product, with one Item per level (and window). Makes no request.

    ``store_root``/``products_arg`` are what the Collection's open hint hands
    to ``open_store`` (default: the product's own root). ``sizes`` maps
    ``"manifest"``/``"coverage"`` to byte sizes (None: present, size unknown);
    without it the metadata assets are listed when the summary shows them
    (manifest always; coverage when usable) without ``file:size``.
    ``storage_options`` feeds the storage extension and the Items'
    ``xarray:storage_options`` (only :func:`moczarr_intake.model.access.public_storage_options`; nothing secret).
    """
    if sizes is None:
        sizes = {"manifest": None, **({"coverage": None} if product.coverage_usable else {})}
    prod = _product(
        product, collection_id or slug(product.name), store_root or product.root, products_arg, sizes, storage_options
    )
    return _collection(prod)


def _providers(p: ProductSummary) -> list[pystac.Provider] | None:
    """Providers the manifest records (``providers`` at the top or in ``dataset``), as STAC providers."""
    raw = p.manifest.raw.get("providers") or p.dataset.get("providers")
    if not isinstance(raw, list):
        return None
    out = []
    for entry in raw:
        if isinstance(entry, str):
            out.append(pystac.Provider(name=entry))
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            roles = [r for r in entry.get("roles") or [] if r in ("licensor", "producer", "processor", "host")]
            out.append(
                pystac.Provider(
                    name=entry["name"], description=entry.get("description"), roles=roles or None, url=entry.get("url")
                )
            )
    return out or None


def _license(p: ProductSummary, default: str | None, default_url: str | None) -> tuple[str, str | None]:
    """``(license, license link href or None)``: the manifest's license when it records one, else the build's.

    An SPDX identifier stays the license; a URL becomes ``"other"`` with a ``license`` link.
    Without any, ``"other"`` (and no link: nothing says what the terms are).
    """
    value = p.manifest.raw.get("license") or p.dataset.get("license") or default
    url = p.manifest.raw.get("license_url") or p.dataset.get("license_url") or default_url
    if isinstance(value, str) and "://" in value:
        return "other", value
    return (value if isinstance(value, str) and value else "other"), url if isinstance(url, str) else None


class _AssetDef(TypedDict):
    title: str
    type: str
    roles: list[str]


def _item_assets(windowed: bool) -> dict[str, pystac.ItemAssetDefinition | dict[str, Any]]:
    defs: dict[str, _AssetDef] = {
        "data": {"title": "the store root, opened at this Item's level", "type": MEDIA_TYPE, "roles": ["data"]},
        "morton-hive": {
            "title": "the store root as intake's MortonHive datatype",
            "type": HIVE_MEDIA_TYPE,
            "roles": ["data"],
        },
        "manifest": {"title": "morton-hive manifest", "type": JSON_TYPE, "roles": ["metadata"]},
        "coverage": {"title": "root coverage MOC", "type": JSON_TYPE, "roles": ["metadata"]},
        "thumbnail": {
            "title": "quicklook of the level's first dense variable",
            "type": PNG_TYPE,
            "roles": ["thumbnail"],
        },
    }
    return {
        k: pystac.ItemAssetDefinition.create(title=v["title"], description=None, media_type=v["type"], roles=v["roles"])
        for k, v in defs.items()
    }


def _collection(prod: _Product, *, license: str | None = None, license_url: str | None = None) -> pystac.Collection:
    """The Collection of one product with its level Items, assets and open hint."""
    p = prod.summary
    known = sorted(iv for iv in (window_interval(w, p.schedule, p.manifest.temporal) for w in p.windows) if iv)
    extra, extensions = _collection_fields(prod)
    licence, licence_url = _license(p, license, license_url)
    short = p.dataset.get("short_name")
    collection = pystac.Collection(
        id=prod.collection_id,
        description=_collection_description(prod, bool(known)),
        extent=pystac.Extent(
            pystac.SpatialExtent([prod.bbox or [-180.0, -90.0, 180.0, 90.0]]),
            pystac.TemporalExtent(_temporal_extent(p, known)),
        ),
        title=prod.title,
        license=licence,
        keywords=[k for k in ("morton-hive", "HEALPix", "zarr", short) if k],
        providers=_providers(p),
        summaries=pystac.Summaries(_summaries(p)),
        extra_fields=extra,
    )
    collection.item_assets = _item_assets(p.windowed)
    if licence_url:
        collection.add_link(pystac.Link("license", licence_url, media_type="text/html", title=f"license: {licence}"))
    kwargs: dict[str, Any] = {"store_root": prod.store_root}
    if prod.products_arg is not None:
        kwargs["products"] = list(prod.products_arg)
    extensions |= _add_assets(collection, prod, {"function": OPEN_STORE, "kwargs": kwargs})
    collection.stac_extensions = sorted(extensions)
    for item in _level_items(prod):
        collection.add_item(item, title=item.properties.get("title"))
    return collection


def _temporal_extent(p: ProductSummary, known: list) -> list[list]:
    """Windowed: the overall span, then one interval per window; else the recorded time range, or unknown."""
    if known:
        return [[known[0][0], max(b for _, b in known)]] + ([list(iv) for iv in known] if len(known) > 1 else [])
    if p.time_range and all(parse_time(t) for t in p.time_range):
        return [[parse_time(p.time_range[0]), parse_time(p.time_range[1])]]
    return [[None, None]]


def _collection_description(prod: _Product, timed: bool) -> str:
    p = prod.summary
    short, version = p.dataset.get("short_name"), p.dataset.get("version")
    return (
        f"{short or p.name}{f' version {version}' if version else ''}: product '{p.name}' of the morton-hive "
        f"store {prod.store_label} ({p.spec}; HEALPix cells at order {p.cell_order} in leaves at order "
        f"{p.shard_order}; levels {', '.join(f'o{lv.cell_order} ({lv.artifact})' for lv in p.levels)}"
        + (f"; {p.schedule} windows {', '.join(p.windows)}" if p.windowed else "")
        + ")."
        + ("" if prod.geometry else " Spatial extent unknown: no usable root coverage.moc.")
        + ("" if timed or p.time_range else " The store records no observation time.")
    )


def _summaries(p: ProductSummary) -> dict[str, Any]:
    out: dict[str, Any] = {
        "moczarr:cell_order": [lv.cell_order for lv in p.levels],
        "moczarr:artifact": sorted({lv.artifact for lv in p.levels}),
        "gsd": [lv.resolution_km * 1000.0 for lv in p.levels],
    }
    if p.windowed and p.windows:
        out["moczarr:window"] = list(p.windows)
    return out


def _collection_fields(prod: _Product) -> tuple[dict[str, Any], set[str]]:
    """The Collection's own fields (``moczarr:*``, datacube, ``created``, version, storage) and their extensions."""
    p = prod.summary
    extra: dict[str, Any] = {
        "moczarr:product": p.name,
        "moczarr:store": prod.store_label,
        "moczarr:store_root": prod.product_root,
        "moczarr:spec": p.spec,
        "moczarr:dataset": p.dataset,
        "moczarr:semantic_hash": p.semantic_hash,
        "moczarr:cell_order": p.cell_order,
        "moczarr:shard_order": p.shard_order,
        "moczarr:path_grouping": p.path_grouping,
        "moczarr:pyramid": p.pyramid_spec,
        "moczarr:schedule": p.schedule,
        "moczarr:windows": list(p.windows),
        "moczarr:time_range": p.time_range,
        "moczarr:n_shards": p.n_shards,
        "moczarr:levels": [
            {
                "cell_order": lv.cell_order,
                "node_order": lv.node_order,
                "artifact": lv.artifact,
                "variables": list(lv.variables),
                "resolution_km": lv.resolution_km,
            }
            for lv in p.levels
        ],
    }
    extensions: set[str] = set()
    native = p.level(p.cell_order) if p.cell_order in p.orders else (p.levels[0] if p.levels else None)
    if native is not None:
        extra["cube:dimensions"] = {"cells": _cells_dimension(prod, native.cell_order, native.node_order)}
        names = list(dict.fromkeys(n for lv in p.levels for n in lv.variables))
        extra["cube:variables"] = _cube_variables(p, names, p.declaration.fields if p.declaration else None, False)
        extensions.add(DATACUBE)
    generated = parse_time(p.manifest.generated_at) if p.manifest.generated_at else None
    if generated:
        extra["created"] = iso(generated)
    _set_version_and_scheme(extra, extensions, prod)
    return extra, extensions


def _set_version_and_scheme(fields: dict, extensions: set, prod: _Product) -> None:
    """The dataset's ``version`` and the product's ``storage:schemes`` (with their extensions), where known."""
    version = prod.summary.dataset.get("version")
    if version is not None:
        fields["version"] = str(version)
        extensions.add(VERSION)
    if prod.scheme:
        fields["storage:schemes"] = {prod.scheme[0]: prod.scheme[1]}
        extensions.add(STORAGE)


def _sizes(p: ProductSummary) -> dict[str, int | None]:
    """Asset name -> bytes of the root objects the summary read (a summary made by hand records none)."""
    if not p.object_sizes:
        return {"manifest": None, **({"coverage": None} if p.coverage_usable else {})}
    return {
        key: p.object_sizes[name]
        for key, name in (("manifest", MANIFEST_NAME), ("coverage", ROOT_MOC_NAME))
        if name in p.object_sizes
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def build_stac(
    roots=None,
    out_dir: str | os.PathLike | None = None,
    *,
    storage_options: dict | None = None,
    catalog_id: str = "moczarr",
    title: str | None = None,
    thumbnails: bool = False,
    summaries: Iterable[StoreSummary] | None = None,
    moraine: Iterable = (),
    progress: bool | Callable[[str, str], None] | None = None,
    relative_to: str | os.PathLike | None = None,
    policy: HrefPolicy | None = None,
    catalog_url: str | None = None,
    license: str | None = None,
    license_url: str | None = None,
    dest_dir: str | os.PathLike | None = None,
    api_outputs: bool = True,
    before_save: Callable[[pystac.Catalog], None] | None = None,
    keep: Collection[str] = (),
    entries: CatalogEntries | None = None,
) -> pystac.Catalog:
    """A static STAC catalog over one or many morton-hive store roots (local or URLs) and moraine pyramids.

    ``roots``: a root, or a list of roots (an element may also be a
    :class:`StoreSummary`); ``summaries``: summaries already made, added after
    ``roots``. Each multi-product root becomes a child Catalog holding one
    Collection per product; each bare store becomes a Collection under the top
    Catalog. Ids come from :func:`moczarr_intake.model.naming.product_ids`: product
    names, prefixed with the root's shortest unique path label when two stores
    hold products of one name. ``moraine``: :class:`moczarr.moraine.MorainePyramid`
    infos, each added as an Item under the top Catalog.

    When ``out_dir`` is given the catalog is saved there: store addresses are
    spelled by ``policy`` (default: relative for stores inside ``relative_to``,
    else absolute; see :class:`moczarr_intake.model.hrefs.HrefPolicy` and its
    ``href_base``), the catalog is SELF_CONTAINED, or RELATIVE_PUBLISHED under
    ``catalog_url`` (an absolute self link on every Catalog and Collection).
    ``thumbnails=True`` (needs ``out_dir``) reads each level once and writes a
    quicklook PNG per Item (and per Collection). ``license``/``license_url``:
    used where the manifest records none. ``progress``: True for a progress bar
    over products (stderr), or a callable ``progress(kind, name)``.
    ``dest_dir``: write the files there instead of ``out_dir`` (hrefs are still
    those of ``out_dir``: the CLI writes to a temporary sibling and renames).
    With ``api_outputs`` (the default) the STAC API outputs are written beside
    the catalog (:func:`.geoparquet.write_api_outputs`: ``api-items/*.parquet``
    and ``api-collections/*.json``) unless a document would name a path of this
    machine, which a :class:`moczarr.errors.MoczarrWarning` then says; they are
    written while pystac writes the documents. ``before_save(catalog)``: called
    with the finished catalog (normalized, store addresses spelled) before any
    document is written. ``keep``: ids of Collections and moraine Items whose
    documents an earlier build wrote and this one leaves as they are (an
    update that rewrites only the changed products, :mod:`moczarr_intake.living.reuse`):
    a kept Collection is a stand-in with its id and title, so the documents
    above it link to it as a full build does; neither it nor a kept moraine
    Item is written, drawn or listed in the STAC API outputs. ``entries``: the
    products and pyramids already named (:func:`~moczarr_intake.model.entries.catalog_entries`
    of ``summaries`` and ``moraine``, e.g. with the ids a previous build
    recorded); by default they are named here. Returns the top
    Catalog. Without thumbnails no request is made beyond the summaries'.
    Raises :class:`moczarr.errors.ArgumentError` for no root, a root given
    twice, or thumbnails without ``out_dir``.
    """
    if thumbnails and out_dir is None:
        raise ArgumentError("thumbnails=True writes PNG files: pass out_dir")
    moraine = list(moraine or [])
    report, bar = _progress(progress)
    stores = _store_summaries(roots, summaries, moraine, storage_options, report)
    entries = entries if entries is not None else catalog_entries(stores, moraine)
    if bar is not None:
        bar.total = len(entries.products)
        bar.refresh()
    top = _top_catalog(catalog_id, title, stores, moraine, len(entries.products))
    keep = frozenset(keep)
    built = _add_stores(top, entries, storage_options, report, keep, license=license, license_url=license_url)
    moraine_items = [(m, item) for m, item in _add_moraine(top, entries, storage_options) if item.id not in keep]
    if bar is not None:
        bar.close()
    if out_dir is not None:
        out_dir = Path(out_dir)
        dest = Path(dest_dir) if dest_dir is not None else out_dir
        policy = policy or HrefPolicy(Path(relative_to) if relative_to is not None else None)
        pending: list[PendingApiOutputs] = []

        def finished(catalog: pystac.Catalog) -> None:
            if before_save is not None:
                before_save(catalog)
            if api_outputs:
                pending.append(start_api_outputs(catalog, dest))

        if api_outputs:
            check_api_names(top)
        drawn = thumbnails and (built, moraine_items)
        _save(top, out_dir, dest, policy, catalog_url, drawn, storage_options, finished, keep)
        for written in (p.wait() for p in pending):
            if written.skipped:
                warn(written.skipped, MoczarrWarning)
    return top


def _store_summaries(roots, summaries, moraine, storage_options, report) -> list[StoreSummary]:
    """The summaries of ``roots`` (summarized here unless given as summaries) and ``summaries``, each root once."""
    if isinstance(roots, (str, os.PathLike, StoreSummary)):
        roots = [roots]
    given = list(roots or []) + list(summaries or [])
    if not given and not moraine:
        raise ArgumentError("build_stac needs at least one store root (or summary)")
    stores: list[StoreSummary] = []
    for root in given:
        store = root if isinstance(root, StoreSummary) else summarize_store(root, storage_options)
        stores.append(store)
        report("store", store.root)
    locations = [normalize_location(s.root) for s in stores]
    if len(set(locations)) != len(locations):
        raise ArgumentError(f"a store root is given twice: {locations}")
    return stores


def _top_catalog(catalog_id: str, title: str | None, stores, moraine, n_products: int) -> pystac.Catalog:
    parts = [_plural(len(stores), "morton-hive store")] + (
        [_plural(len(moraine), "moraine pyramid")] if moraine else []
    )
    return pystac.Catalog(
        id=catalog_id,
        title=title or "moczarr catalog: " + " and ".join(parts),
        description=f"{' and '.join(parts)} ({_plural(n_products, 'product')}). Morton-hive stores are sparse "
        "HEALPix datasets: a Collection per product, an Item per resolution level (and window); each level "
        "Item's data asset opens with xarray (engine moczarr, its xarray:open_kwargs) or "
        "moczarr_intake.open_stac. A moraine pyramid is one Item, an asset per level; "
        "open_stac(item, level=L) opens a level.",
    )


def _add_stores(
    top, entries, storage_options, report, keep: frozenset[str], **license_kw
) -> list[tuple[_Product, pystac.Collection]]:
    """A Collection per product under ``top`` (under a store Catalog for a multi-product root); returns the
    Collections made in full (a product whose Collection id is in ``keep`` gets a stand-in, :func:`_stand_in`)."""
    stores = entries.stores
    labels = root_labels([s.root for s in stores]) if stores else []
    names = Counter(p.name for s in stores for p in s.products)
    built: list[tuple[_Product, pystac.Collection]] = []
    for i, (store, store_entries) in enumerate(zip(stores, entries.by_store(), strict=True)):
        multi = store.layout == "multi"
        collections = []
        for e in store_entries:
            p = e.product
            title = _product_title(p, labels[i] if names[p.name] > 1 else None)
            if e.collection_id in keep:
                collections.append(_stand_in(e.collection_id, title))
                report("product", p.root)
                continue
            prod = _product(
                p,
                e.collection_id,
                store.root,
                [p.name] if multi else None,
                _sizes(p),
                storage_options,
                title=title,
                store_label=labels[i],
            )
            collections.append(_collection(prod, **license_kw))
            built.append((prod, collections[-1]))
            report("product", p.root)
        parent = _store_catalog(store, entries.sub_catalog_ids[i], labels[i]) if multi else top
        for c in collections:
            _adopt(parent, c)
        if multi:
            _adopt(top, parent)
    return built


def _stand_in(collection_id: str, title: str) -> pystac.Collection:
    """A Collection kept from an earlier build: only what the documents linking to it show (id, title, place)."""
    return pystac.Collection(
        id=collection_id,
        description="kept from the previous build (never written)",
        extent=pystac.Extent(pystac.SpatialExtent([[-180.0, -90.0, 180.0, 90.0]]), pystac.TemporalExtent([None, None])),
        title=title,
    )


def _adopt(parent: pystac.Catalog, child: pystac.Catalog) -> None:
    """``parent.add_child(child, title=child.title)``, in time linear in the catalog's size.

    pystac's ``Catalog.set_root`` (called by ``add_child``) copies the root's
    whole resolved-object cache for every child, so n children cost O(n²)
    (pystac issue #1207; 18 s of a 1,000-product build). That cache serves
    links resolved by href, which a catalog assembled here never has: the
    root is set on the child and everything below it without the copy. The
    documents written are those ``add_child`` gives (no self href is set yet:
    :func:`_save` normalizes them).
    """
    root = parent.get_root()
    below: list[pystac.STACObject] = [child]
    while below:
        obj = below.pop()
        pystac.STACObject.set_root(obj, root)
        below.extend(
            link.target
            for link in obj.links
            if link.rel in (pystac.RelType.CHILD, pystac.RelType.ITEM) and isinstance(link.target, pystac.STACObject)
        )
    child.set_parent(parent)
    parent.add_link(pystac.Link.child(child, title=child.title))


def _store_catalog(store: StoreSummary, catalog_id: str, label: str) -> pystac.Catalog:
    """The Catalog of a multi-product root."""
    return pystac.Catalog(
        id=catalog_id,
        title=f"morton-hive store {label} ({_plural(len(store.products), 'product')})",
        description=f"Multi-product morton-hive store {label}: products " + ", ".join(p.name for p in store.products),
        extra_fields={
            "moczarr:store": label,
            "moczarr:store_root": normalize_location(store.root),
            "moczarr:products": [p.name for p in store.products],
        },
    )


def _add_moraine(top: pystac.Catalog, entries, storage_options) -> list:
    """An Item per moraine pyramid under ``top``; returns ``[(entry, item)]``."""
    out = []
    for m in entries.moraine:
        item = moraine_stac_item(m.info, storage_options=storage_options)
        item.id = m.item_id
        item.properties["moczarr:store_root"] = normalize_location(m.info.path)
        top.add_item(item, title=item.properties.get("title"))
        out.append((m, item))
    return out


def _save(
    top,
    out_dir: Path,
    dest: Path,
    policy: HrefPolicy,
    catalog_url,
    thumbnails: tuple[list, list] | Literal[False],
    storage_options,
    finished: Callable[[pystac.Catalog], None],
    keep: frozenset[str] = frozenset(),
) -> None:
    """Normalize under ``out_dir`` (or ``catalog_url``), draw thumbnails, spell store addresses, write to ``dest``.

    ``thumbnails``: False, or ``(built, moraine_items)`` to draw them for.
    ``finished(top)`` is called between the spelling and the writing. The
    Collections and top-level Items whose ids are in ``keep`` are not written.
    """
    kind = pystac.CatalogType.RELATIVE_PUBLISHED if catalog_url else pystac.CatalogType.SELF_CONTAINED
    with _root_parent_fixed(top):
        top.normalize_hrefs(catalog_url.rstrip("/") if catalog_url else os.fspath(out_dir))
        with _root_self_href_fixed(top):
            if thumbnails:
                _write_thumbnails(*thumbnails, _local_dirs(out_dir, dest, catalog_url), storage_options)
            apply_href_policy(top, policy, _local_dirs(out_dir, out_dir, catalog_url))
            finished(top)
            if keep:
                _save_written(top, kind, _local_dirs(out_dir, dest, catalog_url), keep)
            else:
                top.save(kind, dest_href=os.fspath(dest))
            if catalog_url:
                _save_self_links(top, _local_dirs(out_dir, dest, catalog_url), keep)


def _root_self_href_fixed(top: pystac.Catalog) -> AbstractContextManager[None]:
    """Once normalized, ``top.get_self_href()`` answers from a copy instead of scanning the root's links.

    Every link of every document pystac writes, and of every location-free
    document made for the STAC API outputs, asks for its root's self href,
    found by a scan of the root's links, where the self link is last (after a
    child link per product): quadratic in the products (2.7 s of a
    1,000-product build). Nothing changes the root's self href after
    ``normalize_hrefs`` while the catalog is written.
    """
    return _answering(top, "get_self_href", top.get_self_href())


@contextmanager
def _root_parent_fixed(top: pystac.Catalog) -> Iterator[None]:
    """While normalized and written, ``top.get_parent()`` answers None instead of scanning the root's links.

    pystac keys its object cache by an object's ids up to its root when it
    has no self href yet (a first normalization): every Item asks each
    ancestor for its parent, and the root, which has none, scans every one of
    its links (a child link per product) to say so. Quadratic in the
    products: a third of the writing at 4,000. Raises
    :class:`~moczarr.errors.ArgumentError` for a root that has a parent.
    """
    if top.get_parent() is not None:
        raise ArgumentError(f"catalog {top.id!r} has a parent: only a root catalog is written")
    with _answering(top, "get_parent", None):
        yield


@contextmanager
def _answering(obj: pystac.STACObject, method: str, answer) -> Iterator[None]:
    """Inside the block, ``obj.<method>()`` returns ``answer`` (an instance attribute, removed after)."""
    setattr(obj, method, lambda: answer)
    try:
        yield
    finally:
        delattr(obj, method)


def _save_written(
    top: pystac.Catalog, kind: pystac.CatalogType, local_dir: Callable[[pystac.STACObject], Path], keep: frozenset[str]
) -> None:
    """``top.save(kind, dest)`` for every document but the kept ones (``keep``: Collection and top-level Item ids).

    The same documents pystac's save writes (a self link on the root alone,
    and only when ``kind`` is RELATIVE_PUBLISHED), each to ``local_dir(obj)``.
    """
    top.catalog_type = kind
    catalogs: list[pystac.Catalog] = [top]
    documents: list[tuple[pystac.STACObject, bool]] = []
    while catalogs:
        catalog = catalogs.pop()
        if catalog.id in keep and isinstance(catalog, pystac.Collection):
            continue
        documents.append((catalog, catalog is top and kind == pystac.CatalogType.RELATIVE_PUBLISHED))
        documents += [(item, False) for item in catalog.get_items() if catalog is not top or item.id not in keep]
        catalogs.extend(catalog.get_children())
    for obj, self_link in documents:
        href = obj.get_self_href()
        assert href is not None  # the catalog is normalized: every document has a self href
        obj.save_object(include_self_link=self_link, dest_href=os.fspath(local_dir(obj) / posixpath.basename(href)))


def _save_self_links(
    top: pystac.Catalog, local_dir: Callable[[pystac.STACObject], Path], keep: frozenset[str] = frozenset()
) -> None:
    """Write every Catalog and Collection below the root again (but the kept Collections), with its absolute self link.

    pystac's RELATIVE_PUBLISHED gives only the root one; a published document
    read on its own (a crawler, stac-check) is then not told where it lives.
    Links between documents stay relative.
    """
    below = {id(obj): obj for obj in [*top.get_children(), *top.get_all_collections()] if obj.id not in keep}
    for obj in below.values():
        href = obj.get_self_href()
        assert href is not None  # the catalog is normalized: every document has a self href
        name = posixpath.basename(href)
        obj.save_object(include_self_link=True, dest_href=os.fspath(local_dir(obj) / name))


def _local_dirs(out_dir: Path, dest: Path, catalog_url: str | None) -> Callable[[pystac.STACObject], Path]:
    """The folder under ``dest`` of each document whose self href lies under ``catalog_url`` or ``out_dir``."""
    base = catalog_url.rstrip("/") if catalog_url else os.path.abspath(out_dir)

    def folder(obj: pystac.STACObject) -> Path:
        href = obj.get_self_href()
        assert href is not None  # the catalog is normalized: every document has a self href
        rel = href[len(base) :].lstrip("/") if catalog_url else os.path.relpath(href, base)
        return (Path(dest) / rel).parent

    return folder


def _write_thumbnails(built, moraine_items, local_dir, storage_options) -> None:
    """A quicklook PNG per hive level Item (its first dense variable) and Collection, and per moraine Item."""
    for prod, collection in built:
        folder = local_dir(collection)
        folder.mkdir(parents=True, exist_ok=True)
        drew_any = False
        for item in collection.get_items():
            hint = item.assets["data"].extra_fields["xarray:open_kwargs"]
            item_dir = local_dir(item)
            item_dir.mkdir(parents=True, exist_ok=True)
            what = draw_level_thumbnail(
                prod.product_root,
                hint["cell_order"],
                item_dir / "thumbnail.png",
                window=hint.get("window"),
                all_time=bool(hint.get("all_time")),
                storage_options=storage_options,
            )
            if what:
                item.add_asset(
                    "thumbnail",
                    pystac.Asset(
                        href="./thumbnail.png", title=f"quicklook: {what}", media_type=PNG_TYPE, roles=["thumbnail"]
                    ),
                )
                drew_any = True
        target = next((i for i in collection.get_items() if "thumbnail" in i.assets), None)
        if drew_any and target is not None:
            rel = os.path.relpath(local_dir(target) / "thumbnail.png", folder).replace(os.sep, "/")
            collection.add_asset(
                "thumbnail",
                pystac.Asset(
                    href=rel, title=target.assets["thumbnail"].title, media_type=PNG_TYPE, roles=["thumbnail"]
                ),
            )
        elif draw_thumbnail(prod.summary, folder / "thumbnail.png", geometry=prod.geometry):
            collection.add_asset(
                "thumbnail",
                pystac.Asset(
                    href="./thumbnail.png",
                    title="coverage quicklook (no level could be drawn)",
                    media_type=PNG_TYPE,
                    roles=["thumbnail"],
                ),
            )
    for m, item in moraine_items:
        folder = local_dir(item)
        folder.mkdir(parents=True, exist_ok=True)
        what = draw_moraine_thumbnail(m.info, folder / "thumbnail.png", storage_options=storage_options)
        if what:
            item.add_asset(
                "thumbnail",
                pystac.Asset(
                    href="./thumbnail.png", title=f"quicklook: {what}", media_type=PNG_TYPE, roles=["thumbnail"]
                ),
            )


def apply_href_policy(
    catalog: pystac.Catalog, policy: HrefPolicy, local_dir: Callable[[pystac.STACObject], Path] | None = None
) -> None:
    """Spell every store address of a normalized catalog by ``policy``: asset hrefs, open hints, ``moczarr:store_root``.

    ``local_dir(obj)``: the folder each document is written to (default: its self href's folder).
    A store inside the catalog folder becomes relative to each document; with
    ``href_base`` others become published URLs; URLs stay as given (see
    :class:`~moczarr_intake.model.hrefs.HrefPolicy` for the percent-encoding). An
    asset whose href is ``http(s)://`` loses its ``xarray:storage_options``
    (:func:`moczarr_intake.model.access.href_storage_options`).
    """

    def own_dir(obj: pystac.STACObject) -> Path:
        href = obj.get_self_href()
        assert href is not None  # the catalog is normalized: every document has a self href
        return Path(href).parent

    local_dir = local_dir or own_dir

    def spell(value, owner_dir: Path):
        if isinstance(value, str) and (is_remote(value) or os.path.isabs(value)):
            return policy.stac_href(value, owner_dir)
        return value

    documents: list[pystac.Catalog | pystac.Item] = [
        catalog,
        *catalog.get_children(),
        *catalog.get_all_collections(),
        *catalog.get_items(recursive=True),
    ]
    for obj in documents:
        obj_dir = local_dir(obj)
        fields = obj.properties if isinstance(obj, pystac.Item) else obj.extra_fields
        if "moczarr:store_root" in fields:
            fields["moczarr:store_root"] = spell(fields["moczarr:store_root"], obj_dir)
        for asset in getattr(obj, "assets", {}).values():
            if asset.href.startswith("./") or asset.href.startswith("../"):
                continue
            asset.href = spell(asset.href, obj_dir)
            if is_http(asset.href):  # an HTTP reader takes no S3 option: it needs only the address
                asset.extra_fields.pop("xarray:storage_options", None)
            hint = asset.extra_fields.get("moczarr:open")
            if isinstance(hint, dict):
                for key in ("store_root", "path"):
                    if key in hint.get("kwargs", {}):
                        hint["kwargs"][key] = spell(hint["kwargs"][key], obj_dir)


def _progress(progress):
    """``(report(kind, name), bar or None)`` for ``build_stac(progress=...)``."""
    if callable(progress):
        return progress, None
    if not progress:
        return (lambda kind, name: None), None
    bar = tqdm(desc="STAC products", unit="product", file=sys.stderr)

    def report(kind: str, name: str) -> None:
        if kind == "product":
            bar.set_postfix_str(name.rstrip("/").rsplit("/", 1)[-1])
            bar.update(1)

    return report, bar
