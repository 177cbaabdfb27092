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

Data chunks are checked where they are read, in :mod:`moczarr.dataplane`:
decode failures become :class:`~moczarr.errors.ChunkError`, and an object
none of whose chunks exist must still have its data group.

What these checks cannot see: a data chunk that is missing or replaced by
another valid chunk decodes as fill or as other values. Only a comparison
with the stamp's ``content_hashes`` (:mod:`moczarr.format.content`) detects
that; the data plane makes it on every read where the stamp records them
when an opener is given ``verify_chunks=True``, the verifier on every object.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from ..errors import SchemaError, StampError


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
    if names is not None and (
        not isinstance(names, list) or len(names) != len(shape) or not all(isinstance(n, str) for n in names)
    ):
        raise SchemaError(f"{where}: dimension_names {names!r} do not name the {len(shape)} axes")
    try:
        text = json.dumps(meta, sort_keys=True)
    except (TypeError, ValueError):  # not JSON (a caller's own dict): zarr's verdict on a copy, unremembered
        text = None
    try:
        if text is None:
            _zarr_parse(copy.deepcopy(meta))
        else:
            _zarr_parses(text)
    except Exception as exc:  # zarr raises TypeError/ValueError/KeyError/NotImplementedError here
        raise SchemaError(f"{where}: zarr cannot parse the array metadata ({type(exc).__name__}: {exc})") from exc


def _zarr_parse(meta: dict) -> None:
    from .._zarr import ArrayV3Metadata

    ArrayV3Metadata.from_dict(meta)


@functools.lru_cache(maxsize=1024)
def _zarr_parses(text: str) -> bool:
    """zarr's verdict on one array document (its canonical JSON), remembered when it parses.

    A schema's arrays mostly share one document but for ``data_type``, and
    the levels, windows and stores a process opens share them again: zarr's
    parse is the costly step of an open's schema, so each distinct document
    is parsed once. A document zarr refuses raises, and nothing is remembered.
    """
    _zarr_parse(json.loads(text))
    return True


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
    if span is not None and (
        not (isinstance(span, list) and len(span) == 2 and all(isinstance(t, str) for t in span)) or span[0] > span[1]
    ):
        raise StampError(f"{where}: stamp field 'time_range' is {span!r}, not an ordered pair of ISO-8601 strings")
    return written, span


def leaf_stamp_fields(stamp: dict, where: str, path: str) -> tuple[str | None, tuple[str, str] | None, int, int]:
    """``(written_at, time_range, cells_with_data, granule_count)`` of a leaf's commit stamp, every field checked.

    :func:`check_leaf_stamp`, :func:`stamp_clock` and :func:`stamp_int` in one
    pass (an open checks thousands of stamps): the well-typed common case is
    taken directly, anything else goes through those checks, which raise
    :class:`StampError` naming ``where`` (the spec) or ``path`` (the fields).
    """
    if stamp.get("spec") not in ("morton-hive/1", "morton-hive/2"):
        check_leaf_stamp(stamp, where)
    written, span = stamp.get("written_at"), stamp.get("time_range")
    if (written is not None and type(written) is not str) or span is not None:
        written, span = stamp_clock(stamp, path)
    cells, granules = stamp.get("cells_with_data"), stamp.get("granule_count")
    if type(cells) is not int or cells < 0:
        cells = stamp_int(stamp, "cells_with_data", path)
    if type(granules) is not int or granules < 0:
        granules = stamp_int(stamp, "granule_count", path)
    return written, (None if span is None else (span[0], span[1])), cells, granules


__all__ = [
    "check_cells_extent",
    "check_declared_arrays",
    "check_leaf_stamp",
    "leaf_stamp_fields",
    "parse_array_metadata",
    "stamp_clock",
    "stamp_int",
]
