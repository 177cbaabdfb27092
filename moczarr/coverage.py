"""Coverage tiers: the root ranges MOC, the tier-0 box, the leaf bitmap (FORMAT.md §2.3, §6).

Caches degrade, content raises: an absent or unusable root MOC reads as
"no answer" (the caller walks); a well-formed envelope holding a malformed
range raises :class:`~moczarr.errors.CoverageError`; a present bitmap of the
wrong size raises too, because zero-padding it would fabricate empty cells.
"""

from __future__ import annotations

import json
import logging
import os

import mortie
import numpy as np
import zstandard

from . import ids, keys
from .errors import CoverageError

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
    """Words of every shard in inclusive ``[first, last]`` decimal ranges (validated first)."""
    if not ranges:
        return np.empty(0, dtype=np.uint64)
    firsts, lasts = [], []
    for pair in ranges:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(p, str) and ids.is_decimal_id(p) for p in pair)
        ):
            raise CoverageError(f"{where}: malformed range {pair!r} (want two decimal ids)")
        lo, hi = pair
        if ids.decimal_order(lo) != order or ids.decimal_order(hi) != order:
            raise CoverageError(f"{where}: range {pair!r} is not at order {order}")
        base_lo = lo[: 2 if lo.startswith("-") else 1]
        base_hi = hi[: 2 if hi.startswith("-") else 1]
        if base_lo != base_hi:
            raise CoverageError(f"{where}: range {pair!r} crosses base cells")
        firsts.append(lo)
        lasts.append(hi)
    shift = np.uint64(ids.rank_shift(order))
    lo_rank = ids.to_words(firsts) >> shift
    hi_rank = ids.to_words(lasts) >> shift
    if (lo_rank > hi_rank).any():
        bad = int(np.argmax(lo_rank > hi_rank))
        raise CoverageError(f"{where}: range {ranges[bad]!r} runs backwards")
    lengths = (hi_rank - lo_rank + np.uint64(1)).astype(np.int64)
    starts = np.repeat(lo_rank, lengths)
    offsets = np.arange(lengths.sum(), dtype=np.uint64) - np.repeat(
        np.cumsum(lengths) - lengths, lengths
    ).astype(np.uint64)
    return np.unique(ids.words_from_ranks(starts + offsets, order))


# -- stamp coverage envelope (tier 0) --------------------------------------------------------------
def stamp_coverage(stamp: dict | None) -> dict | None:
    """The stamp's ``coverage`` envelope when usable (a mapping with spec ``morton-moc/1``), else None."""
    cov = (stamp or {}).get("coverage")
    if isinstance(cov, dict) and cov.get("spec") == MOC_SPEC:
        return cov
    return None


def box_words(stamp: dict | None) -> np.ndarray | None:
    """The tier-0 box as words (a conservative superset of occupancy), or None when absent/unusable."""
    cov = stamp_coverage(stamp)
    if cov is None:
        return None
    box = cov.get("box")
    if not isinstance(box, list):
        return None
    members = [m for m in box if m is not None]
    if not members or not all(isinstance(m, str) and ids.is_decimal_id(m) for m in members):
        return None
    return ids.to_words(members)


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
        raise CoverageError(f"{where}: bitmap sidecar decodes to {len(raw)} bytes, expected {n_bytes} for depth {depth}")
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), count=n_bits)
    return np.flatnonzero(bits)


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
    from .manifest import read_manifest
    from .storage import Storage
    from .store import leaf_data_prefix, read_stamp

    storage = Storage.open(store_root, storage_options)
    manifest = read_manifest(storage)
    decimal, window, path = _resolve_leaf(leaf, manifest)
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


def _resolve_leaf(leaf: str, manifest) -> tuple[str, str | None, str]:
    if not isinstance(leaf, str) or "\x00" in leaf:
        from .errors import ArgumentError

        raise ArgumentError(f"leaf must be a leaf id or leaf path string, got {leaf!r}")
    name = os.path.basename(leaf.rstrip("/"))
    parsed = ids.parse_leaf_name(name if name.endswith(".zarr") else f"{name}.zarr")
    if parsed is None:
        raise CoverageError(f"{leaf!r} does not name a leaf (an id, id_window, or a leaf path)")
    decimal, window = parsed
    if ids.decimal_order(decimal) != manifest.shard_order:
        raise CoverageError(f"{leaf!r} is not at the store's shard order {manifest.shard_order}")
    return decimal, window, ids.leaf_path(decimal, window, manifest.path_grouping)


# -- AOI ----------------------------------------------------------------------------------------------
def aoi_words(aoi) -> np.ndarray:
    """An AOI as a compact MOC of words (any spelling :func:`moczarr.ids.to_words` accepts)."""
    words = ids.to_words(aoi)
    if words.size == 0:
        return words
    return np.asarray(mortie.compress_moc(words), dtype=np.uint64)


def aoi_mask(words, aoi) -> np.ndarray:
    """Per word: does the cell meet the AOI? Each word is resolved at its own order (mixed orders fine)."""
    words = np.asarray(words, dtype=np.uint64)
    cover = aoi_words(aoi)
    if words.size == 0 or cover.size == 0:
        return np.zeros(words.shape, dtype=bool)
    offsets = np.arange(words.size + 1, dtype=np.int64)
    return np.asarray(mortie.moc_intersects(cover, words, offsets=offsets), dtype=bool)
