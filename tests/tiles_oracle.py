"""The map-tile oracle: what each pixel of a tile must hold, computed without the tile reader's pixel path.

A pixel's centre from morecantile's tile bounds and an affine transform, its lon/lat from pyproj, its
authalic latitude from the closed-form WGS84 formula, its HEALPix NESTED id at the level from cdshealpix,
that id as the store's packed word by mortie's documented ``norm2mort`` (nested id = base cell * 4**order
+ in-base address), and its value from ``open_level`` over the whole level. The level a zoom reads is the
rule computed apart (:func:`expected_order`). The reader's tests and the server's share it.
"""

from __future__ import annotations

import io
import math
import warnings

import astropy.units as u
import cdshealpix
import mortie
import numpy as np
from astropy.coordinates import Latitude, Longitude
from pyproj import Transformer
from rasterio.transform import from_bounds

import moczarr

WGS84_A = 6378137.0
WGS84_F = 1 / 298.257223563
EARTH_RADIUS_KM = 6371.0088


def authalic(lat_deg: np.ndarray) -> np.ndarray:
    """Authalic latitude (degrees) of WGS84 geodetic latitudes: beta = asin(q(phi) / q(90))."""
    e = math.sqrt(WGS84_F * (2 - WGS84_F))

    def q(s):
        return (1 - e * e) * (s / (1 - e * e * s * s) - np.log((1 - e * s) / (1 + e * s)) / (2 * e))

    s = np.sin(np.radians(lat_deg))
    return np.degrees(np.arcsin(np.clip(q(s) / q(1.0), -1, 1)))


def oracle_lonlat(tms, tile, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pixel centre of ``tile`` as lon/lat: the tile's affine applied to (col + 0.5, row + 0.5)."""
    affine = from_bounds(*tms.xy_bounds(tile), size, size)
    cols, rows = np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5)
    x, y = affine @ (cols, rows)
    to_ll = Transformer.from_crs(tms.crs.to_wkt(), "EPSG:4326", always_xy=True)
    lon, lat = to_ll.transform(x, y)
    return np.asarray(lon), np.asarray(lat)


def oracle_words(lon: np.ndarray, lat: np.ndarray, order: int) -> np.ndarray:
    """The packed word of the cell at ``order`` holding each point: cdshealpix's NESTED id, through ``norm2mort``."""
    ok = np.isfinite(lon) & np.isfinite(lat) & (np.abs(lat) <= 90)
    ipix = cdshealpix.nested.lonlat_to_healpix(
        Longitude(np.where(ok, lon, 0) * u.deg), Latitude(authalic(np.where(ok, lat, 0)) * u.deg), order
    ).astype(np.int64)
    words = mortie.norm2mort(ipix & ((1 << (2 * order)) - 1), ipix >> (2 * order), order)
    return np.where(ok, np.asarray(words, dtype=np.uint64), np.uint64(0))


def oracle_values(root, order: int, words: np.ndarray, variable: str, **kw) -> np.ma.MaskedArray:
    """``variable`` at each word from ``open_level`` (whole level); masked where no cell or no value."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        ds = moczarr.open_level(root, order, **kw)
    morton = ds["morton"].values
    values = ds[variable].values
    at = np.clip(np.searchsorted(morton, words), 0, max(morton.size - 1, 0))
    held = (morton.size > 0) & (morton[at] == words) & (words != 0)
    out = np.where(held, values[at], 0).astype(values.dtype)
    mask = ~held | (np.isnan(out) if out.dtype.kind == "f" else False)
    return np.ma.MaskedArray(out, mask=mask)


def expected_order(levels, tms, zoom: int) -> int:
    """The rule, computed apart: the coarsest level whose cells (the root of the equal HEALPix cell area) are no
    larger than a pixel, else the finest."""
    units = 2 * math.pi * WGS84_A / 360 if tms.crs.to_epsg() in (4326, None) and tms.id == "WorldCRS84Quad" else 1.0
    pixel = tms.matrix(zoom).cellSize * units
    size = {o: math.sqrt(4 * math.pi * EARTH_RADIUS_KM**2 / (12 * 4**o)) * 1000 for o in levels}
    fitting = [o for o in levels if size[o] <= pixel]
    return min(fitting) if fitting else max(levels)


def expected_tile(root, tms, tile, size: int, order: int, variable: str, **kw) -> np.ma.MaskedArray:
    """The ``size x size`` pixels of ``tile`` of ``tms`` at cell ``order``, as the oracle computes them."""
    lon, lat = oracle_lonlat(tms, tile, size)
    return oracle_values(root, order, oracle_words(lon, lat, order), variable, **kw)


def data_centre(root, variable: str, **kw) -> tuple[float, float]:
    """The centre (lon, lat) of the store's median cell holding a (non-zero) value of ``variable``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        ds = moczarr.cell_centers(moczarr.open_hive(root, **kw))
    values = ds[variable].values
    occupied = np.flatnonzero(np.isfinite(values) & (values != 0))
    at = occupied[occupied.size // 2]
    return float(ds["lon"].values[at]), float(ds["lat"].values[at])


def first_numeric(root, **kw) -> str:
    """``count`` when the store has it, else its first numeric variable (the shared stores name theirs apart)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        ds = moczarr.open_hive(root, **kw)
    names = [str(n) for n, v in ds.data_vars.items() if v.dtype.kind in "iuf" and v.dims == ("cells",)]
    return "count" if "count" in names else names[0]


def served_npy(body: bytes) -> np.ma.MaskedArray:
    """A ``.npy`` tile as titiler renders it, as one masked band: the band, then the mask band (rasterio's: the
    dtype's maximum where valid, its minimum where masked)."""
    from rasterio.dtypes import dtype_ranges

    arr = np.load(io.BytesIO(body))
    assert arr.ndim == 3 and arr.shape[0] == 2, arr.shape
    return np.ma.MaskedArray(arr[0], mask=arr[1] == dtype_ranges[str(arr.dtype)][0])
