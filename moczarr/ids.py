"""Morton ids and hive paths: a thin layer over mortie.

Two spellings of one id exist (FORMAT.md §1): the packed ``uint64`` word
(storage and arithmetic) and the decimal string (paths, JSON, logs). mortie
owns every conversion; this module only adds the hive-path grammar
(``path_grouping``, leaf basenames, windows) that mortie does not know.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import mortie
import numpy as np

from .errors import AOIError

#: A morton decimal id as it appears in paths: sign, base digit, order digits (never ``p``).
DECIMAL_RE = re.compile(r"^-?[1-6][1-4]*$")
#: A window label (mortie §6.3): ids and labels never contain ``_`` or ``.``.
WINDOW_RE = re.compile(r"^[0-9A-Za-z-]{1,32}$")
#: The reserved all-time token: never a window label.
ALL_TOKEN = "all"


def is_decimal_id(text: str) -> bool:
    """True when ``text`` is a morton decimal id usable in a path (no point marker)."""
    return bool(DECIMAL_RE.match(text))


def decimal_order(decimal: str) -> int:
    """The order of a decimal id: its digit count after the sign and base digit."""
    return len(decimal) - (2 if decimal.startswith("-") else 1)


def to_words(ids: Any) -> np.ndarray:
    """Packed ``uint64`` words from any id spelling a user may hand over.

    Accepts a ``mortie.Moc``, one word or decimal string, or an iterable mixing
    both (words may be numpy unsigned ints or Python ints). Returns a 1-D
    ``uint64`` array in input order.

    Raises :class:`AOIError` when an element is neither a valid decimal id nor
    a valid packed word.
    """
    if isinstance(ids, mortie.Moc):
        return np.asarray(ids.words, dtype=np.uint64)
    if hasattr(ids, "__morton_moc__"):
        return np.asarray(ids.__morton_moc__(), dtype=np.uint64)
    if isinstance(ids, (str, bytes, int, np.integer)):
        ids = [ids]
    if isinstance(ids, np.ndarray):
        arr = ids
    else:
        items = list(ids)
        kinds = {type(x) for x in items}
        # keep a mixed list as objects: np.asarray would turn words into strings
        arr = np.asarray(items, dtype=object if len(kinds) > 1 else None)
        if arr.dtype == object and all(isinstance(x, (int, np.integer)) for x in items):
            arr = np.asarray([int(x) for x in items], dtype=np.uint64) if all(int(x) >= 0 for x in items) else arr
    if arr.dtype.kind == "u":
        words = arr.astype(np.uint64).ravel()
    elif arr.dtype.kind == "i":
        if (arr < 0).any():
            raise AOIError("negative integers are not packed morton words; pass decimal strings such as '-31123'")
        words = arr.astype(np.uint64).ravel()
    else:
        items = list(arr.ravel()) if arr.ndim else [arr.item()]
        words = np.empty(len(items), dtype=np.uint64)
        for i, item in enumerate(items):
            if isinstance(item, bytes):
                item = item.decode()
            if isinstance(item, str):
                if not is_decimal_id(item.rstrip("p")):
                    raise AOIError(f"{item!r} is not a morton decimal id (sign, base digit 1-6, digits 1-4)")
                words[i] = mortie.decimal_to_word(item)
            elif isinstance(item, (int, np.integer)) and int(item) >= 0:
                words[i] = np.uint64(int(item))
            else:
                raise AOIError(f"{item!r} is neither a packed morton word nor a decimal id")
    if words.size:
        try:
            mortie.validate_morton(words)
        except ValueError as exc:
            raise AOIError(f"invalid morton word in {ids!r}: {exc}") from None
    return words


def to_decimals(words: Iterable[int] | np.ndarray) -> list[str]:
    """Decimal strings of packed words (mortie's renderer), in input order."""
    words = np.asarray(words, dtype=np.uint64).ravel()
    if words.size == 0:
        return []
    from mortie.morton_index import MortonIndexArray

    return list(MortonIndexArray.from_words(words).decimal_repr())


def to_decimal(word: int | np.integer) -> str:
    """The decimal string of one packed word."""
    return to_decimals([word])[0]


def hive_node(decimal: str, path_grouping: int = 1) -> str:
    """The node path (no basename) holding the leaf of ``decimal`` (FORMAT.md §1.5).

    The first component is the sign and base digit alone; the digit tail is cut
    into components of ``path_grouping`` digits, the last carrying the remainder.
    """
    head = 2 if decimal.startswith("-") else 1
    tail = decimal[head:]
    parts = [decimal[:head]]
    parts += [tail[i : i + path_grouping] for i in range(0, len(tail), path_grouping)]
    return "/".join(parts)


def ancestor_node(decimal: str) -> str:
    """The one-digit-per-component node path sweep artifacts use, whatever the grouping."""
    return hive_node(decimal, 1)


def leaf_basename(decimal: str, window: str | None = None) -> str:
    """``{id}.zarr`` or, on a windowed (``morton-hive/2``) store, ``{id}_{window}.zarr``."""
    return f"{decimal}.zarr" if window is None else f"{decimal}_{window}.zarr"


def leaf_path(decimal: str, window: str | None = None, path_grouping: int = 1) -> str:
    """The stable leaf root of ``decimal`` relative to the store root."""
    return f"{hive_node(decimal, path_grouping)}/{leaf_basename(decimal, window)}"


def parse_leaf_name(name: str) -> tuple[str, str | None] | None:
    """``(decimal, window)`` for a source-leaf basename, or None for anything else.

    Columns (``*.pyramid.zarr``), overviews (``{window}.zarr``, ``all.zarr``) and
    point ids (order 29 with a ``p``) are not leaves and give None.
    """
    if not name.endswith(".zarr") or name.endswith(".pyramid.zarr"):
        return None
    stem = name[: -len(".zarr")]
    decimal, sep, window = stem.partition("_")
    if not is_decimal_id(decimal):
        return None
    if sep and not WINDOW_RE.match(window):
        return None
    return decimal, (window if sep else None)


def rank_shift(order: int) -> int:
    """Bits below the rank field of a packed word at ``order`` (``60 - 2*order``; orders 0..27).

    Rank space (FORMAT.md §1.3) is ``word >> rank_shift(order)``: a global
    unit-stride coordinate at one order. The formula is checked against
    mortie once per process (:func:`_probe_rank_space`), so a packing change
    fails loudly instead of mis-ranking.
    """
    if not 0 <= order <= 27:
        raise ValueError(f"rank space is defined for orders 0..27, not {order}")
    _probe_rank_space()
    return 60 - 2 * order


_PROBED = False


def _probe_rank_space() -> None:
    global _PROBED
    if _PROBED:
        return
    for decimal in ("4331421", "-31123", "11213"):
        parent = mortie.decimal_to_word(decimal)
        order = decimal_order(decimal)
        kids = np.asarray(mortie.generate_morton_children(parent, order + 2), dtype=np.uint64)
        shift = np.uint64(60 - 2 * (order + 2))
        ranks = kids >> shift
        expect = (np.uint64(int(parent) >> (60 - 2 * order)) << np.uint64(4)) + np.arange(16, dtype=np.uint64)
        if not (np.array_equal(ranks, expect) and np.all((kids & np.uint64(63)) == order + 2)):
            raise RuntimeError("mortie's word packing no longer matches the rank-space layout this reader assumes")
    _PROBED = True


def subtree_rank_bounds(words: np.ndarray, order: int, cell_order: int) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive rank bounds at ``cell_order`` of the subtrees of ``words`` (all at ``order``)."""
    words = np.asarray(words, dtype=np.uint64)
    depth = np.uint64(2 * (cell_order - order))
    rank = words >> np.uint64(rank_shift(order))
    return rank << depth, ((rank + np.uint64(1)) << depth) - np.uint64(1)


def words_from_ranks(ranks: np.ndarray, order: int) -> np.ndarray:
    """Packed words of ranks at ``order`` (the inverse of ``word >> rank_shift(order)``)."""
    ranks = np.asarray(ranks, dtype=np.uint64)
    return (ranks << np.uint64(rank_shift(order))) | np.uint64(order)
