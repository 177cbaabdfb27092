"""``moczarr.coverage``: the AOI mask under the import path the reader's contract names.

``moczarr.coverage.aoi_mask`` resolves each cell at its own order, so a
mixed-order (undecoded pyramid) dataset masks correctly. Defined in
:mod:`moczarr.format.coverage`; this module is its public, stable address
(also reachable as ``moczarr.aoi_mask``).
"""

from __future__ import annotations

from .format.coverage import aoi_mask

__all__ = ["aoi_mask"]
