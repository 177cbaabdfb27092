"""What a variable concatenates: its segments (objects and the cells of each), their digests, and read batches.

An open lays each variable out as :class:`Segments` shared by all its
variables, with :class:`SegmentDigests` naming each segment's recorded
content hash; :func:`batch_row_chunks` groups consecutive objects into the
rows of one dask task, sized by :func:`row_bytes`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ArgumentError

DEFAULT_BATCH_BYTES = 4 * 2**20
_OBJECT_ROW_BYTES = 64  # nominal decoded size of one variable-length element, for batch sizing only


def batch_row_chunks(n_rows: Sequence[int], row_bytes: int, batch_bytes: int = DEFAULT_BATCH_BYTES) -> tuple[int, ...]:
    """Rows per batch: consecutive objects grouped until a batch holds ``batch_bytes`` of decoded data.

    Batches end at object boundaries; an object larger than ``batch_bytes`` is
    a batch of its own. Objects with no rows are skipped.
    """
    if batch_bytes <= 0:
        raise ArgumentError(f"batch_bytes must be positive, got {batch_bytes!r}")
    per_batch = max(1, batch_bytes // max(1, row_bytes))
    out, current = [], 0
    for n in n_rows:
        if not n:
            continue
        if current and current + n > per_batch:
            out.append(current)
            current = 0
        current += n
    if current:
        out.append(current)
    return tuple(out)


def row_bytes(dtype: np.dtype, shape: tuple[int, ...], cells_axis: int) -> int:
    """Decoded bytes of one row (one cell across the other axes) of an array."""
    per = _OBJECT_ROW_BYTES if dtype.kind == "O" else dtype.itemsize
    return per * int(np.prod([s for i, s in enumerate(shape) if i != cells_axis], dtype=np.int64))


class Segments:
    """The objects a variable concatenates, in order: ``groups[i]`` is segment i's object (its data group,
    store-relative), ``sels[i]`` the object's local cell positions it holds, in order (None = all
    ``n_cells[i]``), ``offsets`` the first row of each segment (and the total, last).

    An open builds one and every variable shares it: they read the same objects.
    """

    __slots__ = ("groups", "n_cells", "offsets", "sels", "whole")

    def __init__(self, groups: Sequence[str], sels: Sequence[np.ndarray | None], n_cells: Sequence[int]):
        self.groups = list(groups)
        self.sels = list(sels)
        self.n_cells = [int(n) for n in n_cells]
        #: every segment holds its whole object (no sub-selection): a range of segments is a range of objects
        self.whole = all(s is None for s in self.sels)
        counts = (
            np.asarray(self.n_cells, dtype=np.int64)
            if self.whole
            else np.array(
                [n if s is None else s.size for n, s in zip(self.n_cells, self.sels, strict=True)], dtype=np.int64
            )
        )
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def __len__(self) -> int:
        return len(self.groups)


class SegmentDigests(Sequence):
    """One array's recorded digest per segment, looked up in each object's recorded hashes when it is read.

    ``hashes[i]`` is segment i's object's ``content_hashes`` map (None:
    nothing recorded) and ``key`` the array's path in it (``"8/count"``). An
    open shares one ``hashes`` list among all its variables, so it never builds
    a list per variable; item i is a hex string, None, or a malformed value
    (which the check ignores, as :func:`~moczarr.format.content.recorded_digest` does).
    """

    __slots__ = ("hashes", "key")

    def __init__(self, hashes: Sequence, key: str):
        self.hashes, self.key = hashes, key

    def __len__(self) -> int:
        return len(self.hashes)

    def __getitem__(self, i):
        key = self.key
        if isinstance(i, slice):
            return [None if h is None else h.get(key) for h in self.hashes[i]]
        h = self.hashes[i]
        return None if h is None else h.get(key)
