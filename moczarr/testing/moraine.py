"""A small writer of moraine raster and point-cloud pyramids (contract: seeds/002, version 1).

:func:`write_raster_pyramid` writes ``0.zarr`` (the raster) and its coarser
levels ``1.zarr .. L.zarr`` with method ``decimate`` (every ``2**l``-th pixel)
or ``mean`` (the mean of each ``2**l x 2**l`` block over its finite pixels),
plus ``stats.zarr``. :func:`write_point_cloud_pyramid` rasterizes points on a
grid of ``resolution``: ``bounds.toml``, ``x.zarr``/``y.zarr``/``pc.zarr``, per
level ``l.zarr`` and ``idx_l.zarr`` with method ``first`` or ``mean``,
``stats.zarr`` and optionally ``rtree.zarr`` (a Hilbert-ordered bounding-box
tree). ``L = floor(log2(min(nlines, width)))``; level ``l`` has shape
``ceil(n / 2**l)`` per side.

Version 1 pyramids carry the ``moraine_pyramid`` marker on ``0.zarr``. With
``legacy=True`` the writer makes the pre-marker layout instead: no marker, no
statistics, no r-tree, the method's defaults only (decimate / first), point
grids that keep the points' dtype with empty cells 0 and whose last line and
column are merged into the previous ones.

Arrays are zarr v3 (or v2 for rasters with ``zarr_format=2``), chunked
``(64, 64, 1, ...)`` by default, zstd level 0, fill value 0; empty cells are
marked by ``nan`` in the data and ``-1`` in the index, never by the fill value.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Literal

import numpy as np
import zarr
from zarr.codecs import ZstdCodec

__all__ = [
    "STAT_COLUMNS",
    "channel_statistics",
    "hilbert_order",
    "hilbert_rtree",
    "level_shapes",
    "marker_statistics",
    "write_point_cloud_pyramid",
    "write_raster_pyramid",
]

STAT_COLUMNS = ("nan_fraction", "min", "max", "mean", "std", "p01", "p50", "p99")
RASTER_METHODS = ("decimate", "mean")
POINT_METHODS = ("first", "mean")
SAMPLE_LIMIT = 2**23  # percentiles come from a regular sample of at most this many finite values


# -- levels ------------------------------------------------------------------------------------------------
def level_shapes(shape0: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Shapes of levels ``0..L``: ``L = floor(log2(min(nlines, width)))``, sides halved and rounded up."""
    nlines, width, *channels = shape0
    if min(nlines, width) < 2:
        raise ValueError(f"a pyramid needs at least 2 pixels per side, got {tuple(shape0)}")
    top = math.floor(math.log2(min(nlines, width)))
    return [(math.ceil(nlines / 2**lv), math.ceil(width / 2**lv), *channels) for lv in range(top + 1)]


def block_mean(data: np.ndarray, factor: int) -> np.ndarray:
    """The mean of every ``factor x factor`` block (edge blocks partial) over its finite values, nan where none.

    Complex data is averaged as complex numbers; the result is float64 or complex128.
    """
    nlines, width = data.shape[:2]
    h, w = math.ceil(nlines / factor), math.ceil(width / factor)
    work = np.complex128 if data.dtype.kind == "c" else np.float64
    pad = np.full((h * factor, w * factor, *data.shape[2:]), np.nan, dtype=work)
    pad[:nlines, :width] = data
    blocks = pad.reshape(h, factor, w, factor, *data.shape[2:])
    finite = np.isfinite(blocks)
    total = np.where(finite, blocks, 0).sum(axis=(1, 3))
    count = finite.sum(axis=(1, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def first_of_blocks(idx: np.ndarray) -> np.ndarray:
    """The index of the next level: the first non-empty (``>= 0``) cell of each 2 x 2 block, row-major."""
    h, w = math.ceil(idx.shape[0] / 2), math.ceil(idx.shape[1] / 2)
    pad = np.full((2 * h, 2 * w), -1, dtype=idx.dtype)
    pad[: idx.shape[0], : idx.shape[1]] = idx
    out = np.full((h, w), -1, dtype=idx.dtype)
    for di, dj in reversed(((0, 0), (0, 1), (1, 0), (1, 1))):
        candidate = pad[di::2, dj::2]
        out = np.where(candidate >= 0, candidate, out)
    return out


def _cell_dtype(dtype: np.dtype) -> np.dtype:
    """Floating point and complex data keep their dtype; integer and boolean data become float32."""
    return dtype if dtype.kind in "fc" else np.dtype("float32")


# -- statistics ----------------------------------------------------------------------------------------------
def _stats_row(values: np.ndarray) -> list[float]:
    v = np.abs(values) if values.dtype.kind == "c" else values
    v = np.asarray(v, dtype=np.float64).ravel()
    finite = v[np.isfinite(v)]
    row = [float(np.isnan(v).mean()) if v.size else math.nan]
    if not finite.size:
        return row + [math.nan] * 7
    sample = finite[:: max(1, math.ceil(finite.size / SAMPLE_LIMIT))]
    p01, p50, p99 = np.percentile(sample, [1, 50, 99])
    return [
        *row,
        float(finite.min()),
        float(finite.max()),
        float(finite.mean()),
        float(finite.std()),
        float(p01),
        float(p50),
        float(p99),
    ]


def marker_statistics(values: np.ndarray) -> dict:
    """The marker's ``stats`` of all of ``values``: 6 significant digits; boolean data gives ``true_fraction`` only,
    complex data ``amplitude_*`` value fields; a field without finite values is ``None``."""
    if values.dtype == bool:
        return {"true_fraction": float(f"{float(values.mean()):.6g}")}
    row = _stats_row(values)
    prefix = "amplitude_" if values.dtype.kind == "c" else ""
    out = {}
    for i, (name, value) in enumerate(zip(STAT_COLUMNS, row, strict=True)):
        key = name if i == 0 else prefix + name
        out[key] = None if math.isnan(value) else float(f"{value:.6g}")
    return out


def channel_statistics(values: np.ndarray, n_leading: int) -> np.ndarray:
    """``stats.zarr``: ``(*channels, 8)`` float64, one exact row per channel (nan where a channel has no finite value).

    ``n_leading`` is the number of non-channel axes (2 for rasters, 1 for points).
    """
    channels = values.shape[n_leading:]
    flat = values.reshape(*values.shape[:n_leading], -1)
    rows = [_stats_row(flat[..., k]) for k in range(flat.shape[-1])]
    return np.asarray(rows, dtype=np.float64).reshape(*channels, len(STAT_COLUMNS))


# -- the point index (r-tree) ----------------------------------------------------------------------------------
def _hilbert_rank(i: np.ndarray, j: np.ndarray, order: int) -> np.ndarray:
    """Rank of cells ``(i, j)`` on the Hilbert curve over a ``2**order`` square (the classic rotate-and-flip walk)."""
    x, y = j.astype(np.int64).copy(), i.astype(np.int64).copy()
    rank = np.zeros_like(x)
    n = 1 << order
    s = n >> 1
    while s > 0:
        rx = ((x & s) > 0).astype(np.int64)
        ry = ((y & s) > 0).astype(np.int64)
        rank += s * s * ((3 * rx) ^ ry)
        flip = ry == 0
        swap_x = np.where(flip & (rx == 1), n - 1 - x, x)
        swap_y = np.where(flip & (rx == 1), n - 1 - y, y)
        x, y = np.where(flip, swap_y, swap_x), np.where(flip, swap_x, swap_y)
        s >>= 1
    return rank


def hilbert_order(x: np.ndarray, y: np.ndarray, resolution: float) -> np.ndarray:
    """The permutation that orders points along a Hilbert curve over their grid cells (stable)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    i = np.rint((y - y.min()) / resolution).astype(np.int64)
    j = np.rint((x - x.min()) / resolution).astype(np.int64)
    order = max(1, int(max(i.max(), j.max())).bit_length())
    return np.argsort(_hilbert_rank(i, j, order), kind="stable")


def hilbert_rtree(x: np.ndarray, y: np.ndarray, resolution: float, page_size: int = 512) -> np.ndarray:
    """Bounding boxes ``(n_nodes, 4)`` = ``[x0, y0, xm, ym]`` of a Hilbert-packed tree over the points.

    Points are ordered along a Hilbert curve over their grid cells and cut into
    pages of ``page_size``; the pages are the leaves of a complete binary tree in
    heap layout (node ``k`` has children ``2k+1`` and ``2k+2``), so a tree of
    ``P`` pages has ``2 * 2**ceil(log2 P) - 1`` nodes; absent nodes are all nan.
    """
    if page_size < 1:
        raise ValueError(f"page_size must be >= 1, got {page_size}")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    perm = hilbert_order(x, y, resolution)
    n_pages = max(1, math.ceil(x.size / page_size))
    n_leaves = 1 << math.ceil(math.log2(n_pages))
    boxes = np.full((2 * n_leaves - 1, 4), np.nan)
    for p in range(n_pages):
        sel = perm[p * page_size : (p + 1) * page_size]
        boxes[n_leaves - 1 + p] = [x[sel].min(), y[sel].min(), x[sel].max(), y[sel].max()]
    for k in range(n_leaves - 2, -1, -1):
        kids = boxes[[2 * k + 1, 2 * k + 2]]
        present = kids[~np.isnan(kids).all(axis=1)]
        if present.size:
            boxes[k] = [present[:, 0].min(), present[:, 1].min(), present[:, 2].max(), present[:, 3].max()]
    return boxes


# -- zarr ------------------------------------------------------------------------------------------------------
def _write_array(
    path: Path, data: np.ndarray, chunks, *, zarr_format: Literal[2, 3] = 3, attributes: dict | None = None
):
    if zarr_format == 2:
        from numcodecs import Zstd

        compressors = Zstd(level=0)
    else:
        compressors = ZstdCodec(level=0)
    arr = zarr.create_array(
        store=str(path),
        shape=data.shape,
        chunks=tuple(chunks),
        dtype=data.dtype,
        fill_value=0,
        compressors=compressors,
        filters=None,
        zarr_format=zarr_format,
        attributes=attributes or {},
    )
    arr[...] = data
    return arr


def _chunks(ndim: int, chunks: tuple[int, int]) -> tuple[int, ...]:
    return (*chunks, *([1] * (ndim - 2)))


def _prepare(path: Path, overwrite: bool) -> Path:
    path = Path(path)
    if path.exists():
        if not overwrite:
            raise FileExistsError(f"{path} exists (pass overwrite=True to replace it)")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# -- rasters -------------------------------------------------------------------------------------------------
def write_raster_pyramid(
    path,
    data: np.ndarray,
    *,
    method: str = "decimate",
    chunks: tuple[int, int] = (64, 64),
    zarr_format: Literal[2, 3] = 3,
    legacy: bool = False,
    overwrite: bool = False,
) -> Path:
    """Write raster ``data`` (``(nlines, width[, n])``) as a pyramid at ``path``; returns ``path``.

    Raises ``ValueError`` for an unknown method, a legacy pyramid with a method
    other than decimate, or a raster smaller than 2 pixels per side, and
    ``FileExistsError`` when ``path`` exists and ``overwrite`` is false.
    """
    data = np.asarray(data)
    if method not in RASTER_METHODS:
        raise ValueError(f"raster method must be one of {RASTER_METHODS}, got {method!r}")
    if legacy and method != "decimate":
        raise ValueError("legacy raster pyramids are decimated (the method did not exist yet)")
    shapes = level_shapes(data.shape)
    path = _prepare(path, overwrite)
    chunk_shape = _chunks(data.ndim, chunks)
    marker = (
        None
        if legacy
        else {"moraine_pyramid": {"version": 1, "kind": "raster", "method": method, "stats": marker_statistics(data)}}
    )
    for lv, shape in enumerate(shapes):
        f = 2**lv
        if lv == 0:
            level = data
        elif method == "decimate":
            level = data[::f, ::f]
        else:
            level = block_mean(data, f).astype(_cell_dtype(data.dtype))
        assert level.shape == shape
        _write_array(
            path / f"{lv}.zarr", level, chunk_shape, zarr_format=zarr_format, attributes=marker if lv == 0 else None
        )
    if not legacy:
        stats = channel_statistics(data, 2)
        _write_array(
            path / "stats.zarr", stats, stats.shape, zarr_format=zarr_format, attributes={"columns": list(STAT_COLUMNS)}
        )
    return path


# -- point clouds -------------------------------------------------------------------------------------------
def rasterize(x: np.ndarray, y: np.ndarray, resolution: float, *, legacy: bool = False):
    """The level-0 grid of points: ``(idx0, bounds)``.

    Each point goes to the cell of its nearest centre, centres at
    ``(x0 + j * resolution, y0 + i * resolution)`` with ``x0, y0`` the smallest
    coordinates; a cell holding several points shows the first of them. The grid
    reaches the cells of the largest coordinates (legacy: one line and column
    short, those points merged into the previous ones).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x0, y0 = float(x.min()), float(y.min())
    i = np.rint((y - y0) / resolution).astype(np.int64)
    j = np.rint((x - x0) / resolution).astype(np.int64)
    nlines, width = int(i.max()) + 1, int(j.max()) + 1
    if legacy:
        nlines, width = nlines - 1, width - 1
        i, j = np.minimum(i, nlines - 1), np.minimum(j, width - 1)
    none = np.iinfo(np.int64).max
    idx0 = np.full((nlines, width), none, dtype=np.int64)
    np.minimum.at(idx0, (i, j), np.arange(x.size, dtype=np.int64))  # the first point of a cell
    idx0[idx0 == none] = -1
    bounds = [x0, y0, x0 + (width - 1) * resolution, y0 + (nlines - 1) * resolution]
    return idx0, bounds


def _point_level(pc: np.ndarray, idx: np.ndarray, idx0: np.ndarray, factor: int, method: str, legacy: bool):
    empty = (idx < 0).reshape(idx.shape + (1,) * (pc.ndim - 1))
    if legacy:
        return np.where(empty, np.zeros((), pc.dtype), pc[np.maximum(idx, 0)]).astype(pc.dtype)
    dtype = _cell_dtype(pc.dtype)
    if method == "first" or factor == 1:
        return np.where(empty, np.nan, pc[np.maximum(idx, 0)].astype(dtype)).astype(dtype)
    ii, jj = np.nonzero(idx0 >= 0)
    points = idx0[ii, jj]
    total = np.zeros(idx.shape + pc.shape[1:], dtype=np.complex128 if pc.dtype.kind == "c" else np.float64)
    count = np.zeros(idx.shape, dtype=np.int64)
    np.add.at(total, (ii // factor, jj // factor), pc[points])
    np.add.at(count, (ii // factor, jj // factor), 1)
    count = count.reshape(count.shape + (1,) * (pc.ndim - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan).astype(dtype)


def write_point_cloud_pyramid(
    path,
    x: np.ndarray,
    y: np.ndarray,
    pc: np.ndarray,
    *,
    resolution: float,
    method: str = "first",
    chunks: tuple[int, int] = (64, 64),
    rtree: bool = True,
    page_size: int = 512,
    legacy: bool = False,
    overwrite: bool = False,
) -> Path:
    """Write points ``x``, ``y`` (``(n,)``) with data ``pc`` (``(n[, k])``) as a pyramid at ``path``; returns ``path``.

    Raises ``ValueError`` for an unknown method, mismatched lengths, a
    non-positive resolution, a legacy pyramid with a method other than first or
    with an r-tree, and ``FileExistsError`` when ``path`` exists and ``overwrite``
    is false.
    """
    x, y, pc = np.asarray(x), np.asarray(y), np.asarray(pc)
    if method not in POINT_METHODS:
        raise ValueError(f"point cloud method must be one of {POINT_METHODS}, got {method!r}")
    if not (x.shape == y.shape == pc.shape[:1]) or x.ndim != 1:
        raise ValueError(f"x {x.shape}, y {y.shape} and pc {pc.shape} must hold the same points")
    if not resolution > 0:
        raise ValueError(f"resolution must be positive, got {resolution!r}")
    if legacy and (method != "first" or rtree):
        raise ValueError("legacy point cloud pyramids show the first point and have no r-tree")
    if rtree:  # the tree's pages are runs of stored points, so the points are stored in Hilbert order
        perm = hilbert_order(x, y, resolution)
        x, y, pc = x[perm], y[perm], pc[perm]
    idx0, bounds = rasterize(x, y, resolution, legacy=legacy)
    shapes = level_shapes(idx0.shape)
    path = _prepare(path, overwrite)
    integral = x.dtype.kind in "iu" and y.dtype.kind in "iu" and float(resolution).is_integer()
    items = ", ".join(str(int(b)) if integral else repr(float(b)) for b in bounds)
    (path / "bounds.toml").write_text(f"bounds = [ {items},]\n")
    for name, values in (("x", x), ("y", y), ("pc", pc)):
        _write_array(path / f"{name}.zarr", values, (1024, *([1] * (values.ndim - 1))))
    marker = (
        None
        if legacy
        else {
            "moraine_pyramid": {"version": 1, "kind": "point cloud", "method": method, "stats": marker_statistics(pc)}
        }
    )
    idx = idx0
    for lv, shape in enumerate(shapes):
        if lv:
            idx = first_of_blocks(idx)
        level = _point_level(pc, idx, idx0, 2**lv, method, legacy)
        assert level.shape[:2] == shape[:2] == idx.shape
        _write_array(path / f"{lv}.zarr", level, _chunks(level.ndim, chunks), attributes=marker if lv == 0 else None)
        _write_array(path / f"idx_{lv}.zarr", idx, chunks)
    if not legacy:
        stats = channel_statistics(pc, 1)
        _write_array(path / "stats.zarr", stats, stats.shape, attributes={"columns": list(STAT_COLUMNS)})
    if rtree:
        boxes = hilbert_rtree(x, y, resolution, page_size)
        _write_array(
            path / "rtree.zarr", boxes, boxes.shape, attributes={"page_size": page_size, "n_points": int(x.size)}
        )
    return path
