"""Places: every spelling of an area of interest, normalized to the cover the selection arithmetic uses.

An ``aoi=`` argument may be

- morton ids: a decimal string (``"4331421"``), a packed ``uint64`` word, or a
  list / 1-D array of either (mixed orders allowed), or a ``mortie.Moc`` (any
  object with ``__morton_moc__``);
- a lon/lat box, :class:`BBox` ``(west, south, east, north)`` in degrees
  (``west > east`` crosses the antimeridian; a box may touch a pole);
- a disc, :class:`Circle` ``(lon, lat, radius_m)``: every point within
  ``radius_m`` metres (great-circle distance) of the centre;
- a shapely geometry, a GeoJSON mapping (a geometry, ``Feature`` or
  ``FeatureCollection``) or WKT text (``"POLYGON ((...))"``), in lon/lat
  degrees with straight lon/lat edges (RFC 7946).

**Semantics: meets.** A row is selected when its cell (at the level's cell
order) *meets* the place: shares any point with it, not only when it lies
inside. For ids that is "one contains the other"; for a geometry it is
mortie's cover at the cell order (every cell the boundary crosses plus every
cell whose centre is inside). A cell that only touches the place along a line
or at a point (no area in common, e.g. a box edge exactly on a cell edge) may
or may not be selected. ``aoi=[]`` (or an empty
geometry) is the empty place: it selects no row, and the openers return the
schema with 0 rows and an :class:`~moczarr.errors.EmptySelectionWarning`.
``aoi=None`` means no AOI (every row).

Every argument is checked here, before mortie or zarr sees it; anything else
raises :class:`~moczarr.errors.AOIError` naming the argument.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

import mortie
import numpy as np

from .. import ids
from ..errors import AOIError
from ..ids import canonical_words

#: Earth's mean radius (IUGG), the sphere on which a :class:`Circle` is measured.
EARTH_RADIUS_M = 6_371_008.8
#: Half-width (degrees, about a centimetre) of the sliver polygon a line is covered as.
LINE_WIDTH_DEG = 1e-7
#: The finest order mortie's coverers reach.
MAX_ORDER = 29
#: A decimal id is at most sign + base digit + 29 order digits (+ the point marker).
_WKT_RE = re.compile(
    r"^\s*(SRID=\d+;\s*)?(POINT|MULTIPOINT|LINESTRING|MULTILINESTRING|POLYGON|MULTIPOLYGON|GEOMETRYCOLLECTION)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class BBox:
    """A lon/lat box in degrees: ``west, south, east, north`` (GeoJSON/STAC bbox order).

    ``west > east`` crosses the antimeridian; ``west=-180, east=180`` spans
    every longitude; longitudes above 180 (mortie's 0..360) are taken modulo
    360. Latitudes run ``-90 <= south < north <= 90``. Raises
    :class:`~moczarr.errors.AOIError` for anything else.
    """

    west: float
    south: float
    east: float
    north: float

    def __post_init__(self):
        vals = []
        for name in ("west", "south", "east", "north"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise AOIError(f"BBox {name}={v!r} must be a finite number of degrees")
            vals.append(float(v))
            object.__setattr__(self, name, float(v))
        west, south, east, north = vals
        if not (-180 <= west <= 360 and -180 <= east <= 360):
            raise AOIError(f"BBox longitudes west={west}, east={east} must lie in [-180, 180] (or mortie's 0..360)")
        if east - west == 360:
            west, east = -180.0, 180.0
        else:
            west, east = (
                (west - 360 if west > 180 else west) + 0.0,
                (east - 360 if east > 180 else east) + 0.0,
            )  # -0.0 -> 0.0
        object.__setattr__(self, "west", west)
        object.__setattr__(self, "east", east)
        if not (-90 <= south < north <= 90):
            raise AOIError(f"BBox latitudes must satisfy -90 <= south < north <= 90, got south={south}, north={north}")
        if west == east:
            raise AOIError(f"BBox west == east == {west} spans no longitude (use -180, 180 for every longitude)")

    @property
    def crosses_antimeridian(self) -> bool:
        return self.west > self.east

    @property
    def width(self) -> float:
        """Longitude span in degrees (0 < width <= 360)."""
        return (self.east - self.west) % 360 or 360.0

    def swapped(self) -> BBox | None:
        """This box with longitude and latitude exchanged (a box typed in lat/lon order, read as meant), or
        None when that is no valid box."""
        try:
            return BBox(self.south, self.west, self.north, self.east)
        except AOIError:
            return None

    def __str__(self) -> str:
        return f"BBox({self.west:g}, {self.south:g}, {self.east:g}, {self.north:g})"


@dataclass(frozen=True)
class Circle:
    """Every point within ``radius_m`` metres (great-circle distance on the mean sphere) of ``lon, lat``.

    Raises :class:`~moczarr.errors.AOIError` for a non-finite or out-of-range
    centre or a radius outside ``(0, half the Earth's circumference)``.
    """

    lon: float
    lat: float
    radius_m: float

    def __post_init__(self):
        for name in ("lon", "lat", "radius_m"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise AOIError(f"Circle {name}={v!r} must be a finite number")
            object.__setattr__(self, name, float(v))
        if not -180 <= self.lon <= 180 or not -90 <= self.lat <= 90:
            raise AOIError(f"Circle centre ({self.lon}, {self.lat}) is outside lon [-180, 180], lat [-90, 90]")
        if not 0 < self.radius_m < math.pi * EARTH_RADIUS_M:
            raise AOIError(f"Circle radius_m={self.radius_m} must be in (0, {math.pi * EARTH_RADIUS_M:.0f}) metres")


@dataclass(frozen=True)
class Place:
    """A checked AOI: ``words`` (morton ids, validated) or ``geometry`` (a shape in lon/lat), never both.

    Built by :func:`as_place`; :meth:`cover` gives the cover at a cell order.
    """

    words: np.ndarray | None = None
    geometry: Any = None  # BBox | Circle | shapely geometry
    text: str = ""

    @property
    def is_empty(self) -> bool:
        if self.words is not None:
            return self.words.size == 0
        return not isinstance(self.geometry, (BBox, Circle)) and bool(self.geometry.is_empty)

    def cover(self, cell_order: int | None) -> np.ndarray:
        """The place as compact MOC words meeting exactly the cells (at ``cell_order``) the place meets."""
        if self.words is not None:
            return np.asarray(mortie.compress_moc(self.words), dtype=np.uint64) if self.words.size else self.words
        if (
            isinstance(cell_order, bool)
            or not isinstance(cell_order, (int, np.integer))
            or not 0 <= cell_order <= MAX_ORDER
        ):
            raise AOIError(f"a geometry AOI needs a cell order in 0..{MAX_ORDER}, got {cell_order!r}")
        return _geometry_cover(self.geometry, int(cell_order), self.text)


def as_place(aoi, argument: str = "aoi") -> Place | None:
    """Check an AOI argument once, whatever its spelling; None for ``aoi=None`` (no AOI).

    A :class:`Place` passes through. Raises :class:`~moczarr.errors.AOIError`
    naming ``argument`` and what is wrong: a bare float, bytes, a tuple of
    numbers (spell a box ``moczarr.BBox(...)``), nested lists, a word that is
    not a canonical packed morton word (zero, out of range, body bits below
    its order, more than 64 bits), a string that is neither a decimal id nor
    WKT, unparsable WKT or GeoJSON.
    """
    if aoi is None or isinstance(aoi, Place):
        return aoi
    if isinstance(aoi, (BBox, Circle)):
        return Place(geometry=aoi, text=str(aoi))
    if isinstance(aoi, mortie.Moc) or hasattr(aoi, "__morton_moc__"):
        return Place(
            words=ids.to_words(np.asarray(aoi.__morton_moc__(), dtype=np.uint64), argument=argument),
            text=f"{argument}=<Moc>",
        )
    shapely_geom = _shapely_geometry(aoi, argument)
    if shapely_geom is not None:
        return Place(geometry=shapely_geom, text=f"{argument}={_short(aoi)}")
    return Place(words=_ids(aoi, argument), text=f"{argument}={_short(aoi)}")


def aoi_cover(aoi, cell_order: int | None, argument: str = "aoi") -> np.ndarray | None:
    """The one normalization of an AOI: compact MOC words to intersect with at ``cell_order``; None for no AOI.

    The cover selects exactly the cells at ``cell_order`` that meet the place
    (see the module docstring); a shard is a candidate exactly when it holds
    such a cell, so the same words decide shards and rows. Raises
    :class:`~moczarr.errors.AOIError` (see :func:`as_place`).
    """
    place = as_place(aoi, argument)
    return None if place is None else place.cover(cell_order)


# -- ids -------------------------------------------------------------------------------------------
def _short(obj) -> str:
    text = repr(obj)
    return text if len(text) <= 80 else text[:77] + "..."


def _ids(aoi, argument: str) -> np.ndarray:
    """Morton ids of every accepted id spelling, checked element by element."""
    if isinstance(aoi, bool):
        raise AOIError(f"{argument}={aoi!r}: a bool is not an AOI")
    if isinstance(aoi, (float, np.floating)):
        raise AOIError(f"{argument}={aoi!r}: a float is not a morton id (decimal ids are strings, e.g. '4331421')")
    if isinstance(aoi, (bytes, bytearray, memoryview)):
        raise AOIError(f"{argument}={_short(aoi)}: bytes are not an AOI; pass decimal ids as str")
    if isinstance(aoi, str):
        return ids.to_words(aoi, argument=argument)
    if isinstance(aoi, (int, np.integer)):
        return ids.to_words(aoi, argument=argument)
    if (
        isinstance(aoi, tuple)
        and len(aoi) in (3, 4)
        and all(isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) for x in aoi)
    ):
        spelled = "BBox(west, south, east, north)" if len(aoi) == 4 else "Circle(lon, lat, radius_m)"
        raise AOIError(
            f"{argument}={_short(aoi)}: a tuple of numbers is ambiguous (ids or coordinates?); "
            f"spell a lon/lat place moczarr.{spelled}, and morton ids as decimal strings"
        )
    if isinstance(aoi, np.ndarray):
        if aoi.ndim != 1:
            raise AOIError(f"{argument}: a {aoi.ndim}-D array is not a list of morton ids (want 1-D)")
        if aoi.dtype.kind in "ui":
            return ids.to_words(aoi, argument=argument)
        if aoi.dtype.kind in "OU":
            items = list(aoi)
        else:
            raise AOIError(f"{argument}: an array of dtype {aoi.dtype} holds no morton ids (want uint64 words or str)")
    elif isinstance(aoi, (list, tuple, set, frozenset)) or (hasattr(aoi, "__iter__") and not isinstance(aoi, dict)):
        items = list(aoi)
    else:
        raise AOIError(
            f"{argument}={_short(aoi)}: not an AOI (morton ids, a mortie.Moc, moczarr.BBox, moczarr.Circle, "
            "a shapely geometry, GeoJSON or WKT)"
        )
    for i, item in enumerate(items):
        if isinstance(item, str) or (isinstance(item, (int, np.integer)) and not isinstance(item, bool)):
            continue
        if isinstance(item, (list, tuple, np.ndarray, set)):
            raise AOIError(f"{argument}[{i}]={_short(item)}: nested lists are not morton ids (pass one flat list)")
        else:
            raise AOIError(
                f"{argument}[{i}]={_short(item)}: a {type(item).__name__} is not a morton id "
                "(decimal string or packed word)"
            )
    return ids.to_words(items, argument=argument)


# -- geometry --------------------------------------------------------------------------------------
def _shapely_geometry(aoi, argument: str):
    """A shapely geometry from a geometry, a GeoJSON mapping, a ``__geo_interface__`` or WKT; else None."""
    import shapely
    from shapely.geometry import shape

    if isinstance(aoi, shapely.Geometry):
        return _checked_lonlat(aoi, argument)
    if isinstance(aoi, str):
        if not _WKT_RE.match(aoi):
            return None
        text = aoi.split(";", 1)[1] if aoi.lstrip().upper().startswith("SRID=") else aoi
        try:
            geom = shapely.from_wkt(text)
        except shapely.errors.ShapelyError as exc:
            raise AOIError(f"{argument}: unparsable WKT {_short(aoi)}: {exc}") from None
        return _checked_lonlat(geom, argument)
    if isinstance(aoi, dict) or (hasattr(aoi, "__geo_interface__") and not isinstance(aoi, (list, tuple, np.ndarray))):
        mapping = aoi if isinstance(aoi, dict) else aoi.__geo_interface__
        return _checked_lonlat(_geojson(mapping, argument, shape), argument)
    return None


def _geojson(mapping, argument: str, shape):
    import shapely

    if not isinstance(mapping, dict):
        raise AOIError(f"{argument}: __geo_interface__ gave {type(mapping).__name__}, not a GeoJSON mapping")
    kind = mapping.get("type")
    try:
        if kind == "Feature":
            if mapping.get("geometry") is None:
                return shapely.GeometryCollection()
            return shape(mapping["geometry"])
        if kind == "FeatureCollection":
            feats = mapping.get("features")
            if not isinstance(feats, list):
                raise AOIError(f"{argument}: a FeatureCollection needs a 'features' list")
            parts = [shape(f["geometry"]) for f in feats if isinstance(f, dict) and f.get("geometry") is not None]
            return shapely.GeometryCollection(parts)
        return shape(mapping)
    except AOIError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, shapely.errors.ShapelyError) as exc:
        raise AOIError(
            f"{argument}: not a GeoJSON geometry, Feature or FeatureCollection ({type(exc).__name__}: {exc})"
        ) from None


def _checked_lonlat(geom, argument: str):
    import shapely

    if geom.is_empty:
        return geom
    coords = shapely.get_coordinates(geom)
    if not np.isfinite(coords).all():
        raise AOIError(f"{argument}: the geometry has non-finite coordinates")
    lon, lat = coords[:, 0], coords[:, 1]
    if (lon < -180).any() or (lon > 360).any() or (np.abs(lat) > 90).any():
        raise AOIError(
            f"{argument}: the geometry has coordinates outside lon [-180, 360], lat [-90, 90] "
            "(want lon/lat degrees, x = lon first)"
        )
    return geom


def edge_step_deg(cell_order: int) -> float:
    """Vertex spacing (degrees) at which a great-circle chord stays within 1% of a cell of the straight lon/lat edge.

    mortie's coverer joins vertices by great circles; a lon/lat edge (a
    parallel, or any GeoJSON straight edge) is traced by vertices this close,
    so the chord's bow (``step**2 / 8`` radians at worst) is far below a cell.
    """
    res_rad = mortie.order2res(max(cell_order, 1)) * 1000.0 / EARTH_RADIUS_M  # order2res is in km
    return float(min(0.5, max(1e-4, math.degrees(math.sqrt(0.08 * res_rad)))))


def _geometry_cover(geom, cell_order: int, text: str) -> np.ndarray:
    order = max(cell_order, 1)  # mortie covers from order 1; aoi_ranges clips to coarser levels
    try:
        if isinstance(geom, BBox):
            parts = [_cover_rings(bbox_rings(geom, edge_step_deg(order)), order)]
        elif isinstance(geom, Circle):
            parts = [_cover_rings([circle_ring(geom, order)], order)]
        else:
            parts = _shapely_covers(geom, order)
    except ValueError as exc:  # mortie refused the rings: name the place, never let its message stand alone
        raise AOIError(f"{text}: the geometry cannot be covered at order {order} ({exc})") from None
    parts = [p for p in parts if p.size]
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return np.asarray(mortie.compress_moc(np.concatenate(parts)), dtype=np.uint64)


def _cover_rings(rings: list[tuple[np.ndarray, np.ndarray]], order: int) -> np.ndarray:
    """The union of the MOC covers of counter-clockwise rings (winding taken as authored)."""
    lats = np.concatenate([r[0] for r in rings]).astype(np.float64)
    lons = np.concatenate([r[1] for r in rings]).astype(np.float64)
    offsets = np.concatenate([[0], np.cumsum([r[0].size for r in rings])]).astype(np.int64)
    values, _ = mortie.polygons_to_morton_mocs(lats, lons, offsets, order=order, normalize=False)
    return np.asarray(values, dtype=np.uint64)


def bbox_rings(box: BBox, step: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The box as counter-clockwise ``(lats, lons)`` rings (interior on the left), at most 90 degrees wide each.

    Parallels and meridians are traced with vertices ``step`` degrees apart;
    a pole the box touches is one vertex. Tiles of at most 90 degrees keep
    every ring well inside a hemisphere.
    """
    width = box.width
    n_tiles = max(1, math.ceil(width / 90.0))
    edges = np.linspace(box.west, box.west + width, n_tiles + 1)
    rings = []
    for w, e in itertools.pairwise(edges):
        nx = max(2, math.ceil((e - w) / step) + 1)
        ny = max(2, math.ceil((box.north - box.south) / step) + 1)
        xs = np.linspace(w, e, nx)
        ys = np.linspace(box.south, box.north, ny)
        south = [(box.south, x) for x in xs] if box.south > -90 else [(-90.0, w)]
        east = [(y, e) for y in ys[1:-1]]
        north = [(box.north, x) for x in xs[::-1]] if box.north < 90 else [(90.0, e)]
        west = [(y, w) for y in ys[-2:0:-1]]
        pts = south + east + north + west
        lats = np.array([p[0] for p in pts])
        lons = (np.array([p[1] for p in pts]) + 180.0) % 360.0 - 180.0
        lons[np.isclose(lons, -180.0) & (np.array([p[1] for p in pts]) > 0)] = 180.0
        rings.append((lats, lons))
    return rings


def circle_ring(c: Circle, order: int) -> tuple[np.ndarray, np.ndarray]:
    """A counter-clockwise polygon circumscribing the disc: its great-circle edges are tangent to the circle.

    The polygon's edges (great-circle chords) then stay outside the circle,
    so no cell the disc meets is missed; the overshoot is at most
    ``radius * (1/cos(pi/n) - 1)``, kept below a cell by the vertex count.
    """
    delta = c.radius_m / EARTH_RADIUS_M
    res = mortie.order2res(order) * 1000.0 / EARTH_RADIUS_M
    n = int(min(4096, max(32, math.ceil(math.pi / math.sqrt(max(2 * res / max(delta, res), 1e-12))))))
    # a chord between vertices at distance d passes the centre at atan(tan(d) cos(pi/n)): make that the radius
    d = (
        math.atan(math.tan(delta) / math.cos(math.pi / n))
        if delta < math.pi / 2 - 1e-6
        else delta / math.cos(math.pi / n)
    )
    d = min(d, math.pi - 1e-9)
    bearings = -np.linspace(0.0, 2 * math.pi, n, endpoint=False)  # counter-clockwise seen from outside
    phi1, lam1 = math.radians(c.lat), math.radians(c.lon)
    sin_phi = math.sin(phi1) * math.cos(d) + math.cos(phi1) * math.sin(d) * np.cos(bearings)
    phi2 = np.arcsin(np.clip(sin_phi, -1, 1))
    lam2 = lam1 + np.arctan2(np.sin(bearings) * math.sin(d) * math.cos(phi1), math.cos(d) - math.sin(phi1) * sin_phi)
    lons = (np.degrees(lam2) + 180.0) % 360.0 - 180.0
    return np.degrees(phi2), lons


def _shapely_covers(geom, order: int) -> list[np.ndarray]:
    """Covers of a shapely geometry's parts: polygons and lines traced along lon/lat edges, points by their cell."""
    import shapely

    if geom.is_empty:
        return []
    kind = geom.geom_type
    if kind in ("GeometryCollection", "MultiPoint") or (kind.startswith("Multi") and kind != "MultiPolygon"):
        return [c for part in shapely.get_parts(geom) for c in _shapely_covers(part, order)]
    if kind == "Point":
        # the longitude in [0, 360): mortie's cell of a point on a polar base cell's meridian depends on its spelling
        word = mortie.geo2mort(geom.y, np.mod(geom.x, 360.0), order=order)
        return [np.atleast_1d(np.asarray(word, dtype=np.uint64))]
    dense = shapely.segmentize(geom, edge_step_deg(order))
    if kind in ("Polygon", "MultiPolygon"):
        return [np.asarray(mortie.from_geometry(dense, order=order, moc=True), dtype=np.uint64)]
    if kind in ("LineString", "LinearRing"):
        if geom.length == 0:
            return _shapely_covers(shapely.Point(geom.coords[0]), order)
        # mortie's line tracer samples the arc at half a cell and can step over a corner it grazes;
        # a sliver polygon LINE_WIDTH_DEG wide around the line is covered exactly (every cell it meets)
        sliver = shapely.segmentize(geom.buffer(LINE_WIDTH_DEG, quad_segs=1), edge_step_deg(order))
        return [np.asarray(mortie.from_geometry(sliver, order=order, moc=True), dtype=np.uint64)]
    raise AOIError(f"a {kind} is not a geometry an AOI can be")


__all__ = ["EARTH_RADIUS_M", "BBox", "Circle", "Place", "aoi_cover", "as_place", "canonical_words"]
