"""Quicklook PNGs written with a catalog: data drawn in lon/lat, or the coverage outline as a fallback.

- :func:`draw_level_thumbnail`: one hive level, its first dense numeric variable
  on its cells (mortie cell polygons) in an equirectangular lon/lat frame
  (:func:`level_quicklook`: the same, with the variable and value range it drew);
- :func:`draw_moraine_thumbnail`: a moraine level (raster, or the rasterized
  grid of a point cloud) as an image;
- :func:`draw_thumbnail`: a product's shard footprint (no data), when no level can be drawn.

Values go through one colormap (:func:`colorize`, viridis anchors); missing
values are transparent.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass

import mortie
import numpy as np
import shapely
from PIL import Image, ImageDraw

import moczarr
from moczarr.metadata import ProductSummary, geometry_bbox, to_words
from moczarr.moraine import POINT_CLOUD, open_moraine_level

PNG_TYPE = "image/png"
#: cells drawn at most per level quicklook (a level with more is not drawn)
MAX_CELLS = 50_000
#: viridis at 0, 0.25, 0.5, 0.75, 1
_ANCHORS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], dtype=float)


def value_range(values: np.ndarray) -> tuple[float, float] | None:
    """The 2nd and 98th percentiles of the finite ``values`` (the range a quicklook's colours span); None: none."""
    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v)
    if not finite.any():
        return None
    lo, hi = np.percentile(v[finite], [2, 98])
    return float(lo), float(hi)


def colorize(values: np.ndarray) -> np.ndarray:
    """RGBA uint8 of ``values`` scaled between their 2nd and 98th percentiles; NaN -> transparent."""
    v = np.asarray(values, dtype=float)
    out = np.zeros((*v.shape, 4), dtype=np.uint8)
    finite = np.isfinite(v)
    span = value_range(v)
    if span is None:
        return out
    lo, hi = span
    t = np.clip((v - lo) / (hi - lo), 0, 1) if hi > lo else np.full(v.shape, 0.5)
    t = np.where(finite, t, 0) * (len(_ANCHORS) - 1)
    i = np.minimum(t.astype(int), len(_ANCHORS) - 2)
    f = (t - i)[..., None]
    rgb = _ANCHORS[i] * (1 - f) + _ANCHORS[i + 1] * f
    out[..., :3] = rgb.round().astype(np.uint8)
    out[..., 3] = np.where(finite, 255, 0)
    return out


def _frame(polys: list[np.ndarray], size: int):
    """Projected rings (lon unwrapped, squeezed by cos(mid-latitude)) and a pixel transform for them."""
    west = min(float(r[:, 0].min()) for r in polys)
    east = max(float(r[:, 0].max()) for r in polys)
    south = min(float(r[:, 1].min()) for r in polys)
    north = max(float(r[:, 1].max()) for r in polys)
    squeeze = max(0.1, math.cos(math.radians((south + north) / 2.0)))
    pad = 0.05 * max((east - west) * squeeze, north - south, 1e-6)
    scale = (size - 1) / max((east - west) * squeeze + 2 * pad, north - south + 2 * pad)
    width = max(16, round(((east - west) * squeeze + 2 * pad) * scale) + 1)
    height = max(16, round((north - south + 2 * pad) * scale) + 1)

    def xy(ring):
        return [(((x - west) * squeeze + pad) * scale, (north + pad - y) * scale) for x, y in ring]

    return width, height, xy


def _rings(geoms) -> list[np.ndarray]:
    out = []
    for g in geoms:
        ring = np.asarray(g.exterior.coords, dtype=float)
        lon = np.degrees(np.unwrap(np.radians(ring[:, 0])))  # a cell across the antimeridian stays one piece
        out.append(np.column_stack([lon, ring[:, 1]]))
    # one longitude branch for the whole picture
    ref = out[0][0, 0]
    return [np.column_stack([r[:, 0] - 360.0 * np.round((r[:, 0].mean() - ref) / 360.0), r[:, 1]]) for r in out]


@dataclass(frozen=True)
class Quicklook:
    """What a level quicklook drew: ``what`` (variable, units, order), the ``variable`` and the range its colours
    span (:func:`value_range` of the level's values; None when it has no finite value)."""

    what: str
    variable: str
    value_range: tuple[float, float] | None


def draw_level_thumbnail(
    store_root, cell_order: int, path, *, window=None, all_time=False, storage_options=None, size: int = 256
) -> str | None:
    """Draw one level's first dense float variable (else first dense numeric one) on its cells.

    Returns what was drawn (variable, units, order), or None.

    None (nothing written) when the level does not open, has no dense numeric
    variable, no cell, or more than :data:`MAX_CELLS` cells.
    """
    drawn = level_quicklook(
        store_root, cell_order, path, window=window, all_time=all_time, storage_options=storage_options, size=size
    )
    return drawn.what if drawn is not None else None


def level_quicklook(
    store_root, cell_order: int, path, *, window=None, all_time=False, storage_options=None, size: int = 256
) -> Quicklook | None:
    """:func:`draw_level_thumbnail`, returning what it drew as a :class:`Quicklook` (None: nothing drawn).

    The value range is the one read the quicklook makes: a catalog's renders take their rescale from it
    (:mod:`.webmap`), never from another pass over the data.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        try:
            ds = moczarr.open_level(store_root, cell_order, window, None, all_time, storage_options=storage_options)
        except moczarr.errors.MoczarrError:
            return None
    if ds is None or ds.sizes.get("cells", 0) == 0 or ds.sizes["cells"] > MAX_CELLS:
        return None
    dense = [
        n for n, v in ds.data_vars.items() if v.dims == ("cells",) and v.dtype.kind in "iuf" and "ragged" not in v.attrs
    ]
    name = next((n for n in dense if ds[n].dtype.kind == "f"), dense[0] if dense else None)  # measured values first
    if name is None:
        return None
    values = np.asarray(ds[name].values, dtype=float)
    geoms = shapely.get_parts(mortie.to_geometry(to_words(np.asarray(ds["morton"].values)), dissolve=False))
    if len(geoms) != len(values):
        return None
    rings = _rings(geoms)
    width, height, xy = _frame(rings, size)
    image = Image.new("RGBA", (width, height), (255, 255, 255, 0))
    draw = ImageDraw.Draw(image)
    for ring, color in zip(rings, colorize(values), strict=True):
        if color[3]:
            draw.polygon(xy(ring), fill=tuple(int(c) for c in color))
    image.save(path, format="PNG")
    units = ds[name].attrs.get("units")
    what = f"{name}" + (f" ({units})" if isinstance(units, str) else "") + f" at cell order {cell_order}"
    return Quicklook(what, name, value_range(values))


def draw_moraine_thumbnail(info, path, *, storage_options=None, size: int = 256) -> str | None:
    """Draw the finest moraine level no larger than ``size`` pixels a side (first channel; amplitude of
    complex data); returns what was drawn, or None when no level opens."""
    levels = [lv for lv in info.levels if max(info.shapes[lv][:2]) <= size] or [info.levels[-1]]
    level = levels[0]
    try:
        arr = open_moraine_level(info.path, level, storage_options=storage_options)
    except (moczarr.errors.MoczarrError, OSError, ValueError):
        return None
    while arr.ndim > 2:
        arr = arr.isel({arr.dims[-1]: 0})
    values = np.asarray(arr.values)
    if values.dtype.kind == "c":
        values = np.abs(values)
    values = values.astype(float)
    if info.kind == POINT_CLOUD and values.ndim == 2:
        values = values[::-1]  # grid rows go with increasing y: north up
    rgba = colorize(values)
    Image.fromarray(rgba, mode="RGBA").save(path, format="PNG")
    return f"level {level} ({' x '.join(map(str, values.shape))})"


def draw_thumbnail(
    product: ProductSummary, path: str | os.PathLike, *, size: int = 256, geometry: dict | None = None
) -> bool:
    """Draw the shard footprint polygons of a product into a small PNG; False when there is no coverage."""
    if not product.shards:
        return False
    geometry = geometry or product.footprint
    if geometry is None:
        return False
    west, south, east, north = geometry_bbox(geometry, pole_spans_all=False)
    if east < west:
        east += 360.0
    squeeze = max(0.1, math.cos(math.radians((south + north) / 2.0)))
    shard_geoms = shapely.get_parts(mortie.to_geometry(to_words(product.shards), dissolve=False))
    rings = []
    for g in shard_geoms:
        ring = np.asarray(g.exterior.coords, dtype=float)
        lon = np.degrees(np.unwrap(np.radians(ring[:, 0])))
        lon = np.where(lon < west - 1e-9, lon + 360.0, lon)
        rings.append(np.column_stack([(lon - west) * squeeze, ring[:, 1]]))
    west, east = 0.0, (east - west) * squeeze
    pad = 0.05 * max(east - west, north - south, 1e-6)
    west, east, south, north = west - pad, east + pad, south - pad, north + pad
    scale = (size - 1) / max(east - west, north - south)
    width = max(16, round((east - west) * scale) + 1)
    height = max(16, round((north - south) * scale) + 1)
    image = Image.new("RGBA", (width, height), (255, 255, 255, 0))
    draw = ImageDraw.Draw(image)
    for ring in rings:
        xy = [((x - west) * scale, (north - y) * scale) for x, y in ring]
        draw.polygon(xy, fill=(49, 130, 189, 160), outline=(8, 48, 107, 255))
    image.save(path, format="PNG")
    return True
