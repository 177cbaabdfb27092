"""``open_hive`` and ``open_leaf``: source leaves as one lazy Dataset (FORMAT.md §12).

The data flow, one function a step::

    manifest -> candidate leaves (root MOC | walk) -> stamps (one batched read)
             -> admitted leaves (debris, box reject, version pointers)
             -> row domain (subtrees ∩ AOI) -> lazy arrays -> Dataset
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Literal, NamedTuple, overload

import mortie
import numpy as np
import xarray as xr

from .. import ids
from ..dataplane.assemble import (
    Part,
    Schema,
    build_dataset,
    check_verify_chunks,
    domain_of,
    read_schema,
    rows_in,
)
from ..errors import (
    ArgumentError,
    CoverageFallbackWarning,
    DebrisWarning,
    EmptySelectionWarning,
    MissingLeafWarning,
    NoCoverageError,
    StaleCoverageError,
    UncommittedError,
    WindowError,
    warn,
)
from ..format.content import recorded_hashes
from ..format.coverage import (
    ROOT_MOC_NAME,
    box_words,
    decode_bitmap,
    meets,
    parse_root_moc,
    stamp_coverage,
)
from ..format.integrity import check_cells_extent, leaf_stamp_fields
from ..format.manifest import Manifest, check_window
from ..format.roster import read_manifest
from ..format.stamps import (
    LeafRef,
    check_missing_version,
    leaf_data_prefix,
    parse_root,
    read_stamp,
    stamp_of,
    stamped_array_names,
    walk_leaves,
    windows_present,
)
from ..places import aoi_cover, as_place
from ..storage import DEFAULT_CONCURRENCY, Storage, keys
from .times import TimeRange, check_time_store, over_windows, window_or_time


class Leaf(NamedTuple):
    """A committed leaf admitted to an open: where it is, where its arrays are, and what its stamp says.

    An open holds one per leaf while it runs, so a leaf keeps its stamp's
    fields as plain values and the stamp itself as the bytes it was read as
    (``source``, parsed again on demand: only the leaf giving the schema needs
    it), or as the stamp a caller handed over. Thousands of parsed stamps kept
    alive would be tens of thousands of containers for the cyclic garbage
    collector to scan again and again while the open allocates. ``hashes`` is
    the stamp's ``content_hashes`` map (:func:`~moczarr.format.content.recorded_hashes`;
    a root stamp mirrors its version's, FORMAT.md §5.3), what every read of the
    leaf is checked against. A named tuple: the cheapest record to make, one per leaf.
    """

    ref: LeafRef
    prefix: str
    written_at: str | None
    time_range: tuple[str, str] | None
    cells_with_data: int
    granule_count: int
    hashes: Mapping | None
    source: bytes | dict

    @classmethod
    def admit(cls, ref: LeafRef, stamp: dict, where: str, source: bytes | dict) -> Leaf:
        """The leaf of a committed stamp, its fields checked.

        Raises :class:`StampError` naming the leaf for an unknown spec or a
        mistyped field, :class:`~moczarr.errors.VersionPointerError` for a bad ``current``.
        """
        return cls(
            ref,
            leaf_data_prefix(ref.path, stamp, where=where),
            *leaf_stamp_fields(stamp, where, ref.path),
            recorded_hashes(stamp),
            source,
        )

    @property
    def stamp(self) -> dict:
        """The commit stamp (parsed again from ``source`` when that is the document's bytes)."""
        if isinstance(self.source, dict):
            return self.source
        stamp = stamp_of(json.loads(self.source))
        assert stamp is not None  # source is the bytes a committed stamp was read from (admit_leaves)
        return stamp

    @property
    def versioned(self) -> bool:
        return self.prefix != self.ref.path

    @property
    def word(self) -> int:
        return self.ref.word if self.ref.word is not None else int(ids.to_words(self.ref.decimal)[0])


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
        Any place :mod:`moczarr.places` accepts: morton ids (decimal strings,
        packed words, lists, a ``mortie.Moc``), ``moczarr.BBox``,
        ``moczarr.Circle``, a shapely geometry, GeoJSON or WKT. Rows are the
        cells (at the store's cell order) that meet it; ``[]`` selects none.
    window : str, optional
        Required on a time-windowed (``morton-hive/2``) store, refused otherwise.
    time : (start, end), optional
        Instead of ``window=``: every window overlapping ``[start, end)``,
        stacked on a ``window`` dimension (see :mod:`moczarr.openers.times`).
    index_kind : {"moc", "pandas"}
        ``moc`` (default) holds the row domain as intervals; ``pandas`` materializes it.
    fabricate_cell_ids : {"auto", True, False}
        ``auto`` keeps a stored ``cell_ids`` and fabricates NESTED ids otherwise.
    storage_options : dict, optional
        fsspec options for URLs (``{"anon": True}``, endpoint, credentials).
    concurrency : int
        Requests in flight at once on object storage, at open and at compute.
    batch_bytes : int, optional
        Decoded bytes per read task (default 4 MiB): each dask task reads this
        much of one variable from many leaves in one batched read.
    verify_chunks : bool
        ``True``: where a leaf's stamp records ``content_hashes`` (the newest
        zagg writers), every chunk a computation reads is hashed and compared
        with the stamp's digest before it is used; a replaced or deleted chunk
        raises :class:`~moczarr.errors.ContentHashError`. ``False`` (default:
        the check adds about 20% to a full load, ``benchmarks/bench_load.py``)
        reads the stored values as they are; ``moczarr-catalog verify`` checks
        a whole store.

    Returns a Dataset with one ``cells`` dimension in ascending packed-word
    order, the ``morton`` coordinate, lazy (dask) data variables and the store
    summary in ``attrs["morton_hive"]``. No data or coordinate chunk is read.

    Raises
    ------
    NotAHiveStoreError, ManifestError
        No manifest, or a malformed one.
    AOIError
        An ``aoi=`` that is no place (checked before any read).
    ArgumentError
        A ``batch_bytes`` that is not a positive integer (checked before any read).
    WindowError
        A window missing, refused, malformed, undeclared, or ``"all"``; a bad ``time=``.
    NoCoverageError
        The store holds no stamped leaf at all.
    StaleCoverageError
        Unscoped open whose root MOC names none of the committed leaves.
    CoverageError, VersionPointerError, StampError
        Corrupt coverage or stamp content.
    ContentHashError
        When computed: a chunk whose values are not those its stamp records.

    Warns ``CoverageFallbackWarning`` when walking for lack of a usable root
    MOC, ``DebrisWarning`` for a stamped pointer to a missing version, and
    ``EmptySelectionWarning`` (with a 0-row, schema-correct result) when the
    AOI or window selects nothing.
    """
    aoi = as_place(aoi)
    window = window_or_time(window, time)
    if batch_bytes is not None and (
        isinstance(batch_bytes, bool) or not isinstance(batch_bytes, (int, np.integer)) or batch_bytes <= 0
    ):
        raise ArgumentError(f"batch_bytes={batch_bytes!r} must be a positive number of bytes (or None: 4 MiB)")
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
) -> xr.Dataset:
    """:func:`open_hive` on an already-open storage and manifest (shared by the tree openers).

    ``window`` may be a :class:`~moczarr.openers.times.TimeRange` (``time=``): each
    overlapping window is opened and the results stacked on ``window``.
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
            ),
        )
    window = check_window(manifest, window, lambda: _labels(storage, manifest, shards))
    cover = aoi_cover(aoi, manifest.cell_order)
    candidates = candidate_leaves(storage, manifest, shards, window, cover)
    leaves = admit_leaves(storage, manifest, candidates, cover, named_by_moc=shards is not None)
    schema, leaves, corrupted = first_schema(storage, manifest, leaves)
    if schema is None:
        schema = empty_selection_schema(storage, manifest, corrupted, scoped=aoi is not None or window is not None)
        if aoi is None and window is not None:
            present = _labels(storage, manifest, shards)
            if window not in present:
                raise WindowError(
                    f"{storage.describe()}: window {window!r} holds no leaf in this store; "
                    f"windows present: {', '.join(present) or '(none)'}"
                )
        warn(
            f"{storage.describe()}: the {'AOI' if aoi is not None else f'window {window!r}'} selects no committed "
            "leaf; returning the schema with 0 rows",
            EmptySelectionWarning,
        )
    attrs = {"morton_hive": {**manifest.summary(), "window": window, **leaf_summary(leaves)}}
    attrs.update(extra_attrs or {})
    return leaves_dataset(
        storage, manifest, leaves, cover, schema, index_kind, fabricate_cell_ids, attrs, batch_bytes, verify_chunks
    )


def root_shards(storage: Storage, manifest: Manifest) -> np.ndarray | None:
    """Shard words from the root ranges MOC (one GET per open), or None when the cache is unusable."""
    key = ("root_shards", manifest.shard_order)
    if key not in storage.memo:
        storage.memo[key] = parse_root_moc(storage.get_bytes(ROOT_MOC_NAME), manifest.shard_order, storage.describe())
    return storage.memo[key]


def candidate_leaves(
    storage: Storage, manifest: Manifest, shards: np.ndarray | None, window: str | None, cover: np.ndarray | None
) -> list[LeafRef]:
    """Leaves worth a stamp read: root MOC shards (or the walk's finds) meeting the AOI, for the window."""
    pg = manifest.path_grouping
    if shards is None:
        warn(
            f"{storage.describe()}: no usable root coverage.moc; falling back to the discovery walk",
            CoverageFallbackWarning,
        )
        refs = [r for r in walk_leaves(storage, manifest.shard_order, pg) if r.window == window]
        if cover is not None and refs:
            keep = meets(ids.to_words([r.decimal for r in refs]), cover)
            refs = [r for r, k in zip(refs, keep, strict=True) if k]
        return refs
    if cover is not None and shards.size:
        shards = shards[meets(shards, cover)]
    return [
        LeafRef(d, window, ids.leaf_path(d, window, pg), w)
        for d, w in zip(ids.to_decimals(shards), shards.tolist(), strict=True)
    ]


def admit_leaves(
    storage: Storage,
    manifest: Manifest,
    candidates: list[LeafRef],
    cover: np.ndarray | None,
    *,
    named_by_moc: bool = False,
) -> list[Leaf]:
    """Read the candidates' stamps (one batch) and keep the committed leaves worth opening.

    Unstamped prefixes are debris and skipped silently. A stamped box that
    misses the AOI is rejected. A version pointer is followed at no cost: the
    version's objects are not read here (a version that is gone shows when its
    leaf is read: :func:`first_schema`, and at compute the data plane). A shard
    the root MOC names (``named_by_moc``) of an unwindowed store whose leaf is
    missing entirely (no ``zarr.json``) is left out with a :class:`MissingLeafWarning`.
    """
    payloads = storage.get_many([f"{c.path}/zarr.json" for c in candidates])
    missing = [ref.path for ref, payload in zip(candidates, payloads, strict=True) if payload is None]
    if named_by_moc and missing and not manifest.windowed:
        warn(
            f"{storage.describe()}: the root coverage.moc names {len(missing)} shard(s) with no leaf at all "
            f"(e.g. {missing[0]}): removed out of band, or a stale MOC; left out",
            MissingLeafWarning,
        )
    admitted: list[Leaf] = []
    for ref, payload in zip(candidates, payloads, strict=True):  # each document parsed, used and dropped in turn
        if payload is None:
            continue  # no leaf at all (in ``missing`` above)
        stamp = stamp_of(parse_root(payload, storage.describe(f"{ref.path}/zarr.json")))
        if stamp is None:
            continue
        if cover is not None:
            box = box_words(stamp)
            if box is not None and not meets(box, cover).any():
                continue
        admitted.append(Leaf.admit(ref, stamp, storage.describe(ref.path), payload))
    return admitted


def first_schema(
    storage: Storage, manifest: Manifest, leaves: list[Leaf]
) -> tuple[Schema | None, list[Leaf], set[str]]:
    """The schema of the first leaf whose data group is there, the leaves without those skipped before it, and
    the paths of the skipped ones.

    The array schemas are read once, from one leaf, whatever kind the leaves
    are (FORMAT.md §5.3: a versioned store opens with the legacy request set).
    A versioned leaf whose data group is missing is told apart by its version's
    stamp (one GET, on that path only; FORMAT.md §5.5): a version that is gone
    is debris, skipped with a :class:`DebrisWarning` and the next leaf gives the
    schema; a stamped one raises :class:`StampError`, as does a legacy leaf's
    missing group. ``(None, [], paths)`` when every leaf's version is gone.
    """
    group = str(manifest.cell_order)
    corrupted: set[str] = set()
    for i, lf in enumerate(leaves):
        schema = leaf_schema(storage, manifest, lf, missing_ok=lf.versioned)
        if schema is None:
            check_missing_version(storage, lf.prefix, group)
            warn(
                f"{storage.describe(lf.ref.path)}: stamp points at version {lf.stamp['current']!r}, which is missing "
                "or unstamped (committed data removed out of band); leaf skipped",
                DebrisWarning,
            )
            corrupted.add(lf.ref.path)
            continue
        return schema, [lf, *leaves[i + 1 :]], corrupted
    return None, [], corrupted


@overload
def leaf_schema(storage: Storage, manifest: Manifest, lf: Leaf, *, missing_ok: Literal[False] = False) -> Schema: ...
@overload
def leaf_schema(storage: Storage, manifest: Manifest, lf: Leaf, *, missing_ok: bool) -> Schema | None: ...
def leaf_schema(storage: Storage, manifest: Manifest, lf: Leaf, *, missing_ok: bool = False) -> Schema | None:
    """The data group schema of one leaf, its ``cells`` extents checked against the manifest.

    None for a missing group when ``missing_ok``. Raises :class:`StampError`
    when the group is missing (else) or malformed and
    :class:`~moczarr.errors.SchemaError` for unusable array metadata.
    """
    group = str(manifest.cell_order)
    where = f"{lf.prefix}/{group}"
    schema = read_schema(storage, where, stamped_array_names(lf.stamp, group), missing_ok=missing_ok)
    if schema is not None:
        check_cells_extent(schema.arrays, lambda a: a.cells_axis, manifest.cells_per_leaf, storage.describe(where))
    return schema


def empty_selection_schema(storage: Storage, manifest: Manifest, corrupted: set[str], *, scoped: bool) -> Schema:
    """The schema of a committed leaf when a selection is empty (FORMAT.md §12): the walk's first live leaf.

    Leaves at ``corrupted`` (paths whose version :func:`first_schema` found gone) are passed over unread.

    Raises :class:`NoCoverageError` when the store has no stamped leaf at all,
    and :class:`StaleCoverageError` when an unscoped open found none through the
    root MOC although committed leaves exist.
    """
    for ref in walk_leaves(storage, manifest.shard_order, manifest.path_grouping):
        if ref.path in corrupted:
            continue
        stamp = read_stamp(storage, ref.path)
        if stamp is None:
            continue
        leaf = Leaf.admit(ref, stamp, storage.describe(ref.path), stamp)
        schema, live, _ = first_schema(storage, manifest, [leaf])
        if not live:
            continue
        assert schema is not None  # first_schema gives a schema with every non-empty list of leaves
        if not scoped:
            raise StaleCoverageError(
                f"{storage.describe()}: committed leaves exist (e.g. {ref.path}) but the root coverage.moc "
                "names none of them; the MOC is stale: rebuild it"
            )
        return schema
    raise NoCoverageError(f"{storage.describe()}: the store holds no committed (stamped) leaf")


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
) -> xr.Dataset:
    """The Dataset of admitted leaves under ``schema``: domain arithmetic, then lazy assembly.

    Reads are checked against each leaf's recorded content hashes when ``verify_chunks``.
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
    )


def leaf_summary(leaves: list[Leaf]) -> dict:
    """What the admitted leaves' stamps say (checked when they were admitted), summarized for ``attrs``."""
    written = sorted(lf.written_at for lf in leaves if lf.written_at is not None)
    ranges = [lf.time_range for lf in leaves if lf.time_range is not None]
    out = {
        "n_leaves": len(leaves),
        "leaves": [lf.ref.decimal for lf in leaves],
        "n_versioned": sum(1 for lf in leaves if lf.versioned),
        "cells_with_data": sum(lf.cells_with_data for lf in leaves),
        "granule_count": sum(lf.granule_count for lf in leaves),
    }
    if written:
        out["written_at"] = [written[0], written[-1]]
    if ranges:
        out["time_range"] = [min(r[0] for r in ranges), max(r[1] for r in ranges)]
    return out


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
