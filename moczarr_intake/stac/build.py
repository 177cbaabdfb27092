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
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mortie
import numpy as np
import pystac
from tqdm import tqdm

from moczarr.metadata import (
    MANIFEST_NAME,
    ROOT_MOC_NAME,
    ProductSummary,
    StoreSummary,
    geometry_bbox,
    is_remote,
    join_location,
    normalize_location,
    parse_time,
    summarize_store,
    to_words,
    window_interval,
)

from .geoparquet import write_geoparquet
from .moraine import moraine_stac_item
from .thumbnails import PNG_TYPE, draw_thumbnail

#: media type of the ``data`` asset: the store root of a morton-hive zarr v3 store
MEDIA_TYPE = "application/vnd+zarr; version=3; profile=morton-hive"
JSON_TYPE = "application/json"

DATACUBE = "https://stac-extensions.github.io/datacube/v2.2.0/schema.json"
VERSION = "https://stac-extensions.github.io/version/v1.2.0/schema.json"
FILE = "https://stac-extensions.github.io/file/v2.1.0/schema.json"
STORAGE = "https://stac-extensions.github.io/storage/v2.0.0/schema.json"

#: the reader calls an open hint names (open_stac calls nothing else; the module paths are accepted too)
OPEN_LEVEL = "moczarr.open_level"
OPEN_STORE = "moczarr.open_store"

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(text: str) -> str:
    return _ID_UNSAFE.sub("-", text).strip("-") or "store"


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


def _cells_dimension(p: ProductSummary, cell_order: int, node_order: int) -> dict:
    """The ``cells`` dimension: the NESTED id range and the size of the level's cell domain."""
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
    nodes = sorted({d[: (2 if d.startswith("-") else 1) + order] for d in p.shards})
    nested, _ = mortie.mort2healpix(to_words(nodes))
    nested = np.atleast_1d(np.asarray(nested, dtype=np.int64))
    per = 4 ** (cell_order - order)  # NESTED: the children of id n at the next order are 4n..4n+3
    dim["extent"] = [int(nested.min()) * per, int(nested.max()) * per + per - 1]
    dim["description"] = (
        f"{res}, {rows}; at most {len(nodes) * per} cells: the {len(nodes)} order-{order} node(s) "
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


def _level_items(prod: _Product, now: dt.datetime) -> list[pystac.Item]:
    p = prod.summary
    manifest, decl = p.manifest, p.declaration
    fields = decl.fields if decl else None
    windows: list[tuple[str | None, bool]] = [(w, False) for w in p.windows] if p.windowed else [(None, False)]
    intervals = {w: window_interval(w, p.schedule, manifest.temporal) for w in p.windows}
    known = [iv for iv in intervals.values() if iv]
    all_time_span = (min(a for a, _ in known), max(b for _, b in known)) if known else None
    items = []
    for level in p.levels:
        targets = list(windows)
        if p.windowed and level.artifact == "overview" and decl and decl.all_time:
            targets.append((None, True))
        for window, all_time in targets:
            suffix = f"-{window}" if window else ("-all" if all_time else "")
            item_id = f"{prod.collection_id}-o{level.cell_order}{suffix}"
            props: dict[str, Any] = {
                "title": f"{p.name} o{level.cell_order} ({level.artifact})"
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
            span = intervals.get(window) if window else (all_time_span if all_time else None)
            _set_time(props, p, manifest.generated_at, span, window, all_time, now)
            dims = {"cells": _cells_dimension(p, level.cell_order, level.node_order)}
            variables = _cube_variables(p, level.variables, fields, level.artifact != "source")
            if any("time" in v["dimensions"] for v in variables.values()):
                dims["time"] = {"type": "temporal", "extent": [props.get("start_datetime"), props.get("end_datetime")]}
            props["cube:dimensions"] = dims
            props["cube:variables"] = variables
            extensions = {DATACUBE}
            if p.dataset.get("version") is not None:
                props["version"] = str(p.dataset["version"])
                extensions.add(VERSION)
            if prod.scheme:
                props["storage:schemes"] = {prod.scheme[0]: prod.scheme[1]}
                extensions.add(STORAGE)
            item = pystac.Item(
                id=item_id,
                geometry=prod.geometry,
                bbox=prod.bbox if prod.geometry else None,
                datetime=parse_time(props.pop("datetime", None)),
                properties=props,
            )
            hint = {"store_root": prod.product_root, "cell_order": level.cell_order, "window": window}
            if all_time:
                hint["all_time"] = True
            extensions |= _add_assets(item, prod, {"function": OPEN_LEVEL, "kwargs": hint})
            item.stac_extensions = sorted(extensions)
            items.append(item)
    return items


def _set_time(props: dict, p: ProductSummary, generated_at, span, window, all_time, now) -> None:
    """``datetime`` / ``start_datetime`` / ``end_datetime`` of an Item, and where they come from."""
    if span is not None:
        props["datetime"] = None
        props["start_datetime"], props["end_datetime"] = iso(span[0]), iso(span[1])
        props["moczarr:datetime_source"] = "window"
        props["description"] = (
            ("the cross-window (all-time) folds; " if all_time else f"window {window}: ")
            + "end_datetime is the exclusive end of the half-open [start, end) window interval"
        )
        return
    recorded = [parse_time(t) for t in (p.time_range or [])]
    if len(recorded) == 2 and all(recorded) and not window:
        props["datetime"] = None
        props["start_datetime"], props["end_datetime"] = iso(recorded[0]), iso(recorded[1])
        props["moczarr:datetime_source"] = "time_range"
        props["description"] = "start/end_datetime: the time range recorded in the root coverage.moc"
        return
    generated = parse_time(generated_at)
    if generated is not None:
        props["datetime"] = iso(generated)
        props["moczarr:datetime_source"] = "generated_at"
        props["description"] = (
            "datetime is the product's generation time (manifest generated_at), not an observation time: "
            "the store records no time range" + (f" for window {window}" if window else "")
        )
    else:
        props["datetime"] = iso(now)
        props["moczarr:datetime_source"] = "catalog_build"
        props["description"] = (
            "datetime is the time this catalog was built: the store records neither a time range nor a "
            "generation time"
        )


def _add_assets(owner, prod: _Product, hint: dict) -> set[str]:
    """``data`` (with the open hint), ``manifest`` and ``coverage`` assets; returns the extensions used."""
    extensions: set[str] = set()
    root = prod.summary.root
    data = pystac.Asset(
        href=normalize_location(root),
        title=f"morton-hive store root of {prod.summary.name}",
        media_type=MEDIA_TYPE,
        roles=["data"],
        extra_fields={"moczarr:open": hint},
    )
    assets = {"data": data}
    for key, name, title in (
        ("manifest", MANIFEST_NAME, "morton-hive manifest"),
        ("coverage", ROOT_MOC_NAME, "root coverage MOC (morton-moc/1 ranges envelope)"),
    ):
        if key not in prod.sizes:
            continue
        asset = pystac.Asset(href=join_location(normalize_location(root), name), title=title, media_type=JSON_TYPE, roles=["metadata"])
        if prod.sizes[key] is not None:
            asset.extra_fields["file:size"] = int(prod.sizes[key])
            extensions.add(FILE)
        assets[key] = asset
    for key, asset in assets.items():
        if prod.scheme:
            asset.extra_fields["storage:refs"] = [prod.scheme[0]]
        owner.add_asset(key, asset)
    return extensions


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
    )


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
    ``storage_options`` only feeds the storage extension (nothing secret is written).
    """
    if sizes is None:
        sizes = {"manifest": None, **({"coverage": None} if product.coverage_usable else {})}
    prod = _product(
        product, collection_id or slug(product.name), store_root or product.root, products_arg, sizes, storage_options
    )
    return _collection(prod, dt.datetime.now(dt.timezone.utc))


def _collection(prod: _Product, now: dt.datetime) -> pystac.Collection:
    p = prod.summary
    manifest = p.manifest
    items = _level_items(prod, now)
    intervals = [window_interval(w, p.schedule, manifest.temporal) for w in p.windows]
    known = sorted(iv for iv in intervals if iv)
    if known:
        temporal = [[known[0][0], max(b for _, b in known)]] + ([list(iv) for iv in known] if len(known) > 1 else [])
    elif p.time_range and all(parse_time(t) for t in p.time_range):
        temporal = [[parse_time(p.time_range[0]), parse_time(p.time_range[1])]]
    else:
        temporal = [[None, None]]
    bbox = prod.bbox or [-180.0, -90.0, 180.0, 90.0]
    short, version = p.dataset.get("short_name"), p.dataset.get("version")
    description = (
        f"{short or p.name}{f' version {version}' if version else ''}: product '{p.name}' of the morton-hive "
        f"store {prod.store_root} ({p.spec}; HEALPix cells at order {p.cell_order} in leaves at order "
        f"{p.shard_order}; levels {', '.join(f'o{lv.cell_order} ({lv.artifact})' for lv in p.levels)}"
        + (f"; {p.schedule} windows {', '.join(p.windows)}" if p.windowed else "")
        + ")."
        + ("" if prod.geometry else " Spatial extent unknown: no usable root coverage.moc.")
    )
    summaries: dict[str, Any] = {
        "moczarr:cell_order": [lv.cell_order for lv in p.levels],
        "moczarr:artifact": sorted({lv.artifact for lv in p.levels}),
        "gsd": [lv.resolution_km * 1000.0 for lv in p.levels],
    }
    if p.windowed and p.windows:
        summaries["moczarr:window"] = list(p.windows)
    extra: dict[str, Any] = {
        "moczarr:product": p.name,
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
    if version is not None:
        extra["version"] = str(version)
        extensions.add(VERSION)
    if prod.scheme:
        extra["storage:schemes"] = {prod.scheme[0]: prod.scheme[1]}
        extensions.add(STORAGE)
    collection = pystac.Collection(
        id=prod.collection_id,
        description=description,
        extent=pystac.Extent(pystac.SpatialExtent([bbox]), pystac.TemporalExtent(temporal)),
        title=f"{short or p.name} {version or ''} ({p.name})".replace("  ", " "),
        license="other",
        keywords=[k for k in ("morton-hive", "HEALPix", "zarr", short) if k],
        summaries=pystac.Summaries(summaries),
        extra_fields=extra,
    )
    kwargs: dict[str, Any] = {"store_root": prod.store_root}
    if prod.products_arg is not None:
        kwargs["products"] = list(prod.products_arg)
    extensions |= _add_assets(collection, prod, {"function": OPEN_STORE, "kwargs": kwargs})
    collection.stac_extensions = sorted(extensions)
    for item in items:
        collection.add_item(item)
    return collection


def _path_parts(root: str) -> list[str]:
    text = root.split("://", 1)[1] if is_remote(root) else os.path.abspath(root)
    return [x for x in text.replace("\\", "/").split("/") if x] or ["store"]


def _root_labels(roots: list[str]) -> list[str]:
    """The shortest path suffix (slugged) naming each root uniquely."""
    parts = [_path_parts(r) for r in roots]
    depth = [1] * len(roots)
    while True:
        labels = [slug("-".join(ps[-d:])) for ps, d in zip(parts, depth)]
        seen: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            seen.setdefault(label, []).append(i)
        clash = [i for group in seen.values() if len(group) > 1 for i in group if depth[i] < len(parts[i])]
        if not clash:
            return _dedupe(labels)
        for i in clash:
            depth[i] += 1


def _dedupe(names: list[str]) -> list[str]:
    out, used = [], set()
    for name in names:
        candidate, n = name, 2
        while candidate in used:
            candidate, n = f"{name}-{n}", n + 1
        used.add(candidate)
        out.append(candidate)
    return out


def _sizes(p: ProductSummary) -> dict[str, int | None]:
    """Asset name -> bytes of the root objects the summary read (a summary made by hand records none)."""
    if not p.object_sizes:
        return {"manifest": None, **({"coverage": None} if p.coverage_usable else {})}
    return {key: p.object_sizes[name] for key, name in (("manifest", MANIFEST_NAME), ("coverage", ROOT_MOC_NAME)) if name in p.object_sizes}


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
) -> pystac.Catalog:
    """A static STAC catalog over one or many morton-hive store roots (local or ``s3://``).

    ``roots``: a root, or a list of roots (an element may also be a
    :class:`StoreSummary`); ``summaries``: summaries already made, added after
    ``roots``. Summaries made by :func:`summarize_for_catalog` (what ``roots``
    uses) carry object sizes, so their manifest and coverage assets get
    ``file:size``; plain :func:`summarize_store` summaries do not.

    Each multi-product root becomes a child Catalog holding one Collection per
    product; each bare store becomes a Collection under the top Catalog.
    Collection ids are product names, prefixed with the root's shortest unique
    path label when two stores hold products of one name. ``moraine``:
    :class:`moczarr_moraine.MorainePyramid` infos, each added as an Item
    (:func:`moczarr_intake.moraine_catalog.moraine_stac_item`) under the top
    Catalog. When ``out_dir`` is given the hrefs are normalized there and the
    catalog is saved self-contained, its Items also as stac-geoparquet
    (``items.parquet``, :func:`.geoparquet.write_geoparquet`); ``thumbnails=True`` (needs ``out_dir``)
    writes a coverage quicklook PNG per Collection. ``progress``: True for a
    progress bar over products (stderr), or a callable ``progress(kind, name)``
    called after each store (``"store"``) and each product (``"product"``).
    Returns the top Catalog. Only summaries read the stores: no request is
    made here beyond theirs.
    """
    if isinstance(roots, (str, os.PathLike, StoreSummary)):
        roots = [roots]
    items = list(roots or []) + list(summaries or [])
    moraine = list(moraine or [])
    if not items and not moraine:
        raise ValueError("build_stac needs at least one store root (or summary)")
    if thumbnails and out_dir is None:
        raise ValueError("thumbnails=True writes PNG files: pass out_dir")
    report, bar = _progress(progress, items)
    stores: list[StoreSummary] = []
    for root in items:
        store = root if isinstance(root, StoreSummary) else summarize_store(root, storage_options)
        stores.append(store)
        report("store", store.root)
    locations = [normalize_location(s.root) for s in stores]
    if len(set(locations)) != len(locations):
        raise ValueError(f"a store root is given twice: {locations}")
    labels = _root_labels([s.root for s in stores]) if stores else []
    names = [p.name for s in stores for p in s.products]
    if bar is not None:
        bar.total = len(names)
        bar.refresh()
    # every id that may name a folder is made unique across the whole catalog
    wanted = [labels[i] for i, s in enumerate(stores) if s.layout == "multi"]
    wanted += [slug(p.name) if names.count(p.name) == 1 else slug(f"{labels[i]}-{p.name}") for i, s in enumerate(stores) for p in s.products]
    unique = iter(_dedupe(wanted))
    sub_ids = {i: next(unique) for i, s in enumerate(stores) if s.layout == "multi"}
    now = dt.datetime.now(dt.timezone.utc)
    top = pystac.Catalog(
        id=catalog_id,
        title=title or f"moczarr catalog of {len(stores)} morton-hive store(s)",
        description="Morton-hive zarr stores (sparse HEALPix datasets): a Collection per product, an Item per "
        "resolution level (and window). Open any of them with moczarr_intake.open_stac.",
    )
    built: list[tuple[_Product, pystac.Collection]] = []
    for i, store in enumerate(stores):
        multi = store.layout == "multi"
        collections = []
        for p in store.products:
            prod = _product(p, next(unique), store.root, [p.name] if multi else None, _sizes(p), storage_options)
            collections.append(_collection(prod, now))
            built.append((prod, collections[-1]))
            report("product", p.root)
        if multi:
            sub = pystac.Catalog(
                id=sub_ids[i],
                title=f"morton-hive store {normalize_location(store.root)}",
                description=f"Multi-product morton-hive store {normalize_location(store.root)}: products "
                + ", ".join(p.name for p in store.products),
                extra_fields={
                    "moczarr:store_root": normalize_location(store.root),
                    "moczarr:products": [p.name for p in store.products],
                },
            )
            for c in collections:
                sub.add_child(c)
            top.add_child(sub)
        else:
            for c in collections:
                top.add_child(c)
    if moraine:
        taken = {c.id for c in top.get_children()}
        for info in moraine:
            item = moraine_stac_item(info, storage_options=storage_options)
            item.id = _dedupe([*taken, slug(item.id)])[-1]
            taken.add(item.id)
            item.properties["moczarr:store_root"] = info.path
            top.add_item(item)
    if bar is not None:
        bar.close()
    if out_dir is not None:
        top.normalize_hrefs(os.fspath(out_dir))
        if thumbnails:
            for prod, collection in built:
                folder = Path(collection.get_self_href()).parent
                folder.mkdir(parents=True, exist_ok=True)
                if draw_thumbnail(prod.summary, folder / "thumbnail.png", geometry=prod.geometry):
                    collection.add_asset(
                        "thumbnail",
                        pystac.Asset(href="./thumbnail.png", title="coverage quicklook", media_type=PNG_TYPE, roles=["thumbnail"]),
                    )
        if relative_to is not None:
            relativize_local_hrefs(top, Path(relative_to))
        top.save(pystac.CatalogType.SELF_CONTAINED)
        write_geoparquet(top, Path(out_dir) / "items.parquet")  # the file a STAC API server loads
    return top


def relativize_local_hrefs(catalog: pystac.Catalog, base: Path) -> None:
    """Rewrite absolute hrefs (assets and open hints) of local stores under ``base`` relative to each document.

    Lets a catalog folder that holds its stores (``catalogs/`` with ``catalogs/sample``) move as a whole;
    :func:`open_stac` resolves a relative hint against the document's own location.
    """
    base = base.resolve()

    def rel(value, owner_dir: Path):
        if isinstance(value, str) and not is_remote(value) and os.path.isabs(value) and Path(value).resolve().is_relative_to(base):
            return os.path.relpath(value, owner_dir)
        return value

    prefix = str(base) + os.sep
    for obj in [catalog, *catalog.get_children(), *catalog.get_all_collections(), *catalog.get_items(recursive=True)]:
        obj_dir = Path(obj.get_self_href()).parent
        fields = obj.properties if isinstance(obj, pystac.Item) else obj.extra_fields
        if "moczarr:store_root" in fields:
            fields["moczarr:store_root"] = rel(fields["moczarr:store_root"], obj_dir)
        for attr in ("title", "description"):
            text = getattr(obj, attr, None)
            if isinstance(text, str) and prefix in text:
                setattr(obj, attr, text.replace(prefix, ""))
    owners = [*catalog.get_all_collections(), *catalog.get_items(recursive=True)]
    for owner in owners:
        owner_dir = Path(owner.get_self_href()).parent
        for asset in owner.assets.values():
            asset.href = rel(asset.href, owner_dir)
            hint = asset.extra_fields.get("moczarr:open")
            if isinstance(hint, dict) and "store_root" in hint.get("kwargs", {}):
                hint["kwargs"]["store_root"] = rel(hint["kwargs"]["store_root"], owner_dir)


def _progress(progress, items: list):
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


def stac_hrefs(catalog: pystac.Catalog) -> dict[str, str | None]:
    """``{root: self href}`` of every Collection (product root) and moraine Item (pyramid path) of a catalog.

    Roots are as the documents record them (``moczarr:store_root``: local
    paths absolute, URLs as given); hrefs are None before the catalog is saved
    or normalized.
    """
    out = {}
    for collection in catalog.get_all_collections():
        root = collection.extra_fields.get("moczarr:store_root")
        if root:
            out[root] = collection.get_self_href()
    for item in catalog.get_items():
        root = item.properties.get("moczarr:store_root")
        if root:
            out[root] = item.get_self_href()
    return out
