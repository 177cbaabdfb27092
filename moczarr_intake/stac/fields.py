"""The fields of the STAC documents of a product: what a store's summary says, as plain JSON values.

Everything here is computed from :class:`moczarr.metadata.ProductSummary` without
I/O; :mod:`.documents` puts the fields into Items and Collections.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

import mortie
import numpy as np
import pystac

from moczarr.metadata import (
    MANIFEST_NAME,
    ROOT_MOC_NAME,
    LevelInfo,
    ProductSummary,
    geometry_bbox,
    normalize_location,
    parse_time,
    to_words,
)

from ..model.access import public_storage_options

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
class Product:
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


def _coverage_nodes(prod: Product, order: int) -> tuple[int, int, int]:
    """``(count, lowest, highest)`` NESTED ids of the root coverage's nodes at ``order`` (once per order and product:
    every level and window of a product shares them)."""
    if order not in prod.coverage_nodes:
        nodes = sorted({d[: (2 if d.startswith("-") else 1) + order] for d in prod.summary.shards})
        nested, _ = mortie.mort2healpix(to_words(nodes))
        nested = np.atleast_1d(np.asarray(nested, dtype=np.int64))
        prod.coverage_nodes[order] = (len(nodes), int(nested.min()), int(nested.max()))
    return prod.coverage_nodes[order]


def cells_dimension(prod: Product, cell_order: int, node_order: int) -> dict:
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


def cube_variables(p: ProductSummary, names: list[str], derived_fields: dict | None, derived: bool) -> dict:
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


def set_cube(props: dict, prod: Product, level: LevelInfo) -> set[str]:
    """The datacube fields of a level Item (``cells``, ``time`` when a variable has it); returns the extensions."""
    p = prod.summary
    fields = p.declaration.fields if p.declaration else None
    dims = {"cells": cells_dimension(prod, level.cell_order, level.node_order)}
    variables = cube_variables(p, level.variables, fields, level.artifact != "source")
    if any("time" in v["dimensions"] for v in variables.values()):
        dims["time"] = {"type": "temporal", "extent": [props.get("start_datetime"), props.get("end_datetime")]}
    props["cube:dimensions"] = dims
    props["cube:variables"] = variables
    return {DATACUBE}


def set_time(props: dict, p: ProductSummary, generated_at, span, window, all_time) -> None:
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


def json_copy(value):
    """A deep copy of a JSON-like value."""
    return json.loads(json.dumps(value))


def storage_scheme(root: str, storage_options: dict | None) -> tuple[str, dict] | None:
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


def make_product(
    p: ProductSummary,
    collection_id: str,
    store_root: str,
    products_arg: list[str] | None,
    sizes: dict[str, int | None],
    storage_options: dict | None,
    *,
    title: str | None = None,
    store_label: str | None = None,
) -> Product:
    geometry = p.footprint
    bbox = geometry_bbox(geometry) if geometry else p.bbox
    return Product(
        summary=p,
        collection_id=collection_id,
        store_root=normalize_location(store_root),
        product_root=normalize_location(p.root),
        products_arg=products_arg,
        sizes=sizes,
        scheme=storage_scheme(p.root, storage_options),
        geometry=geometry,
        bbox=bbox,
        title=title or product_title(p, None),
        store_label=store_label or collection_id,
        public_options=public_storage_options(storage_options),
    )


def product_title(p: ProductSummary, store_label: str | None) -> str:
    """``"ATL06 v006: atl06"``, plus ``" in store {label}"`` when several stores hold a product of this name."""
    short, version = p.dataset.get("short_name"), p.dataset.get("version")
    head = f"{short or p.name}" + (f" v{version}" if version not in (None, "") else "")
    text = head if (short or "").lower() == p.name else f"{head}: {p.name}"
    return text + (f" in store {store_label}" if store_label else "")


def providers(p: ProductSummary) -> list[dict] | None:
    """Providers the manifest records (``providers`` at the top or in ``dataset``), as STAC provider objects."""
    raw = p.manifest.raw.get("providers") or p.dataset.get("providers")
    if not isinstance(raw, list):
        return None
    out: list[dict] = []
    for entry in raw:
        if isinstance(entry, str):
            out.append({"name": entry})
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            roles = [r for r in entry.get("roles") or [] if r in ("licensor", "producer", "processor", "host")]
            provider = {"name": entry["name"], "description": entry.get("description"), "roles": roles or None}
            provider["url"] = entry.get("url")
            out.append({k: v for k, v in provider.items() if v is not None})  # as pystac.Provider writes it
    return out or None


def product_license(p: ProductSummary, default: str | None, default_url: str | None) -> tuple[str, str | None]:
    """``(license, license link href or None)``: the manifest's license when it records one, else the build's.

    An SPDX identifier stays the license; a URL becomes ``"other"`` with a ``license`` link.
    Without any, ``"other"`` (and no link: nothing says what the terms are).
    """
    value = p.manifest.raw.get("license") or p.dataset.get("license") or default
    url = p.manifest.raw.get("license_url") or p.dataset.get("license_url") or default_url
    if isinstance(value, str) and "://" in value:
        return "other", value
    return (value if isinstance(value, str) and value else "other"), url if isinstance(url, str) else None


def temporal_extent(p: ProductSummary, known: list) -> list[list]:
    """Windowed: the overall span, then one interval per window; else the recorded time range, or unknown."""
    if known:
        return [[known[0][0], max(b for _, b in known)]] + ([list(iv) for iv in known] if len(known) > 1 else [])
    if p.time_range and all(parse_time(t) for t in p.time_range):
        return [[parse_time(p.time_range[0]), parse_time(p.time_range[1])]]
    return [[None, None]]


def collection_description(prod: Product, timed: bool) -> str:
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


def collection_summaries(p: ProductSummary) -> dict[str, Any]:
    out: dict[str, Any] = {
        "moczarr:cell_order": [lv.cell_order for lv in p.levels],
        "moczarr:artifact": sorted({lv.artifact for lv in p.levels}),
        "gsd": [lv.resolution_km * 1000.0 for lv in p.levels],
    }
    if p.windowed and p.windows:
        out["moczarr:window"] = list(p.windows)
    return out


def collection_fields(prod: Product) -> tuple[dict[str, Any], set[str]]:
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
        extra["cube:dimensions"] = {"cells": cells_dimension(prod, native.cell_order, native.node_order)}
        names = list(dict.fromkeys(n for lv in p.levels for n in lv.variables))
        extra["cube:variables"] = cube_variables(p, names, p.declaration.fields if p.declaration else None, False)
        extensions.add(DATACUBE)
    generated = parse_time(p.manifest.generated_at) if p.manifest.generated_at else None
    if generated:
        extra["created"] = iso(generated)
    set_version_and_scheme(extra, extensions, prod)
    return extra, extensions


def set_version_and_scheme(fields: dict, extensions: set, prod: Product) -> None:
    """The dataset's ``version`` and the product's ``storage:schemes`` (with their extensions), where known."""
    version = prod.summary.dataset.get("version")
    if version is not None:
        fields["version"] = str(version)
        extensions.add(VERSION)
    if prod.scheme:
        fields["storage:schemes"] = {prod.scheme[0]: prod.scheme[1]}
        extensions.add(STORAGE)


def asset_sizes(p: ProductSummary) -> dict[str, int | None]:
    """Asset name -> bytes of the root objects the summary read (a summary made by hand records none)."""
    if not p.object_sizes:
        return {"manifest": None, **({"coverage": None} if p.coverage_usable else {})}
    return {
        key: p.object_sizes[name]
        for key, name in (("manifest", MANIFEST_NAME), ("coverage", ROOT_MOC_NAME))
        if name in p.object_sizes
    }


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
