"""``MortonMocIndex``: the lazy xarray index over a :class:`MortonRanges` domain.

The index holds the row domain as rank intervals and fabricates the ``morton``
coordinate from them on demand (a lazily indexed coordinate, as xarray's own
``RangeIndex`` does): building a Dataset, ``sel``, ``isel`` on slices and
monotonic picks, alignment and ``concat`` of ascending disjoint domains are
interval arithmetic and never materialize the coordinate. Reading
``ds["morton"].values`` (or ``ds.indexes``, ``to_pandas_index``) does.

What it cannot represent it refuses or degrades, never answers wrongly:

- scalar selections, non-monotonic or repeated picks, reversed slices,
  vectorized picks onto a new dimension, ``roll``: the index is dropped with an
  :class:`~moczarr.errors.IndexDegradedWarning` (the ``morton`` values stay
  right, as a plain coordinate);
- ``sel(method=...)``/``tolerance``: ``NotImplementedError``;
- ``concat`` of overlapping, interleaved or reversed domains:
  ``NotImplementedError`` pointing to ``index_kind="pandas"``;
- alignment or concat against a pandas-indexed ``morton``:
  :class:`IndexKindMismatchError` (reopen both with one ``index_kind``);
- words of several orders: :class:`~moczarr.errors.MixedOrderError`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Hashable, Iterable, Mapping, Sequence
from types import FrameType
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from xarray.indexes import CoordinateTransform, CoordinateTransformIndex, Index

from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    IndexDegradedWarning,
    MixedOrderError,
    warn,
)
from ..ids import to_words
from .ranges import MortonRanges

__all__ = ["IndexKindMismatchError", "MortonMocIndex", "MortonRangesTransform"]


class IndexKindMismatchError(ArgumentError, xr.AlignmentError):
    """A moc-indexed and a pandas-indexed ``morton`` met in one alignment or concat (also an ``xr.AlignmentError``)."""


_PANDAS_HINT = 'reopen with index_kind="pandas", whose materialized coordinate handles it'
_KIND_HINT = (
    "a lazy moc index (index_kind='moc') met a materialized pandas index on {name!r}; "
    "reopen both datasets with the same index_kind (both 'moc', or both 'pandas')"
)


_XARRAY_DIR = os.path.dirname(xr.__file__) + os.sep


def _degrade(reason: str) -> None:
    warn(
        f"MortonMocIndex dropped: {reason} cannot be held as an interval set; the morton "
        "coordinate keeps its values without an index (set_xindex or index_kind='pandas' "
        "to index it again)",
        IndexDegradedWarning,
    )


def _refuse_cross_kind_comparison(coord_name: Hashable) -> None:
    """Raise :class:`IndexKindMismatchError` when xarray compares us by values with another index.

    xarray's alignment never asks an index about a peer of another type: for a
    moc and a pandas index on one coordinate it falls back to comparing the
    coordinate *values* (``indexes_all_equal.check_variables``), silently
    passing when they happen to match and failing with a generic "conflicting
    indexes" error when they do not. That value comparison is the only moment
    our code runs, so the full materialization looks for that caller on the
    stack and refuses pointedly instead. Best effort: if xarray renames the
    function, its own behaviour applies.
    """
    frame: FrameType | None = sys._getframe(2)
    for _ in range(32):
        if frame is None:
            return
        code = frame.f_code
        if code.co_name == "check_variables" and code.co_filename.startswith(_XARRAY_DIR):
            raise IndexKindMismatchError(_KIND_HINT.format(name=coord_name))
        frame = frame.f_back


def _is_bool_mask(data: Any) -> bool:
    """True for a boolean array or a non-empty list/tuple of booleans (a selection mask)."""
    if isinstance(data, (list, tuple)):
        return bool(data) and all(isinstance(v, (bool, np.bool_)) for v in data)
    return getattr(data, "dtype", None) == np.dtype(bool) and np.ndim(data) > 0


class MortonRangesTransform(CoordinateTransform):
    """Positions -> packed words of a :class:`MortonRanges` (one coordinate, one dim)."""

    def __init__(self, ranges: MortonRanges, coord_name: Hashable = "morton", dim: str = "cells"):
        super().__init__([coord_name], {dim: len(ranges)}, dtype=np.dtype(np.uint64))
        self.ranges = ranges

    def forward(self, dim_positions: dict[str, Any]) -> dict[Hashable, Any]:
        """Words at integer positions (any shape); ``IndexError`` out of range."""
        return {self.coord_names[0]: self.ranges.word_at(dim_positions[self.dims[0]])}

    def reverse(self, coord_labels: dict[Hashable, Any]) -> dict[str, Any]:
        """Positions of words or decimal strings; ``KeyError`` naming an absent word."""
        return {self.dims[0]: self.ranges.position_of(coord_labels[self.coord_names[0]])}

    def generate_coords(self, dims: tuple[str, ...] | None = None) -> dict[Hashable, Any]:
        """All words at once (the only full materialization)."""
        _refuse_cross_kind_comparison(self.coord_names[0])
        return {self.coord_names[0]: self.ranges.words()}

    def equals(self, other: CoordinateTransform, **kwargs: Any) -> bool:
        return (
            isinstance(other, MortonRangesTransform)
            and self.dims == other.dims
            and self.coord_names == other.coord_names
            and self.ranges == other.ranges
        )


class MortonMocIndex(CoordinateTransformIndex):
    """A 1-D xarray index whose labels are the packed words of a :class:`MortonRanges`.

    Build with :meth:`from_ranges` and attach with ``xr.Coordinates.from_xindex``,
    or from an existing ascending ``morton`` coordinate with
    ``ds.set_xindex("morton", MortonMocIndex)``.
    """

    transform: MortonRangesTransform

    def __init__(self, transform: MortonRangesTransform):
        if not isinstance(transform, MortonRangesTransform):
            raise ArgumentTypeError("MortonMocIndex wraps a MortonRangesTransform; use from_ranges()")
        super().__init__(transform)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_ranges(cls, ranges: MortonRanges, dim: str = "cells", coord_name: Hashable = "morton") -> MortonMocIndex:
        """Index the rows of ``ranges`` along ``dim`` under coordinate ``coord_name``."""
        if not isinstance(ranges, MortonRanges):
            raise ArgumentTypeError(f"expected MortonRanges, got {type(ranges).__name__}")
        return cls(MortonRangesTransform(ranges, coord_name, dim))

    @classmethod
    def from_variables(cls, variables: Mapping[Any, xr.Variable], *, options: Mapping[str, Any]) -> MortonMocIndex:
        """Build from one existing 1-D coordinate of strictly ascending cell words.

        Used by ``set_xindex(name, MortonMocIndex, order=None)``; reads the values
        once. Raises ``ValueError`` for several variables, a non-1-D variable,
        words not strictly ascending (positions would not match the interval
        set: use a PandasIndex), :class:`MixedOrderError` for mixed orders.
        """
        if len(variables) != 1:
            raise ArgumentError(f"MortonMocIndex indexes one coordinate, got {len(variables)}")
        ((name, var),) = variables.items()
        if var.ndim != 1:
            raise ArgumentError(f"MortonMocIndex needs a 1-D coordinate, {name!r} has {var.ndim} dims")
        words = to_words(np.asarray(var.values), keep_shape=True, validate=False)
        if words.size > 1 and np.any(words[1:] <= words[:-1]):
            raise ArgumentError(
                f"coordinate {name!r} is not strictly ascending; a MortonMocIndex keeps rows in "
                "ascending word order (sort first, or use a PandasIndex / index_kind='pandas')"
            )
        ranges = MortonRanges.from_words(words, order=options.get("order"))
        return cls.from_ranges(ranges, dim=str(var.dims[0]), coord_name=name)

    def _replace(self, ranges: MortonRanges) -> MortonMocIndex:
        return type(self).from_ranges(ranges, dim=self.dim, coord_name=self.coord_name)

    # -- identity ---------------------------------------------------------------------------

    @property
    def ranges(self) -> MortonRanges:
        """The row domain."""
        return self.transform.ranges

    @property
    def dim(self) -> str:
        return self.transform.dims[0]

    @property
    def coord_name(self) -> Hashable:
        return self.transform.coord_names[0]

    def equals(self, other: Index, *, exclude: frozenset[Hashable] | None = None) -> bool:
        """Same dimension, coordinate name and domain (interval comparison, no values)."""
        return isinstance(other, MortonMocIndex) and self.transform.equals(other.transform)

    def to_pandas_index(self) -> pd.Index:
        """A materialized ``pandas.Index`` of the words (costs ``8 * len`` bytes)."""
        return pd.Index(self.ranges.words(), name=self.coord_name)

    def _copy(self, deep: bool = True, memo: dict[int, Any] | None = None) -> MortonMocIndex:
        return self._replace(self.ranges)  # the ranges are immutable: share them

    def _repr_inline_(self, max_width: int) -> str:
        r = self.ranges
        return f"MortonMocIndex (order={r.order}, intervals={r.n_intervals:,}, rows={len(r):,})"

    def __repr__(self) -> str:
        return f"MortonMocIndex({self.ranges!r}, dim={self.dim!r}, coord_name={self.coord_name!r})"

    # -- selection -----------------------------------------------------------------------------

    def sel(self, labels: dict[Any, Any], method: Any = None, tolerance: Any = None):
        """Positions of labels: words, decimal strings, lists/arrays of either, or a slice.

        A label slice ``slice(a, b)`` selects ``a <= word <= b`` like a sorted
        pandas index (bounds need not be in the domain). Boolean arrays pass
        through as masks. Raises ``KeyError`` naming an absent word and
        ``NotImplementedError`` for ``method``/``tolerance``.
        """
        from xarray.core.indexing import IndexSelResult

        if method is not None or tolerance is not None:
            raise NotImplementedError(
                f"MortonMocIndex does not do inexact (method={method!r}) selection; {_PANDAS_HINT}"
            )
        ((_, label),) = labels.items()
        if isinstance(label, slice):

            def bound(b, side: str, default: int) -> int:
                return default if b is None else int(self.ranges.searchsorted(b, side))

            start = bound(label.start, "left", 0)
            stop = max(start, bound(label.stop, "right", len(self.ranges)))
            return IndexSelResult({self.dim: slice(start, stop, label.step)})
        if isinstance(label, Mapping):
            raise ArgumentError("cannot select a MortonMocIndex with a dict-like label")
        data = label.data if isinstance(label, xr.Variable | xr.DataArray) else label
        if _is_bool_mask(data):
            indexer: Any = np.asarray(data)
        else:
            pos = self.ranges.position_of(data)
            indexer = int(pos) if pos.ndim == 0 else pos
        if isinstance(label, xr.Variable):
            indexer = xr.Variable(label.dims, indexer)
        elif isinstance(label, xr.DataArray):
            indexer = xr.DataArray(indexer, coords=label.coords, dims=label.dims)
        return IndexSelResult({self.dim: indexer})

    def isel(self, indexers: Mapping[Any, Any]) -> MortonMocIndex | None:
        """A new index for slices and strictly ascending picks; else ``None`` plus a warning.

        ``None`` makes xarray drop the index (the coordinate keeps its values);
        an :class:`IndexDegradedWarning` says why.
        """
        idx = indexers[self.dim]
        if isinstance(idx, xr.Variable):
            if idx.dims != (self.dim,):
                _degrade(f"a vectorized pick onto dimension(s) {idx.dims}")
                return None
            idx = idx.data
        if isinstance(idx, slice):
            if idx == slice(None):
                return self
            if idx.step is not None and idx.step < 0:
                _degrade("a reversed slice")
                return None
            return self._replace(self.ranges.isel(idx))
        if np.ndim(idx) == 0:
            _degrade("a scalar selection (the dimension collapses)")
            return None
        arr = np.asarray(idx)
        if arr.size == 0:
            return self._replace(MortonRanges.empty(self.ranges.order))
        if arr.dtype == bool:
            return self._replace(self.ranges.take(np.flatnonzero(arr)))
        n = len(self.ranges)
        pos = np.where(arr < 0, arr + n, arr) if arr.dtype.kind == "i" else arr
        if pos.ndim != 1 or (pos.size > 1 and np.any(np.diff(pos.astype(np.int64)) <= 0)):
            _degrade("a non-monotonic or repeated pick")
            return None
        return self._replace(self.ranges.take(pos))

    def roll(self, shifts: Mapping[Any, int]) -> MortonMocIndex | None:
        """Unchanged for a zero shift; otherwise ``None`` plus a warning (rows reorder)."""
        n = len(self.ranges)
        if n == 0 or shifts[self.dim] % n == 0:
            return self
        _degrade("a roll")
        return None

    # -- alignment -----------------------------------------------------------------------------

    def _check_peer(self, other: Any) -> None:
        if not isinstance(other, MortonMocIndex):
            raise IndexKindMismatchError(_KIND_HINT.format(name=self.coord_name))

    def join(self, other: MortonMocIndex, how: str = "inner") -> MortonMocIndex:
        """Interval intersection (``inner``) or union (``outer``) of the two domains."""
        self._check_peer(other)
        if how == "inner":
            return self._replace(self.ranges.intersection(other.ranges))
        if how == "outer":
            return self._replace(self.ranges.union(other.ranges))
        raise ArgumentError(f"join how={how!r}: expected 'inner' or 'outer'")

    def reindex_like(self, other: MortonMocIndex, method: Any = None, tolerance: Any = None) -> dict[Hashable, Any]:
        """Positions in ``self`` of each row of ``other`` (``-1`` where absent).

        The result is an int64 array of ``len(other)`` (xarray reindexes with
        positions), computed from the intervals by :meth:`MortonRanges.locate`
        without generating any word. Raises :class:`IndexKindMismatchError` for
        a non-moc peer and ``NotImplementedError`` for ``method``/``tolerance``.
        """
        self._check_peer(other)
        if method is not None or tolerance is not None:
            raise NotImplementedError(f"inexact reindexing (method={method!r}); {_PANDAS_HINT}")
        return {self.dim: self.ranges.locate(other.ranges)}

    @classmethod
    def concat(
        cls,
        indexes: Sequence[Index],
        dim: Hashable,
        positions: Iterable[Iterable[int]] | None = None,
    ) -> MortonMocIndex:
        """Concatenate domains that are disjoint and ascending in word order.

        Raises :class:`IndexKindMismatchError` if any index is not a
        MortonMocIndex, :class:`MixedOrderError` for different orders, and
        ``NotImplementedError`` (pointing to ``index_kind="pandas"``) for
        overlapping, interleaved or reversed domains or a reordering ``positions``.
        """
        indexes = list(indexes)
        if not indexes:
            raise ArgumentError("nothing to concatenate")
        mocs = [idx for idx in indexes if isinstance(idx, MortonMocIndex)]
        if len(mocs) != len(indexes):
            name = getattr(indexes[0], "coord_name", dim)
            raise IndexKindMismatchError(_KIND_HINT.format(name=name))
        if positions is not None:
            flat = np.concatenate([np.asarray(list(p), dtype=np.int64) for p in positions])
            if not np.array_equal(flat, np.arange(flat.size)):
                raise NotImplementedError(f"concat with reordering positions; {_PANDAS_HINT}")
        try:
            ranges = MortonRanges.concat([idx.ranges for idx in mocs])
        except MixedOrderError:
            raise
        except ValueError as e:
            raise NotImplementedError(
                f"xr.concat of moc-indexed datasets needs disjoint domains in ascending word order: {e}; {_PANDAS_HINT}"
            ) from e
        return cls.from_ranges(ranges, dim=str(dim), coord_name=mocs[0].coord_name)

    def rename(self, name_dict: Mapping[Any, Hashable], dims_dict: Mapping[Any, Hashable]):
        """Follow a rename of the coordinate or the dimension."""
        name = name_dict.get(self.coord_name, self.coord_name)
        dim = dims_dict.get(self.dim, self.dim)
        if name == self.coord_name and dim == self.dim:
            return self
        return type(self).from_ranges(self.ranges, dim=str(dim), coord_name=name)
