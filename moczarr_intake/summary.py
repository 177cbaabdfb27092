"""Deprecated import path: the store summary moved to :mod:`moczarr.metadata`.

Kept as a thin re-export for one release.
"""

from moczarr.metadata import (  # noqa: F401
    LevelInfo,
    ProductSummary,
    StoreSummary,
    VariableInfo,
    footprint_bbox,
    footprint_geometry,
    geometry_bbox,
    summarize_store,
)
