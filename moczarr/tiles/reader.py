"""``HiveReader``: a rio-tiler reader over a morton-hive store, for map tiles in any morecantile grid.

A pixel's value is the value of the HEALPix cell holding the pixel's centre,
at the level :func:`~moczarr.tiles.levels.pick_order` picks for the pixel size
(or ``cell_order=``); pixels no stored cell holds, and cells without a value
(NaN), are masked. A read opens only the leaves holding the pixels' cells (the
opener's AOI path, with the pixels' cells at the shard order as the place, so
a polar tile is as exact as any other) and reads only the objects holding
them (:func:`~moczarr.dataplane.picks.pick_values`); the opened store and levels are shared
across readers (:mod:`moczarr.tiles.cache`), so a reader is cheap to make per
request.
"""

from __future__ import annotations

import math
from typing import Any

import attr
import numpy as np
import xarray as xr
from morecantile import Tile, TileMatrixSet
from pyproj import CRS as ProjCRS
from rasterio.crs import CRS as RioCRS
from rasterio.features import bounds as feature_bounds
from rasterio.features import geometry_mask
from rasterio.transform import from_bounds
from rasterio.warp import transform_bounds
from rio_tiler.constants import WEB_MERCATOR_TMS, WGS84_CRS
from rio_tiler.errors import TileOutsideBounds
from rio_tiler.io.base import BaseReader
from rio_tiler.models import BandStatistics, ImageData, Info, PointData
from rio_tiler.utils import CRS_to_uri, get_array_statistics

from ..dataplane.assemble import CELLS, COORD
from ..dataplane.picks import pick_values
from ..errors import ArgumentError
from ..format.coverage import meets
from .cache import OpenedStore, opened_store
from .levels import (
    TILE_MATRIX_SETS,
    cell_size_m,
    check_cell_order,
    crs_from_wkt,
    grid_crs,
    pick_order,
    pixel_size_m,
    zoom_pixel_size_m,
)
from .pixels import GridCells, cell_words, grid_cells, to_lonlat

#: The longest side of a ``part``/``preview`` image whose size the caller leaves open.
MAX_SIZE = 1024


def _tms(value) -> TileMatrixSet:
    """A TileMatrixSet, or the id of one morecantile knows; else :class:`~moczarr.errors.ArgumentError`."""
    if isinstance(value, TileMatrixSet):
        return value
    known = TILE_MATRIX_SETS.list()
    if isinstance(value, str) and value in known:
        return TILE_MATRIX_SETS.get(value)
    raise ArgumentError(f"tms={value!r} is not a TileMatrixSet nor the id of one; ids: {', '.join(known)}")


@attr.s
class HiveReader(BaseReader):
    """Map tiles, parts, points, previews, info and statistics of one variable of a morton-hive store.

    ``input`` is a store URL (or path): a bare store, a product's folder, or a
    multi-product root with ``product=``. ``variable`` is the data variable
    drawn; ``window=`` (a window label) or ``time=(start, end)`` (every
    overlapping window, one band each) scope a windowed store; ``cell_order=``
    fixes the level instead of picking one per pixel size; ``storage_options``
    as :func:`~moczarr.open_level`; ``tms`` a morecantile TileMatrixSet (or its
    id), WebMercatorQuad by default. ``bounds`` (lon/lat, ``crs`` WGS84) are the
    box of the store's root MOC footprint (the globe without one).

    Raises :class:`~moczarr.errors.ProductError` (an ``ArgumentError``) for a
    multi-product root without ``product=`` or an unknown product (naming the
    products), :class:`~moczarr.errors.LevelError` for a ``cell_order`` that is
    no level (naming the levels), :class:`~moczarr.errors.ArgumentError` for an
    unknown ``tms`` (naming the grids) and, when a read needs it, an unknown or
    non-numeric ``variable`` (naming the level's variables); the openers'
    errors for the store itself.
    """

    input: Any = attr.ib()
    tms: TileMatrixSet = attr.ib(default=WEB_MERCATOR_TMS, converter=_tms)
    variable: str | None = attr.ib(default=None, kw_only=True)
    product: str | None = attr.ib(default=None, kw_only=True)
    window: str | None = attr.ib(default=None, kw_only=True)
    time: Any = attr.ib(default=None, kw_only=True)
    cell_order: int | None = attr.ib(default=None, kw_only=True)
    storage_options: dict | None = attr.ib(default=None, kw_only=True)
    store: OpenedStore = attr.ib(init=False, repr=False)

    def __attrs_post_init__(self):
        self.store = opened_store(self.input, self.product, self.window, self.time, self.storage_options)
        self.cell_order = check_cell_order(self.cell_order, self.store.orders, self.store.manifest.location)
        self.crs = WGS84_CRS

    @property
    def bounds(self) -> tuple[float, float, float, float]:  # type: ignore[override]  # drawn when first asked
        """The box (lon/lat) of the store's root MOC footprint; the globe without one."""
        return self.store.bounds

    # -- levels ----------------------------------------------------------------------------------------
    @property
    def levels(self) -> tuple[int, ...]:
        """The store's cell orders a map can read, finest first."""
        return self.store.levels

    def order_for(self, pixel_m: float) -> int:
        """The cell order read for pixels ``pixel_m`` metres across (``cell_order=`` when given)."""
        return self.cell_order if self.cell_order is not None else pick_order(self.levels, pixel_m)

    def order_for_zoom(self, zoom: int) -> int:
        """The cell order a tile of ``zoom`` of :attr:`tms` reads."""
        return self.order_for(zoom_pixel_size_m(self.tms, zoom))

    @property
    def minzoom(self) -> int:
        return self.tms.minzoom

    @property
    def maxzoom(self) -> int:
        """The first zoom whose pixels are no larger than the finest level's cells."""
        finest = cell_size_m(max(self.levels))
        for z in range(self.tms.minzoom, self.tms.maxzoom + 1):
            if zoom_pixel_size_m(self.tms, z) <= finest:
                return z
        return self.tms.maxzoom

    # -- values ----------------------------------------------------------------------------------------
    def values_at(self, lon, lat, order: int) -> tuple[np.ma.MaskedArray, list[str], bool]:
        """The ``variable`` of the cells at ``order`` holding each lon/lat point: ``(bands, *shape)``, masked where
        no cell holds the point or the cell has no value; the band names (the variable, or the windows); and
        whether any point lies in a stored shard."""
        return self.values_of(GridCells.of(cell_words(lon, lat, order)), order)

    def values_of(self, cells: GridCells, order: int) -> tuple[np.ma.MaskedArray, list[str], bool]:
        """:meth:`values_at` of the points whose cells at ``order`` are ``cells``.

        Reads only ``variable``, and only the objects holding ``cells``.
        """
        shards = self._shards_of(cells, order)
        if not shards.size:
            variable = self._variable(None, order)
            return np.ma.masked_all((1, *cells.inverse.shape), dtype=np.float64), [variable], False
        variable = self._variable(None, order)
        ds = self._level(order, shards)
        pos = ds.xindexes[COORD].ranges.find(cells.words)  # type: ignore[attr-defined]
        held = pos >= 0
        arr = ds[variable]
        names = [str(w) for w in arr["window"].values] if "window" in arr.dims else [variable]
        # in this thread: a tile's reads are batched below dask, and a server runs many tiles at once
        picked = np.moveaxis(pick_values(arr, pos[held]), arr.dims.index(CELLS), -1).reshape(len(names), -1)
        values = np.zeros((len(names), cells.words.size + 1), dtype=picked.dtype)  # the last: no cell
        values[:, :-1][:, held] = picked
        out = values[:, cells.inverse]  # -1 (no cell) takes the last
        missing = np.take(~np.append(held, False), cells.inverse)[None]
        mask = missing if len(names) == 1 else np.broadcast_to(missing, out.shape).copy()
        if out.dtype.kind == "f":
            mask |= np.isnan(out)
        return np.ma.MaskedArray(out, mask=mask), names, True

    def _level(self, order: int, shards: np.ndarray) -> xr.Dataset:
        """The level at ``order`` below ``shards`` with :attr:`variable` alone, the variable checked."""
        ds = self.store.level(order, shards, self._variable(None, order))
        try:
            self._variable(ds, order)
        except ArgumentError:  # the level opened with every variable names those the tile could draw
            self._variable(self.store.level(order, shards), order)
            raise
        return ds

    def _shards_of(self, cells: GridCells, order: int) -> np.ndarray:
        """The cells at the shard order (or ``order``, when coarser) holding ``cells`` whose object may hold data.

        A level's objects sit at its node order (the shard order for source
        leaves, an ancestor for overviews), so a cell is kept when its ancestor
        at that order meets a stored shard.
        """
        manifest = self.store.manifest
        node_order = self.store.node_orders.get(order, manifest.shard_order)
        shards, nodes = cells.ancestors(min(order, manifest.shard_order), node_order)
        if self.store.shards is None or not shards.size:
            return shards
        return shards[meets(nodes, self.store.shards)]

    def _variable(self, ds: xr.Dataset | None, order: int) -> str:
        """``variable`` checked against the level's numeric variables."""
        if self.variable is None:
            raise ArgumentError(f"{self.store.manifest.location}: pass variable= (the data variable to draw)")
        if ds is None:
            return self.variable
        numeric = [str(n) for n, v in ds.data_vars.items() if v.dtype.kind in "iufb" and "cells" in v.dims]
        if self.variable not in numeric:
            raise ArgumentError(
                f"{self.store.manifest.location}: variable={self.variable!r} is not a numeric variable of cell "
                f"order {order}; variables: {', '.join(numeric)}"
            )
        return self.variable

    # -- images ----------------------------------------------------------------------------------------
    def read_grid(self, bounds, crs, width: int, height: int, *, order: int | None = None) -> ImageData:
        """An image of ``height x width`` pixels over ``bounds`` of ``crs`` (a rasterio or pyproj CRS).

        Its ``metadata`` says the ``cell_order`` read and whether any pixel lies in a stored shard (``in_data``).
        """
        rio_crs = RioCRS.from_user_input(crs)
        return self._read_grid(bounds, rio_crs, crs_from_wkt(rio_crs.to_wkt()), width, height, order)

    def _read_grid(
        self, bounds, rio_crs: RioCRS, pyproj_crs: ProjCRS, width: int, height: int, order: int | None
    ) -> ImageData:
        """:meth:`read_grid` in ``rio_crs``, ``pyproj_crs`` being the pyproj CRS of its WKT."""
        if order is None:
            order = self.order_for(pixel_size_m(pyproj_crs, (bounds[2] - bounds[0]) / width))
        data, names, in_data = self.values_of(grid_cells(pyproj_crs, bounds, width, height, order), order)
        return ImageData(
            data,
            bounds=tuple(bounds),
            crs=rio_crs,
            band_descriptions=names,
            metadata={"cell_order": order, "variable": self.variable, "in_data": in_data},
        )

    def tile(self, tile_x: int, tile_y: int, tile_z: int, tilesize: int | None = None, **kwargs: Any) -> ImageData:
        """Tile ``x, y, z`` of :attr:`tms` (``tilesize`` pixels a side, the matrix's by default).

        Raises ``rio_tiler.errors.TileOutsideBounds`` when no pixel's cell lies in a stored shard.
        """
        matrix = self.tms.matrix(tile_z)
        bounds = tuple(self.tms.xy_bounds(Tile(x=tile_x, y=tile_y, z=tile_z)))
        width, height = tilesize or matrix.tileWidth, tilesize or matrix.tileHeight
        img = self._read_grid(bounds, *grid_crs(self.tms), width, height, None)
        if not (img.metadata or {}).get("in_data"):
            raise TileOutsideBounds(f"Tile(x={tile_x}, y={tile_y}, z={tile_z}) holds no cell of {self.input}")
        return img

    def part(
        self,
        bbox,
        dst_crs=None,
        bounds_crs=WGS84_CRS,
        height: int | None = None,
        width: int | None = None,
        max_size: int | None = MAX_SIZE,
        **kwargs: Any,
    ) -> ImageData:
        """The image over ``bbox`` (in ``bounds_crs``, lon/lat by default), drawn in ``dst_crs`` (``bounds_crs``
        by default); its size ``height x width``, else the finest level's resolution capped at ``max_size``."""
        dst_crs = RioCRS.from_user_input(dst_crs or bounds_crs)
        if RioCRS.from_user_input(bounds_crs) != dst_crs:
            bbox = transform_bounds(bounds_crs, dst_crs, *bbox, densify_pts=21)
        width, height = self._size(bbox, dst_crs, width, height, max_size)
        return self.read_grid(bbox, dst_crs, width, height)

    def _size(self, bbox, crs, width, height, max_size) -> tuple[int, int]:
        """The output size: as given, else the finest cells' resolution, the longest side at most ``max_size``."""
        w, s, e, n = map(float, bbox)
        aspect = (e - w) / (n - s) if n > s else 1.0
        if width and height:
            return int(width), int(height)
        if width:
            return int(width), max(1, round(width / aspect))
        if height:
            return max(1, round(height * aspect)), int(height)
        res = cell_size_m(max(self.levels)) / pixel_size_m(crs_from_wkt(RioCRS.from_user_input(crs).to_wkt()), 1.0)
        width, height = max(1, math.ceil((e - w) / res)), max(1, math.ceil((n - s) / res))
        if max_size and max(width, height) > max_size:
            scale = max_size / max(width, height)
            width, height = max(1, round(width * scale)), max(1, round(height * scale))
        return width, height

    def preview(self, max_size: int = MAX_SIZE, height=None, width=None, dst_crs=None, **kwargs: Any) -> ImageData:
        """The whole store (its :attr:`bounds`) as one image, the longest side at most ``max_size``."""
        return self.part(self.bounds, dst_crs=dst_crs, height=height, width=width, max_size=max_size)

    def feature(self, shape: dict, dst_crs=None, shape_crs=WGS84_CRS, **kwargs: Any) -> ImageData:
        """The image over a GeoJSON feature's box, pixels outside the feature masked."""
        geometry = shape.get("geometry", shape) if shape.get("type") == "Feature" else shape
        img = self.part(feature_bounds(geometry), dst_crs=dst_crs or shape_crs, bounds_crs=shape_crs, **kwargs)
        west, south, east, north = img.bounds or feature_bounds(geometry)
        affine = from_bounds(west, south, east, north, img.width, img.height)
        outside = geometry_mask([geometry], out_shape=(img.height, img.width), transform=affine)
        img.array.mask |= outside[None, :, :]
        return img

    def point(self, lon: float, lat: float, coord_crs=WGS84_CRS, **kwargs: Any) -> PointData:
        """The values of the cell holding the point, at ``cell_order`` or the finest level; masked where none."""
        crs = RioCRS.from_user_input(coord_crs)
        plon, plat = to_lonlat(crs_from_wkt(crs.to_wkt()), [lon], [lat])
        order = self.cell_order if self.cell_order is not None else max(self.levels)
        data, names, _ = self.values_at(plon, plat, order)
        return PointData(data[:, 0], coordinates=(lon, lat), crs=crs, band_descriptions=names)

    # -- descriptions ----------------------------------------------------------------------------------
    def info(self) -> Info:
        """Bounds, CRS, band and level facts (``levels``, ``minzoom``, ``maxzoom``, the variable).

        ``dtype`` is the variable's, as its array metadata at the finest level
        declares it, which a tile's values keep (but for ``time=`` over windows
        holding different cells: stacking them makes integers float64); without
        ``variable=`` none is named and float64 stands in. Raises :class:`~moczarr.errors.ArgumentError`
        for an unknown or non-numeric ``variable`` (naming the level's variables).
        """
        return Info.model_validate(
            {
                "bounds": self.bounds,
                "crs": CRS_to_uri(self.crs) or self.crs.to_wkt(),
                "band_metadata": [("b1", {})],
                "band_descriptions": [("b1", self.variable or "b1")],
                "dtype": "float64" if self.variable is None else self._dtype(),
                "nodata_type": "Mask",
                "name": self.variable,
                "levels": list(self.levels),
                "minzoom": self.minzoom,
                "maxzoom": self.maxzoom,
                "product": self.product,
                "window": self.window,
            }
        )

    def _dtype(self) -> str:
        """:attr:`variable`'s dtype at the finest level: the level opened below one stored shard (its schema's
        few GETs; without a root MOC, below none, which lists the leaves to find a schema)."""
        order = max(self.levels)
        known = self.store.shards
        shards = np.empty(0, dtype=np.uint64) if known is None else self._shards_of(GridCells.of(known[:1]), order)
        return str(self._level(order, shards)[self.variable].dtype)

    def statistics(
        self,
        categorical: bool = False,
        categories: list[float] | None = None,
        percentiles: list[int] | None = None,
        hist_options: dict | None = None,
        max_size: int = MAX_SIZE,
        **kwargs: Any,
    ) -> dict[str, BandStatistics]:
        """Statistics of each band over :meth:`preview` (``max_size`` pixels on its longest side)."""
        img = self.preview(max_size=max_size, **kwargs)
        stats = get_array_statistics(
            img.array, categorical=categorical, categories=categories, percentiles=percentiles, **(hist_options or {})
        )
        return {f"b{i + 1}": BandStatistics(**s, description=img.band_descriptions[i]) for i, s in enumerate(stats)}
