"""Which stored level serves a map: the coarsest whose cells are no larger than a pixel, else the finest.

A pixel's size is the tile matrix's cell size in metres (the grid's nominal
resolution: at the equator for WebMercatorQuad and WorldCRS84Quad, at the
true-scale latitude for the polar UPS grids), so every tile of one zoom reads
one level and neighbouring tiles never show a seam between two resolutions.
A level's cell size is the HEALPix cell scale at its order (mortie's
``order2res``: the square root of the equal cell area).

The grids themselves are looked up here too, each made once: one instance
per grid id (:data:`TILE_MATRIX_SETS`) and one rasterio and pyproj CRS per
grid CRS (:func:`grid_crs`), so a request pays for neither.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import morecantile
import mortie
from morecantile import TileMatrixSet
from morecantile.defaults import TileMatrixSets
from morecantile.utils import meters_per_unit, to_rasterio_crs
from pyproj import CRS
from rasterio.crs import CRS as RioCRS

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


def grid_crs(tms: TileMatrixSet) -> tuple[RioCRS, CRS]:
    """The CRS of ``tms`` as a rasterio CRS and as the pyproj CRS of its WKT, made once per CRS.

    morecantile builds a TileMatrixSet's rasterio CRS anew for every copy of
    it (and ``morecantile.tms.get`` hands out copies), and a fresh CRS pays
    again for its WKT and its authority; these are shared, so they are paid once.
    """
    return _grid_crs(tms.crs.srs)


@functools.lru_cache(maxsize=64)
def _grid_crs(srs: str) -> tuple[RioCRS, CRS]:
    rio_crs = to_rasterio_crs(CRS.from_user_input(srs))  # what morecantile's TileMatrixSet.rasterio_crs makes
    return rio_crs, crs_from_wkt(rio_crs.to_wkt())


class SharedTileMatrixSets(TileMatrixSets):
    """morecantile's :class:`~morecantile.defaults.TileMatrixSets` whose ``get`` hands out one instance per id.

    morecantile's ``get`` deep-copies the grid on every call (a server's every
    request), and each copy computes its CRSs again. Sharing one is safe:
    titiler, rio-tiler and :class:`~moczarr.tiles.HiveReader` only read a
    TileMatrixSet (its fields, and cached properties each computing the same
    value); never mutate one it gives.
    """

    def get(self, identifier: str) -> TileMatrixSet:
        kept = self.tilematrixsets.get(identifier)
        if isinstance(kept, TileMatrixSet):
            return kept
        super().get(identifier)  # reads the grid's document once and keeps it; raises for an unknown id
        return self.tilematrixsets[identifier]

    def register(self, custom_tms: dict[str, TileMatrixSet], overwrite: bool = False) -> SharedTileMatrixSets:
        return SharedTileMatrixSets(super().register(custom_tms, overwrite).tilematrixsets)


#: morecantile's grids, each one shared instance (what the reader and the server look grid ids up in).
TILE_MATRIX_SETS = SharedTileMatrixSets(dict(morecantile.tms.tilematrixsets))


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
