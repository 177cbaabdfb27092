"""A tiny, deterministic sample store for the README demo and the example Intake catalogs.

:func:`write_sample_store` synthesizes ICESat-2-like elevation points (a few
ground-track passes of three beam pairs around the Chesapeake Bay, lat 38.9,
lon -76.5) from a seeded numpy RNG, aggregates them per HEALPix cell and writes
a **multi-product root** (FORMAT.md §3: no manifest of its own) holding:

``elevation``
    ``morton-hive/1``, shard order 6, cell order 8 (16 cells per leaf), fields
    ``count``/``h_min``/``h_max`` (exact) and ``h_mean`` (class ``none``), a
    ``zagg-pyramid/1`` declaration with orders [4, 2] and its swept ``all.zarr``
    overviews at every covered ancestor node (FORMAT.md §7.3, §7.8).
``elevation_yearly``
    ``morton-hive/2`` (schedule ``yearly``) holding the same points split into
    windows ``2019`` and ``2020`` (leaves ``{id}_{window}.zarr``); pyramid
    declared off.

Beside the products, ``sample.json`` records what the store must hold,
computed from the input points (never from the written arrays): leaf rosters,
per-leaf counts and occupancy, totals, overview nodes and per-level totals.

The output is byte-for-byte reproducible for a given seed and library set:
timestamps are fixed, JSON is written with a fixed key order, and nothing
depends on the clock, the host or a network. mortie does all morton
arithmetic; this module only lays the objects out as the format describes.
The input points are :mod:`moczarr.testing.points`; the small records every
writer shares (paths, boxes, root ranges, content hashes, ``dggs``
attributes, bitmap sidecars) are :mod:`moczarr.testing.records`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TypedDict

import mortie
import numpy as np
import zarr

from .points import BEAMS, GRANULES, REGION, synthetic_points
from .records import (
    bitmap_sidecar,
    children,
    content_hashes,
    coverage_box,
    decimals,
    dggs_attrs,
    leaf_path,
    node_path,
    root_ranges,
)

__all__ = [
    "CELL_ORDER",
    "OVERVIEW_ORDERS",
    "PRODUCTS",
    "SHARD_ORDER",
    "WINDOWS",
    "bitmap_sidecar",
    "content_hashes",
    "coverage_box",
    "dggs_attrs",
    "fold",
    "leaf_path",
    "root_ranges",
    "synthetic_points",
    "write_sample_store",
]

SHARD_ORDER = 6
CELL_ORDER = 8
OVERVIEW_ORDERS = (4, 2)  # descending, as configs write them
SPACING = 2
WINDOWS = ("2019", "2020")
PRODUCTS = ("elevation", "elevation_yearly")
EXPECTATIONS_NAME = "sample.json"
GENERATOR = "moczarr.sample"  # the name recorded in sample.json; kept so the committed sample stays byte-stable

# Fixed clocks: the store's only timestamps (determinism).
TEMPLATE_AT = "2025-01-01T00:00:00+00:00"
LEAF_WRITTEN_AT = "2025-01-01T00:00:01+00:00"
ROOT_MOC_AT = "2025-01-01T00:00:02+00:00"
SWEEP_AT = "2025-01-01T00:00:03+00:00"

DATASET = {"short_name": "MOCZARR_SAMPLE", "version": "1"}


class _FieldSpec(TypedDict, total=False):
    function: str
    source: str
    dtype: str
    fill_value: int | str


#: Aggregation fields: the semantic core (dtypes, fills, functions) hashed into ``semantic_hash``.
FIELDS: dict[str, _FieldSpec] = {
    "count": {"function": "count", "dtype": "int32", "fill_value": 0},
    "h_min": {"function": "min", "source": "h_li", "dtype": "float32", "fill_value": "NaN"},
    "h_max": {"function": "max", "source": "h_li", "dtype": "float32", "fill_value": "NaN"},
    "h_mean": {"function": "mean", "source": "h_li", "dtype": "float32", "fill_value": "NaN"},
}
FIELD_NAMES = tuple(FIELDS)
EXACT_FIELDS = ("count", "h_min", "h_max")
#: the manifest's per-field composability declaration (FORMAT.md §7.3)
PYRAMID_FIELDS: dict[str, dict[str, str | int]] = {
    "count": {"class": "exact", "method": "sum", "nan_policy": "skip", "dtype": "int32", "fill_value": 0},
    "h_min": {"class": "exact", "method": "min", "nan_policy": "skip", "dtype": "float32", "fill_value": "NaN"},
    "h_max": {"class": "exact", "method": "max", "nan_policy": "skip", "dtype": "float32", "fill_value": "NaN"},
    "h_mean": {"class": "none"},
}


# -- aggregation ----------------------------------------------------------------------------------------
def _aggregate(words: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per occupied order-8 cell (ascending word): count, min, max and mean of ``h``."""
    cells, inverse = np.unique(words, return_inverse=True)
    n = cells.size
    count = np.bincount(inverse, minlength=n).astype(np.int32)
    h_min = np.full(n, np.inf, dtype=np.float32)
    h_max = np.full(n, -np.inf, dtype=np.float32)
    np.minimum.at(h_min, inverse, h)
    np.maximum.at(h_max, inverse, h)
    h_mean = (np.bincount(inverse, weights=h.astype(np.float64), minlength=n) / count).astype(np.float32)
    return cells, {"count": count, "h_min": h_min, "h_max": h_max, "h_mean": h_mean}


def _fill_of(name: str) -> np.generic:
    spec = FIELDS[name]
    return np.dtype(spec["dtype"]).type(np.nan if spec["fill_value"] == "NaN" else spec["fill_value"])


def _dense(slots: np.ndarray, n: int, values: dict[str, np.ndarray], names) -> dict[str, np.ndarray]:
    """Dense slabs of ``n`` cells with ``values`` placed at ``slots``, the rest at each field's fill."""
    out = {}
    for name in names:
        arr = np.full(n, _fill_of(name), dtype=FIELDS[name]["dtype"])
        arr[slots] = values[name]
        out[name] = arr
    return out


def fold(slab: dict[str, np.ndarray], group: int) -> dict[str, np.ndarray]:
    """Exact-class fold of dense slabs by ``group`` cells (sum / min / max, nan_policy skip)."""
    count = slab["count"].reshape(-1, group).sum(axis=1, dtype=np.int64).astype(np.int32)
    out: dict[str, np.ndarray] = {"count": count}
    for name, reduce, identity in (("h_min", np.min, np.inf), ("h_max", np.max, -np.inf)):
        v = slab[name].reshape(-1, group)
        present = ~np.isnan(v)
        red = reduce(np.where(present, v, np.float32(identity)), axis=1).astype(np.float32)
        red[~present.any(axis=1)] = np.float32(np.nan)
        out[name] = red
    return out


# -- writing ----------------------------------------------------------------------------------------------
def _dump(path: Path, obj, *, sort_keys: bool = False, newline: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, indent=1, sort_keys=sort_keys)
    path.write_text(text + ("\n" if newline else ""), encoding="utf-8")


def _write_group_arrays(root: zarr.Group, order: int, arrays: dict[str, np.ndarray]) -> None:
    """The data group ``str(order)``: dggs attrs, then one single-chunk unsharded array per entry."""
    group = root.create_group(str(order), attributes=dggs_attrs(order))
    for name, data in arrays.items():
        fill = 0 if name == "morton" else FIELDS[name]["fill_value"]
        arr = group.create_array(
            name,
            shape=data.shape,
            chunks=data.shape,
            dtype=data.dtype,
            fill_value=np.nan if fill == "NaN" else fill,
            compressors=None,
            filters=None,
            dimension_names=["cells"],
        )
        arr[:] = data


def _write_leaf(
    path: Path,
    shard: np.uint64,
    cells: np.ndarray,
    values: dict,
    *,
    granules: int,
    window: str | None,
    time_range: list[str] | None,
) -> dict:
    """One source leaf, in the §4.4 write order; returns its stamp."""
    kids = children(shard, CELL_ORDER)
    slots = np.searchsorted(kids, cells)
    if not np.array_equal(kids[slots], cells):
        raise AssertionError("cells outside their shard")
    arrays = {"morton": kids, **_dense(slots, kids.size, values, FIELD_NAMES)}
    root = zarr.open_group(str(path), mode="w", zarr_format=3)  # (1) clear the prefix, group metadata
    _write_group_arrays(root, CELL_ORDER, arrays)  # (2) dense arrays
    depth = CELL_ORDER - SHARD_ORDER
    payload, raw_nbytes = bitmap_sidecar(slots, depth)
    (path / "coverage.moc").write_bytes(payload)  # (4) bitmap sidecar
    stamp: dict[str, object] = {
        "spec": "morton-hive/1" if window is None else "morton-hive/2",
        "complete": True,
        "cells_with_data": int(cells.size),
        "granule_count": int(granules),
        "written_at": LEAF_WRITTEN_AT,
    }
    if window is not None:
        stamp["window"] = window
        stamp["time_range"] = time_range
    stamp["coverage"] = {
        "spec": "morton-moc/1",
        "box": coverage_box(cells),
        "cell_order": CELL_ORDER,
        "source": "builder",
        "encoding": "bitmap",
        "sidecar": "coverage.moc",
        "nbytes": len(payload),
        "raw_nbytes": raw_nbytes,
    }
    stamp["content_hashes"] = content_hashes(str(CELL_ORDER), arrays)
    root.update_attributes({"morton_hive_commit": stamp})  # (5) the stamp, last
    return stamp


def _iso(t: np.datetime64) -> str:
    return f"{np.datetime_as_string(np.datetime64(t, 's'), unit='s')}+00:00"


def _semantic_hash() -> str:
    core = {
        "aggregation": FIELDS,
        "data_source": {"kind": "synthetic", "generator": GENERATOR, "quality_filter": None},
        "grid": {"name": "morton", "latitude": "authalic-wgs84"},
        "pipeline": {"type": "point"},
    }
    canonical = json.dumps(core, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _manifest(spec: str, pyramid: dict, temporal: dict | None) -> dict:
    m = {
        "spec": spec,
        "dataset": dict(DATASET),
        "semantic_hash": _semantic_hash(),
        "cell_order": CELL_ORDER,
        "shard_order": SHARD_ORDER,
        "split_schedule": [1] * SHARD_ORDER,
        "path_grouping": 1,
        "pyramid": pyramid,
        "generated_at": TEMPLATE_AT,
    }
    if temporal is not None:
        m["temporal"] = temporal
    return m


def _pyramid_declared(materialized: bool) -> dict:
    overview = {
        "spacing": SPACING,
        "orders": list(OVERVIEW_ORDERS),
        "all_time": False,
        "fields": json.loads(json.dumps(PYRAMID_FIELDS)),
    }
    if materialized:
        overview["materialized"] = {"orders": sorted(OVERVIEW_ORDERS), "generated_at": SWEEP_AT}
    return {"spec": "zagg-pyramid/1", "overview": overview}


class _Leafset:
    """The points of one product window, grouped by shard (the writer's view and the expectations)."""

    def __init__(self, pts: dict[str, np.ndarray], mask: np.ndarray):
        self.lat, self.lon = pts["lat"][mask], pts["lon"][mask]
        self.h, self.time, self.granule = pts["h"][mask], pts["time"][mask], pts["granule"][mask]
        self.words = np.asarray(mortie.geo2mort(self.lat, self.lon, order=CELL_ORDER), dtype=np.uint64).ravel()
        self.shard_of = np.asarray(mortie.clip2order(SHARD_ORDER, self.words), dtype=np.uint64)
        self.shards = np.unique(self.shard_of)

    def points_in(self, shard) -> np.ndarray:
        return self.shard_of == shard


def _write_product_leaves(root: Path, leafset: _Leafset, window: str | None) -> dict[str, dict]:
    """Write every leaf of one window; return the per-leaf expectations (from the points)."""
    rec = {}
    for shard in leafset.shards:
        sel = leafset.points_in(shard)
        cells, values = _aggregate(leafset.words[sel], leafset.h[sel])
        times = leafset.time[sel]
        time_range = [_iso(times.min()), _iso(times.max())] if window is not None else None
        n_gran = int(np.unique(leafset.granule[sel]).size)
        path = leaf_path(shard, window)
        stamp = _write_leaf(root / path, shard, cells, values, granules=n_gran, window=window, time_range=time_range)
        decimal = decimals([shard])[0]
        entry = {
            "shard": decimal,
            "window": window,
            "path": path,
            "count": int(sel.sum()),
            "occupied": int(np.unique(leafset.words[sel]).size),
            "granule_count": n_gran,
            "h_min": float(leafset.h[sel].min()),
            "h_max": float(leafset.h[sel].max()),
            "box": stamp["coverage"]["box"],
        }
        if time_range is not None:
            entry["time_range"] = time_range
        rec[decimal if window is None else f"{decimal}_{window}"] = entry
    return rec


def _write_root_moc(root: Path, shards: np.ndarray, time_range: list[str] | None) -> None:
    env = {
        "spec": "morton-moc/1",
        "encoding": "ranges",
        "order": SHARD_ORDER,
        "source": "builder",
        "generated_at": ROOT_MOC_AT,
        "ranges": root_ranges(shards),
    }
    if time_range is not None:
        env["time_range"] = time_range
    _dump(root / "coverage.moc", env)


def _write_overviews(root: Path, leafset: _Leafset, granules_per_shard: dict[int, int]) -> dict:
    """Sweep: ``all.zarr`` at every covered ancestor node at each overview order (folded from the leaves)."""
    cells, values = _aggregate(leafset.words, leafset.h)
    record = {}
    for k in OVERVIEW_ORDERS:
        r = CELL_ORDER - (SHARD_ORDER - k)  # constant-depth rule (FORMAT.md §7.3)
        shard_nodes = np.asarray(mortie.clip2order(k, leafset.shards), dtype=np.uint64)
        point_nodes = np.asarray(mortie.clip2order(k, leafset.words), dtype=np.uint64)
        level_nodes: dict[str, dict] = {}
        level = {"node_order": k, "cell_order": r, "nodes": level_nodes}
        for node in np.unique(shard_nodes):
            leaves_below = leafset.shards[shard_nodes == node]
            granules = int(sum(granules_per_shard[int(s)] for s in leaves_below))
            _write_overview_node(root, node, k, r, cells, values, n_leaves=len(leaves_below), granules=granules)
            level_nodes[decimals([node])[0]] = {
                "path": f"{node_path(node)}/all.zarr",
                "n_leaves": len(leaves_below),
                "count": int((point_nodes == node).sum()),
            }
        # per-level totals straight from the points
        level_cells = np.asarray(mortie.clip2order(r, leafset.words), dtype=np.uint64)
        level["n_cells_with_data"] = int(np.unique(level_cells).size)
        level["count_sum"] = int(leafset.words.size)
        record[str(r)] = level
    return record


def _write_overview_node(
    root: Path, node, k: int, r: int, cells: np.ndarray, values: dict, *, n_leaves: int, granules: int
) -> None:
    """One overview object: the node's subtree folded from order ``CELL_ORDER`` to ``r``, provenance, then stamp."""
    # the node's whole subtree at the source cell order, leaves placed, missing leaves at fill
    fine = children(node, CELL_ORDER)
    inside = np.asarray(mortie.clip2order(k, cells), dtype=np.uint64) == node
    slab = _dense(
        np.searchsorted(fine, cells[inside]), fine.size, {n: v[inside] for n, v in values.items()}, EXACT_FIELDS
    )
    folded = fold(slab, 4 ** (CELL_ORDER - r))
    arrays = {"morton": children(node, r), **folded}
    obj = zarr.open_group(str(root / node_path(node) / "all.zarr"), mode="w", zarr_format=3)
    _write_group_arrays(obj, r, arrays)
    provenance = {
        "spec": "zagg-overview/1",
        "node": decimals([node])[0],
        "order": k,
        "cell_order": r,
        "source_shard_order": SHARD_ORDER,
        "source_cell_order": CELL_ORDER,
        "window": "all",
        "fields": {n: {kk: PYRAMID_FIELDS[n][kk] for kk in ("class", "method", "nan_policy")} for n in EXACT_FIELDS},
        "generation": {"n_leaves": n_leaves, "max_leaf_timestamp": LEAF_WRITTEN_AT},
        "generated_at": SWEEP_AT,
    }
    obj.update_attributes({"role": "overview", "zagg_overview": provenance})
    stamp = {
        "spec": "morton-hive/1",
        "complete": True,
        "cells_with_data": int((folded["count"] > 0).sum()),
        "granule_count": granules,
        "written_at": SWEEP_AT,
        "content_hashes": content_hashes(str(r), arrays),
    }
    obj.update_attributes({"morton_hive_commit": stamp})  # the stamp, last


def _totals(leafset: _Leafset) -> dict:
    return {
        "count_sum": int(leafset.words.size),
        "n_occupied_cells": int(np.unique(leafset.words).size),
        "h_min_min": float(leafset.h.min()),
        "h_max_max": float(leafset.h.max()),
        "n_granules": int(np.unique(leafset.granule).size),
    }


def _prepare_root(path: Path, overwrite: bool) -> None:
    if path.exists():
        if not path.is_dir():
            raise FileExistsError(f"{path} exists and is not a directory")
        if any(path.iterdir()):
            if not overwrite:
                raise FileExistsError(f"{path} is not empty (pass overwrite=True to replace a sample store)")
            marker = path / EXPECTATIONS_NAME
            try:
                ours = json.loads(marker.read_text()).get("generator") == GENERATOR
            except (OSError, ValueError, AttributeError):
                ours = False
            if not ours:
                raise FileExistsError(f"{path} is not a sample store written by {GENERATOR}; refusing to replace it")
            shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)


def write_sample_store(path, *, seed: int = 0, overwrite: bool = False) -> Path:
    """Write the sample multi-product root at ``path`` and return it.

    Products ``elevation`` (``morton-hive/1`` with ``zagg-pyramid/1``
    overviews at orders 4 and 2) and ``elevation_yearly`` (``morton-hive/2``,
    windows 2019 and 2020), plus ``sample.json``: the expectations computed
    from the input points (rosters, counts, totals, overview nodes).

    Deterministic: the same ``seed`` gives the same bytes. ``path`` must be
    absent or empty; with ``overwrite=True`` an existing sample store (one
    holding a ``sample.json`` written here) is replaced, anything else is
    refused with :class:`FileExistsError`.
    """
    root = Path(path)
    _prepare_root(root, overwrite)
    pts = synthetic_points(seed)
    products = {
        "elevation": _write_elevation(root / "elevation", pts),
        "elevation_yearly": _write_elevation_yearly(root / "elevation_yearly", pts),
    }
    _dump(root / EXPECTATIONS_NAME, _expectations(seed, pts, products), sort_keys=True, newline=True)
    return root


def _write_elevation(product: Path, pts: dict[str, np.ndarray]) -> dict:
    """``elevation``: ``morton-hive/1`` with a ``/1`` pyramid, swept; returns its expectations."""
    _dump(product / "morton_hive.json", _manifest("morton-hive/1", _pyramid_declared(False), None))
    everything = _Leafset(pts, np.ones(pts["h"].size, dtype=bool))
    leaves = _write_product_leaves(product, everything, None)
    _write_root_moc(product, everything.shards, None)
    granules = {int(mortie.decimal_to_word(v["shard"])): v["granule_count"] for v in leaves.values()}
    overviews = _write_overviews(product, everything, granules)
    _dump(product / "morton_hive.json", _manifest("morton-hive/1", _pyramid_declared(True), None))  # sweep actuals
    return {
        "spec": "morton-hive/1",
        "cell_order": CELL_ORDER,
        "shard_order": SHARD_ORDER,
        "cells_per_leaf": 4 ** (CELL_ORDER - SHARD_ORDER),
        "fields": list(FIELD_NAMES),
        "windows": [],
        "leaves": leaves,
        "shards": decimals(everything.shards),
        "totals": _totals(everything),
        "overview_orders": list(OVERVIEW_ORDERS),
        "levels": overviews,
    }


#: the ``temporal`` block of ``elevation_yearly``
YEARLY_TEMPORAL = {
    "schedule": "yearly",
    "time_field": "delta_time",
    "epoch": "2018-01-01T00:00:00+00:00",
    "scale": "utc",
    "units": "seconds",
    "calendar": "proleptic_gregorian",
    "append_policy": "new-window",
}


def _write_elevation_yearly(product: Path, pts: dict[str, np.ndarray]) -> dict:
    """``elevation_yearly``: ``morton-hive/2``, yearly windows, pyramid declared off; returns its expectations."""
    declared_off = {"spec": "zagg-pyramid/1", "overview": {"orders": []}}
    _dump(product / "morton_hive.json", _manifest("morton-hive/2", declared_off, dict(YEARLY_TEMPORAL)))
    windows, all_shards, ranges = {}, [], []
    for label in WINDOWS:
        ls = _Leafset(pts, pts["window"] == label)
        wleaves = _write_product_leaves(product, ls, label)
        tr = [_iso(ls.time.min()), _iso(ls.time.max())]
        windows[label] = {"leaves": wleaves, "totals": _totals(ls), "time_range": tr}
        all_shards.append(ls.shards)
        ranges.append(tr)
    union_range = [min(r[0] for r in ranges), max(r[1] for r in ranges)]
    shards = np.unique(np.concatenate(all_shards))
    _write_root_moc(product, shards, union_range)
    return {
        "spec": "morton-hive/2",
        "cell_order": CELL_ORDER,
        "shard_order": SHARD_ORDER,
        "cells_per_leaf": 4 ** (CELL_ORDER - SHARD_ORDER),
        "fields": list(FIELD_NAMES),
        "schedule": "yearly",
        "windows": windows,
        "time_range": union_range,
        "shards": decimals(shards),
    }


def _expectations(seed: int, pts: dict[str, np.ndarray], products: dict) -> dict:
    """The ``sample.json`` document: the generator, its fixed inputs, and each product's expectations."""
    return {
        "generator": GENERATOR,
        "seed": int(seed),
        "region": REGION,
        "fixed_timestamps": {
            "template": TEMPLATE_AT,
            "leaves": LEAF_WRITTEN_AT,
            "root_moc": ROOT_MOC_AT,
            "sweep": SWEEP_AT,
        },
        "input": {
            "n_points": int(pts["h"].size),
            "n_granules": len(GRANULES),
            "granules": [g[0] for g in GRANULES],
            "beams": list(BEAMS),
            "points_per_window": {w: int((pts["window"] == w).sum()) for w in WINDOWS},
        },
        "products": products,
    }
