"""Quicklook PNGs written beside a catalog's Collections."""

from __future__ import annotations

import math
import os

import mortie
import numpy as np
import shapely
from PIL import Image, ImageDraw

from moczarr.metadata import ProductSummary, geometry_bbox, to_words

PNG_TYPE = "image/png"


def draw_thumbnail(product: ProductSummary, path: str | os.PathLike, *, size: int = 256, geometry: dict | None = None) -> bool:
    """Draw the shard footprint polygons of a product into a small PNG; False when there is no coverage."""
    if not product.shards:
        return False
    geometry = geometry or product.footprint
    west, south, east, north = geometry_bbox(geometry, pole_spans_all=False)
    if east < west:
        east += 360.0
    # an equirectangular frame true to scale at the middle latitude
    squeeze = max(0.1, math.cos(math.radians((south + north) / 2.0)))
    shard_geoms = shapely.get_parts(mortie.to_geometry(to_words(product.shards), dissolve=False))
    rings = []
    for g in shard_geoms:
        ring = np.asarray(g.exterior.coords, dtype=float)
        lon = np.unwrap(np.radians(ring[:, 0]))  # a shard across the antimeridian stays one piece
        lon = np.degrees(lon)
        lon = np.where(lon < west - 1e-9, lon + 360.0, lon)
        rings.append(np.column_stack([(lon - west) * squeeze, ring[:, 1]]))
    west, east = 0.0, (east - west) * squeeze
    pad = 0.05 * max(east - west, north - south, 1e-6)
    west, east, south, north = west - pad, east + pad, south - pad, north + pad
    scale = (size - 1) / max(east - west, north - south)
    width = max(16, int(round((east - west) * scale)) + 1)
    height = max(16, int(round((north - south) * scale)) + 1)
    image = Image.new("RGBA", (width, height), (255, 255, 255, 0))
    draw = ImageDraw.Draw(image)
    for ring in rings:
        xy = [((x - west) * scale, (north - y) * scale) for x, y in ring]
        draw.polygon(xy, fill=(49, 130, 189, 160), outline=(8, 48, 107, 255))
    image.save(path, format="PNG")
    return True
