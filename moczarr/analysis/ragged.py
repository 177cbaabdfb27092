"""Ragged (vlen-bytes) digest fields: declarations and per-cell decoding (FORMAT.md §9).

A ragged field is a ``variable_length_bytes`` array on the ``cells`` axis whose
``ragged`` attrs declare the element dtype and shape. The readers expose the
encoded bytes as they are (one object per cell); these helpers decode them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import ids
from ..errors import AOIError, RaggedError, SelectionError
from ..format.roster import read_manifest
from ..openers.pyramid import check_order, open_level
from ..places import as_place
from ..storage import Storage

RAGGED_SPEC = "zagg-ragged/1"
LOCATED_SPEC = "zagg-located/1"


@dataclass(frozen=True)
class RaggedSpec:
    """A validated ``ragged`` declaration plus its sibling bindings."""

    dtype: np.dtype
    inner_shape: tuple[int, ...]
    locations: str | None = None
    times: str | None = None
    weights: str | None = None
    gain: dict | None = None


def parse_ragged_attrs(attrs: dict, name: str = "array") -> RaggedSpec:
    """Validate the attrs of a ragged array and return how to decode its cells.

    Raises :class:`RaggedError` for a missing block, a spec other than
    ``zagg-ragged/1`` (never guess a layout), an element without a dtype or
    with a shape not of the form ``[-1, *inner]``, an unknown ``weights``, a
    ``flux`` declaration without its ``gain`` {name, version}, or an unknown
    ``located`` declaration.
    """
    block = attrs.get("ragged")
    if not isinstance(block, dict):
        raise RaggedError(f"{name}: no 'ragged' declaration; not a zagg ragged array")
    if block.get("spec") != RAGGED_SPEC:
        raise RaggedError(f"{name}: ragged spec {block.get('spec')!r} is not {RAGGED_SPEC}")
    element = block.get("element")
    if not isinstance(element, dict) or "dtype" not in element or not isinstance(element.get("shape"), list):
        raise RaggedError(f"{name}: ragged element {element!r} lacks a dtype and a shape")
    shape = element["shape"]
    if not shape or shape[0] != -1 or not all(isinstance(s, int) and s > 0 for s in shape[1:]):
        raise RaggedError(f"{name}: ragged element shape {shape!r} is not [-1, *inner]")
    try:
        dtype = np.dtype(element["dtype"]).newbyteorder("<")
    except TypeError:
        raise RaggedError(f"{name}: unknown ragged element dtype {element['dtype']!r}") from None
    weights = attrs.get("weights")
    if weights not in (None, "counts", "flux"):
        raise RaggedError(f"{name}: unknown weights {weights!r} (known: counts, flux)")
    gain = attrs.get("gain")
    if weights == "flux" and not (
        isinstance(gain, dict) and isinstance(gain.get("name"), str) and isinstance(gain.get("version"), str)
    ):
        raise RaggedError(f"{name}: weights 'flux' needs a gain {{name, version}}, got {gain!r}")
    located = attrs.get("located")
    if located is not None and not (isinstance(located, dict) and located.get("spec") == LOCATED_SPEC):
        raise RaggedError(f"{name}: unknown located declaration {located!r} (this reader knows {LOCATED_SPEC})")
    return RaggedSpec(dtype, tuple(shape[1:]), block.get("locations"), attrs.get("times"), weights, attrs.get("gain"))


def decode_cell(payload: bytes | None, spec: RaggedSpec) -> np.ndarray:
    """One cell's payload as an ``(n, *inner)`` array (``(0, *inner)`` for an empty cell).

    Raises :class:`RaggedError` when the byte count is not a whole number of elements.
    """
    payload = payload or b""
    itemsize = spec.dtype.itemsize * int(np.prod(spec.inner_shape, dtype=np.int64))
    if len(payload) % itemsize:
        raise RaggedError(f"payload of {len(payload)} bytes is not a whole number of {itemsize}-byte elements")
    return np.frombuffer(payload, dtype=spec.dtype).reshape(-1, *spec.inner_shape)


def decode_variable(var) -> list[np.ndarray]:
    """Every cell of a ragged ``xarray.DataArray`` decoded (loads the variable)."""
    spec = parse_ragged_attrs(var.attrs, var.name or "array")
    return [decode_cell(p, spec) for p in np.asarray(var.values).ravel()]


def read_ragged(
    store_root,
    field: str,
    cells,
    *,
    cell_order: int | None = None,
    window: str | None = None,
    storage_options: dict | None = None,
) -> dict[int, np.ndarray]:
    """Decode ``field`` at the given cells (words or decimal ids) of a store: ``{word: array}``.

    ``cells`` may also be any place :mod:`moczarr.places` accepts (a
    ``BBox``, geometry, ...): then every row of the level meeting it is decoded.
    Raises :class:`~moczarr.errors.AOIError` for ``cells`` that are no place.

    ``cell_order`` picks the level (default: the source order; any level
    :func:`moczarr.openers.pyramid.open_level` can open). Only the leaves or objects
    holding those cells are read. Raises :class:`~moczarr.errors.SelectionError`
    (a ``KeyError``) for a field the level lacks and for cells outside the
    level's domain, and :class:`~moczarr.errors.LevelOmittedError` for a level
    with nothing materialized.
    """
    place = as_place(cells, "cells")
    if place is None:
        raise AOIError("read_ragged: cells=None names no cells")
    if cell_order is not None:
        cell_order = check_order(cell_order, "cell_order")
    storage = Storage.open(store_root, storage_options)
    order = cell_order if cell_order is not None else read_manifest(storage).cell_order
    ds = open_level(storage, order, window=window, aoi=place, index_kind="pandas")
    if field not in ds:
        raise SelectionError(f"{store_root}: no ragged field {field!r} at cell order {order}")
    spec = parse_ragged_attrs(ds[field].attrs, field)
    have = ds["morton"].values
    if place.words is None:  # a geometry: every row of the level meeting it
        return {int(w): decode_cell(p, spec) for w, p in zip(have, ds[field].values, strict=True)}
    words = place.words
    pos = np.searchsorted(have, words)
    missing = (
        (pos >= have.size) | (have[np.minimum(pos, max(have.size - 1, 0))] != words)
        if have.size
        else np.ones(words.size, bool)
    )
    if missing.any():
        raise SelectionError(f"{store_root}: cells {ids.to_decimals(words[missing])} are not in the level's domain")
    payloads = ds[field].isel(cells=pos).values
    return {int(w): decode_cell(p, spec) for w, p in zip(words, payloads, strict=True)}
