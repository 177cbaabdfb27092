"""Pyramids: the declaration, the resolution table, and one Dataset per level (FORMAT.md §7).

Levels are addressed by **cell order**. The manifest's ``pyramid`` block is the
only source of which levels exist (never a listing, never ``multiscales``);
the objects of a derived level are named arithmetically from the root
coverage MOC's source shards and admitted by their stamps
(:mod:`moczarr.openers.derived`). Derived objects
are caches: an uninterpretable one is dropped with a warning, one that
positively declares the wrong cell order raises, and a level with nothing to
show raises :class:`~moczarr.errors.LevelOmittedError` when it is asked for
(``open_level``) and is left out with a warning by the trees, whose source
level stands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Literal, overload

import numpy as np
import xarray as xr

from ..dataplane.assemble import check_verify_chunks
from ..errors import LevelError, LevelOmittedError, LevelOmittedWarning, WindowError, warn
from ..format.declaration import Level, pyramid_declaration, pyramid_levels
from ..format.manifest import Manifest
from ..format.roster import read_manifest
from ..places import as_place
from ..storage import DEFAULT_CONCURRENCY, Storage
from .derived import derived_level
from .derived import overview_candidates as overview_candidates
from .derived import overview_objects as overview_objects
from .hive import list_windows, open_source
from .times import TimeRange, check_time_store, over_windows, window_or_time


# -- one level --------------------------------------------------------------------------------------
@overload
def open_level(
    store_root,
    cell_order: int | None = None,
    window: str | None = None,
    aoi=None,
    all_time: Literal[False] = False,
    *,
    time=None,
    index_kind: str = "moc",
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    verify_chunks: bool = False,
) -> xr.Dataset: ...
@overload
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
) -> xr.Dataset | None: ...
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
) -> xr.Dataset | None:
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
    :class:`LevelOmittedWarning` instead. ``all_time=True`` reads whatever
    all-time folds are stamped: with none, None and a :class:`LevelOmittedWarning`
    (what is declared says nothing about what is on disk). Raises :class:`LevelError` for a
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
    opener = open_level_or_omit if all_time else open_level_in
    return opener(storage, manifest, order, window, aoi, all_time, index_kind=index_kind, verify_chunks=verify_chunks)


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
) -> xr.Dataset | None:
    """The overview level storing cells at ``cell_order`` (see :func:`open_level`).

    Raises :class:`LevelError` when that order is not an overview level and
    :class:`LevelOmittedError` when it has nothing materialized; with
    ``all_time=True`` and no stamped all-time fold, None and a
    :class:`LevelOmittedWarning` instead.
    """
    cell_order = check_order(cell_order, "cell_order")
    aoi = as_place(aoi)
    verify_chunks = check_verify_chunks(verify_chunks)
    storage = Storage.open(store_root, storage_options)
    manifest = read_manifest(storage)
    level = _level(manifest, cell_order)
    if level.artifact != "overview":
        raise LevelError(f"{manifest.location}: cell order {cell_order} is a {level.artifact} level, not an overview")
    opener = open_level_or_omit if all_time else open_level_in
    return opener(
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
    variables: Collection[str] | None = None,
) -> xr.Dataset:
    """:func:`open_level` on an open storage and manifest (shared by the tree openers).

    ``variables`` names the data variables to build (None, the default: every
    one; a name the level lacks builds nothing, so a caller checks the
    result); the coordinates are built whatever it says. The map tiles open a
    level with the one variable they draw.

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
            variables=variables,
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
        return _source_level(storage, manifest, aoi, window, level_attrs, index_kind, verify_chunks, variables)
    lenient = not named and decl is not None and decl.spec == "zagg-pyramid/1"
    return derived_level(
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
        variables=variables,
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
    variables: Collection[str] | None = None,
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
            variables=variables,
        ),
    )


def _source_level(
    storage: Storage,
    manifest: Manifest,
    aoi,
    window,
    level_attrs: dict,
    index_kind: str,
    verify_chunks: bool,
    variables: Collection[str] | None = None,
) -> xr.Dataset:
    """The source level: :func:`~moczarr.openers.hive.open_source`'s Dataset plus the level attrs."""
    ds = open_source(
        storage, manifest, aoi, window, index_kind=index_kind, verify_chunks=verify_chunks, variables=variables
    )
    hive = ds.attrs["morton_hive"]
    objects = [{"node": leaf, "window": window, "role": "source"} for leaf in hive["leaves"]]
    ds.attrs.update(zagg_objects=objects, zagg_level=level_attrs)
    return ds


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
