"""Read moraine raster and point-cloud pyramids (contract version 1, and older unmarked ones).

A moraine pyramid is a directory of standalone zarr arrays ``0.zarr`` (full
resolution), ``1.zarr`` (half size), ... ``L.zarr``, written by the moraine
InSAR toolkit's ``ras-pyramid`` and ``pc-pyramid`` commands. Version 1 marks
``0.zarr`` with the attribute ``moraine_pyramid``; older pyramids have no
marker and are recognised by ``1.zarr`` being half the size of ``0.zarr``
(rounded up). A directory with ``bounds.toml`` is a point-cloud pyramid: its
levels are the points rasterised on a grid, and the points themselves are in
``x.zarr``, ``y.zarr`` and ``pc.zarr``.

Recognising and describing a pyramid is :mod:`moczarr.moraine.info`; this
module opens its levels, points, indexes and R-tree. Everything here only
reads. Paths are local paths or fsspec URLs (``s3://bucket/prefix`` with
``storage_options``); level data opens lazily as dask arrays wrapped in
xarray objects. See ``docs/moraine.md``.

Errors follow :mod:`moczarr.errors`: a marker version newer than
:data:`SUPPORTED_VERSION` raises :class:`~moczarr.errors.UnsupportedVersionError`,
content that contradicts the contract raises :class:`~moczarr.errors.PyramidError`
(a directory that is not a pyramid at all raises its subclass
:class:`NotAMorainePyramidError`), and an optional derived object
(``stats.zarr``) that cannot be interpreted is left out with an
:class:`~moczarr.errors.ObjectDroppedWarning`.
"""

from __future__ import annotations

import os

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from ..errors import ArgumentError, ChunkError, MoczarrError, PyramidError
from .info import (
    MARKER,
    POINT_CLOUD,
    RASTER,
    STATS_COLUMNS,
    SUPPORTED_VERSION,
    MoraineLevelError,
    MorainePyramid,
    NotAMorainePyramidError,
    channel_dim_names,
    describe,
    is_moraine_pyramid,
    jsonable,
    level_name,
    read_moraine_info,
)
from .location import Location

__all__ = [
    "MARKER",
    "POINT_CLOUD",
    "RASTER",
    "STATS_COLUMNS",
    "SUPPORTED_VERSION",
    "MoraineLevelError",
    "MorainePyramid",
    "NotAMorainePyramidError",
    "is_moraine_pyramid",
    "level_name",
    "open_moraine_index",
    "open_moraine_level",
    "open_moraine_points",
    "open_moraine_pyramid",
    "read_moraine_info",
    "read_moraine_rtree",
]


#: Name of the data variable of every level (rasters and point-cloud grids alike).
DATA_VAR = "data"
#: Name of the index variable of point-cloud levels in the tree.
INDEX_VAR = "idx"


class _GuardedArray:
    """A zarr array whose reads raise :class:`~moczarr.errors.ChunkError` naming it when a chunk cannot be decoded."""

    def __init__(self, arr, where: str):
        self.arr, self.where = arr, where
        self.shape, self.dtype, self.ndim = arr.shape, arr.dtype, arr.ndim

    def __getitem__(self, key):
        try:
            return self.arr[key]
        except MoczarrError:
            raise
        except Exception as exc:  # numcodecs / zarr codec / buffer errors of a damaged chunk
            raise ChunkError(
                f"{self.where}: a chunk of {key!r} cannot be decoded: {type(exc).__name__}: {exc}"
            ) from exc


def _lazy(loc: Location, name: str, arr) -> da.Array:
    token = tokenize(loc.url(name), tuple(arr.shape), str(arr.dtype), tuple(arr.chunks))
    return da.from_array(
        _GuardedArray(arr, loc.url(name)),
        chunks=arr.chunks,
        name=f"moraine-{name.removesuffix('.zarr')}-{token}",
        asarray=False,
        fancy=False,
        inline_array=True,
    )


def _grid_coords(info: MorainePyramid, level: int, shape: tuple[int, ...]) -> dict:
    assert info.bounds is not None  # point-cloud pyramids only: read_moraine_info requires their bounds.toml
    x0, y0 = info.bounds[0], info.bounds[1]
    step = (info.resolution or 0.0) * 2**level
    x = x0 + np.arange(shape[1], dtype=np.float64) * step
    y = y0 + np.arange(shape[0], dtype=np.float64) * step
    return {
        "y": ("y", y, {"long_name": "y of the cell centres", "cell_size": step}),
        "x": ("x", x, {"long_name": "x of the cell centres", "cell_size": step}),
    }


def _level_attrs(info: MorainePyramid, level: int, dtype) -> dict:
    attrs = {
        "kind": info.kind,
        "method": info.method,
        "level": level,
        "factor": 2**level,
    }
    floating = np.dtype(dtype).kind in "fc"
    if info.is_point_cloud:
        attrs["cell_size"] = info.cell_size(level)
        attrs["empty_cells"] = "nan" if floating else "not marked (legacy); idx == -1"
    elif floating:
        attrs["missing"] = "nan"
    return jsonable(attrs)


def _level_da(loc: Location, info: MorainePyramid, level: int, arr) -> xr.DataArray:
    dims = ("y", "x", *info.channel_dims)
    coords = _grid_coords(info, level, info.shapes[level]) if info.is_point_cloud else None
    return xr.DataArray(
        _lazy(loc, f"{level}.zarr", arr),
        dims=dims,
        coords=coords,
        name=DATA_VAR,
        attrs=_level_attrs(info, level, arr.dtype),
    )


def _require_point_cloud(info: MorainePyramid, what: str) -> None:
    if not info.is_point_cloud:
        raise ArgumentError(f"{info.path} is a raster pyramid; only point-cloud pyramids have {what}")


def _index_da(loc: Location, info: MorainePyramid, level: int) -> xr.DataArray:
    name = f"idx_{level}.zarr"
    arr = loc.open(name, f"the point index of level {level}")
    if tuple(arr.shape) != info.shapes[level][:2]:
        raise PyramidError(
            f"{loc.url(name)}: shape {tuple(arr.shape)}, expected {info.shapes[level][:2]} like {level}.zarr"
        )
    return xr.DataArray(
        _lazy(loc, name, arr),
        dims=("y", "x"),
        coords=_grid_coords(info, level, info.shapes[level]),
        name=INDEX_VAR,
        attrs={"level": level, "empty": -1, "long_name": "index of the point shown in each cell"},
    )


def open_moraine_level(path, level: int = 0, storage_options: dict | None = None) -> xr.DataArray:
    """Level ``level`` (0 = full resolution; negative counts from the coarsest) as a lazy DataArray.

    Dims ``("y", "x"[, "channel"])`` (``channel_0``, ``channel_1``, ... when level 0 has more
    than 3 dims); named ``"data"``. Point-cloud grids carry ``x``/``y`` coordinates of the cell
    centres (``x0 + j * res * 2**level``). Values are returned as stored: NaN marks missing
    floating-point data and the zarr fill value is not treated as missing."""
    loc = Location(path, storage_options)
    info, arrays = describe(loc)
    level = info._check_level(level)
    return _level_da(loc, info, level, arrays[level])


def open_moraine_pyramid(path, storage_options: dict | None = None) -> xr.DataTree:
    """All levels as a DataTree: children ``"l0"`` (finest) ... ``"lL"``, each a Dataset with the
    ``"data"`` variable of :func:`open_moraine_level` (and ``"idx"`` for point clouds); the root
    has no data and carries :meth:`MorainePyramid.to_attrs`."""
    loc = Location(path, storage_options)
    info, arrays = describe(loc)
    children = {}
    for level, arr in enumerate(arrays):
        data = _level_da(loc, info, level, arr)
        variables = {DATA_VAR: data}
        if info.is_point_cloud:
            idx = loc.try_open(f"idx_{level}.zarr")
            if idx is not None:
                variables[INDEX_VAR] = _index_da(loc, info, level)
        ds = xr.Dataset(variables, attrs=dict(data.attrs))
        children[level_name(level)] = xr.DataTree(dataset=ds)
    root = xr.Dataset(attrs=info.to_attrs())
    return xr.DataTree(dataset=root, children=children, name=os.path.basename(loc.path.rstrip("/")) or None)


def open_moraine_points(path, storage_options: dict | None = None) -> xr.Dataset:
    """The points of a point-cloud pyramid: data variables ``x``, ``y`` (dim ``point``) and
    ``pc`` (``point`` plus channel dims), lazy. Raises :class:`~moczarr.errors.ArgumentError` for
    a raster pyramid and :class:`PyramidError` for point arrays that disagree."""
    loc = Location(path, storage_options)
    info, _ = describe(loc)
    _require_point_cloud(info, "points")
    x = loc.open("x.zarr", "the x coordinates of the points")
    y = loc.open("y.zarr", "the y coordinates of the points")
    pc = loc.open("pc.zarr", "the point data")
    n = int(pc.shape[0])
    if tuple(x.shape) != (n,) or tuple(y.shape) != (n,):
        raise PyramidError(
            f"{loc.path}: x.zarr {tuple(x.shape)} and y.zarr {tuple(y.shape)} do not match the {n} points of pc.zarr"
        )
    channel_dims = channel_dim_names(pc.ndim - 1)
    attrs = info.to_attrs()
    attrs["n_points"] = n
    return xr.Dataset(
        {
            "x": (("point",), _lazy(loc, "x.zarr", x)),
            "y": (("point",), _lazy(loc, "y.zarr", y)),
            "pc": (("point", *channel_dims), _lazy(loc, "pc.zarr", pc)),
        },
        attrs=attrs,
    )


def open_moraine_index(path, level: int, storage_options: dict | None = None) -> xr.DataArray:
    """``idx_<level>.zarr`` of a point-cloud pyramid: per cell the index (into the points) of the
    point shown, ``-1`` for empty cells; dims ``("y", "x")`` with the level's cell-centre coords.
    Raises :class:`~moczarr.errors.ArgumentError` for a raster pyramid."""
    loc = Location(path, storage_options)
    info, _ = describe(loc)
    _require_point_cloud(info, "point indexes")
    return _index_da(loc, info, info._check_level(level))


def read_moraine_rtree(path, storage_options: dict | None = None) -> xr.DataArray | None:
    """The bounding-box tree of a point-cloud pyramid's points as a DataArray (dims ``node``,
    ``bound`` with ``bound`` = x0, y0, xm, ym; attrs ``page_size``, ``n_points`` and ``built``),
    or ``None`` for a raster pyramid.

    ``rtree.zarr`` opens lazily when the pyramid has one (``built`` false). Otherwise, as the
    contract asks of readers, the tree is built in memory from ``x.zarr`` / ``y.zarr`` with
    :func:`moczarr.moraine.rtree.build_rtree` at the writer's page size (``built`` true); nothing
    is written. Raises :class:`PyramidError` for an ``rtree.zarr`` that is not ``(n_nodes, 4)``
    or points missing or of mismatched lengths."""
    from .rtree import DEFAULT_PAGE_SIZE, build_rtree

    loc = Location(path, storage_options)
    info, _ = describe(loc)
    if not info.is_point_cloud:
        return None
    dims, coords = ("node", "bound"), {"bound": ["x0", "y0", "xm", "ym"]}
    arr = loc.try_open("rtree.zarr")
    if arr is None:
        x = loc.open("x.zarr", "the x coordinates of the points")
        y = loc.open("y.zarr", "the y coordinates of the points")
        if x.ndim != 1 or tuple(x.shape) != tuple(y.shape):
            raise PyramidError(
                f"{loc.path}: x.zarr {tuple(x.shape)} and y.zarr {tuple(y.shape)} are not one point list"
            )
        boxes = build_rtree(x[...], y[...], DEFAULT_PAGE_SIZE)
        attrs = {"page_size": DEFAULT_PAGE_SIZE, "n_points": int(x.shape[0]), "built": True}
        return xr.DataArray(boxes, dims=dims, coords=coords, name="rtree", attrs=attrs)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise PyramidError(f"{loc.url('rtree.zarr')}: shape {tuple(arr.shape)}, expected (n_nodes, 4)")
    attrs = jsonable(arr.attrs.asdict() if hasattr(arr.attrs, "asdict") else dict(arr.attrs))
    attrs["built"] = False
    return xr.DataArray(_lazy(loc, "rtree.zarr", arr), dims=dims, coords=coords, name="rtree", attrs=attrs)
