"""The store metadata a catalog needs, as one documented public namespace.

Catalog builders (``moczarr_intake``, or a portal's own) read stores only
through this module and the top-level ``moczarr`` API:

- :func:`summarize_store` and its records (:class:`StoreSummary`,
  :class:`ProductSummary`, :class:`LevelInfo`, :class:`VariableInfo`): a
  bounded number of small GETs per product, whatever the leaf count;
- footprints: :func:`footprint_geometry`, :func:`footprint_bbox`,
  :func:`geometry_bbox` (antimeridian- and pole-safe);
- locations: :func:`normalize_location`, :func:`join_location`,
  :func:`is_remote`, :func:`protocol`;
- time: :func:`window_interval` (the span of a window label), :func:`parse_time`;
- ids: :func:`to_words`, :func:`to_decimals`;
- the names of the root objects: :data:`MANIFEST_NAME`, :data:`ROOT_MOC_NAME`;
- :func:`warn`: emit a warning at the user's line, however deep the catalog code is.
"""

from .coverage import ROOT_MOC_NAME
from .errors import warn
from .ids import to_decimals, to_words
from .locations import is_remote, join_location, normalize_location, protocol
from .manifest import (
    MANIFEST_NAME,
    SCHEDULE_PATTERNS,
    Manifest,
    parse_time,
    window_interval,
)
from .summary import (
    LevelInfo,
    ProductSummary,
    StoreSummary,
    VariableInfo,
    footprint_bbox,
    footprint_geometry,
    geometry_bbox,
    summarize_store,
)

__all__ = [
    "MANIFEST_NAME",
    "ROOT_MOC_NAME",
    "SCHEDULE_PATTERNS",
    "LevelInfo",
    "Manifest",
    "ProductSummary",
    "StoreSummary",
    "VariableInfo",
    "footprint_bbox",
    "footprint_geometry",
    "geometry_bbox",
    "is_remote",
    "join_location",
    "normalize_location",
    "parse_time",
    "protocol",
    "summarize_store",
    "to_decimals",
    "to_words",
    "warn",
    "window_interval",
]
