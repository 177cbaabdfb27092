"""Places: every spelling of an area of interest as a cover of morton words, and footprints of covers.

``BBox``, ``Circle``, shapely and GeoJSON geometries, WKT and morton ids all
become one compact cover at a cell order (:func:`aoi_cover`); a set of words
becomes a GeoJSON footprint and its bounding box, antimeridian- and pole-safe.
"""

from ._cover import EARTH_RADIUS_M, BBox, Circle, Place, aoi_cover, as_place, canonical_words
from ._footprint import cell_quads, footprint, footprint_geometry, geometry_bbox

__all__ = [
    "EARTH_RADIUS_M",
    "BBox",
    "Circle",
    "Place",
    "aoi_cover",
    "as_place",
    "canonical_words",
    "cell_quads",
    "footprint",
    "footprint_geometry",
    "geometry_bbox",
]
