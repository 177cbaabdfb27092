"""The bounding-box tree of a point-cloud pyramid's points (moraine's ``HilbertRtree`` layout).

``rtree.zarr`` is optional in the pyramid contract: readers build the tree
from ``x.zarr`` / ``y.zarr`` when a pyramid has none. The layout, as the
writer stores it (and as the fixtures pin it):

- the points, in their stored order (the writer sorts them along a Hilbert
  curve first), are cut into pages of ``page_size`` consecutive points; page
  ``p`` holds points ``p * page_size .. (p + 1) * page_size - 1``;
- the pages are the leaves of a complete binary tree padded to a power of two
  leaves, stored as a heap: node 0 is the root, the children of node ``i``
  are ``2 i + 1`` and ``2 i + 2``, leaf page ``p`` is node ``n_leaves - 1 + p``;
- each node row is ``[x0, y0, xm, ym]``, the bounding box of its points
  (float64); padding nodes with no point are all NaN.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError

#: points per leaf page of the tree the moraine writer builds
DEFAULT_PAGE_SIZE = 512


def build_rtree(x, y, page_size: int = DEFAULT_PAGE_SIZE) -> np.ndarray:
    """The ``(n_nodes, 4)`` float64 boxes of the tree over points ``(x[i], y[i])`` in their given order.

    NaN coordinates are ignored (a page of NaN points is a NaN box). Zero
    points give a ``(0, 4)`` array. Raises ``ValueError`` for a
    ``page_size`` below 1 or coordinates of different lengths.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if isinstance(page_size, bool) or int(page_size) != page_size or page_size < 1:
        raise ArgumentError(f"page_size must be a positive integer, got {page_size!r}")
    if x.size != y.size:
        raise ArgumentError(f"x has {x.size} points and y {y.size}")
    page_size = int(page_size)
    n = x.size
    if n == 0:
        return np.empty((0, 4), dtype=np.float64)
    n_pages = -(-n // page_size)
    n_leaves = 1 << (n_pages - 1).bit_length()
    pad = n_leaves * page_size - n
    xs = np.concatenate([x, np.full(pad, np.nan)]).reshape(n_leaves, page_size)
    ys = np.concatenate([y, np.full(pad, np.nan)]).reshape(n_leaves, page_size)
    level = np.stack(
        [
            np.fmin.reduce(xs, axis=1),
            np.fmin.reduce(ys, axis=1),
            np.fmax.reduce(xs, axis=1),
            np.fmax.reduce(ys, axis=1),
        ],
        axis=1,
    )
    levels = [level]
    while level.shape[0] > 1:
        a, b = level[0::2], level[1::2]
        level = np.concatenate([np.fmin(a[:, :2], b[:, :2]), np.fmax(a[:, 2:], b[:, 2:])], axis=1)
        levels.append(level)
    return np.concatenate(levels[::-1], axis=0)


__all__ = ["DEFAULT_PAGE_SIZE", "build_rtree"]
