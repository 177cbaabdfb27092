"""Coverage tiers: the root ranges MOC, the tier-0 box, the leaf bitmap (FORMAT.md §2.3, §6).

Caches degrade, content raises: an absent or unusable root MOC reads as
"no answer" (the caller walks); a well-formed envelope holding a malformed
range raises :class:`~moczarr.errors.CoverageError`; a present bitmap of the
wrong size raises too, because zero-padding it would fabricate empty cells.
"""

from __future__ import annotations

import json
import logging

import mortie
import numpy as np
import zstandard

from .. import ids
from ..errors import AOIError, CoverageError
from ..places import aoi_cover, as_place

log = logging.getLogger(__name__)

MOC_SPEC = "morton-moc/1"
ROOT_MOC_NAME = "coverage.moc"


# -- root ranges MOC -------------------------------------------------------------------------------
def parse_root_moc(payload: bytes | None, shard_order: int, where: str) -> np.ndarray | None:
    """Shard words named by a root ``coverage.moc``, ascending; None when the cache is unusable.

    Unusable (read as absent, logged at debug): missing, unparsable, not a
    mapping, unknown ``spec``, an ``encoding`` other than ``ranges``, or an
    ``order`` other than the manifest's ``shard_order``. A usable envelope
    whose ranges are malformed raises :class:`CoverageError`; every pair is
    validated before any is used, so a partial list is never returned.
    """
    if payload is None:
        return None
    try:
        env = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        log.debug("%s: root coverage.moc is not JSON; walking", where)
        return None
    if not isinstance(env, dict) or env.get("spec") != MOC_SPEC or env.get("encoding") != "ranges":
        log.debug("%s: root coverage.moc is not a morton-moc/1 ranges envelope; walking", where)
        return None
    order = env.get("order")
    if order != shard_order:
        log.debug("%s: root coverage.moc order %r != shard_order %d; walking", where, order, shard_order)
        return None
    ranges = env.get("ranges")
    if not isinstance(ranges, list):
        raise CoverageError(f"{where}/coverage.moc: 'ranges' must be a list")
    return expand_ranges(ranges, shard_order, f"{where}/coverage.moc")


def expand_ranges(ranges: list, order: int, where: str) -> np.ndarray:
    """Words of every shard in inclusive ``[first, last]`` decimal ranges (validated first).

    Raises :class:`CoverageError` naming the first malformed, off-order,
    base-crossing or backwards range; nothing is returned unless every pair is sound.
    """
    if not ranges:
        return np.empty(0, dtype=np.uint64)
    words = _range_words(ranges, order)
    if words is None:
        for pair in ranges:  # name the first bad pair
            _check_range(pair, order, where)
        raise CoverageError(f"{where}: malformed ranges")  # unreachable: some pair failed the checks above
    shift = np.uint64(ids.rank_shift(order))
    lo_rank, hi_rank = words[0::2] >> shift, words[1::2] >> shift
    if (lo_rank > hi_rank).any():
        bad = int(np.argmax(lo_rank > hi_rank))
        raise CoverageError(f"{where}: range {ranges[bad]!r} runs backwards")
    lengths = (hi_rank - lo_rank + np.uint64(1)).astype(np.int64)
    starts = np.repeat(lo_rank, lengths)
    offsets = np.arange(lengths.sum(), dtype=np.uint64) - np.repeat(np.cumsum(lengths) - lengths, lengths).astype(
        np.uint64
    )
    return np.unique(ids.words_from_ranks(starts + offsets, order))


def _range_words(ranges: list, order: int) -> np.ndarray | None:
    """The words of every range end, ``[first0, last0, first1, ...]``, or None when some pair is not sound.

    Sound: a list of two decimal ids at ``order`` under one base cell. Checked
    on all pairs at once (the words' order marker and base-cell prefix).
    """
    if not all(type(pair) is list and len(pair) == 2 for pair in ranges):
        return None
    ends = [end for pair in ranges for end in pair]
    if not all(type(end) is str for end in ends):
        return None
    try:
        words = ids.to_words(ends)
    except AOIError:
        return None
    if not (words & np.uint64(63) == order).all():  # the order marker (point ids never carry one <= 27)
        return None
    if not (words[0::2] >> np.uint64(60) == words[1::2] >> np.uint64(60)).all():
        return None
    return words


def _check_range(pair, order: int, where: str) -> None:
    """Raise :class:`CoverageError` naming ``pair`` unless it is two decimal ids at ``order`` under one base cell."""
    if (
        not isinstance(pair, list)
        or len(pair) != 2
        or not all(isinstance(p, str) and ids.is_decimal_id(p) for p in pair)
    ):
        raise CoverageError(f"{where}: malformed range {pair!r} (want two decimal ids)")
    lo, hi = pair
    if ids.decimal_order(lo) != order or ids.decimal_order(hi) != order:
        raise CoverageError(f"{where}: range {pair!r} is not at order {order}")
    if lo[: 2 if lo.startswith("-") else 1] != hi[: 2 if hi.startswith("-") else 1]:
        raise CoverageError(f"{where}: range {pair!r} crosses base cells")


# -- stamp coverage envelope (tier 0) --------------------------------------------------------------
def stamp_coverage(stamp: dict | None) -> dict | None:
    """The stamp's ``coverage`` envelope when usable (a mapping with spec ``morton-moc/1``), else None."""
    cov = (stamp or {}).get("coverage")
    if isinstance(cov, dict) and cov.get("spec") == MOC_SPEC:
        return cov
    return None


def box_members(stamp: dict | None) -> list[str] | None:
    """The tier-0 box's decimal members (``null`` pads dropped), or None when the box is absent or unusable.

    Unusable: no usable ``coverage`` envelope, a ``box`` that is not a list,
    no member, or a member that is not the decimal id of an area cell
    (:func:`~moczarr.ids.is_area_decimal`, FORMAT.md §1).
    """
    cov = stamp_coverage(stamp)
    if cov is None:
        return None
    box = cov.get("box")
    if not isinstance(box, list):
        return None
    members = [m for m in box if m is not None]
    if not members or not all(isinstance(m, str) and ids.is_area_decimal(m) for m in members):
        return None
    return members


def box_words(stamp: dict | None) -> np.ndarray | None:
    """The tier-0 box as words (a conservative superset of occupancy), or None when unusable (:func:`box_members`)."""
    members = box_members(stamp)
    return None if members is None else ids.to_words(members)


# -- leaf bitmap (tier 1) ----------------------------------------------------------------------------
def decode_bitmap(payload: bytes, depth: int, where: str) -> np.ndarray:
    """Occupied digit-tail ranks (ascending) of a zstd bitmap sidecar of ``4**depth`` bits.

    Raises :class:`CoverageError` on a non-zstd payload or a decompressed size
    other than ``ceil(4**depth / 8)`` (never pads or truncates), or ``depth <= 0``.
    """
    if depth <= 0:
        raise CoverageError(f"{where}: a bitmap needs cell_order > shard_order (depth {depth})")
    n_bits = 4**depth
    n_bytes = -(-n_bits // 8)
    try:
        raw = zstandard.ZstdDecompressor().decompress(payload, max_output_size=n_bytes + 1)
    except zstandard.ZstdError as exc:
        raise CoverageError(f"{where}: bitmap sidecar is not a zstd frame ({exc})") from None
    if len(raw) != n_bytes:
        raise CoverageError(
            f"{where}: bitmap sidecar decodes to {len(raw)} bytes, expected {n_bytes} for depth {depth}"
        )
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), count=n_bits)
    return np.flatnonzero(bits)


# -- AOI ----------------------------------------------------------------------------------------------
def aoi_words(aoi, cell_order: int | None = None) -> np.ndarray:
    """An AOI as a compact MOC of words: any place :func:`moczarr.places.as_place` accepts.

    A geometry is covered at ``cell_order`` (required for one). Raises
    :class:`~moczarr.errors.AOIError` for what is no place.
    """
    cover = aoi_cover(aoi, cell_order)
    if cover is None:
        raise AOIError("aoi=None is no AOI (pass [] for the empty one)")
    return cover


def meets(words: np.ndarray, cover: np.ndarray) -> np.ndarray:
    """Per word: does its cell meet the compact MOC ``cover``? Each word at its own order; one mortie call."""
    words = np.asarray(words, dtype=np.uint64)
    if words.size == 0 or cover.size == 0:
        return np.zeros(words.shape, dtype=bool)
    offsets = np.arange(words.size + 1, dtype=np.int64)
    return np.asarray(mortie.moc_intersects(cover, words.ravel(), offsets=offsets), dtype=bool).reshape(words.shape)


def aoi_mask(words, aoi) -> np.ndarray:
    """Per word: does the cell meet the AOI? Each word is resolved at its own order (mixed orders fine).

    A geometry AOI is covered at the finest order among ``words``.
    """
    place = as_place(aoi)
    words = np.asarray(words, dtype=np.uint64)
    order = int(np.max(mortie.orders_of(words))) if words.size and place is not None and place.words is None else 0
    return meets(words, aoi_words(place, order))
