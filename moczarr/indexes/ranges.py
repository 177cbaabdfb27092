"""``MortonRanges``: a row domain held as inclusive intervals in rank space.

At one cell order ``c`` (0..27) the packed morton word of a cell is
``word = (K << shift) | marker`` with ``shift = 60 - 2c`` and ``marker = c``
(FORMAT.md §1.3). ``K`` -- the *rank* -- is the base-prefix nibble followed by
the ``c`` digit tuples, so it is a global unit-stride coordinate: consecutive
cells of a subtree, of neighbouring subtrees and of neighbouring base cells
have consecutive ranks, and ascending rank is ascending word. A domain of
``4 * 10**8`` rows that is a union of shard subtrees is therefore a few
thousand ``[lo, hi]`` rank pairs.

``(shift, marker)`` are not hard-coded: they are probed from mortie the first
time an order is used and span-checked against it (see :func:`packing`), so a
change of packing fails loudly instead of mis-ranking rows.

Every operation is numpy arithmetic on the interval arrays (``searchsorted``,
``cumsum``); nothing loops in Python over rows or intervals. Positions are
``int64``, ranks and words ``uint64``.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import mortie
import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, MixedOrderError, SelectionError
from ..ids import MAX_RANK_ORDER, check_rank_order, packing, to_words

__all__ = ["MAX_RANK_ORDER", "MortonRanges", "packing"]

#: the one id converter, under the name this module used to give it
_as_words = functools.partial(to_words, keep_shape=True, validate=False)

_U64 = np.dtype(np.uint64)
_I64 = np.dtype(np.int64)


# --------------------------------------------------------------------------- helpers


def _coalesce(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge sorted, disjoint int64 intervals that touch (``lo[i+1] == hi[i] + 1``)."""
    if lo.size < 2:
        return lo, hi
    brk = np.flatnonzero(lo[1:] != hi[:-1] + 1)
    return lo[np.r_[0, brk + 1]], hi[np.r_[brk, hi.size - 1]]


def _normalize(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort int64 intervals and merge overlapping or adjacent ones."""
    if lo.size < 2:
        return lo, hi
    order = np.argsort(lo, kind="stable")  # timsort: near-linear on concatenated sorted runs
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)  # furthest rank covered so far
    new = np.r_[True, lo[1:] > reach[:-1] + 1]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, lo.size - 1]
    return lo[first], reach[last]


def _runs(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of a strictly ascending int64 rank array (breaks where the step is not 1)."""
    if ranks.size == 0:
        return ranks, ranks
    brk = np.flatnonzero(np.diff(ranks) != 1)
    return ranks[np.r_[0, brk + 1]], ranks[np.r_[brk, ranks.size - 1]]


# --------------------------------------------------------------------------- MortonRanges


class MortonRanges:
    """An immutable set of cells at one order, held as inclusive rank intervals.

    ``lo`` and ``hi`` are read-only ``uint64`` arrays of ranks (``word >> shift``),
    sorted, disjoint, with adjacent intervals merged, so equal sets have equal
    arrays. Rows are the cells in ascending word order: position 0 is the
    smallest word. Build one with :meth:`from_rank_intervals`,
    :meth:`from_words`, :meth:`from_subtrees` or :meth:`empty`.

    Attributes: ``order`` (0..27), ``shift`` and ``marker`` (probed, see
    :func:`packing`), ``lo``, ``hi``, ``n_intervals``; ``len()`` is the row count.
    """

    __slots__ = ("_hi64", "_lo64", "_size", "_starts", "hi", "lo", "marker", "order", "shift")

    def __init__(self, lo: Any, hi: Any, order: int):
        """Same as :meth:`from_rank_intervals` (validates and normalizes)."""
        order = check_rank_order(order)
        lo = np.asarray(lo)
        hi = np.asarray(hi)
        if lo.shape != hi.shape or lo.ndim != 1:
            raise ArgumentError("lo and hi must be 1-D arrays of the same length")
        for a in (lo, hi):
            if a.size and a.dtype.kind not in "ui":
                raise ArgumentTypeError(f"ranks must be integers, got dtype {a.dtype}")
        lo64 = lo.astype(_I64)  # a copy: the caller's arrays stay theirs (words >= 2**63 go negative
        hi64 = hi.astype(_I64)  # and fail the span check below)
        kmin, kend = 1 << 2 * order, 13 << 2 * order
        if lo64.size:
            if np.any(lo64 > hi64):
                raise ArgumentError("every interval needs lo <= hi")
            if lo64.min() < kmin or hi64.max() >= kend:
                raise ArgumentError(
                    f"ranks at order {order} lie in [{kmin}, {kend - 1}] (base prefix 1..12); "
                    f"got [{lo64.min()}, {hi64.max()}]"
                )
        self._init(*_normalize(lo64, hi64), order)

    def _init(self, lo64: np.ndarray, hi64: np.ndarray, order: int) -> None:
        """Set the fields from normalized int64 intervals (no checks)."""
        self.order = order
        self.shift, self.marker = packing(order)
        lo64 = np.ascontiguousarray(lo64, dtype=_I64)
        hi64 = np.ascontiguousarray(hi64, dtype=_I64)
        counts = hi64 - lo64 + 1
        starts = np.zeros(lo64.size, dtype=_I64)
        np.cumsum(counts[:-1], out=starts[1:])
        self._size = int(starts[-1] + counts[-1]) if lo64.size else 0
        for a in (lo64, hi64, starts):
            a.setflags(write=False)
        self._lo64, self._hi64, self._starts = lo64, hi64, starts
        self.lo = lo64.view(_U64)
        self.hi = hi64.view(_U64)

    @classmethod
    def _new(cls, lo64: np.ndarray, hi64: np.ndarray, order: int) -> MortonRanges:
        """Wrap already-normalized int64 intervals without re-checking them."""
        obj = cls.__new__(cls)
        obj._init(lo64, hi64, order)
        return obj

    # -- construction --------------------------------------------------------------

    @classmethod
    def from_rank_intervals(cls, lo: Any, hi: Any, order: int) -> MortonRanges:
        """Build from inclusive ``[lo, hi]`` rank pairs at ``order``, in any order.

        Overlapping and adjacent pairs are merged. Raises ``ValueError`` for
        ``lo > hi``, ranks outside ``[4**order, 13 * 4**order)``, mismatched
        shapes or an order outside 0..27.
        """
        return cls(lo, hi, order)

    @classmethod
    def empty(cls, order: int) -> MortonRanges:
        """The empty domain at ``order``."""
        z = np.zeros(0, dtype=_I64)
        return cls._new(z, z, check_rank_order(order))

    @classmethod
    def from_words(cls, words: Any, order: int | None = None) -> MortonRanges:
        """Build from cell words (packed ``uint64`` or decimal strings) at one order.

        Duplicates are dropped and the input order does not matter (it is a
        set). ``order=None`` infers it from the words. Raises
        :class:`MixedOrderError` if the words are not all at one order (or not
        at ``order``), ``ValueError`` for invalid words, for orders 28/29, or for
        an empty input without ``order``.
        """
        w = _as_words(words).ravel()
        if w.size == 0:
            if order is None:
                raise ArgumentError("cannot infer the order of an empty word list; pass order=")
            return cls.empty(order)
        if np.any(w == 0):
            raise ArgumentError("0 is the empty morton word, not a cell")
        mortie.validate_morton(w)
        orders = np.flatnonzero(np.bincount(mortie.orders_of(w), minlength=64))
        if orders.size > 1 or (order is not None and int(orders[0]) != order):
            want = "one order" if order is None else f"order {order}"
            raise MixedOrderError(
                f"expected words at {want}, got orders {orders.tolist()}; rank space is "
                "defined at one order only (split the words per order)"
            )
        order = check_rank_order(int(orders[0]))
        shift, _ = packing(order)
        ranks = np.sort((w >> np.uint64(shift)).view(_I64), kind="stable")
        ranks = ranks[np.r_[True, ranks[1:] != ranks[:-1]]]  # drop duplicates
        return cls._new(*_runs(ranks), order)

    @classmethod
    def from_subtrees(cls, ancestors: Any, order: int) -> MortonRanges:
        """The cells at ``order`` under each ancestor word (words or decimal strings).

        Each ancestor may sit at any order ``k <= order``; its subtree is the rank
        interval ``[K_a << 2(order-k), ((K_a + 1) << 2(order-k)) - 1]`` with
        ``K_a = ancestor >> shift(k)``. Nested or overlapping subtrees are merged.
        Ancestors may mix orders (this is not a rank-space input). Raises
        ``ValueError`` for invalid words or an ancestor finer than ``order``.
        """
        order = check_rank_order(order)
        a = _as_words(ancestors).ravel()
        if a.size == 0:
            return cls.empty(order)
        if np.any(a == 0):
            raise ArgumentError("0 is the empty morton word, not a cell")
        mortie.validate_morton(a)
        k = mortie.orders_of(a).astype(_I64)
        if k.max() > order:
            raise ArgumentError(f"ancestors must be at orders <= {order}; got order {int(k.max())}")
        ks = np.unique(k)
        table = np.array([packing(int(x)) for x in ks], dtype=_I64).reshape(-1, 2)
        slot = np.searchsorted(ks, k)
        shifts, markers = table[slot, 0], table[slot, 1]
        if np.any((a & ((np.uint64(1) << shifts.astype(_U64)) - np.uint64(1))) != markers.astype(_U64)):
            raise ArgumentError("ancestor words do not carry their order's marker")
        k_a = (a >> shifts.astype(_U64)).view(_I64)
        d = 2 * (order - k)
        return cls._new(*_normalize(k_a << d, ((k_a + 1) << d) - 1), order)

    @classmethod
    def concat(cls, items: Sequence[MortonRanges]) -> MortonRanges:
        """Concatenate domains that are disjoint and in ascending word order.

        The result's rows are the rows of ``items[0]``, then ``items[1]``, ... --
        exactly what concatenating the materialized coordinates would give.
        Empty items are skipped. Raises :class:`MixedOrderError` for different
        orders, ``ValueError`` when a domain does not start after the previous
        one ends (overlapping, interleaved or reversed), and ``ValueError`` for
        an empty sequence.
        """
        items = list(items)
        if not items:
            raise ArgumentError("nothing to concatenate")
        _same_order(items)
        full = [r for r in items if r.n_intervals]
        if not full:
            return items[0]
        firsts = np.array([r._lo64[0] for r in full])
        lasts = np.array([r._hi64[-1] for r in full])
        if np.any(firsts[1:] <= lasts[:-1]):
            bad = int(np.flatnonzero(firsts[1:] <= lasts[:-1])[0])
            raise ArgumentError(
                f"domain {bad + 1} does not start after domain {bad} ends "
                "(overlapping, interleaved or reversed domains)"
            )
        lo = np.concatenate([r._lo64 for r in full])
        hi = np.concatenate([r._hi64 for r in full])
        return cls._new(*_coalesce(lo, hi), items[0].order)

    # -- size and identity -----------------------------------------------------------

    def __len__(self) -> int:
        """Number of rows (cells), not intervals."""
        return self._size

    @property
    def n_intervals(self) -> int:
        """Number of disjoint, non-adjacent rank intervals."""
        return int(self._lo64.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the interval arrays (the whole footprint of the domain)."""
        return int(self._lo64.nbytes + self._hi64.nbytes + self._starts.nbytes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MortonRanges):
            return NotImplemented
        return (
            self.order == other.order
            and np.array_equal(self._lo64, other._lo64)
            and np.array_equal(self._hi64, other._hi64)
        )

    def __hash__(self) -> int:
        return hash((self.order, self._lo64.tobytes(), self._hi64.tobytes()))

    def __repr__(self) -> str:
        span = ""
        if self._size:
            first, last = self.word_at(np.array([0, -1]))
            span = ", " + " .. ".join(_decimal(np.array([first, last])))
        return f"MortonRanges(order={self.order}, intervals={self.n_intervals:,}, rows={self._size:,}{span})"

    def __reduce__(self):
        # Rebuild through _new so the packing is re-probed in the receiving process.
        return (_restore, (np.asarray(self._lo64), np.asarray(self._hi64), self.order))

    def __dask_tokenize__(self):
        # dask takes this value as it is and hashes its str: the intervals go in as a digest of their bytes (an
        # array's str elides the middle of a long one, so two domains would share a token, and costs a print)
        digest = hashlib.blake2b(self._lo64.tobytes(), digest_size=16)
        digest.update(self._hi64.tobytes())
        return ("moczarr.MortonRanges", self.order, self.n_intervals, digest.hexdigest())

    def __copy__(self) -> MortonRanges:
        return self  # immutable

    def __deepcopy__(self, memo: dict) -> MortonRanges:
        return self  # immutable

    # -- position <-> word -------------------------------------------------------------

    def _encode(self, ranks64: np.ndarray) -> np.ndarray:
        return (ranks64.astype(_U64) << np.uint64(self.shift)) | np.uint64(self.marker)

    def _positions(self, positions: Any) -> np.ndarray:
        """int64 positions with negatives wrapped; ``IndexError`` when out of range."""
        p = np.asarray(positions)
        if p.size and p.dtype.kind not in "iu":
            raise ArgumentTypeError(f"positions must be integers, got dtype {p.dtype}")
        p = p.astype(_I64)
        p = np.where(p < 0, p + self._size, p)
        if p.size and (p.min() < 0 or p.max() >= self._size):
            raise IndexError(f"position out of range for {self._size} rows")
        return p

    def _rank_at(self, p: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self._starts, p, side="right") - 1
        return self._lo64[i] + (p - self._starts[i])

    def words(self) -> np.ndarray:
        """All words, ascending, as a new ``uint64`` array of ``len(self)`` (one allocation)."""
        out = np.ones(self._size, dtype=_I64)
        if self._size:
            out[0] = self._lo64[0]
            out[self._starts[1:]] = self._lo64[1:] - self._hi64[:-1]
            np.cumsum(out, out=out)
        w = out.view(_U64)
        w <<= np.uint64(self.shift)
        w |= np.uint64(self.marker)
        return w

    def word_at(self, positions: Any) -> np.ndarray:
        """Words at integer ``positions`` (any shape, negatives count from the end).

        Raises ``IndexError`` for a position outside ``[-len, len)``.
        """
        p = self._positions(positions)
        return self._encode(self._rank_at(p.ravel())).reshape(p.shape)

    def find(self, words: Any) -> np.ndarray:
        """Positions of ``words`` (words or decimal strings, any shape); ``-1`` where absent.

        A word of another order is absent. Raises only for labels that are not
        words at all (see :func:`moczarr.ids.to_words`).
        """
        w = _as_words(words)
        flat = w.ravel()
        if self.n_intervals == 0:
            return np.full(w.shape, -1, dtype=_I64)
        ranks = (flat >> np.uint64(self.shift)).view(_I64)
        ok = (flat & np.uint64((1 << self.shift) - 1)) == np.uint64(self.marker)
        i = np.searchsorted(self._lo64, ranks, side="right") - 1
        ic = np.maximum(i, 0)
        ok &= (i >= 0) & (ranks <= self._hi64[ic])
        pos = np.where(ok, self._starts[ic] + (ranks - self._lo64[ic]), -1)
        return pos.reshape(w.shape)

    def position_of(self, words: Any) -> np.ndarray:
        """Positions of ``words`` (any shape); ``KeyError`` naming the first absent word."""
        pos = self.find(words)
        if pos.size and pos.min() < 0:
            w = _as_words(words).ravel()
            missing = w[np.flatnonzero(pos.ravel() < 0)]
            raise SelectionError(
                f"{missing.size} of {w.size} morton word(s) not in the domain, first "
                f"{int(missing[0])} ({_decimal(missing[:1])[0]}) [{self!r}]"
            )
        return pos

    def contains(self, words: Any) -> np.ndarray:
        """Boolean membership of ``words`` (words or decimal strings, any shape)."""
        return self.find(words) >= 0

    def searchsorted(self, words: Any, side: str = "left") -> np.ndarray:
        """``np.searchsorted(self.words(), words, side)`` without materializing the words.

        Any ``uint64`` value is a valid probe (absent words, other orders). This
        is what a label slice ``sel(morton=slice(a, b))`` needs:
        ``slice(searchsorted(a, "left"), searchsorted(b, "right"))``.
        """
        if side not in ("left", "right"):
            raise ArgumentError("side must be 'left' or 'right'")
        v = _as_words(words)
        flat = v.ravel()
        if side == "left":  # count of words < v == count of words <= v - 1
            valid = flat > 0
            flat = np.where(valid, flat - np.uint64(1), np.uint64(0))
        else:
            valid = np.ones(flat.shape, dtype=bool)
        m = np.uint64(self.marker)
        valid &= flat >= m
        t = ((np.where(valid, flat, m) - m) >> np.uint64(self.shift)).view(_I64)  # max rank <= v
        i = np.searchsorted(self._lo64, t, side="right") - 1
        ic = np.maximum(i, 0)
        if self.n_intervals == 0:
            return np.zeros(v.shape, dtype=_I64)
        n = self._starts[ic] + np.minimum(t, self._hi64[ic]) - self._lo64[ic] + 1
        return np.where(valid & (i >= 0), n, 0).reshape(v.shape)

    # -- set algebra -------------------------------------------------------------------

    def _overlaps(self, other: MortonRanges) -> tuple[np.ndarray, ...]:
        """Pieces ``self[i] & other[j]`` of every overlapping pair, ascending (int64).

        Returns ``(lo, hi, i, j)``: the pieces and the interval numbers they come from.
        """
        _same_order([self, other])
        a_lo, a_hi, b_lo, b_hi = self._lo64, self._hi64, other._lo64, other._hi64
        j0 = np.searchsorted(b_hi, a_lo, side="left")  # first other interval ending at/after a_lo
        j1 = np.searchsorted(b_lo, a_hi, side="right")  # past the last one starting at/before a_hi
        cnt = np.maximum(j1 - j0, 0)
        total = int(cnt.sum())
        ia = np.repeat(np.arange(a_lo.size), cnt)
        first = np.cumsum(cnt) - cnt  # output slot of each self interval's first pair
        jb = np.arange(total, dtype=_I64) + np.repeat(j0 - first, cnt)
        return np.maximum(a_lo[ia], b_lo[jb]), np.minimum(a_hi[ia], b_hi[jb]), ia, jb

    def intersection(self, other: MortonRanges) -> MortonRanges:
        """Cells in both. :class:`MixedOrderError` if the orders differ."""
        return MortonRanges._new(*_coalesce(*self._overlaps(other)[:2]), self.order)

    def locate(self, other: MortonRanges) -> np.ndarray:
        """Position in ``self`` of every row of ``other``, ``-1`` where absent (int64).

        Equal to ``self.find(other.words())`` without generating words: each
        overlap piece is a run of consecutive positions on both sides, written
        with one ``cumsum``. Costs ``~10 * len(other)`` bytes transiently.
        :class:`MixedOrderError` if the orders differ.
        """
        lo, hi, io, js = other._overlaps(self)
        n_rows = len(other)
        out = np.zeros(n_rows, dtype=_I64)
        if lo.size == 0:
            out.fill(-1)
            return out
        po = other._starts[io] + (lo - other._lo64[io])  # piece start, position in other
        ps = self._starts[js] + (lo - self._lo64[js])  # piece start, position in self
        out[po] = np.diff(np.r_[0, ps - po])  # jumps of the offset (self - other position)
        np.cumsum(out, out=out)
        out += np.arange(n_rows, dtype=_I64)
        edge = np.zeros(n_rows + 1, dtype=np.int8)  # +1 where a piece starts, -1 past its end
        edge[po] = 1
        edge[po + (hi - lo + 1)] -= 1
        out[np.cumsum(edge[:-1], dtype=np.int8) == 0] = -1
        return out

    def union(self, other: MortonRanges) -> MortonRanges:
        """Cells in either. :class:`MixedOrderError` if the orders differ."""
        _same_order([self, other])
        lo = np.concatenate([self._lo64, other._lo64])
        hi = np.concatenate([self._hi64, other._hi64])
        return MortonRanges._new(*_normalize(lo, hi), self.order)

    def complement(self) -> MortonRanges:
        """Every other cell of the sphere at this order."""
        c = self.order
        lo = np.r_[np.int64(1 << 2 * c), self._hi64 + 1]
        hi = np.r_[self._lo64 - 1, np.int64((13 << 2 * c) - 1)]
        keep = lo <= hi
        return MortonRanges._new(lo[keep], hi[keep], c)

    def difference(self, other: MortonRanges) -> MortonRanges:
        """Cells in ``self`` and not in ``other``. :class:`MixedOrderError` if the orders differ."""
        _same_order([self, other])
        return self.intersection(other.complement())

    __and__ = intersection
    __or__ = union
    __sub__ = difference

    def issubset(self, other: MortonRanges) -> bool:
        """True if every cell of ``self`` is in ``other``."""
        return len(self.difference(other)) == 0

    # -- positional selection ------------------------------------------------------------

    def isel(self, key: slice) -> MortonRanges:
        """Rows ``key`` of the domain, for a positional slice with a positive step.

        Step 1 (or ``None``) is interval arithmetic and costs nothing per row; a
        step ``> 1`` goes through :meth:`take` (one rank per selected row). A
        negative step would reverse the rows, which an ascending set cannot
        hold: ``ValueError``.
        """
        if not isinstance(key, slice):
            raise ArgumentTypeError("isel takes a slice; use take() for integer positions")
        start, stop, step = key.indices(self._size)
        if step < 0:
            raise ArgumentError("a negative step reverses the rows; an interval set is ascending")
        if step > 1:
            return self.take(np.arange(start, stop, step, dtype=_I64))
        if stop <= start:
            return MortonRanges.empty(self.order)
        if start == 0 and stop == self._size:
            return self
        i0, i1 = np.searchsorted(self._starts, [start, stop - 1], side="right") - 1
        lo = self._lo64[i0 : i1 + 1].copy()
        hi = self._hi64[i0 : i1 + 1].copy()
        lo[0] += start - self._starts[i0]
        hi[-1] = self._lo64[i1] + (stop - 1 - self._starts[i1])
        return MortonRanges._new(lo, hi, self.order)

    def take(self, positions: Any) -> MortonRanges:
        """Rows at strictly ascending integer ``positions`` (negatives wrap).

        Raises ``ValueError`` if the positions (after wrapping) are not strictly
        ascending -- repeats and reorderings are not a set in ascending order --
        and ``IndexError`` if one is out of range.
        """
        p = self._positions(positions)
        if p.ndim != 1:
            raise ArgumentError("positions must be 1-D")
        if p.size > 1 and np.any(p[1:] <= p[:-1]):
            raise ArgumentError("positions must be strictly ascending to stay an interval set")
        return MortonRanges._new(*_runs(self._rank_at(p)), self.order)

    def iter_words(self, block_size: int = 1 << 20) -> Iterator[np.ndarray]:
        """Yield all words ascending in ``uint64`` blocks of at most ``block_size``.

        Peak memory is one block. Raises ``ValueError`` for ``block_size < 1``.
        """
        block_size = int(block_size)
        if block_size < 1:
            raise ArgumentError("block_size must be >= 1")
        for start in range(0, self._size, block_size):
            yield self.isel(slice(start, start + block_size)).words()


def _restore(lo64: np.ndarray, hi64: np.ndarray, order: int) -> MortonRanges:
    return MortonRanges._new(lo64, hi64, order)


def _same_order(items: Sequence[Any]) -> None:
    for r in items:
        if not isinstance(r, MortonRanges):
            raise ArgumentTypeError(f"expected MortonRanges, got {type(r).__name__}")
    orders = sorted({r.order for r in items})
    if len(orders) > 1:
        raise MixedOrderError(f"domains at orders {orders}: rank space is defined at one order only")


def _decimal(words: np.ndarray) -> list[str]:
    """Decimal strings of uint64 words (for messages); ``'?'`` for non-words."""
    try:
        return [str(s) for s in mortie.MortonIndexArray.from_words(words).decimal_repr()]
    except Exception:  # messages must not fail on garbage
        return ["?"] * len(words)
