"""Derived levels (overview and column levels): their objects named, admitted by their stamps, opened as one Dataset.

The objects of a derived level are named arithmetically from the root
coverage MOC's source shards (FORMAT.md §7.7) and admitted by their stamps
and provenance blocks. They are caches: an uninterpretable one is dropped
with an :class:`~moczarr.errors.ObjectDroppedWarning`, one that positively
declares the wrong cell order (or another address) raises
:class:`~moczarr.errors.PyramidError`, and a level with nothing to show
raises :class:`~moczarr.errors.LevelOmittedError`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

import numpy as np
import xarray as xr

from .. import ids
from ..dataplane.assemble import Part, build_dataset, domain_of, read_schema, rows_in
from ..errors import (
    ArrayContractError,
    EmptySelectionWarning,
    KeyContainmentError,
    LevelOmittedError,
    ObjectDroppedWarning,
    PyramidError,
    StampError,
    warn,
)
from ..format.content import recorded_hashes
from ..format.declaration import COLUMN_SPECS, OVERVIEW_SPECS, Level
from ..format.integrity import check_cells_extent
from ..format.manifest import Manifest, check_window
from ..format.stamps import read_cache_roots, stamp_of
from ..ids import ALL_TOKEN
from ..places import aoi_cover
from ..storage import Storage, keys
from .leaves import candidate_leaves, root_shards


def derived_level(
    storage: Storage,
    manifest: Manifest,
    level: Level,
    window: str | None,
    aoi,
    all_time: bool,
    level_attrs: dict,
    index_kind: str,
    *,
    lenient: bool,
    verify_chunks: bool,
    variables: Collection[str] | None = None,
) -> xr.Dataset:
    """An overview or column level, from the stamped objects the root MOC's shards name.

    ``variables`` limits the data variables built (None: every one).

    Raises :class:`LevelOmittedError` when they cannot be enumerated or none
    is stamped and readable.
    """
    cell_order = level.cell_order
    shards = root_shards(storage, manifest)
    if not all_time:
        window = check_window(manifest, window, lambda: manifest.declared_windows)
    stem = ALL_TOKEN if (all_time or window is None) else window
    if shards is None:
        raise LevelOmittedError(
            f"{manifest.location}: no usable root coverage.moc, "
            f"so {level.artifact} level o{cell_order} cannot be enumerated"
        )
    if level.artifact == "overview" and manifest.path_grouping > 1:
        raise LevelOmittedError(
            f"{manifest.location}: path_grouping {manifest.path_grouping} > 1 leaves no settled path for "
            f"overview nodes; level o{cell_order} omitted"
        )
    cover = aoi_cover(aoi, cell_order)
    objects, schema_objects = _level_objects(storage, manifest, level, shards, stem, window, cover, lenient=lenient)
    if not schema_objects:
        raise LevelOmittedError(
            f"{manifest.location}: no stamped {level.artifact} object at cell order {cell_order}; level omitted"
        )
    attrs = {
        "morton_hive": {
            **manifest.summary(),
            "cell_order": cell_order,
            "shard_order": level.node_order,
            "window": window if not all_time else ALL_TOKEN,
        },
        "zagg_objects": [o.entry for o in objects],
        "zagg_level": level_attrs,
    }
    ds = readable_level(
        storage, level, objects, schema_objects, cover, index_kind, attrs, verify_chunks, variables=variables
    )
    if ds is None:
        raise LevelOmittedError(
            f"{manifest.location}: no {level.artifact} object at cell order {cell_order} is readable; level omitted"
        )
    if cover is not None and ds.sizes["cells"] == 0:
        warn(
            f"{manifest.location}: the AOI selects no cell of {level.artifact} level o{cell_order}; "
            "returning the schema with 0 rows",
            EmptySelectionWarning,
        )
    return ds


def _level_objects(
    storage: Storage,
    manifest: Manifest,
    level: Level,
    shards: np.ndarray,
    stem: str,
    window: str | None,
    cover,
    *,
    lenient: bool,
) -> tuple[list[DerivedObject], list[DerivedObject]]:
    """``(objects, schema objects)`` of a derived level: those the AOI keeps, and those that can give the schema."""
    if level.artifact == "overview":
        objects = overview_objects(storage, manifest, level, shards, stem, lenient=lenient)
        return objects, objects
    refs = candidate_leaves(storage, manifest, shards, None, cover)
    objects = _column_objects(storage, manifest, level, [r.decimal for r in refs], stem, window)
    if objects or cover is None:
        return objects, objects
    # the AOI cut every column candidate: the level is still on disk, so open it empty
    # with the schema of any column (the roster stays query-scoped: empty)
    every = candidate_leaves(storage, manifest, shards, None, None)
    return objects, _column_objects(storage, manifest, level, [r.decimal for r in every], stem, window)


@dataclass(frozen=True)
class DerivedObject:
    """A stamped derived object admitted to a level."""

    decimal: str  # the node id the object covers
    path: str
    entry: dict  # the zagg_objects roster entry
    array_names: tuple[str, ...] | None
    hashes: Mapping | None = None  # what its stamp records under content_hashes


def overview_candidates(shards: np.ndarray, node_order: int, stem: str) -> list[tuple[str, str]]:
    """``(node decimal, path)`` of every covered ancestor at ``node_order``, ascending by word (§7.7)."""
    decimals = ids.to_decimals(shards)
    nodes = sorted({d[: (2 if d.startswith("-") else 1) + node_order] for d in decimals})
    words = ids.to_words(nodes) if nodes else np.empty(0, np.uint64)
    ordered = [nodes[i] for i in np.argsort(words, kind="stable")]
    return [(n, f"{ids.ancestor_node(n)}/{stem}.zarr") for n in ordered]


def overview_objects(
    storage: Storage, manifest: Manifest, level: Level, shards: np.ndarray, stem: str, *, lenient: bool = False
) -> list[DerivedObject]:
    """The stamped objects of overview ``level`` at the covered ancestors of ``shards``, in the roster's order.

    A node without a role is a source-role object (no provenance block); one
    with another role or an unusable ``zagg_overview`` block is dropped with a
    warning. Raises :class:`~moczarr.errors.PyramidError` for an overview
    declaring another cell order, which ``lenient`` drops instead when it is a
    ``zagg-overview/2`` object (under a ``/1`` declaration, FORMAT.md §7.8).
    """
    window = None if stem == ALL_TOKEN and not manifest.windowed else stem

    def role_of(node: str, attrs: dict, where: str) -> tuple[str, dict | None] | None:
        role = attrs.get("role")
        if role is None:
            return "source", None
        if role != "overview":
            _drop(f"{where}: role {role!r} is not a role an overview node can hold; object dropped")
            return None
        block = attrs.get("zagg_overview")
        if not isinstance(block, dict) or block.get("spec") not in OVERVIEW_SPECS or "cell_order" not in block:
            _drop(f"{where}: missing, unknown or incomplete zagg_overview block; overview dropped")
            return None
        if block["cell_order"] != level.cell_order:
            if lenient and block.get("spec") == "zagg-overview/2":
                _drop(
                    f"{where}: a zagg-overview/2 object at cell_order {block['cell_order']!r} sits where the /1 "
                    f"declaration derives level o{level.cell_order}; "
                    "dropped (open /2 levels by their declared cell order)"
                )
                return None
            raise PyramidError(
                f"{where}: overview declares cell_order {block['cell_order']!r} but sits at level o{level.cell_order}"
            )
        return "overview", block

    return _admitted(storage, overview_candidates(shards, level.node_order, stem), window, role_of)


def _column_objects(
    storage: Storage, manifest: Manifest, level: Level, shard_decimals: list[str], stem: str, window: str | None
) -> list[DerivedObject]:
    """The stamped column objects of the shards at ``shard_decimals`` that hold ``level``, in the roster's order.

    One that is not an interpretable column is dropped with a warning; raises
    :class:`~moczarr.errors.PyramidError` for one whose ``zagg_column`` block
    names another address.
    """
    pg = manifest.path_grouping

    def role_of(node: str, attrs: dict, where: str) -> tuple[str, dict | None] | None:
        block = attrs.get("zagg_column")
        if attrs.get("role") != "column" or not isinstance(block, dict) or block.get("spec") not in COLUMN_SPECS:
            _drop(
                f"{where}: not an interpretable column (role {attrs.get('role')!r}, zagg_column spec "
                f"{block.get('spec') if isinstance(block, dict) else None!r}); dropped"
            )
            return None
        if block.get("node") != node or block.get("order") != manifest.shard_order or block.get("window") != stem:
            raise PyramidError(
                f"{where}: zagg_column names node {block.get('node')!r}, order {block.get('order')!r}, window "
                f"{block.get('window')!r}, which disagree with its address ({node}, {manifest.shard_order}, {stem})"
            )
        if str(level.cell_order) not in (block.get("groups") or {}):
            return None  # the column lacks this resolution: the level under-covers that leaf
        return "column", block

    candidates = [(d, f"{ids.hive_node(d, pg)}/{stem}.pyramid.zarr") for d in shard_decimals]
    return _admitted(storage, candidates, window, role_of)


def _admitted(
    storage: Storage,
    candidates: list[tuple[str, str]],
    window: str | None,
    role_of: Callable[[str, dict, str], tuple[str, dict | None] | None],
) -> list[DerivedObject]:
    """The roster of a derived level: the stamped objects among ``candidates`` (``(node, path)``, in order) admitted.

    The candidates' root documents are read in one batch; an unstamped one is
    passed over. ``role_of(node, attributes, where)`` gives an object's role
    and its provenance block (None: a source-role object, which has none), or
    None to pass the object over; it raises for an object contradicting its
    address. An object whose provenance ``fields`` name no zarr node is
    dropped with an :class:`~moczarr.errors.ObjectDroppedWarning`.
    """
    out = []
    for (node, path), doc in zip(candidates, read_cache_roots(storage, [p for _, p in candidates]), strict=True):
        stamp = stamp_of(doc)
        if doc is None or stamp is None:
            continue
        where = storage.describe(path)
        found = role_of(node, doc.get("attributes") or {}, where)
        if found is None:
            continue
        role, block = found
        entry: dict[str, object] = {"node": node, "window": window, "role": role}
        names = None
        if block is not None:
            try:
                names = provenance_arrays(block.get("fields"), f"{where}: zagg_{role}.fields")
            except KeyContainmentError as exc:
                _drop(f"{exc}; {role} dropped")
                continue
            entry[f"zagg_{role}"] = block
        out.append(DerivedObject(node, path, entry, names, recorded_hashes(stamp)))
    return out


def provenance_arrays(fields, where: str) -> tuple[str, ...] | None:
    """Array names a provenance ``fields`` block declares (plus ``morton``), or None when it names none.

    Raises :class:`~moczarr.errors.KeyContainmentError` for a field name that
    is not one zarr node name (it would address a key outside the object).
    """
    if not isinstance(fields, dict) or not fields:
        return None
    return (*sorted(keys.array_name(name, where) for name in fields), "morton")


def readable_level(
    storage: Storage,
    level: Level,
    objects: list,
    schema_objects: list,
    cover,
    index_kind: str,
    attrs: dict,
    verify_chunks: bool = False,
    *,
    variables: Collection[str] | None = None,
):
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
            return _objects_dataset(
                storage,
                level,
                objects,
                cover,
                index_kind,
                {**attrs, "zagg_objects": [o.entry for o in objects]},
                first,
                verify_chunks,
                variables,
            )
        except (StampError, KeyContainmentError, ArrayContractError) as exc:
            _drop(f"{exc}; {level.artifact} object dropped")
            objects = [o for o in objects if o.path != first.path]
    return None


def _drop(message: str) -> None:
    warn(message, ObjectDroppedWarning)


def _objects_dataset(
    storage: Storage,
    level: Level,
    objects: list[DerivedObject],
    cover,
    index_kind: str,
    attrs: dict,
    schema_object: DerivedObject,
    verify_chunks: bool = False,
    variables: Collection[str] | None = None,
) -> xr.Dataset:
    r, k = level.cell_order, level.node_order
    group = str(r)
    words = ids.to_words([o.decimal for o in objects]) if objects else np.empty(0, np.uint64)
    domain = domain_of(words, r, cover)
    first, _ = ids.subtree_rank_bounds(words, k, r)
    n_cells = 4 ** (r - k)
    sels = rows_in(domain, first, n_cells) if objects else []
    parts = [Part(f"{o.path}/{group}", n_cells, s, o.hashes) for o, s in zip(objects, sels, strict=True)]
    schema_group = f"{schema_object.path}/{group}"
    names = list(schema_object.array_names) if schema_object.array_names else None
    schema = read_schema(storage, schema_group, names)
    if names is not None:
        # the provenance block lists fields only: add the ragged siblings their declarations bind
        bound = _bound_siblings(schema) - set(schema.arrays)
        if bound:
            schema = read_schema(storage, schema_group, sorted(set(names) | bound))
    check_cells_extent(schema.arrays, lambda a: a.cells_axis, n_cells, storage.describe(schema_group))
    return build_dataset(
        storage,
        schema,
        parts,
        domain,
        index_kind=index_kind,
        attrs=attrs,
        verify_chunks=verify_chunks,
        variables=variables,
    )


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
