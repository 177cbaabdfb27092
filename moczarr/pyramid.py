"""Pyramids: the declaration, the resolution table, and one Dataset per level (FORMAT.md §7).

Levels are addressed by **cell order**. The manifest's ``pyramid`` block is the
only source of which levels exist (never a listing, never ``multiscales``);
the objects of a derived level are named arithmetically from the root
coverage MOC's source shards and admitted by their stamps. Derived objects
are caches: an uninterpretable one is dropped with a warning, one that
positively declares the wrong cell order raises, and a level with nothing to
show is omitted with a warning while the source level stands.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import xarray as xr

from . import ids, keys
from .assemble import Part, build_dataset, domain_of, read_schema, rows_in
from .coverage import aoi_words
from .errors import (
    ArrayContractError,
    EmptySelectionWarning,
    KeyContainmentError,
    LevelOmittedWarning,
    ObjectDroppedWarning,
    PyramidError,
    StampError,
    WindowError,
)
from .hive import candidate_leaves, open_source, root_shards
from .integrity import check_cells_extent
from .ids import ALL_TOKEN
from .manifest import Manifest, check_window, read_manifest
from .storage import DEFAULT_CONCURRENCY, Storage
from .store import read_cache_roots, stamp_of

OVERVIEW_SPECS = ("zagg-overview/1", "zagg-overview/2")
COLUMN_SPECS = ("zagg-column/1",)


# -- the declaration --------------------------------------------------------------------------------
def _as_manifest(manifest) -> Manifest:
    """A :class:`Manifest` as given, or the manifest of a store root (path, URL or Storage)."""
    if isinstance(manifest, Manifest):
        return manifest
    storage = manifest if isinstance(manifest, Storage) else Storage.open(manifest)
    return read_manifest(storage)


def pyramid_declaration(manifest: Manifest) -> dict | None:
    """The normalized ``pyramid`` record of a manifest (FORMAT.md §7.2), or None when declared off.

    ``manifest`` is a :class:`~moczarr.manifest.Manifest` or a store root.

    Raises :class:`PyramidError` for an unknown ``spec``, a ``/1`` block with
    orders but without ``spacing``/``all_time``/``fields`` (or without its
    spec), an ancestor order outside ``0..shard_order-1``, or a malformed ``/2``
    ladder.
    """
    manifest = _as_manifest(manifest)
    block = manifest.pyramid
    where = f"{manifest.location}: pyramid"
    if not isinstance(block, dict):
        return None
    spec = block.get("spec")
    s, c = manifest.shard_order, manifest.cell_order
    if spec == "zagg-pyramid/2":
        return _declaration_v2(block, s, c, where)
    if spec is not None and spec != "zagg-pyramid/1":
        raise PyramidError(f"{where}: unknown spec {spec!r} (this reader knows zagg-pyramid/1 and /2)")
    overview = block.get("overview")
    if not isinstance(overview, dict) or not overview.get("orders"):
        return None
    if spec != "zagg-pyramid/1":
        raise PyramidError(f"{where}: a block declaring orders must carry spec 'zagg-pyramid/1'")
    for key in ("spacing", "all_time", "fields"):
        if key not in overview:
            raise PyramidError(f"{where}: overview block lacks {key!r}")
    orders = overview["orders"]
    if not isinstance(orders, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in orders):
        raise PyramidError(f"{where}: overview.orders must be a list of integers, got {orders!r}")
    for k in orders:
        if not 0 <= k < s:
            raise PyramidError(f"{where}: overview order {k} is outside 0..{s - 1} (shard order {s})")
    orders = sorted(set(orders), reverse=True)
    return {
        "spec": "zagg-pyramid/1",
        "orders": orders,
        "cell_orders": {k: [c - (s - k)] for k in orders},
        "leaf_cells": None,
        "spacing": overview["spacing"],
        "overviews": None,
        "all_time": bool(overview["all_time"]),
        "fold_source": overview.get("fold_source", "leaves"),
        "exact_levels": overview.get("exact_levels"),
        "fields": overview["fields"],
        "materialized": overview.get("materialized"),
    }


def _declaration_v2(block: dict, s: int, c: int, where: str) -> dict:
    entries = block.get("overviews")
    family = block.get("overview")
    if not isinstance(entries, list) or not entries:
        raise PyramidError(f"{where}: zagg-pyramid/2 needs a non-empty 'overviews' list")
    if not isinstance(family, dict) or "all_time" not in family or "fields" not in family:
        raise PyramidError(f"{where}: zagg-pyramid/2 needs an 'overview' block with 'all_time' and 'fields'")
    cell_orders: dict[int, list[int]] = {}
    leaf_cells = None
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("node"), int) or not isinstance(entry.get("cells"), list):
            raise PyramidError(f"{where}: ladder entry {entry!r} needs an integer 'node' and a 'cells' list")
        k, cells = entry["node"], entry["cells"]
        if not 0 <= k <= s:
            raise PyramidError(f"{where}: ladder node {k} is outside 0..{s}")
        if k in cell_orders or (k == s and leaf_cells is not None):
            raise PyramidError(f"{where}: ladder node {k} appears twice")
        for r in cells:
            if not isinstance(r, int) or not k < r < c:
                raise PyramidError(f"{where}: ladder node {k} member {r!r} must satisfy {k} < r < {c}")
        if k == s:
            if cells != sorted(cells, reverse=True) or len(set(cells)) != len(cells):
                raise PyramidError(f"{where}: leaf entry cells {cells} must be strictly descending")
            leaf_cells = list(cells)
        else:
            cell_orders[k] = list(cells)
    return {
        "spec": "zagg-pyramid/2",
        "orders": sorted(cell_orders, reverse=True),
        "cell_orders": cell_orders,
        "leaf_cells": leaf_cells,
        "spacing": None,
        "overviews": entries,
        "all_time": bool(family["all_time"]),
        "fold_source": family.get("fold_source", "leaves"),
        "exact_levels": family.get("exact_levels"),
        "fields": family["fields"],
        "materialized": family.get("materialized"),
    }


@dataclass(frozen=True)
class Level:
    """One addressable resolution: its cell order, the node order of its artifacts, and their kind."""

    cell_order: int
    node_order: int
    artifact: str  # "source" | "column" | "overview"

    def record(self) -> dict:
        return {"cell_order": self.cell_order, "order": self.node_order, "artifact": self.artifact}


def pyramid_levels(manifest: Manifest) -> list[Level]:
    """The resolution table (FORMAT.md §7.6): one level per addressable cell order, finest first.

    ``manifest`` is a :class:`~moczarr.manifest.Manifest` or a store root.
    Raises :class:`PyramidError` when one resolution is declared at two levels.
    """
    manifest = _as_manifest(manifest)
    levels = {manifest.cell_order: Level(manifest.cell_order, manifest.shard_order, "source")}
    decl = pyramid_declaration(manifest)
    if decl:
        for r in decl["leaf_cells"] or []:
            levels[r] = Level(r, manifest.shard_order, "column")
        for k, cells in decl["cell_orders"].items():
            for r in cells:
                if r in levels:
                    raise PyramidError(f"{manifest.location}: cell order {r} is declared at two levels")
                levels[r] = Level(r, k, "overview")
    return [levels[r] for r in sorted(levels, reverse=True)]


# -- one level --------------------------------------------------------------------------------------
def open_level(
    store_root,
    cell_order: int,
    window: str | None = None,
    aoi=None,
    all_time: bool = False,
    *,
    index_kind: str = "moc",
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> xr.Dataset | None:
    """One resolution of a store as a Dataset, whichever artifact kind materializes it.

    The same shape for every kind: a ``cells`` dimension in ascending word
    order, the ``morton`` coordinate (lazy MOC index by default), fabricated
    NESTED ``cell_ids``, dense and ragged (vlen-bytes) variables, and attrs
    ``morton_hive``, ``zagg_objects`` and ``zagg_level``.

    Returns None, with a :class:`LevelOmittedWarning`, for a derived level that
    cannot be opened (no usable root MOC, no stamped object, or overview levels
    of a ``path_grouping > 1`` store). Raises :class:`PyramidError` for an
    undeclared order or an object declaring another cell order, and
    :class:`WindowError` for window misuse (``all_time`` is exclusive with
    ``window`` and needs a windowed store; the all-time view has no source or
    column level).
    """
    storage = Storage.open(store_root, storage_options, concurrency)
    manifest = read_manifest(storage)
    return open_level_in(storage, manifest, cell_order, window, aoi, all_time, index_kind=index_kind)


def open_overview_order(
    store_root,
    cell_order: int,
    window: str | None = None,
    aoi=None,
    all_time: bool = False,
    *,
    index_kind: str = "moc",
    storage_options: dict | None = None,
) -> xr.Dataset | None:
    """The overview level storing cells at ``cell_order`` (see :func:`open_level`).

    Raises :class:`PyramidError` when that order is not an overview level.
    """
    storage = Storage.open(store_root, storage_options)
    manifest = read_manifest(storage)
    level = _level(manifest, cell_order)
    if level.artifact != "overview":
        raise PyramidError(f"{manifest.location}: cell order {cell_order} is a {level.artifact} level, not an overview")
    return open_level_in(storage, manifest, cell_order, window, aoi, all_time, index_kind=index_kind)


def _level(manifest: Manifest, cell_order: int) -> Level:
    table = {lv.cell_order: lv for lv in pyramid_levels(manifest)}
    if isinstance(cell_order, bool) or not isinstance(cell_order, int) or cell_order not in table:
        raise PyramidError(
            f"{manifest.location}: cell order {cell_order} is not a level of this store; levels: "
            + ", ".join(f"{lv.cell_order} ({lv.artifact})" for lv in table.values())
        )
    return table[cell_order]


def check_all_time(manifest: Manifest, window: str | None, all_time: bool) -> None:
    """Refuse ``all_time`` with ``window=`` or on an unwindowed store."""
    if not all_time:
        return
    if window is not None:
        raise WindowError(f"{manifest.location}: all_time=True and window= are exclusive")
    if not manifest.windowed:
        raise WindowError(
            f"{manifest.location}: all_time=True needs a windowed store; an unwindowed store's levels "
            "already are its all-time folds (use window=None)"
        )


def open_level_in(
    storage: Storage,
    manifest: Manifest,
    cell_order: int,
    window: str | None = None,
    aoi=None,
    all_time: bool = False,
    *,
    index_kind: str = "moc",
    named: bool = True,
) -> xr.Dataset | None:
    """:func:`open_level` on an open storage and manifest (shared by the tree openers).

    ``named=False`` says the level was not named by the caller but taken from
    the declaration (the tree openers): under a ``/1`` declaration a
    ``zagg-overview/2`` object at another cell order is then dropped with a
    warning instead of raising (FORMAT.md §7.8: the derivation is wrong, not
    the store).
    """
    level = _level(manifest, cell_order)
    check_all_time(manifest, window, all_time)
    decl = pyramid_declaration(manifest)
    level_attrs = {
        **level.record(),
        "spec": decl["spec"] if decl else None,
        "fields": decl["fields"] if decl else None,
        "fold_source": decl["fold_source"] if decl else None,
    }
    if all_time and level.artifact != "overview":
        raise WindowError(
            f"{manifest.location}: the all-time view holds overview levels only; cell order {cell_order} is a "
            f"{level.artifact} level with no all-time artifact"
        )
    if level.artifact == "source":
        ds = open_source(storage, manifest, aoi, window, index_kind=index_kind)
        hive = ds.attrs["morton_hive"]
        objects = [{"node": leaf, "window": window, "role": "source"} for leaf in hive["leaves"]]
        ds.attrs.update(zagg_objects=objects, zagg_level=level_attrs)
        return ds
    shards = root_shards(storage, manifest)
    if not all_time:
        window = check_window(manifest, window, lambda: manifest.declared_windows)
    stem = ALL_TOKEN if (all_time or window is None) else window
    if shards is None:
        return _omit(f"{manifest.location}: no usable root coverage.moc, so {level.artifact} level o{cell_order} cannot be enumerated")
    if level.artifact == "overview" and manifest.path_grouping > 1:
        return _omit(
            f"{manifest.location}: path_grouping {manifest.path_grouping} > 1 leaves no settled path for "
            f"overview nodes; level o{cell_order} omitted"
        )
    cover = aoi_words(aoi) if aoi is not None else None
    if level.artifact == "overview":
        lenient = not named and decl["spec"] == "zagg-pyramid/1"
        objects = _overview_objects(storage, manifest, level, shards, stem, lenient=lenient)
        schema_objects = objects
    else:
        refs = candidate_leaves(storage, manifest, shards, None, cover)
        objects = _column_objects(storage, manifest, level, [r.decimal for r in refs], stem, window)
        schema_objects = objects
        if not objects and cover is not None:
            # the AOI cut every column candidate: the level is still on disk, so open it empty
            # with the schema of any column (the roster stays query-scoped: empty)
            every = candidate_leaves(storage, manifest, shards, None, None)
            schema_objects = _column_objects(storage, manifest, level, [r.decimal for r in every], stem, window)
    if not schema_objects:
        return _omit(f"{manifest.location}: no stamped {level.artifact} object at cell order {cell_order}; level omitted")
    attrs = {
        "morton_hive": {**manifest.summary(), "cell_order": cell_order, "shard_order": level.node_order, "window": window if not all_time else ALL_TOKEN},
        "zagg_objects": [o.entry for o in objects],
        "zagg_level": level_attrs,
    }
    ds = readable_level(storage, level, objects, schema_objects, cover, index_kind, attrs)
    if ds is None:
        return _omit(f"{manifest.location}: no {level.artifact} object at cell order {cell_order} is readable; level omitted")
    if cover is not None and ds.sizes["cells"] == 0:
        warnings.warn(
            f"{manifest.location}: the AOI selects no cell of {level.artifact} level o{cell_order}; "
            "returning the schema with 0 rows",
            EmptySelectionWarning,
            stacklevel=3,
        )
    return ds


def _omit(message: str) -> None:
    warnings.warn(message, LevelOmittedWarning, stacklevel=4)
    return None


@dataclass(frozen=True)
class DerivedObject:
    """A stamped derived object admitted to a level."""

    decimal: str  # the node id the object covers
    path: str
    entry: dict  # the zagg_objects roster entry
    array_names: tuple[str, ...] | None


def overview_candidates(manifest: Manifest, shards: np.ndarray, node_order: int, stem: str) -> list[tuple[str, str]]:
    """``(node decimal, path)`` of every covered ancestor at ``node_order``, ascending by word (§7.7)."""
    decimals = ids.to_decimals(shards)
    nodes = sorted({d[: (2 if d.startswith("-") else 1) + node_order] for d in decimals})
    words = ids.to_words(nodes) if nodes else np.empty(0, np.uint64)
    ordered = [nodes[i] for i in np.argsort(words, kind="stable")]
    return [(n, f"{ids.ancestor_node(n)}/{stem}.zarr") for n in ordered]


def _overview_objects(
    storage: Storage, manifest: Manifest, level: Level, shards: np.ndarray, stem: str, *, lenient: bool = False
) -> list[DerivedObject]:
    cands = overview_candidates(manifest, shards, level.node_order, stem)
    docs = read_cache_roots(storage, [p for _, p in cands])
    out = []
    window = None if stem == ALL_TOKEN and not manifest.windowed else stem
    for (node, path), doc in zip(cands, docs):
        stamp = stamp_of(doc)
        if stamp is None:
            continue
        attrs = doc.get("attributes") or {}
        role = attrs.get("role")
        where = storage.describe(path)
        if role is None:
            out.append(DerivedObject(node, path, {"node": node, "window": window, "role": "source"}, None))
            continue
        if role != "overview":
            _drop(f"{where}: role {role!r} is not a role an overview node can hold; object dropped")
            continue
        block = attrs.get("zagg_overview")
        if not isinstance(block, dict) or block.get("spec") not in OVERVIEW_SPECS or "cell_order" not in block:
            _drop(f"{where}: missing, unknown or incomplete zagg_overview block; overview dropped")
            continue
        if block["cell_order"] != level.cell_order:
            if lenient and block.get("spec") == "zagg-overview/2":
                _drop(
                    f"{where}: a zagg-overview/2 object at cell_order {block['cell_order']!r} sits where the /1 "
                    f"declaration derives level o{level.cell_order}; dropped (open /2 levels by their declared cell order)"
                )
                continue
            raise PyramidError(
                f"{where}: overview declares cell_order {block['cell_order']!r} but sits at level o{level.cell_order}"
            )
        try:
            names = provenance_arrays(block.get("fields"), f"{where}: zagg_overview.fields")
        except KeyContainmentError as exc:
            _drop(f"{exc}; overview dropped")
            continue
        out.append(DerivedObject(node, path, {"node": node, "window": window, "role": "overview", "zagg_overview": block}, names))
    return out


def _column_objects(
    storage: Storage, manifest: Manifest, level: Level, shard_decimals: list[str], stem: str, window: str | None
) -> list[DerivedObject]:
    pg = manifest.path_grouping
    paths = [f"{ids.hive_node(d, pg)}/{stem}.pyramid.zarr" for d in shard_decimals]
    out = []
    for node, path, doc in zip(shard_decimals, paths, read_cache_roots(storage, paths)):
        stamp = stamp_of(doc)
        if stamp is None:
            continue
        attrs = doc.get("attributes") or {}
        block = attrs.get("zagg_column")
        where = storage.describe(path)
        if attrs.get("role") != "column" or not isinstance(block, dict) or block.get("spec") not in COLUMN_SPECS:
            _drop(f"{where}: not an interpretable column (role {attrs.get('role')!r}, zagg_column spec "
                  f"{block.get('spec') if isinstance(block, dict) else None!r}); dropped")
            continue
        if block.get("node") != node or block.get("order") != manifest.shard_order or block.get("window") != stem:
            raise PyramidError(
                f"{where}: zagg_column names node {block.get('node')!r}, order {block.get('order')!r}, window "
                f"{block.get('window')!r}, which disagree with its address ({node}, {manifest.shard_order}, {stem})"
            )
        if str(level.cell_order) not in (block.get("groups") or {}):
            continue  # the column lacks this resolution: the level under-covers that leaf
        try:
            names = provenance_arrays(block.get("fields"), f"{where}: zagg_column.fields")
        except KeyContainmentError as exc:
            _drop(f"{exc}; column dropped")
            continue
        out.append(DerivedObject(node, path, {"node": node, "window": window, "role": "column", "zagg_column": block}, names))
    return out


def provenance_arrays(fields, where: str) -> tuple[str, ...] | None:
    """Array names a provenance ``fields`` block declares (plus ``morton``), or None when it names none.

    Raises :class:`~moczarr.errors.KeyContainmentError` for a field name that
    is not one zarr node name (it would address a key outside the object).
    """
    if not isinstance(fields, dict) or not fields:
        return None
    return tuple(sorted(keys.array_name(name, where) for name in fields)) + ("morton",)


def readable_level(storage: Storage, level: Level, objects: list, schema_objects: list, cover, index_kind: str, attrs: dict):
    """The level's Dataset, schema read from the first schema object whose metadata can be used.

    A derived object whose data group or array metadata is unusable (missing,
    unparsable, contradicting its provenance, a name that is not a node name,
    an array contract it breaks) is dropped with an
    :class:`~moczarr.errors.ObjectDroppedWarning` and the next one is tried;
    None when none is left (the caller omits the level).
    """
    objects, candidates = list(objects), list(schema_objects)
    while candidates:
        first = candidates.pop(0)
        try:
            return _objects_dataset(storage, level, objects, cover, index_kind, {**attrs, "zagg_objects": [o.entry for o in objects]}, first)
        except (StampError, KeyContainmentError, ArrayContractError) as exc:
            _drop(f"{exc}; {level.artifact} object dropped")
            objects = [o for o in objects if o.path != first.path]
    return None


def _drop(message: str) -> None:
    warnings.warn(message, ObjectDroppedWarning, stacklevel=5)


def _objects_dataset(
    storage: Storage,
    level: Level,
    objects: list[DerivedObject],
    cover,
    index_kind: str,
    attrs: dict,
    schema_object: DerivedObject,
) -> xr.Dataset:
    r, k = level.cell_order, level.node_order
    group = str(r)
    words = ids.to_words([o.decimal for o in objects]) if objects else np.empty(0, np.uint64)
    domain = domain_of(words, k, r, cover)
    first, _ = ids.subtree_rank_bounds(words, k, r)
    n_cells = 4 ** (r - k)
    sels = rows_in(domain, first, n_cells) if objects else []
    parts = [Part(f"{o.path}/{group}", int(f), n_cells, s) for o, f, s in zip(objects, first, sels)]
    schema_group = f"{schema_object.path}/{group}"
    names = list(schema_object.array_names) if schema_object.array_names else None
    schema = read_schema(storage, schema_group, names)
    if names is not None:
        # the provenance block lists fields only: add the ragged siblings their declarations bind
        bound = _bound_siblings(schema) - set(schema.arrays)
        if bound:
            schema = read_schema(storage, schema_group, sorted(set(names) | bound))
    check_cells_extent(schema.arrays, lambda a: a.cells_axis, n_cells, storage.describe(schema_group))
    return build_dataset(storage, schema, parts, domain, index_kind=index_kind, attrs=attrs)


def _bound_siblings(schema) -> set[str]:
    """Arrays a ragged payload binds through its attrs: ``ragged.locations`` and ``times`` (FORMAT.md §9.1)."""
    out = set()
    for arr in schema.arrays.values():
        attrs = arr.attrs
        block = attrs.get("ragged")
        if not isinstance(block, dict):
            continue
        for name in (block.get("locations"), attrs.get("times")):
            if isinstance(name, str) and name:
                out.add(name)
    return out


# -- many levels -------------------------------------------------------------------------------------
def open_pyramid(
    store_root,
    levels=None,
    aoi=None,
    window: str | None = None,
    all_time: bool = False,
    *,
    index_kind: str = "moc",
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> xr.DataTree:
    """Every materialized level of a store as a DataTree: an empty root, children ``o{cell_order}``, finest first.

    The root carries ``morton_hive`` (the manifest summary), ``zagg_pyramid``
    (the normalized declaration) and the manifest's ``multiscales`` verbatim
    when present. ``levels`` limits the cell orders assembled. Declared but
    unmaterialized levels are omitted with their warning. ``all_time=True``
    opens the cross-window folds (overview levels only); it is refused when the
    declaration never carried all-time folds.
    """
    storage = Storage.open(store_root, storage_options, concurrency)
    manifest = read_manifest(storage)
    return pyramid_tree(storage, manifest, levels, aoi, window, all_time, index_kind=index_kind)


def pyramid_tree(storage, manifest, levels=None, aoi=None, window=None, all_time=False, *, index_kind="moc") -> xr.DataTree:
    """:func:`open_pyramid` on an open storage and manifest."""
    decl = pyramid_declaration(manifest)
    check_all_time(manifest, window, all_time)
    if all_time and not (decl and decl["all_time"]):
        raise WindowError(f"{manifest.location}: the pyramid declaration carries no all-time folds (all_time is false)")
    table = pyramid_levels(manifest)
    if levels is not None:
        wanted = check_levels(levels, manifest.location)
        unknown = wanted - {lv.cell_order for lv in table}
        if unknown:
            raise PyramidError(
                f"{manifest.location}: cell orders {sorted(unknown)} are not levels; levels: {[lv.cell_order for lv in table]}"
            )
        table = [lv for lv in table if lv.cell_order in wanted]
    if all_time:
        table = [lv for lv in table if lv.artifact == "overview"]
    root_attrs = {"morton_hive": manifest.summary(), "zagg_pyramid": _jsonable(decl)}
    if manifest.semantic_hash:
        root_attrs["semantic_hash"] = manifest.semantic_hash
    if manifest.multiscales is not None:
        root_attrs["multiscales"] = manifest.multiscales
    children = {}
    for lv in table:
        ds = open_level_in(
            storage, manifest, lv.cell_order, window, aoi, all_time, index_kind=index_kind, named=levels is not None
        )
        if ds is not None:
            children[f"o{lv.cell_order}"] = xr.DataTree(ds)
    return xr.DataTree(xr.Dataset(attrs=root_attrs), children=children)


def check_levels(levels, where: str) -> set[int]:
    """The cell orders a ``levels=`` argument names; raises :class:`~moczarr.errors.ArgumentError` otherwise."""
    from .errors import ArgumentError

    items = [levels] if isinstance(levels, int) else levels
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise ArgumentError(f"{where}: levels= must be a cell order or a list of them, got {levels!r}")
    items = list(items)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in items):
        raise ArgumentError(f"{where}: levels= must hold integer cell orders, got {levels!r}")
    return set(items)


def _jsonable(decl: dict | None) -> dict | None:
    """The declaration with string keys (attrs must survive a JSON round trip)."""
    if decl is None:
        return None
    out = dict(decl)
    out["cell_orders"] = {str(k): v for k, v in decl["cell_orders"].items()}
    return out


def level_demotions(obj) -> list[dict]:
    """Every stamped ``demotions`` record of a level Dataset or a tree, flattened, each with its object's node.

    Passed through unvalidated (a pre-spec key); an empty list proves nothing.
    """
    datasets = [obj] if isinstance(obj, xr.Dataset) else [n.ds for n in obj.subtree] if isinstance(obj, xr.DataTree) else [obj]
    out = []
    for ds in datasets:
        for entry in ds.attrs.get("zagg_objects") or []:
            block = entry.get("zagg_overview") or {}
            for record in block.get("demotions") or []:
                out.append({"node": entry.get("node"), "window": entry.get("window"), "cell_order": block.get("cell_order"), **record})
    return out


__all__ = [
    "Level",
    "level_demotions",
    "open_level",
    "open_overview_order",
    "open_pyramid",
    "pyramid_declaration",
    "pyramid_levels",
]


def structural_orders(children: dict) -> dict[str, list[int]]:
    """Source and overview cell orders of opened level nodes, from each object's own role (finest first)."""
    roles: dict[str, set[int]] = {"source": set(), "overview": set()}
    for child in children.values():
        ds = child.ds if isinstance(child, xr.DataTree) else child
        order = ds.attrs["morton_hive"]["cell_order"]
        for entry in ds.attrs.get("zagg_objects") or []:
            if entry.get("role") in roles:
                roles[entry["role"]].add(order)
        if ds.attrs.get("zagg_level", {}).get("artifact") == "source":
            roles["source"].add(order)
    return {k: sorted(v, reverse=True) for k, v in roles.items()}
