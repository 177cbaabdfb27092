"""Occupied rows cheaply: the exact leaf bitmaps where they exist, ``count > 0`` elsewhere (FORMAT.md §6).

zagg leaves are dense within a shard, so an open's rows include every cell
of each selected subtree, occupied or not. :func:`occupied` keeps only the
cells that hold data, answering from the leaves' bitmap sidecars (no data
read) when it is given the store, and from the ``count`` variable otherwise.
"""

from __future__ import annotations

import mortie
import numpy as np
import xarray as xr

from .. import ids
from ..dataplane.assemble import CELLS, COORD
from ..errors import CoverageError
from ..format.coverage import decode_bitmap, stamp_coverage
from ..format.roster import read_manifest
from ..format.stamps import leaf_data_prefix, read_roots, stamp_of
from ..storage import Storage

#: rows per chunk of the regular chunking :func:`occupied` returns
DEFAULT_CHUNK = 4096


def occupied_words(store_root, ds: xr.Dataset, *, storage_options: dict | None = None) -> tuple[np.ndarray, list[str]]:
    """``(words of the occupied cells, leaves with no exact answer)`` of a source-level Dataset's leaves.

    One batched stamp read, then one batched GET per ``bitmap`` leaf for its
    sidecar; ``full`` leaves cost nothing more. Leaves whose stamp declares
    no bitmap (or whose sidecar is missing) come back in the second list,
    for the ``count > 0`` fallback. Raises :class:`CoverageError` for a
    corrupt sidecar.
    """
    hive = ds.attrs.get("morton_hive") or {}
    storage = Storage.open(store_root, storage_options)
    manifest = read_manifest(storage)
    leaves = list(hive.get("leaves") or [])
    window = hive.get("window")
    paths = [ids.leaf_path(d, window, manifest.path_grouping) for d in leaves]
    stamps = [stamp_of(doc) for doc in read_roots(storage, paths)]
    depth = manifest.cell_order - manifest.shard_order
    found, unknown, sidecars = [], [], []
    for decimal, path, stamp in zip(leaves, paths, stamps, strict=True):
        cov = stamp_coverage(stamp) or {}
        encoding = cov.get("encoding")
        if encoding == "full":
            shard = ids.to_words(decimal)[0]
            found.append(
                np.asarray(mortie.generate_morton_children(shard, manifest.cell_order), dtype=np.uint64).ravel()
            )
        elif encoding == "bitmap":
            prefix = leaf_data_prefix(path, stamp, where=storage.describe(path))
            sidecars.append((decimal, f"{prefix}/{cov.get('sidecar') or 'coverage.moc'}"))
        else:
            unknown.append(decimal)
    payloads = storage.get_many([key for _, key in sidecars]) if sidecars else []
    for (decimal, key), payload in zip(sidecars, payloads, strict=True):
        if payload is None:
            unknown.append(decimal)
            continue
        ranks = decode_bitmap(payload, depth, storage.describe(key)).astype(np.uint64)
        lo, _ = ids.subtree_rank_bounds(ids.to_words(decimal), manifest.shard_order, manifest.cell_order)
        found.append(ids.words_from_ranks(lo[0] + ranks, manifest.cell_order))
    words = np.unique(np.concatenate(found)) if found else np.empty(0, np.uint64)
    return words, unknown


def occupied_mask(ds: xr.Dataset, store_root=None, *, storage_options: dict | None = None) -> np.ndarray:
    """Per row of ``ds``: does its cell hold data? (See :func:`occupied`.)"""
    words = np.asarray(ds[COORD].values, dtype=np.uint64)
    hive = ds.attrs.get("morton_hive") or {}
    artifact = (ds.attrs.get("zagg_level") or {}).get("artifact")
    exact = (
        store_root is not None
        and hive.get("leaves") is not None
        and "windows" not in hive
        and artifact in (None, "source")
    )
    if not exact:
        return _count_mask(ds)
    have, unknown = occupied_words(store_root, ds, storage_options=storage_options)
    mask = np.isin(words, have)
    if unknown and words.size:
        parents = np.asarray(mortie.clip2order(int(hive["shard_order"]), words), dtype=np.uint64)
        fallback = np.isin(parents, ids.to_words(unknown))
        if fallback.any():
            mask |= fallback & _count_mask(ds)
    return mask


def _count_mask(ds: xr.Dataset) -> np.ndarray:
    if "count" not in ds.data_vars:
        raise CoverageError(
            "occupied: no exact occupancy source (pass the store root of a source-level open) and no 'count' variable"
        )
    count = ds["count"]
    other = [d for d in count.dims if d != CELLS]
    return np.asarray((count > 0).any(dim=other).values if other else (count > 0).values, dtype=bool)


def occupied(
    ds: xr.Dataset, store_root=None, *, storage_options: dict | None = None, chunk: int = DEFAULT_CHUNK
) -> xr.Dataset:
    """The rows of ``ds`` whose cell holds data, regularly rechunked so the result writes with ``to_zarr``.

    With ``store_root`` (the store ``ds`` was opened from) and a source-level
    Dataset, occupancy comes from the leaves' exact bitmap sidecars (one
    batched stamp read, then one small GET per bitmap leaf; no data read),
    ``count > 0`` only for leaves without one. Otherwise (derived levels, a
    ``time=`` stack, no store given) it is ``count > 0`` (on any window).
    Raises :class:`~moczarr.errors.CoverageError` when neither source exists.
    """
    mask = occupied_mask(ds, store_root, storage_options=storage_options)
    out = ds.isel({CELLS: np.flatnonzero(mask)})
    if out.sizes[CELLS] and any(v.chunks for v in out.variables.values()):
        out = out.chunk({CELLS: min(chunk, out.sizes[CELLS])})
    return out


__all__ = ["occupied", "occupied_mask", "occupied_words"]
