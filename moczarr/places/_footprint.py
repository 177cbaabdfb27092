"""A cover's footprint: its outline as GeoJSON and its bounding box, in time linear in the cells.

The outline is the union of the cells' boundary quads (``mortie.mort2polygon``,
one batched call per order), at the cover's finest order as mortie's own
dissolve draws it. Cells of one order share their corners exactly,
so their quads form a polygon coverage and GEOS's coverage union dissolves
them by cancelling shared edges (linear); any other input falls back to an
ordinary ``shapely.union_all``. Quads that mortie draws past the antimeridian
(longitudes beyond ±180) are cut there and wrapped, so the outline, like
mortie's own dissolve, never crosses it. Needs ``shapely``.
"""

from __future__ import annotations

import json

import mortie
import numpy as np

from ..errors import ArgumentError

_AREA_RTOL = 1e-9
MAX_DENSIFIED = 2_000_000  # cells a mixed-order cover may expand to at its finest order before union_all takes over


def footprint(words) -> tuple[list[float] | None, dict | None]:
    """``(bbox, geometry)`` of a cover: ``[west, south, east, north]`` and a GeoJSON MultiPolygon.

    ``words`` are packed morton words (any orders; one order is the fast path).
    ``(None, None)`` for an empty cover. See :func:`geometry_bbox` for the box
    across the antimeridian and the poles.
    """
    words = np.asarray(words, dtype=np.uint64).ravel()
    if words.size == 0:
        return None, None
    geometry = footprint_geometry(words)
    return geometry_bbox(geometry), geometry


def footprint_geometry(words) -> dict:
    """The cover's outline as a GeoJSON MultiPolygon (lon/lat degrees, split at the antimeridian)."""
    import shapely

    words = np.unique(np.asarray(words, dtype=np.uint64).ravel())
    orders = np.unique(mortie.orders_of(words))
    if orders.size > 1:  # mortie dissolves at the finest order; so does the coverage union
        try:
            words = np.unique(
                np.asarray(mortie.moc_to_order(words, int(orders.max()), max_cells=MAX_DENSIFIED), dtype=np.uint64)
            )
            orders = orders[-1:]
        except ValueError:
            pass
    quads = cell_quads(words)
    outline = None
    if orders.size == 1:
        try:
            outline = shapely.coverage_union_all(quads)
        except shapely.errors.GEOSException:  # corners did not match exactly: not a coverage
            outline = None
        expected = float(shapely.area(quads).sum())
        if outline is not None and (
            not shapely.is_valid(outline) or abs(outline.area - expected) > _AREA_RTOL * max(expected, 1.0) + 1e-9
        ):
            outline = None
    if outline is None:
        outline = shapely.union_all(quads)
    outline = _wrap_antimeridian(outline)
    polygons = [p for p in shapely.get_parts(outline) if p.geom_type == "Polygon" and not p.is_empty]
    doc = json.loads(shapely.to_geojson(shapely.MultiPolygon(polygons)))
    return {"type": "MultiPolygon", "coordinates": doc["coordinates"]}


def cell_quads(words: np.ndarray):
    """One shapely polygon per cell, ``(lon, lat)``: mortie's boundary ring, one batched call per order.

    Two corrections make the rings planar outlines: a ring across the
    antimeridian is unwrapped east (longitudes past 180), and a corner on a
    pole becomes an edge along the pole's latitude between its neighbours'
    longitudes (mortie places it at one longitude).
    """
    import shapely

    orders = mortie.orders_of(words)
    out = []
    for order in np.unique(orders):
        group = words[orders == order]
        rings = np.asarray(mortie.mort2polygon(group if group.size > 1 else int(group[0])), dtype=float)
        if rings.ndim == 2:
            rings = rings[None]
        lonlat = np.ascontiguousarray(rings[..., ::-1])  # [lat, lon] -> (lon, lat)
        polar = np.abs(lonlat[..., 1]).max(axis=1) >= 90.0 - 1e-12
        plain = lonlat[~polar]
        _unwrap(plain)
        out.append(shapely.polygons(plain))
        out.extend(shapely.Polygon(_pole_edge(ring)) for ring in lonlat[polar])
    return np.concatenate([np.atleast_1d(np.asarray(o, dtype=object)) for o in out])


def _unwrap(rings: np.ndarray) -> None:
    """In place: rings spanning more than 180 degrees of longitude cross the antimeridian; move them east."""
    lon = rings[..., 0]
    across = lon.max(axis=-1) - lon.min(axis=-1) > 180.0
    if across.any():
        sub = lon[across]
        sub[sub < 0] += 360.0
        lon[across] = sub


def _pole_edge(ring: np.ndarray) -> np.ndarray:
    """A closed ring whose pole corner is replaced by an edge along the pole latitude."""
    pts = ring[:-1]
    n = len(pts)
    corners = []
    for i, (lon, lat) in enumerate(pts):
        if abs(lat) >= 90.0 - 1e-12:
            corners.append((pts[i - 1][0], lat))
            corners.append((pts[(i + 1) % n][0], lat))
        else:
            corners.append((lon, lat))
    out = np.asarray(corners, dtype=float)
    _unwrap(out[None])
    return np.vstack([out, out[:1]])


def _wrap_antimeridian(geom):
    """Cut a geometry at ±180° and move the parts beyond back into [-180, 180]."""
    import shapely

    west, _, east, _ = geom.bounds
    if west >= -180.0 and east <= 180.0:
        return geom
    turn = np.array([360.0, 0.0])  # one turn of longitude, broadcast over shapely's (n, 2) coordinate arrays
    pieces = [shapely.clip_by_rect(geom, -180.0, -90.0, 180.0, 90.0)]
    if east > 180.0:
        pieces.append(shapely.transform(shapely.clip_by_rect(geom, 180.0, -90.0, 540.0, 90.0), lambda c: c - turn))
    if west < -180.0:
        pieces.append(shapely.transform(shapely.clip_by_rect(geom, -540.0, -90.0, -180.0, 90.0), lambda c: c + turn))
    return shapely.union_all([p for p in pieces if not p.is_empty])


def _polygons(geometry: dict) -> list:
    if geometry["type"] == "Polygon":
        return [geometry["coordinates"]]
    if geometry["type"] == "MultiPolygon":
        return list(geometry["coordinates"])
    raise ArgumentError(f"not a polygonal geometry: {geometry['type']}")


def geometry_bbox(geometry: dict, *, pole_spans_all: bool = True) -> list[float]:
    """``[west, south, east, north]`` of a footprint whose polygons are split at the antimeridian.

    Longitudes take the smallest circular interval holding every polygon, so a
    footprint across the antimeridian gives ``west > east`` (the STAC
    convention); one touching a pole spans all longitudes unless
    ``pole_spans_all=False``. Raises ``ValueError`` for a non-polygonal geometry.
    """
    spans, south, north = [], 90.0, -90.0
    for poly in _polygons(geometry):
        ring = np.asarray(poly[0], dtype=float)
        spans.append((float(ring[:, 0].min()), float(ring[:, 0].max())))
        south, north = min(south, float(ring[:, 1].min())), max(north, float(ring[:, 1].max()))
    if pole_spans_all and (north >= 90.0 - 1e-9 or south <= -90.0 + 1e-9):
        return [-180.0, south, 180.0, north]
    spans.sort()
    merged = [list(spans[0])]
    for w, e in spans[1:]:
        if w <= merged[-1][1] + 1e-9:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([w, e])
    n = len(merged)
    # gap i runs from merged[i] east to merged[i+1] west; the last one wraps across the antimeridian
    gaps = [((merged[(i + 1) % n][0] + (360.0 if i == n - 1 else 0.0)) - merged[i][1], i) for i in range(n)]
    size, i = max(gaps)
    if size <= 1e-9:
        return [-180.0, south, 180.0, north]
    if i == n - 1:
        return [merged[0][0], south, merged[-1][1], north]
    return [merged[i + 1][0], south, merged[i][1], north]


__all__ = ["cell_quads", "footprint", "footprint_geometry", "geometry_bbox"]
