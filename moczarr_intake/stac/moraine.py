"""STAC Items for moraine raster and point-cloud pyramids (one Item per pyramid, an asset per level).

Raster-extension statistics per band, the projection extension only where the
pyramid is georeferenced; everything from :class:`moczarr.moraine.MorainePyramid`
(metadata only), so building an Item reads no data chunk. See ``docs/moraine.md``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from typing import Any

import numpy as np
import pystac

from moczarr.errors import ArgumentError
from moczarr.moraine import POINT_CLOUD, MorainePyramid, level_name

from .validate import validate_document

#: Media type of the zarr assets, as ``moczarr_intake.stac`` spells it for morton-hive stores;
#: assets add ``; version=2`` or ``; version=3`` (the zarr format of ``0.zarr``).
ZARR_MEDIA_TYPE = "application/vnd+zarr"
RASTER_EXT = "https://stac-extensions.github.io/raster/v1.1.0/schema.json"
PROJECTION_EXT = "https://stac-extensions.github.io/projection/v2.0.0/schema.json"
#: the reader calls a moraine asset's open hint names
OPEN_MORAINE_LEVEL = "moczarr.moraine.open_moraine_level"
OPEN_MORAINE_POINTS = "moczarr.moraine.open_moraine_points"
#: Spherical-mercator (EPSG:3857) sphere radius, metres.
MERCATOR_RADIUS = 6378137.0
#: Largest |x| (and |y|) of EPSG:3857: pi * R.
MERCATOR_LIMIT = math.pi * MERCATOR_RADIUS
#: Coordinates larger than this (in absolute value) are taken for projected metres, not grid indexes.
PROJECTED_THRESHOLD = 1e4
#: ``datetime`` used when neither a value nor the modification time of ``0.zarr`` is available.
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


# --------------------------------------------------------------------------- georeference


def _grid_like(bounds, resolution) -> bool:
    """Bounds of grid indexes: non-negative whole numbers with a whole-number cell size."""
    whole = all(float(v).is_integer() for v in (*bounds, resolution or 0.0))
    return whole and min(bounds) >= 0


def moraine_crs(info: MorainePyramid) -> str | None:
    """``"EPSG:3857"`` when a point cloud's coordinates look like spherical-mercator metres, else ``None``.

    The version-1 contract records no CRS. The rule (documented in ``docs/moraine.md``): a
    point cloud is taken for EPSG:3857 when its grid lies inside the mercator square
    (``|x|, |y| <= pi * 6378137``), some coordinate exceeds ``1e4`` in absolute value,
    and the bounds are not grid indexes (non-negative whole numbers with a whole-number
    cell size). Rasters carry no coordinates at all and are never georeferenced."""
    if info.kind != POINT_CLOUD or info.bounds is None or info.resolution is None:
        return None
    edges = _grid_edges(info, 0)
    if not all(math.isfinite(v) for v in edges) or max(abs(v) for v in edges) > MERCATOR_LIMIT:
        return None
    if max(abs(v) for v in info.bounds) <= PROJECTED_THRESHOLD:
        return None
    if _grid_like(info.bounds, info.resolution):
        return None
    return "EPSG:3857"


def mercator_to_wgs84(x: float, y: float) -> tuple[float, float]:
    """(lon, lat) in degrees of spherical-mercator (EPSG:3857) metres ``(x, y)``."""
    lon = math.degrees(x / MERCATOR_RADIUS)
    lat = math.degrees(math.atan(math.sinh(y / MERCATOR_RADIUS)))
    return lon, lat


def _grid_edges(info: MorainePyramid, level: int) -> list[float]:
    """[xmin, ymin, xmax, ymax] of the cell edges of ``level`` (cells centred at ``x0 + j * cs``)."""
    assert info.bounds is not None and info.resolution is not None  # a point cloud with a cell size
    x0, y0 = info.bounds[0], info.bounds[1]
    cs = info.resolution * 2**level
    h, w = info.shapes[level][0], info.shapes[level][1]
    return [x0 - cs / 2, y0 - cs / 2, x0 + (w - 1) * cs + cs / 2, y0 + (h - 1) * cs + cs / 2]


def _grid_transform(info: MorainePyramid, level: int) -> list[float]:
    """Affine ``[a, b, c, d, e, f]`` from (column, row) cell corners to x, y. Row 0 is the
    smallest y (rows of a moraine grid go with increasing y), so ``e`` is positive."""
    assert info.bounds is not None and info.resolution is not None  # a point cloud with a cell size
    cs = info.resolution * 2**level
    return [cs, 0.0, info.bounds[0] - cs / 2, 0.0, cs, info.bounds[1] - cs / 2]


# --------------------------------------------------------------------------- statistics


def _raster_data_type(dtype: str) -> str:
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return {8: "cfloat32", 16: "cfloat64"}.get(dt.itemsize, "other")
    if dt.kind in "iuf" and dt.name in {
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    }:
        return dt.name
    return "other"


def _finite(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


_STAT_FIELDS = {"min": "minimum", "max": "maximum", "mean": "mean", "std": "stddev"}
_PERCENTILES = ("p01", "p50", "p99")


def _band_stats(stats: dict) -> dict:
    """The raster-extension fields of one band from a moraine stats record (marker or stats.zarr row).

    ``statistics``: minimum, maximum, mean, stddev and ``valid_percent = 100 * (1 - nan_fraction)``;
    ``moraine:percentiles``: p01, p50, p99 (raster:statistics has no slot for them); complex data
    (``amplitude_*`` names) adds ``moraine:statistics_of: "amplitude"``; boolean data (only
    ``true_fraction``) gets ``moraine:true_fraction`` and no ``statistics``. Missing (NaN) values
    are left out."""
    out: dict[str, Any] = {}
    amplitude = any(k.startswith("amplitude_") for k in stats)

    def get(name):
        return _finite(stats.get(f"amplitude_{name}", stats.get(name)))

    statistics = {}
    for src, dst in _STAT_FIELDS.items():
        v = get(src)
        if v is not None:
            statistics[dst] = v
    nan_fraction = _finite(stats.get("nan_fraction"))
    if nan_fraction is not None:
        statistics["valid_percent"] = 100.0 * (1.0 - nan_fraction)
    if statistics:
        out["statistics"] = statistics
    percentiles = {p: get(p) for p in _PERCENTILES if get(p) is not None}
    if percentiles:
        out["moraine:percentiles"] = percentiles
    if amplitude:
        out["moraine:statistics_of"] = "amplitude"
    true_fraction = _finite(stats.get("true_fraction"))
    if true_fraction is not None:
        out["moraine:true_fraction"] = true_fraction
    return out


def _channel_indexes(channels: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [tuple(int(i) for i in idx) for idx in np.ndindex(*channels)] if channels else [()]


def _channel_record(channel_stats: dict, idx: tuple[int, ...]) -> dict:
    """Row ``idx`` of ``stats.zarr`` (as :attr:`MorainePyramid.channel_stats` holds it)."""
    out = {}
    for column, values in channel_stats.items():
        v = values
        for i in idx:
            v = v[i] if isinstance(v, list) else v
        out[column] = v
    return out


def _bands(info: MorainePyramid, channels: tuple[int, ...], dtype: str, *, with_stats: bool) -> list[dict]:
    """One raster band per channel (row-major over the channel dims)."""
    kind = np.dtype(dtype).kind
    bands = []
    indexes = _channel_indexes(channels)
    for idx in indexes:
        band: dict[str, Any] = {"data_type": _raster_data_type(dtype)}
        if kind in "fc":
            band["nodata"] = "nan"
        if idx:
            band["moraine:channel"] = list(idx)
        if with_stats:
            if info.channel_stats is not None:
                band.update(_band_stats(_channel_record(info.channel_stats, idx)))
            elif info.stats is not None and len(indexes) == 1:
                band.update(_band_stats(info.stats))
        bands.append(band)
    return bands


# --------------------------------------------------------------------------- STAC item


def pyramid_name(info: MorainePyramid) -> str:
    return info.path.rstrip("/").rsplit("/", 1)[-1] or "moraine"


#: marker (or level metadata) keys that may record when a pyramid's data was taken, first found wins
TIME_KEYS = ("datetime", "acquired", "start_datetime", "time")


def _recorded_time(info: MorainePyramid) -> tuple[_dt.datetime | None, str | None]:
    """A time the pyramid's metadata records (:data:`TIME_KEYS` among its marker attributes), with its key."""
    attrs = info.to_attrs()
    for key in TIME_KEYS:
        value = attrs.get(key)
        if isinstance(value, str):
            try:
                when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            return (when if when.tzinfo else when.replace(tzinfo=_dt.UTC)), key
    return None, None


def _media_type(info: MorainePyramid) -> str:
    return f"{ZARR_MEDIA_TYPE}; version={info.zarr_format}"


def _level_asset(info: MorainePyramid, level: int, href: str, crs: str | None) -> pystac.Asset:
    shape = info.shapes[level]
    dtype = info.dtypes[level]
    what = "grid of the points" if info.kind == POINT_CLOUD else "raster"
    title = f"level {level}: {what}, {' x '.join(map(str, shape))} {dtype}" + (
        "" if level == 0 else f" (1/{2**level}, {info.method})"
    )
    extra: dict[str, Any] = {
        "moraine:level": level,
        "moraine:factor": 2**level,
        "moraine:shape": list(shape),
        "moraine:dtype": dtype,
        "raster:bands": _bands(info, tuple(shape[2:]), dtype, with_stats=level == 0 and info.kind != POINT_CLOUD),
    }
    if info.kind == POINT_CLOUD:
        extra["moraine:cell_size"] = info.cell_size(level)
        if np.dtype(dtype).kind not in "fc":
            extra["moraine:empty_cells"] = "not marked in the grid (legacy integer grid); idx == -1"
    if crs is not None:
        extra["proj:shape"] = [int(shape[0]), int(shape[1])]
        extra["proj:transform"] = _grid_transform(info, level)
        extra["proj:bbox"] = _grid_edges(info, level)
    roles = ["data"] if level == 0 else ["data", "overview"]
    return pystac.Asset(href=href, media_type=_media_type(info), title=title, roles=roles, extra_fields=extra)


def moraine_stac_item(
    info: MorainePyramid,
    *,
    href_base: str | None = None,
    storage_options: dict | None = None,
    datetime: _dt.datetime | None = None,
    crs: str | None = "auto",
) -> pystac.Item:
    """A STAC Item describing one pyramid (see ``docs/moraine.md`` for the full mapping).

    ``href_base`` replaces the pyramid's location in the asset hrefs (``{href_base}/0.zarr``;
    default :attr:`MorainePyramid.path`). ``datetime`` defaults to a time the pyramid's marker
    records (:data:`TIME_KEYS`), else the placeholder 1970-01-01T00:00:00Z (never a file's
    modification time, which changes with a copy); ``moraine:datetime_source`` says which.
    Each level asset carries a ``moczarr:open`` hint (``open_moraine_level``), the points asset
    one for ``open_moraine_points``: :func:`moczarr_intake.open_stac` follows them.
    ``crs``: ``"auto"`` (:func:`moraine_crs`), ``"EPSG:3857"`` to declare a point cloud's
    coordinates spherical-mercator metres, or ``None`` for no geographic reference.
    Raises :class:`moczarr.errors.ArgumentError` for a ``crs`` the pyramid cannot be in."""
    crs = _checked_crs(info, crs)
    base = (href_base if href_base is not None else info.path).rstrip("/")
    when, when_source = _item_time(info, datetime)
    props = _properties(info, when_source)
    geometry, bbox, extensions = _georeference(info, crs, props)
    item = pystac.Item(
        id=pyramid_name(info),
        geometry=geometry,
        bbox=bbox,
        datetime=when,
        properties=props,
        stac_extensions=extensions,
    )
    for level in info.levels:
        asset = _level_asset(info, level, f"{base}/{level}.zarr", crs)
        asset.extra_fields["moczarr:open"] = {"function": OPEN_MORAINE_LEVEL, "kwargs": {"path": base, "level": level}}
        item.add_asset(level_name(level), asset)
    if info.kind == POINT_CLOUD:
        _add_point_assets(item, info, base, crs)
    if info.channel_stats is not None:
        item.add_asset(
            "stats", _zarr_asset(info, f"{base}/stats.zarr", "per-channel statistics (stats.zarr)", "metadata")
        )
    return item


def _checked_crs(info: MorainePyramid, crs: str | None) -> str | None:
    """The CRS an Item declares: :func:`moraine_crs` for ``"auto"``, else ``crs`` when the pyramid can be in it."""
    if crs == "auto":
        return moraine_crs(info)
    if crs is not None:
        if crs != "EPSG:3857":
            raise ArgumentError(f"crs must be 'auto', 'EPSG:3857' or None, got {crs!r}")
        if info.kind != POINT_CLOUD:
            raise ArgumentError(f"{info.path}: a raster pyramid has no coordinates, so it cannot be in {crs}")
        assert info.bounds is not None  # read_moraine_info requires a point cloud's bounds.toml
        if info.resolution is None or max(abs(v) for v in _grid_edges(info, 0)) > MERCATOR_LIMIT:
            raise ArgumentError(
                f"{info.path}: bounds {list(info.bounds)} do not fit in {crs} (|x|, |y| <= {MERCATOR_LIMIT})"
            )
    return crs


def _item_time(info: MorainePyramid, given: _dt.datetime | None) -> tuple[_dt.datetime, str]:
    """``(datetime, moraine:datetime_source)``: the given time, else a recorded one, else the stated placeholder."""
    if given is not None:
        return (given if given.tzinfo else given.replace(tzinfo=_dt.UTC)), "given"
    when, key = _recorded_time(info)
    if when is not None:
        return when, f"recorded: marker {key}"
    return EPOCH, "placeholder: the pyramid records no time (neither its marker nor its level metadata)"


def _properties(info: MorainePyramid, when_source: str) -> dict[str, Any]:
    """The Item's ``moraine:*`` properties, title and description (no geographic reference yet)."""
    origin = f"contract version {info.version}" if not info.legacy else "legacy (made before the marker)"
    method = info.method + ("" if info.method_declared else " (default; not recorded)")
    props: dict[str, Any] = {
        "title": f"moraine {info.kind} pyramid {pyramid_name(info)}",
        "description": (
            f"moraine {info.kind} pyramid, {origin}: {info.n_levels} levels, level 0 "
            f"{' x '.join(map(str, info.shapes[0]))} {info.dtype}, method {method}"
        ),
        "moraine:kind": info.kind,
        "moraine:version": info.version,
        "moraine:legacy": info.legacy,
        "moraine:method": info.method,
        "moraine:method_declared": info.method_declared,
        "moraine:n_levels": info.n_levels,
        "moraine:shapes": [list(s) for s in info.shapes],
        "moraine:dtype": info.dtype,
        "moraine:zarr_format": info.zarr_format,
        "moraine:channel_dims": list(info.channel_dims),
        "moraine:datetime_source": when_source,
    }
    if info.stats is not None:
        props["moraine:stats"] = info.stats
    if info.kind == POINT_CLOUD:
        assert info.bounds is not None  # read_moraine_info requires a point cloud's bounds.toml
        props["moraine:bounds"] = list(info.bounds)
        props["moraine:resolution"] = info.resolution
        props["moraine:n_points"] = info.n_points
        props["moraine:point_dtype"] = info.point_dtype
        props["moraine:has_rtree"] = info.has_rtree
    return props


def _georeference(info: MorainePyramid, crs: str | None, props: dict) -> tuple[dict | None, list | None, list[str]]:
    """``(geometry, bbox, stac_extensions)``; adds the projection (or the no-reference) properties to ``props``."""
    if crs is None:
        props["moraine:georeferenced"] = False
        props["moraine:coordinates"] = (
            "grid or radar coordinates: the pyramid has no geographic reference, so the Item has no geometry"
            if info.kind == POINT_CLOUD
            else "pixel (radar) coordinates: the raster carries no coordinates and no geographic reference, "
            "so the Item has no geometry"
        )
        return None, None, [RASTER_EXT]
    props["moraine:georeferenced"] = True
    props["proj:code"] = crs
    edges = _grid_edges(info, 0)
    props["proj:bbox"] = edges
    west, south = mercator_to_wgs84(edges[0], edges[1])
    east, north = mercator_to_wgs84(edges[2], edges[3])
    geometry = {
        "type": "Polygon",
        "coordinates": [[[west, south], [east, south], [east, north], [west, north], [west, south]]],
    }
    return geometry, [west, south, east, north], [RASTER_EXT, PROJECTION_EXT]


def _add_point_assets(item: pystac.Item, info: MorainePyramid, base: str, crs: str | None) -> None:
    """A point cloud's ``points``, ``x`` and ``y`` assets (when ``pc.zarr`` is there), per-level index and rtree."""
    if info.n_points is not None:  # n_points is None when pc.zarr is missing
        unit = "EPSG:3857 metres" if crs else "grid units"
        points_extra: dict[str, Any] = {"moraine:n_points": info.n_points, "moraine:dtype": info.point_dtype}
        if info.point_dtype is not None:
            points_extra["raster:bands"] = _bands(info, tuple(info.shapes[0][2:]), info.point_dtype, with_stats=True)
        item.add_asset(
            "points",
            pystac.Asset(
                href=f"{base}/pc.zarr",
                media_type=_media_type(info),
                title=f"the {info.n_points} points (pc.zarr); the statistics describe all the points",
                roles=["data"],
                extra_fields={
                    **points_extra,
                    "moczarr:open": {"function": OPEN_MORAINE_POINTS, "kwargs": {"path": base}},
                },
            ),
        )
        for axis in ("x", "y"):
            item.add_asset(
                axis, _zarr_asset(info, f"{base}/{axis}.zarr", f"{axis} coordinates of the points ({unit})", "data")
            )
    for level in info.levels:
        title = f"level {level}: index of the point shown in each cell (-1: empty)"
        asset = _zarr_asset(info, f"{base}/idx_{level}.zarr", title, "metadata")
        asset.extra_fields["moraine:level"] = level
        item.add_asset(f"idx_{level_name(level)}", asset)
    if info.has_rtree:
        item.add_asset(
            "rtree",
            _zarr_asset(info, f"{base}/rtree.zarr", "bounding-box tree of the points (rtree.zarr)", "metadata"),
        )


def _zarr_asset(info: MorainePyramid, href: str, title: str, role: str) -> pystac.Asset:
    """A sibling zarr array of the pyramid as an asset of one role."""
    return pystac.Asset(href=href, media_type=_media_type(info), title=title, roles=[role])


# --------------------------------------------------------------------------- validation


def validate_item(item: pystac.Item) -> list[str]:
    """Validate ``item`` offline against STAC core and every extension it declares; return the
    schema URIs checked.

    This is :func:`moczarr_intake.stac.validate_document` (the catalog's one offline validator):
    STAC core from the 1.1.0 schemas pystac bundles, extensions from the offline copies in
    :func:`moczarr_intake.stac.schema_dir` (``moczarr_intake.stac.SCHEMA_DIR``, else
    ``$MOCZARR_STAC_SCHEMAS``, else the copies bundled in ``moczarr_intake/stac/schemas``).
    A declared extension (or a ``$ref``) without
    a local schema raises :class:`MissingSchemaError`; nothing is fetched. An invalid Item raises
    :class:`pystac.errors.STACValidationError` with the jsonschema errors as ``source``."""
    doc = json.loads(json.dumps(item.to_dict(include_self_link=False, transform_hrefs=False)))
    return validate_document(doc, where=f"moraine Item {item.id!r}")
