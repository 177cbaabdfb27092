"""O11 content hashes (FORMAT.md §8.6): the one definition the reader and the verifier both use.

The newest zagg writer records, in every leaf, column and overview stamp, a
sha256 per array of the object's **decoded** values (never the stored object
bytes), keyed by the array's path relative to the object's data root
(``6/count``; a versioned leaf's keys never contain ``run-…``), plus a
``combined`` hash over the sorted per-array digests:

- fixed-width arrays: sha256 of the whole array, C order, little-endian at the
  declared dtype, fill included;
- variable-length arrays: sha256 over the cells in C order of
  ``u64le(len(payload)) || payload``; an empty or unwritten cell contributes
  length 0, an ndarray cell its C-contiguous little-endian bytes, a ``str``
  its UTF-8;
- ``combined``: sha256 of the ASCII per-array hex digests, sorted, joined by
  ``"\\n"`` (names excluded).

A digest covers a whole array, so a check needs every chunk of it; zagg's
leaves, columns and overviews hold one chunk per array (a shard object, or
one unsharded chunk), which is exactly what a load reads. A stamp without
``content_hashes`` (older writers) is unverifiable, not tampered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np


def content_digest(values: np.ndarray) -> str:
    """The O11 digest (hex) of one whole decoded array.

    Fixed width: sha256 of the C-order little-endian bytes at the array's
    dtype (fill included), hashed from the array's buffer without a copy when
    it is already contiguous and little-endian. Variable length (object
    arrays): sha256 over the cells in C order of ``u64le(len(payload)) ||
    payload``. Raises ``TypeError`` for a vlen cell that is not bytes, str, an
    ndarray or None.
    """
    values = np.asarray(values)
    if values.dtype != object:
        le = np.ascontiguousarray(values.astype(values.dtype.newbyteorder("<"), copy=False))
        return hashlib.sha256(le.reshape(-1).view(np.uint8)).hexdigest()
    h = hashlib.sha256()
    for cell in values.ravel(order="C"):
        if cell is None:
            payload = b""
        elif isinstance(cell, (bytes, bytearray, memoryview)):
            payload = bytes(cell)
        elif isinstance(cell, str):
            payload = cell.encode("utf-8")
        elif isinstance(cell, np.ndarray):
            payload = np.ascontiguousarray(cell.astype(cell.dtype.newbyteorder("<"), copy=False)).tobytes()
        else:
            raise TypeError(f"a vlen cell of type {type(cell).__name__} has no O11 byte form")
        h.update(len(payload).to_bytes(8, "little"))
        h.update(payload)
    return h.hexdigest()


def bytes_digest(payload: bytes) -> str:
    """The O11 digest of an array whose stored chunk bytes are its C-order little-endian values.

    The shortcut of :func:`content_digest` for a single chunk of a plain
    ``bytes(endian=little)`` codec covering exactly the array's shape: the
    decoded values' bytes are the payload itself.
    """
    return hashlib.sha256(payload).hexdigest()


def combined_digest(digests: Sequence[str]) -> str:
    """``sha256`` of the sorted per-array hex digests joined by newlines (names excluded)."""
    return hashlib.sha256("\n".join(sorted(digests)).encode("ascii")).hexdigest()


def recorded_hashes(stamp: Mapping | None) -> Mapping | None:
    """The per-array map a stamp's ``content_hashes`` records (the ``arrays`` form or the flat form), or None.

    Returned as stored (no copy: a bulk open calls this once per leaf); read
    one digest with :func:`recorded_digest`, which ignores non-string values.
    """
    block = (stamp or {}).get("content_hashes") if isinstance(stamp, Mapping) else None
    if not isinstance(block, Mapping):
        return None
    arrays = block.get("arrays")
    return arrays if isinstance(arrays, Mapping) else block


def recorded_digest(hashes: Mapping | None, key: str) -> str | None:
    """The hex digest recorded for array ``key`` (``{group}/{array}``), or None when nothing is recorded for it."""
    if hashes is None or key == "combined":
        return None
    value = hashes.get(key)
    return value if isinstance(value, str) else None


def recorded_digests(stamp: Mapping | None) -> dict[str, str] | None:
    """Every ``{array: hex}`` a stamp records, or None when it records none (what a verifier compares)."""
    hashes = recorded_hashes(stamp)
    if hashes is None:
        return None
    out = {k: v for k in hashes if (v := recorded_digest(hashes, k)) is not None}
    return out or None


__all__ = [
    "bytes_digest",
    "combined_digest",
    "content_digest",
    "recorded_digest",
    "recorded_digests",
    "recorded_hashes",
]
