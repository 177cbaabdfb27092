"""Morton ids and hive paths: a thin layer over mortie.

Two spellings of one id exist (FORMAT.md §1): the packed ``uint64`` word
(storage and arithmetic) and the decimal string (paths, JSON, logs). mortie
owns every conversion; this module only adds the hive-path grammar
(``path_grouping``, leaf basenames, windows) that mortie does not know.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import mortie
import numpy as np

from .errors import AOIError, AOITypeError, ArgumentError, MoczarrError

#: A morton decimal id as it appears in paths: sign, base digit, order digits (never ``p``).
DECIMAL_RE = re.compile(r"^-?[1-6][1-4]*\Z")
#: A window label (mortie §6.3): ids and labels never contain ``_`` or ``.``.
WINDOW_RE = re.compile(r"^[0-9A-Za-z-]{1,32}$")
#: The reserved all-time token: never a window label.
ALL_TOKEN = "all"
#: A decimal id of an area cell, order 0..29 (never ``p``): what :func:`to_words` checks many of in one scan.
_AREA_DECIMAL = r"-?[1-6][1-4]{0,29}"
_AREA_DECIMAL_RE = re.compile(_AREA_DECIMAL)
#: highest order of the rank space (at 28/29 the suffix packs digit tuples)
MAX_RANK_ORDER = 27


def is_decimal_id(text: str) -> bool:
    """True when ``text`` is a morton decimal id usable in a path (no point marker)."""
    return bool(DECIMAL_RE.match(text))


def is_area_decimal(text: str) -> bool:
    """True when ``text`` is the decimal id of an area cell (order 0..29, no point marker, nothing around it)."""
    return _AREA_DECIMAL_RE.fullmatch(text) is not None


def decimal_order(decimal: str) -> int:
    """The order of a decimal id: its digit count after the sign and base digit."""
    return len(decimal) - (2 if decimal.startswith("-") else 1)


def to_words(
    values: Any, *, keep_shape: bool = False, validate: bool = True, argument: str | None = None
) -> np.ndarray:
    """Packed ``uint64`` words from any id spelling a user may hand over: the one id converter.

    Accepts a ``mortie.Moc`` (or an object with ``__morton_moc__``), one packed
    word or decimal string, or a sequence/array mixing both (words may be numpy
    unsigned ints or Python ints; a list goes through an object array so large
    ints never pass through float64 and ``5`` is never read as the id ``"5"``).
    Returns a 1-D array in input order, or the input's shape (0-d for a scalar)
    with ``keep_shape=True``. With ``validate`` every word must be canonical
    (:func:`canonical_words`: pure bit arithmetic, so mortie never sees, or
    panics on, a bad word).

    Raises :class:`AOIError` naming the offending element (and ``argument``, the
    caller's parameter name, when given): a string that is not a decimal id
    (sign, base digit 1-6, digits 1-4), a negative or wider than 64-bit integer,
    a word that is not canonical; :class:`AOITypeError` (also a ``TypeError``)
    for floats, booleans and other objects.
    """
    try:
        return _to_words(values, keep_shape, validate)
    except AOIError as exc:
        if argument is None:
            raise
        raise type(exc)(f"{argument}: {exc}") from None


def _to_words(values: Any, keep_shape: bool, validate: bool) -> np.ndarray:
    if isinstance(values, mortie.Moc):
        return np.asarray(values.words, dtype=np.uint64)
    if hasattr(values, "__morton_moc__"):
        return np.asarray(values.__morton_moc__(), dtype=np.uint64)
    if isinstance(values, bytes):
        values = _decode(values)
    # decimal ids alone, the common case, skip the mixed-input path and the word check: the
    # grammar _parse_decimals enforces admits only canonical words (FORMAT.md §1.1)
    if isinstance(values, str):
        words = _parse_decimals([values])
        return words.reshape(()) if keep_shape else words
    if isinstance(values, (list, tuple)) and values and all(type(v) is str for v in values):
        return _parse_decimals(values)
    if isinstance(values, (list, tuple)):
        arr = np.empty(len(values), dtype=object)
        arr[:] = list(values)
        if arr.size and all(isinstance(v, (list, tuple, np.ndarray)) for v in values):
            try:
                arr = np.array(values, dtype=object)  # nested: keep the shape
            except ValueError:
                raise AOIError(f"ragged nested id lists are not ids: {values!r:.80}") from None
    else:
        arr = np.asarray(values)
    words = _words_of(arr)
    if validate and words.size:
        bad = ~canonical_words(words.ravel())
        if bad.any():
            w = int(words.ravel()[bad][0])
            hint = f"; decimal ids are strings, e.g. ['{w}'] if that is what you meant" if is_decimal_id(str(w)) else ""
            raise AOIError(f"{w} is not a canonical packed morton word ({_why_not_word(w)}){hint}")
    return words if keep_shape else words.ravel()


def canonical_words(words: np.ndarray) -> np.ndarray:
    """Per word: is it a canonical packed morton word (FORMAT.md §1.1)? Pure bit arithmetic, no mortie call.

    Base prefix 1..12; area suffix 0..27 with every body bit below the order
    zero, or the order-28/29 and point suffixes 28..63 (which use the whole body).
    """
    words = np.asarray(words, dtype=np.uint64)
    suffix = words & np.uint64(63)
    prefix_ok = (words >> np.uint64(60)) - np.uint64(1) < np.uint64(12)  # 0 wraps around to the largest word
    return prefix_ok & (words & _BELOW_ORDER[suffix] == suffix)


#: per suffix: the mask of the body bits below its order and the suffix's own six (a canonical area word at
#: order 0..27 has the suffix alone there); the order-28/29 and point suffixes use the whole body: six bits
_BELOW_ORDER = np.array([(1 << (60 - 2 * s)) - 1 if s <= 27 else 63 for s in range(64)], dtype=np.uint64)


def _why_not_word(w: int) -> str:
    prefix, suffix = w >> 60, w & 63
    if w == 0:
        return "0 is the reserved empty word"
    if not 1 <= prefix <= 12:
        return f"its base prefix nibble is {prefix}, not 1..12"
    return f"body bits are set below its order {suffix}"


_NOT_A_WORD = (
    "words are unsigned 64-bit; a negative or wider integer is not one; decimal ids are strings, e.g. '-31123'"
)


def _decode(item: bytes) -> str:
    try:
        return item.decode("ascii")
    except UnicodeDecodeError:
        raise AOIError(f"{item!r:.40} is not a morton decimal id (not ASCII text)") from None


#: many decimal ids at once, one per line, none with the point marker: the common case checked in one scan
_DECIMAL_LINES = re.compile(rf"(?:{_AREA_DECIMAL}\n)*")


def _parse_decimals(texts) -> np.ndarray:
    """Words of decimal ids (str), checked against the grammar first; an object array is mortie's cheapest input."""
    texts = [t if type(t) is str else str(t) for t in texts]
    lines = "\n".join(texts) + "\n"
    if lines.count("\n") == len(texts) and _DECIMAL_LINES.fullmatch(lines):  # no id hides a line break
        return np.asarray(mortie.decimal_to_word(np.array(texts, dtype=object)), dtype=np.uint64).reshape(-1)
    for t in texts:
        if len(t) > 32 or not is_decimal_id(t.removesuffix("p")):
            raise AOIError(
                f"{t!r:.40} is not a morton decimal id (optional '-', base digit 1-6, then up to 29 digits 1-4)"
            )
        if decimal_order(t.removesuffix("p")) > 29:
            raise AOIError(
                f"{t!r} is not a morton decimal id: {decimal_order(t.removesuffix('p'))} order digits, "
                "and order 29 (29 digits after the base digit) is the finest"
            )
        if t.endswith("p") and decimal_order(t[:-1]) != 29:
            raise AOIError(f"{t!r} carries the point marker 'p' but is not a full order-29 id")
    return np.asarray(mortie.decimal_to_word(np.asarray(texts)), dtype=np.uint64).reshape(-1)


def _words_of(arr: np.ndarray) -> np.ndarray:
    kind = arr.dtype.kind
    if kind == "u":
        return arr.astype(np.uint64, copy=False)
    if kind == "i":
        if arr.size and arr.min() < 0:
            raise AOIError(f"{int(arr.min())} is not a packed morton word ({_NOT_A_WORD})")
        return arr.astype(np.uint64)
    if kind in "US":
        flat = [_decode(x) if isinstance(x, bytes) else x for x in arr.ravel().tolist()]
        return _parse_decimals(flat).reshape(arr.shape) if flat else np.empty(arr.shape, np.uint64)
    if kind == "O":
        items = arr.ravel()
        out = np.empty(items.size, dtype=np.uint64)
        texts = []
        for i, v in enumerate(items):
            if isinstance(v, bytes):
                v = _decode(v)
            if isinstance(v, (str, np.str_)):
                texts.append((i, v))
            elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
                if not 0 <= int(v) < 2**64:
                    raise AOIError(f"{int(v)!s:.40} is not a packed morton word ({_NOT_A_WORD})")
                out[i] = np.uint64(int(v))
            else:
                raise AOITypeError(f"{v!r:.40} is neither a packed morton word nor a decimal id")
        if texts:
            out[[i for i, _ in texts]] = _parse_decimals([t for _, t in texts])
        return out.reshape(arr.shape)
    raise AOITypeError(f"morton ids must be packed uint64 words or decimal strings, got dtype {arr.dtype}")


def to_decimals(words: Iterable[int | np.integer] | np.ndarray) -> list[str]:
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
    if path_grouping == 1:  # one digit a component: the common layout, joined in one call
        return "/".join(decimal) if decimal[0] != "-" else "-" + "/".join(decimal[1:])
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
    unit-stride coordinate at one order, checked against mortie by :func:`packing`.
    """
    return packing(order)[0]


@functools.cache
def packing(order: int) -> tuple[int, int]:
    """Return ``(shift, marker)`` of cell order ``order``, probed from mortie.

    Encodes probe cells with :func:`mortie.decimal_to_word` (the first and last
    cells of the sphere, the seams between base cells 0|1 and 5|6, a southern
    base cell) and derives ``shift`` from the word distance between two
    neighbouring cells and ``marker`` from their constant low bits. It then
    checks, and raises :class:`MoczarrError` if any check fails:

    - the derived ``shift`` is ``60 - 2 * order`` and every probe word carries
      the same ``marker`` (equal to ``order``) and decodes to ``order``;
    - ``(K << shift) | marker`` rebuilds every probe word;
    - the rank span is ``[4**order, 13 * 4**order)``, unit-stride across the
      base-cell seams, and ``K - 4**order`` is mortie's HEALPix NESTED id;
    - the children of an order ``order - 1`` cell (``generate_morton_children``)
      occupy four consecutive ranks starting at ``4 * K_parent``.

    Raises ``ValueError`` for an order outside ``0..27``: at 28 and 29 the
    suffix packs digit tuples and rank is not unit-stride.
    """
    order = check_rank_order(order)
    c = order
    first, second = ("1", "2") if c == 0 else ("1" + "1" * c, "1" + "1" * (c - 1) + "2")
    probes = [
        first,  # first cell of the sphere
        second,  # its successor
        "1" + "4" * c,  # last cell of base 0 ...
        "2" + "1" * c,  # ... and first of base 1
        "6" + "4" * c,  # last northern cell ...
        "-1" + "1" * c,  # ... first southern cell (bit 63 set from here on)
        "-3" + ("1123" * 7)[:c],  # somewhere in the south
        "-6" + "4" * c,  # last cell of the sphere
    ]
    words = mortie.decimal_to_word(np.array(probes))
    if words.dtype != np.dtype(np.uint64):
        raise MoczarrError(f"mortie.decimal_to_word returned {words.dtype}, expected uint64")
    step = int(words[1]) - int(words[0])
    shift = step.bit_length() - 1
    if step <= 0 or step != 1 << shift:
        raise MoczarrError(
            f"morton packing probe failed at order {c}: neighbouring cells {first!r}, "
            f"{second!r} are {step} apart, not a power of two"
        )
    if shift != 60 - 2 * c:
        raise MoczarrError(
            f"morton packing probe failed at order {c}: mortie gives shift {shift}, FORMAT.md §1.3 says {60 - 2 * c}"
        )
    mask = np.uint64((1 << shift) - 1)
    lows = words & mask
    marker = int(lows[0])
    ranks = words >> np.uint64(shift)
    nested, nested_order = mortie.mort2healpix(words)
    problems = []
    if not np.all(lows == lows[0]) or marker != c:
        problems.append(f"low bits {sorted(set(lows.tolist()))} are not the constant {c}")
    if not np.all(mortie.orders_of(words) == c):
        problems.append("probe words do not decode to the probed order")
    if not np.array_equal((ranks << np.uint64(shift)) | np.uint64(marker), words):
        problems.append("(K << shift) | marker does not rebuild the words")
    r = [int(x) for x in ranks]
    if r[0] != 4**c or r[-1] != 13 * 4**c - 1:
        problems.append(f"rank span [{r[0]}, {r[-1]}] is not [4**{c}, 13*4**{c} - 1]")
    if r[1] != r[0] + 1 or r[3] != r[2] + 1 or r[5] != r[4] + 1:
        problems.append("ranks are not unit-stride across cells and base-cell seams")
    if int(nested_order) != c or not np.array_equal(np.asarray(nested, dtype=np.int64), ranks.astype(np.int64) - 4**c):
        problems.append("K - 4**order is not mortie's NESTED id")
    if c >= 1:
        parent = mortie.decimal_to_word("-3" + ("1123" * 7)[: c - 1])
        kids = mortie.generate_morton_children(parent, c) >> np.uint64(shift)
        k_parent = int(parent) >> (shift + 2)
        if [int(x) for x in kids] != [4 * k_parent + i for i in range(4)]:
            problems.append("generate_morton_children disagrees with subtree rank arithmetic")
    if problems:
        raise MoczarrError(f"morton packing probe failed at order {c}: " + "; ".join(problems))
    return shift, marker


def check_rank_order(order: Any) -> int:
    """Return ``order`` as an int in ``0..27``; raise ``ValueError`` otherwise."""
    try:
        o = int(order)
    except (TypeError, ValueError):
        raise ArgumentError(f"order must be an integer, got {order!r}") from None
    if o != order or not 0 <= o <= MAX_RANK_ORDER:
        raise ArgumentError(
            f"rank space is defined for cell orders 0..{MAX_RANK_ORDER}, got {order!r} "
            "(at orders 28/29 the suffix packs digit tuples and ranks are not unit-stride)"
        )
    return o


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
