"""Trusting store content: array metadata, stamp fields and data chunks checked before use.

The openers read a handful of small documents and build lazy arrays on them;
the data chunks are read later, inside dask tasks. Each step that takes
content on trust has its check here, and each check raises a typed error
naming the object (corrupt content raises; the callers decide where a cache
degrades instead):

- :func:`parse_array_metadata`: an array's ``zarr.json`` must be a zarr v3
  array zarr itself can parse, with usable ``dimension_names`` and dtype
  (:class:`~moczarr.errors.SchemaError`).
- :func:`check_declared_arrays`: every array the stamp (or a provenance
  block) declares must be present (:class:`~moczarr.errors.SchemaError`).
- :func:`check_cells_extent`: the ``cells`` axis holds one row per cell of
  the object (:class:`~moczarr.errors.SchemaError`).
- :func:`stamp_int`: integer stamp fields (``cells_with_data``,
  ``granule_count``) are integers (:class:`~moczarr.errors.StampError`).
- :func:`read_chunks`: a data read in a dask task; decode failures become
  :class:`~moczarr.errors.ChunkError` naming the array and chunk keys, and a
  block read entirely as fill is checked against its data group, which must
  exist (a stamped leaf whose data group is gone raises
  :class:`~moczarr.errors.StampError` instead of serving fill).

What these checks cannot see: a data chunk that is missing or replaced by
another valid chunk decodes as fill or as other values. Only a comparison
with the stamp's ``content_hashes`` detects that (the verifier's job).
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import numpy as np

from .errors import ChunkError, MoczarrError, SchemaError, StampError


def parse_array_metadata(meta: Any, where: str) -> None:
    """Refuse an array ``zarr.json`` document the lazy arrays could not be built on.

    Raises :class:`SchemaError` unless it is a mapping with ``node_type``
    ``array`` that zarr parses as v3 array metadata, whose ``shape`` is a list
    of non-negative integers and whose ``dimension_names`` (when present) give
    one name per axis.
    """
    if not isinstance(meta, dict) or meta.get("node_type") != "array":
        kind = type(meta).__name__ if not isinstance(meta, dict) else f"node_type {meta.get('node_type')!r}"
        raise SchemaError(f"{where}: zarr.json is not a zarr v3 array ({kind})")
    if meta.get("zarr_format") != 3:
        raise SchemaError(f"{where}: zarr_format {meta.get('zarr_format')!r} is not 3")
    shape = meta.get("shape")
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise SchemaError(f"{where}: shape {shape!r} is not a list of non-negative integers")
    names = meta.get("dimension_names")
    if names is not None and (not isinstance(names, list) or len(names) != len(shape) or not all(isinstance(n, str) for n in names)):
        raise SchemaError(f"{where}: dimension_names {names!r} do not name the {len(shape)} axes")
    try:
        from zarr.core.metadata.v3 import ArrayV3Metadata

        ArrayV3Metadata.from_dict(copy.deepcopy(meta))
    except Exception as exc:  # zarr raises TypeError/ValueError/KeyError/NotImplementedError here
        raise SchemaError(f"{where}: zarr cannot parse the array metadata ({type(exc).__name__}: {exc})") from exc


def check_declared_arrays(declared: list[str], found: dict, where: str, source: str) -> None:
    """Raise :class:`SchemaError` naming the arrays ``source`` declares that ``found`` lacks."""
    missing = [n for n in declared if n not in found]
    if missing:
        raise SchemaError(
            f"{where}: {source} declares arrays {missing} but their zarr.json is missing; "
            "the object is incomplete (refusing to drop the variables silently)"
        )


def check_cells_extent(arrays: dict, cells_axis_of, n_cells: int, where: str) -> None:
    """Raise :class:`SchemaError` for an array whose ``cells`` axis is not ``n_cells`` long."""
    for name, arr in arrays.items():
        axis = cells_axis_of(arr)
        if axis is not None and arr.shape[axis] != n_cells:
            raise SchemaError(
                f"{where}/{name}: the cells axis holds {arr.shape[axis]} rows; the object has {n_cells} cells"
            )


def stamp_int(stamp: dict, name: str, where: str) -> int:
    """An integer stamp field (absent or null: 0). Raises :class:`StampError` for anything else."""
    value = stamp.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StampError(f"{where}: stamp field {name!r} is {value!r}, not a non-negative integer")
    return value


def check_leaf_stamp(stamp: dict, where: str) -> dict:
    """A leaf's commit stamp, refused when it declares a spec this reader does not know.

    Raises :class:`StampError` for a ``spec`` other than ``morton-hive/1`` or
    ``/2`` (a stamp of another format revision cannot be half-trusted).
    """
    spec = stamp.get("spec")
    if spec is not None and spec not in ("morton-hive/1", "morton-hive/2"):
        raise StampError(f"{where}: stamp spec {spec!r} is not one this reader knows (morton-hive/1, morton-hive/2)")
    return stamp


def stamp_clock(stamp: dict, where: str) -> tuple[str | None, list[str] | None]:
    """``(written_at, time_range)`` of a stamp, each None when absent.

    Raises :class:`StampError` for a ``written_at`` that is not a string or a
    ``time_range`` that is not an ordered pair of strings.
    """
    written = stamp.get("written_at")
    if written is not None and not isinstance(written, str):
        raise StampError(f"{where}: stamp field 'written_at' is {written!r}, not an ISO-8601 string")
    span = stamp.get("time_range")
    if span is not None:
        if not (isinstance(span, list) and len(span) == 2 and all(isinstance(t, str) for t in span)) or span[0] > span[1]:
            raise StampError(f"{where}: stamp field 'time_range' is {span!r}, not an ordered pair of ISO-8601 strings")
    return written, span


def chunk_keys(array, index: tuple, limit: int = 4) -> list[str]:
    """Up to ``limit`` chunk keys a selection of ``array`` touches (error messages only)."""
    try:
        chunk_shape = array.metadata.chunk_grid.chunk_shape
        spans = []
        for sel, size, step in zip(index, array.shape, chunk_shape):
            if isinstance(sel, slice):
                lo, hi, _ = sel.indices(size)
                spans.append(range(lo // step, max(lo, hi - 1) // step + 1))
            else:
                spans.append(sorted({int(i) // step for i in np.asarray(sel).ravel()}))
        coords = itertools.islice(itertools.product(*spans), limit + 1)
        out = [array.metadata.encode_chunk_key(tuple(c)) for c in coords]
        return out[:limit] + (["..."] if len(out) > limit else [])
    except Exception:  # the metadata itself is the damage: name the array only
        return []


def _is_fill(values: np.ndarray, fill) -> bool:
    if values.size == 0 or values.dtype == object:
        return False
    try:
        if isinstance(fill, float) and np.isnan(fill) or fill in ("NaN", "nan"):
            return bool(np.isnan(values).all())
        return bool((values == np.asarray(fill, dtype=values.dtype)).all())
    except (TypeError, ValueError):
        return False


def read_chunks(storage, path: str, metadata: dict, index: tuple | None, *, orthogonal: bool = False) -> np.ndarray:
    """Read ``index`` (None: everything) of the array at ``path``; typed errors, fill checked.

    Raises :class:`ChunkError` when a chunk cannot be decoded, the
    :class:`~moczarr.errors.StorageError` of a failed read, and
    :class:`StampError` when the block reads entirely as fill and the array's
    data group (``path``'s parent) does not exist: the stamped object's data
    is gone, and fill would be a silent wrong answer. The group probe is one
    GET, made only for all-fill blocks and once per group per open.
    """
    array = storage.array(path, metadata)
    try:
        if index is None:
            values = array[...]
        elif orthogonal:
            values = array.get_orthogonal_selection(index)
        else:
            values = array[index]
    except MoczarrError:
        raise
    except Exception as exc:  # numcodecs, zarr codecs, buffer reshapes: a damaged chunk
        keys = chunk_keys(array, index if index is not None else tuple(slice(None) for _ in array.shape))
        named = f" (chunks {', '.join(keys)})" if keys else ""
        raise ChunkError(
            f"{storage.describe(path)}: a data chunk cannot be decoded{named}: {type(exc).__name__}: {exc}"
        ) from exc
    values = np.asarray(values)
    if _is_fill(values, metadata.get("fill_value")):
        group = path.rsplit("/", 1)[0]
        memo_key = ("group_exists", group)
        if memo_key not in storage.memo:
            storage.memo[memo_key] = storage.get_bytes(f"{group}/zarr.json") is not None
        if not storage.memo[memo_key]:
            raise StampError(
                f"{storage.describe(group)}: the data group of a committed object is missing (its stamp "
                "says committed; a removed or nulled 'current' pointer?); refusing to read its rows as fill"
            )
    return values


__all__ = [
    "check_cells_extent",
    "check_declared_arrays",
    "check_leaf_stamp",
    "chunk_keys",
    "parse_array_metadata",
    "read_chunks",
    "stamp_clock",
    "stamp_int",
]
