"""Pyramids: the declaration, the resolution table, and one Dataset per level (FORMAT.md §7).

Levels are addressed by **cell order**. The manifest's ``pyramid`` block is the
only source of which levels exist (never a listing, never ``multiscales``);
the objects of a derived level are named arithmetically from the root
coverage MOC's source shards and admitted by their stamps. Derived objects
are caches: an uninterpretable one is dropped with a warning, one that
positively declares the wrong cell order raises, and a level with nothing to
show raises :class:`~moczarr.errors.LevelOmittedError` when it is asked for
(``open_level``) and is left out with a warning by the trees, whose source
level stands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import xarray as xr

from .. import ids
from ..dataplane.assemble import Part, build_dataset, check_verify_chunks, domain_of, read_schema, rows_in
from ..errors import (
    ArrayContractError,
    EmptySelectionWarning,
    KeyContainmentError,
    LevelError,
    LevelOmittedError,
    LevelOmittedWarning,
    ObjectDroppedWarning,
    PyramidError,
    StampError,
    WindowError,
    warn,
)
from ..format.content import recorded_hashes
from ..format.declaration import (
    COLUMN_SPECS,
    OVERVIEW_SPECS,
    Level,
    pyramid_declaration,
    pyramid_levels,
)
from ..format.integrity import check_cells_extent
from ..format.manifest import Manifest, check_window
from ..format.roster import read_manifest
from ..format.stamps import read_cache_roots, stamp_of
from ..ids import ALL_TOKEN
from ..places import aoi_cover, as_place
from ..storage import DEFAULT_CONCURRENCY, Storage, keys
from .hive import list_windows, open_source
from .leaves import candidate_leaves, root_shards
from .times import TimeRange, check_time_store, over_windows, window_or_time


# -- one level --------------------------------------------------------------------------------------
def open_level(
    store_root,
    cell_order: int | None = None,
    window: str | None = None,
    aoi=None,
    all_time: bool = False,
    *,
    time=None,
    index_kind: str = "moc",
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    verify_chunks: bool = False,
) -> xr.Dataset:
    """One resolution of a store as a Dataset, whichever artifact kind materializes it.

    ``cell_order`` picks the level (default: the store's native cell order).
    The same shape for every kind: a ``cells`` dimension in ascending word
    order, the ``morton`` coordinate (lazy MOC index by default), fabricated
    NESTED ``cell_ids``, dense and ragged (vlen-bytes) variables, and attrs
    ``morton_hive``, ``zagg_objects`` and ``zagg_level``.

    Raises :class:`LevelOmittedError` (a ``LookupError``), naming the store and
    the level, for a declared derived level with nothing materialized to open
    (no usable root MOC, no stamped or readable object, or overview levels of a
    ``path_grouping > 1`` store); the tree openers leave such a level out with a
    :class:`LevelOmittedWarning` instead. Raises :class:`LevelError` for a
    ``cell_order`` that is not an integer order or not a level of the store,
    :class:`PyramidError` for an object declaring another cell order, and
    :class:`WindowError` for window misuse (``all_time`` is exclusive with
    ``window`` and needs a windowed store; the all-time view has no source or
    column level). ``aoi=`` takes any place (:mod:`moczarr.places`), met at
    this level's cell order; ``time=(start, end)`` stacks the overlapping
    windows (:mod:`moczarr.openers.times`). Raises :class:`AOIError` for what is no
    place. With ``verify_chunks=True`` reads are checked against each object's
    recorded ``content_hashes`` (leaves, overviews and columns alike; see
    :func:`~moczarr.openers.hive.open_hive`).
    """
    cell_order = None if cell_order is None else check_order(cell_order, "cell_order")
    aoi = as_place(aoi)
    window = window_or_time(window, time)
    verify_chunks = check_verify_chunks(verify_chunks)
    storage = Storage.open(store_root, storage_options, concurrency)
    manifest = read_manifest(storage)
    order = manifest.cell_order if cell_order is None else cell_order
    return open_level_in(
        storage, manifest, order, window, aoi, all_time, index_kind=index_kind, verify_chunks=verify_chunks
    )


def open_overview_order(
    store_root,
    cell_order: int,
    window: str | None = None,
    aoi=None,
    all_time: bool = False,
    *,
    index_kind: str = "moc",
    storage_options: dict | None = None,
    verify_chunks: bool = False,
) -> xr.Dataset:
    """The overview level storing cells at ``cell_order`` (see :func:`open_level`).

    Raises :class:`LevelError` when that order is not an overview level and
    :class:`LevelOmittedError` when it has nothing materialized.
    """
    cell_order = check_order(cell_order, "cell_order")
    aoi = as_place(aoi)
    verify_chunks = check_verify_chunks(verify_chunks)
    storage = Storage.open(store_root, storage_options)
    manifest = read_manifest(storage)
    level = _level(manifest, cell_order)
    if level.artifact != "overview":
        raise LevelError(f"{manifest.location}: cell order {cell_order} is a {level.artifact} level, not an overview")
    return open_level_in(
        storage, manifest, cell_order, window, aoi, all_time, index_kind=index_kind, verify_chunks=verify_chunks
    )


def check_order(value, argument: str) -> int:
    """A cell order argument as an int in 0..29; raises :class:`LevelError` naming ``argument``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise LevelError(
            f"{argument}={value!r} must be an integer cell order (e.g. {argument}=8), not a {type(value).__name__}"
        )
    if not 0 <= int(value) <= 29:
        raise LevelError(f"{argument}={int(value)} is outside the HEALPix orders 0..29")
    return int(value)


def check_levels(levels, argument: str = "levels") -> set[int] | None:
    """``levels=`` as a set of cell orders: None, one order, or a non-empty list of them (else :class:`LevelError`)."""
    if levels is None:
        return None
    if isinstance(levels, (str, bytes, float, bool, dict)) or not (
        isinstance(levels, (int, np.integer)) or hasattr(levels, "__iter__")
    ):
        raise LevelError(f"{argument}={levels!r} must be a cell order or a list of cell orders")
    items = [levels] if isinstance(levels, (int, np.integer)) else list(levels)
    if not items:
        raise LevelError(f"{argument}=[] names no level (pass None for every level)")
    return {
        check_order(x, f"{argument}[{i}]" if len(items) > 1 or not isinstance(levels, (int, np.integer)) else argument)
        for i, x in enumerate(items)
    }


def _level(manifest: Manifest, cell_order: int) -> Level:
    table = {lv.cell_order: lv for lv in pyramid_levels(manifest)}
    if isinstance(cell_order, bool) or not isinstance(cell_order, int) or cell_order not in table:
        raise LevelError(
            f"{manifest.location}: cell order {cell_order} is not a level of this store; levels: "
            + ", ".join(f"{lv.cell_order} ({lv.artifact})" for lv in table.values())
        )
    return table[cell_order]


def check_all_time(manifest: Manifest, window: str | TimeRange | None, all_time: bool) -> None:
    """Refuse ``all_time`` with ``window=`` (a window name or a time span) or on an unwindowed store."""
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
    verify_chunks: bool = False,
) -> xr.Dataset:
    """:func:`open_level` on an open storage and manifest (shared by the tree openers).

    ``named=False`` says the level was not named by the caller but taken from
    the declaration (the tree openers): under a ``/1`` declaration a
    ``zagg-overview/2`` object at another cell order is then dropped with a
    warning instead of raising (FORMAT.md §7.8: the derivation is wrong, not
    the store). Raises :class:`LevelOmittedError` for a level with nothing
    materialized (see :func:`open_level_or_omit` for the tree openers' path).
    """
    if isinstance(window, TimeRange):
        return _level_over_time(
            storage,
            manifest,
            cell_order,
            window,
            aoi,
            all_time,
            index_kind=index_kind,
            named=named,
            verify_chunks=verify_chunks,
        )
    level = _level(manifest, cell_order)
    check_all_time(manifest, window, all_time)
    decl = pyramid_declaration(manifest)
    level_attrs = {
        **level.record(),
        "spec": decl.spec if decl else None,
        "fields": decl.fields if decl else None,
        "fold_source": decl.fold_source if decl else None,
    }
    if all_time and level.artifact != "overview":
        raise WindowError(
            f"{manifest.location}: the all-time view holds overview levels only; cell order {cell_order} is a "
            f"{level.artifact} level with no all-time artifact"
        )
    if level.artifact == "source":
        return _source_level(storage, manifest, aoi, window, level_attrs, index_kind, verify_chunks)
    lenient = not named and decl is not None and decl.spec == "zagg-pyramid/1"
    return _derived_level(
        storage,
        manifest,
        level,
        window,
        aoi,
        all_time,
        level_attrs,
        index_kind,
        lenient=lenient,
        verify_chunks=verify_chunks,
    )


def _omitting[**P](opener: Callable[P, xr.Dataset]) -> Callable[P, xr.Dataset | None]:
    """``opener`` returning None, with a :class:`LevelOmittedWarning` carrying the error's message, where it
    raises :class:`LevelOmittedError`; every other error propagates."""

    @functools.wraps(opener)
    def call(*args: P.args, **kwargs: P.kwargs) -> xr.Dataset | None:
        try:
            return opener(*args, **kwargs)
        except LevelOmittedError as exc:
            warn(str(exc), LevelOmittedWarning)
            return None

    return call


open_level_or_omit = _omitting(open_level_in)
open_level_or_omit.__name__ = open_level_or_omit.__qualname__ = "open_level_or_omit"
open_level_or_omit.__doc__ = """:func:`open_level_in` for callers that leave an unmaterialized level out (the trees,
verify): None, with a :class:`LevelOmittedWarning`, where :func:`open_level_in` raises :class:`LevelOmittedError`."""


def _level_over_time(
    storage: Storage,
    manifest: Manifest,
    cell_order: int,
    span: TimeRange,
    aoi,
    all_time: bool,
    *,
    index_kind,
    named,
    verify_chunks: bool,
) -> xr.Dataset:
    """The level in every window overlapping ``span``, stacked on a ``window`` dimension."""
    check_all_time(manifest, span, all_time)
    check_time_store(manifest, span)
    _level(manifest, cell_order)
    present = manifest.declared_windows or list_windows(storage)
    return over_windows(
        manifest,
        present,
        span,
        open_one=lambda label, empty=False: open_level_in(
            storage,
            manifest,
            cell_order,
            label,
            [] if empty else aoi,
            index_kind=index_kind,
            named=named,
            verify_chunks=verify_chunks,
        ),
    )


def _source_level(
    storage: Storage, manifest: Manifest, aoi, window, level_attrs: dict, index_kind: str, verify_chunks: bool
) -> xr.Dataset:
    """The source level: :func:`~moczarr.openers.hive.open_source`'s Dataset plus the level attrs."""
    ds = open_source(storage, manifest, aoi, window, index_kind=index_kind, verify_chunks=verify_chunks)
    hive = ds.attrs["morton_hive"]
    objects = [{"node": leaf, "window": window, "role": "source"} for leaf in hive["leaves"]]
    ds.attrs.update(zagg_objects=objects, zagg_level=level_attrs)
    return ds


def _derived_level(
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
) -> xr.Dataset:
    """An overview or column level, from the stamped objects the root MOC's shards name.

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
    ds = readable_level(storage, level, objects, schema_objects, cover, index_kind, attrs, verify_chunks)
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
    cands = overview_candidates(shards, level.node_order, stem)
    docs = read_cache_roots(storage, [p for _, p in cands])
    out = []
    window = None if stem == ALL_TOKEN and not manifest.windowed else stem
    for (node, path), doc in zip(cands, docs, strict=True):
        stamp = stamp_of(doc)
        if doc is None or stamp is None:
            continue
        attrs = doc.get("attributes") or {}
        role = attrs.get("role")
        where = storage.describe(path)
        if role is None:
            out.append(
                DerivedObject(
                    node, path, {"node": node, "window": window, "role": "source"}, None, recorded_hashes(stamp)
                )
            )
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
                    f"declaration derives level o{level.cell_order}; "
                    "dropped (open /2 levels by their declared cell order)"
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
        out.append(
            DerivedObject(
                node,
                path,
                {"node": node, "window": window, "role": "overview", "zagg_overview": block},
                names,
                recorded_hashes(stamp),
            )
        )
    return out


def _column_objects(
    storage: Storage, manifest: Manifest, level: Level, shard_decimals: list[str], stem: str, window: str | None
) -> list[DerivedObject]:
    pg = manifest.path_grouping
    paths = [f"{ids.hive_node(d, pg)}/{stem}.pyramid.zarr" for d in shard_decimals]
    out = []
    for node, path, doc in zip(shard_decimals, paths, read_cache_roots(storage, paths), strict=True):
        stamp = stamp_of(doc)
        if doc is None or stamp is None:
            continue
        attrs = doc.get("attributes") or {}
        block = attrs.get("zagg_column")
        where = storage.describe(path)
        if attrs.get("role") != "column" or not isinstance(block, dict) or block.get("spec") not in COLUMN_SPECS:
            _drop(
                f"{where}: not an interpretable column (role {attrs.get('role')!r}, zagg_column spec "
                f"{block.get('spec') if isinstance(block, dict) else None!r}); dropped"
            )
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
        out.append(
            DerivedObject(
                node,
                path,
                {"node": node, "window": window, "role": "column", "zagg_column": block},
                names,
                recorded_hashes(stamp),
            )
        )
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
        storage, schema, parts, domain, index_kind=index_kind, attrs=attrs, verify_chunks=verify_chunks
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


# -- many levels -------------------------------------------------------------------------------------
def open_pyramid(
    store_root,
    levels=None,
    aoi=None,
    window: str | None = None,
    all_time: bool = False,
    *,
    time=None,
    index_kind: str = "moc",
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    verify_chunks: bool = False,
) -> xr.DataTree:
    """Every materialized level of a store as a DataTree: an empty root, children ``o{cell_order}``, finest first.

    The root carries ``morton_hive`` (the manifest summary), ``zagg_pyramid``
    (the normalized declaration) and the manifest's ``multiscales`` verbatim
    when present. ``levels`` limits the cell orders assembled. Declared but
    unmaterialized levels are omitted with their warning. ``all_time=True``
    opens the cross-window folds (overview levels only); it is refused when the
    declaration never carried all-time folds. ``aoi=`` takes any place, met at
    each level's own cell order; ``time=(start, end)`` stacks the overlapping
    windows in every level. ``verify_chunks`` as :func:`open_level`. Raises
    :class:`LevelError` for a bad ``levels``.
    """
    levels = check_levels(levels)
    aoi = as_place(aoi)
    window = window_or_time(window, time)
    verify_chunks = check_verify_chunks(verify_chunks)
    storage = Storage.open(store_root, storage_options, concurrency)
    manifest = read_manifest(storage)
    return pyramid_tree(
        storage, manifest, levels, aoi, window, all_time, index_kind=index_kind, verify_chunks=verify_chunks
    )


def pyramid_tree(
    storage, manifest, levels=None, aoi=None, window=None, all_time=False, *, index_kind="moc", verify_chunks=False
) -> xr.DataTree:
    """:func:`open_pyramid` on an open storage and manifest."""
    decl = pyramid_declaration(manifest)
    check_all_time(manifest, window, all_time)
    if all_time and not (decl and decl.all_time):
        raise WindowError(f"{manifest.location}: the pyramid declaration carries no all-time folds (all_time is false)")
    table = pyramid_levels(manifest)
    if levels is not None:
        wanted = check_levels(levels)
        assert wanted is not None  # levels is not None, so check_levels gave a set (or raised)
        unknown = wanted - {lv.cell_order for lv in table}
        if unknown:
            raise LevelError(
                f"{manifest.location}: cell orders {sorted(unknown)} are not levels; "
                f"levels: {[lv.cell_order for lv in table]}"
            )
        table = [lv for lv in table if lv.cell_order in wanted]
    if all_time:
        table = [lv for lv in table if lv.artifact == "overview"]
    root_attrs = {"morton_hive": manifest.summary(), "zagg_pyramid": (decl.to_attrs() if decl else None)}
    if manifest.semantic_hash:
        root_attrs["semantic_hash"] = manifest.semantic_hash
    if manifest.multiscales is not None:
        root_attrs["multiscales"] = manifest.multiscales
    children = {}
    for lv in table:
        ds = open_level_or_omit(
            storage,
            manifest,
            lv.cell_order,
            window,
            aoi,
            all_time,
            index_kind=index_kind,
            named=levels is not None,
            verify_chunks=verify_chunks,
        )
        if ds is not None:
            children[f"o{lv.cell_order}"] = xr.DataTree(ds)
    return xr.DataTree(xr.Dataset(attrs=root_attrs), children=children)


def level_demotions(obj) -> list[dict]:
    """Every stamped ``demotions`` record of a level Dataset or a tree, flattened, each with its object's node.

    Passed through unvalidated (a pre-spec key); an empty list proves nothing.
    """
    datasets = (
        [obj] if isinstance(obj, xr.Dataset) else [n.ds for n in obj.subtree] if isinstance(obj, xr.DataTree) else [obj]
    )
    out: list[dict] = []
    for ds in datasets:
        for entry in ds.attrs.get("zagg_objects") or []:
            block = entry.get("zagg_overview") or {}
            out.extend(
                {
                    "node": entry.get("node"),
                    "window": entry.get("window"),
                    "cell_order": block.get("cell_order"),
                    **record,
                }
                for record in block.get("demotions") or []
            )
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
