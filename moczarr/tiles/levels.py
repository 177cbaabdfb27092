"""Which stored level serves a map: the coarsest whose cells are no larger than a pixel, else the finest.

A pixel's size is the tile matrix's cell size in metres (the grid's nominal
resolution: at the equator for WebMercatorQuad and WorldCRS84Quad, at the
true-scale latitude for the polar UPS grids), so every tile of one zoom reads
one level and neighbouring tiles never show a seam between two resolutions.
A level's cell size is the HEALPix cell scale at its order (mortie's
``order2res``: the square root of the equal cell area).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import mortie
from morecantile import TileMatrixSet
from morecantile.utils import meters_per_unit
from pyproj import CRS

from ..errors import LevelError


def cell_size_m(order: int) -> float:
    """The scale of a HEALPix cell at ``order``, in metres."""
    return float(mortie.order2res(int(order))) * 1000.0


def pixel_size_m(crs: CRS, resolution: float) -> float:
    """A pixel of ``resolution`` CRS units (degrees, metres, feet) across, in metres."""
    return float(resolution) * meters_per_unit(crs)


def zoom_pixel_size_m(tms: TileMatrixSet, zoom: int) -> float:
    """The nominal pixel size of zoom ``zoom`` of ``tms``, in metres."""
    return pixel_size_m(tms_crs(tms), tms.matrix(zoom).cellSize)


def tms_crs(tms: TileMatrixSet) -> CRS:
    """The pyproj CRS of a tile matrix set."""
    return crs_from_wkt(tms.crs.to_wkt())


@functools.lru_cache(maxsize=64)
def crs_from_wkt(wkt: str) -> CRS:
    return CRS.from_wkt(wkt)


def pick_order(orders: Iterable[int], pixel_m: float) -> int:
    """The coarsest of ``orders`` whose cells are no larger than ``pixel_m`` metres, else the finest.

    Raises :class:`~moczarr.errors.LevelError` when ``orders`` is empty.
    """
    orders = sorted({int(o) for o in orders})
    if not orders:
        raise LevelError("the store has no level to read")
    fitting = [o for o in orders if cell_size_m(o) <= pixel_m]
    return fitting[0] if fitting else orders[-1]


def check_cell_order(cell_order, orders: Iterable[int], where: str) -> int | None:
    """``cell_order=`` as one of the store's ``orders`` (None: picked per zoom); else :class:`LevelError`."""
    if cell_order is None:
        return None
    orders = sorted({int(o) for o in orders}, reverse=True)
    if isinstance(cell_order, bool) or not isinstance(cell_order, int) or cell_order not in orders:
        raise LevelError(
            f"{where}: cell_order={cell_order!r} is not a level of this store; levels: " + ", ".join(map(str, orders))
        )
    return int(cell_order)
