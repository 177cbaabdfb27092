"""Pixels to cells: each pixel's centre in the grid's CRS, as lon/lat, as the HEALPix cell holding it.

Positions go through pyproj (the grid's CRS to WGS84 geodetic lon/lat) and
cells through mortie (``geo2mort`` at the level's order, under the stores'
authalic latitude convention), so no projection or HEALPix arithmetic is
written here.
"""

from __future__ import annotations

import functools

import mortie
import numpy as np
from pyproj import CRS, Transformer

#: The geodetic lon/lat CRS cells are addressed in (WGS84; x = longitude).
LONLAT = CRS.from_epsg(4326)


def pixel_centres(bounds, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of the pixel centres of a ``height x width`` grid over ``bounds`` (left, bottom, right, top).

    Row 0 is the top row.
    """
    left, bottom, right, top = map(float, bounds)
    xs = left + (np.arange(width) + 0.5) * ((right - left) / width)
    ys = top - (np.arange(height) + 0.5) * ((top - bottom) / height)
    return np.meshgrid(xs, ys)


@functools.lru_cache(maxsize=64)
def _to_lonlat(wkt: str) -> Transformer:
    return Transformer.from_crs(CRS.from_wkt(wkt), LONLAT, always_xy=True)


def to_lonlat(crs: CRS, x, y) -> tuple[np.ndarray, np.ndarray]:
    """Longitudes and latitudes (degrees) of points ``x, y`` of ``crs``; NaN where the CRS has no such point."""
    lon, lat = _to_lonlat(crs.to_wkt()).transform(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    lon, lat = np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)
    bad = ~(np.isfinite(lon) & np.isfinite(lat)) | (np.abs(lat) > 90)
    lon[bad] = np.nan
    lat[bad] = np.nan
    return lon, lat


def cell_words(lon, lat, order: int) -> np.ndarray:
    """The packed morton word of the cell at ``order`` holding each point; 0 (no cell) where a point is NaN."""
    lon, lat = np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)
    out = np.zeros(lon.shape, dtype=np.uint64)
    ok = np.isfinite(lon) & np.isfinite(lat)
    if ok.any():
        out[ok] = np.asarray(mortie.geo2mort(lat[ok], lon[ok], order=int(order)), dtype=np.uint64).ravel()
    return out
