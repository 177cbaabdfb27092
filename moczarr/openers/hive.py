"""``open_hive`` and ``open_leaf``: source leaves as one lazy Dataset (FORMAT.md §12).

The data flow, one function a step::

    manifest -> candidate leaves (root MOC | walk) -> stamps (one batched read)
             -> admitted leaves (debris, box reject, version pointers)
             -> row domain (subtrees ∩ AOI) -> lazy arrays -> Dataset

The steps up to the admitted leaves and their schema are in :mod:`moczarr.openers.leaves`.
"""

from __future__ import annotations

import os
from collections.abc import Collection

import mortie
import numpy as np
import xarray as xr

from .. import ids
from ..dataplane.assemble import Part, Schema, build_dataset, check_verify_chunks, domain_of, rows_in
from ..errors import ArgumentError, EmptySelectionWarning, UncommittedError, WindowError, warn
from ..format.coverage import decode_bitmap, stamp_coverage
from ..format.manifest import Manifest, check_window
from ..format.roster import read_manifest
from ..format.stamps import LeafRef, leaf_data_prefix, read_stamp, stamp_of, walk_leaves, windows_present
from ..places import aoi_cover, as_place
from ..storage import DEFAULT_CONCURRENCY, Storage, keys
from .leaves import (
    Leaf,
    admit_leaves,
    drop_gone_versions,
    empty_selection_schema,
    first_schema,
    leaf_schema,
    leaf_summary,
    swapped_box_hint,
)
from .leaves import candidate_leaves as candidate_leaves
from .leaves import root_shards as root_shards
from .times import TimeRange, check_time_store, over_windows, window_or_time


def open_hive(
    store_root,
    aoi=None,
    window: str | None = None,
    *,
    time=None,
    index_kind: str = "moc",
    fabricate_cell_ids: str | bool = "auto",
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    batch_bytes: int | None = None,
    verify_chunks: bool = False,
) -> xr.Dataset:
    """Open every selected source leaf of a store as one lazy ``xarray.Dataset``.

    Parameters
    ----------
    store_root : str or path
        A bare store root (local path, ``file://`` or ``s3://`` URL).
    aoi : optional
        Any place :mod:`moczarr.places` accepts (ids, ``BBox``, ``Circle``, geometries,
        GeoJSON, WKT: docs/places.md). Rows are the cells meeting it; ``[]`` selects none.
    window : str, optional
        Required on a time-windowed (``morton-hive/2``) store, refused otherwise.
    time : (start, end), optional
        Instead of ``window=``: every window overlapping ``[start, end)``, on a ``window`` dimension.
    index_kind : {"moc", "pandas"}
        ``moc`` (default) holds the row domain as intervals; ``pandas`` materializes it.
    fabricate_cell_ids : {"auto", True, False}
        ``auto`` keeps a stored ``cell_ids`` and fabricates NESTED ids otherwise.
    storage_options : dict, optional
        fsspec options for URLs (``{"anon": True}``, endpoint, credentials).
    concurrency : int
        Requests in flight at once on object storage, at open and at compute.
    batch_bytes : int, optional
        Decoded bytes of one variable a dask task reads from many leaves at once (default 4 MiB).
    verify_chunks : bool
        ``True``: every chunk a computation reads is checked against the digest its
        stamp records (``content_hashes``); ``False`` (default) reads the stored values
        as they are. What it costs and why it is off: docs/api.md.

    Returns a Dataset with one ``cells`` dimension in ascending packed-word order, the
    ``morton`` coordinate, lazy (dask) data variables and the store summary in
    ``attrs["morton_hive"]``. No data or coordinate chunk is read.

    Raises
    ------
    NotAHiveStoreError, ManifestError
        No manifest, or a malformed one.
    AOIError, ArgumentError
        An ``aoi=`` that is no place, a ``batch_bytes`` not a positive integer (checked before any read).
    WindowError
        A window missing, refused, malformed, undeclared, or ``"all"``; a bad ``time=``.
    NoCoverageError, StaleCoverageError
        No stamped leaf at all; an unscoped open whose root MOC names no committed leaf.
    CoverageError, VersionPointerError, StampError
        Corrupt coverage or stamp content.
    ContentHashError
        When computed: a chunk whose values are not those its stamp records.

    Warns ``CoverageFallbackWarning`` when walking for lack of a usable root MOC,
    ``DebrisWarning`` for a stamped pointer to a missing version, and ``EmptySelectionWarning``
    (with a 0-row, schema-correct result) when the AOI or window selects nothing.
    """
    aoi = as_place(aoi)
    window = window_or_time(window, time)
    check_batch_bytes(batch_bytes)
    verify_chunks = check_verify_chunks(verify_chunks)
    storage = Storage.open(store_root, storage_options, concurrency)
    manifest = read_manifest(storage)
    return open_source(
        storage,
        manifest,
        aoi,
        window,
        index_kind=index_kind,
        fabricate_cell_ids=fabricate_cell_ids,
        batch_bytes=batch_bytes,
        verify_chunks=verify_chunks,
    )


def check_batch_bytes(batch_bytes) -> None:
    """Raise :class:`~moczarr.errors.ArgumentError` unless ``batch_bytes`` is None or a positive integer."""
    if batch_bytes is not None and (
        isinstance(batch_bytes, bool) or not isinstance(batch_bytes, (int, np.integer)) or batch_bytes <= 0
    ):
        raise ArgumentError(f"batch_bytes={batch_bytes!r} must be a positive number of bytes (or None: 4 MiB)")


def open_source(
    storage: Storage,
    manifest: Manifest,
    aoi=None,
    window: str | None = None,
    *,
    index_kind: str = "moc",
    fabricate_cell_ids: str | bool = "auto",
    extra_attrs: dict | None = None,
    batch_bytes: int | None = None,
    verify_chunks: bool = False,
    variables: Collection[str] | None = None,
) -> xr.Dataset:
    """:func:`open_hive` on an already-open storage and manifest (shared by the tree openers).

    ``window`` may be a :class:`~moczarr.openers.times.TimeRange` (``time=``): each
    overlapping window is opened and the results stacked on ``window``.
    ``variables`` limits the data variables built (None: every one; see
    :func:`~moczarr.dataplane.assemble.build_dataset`).
    """
    shards = root_shards(storage, manifest)
    if isinstance(window, TimeRange):
        check_time_store(manifest, window)
        present = _labels(storage, manifest, shards)
        return over_windows(
            manifest,
            present,
            window,
            open_one=lambda label, empty=False: open_source(
                storage,
                manifest,
                [] if empty else aoi,
                label,
                index_kind=index_kind,
                fabricate_cell_ids=fabricate_cell_ids,
                extra_attrs=extra_attrs,
                verify_chunks=verify_chunks,
                variables=variables,
            ),
        )
    window = check_window(manifest, window, lambda: _labels(storage, manifest, shards))
    cover = aoi_cover(aoi, manifest.cell_order)
    candidates = candidate_leaves(storage, manifest, shards, window, cover)
    leaves = admit_leaves(storage, manifest, candidates, cover, named_by_moc=shards is not None)
    leaves, corrupted = drop_gone_versions(storage, manifest, leaves)
    schema, leaves, skipped = first_schema(storage, manifest, leaves)
    corrupted |= skipped
    if schema is None:
        schema = empty_selection_schema(storage, manifest, corrupted, scoped=aoi is not None or window is not None)
        if aoi is None and window is not None:
            present = _labels(storage, manifest, shards)
            if window not in present:
                raise WindowError(
                    f"{storage.describe()}: window {window!r} holds no leaf in this store; "
                    f"windows present: {', '.join(present) or '(none)'}"
                )
        what = "the AOI" + (f" {aoi.text}" if hasattr(aoi, "text") else "") if aoi is not None else f"window {window!r}"
        warn(
            f"{storage.describe()}: {what} selects no committed leaf; returning the schema with 0 rows"
            + swapped_box_hint(shards, aoi, manifest.cell_order),
            EmptySelectionWarning,
        )
    attrs = {"morton_hive": {**manifest.summary(), "window": window, **leaf_summary(leaves)}}
    attrs.update(extra_attrs or {})
    return leaves_dataset(
        storage,
        manifest,
        leaves,
        cover,
        schema,
        index_kind,
        fabricate_cell_ids,
        attrs,
        batch_bytes,
        verify_chunks,
        variables=variables,
    )


def leaves_dataset(
    storage: Storage,
    manifest: Manifest,
    leaves: list[Leaf],
    cover: np.ndarray | None,
    schema: Schema,
    index_kind: str,
    fabricate_cell_ids,
    attrs: dict,
    batch_bytes: int | None = None,
    verify_chunks: bool = False,
    *,
    variables: Collection[str] | None = None,
) -> xr.Dataset:
    """The Dataset of admitted leaves under ``schema``: domain arithmetic, then lazy assembly.

    Reads are checked against each leaf's recorded content hashes when ``verify_chunks``;
    ``variables`` limits the data variables built (None: every one).
    """
    group = str(manifest.cell_order)
    words = np.fromiter((lf.word for lf in leaves), dtype=np.uint64, count=len(leaves))
    domain = domain_of(words, manifest.cell_order, cover)
    first, _ = ids.subtree_rank_bounds(words, manifest.shard_order, manifest.cell_order)
    n_cells = manifest.cells_per_leaf
    sels = [None] * len(leaves) if cover is None else rows_in(domain, first, n_cells)  # no AOI: whole leaves
    parts = [Part(f"{lf.prefix}/{group}", n_cells, s, lf.hashes) for lf, s in zip(leaves, sels, strict=True)]
    return build_dataset(
        storage,
        schema,
        parts,
        domain,
        index_kind=index_kind,
        fabricate_cell_ids=fabricate_cell_ids,
        attrs=attrs,
        batch_bytes=batch_bytes,
        verify_chunks=verify_chunks,
        variables=variables,
    )


def list_windows(store_root, *, storage_options: dict | None = None) -> list[str]:
    """Window labels of a store: declared ones (explicit schedules), else those found at the shard nodes.

    ``[]`` on an unwindowed store. Costs LISTs on generative schedules (the
    manifest does not record which windows were written).
    """
    storage = Storage.open(store_root, storage_options)
    manifest = read_manifest(storage)
    if not manifest.windowed:
        return []
    return _labels(storage, manifest, root_shards(storage, manifest))


def _labels(storage: Storage, manifest: Manifest, shards: np.ndarray | None) -> list[str]:
    """Window labels present (error paths only): declared labels, else a LIST of shard nodes."""
    if manifest.declared_windows:
        return manifest.declared_windows
    if shards is not None:
        return windows_present(storage, ids.to_decimals(shards), manifest.path_grouping)
    return sorted({r.window for r in walk_leaves(storage, manifest.shard_order, manifest.path_grouping) if r.window})


def open_leaf(
    store_root,
    leaf: str,
    *,
    stamp: dict | None = None,
    index_kind: str = "moc",
    fabricate_cell_ids: str | bool = "auto",
    storage_options: dict | None = None,
    verify_chunks: bool = False,
) -> xr.Dataset:
    """One leaf as a lazy ``xarray.Dataset`` (all cells of its shard).

    ``leaf`` is the shard's decimal id, ``{id}_{window}``, or the stable leaf
    path. The root stamp is read (one GET) unless ``stamp=`` is given; a
    ``current`` pointer is followed. With ``verify_chunks=True`` reads are
    checked against the stamp's ``content_hashes`` (see :func:`open_hive`).
    Raises :class:`ArgumentError` for a ``leaf`` that names no leaf of the
    store's shard order, :class:`UncommittedError` for a missing or unstamped leaf and
    :class:`VersionPointerError` for a bad pointer; computing raises
    :class:`~moczarr.errors.ContentHashError` for a chunk that is not the recorded one.
    """
    verify_chunks = check_verify_chunks(verify_chunks)
    storage = Storage.open(store_root, storage_options)
    manifest = read_manifest(storage)
    decimal, window, path = resolve_leaf(leaf, manifest)
    if stamp is None:
        stamp = stamp_of(storage.get_json(f"{path}/zarr.json"))
        if stamp is None:
            raise UncommittedError(
                f"{storage.describe(path)}: no committed leaf there (missing, or debris without a stamp)"
            )
    ref = LeafRef(decimal, window, path)
    lf = Leaf.admit(ref, stamp, storage.describe(path), stamp)
    attrs = {"morton_hive": {**manifest.summary(), "window": window, **leaf_summary([lf])}}
    return leaves_dataset(
        storage,
        manifest,
        [lf],
        None,
        leaf_schema(storage, manifest, lf),
        index_kind,
        fabricate_cell_ids,
        attrs,
        verify_chunks=verify_chunks,
    )


def read_coverage_bitmap(
    store_root,
    leaf: str,
    *,
    stamp: dict | None = None,
    storage_options: dict | None = None,
) -> np.ndarray | None:
    """The exact occupied cells of one leaf as packed words at the store's cell order.

    ``leaf`` is the decimal id (with ``_window`` on windowed stores) or its
    stable leaf path. Reads the root stamp (one GET) unless ``stamp=`` is
    given, follows a ``current`` pointer, then reads the sidecar.

    Returns all cells of the shard for ``encoding: "full"``; None when the
    leaf is not committed, the stamp declares no bitmap, or the sidecar is
    missing (no answer: use the box). Raises :class:`CoverageError` for a
    corrupt sidecar and :class:`~moczarr.errors.VersionPointerError` for a
    bad ``current``.
    """
    storage = Storage.open(store_root, storage_options)
    manifest = read_manifest(storage)
    decimal, _, path = resolve_leaf(leaf, manifest)
    if stamp is None:
        stamp = read_stamp(storage, path)
        if stamp is None:
            return None
    cov = stamp_coverage(stamp)
    if cov is None:
        return None
    shard = ids.to_words(decimal)
    depth = manifest.cell_order - manifest.shard_order
    if cov.get("encoding") == "full":
        return np.asarray(mortie.generate_morton_children(shard[0], manifest.cell_order), dtype=np.uint64).ravel()
    if cov.get("encoding") != "bitmap":
        return None
    prefix = leaf_data_prefix(path, stamp, where=storage.describe(path))
    sidecar = keys.sidecar_name(cov.get("sidecar") or "coverage.moc", f"{storage.describe(path)}: stamp coverage")
    payload = storage.get_bytes(f"{prefix}/{sidecar}")
    if payload is None:
        return None
    ranks = decode_bitmap(payload, depth, storage.describe(f"{prefix}/{sidecar}")).astype(np.uint64)
    lo, _ = ids.subtree_rank_bounds(shard, manifest.shard_order, manifest.cell_order)
    return ids.words_from_ranks(lo[0] + ranks, manifest.cell_order)


def resolve_leaf(leaf: str, manifest: Manifest) -> tuple[str, str | None, str]:
    """``(decimal, window, stable leaf path)`` of a leaf named by id, ``id_window`` or path."""
    if not isinstance(leaf, (str, os.PathLike)):
        raise ArgumentError(f"leaf={leaf!r} must be a str: a decimal id ('4331421'), id_window, or a leaf path")
    leaf = os.fspath(leaf)
    if "\x00" in leaf:
        raise ArgumentError(f"leaf={leaf!r} holds a NUL byte: not a leaf id or path")
    name = os.path.basename(leaf.rstrip("/"))
    parsed = ids.parse_leaf_name(name if name.endswith(".zarr") else f"{name}.zarr")
    if parsed is None:
        raise ArgumentError(f"leaf={leaf!r} does not name a leaf (an id, id_window, or a leaf path)")
    decimal, window = parsed
    if ids.decimal_order(decimal) != manifest.shard_order:
        raise ArgumentError(f"leaf={leaf!r} is not at the store's shard order {manifest.shard_order}")
    return decimal, window, ids.leaf_path(decimal, window, manifest.path_grouping)


__all__ = ["list_windows", "open_hive", "open_leaf", "open_source", "read_coverage_bitmap"]
