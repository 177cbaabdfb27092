"""Pixels to cells: each pixel's centre in the grid's CRS, as lon/lat, as the HEALPix cell holding it.

Positions go through pyproj (the grid's CRS to WGS84 geodetic lon/lat) and
cells through mortie (``geo2mort`` at the level's order, under the stores'
authalic latitude convention), so no projection or HEALPix arithmetic is
written here. A grid's cells depend only on its bounds, CRS, size and order,
so they are kept (:func:`grid_cells`, at most :data:`MAX_GRID_CELLS_BYTES`):
a tile asked again costs no pixel work.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import mortie
import numpy as np
from pyproj import CRS, Transformer

#: The geodetic lon/lat CRS cells are addressed in (WGS84; x = longitude).
LONLAT = CRS.from_epsg(4326)
#: CRSs whose longitude is a function of x alone and latitude of y alone (a grid's axes are transformed once).
SEPARABLE = (CRS.from_epsg(3857), LONLAT)
#: Bytes of grid cells kept (a 256x256 tile's are about 260 KB: some 250 tiles).
MAX_GRID_CELLS_BYTES = 64 * 2**20


@dataclass(frozen=True)
class GridCells:
    """The cells holding a grid's points: ``words``, the sorted distinct packed words (never 0), and
    ``inverse``, each point's position in ``words`` (-1 where no cell holds it), in the grid's shape."""

    words: np.ndarray
    inverse: np.ndarray
    _ancestors: dict = field(default_factory=dict, compare=False, repr=False)

    def ancestors(self, order: int, node_order: int) -> tuple[np.ndarray, np.ndarray]:
        """The sorted distinct cells at ``order`` holding ``words``, and each one's ancestor at ``node_order``
        (``order`` or coarser); computed once per pair of orders (a kept grid's tiles ask them every time)."""
        key = (int(order), int(node_order))
        found = self._ancestors.get(key)
        if found is None:
            cells = nodes = self.words
            if cells.size:
                cells = np.unique(np.asarray(mortie.clip2order(key[0], cells), dtype=np.uint64))
                nodes = np.asarray(mortie.clip2order(key[1], cells), dtype=np.uint64)
                cells.flags.writeable = nodes.flags.writeable = False  # shared by every tile of the grid
            found = self._ancestors.setdefault(key, (cells, nodes))
        return found

    @classmethod
    def of(cls, words: np.ndarray) -> GridCells:
        """The cells of ``words`` (any shape; 0 where no cell holds the point)."""
        words = np.asarray(words, dtype=np.uint64)
        flat = words.ravel()
        # neighbouring pixels mostly share a cell: sort the first word of each run of equal words, not every word
        starts = np.flatnonzero(np.concatenate([[True], flat[1:] != flat[:-1]]))
        uniq, found = _unique_inverse(flat[starts])
        inverse = np.repeat(found, np.diff(np.append(starts, flat.size))).reshape(words.shape)
        if uniq.size and uniq[0] == 0:  # sorted: the no-cell word comes first
            uniq, inverse = uniq[1:], inverse - 1
        return cls(uniq, inverse)

    @property
    def nbytes(self) -> int:
        return self.words.nbytes + self.inverse.nbytes


def _unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``, the inverse as int32, in one sort (numpy's costs two)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.empty(ordered.size, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(values.size, dtype=np.int32)
    inverse[order] = np.cumsum(first, dtype=np.int32) - 1
    return ordered[first], inverse


def pixel_centres(bounds, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of the pixel centres of a ``height x width`` grid over ``bounds`` (left, bottom, right, top).

    Row 0 is the top row.
    """
    xs, ys = pixel_axes(bounds, width, height)
    return np.meshgrid(xs, ys)


def pixel_axes(bounds, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """The pixel centres' ``x`` (one per column) and ``y`` (one per row, the top row first) over ``bounds``."""
    left, bottom, right, top = map(float, bounds)
    xs = left + (np.arange(width) + 0.5) * ((right - left) / width)
    ys = top - (np.arange(height) + 0.5) * ((top - bottom) / height)
    return xs, ys


# keyed by ``crs.srs``, the text the CRS was made from (``to_wkt()`` costs milliseconds a call)
@functools.lru_cache(maxsize=64)
def _to_lonlat(srs: str) -> Transformer:
    return Transformer.from_crs(CRS.from_user_input(srs), LONLAT, always_xy=True)


@functools.lru_cache(maxsize=64)
def _separable(srs: str) -> bool:
    crs = CRS.from_user_input(srs)
    return any(crs.equals(other, ignore_axis_order=True) for other in SEPARABLE)


def to_lonlat(crs: CRS, x, y) -> tuple[np.ndarray, np.ndarray]:
    """Longitudes and latitudes (degrees) of points ``x, y`` of ``crs``; NaN where the CRS has no such point."""
    lon, lat = _to_lonlat(crs.srs).transform(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return _checked(np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64))


def _checked(lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bad = ~(np.isfinite(lon) & np.isfinite(lat)) | (np.abs(lat) > 90)
    lon[bad] = np.nan
    lat[bad] = np.nan
    return lon, lat


def grid_lonlat(crs: CRS, bounds, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Longitudes and latitudes (``height x width``) of the pixel centres of a grid over ``bounds`` of ``crs``.

    Each point as :func:`to_lonlat` gives it; in a CRS of :data:`SEPARABLE`
    only the grid's two axes are transformed (the same per-point figures, as
    a point's longitude there depends on its x alone and its latitude on its y).
    """
    axes = _grid_axes(crs, bounds, width, height)
    if axes is None:
        return to_lonlat(crs, *pixel_centres(bounds, width, height))
    return _checked(*np.meshgrid(*axes))


def _grid_axes(crs: CRS, bounds, width: int, height: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The longitude of each column and the latitude of each row of a grid in a :data:`SEPARABLE` CRS; None
    in any other."""
    if not _separable(crs.srs):
        return None
    xs, ys = pixel_axes(bounds, width, height)
    transformer = _to_lonlat(crs.srs)
    lon, _ = transformer.transform(xs, np.zeros_like(xs))
    _, lat = transformer.transform(np.zeros_like(ys), ys)
    return np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)


def cell_words(lon, lat, order: int, *, authalic: bool = False) -> np.ndarray:
    """The packed morton word of the cell at ``order`` holding each point; 0 (no cell) where a point is NaN.

    ``authalic``: ``lat`` are authalic latitudes already (``mortie.geodetic_to_authalic``'s), not geodetic.
    """
    # longitudes in [0, 360): mortie puts a point on a polar base cell's meridian spelled negative (-180, -90,
    # -0.0) in the cell west of it and the same point spelled 180, 270 or 0 in the cell east of it
    lon, lat = np.mod(np.asarray(lon, dtype=np.float64), 360.0), np.asarray(lat, dtype=np.float64)
    convention = "geodetic-spherical" if authalic else "authalic"  # mortie: non-finite points give word 0
    words = mortie.geo2mort(lat.ravel(), lon.ravel(), order=int(order), latitude=convention)
    return np.asarray(words, dtype=np.uint64).reshape(lon.shape)


def grid_words(crs: CRS, bounds, width: int, height: int, order: int) -> np.ndarray:
    """:func:`cell_words` of the pixel centres of a grid (``height x width``) over ``bounds`` of ``crs``.

    In a :data:`SEPARABLE` CRS a row's pixels share one latitude: its authalic
    latitude is taken once a row (``mortie.geodetic_to_authalic``), not once a
    pixel inside ``geo2mort`` (the same words: mortie's own conversion either way).
    """
    axes = _grid_axes(crs, bounds, width, height)
    if axes is None:
        return cell_words(*grid_lonlat(crs, bounds, width, height), order)
    lon, lat = axes  # a pixel without a place (an axis value NaN, or beyond a pole) has word 0
    lat = np.where(np.abs(lat) <= 90, lat, np.nan)
    lat = np.asarray(mortie.geodetic_to_authalic(lat), dtype=np.float64)
    lons, lats = np.meshgrid(lon, lat)
    return cell_words(lons, lats, order, authalic=True)


_kept: OrderedDict[tuple, GridCells] = OrderedDict()
_kept_bytes = 0
_kept_lock = threading.Lock()


def grid_cells(crs: CRS, bounds, width: int, height: int, order: int) -> GridCells:
    """The cells at ``order`` holding the pixel centres of a ``height x width`` grid over ``bounds`` of ``crs``.

    Computed once per grid (the least recently asked dropped first beyond
    :data:`MAX_GRID_CELLS_BYTES`); the arrays are shared: never write to them.
    """
    global _kept_bytes
    key = (crs.srs, tuple(map(float, bounds)), int(width), int(height), int(order))
    with _kept_lock:
        cells = _kept.get(key)
        if cells is not None:
            _kept.move_to_end(key)
            return cells
    cells = GridCells.of(grid_words(crs, bounds, width, height, order))
    cells.words.flags.writeable = False
    cells.inverse.flags.writeable = False
    with _kept_lock:
        if key not in _kept:
            _kept[key] = cells
            _kept_bytes += cells.nbytes
        while _kept_bytes > MAX_GRID_CELLS_BYTES and _kept:
            _kept_bytes -= _kept.popitem(last=False)[1].nbytes
    return cells


def clear_grid_cells() -> None:
    """Forget every kept grid's cells."""
    global _kept_bytes
    with _kept_lock:
        _kept.clear()
        _kept_bytes = 0
