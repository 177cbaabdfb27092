"""Recognise a moraine pyramid and describe it from its metadata: marker, kind, method, levels, bounds, stats.

Version 1 marks ``0.zarr`` with the attribute :data:`MARKER`; older pyramids
have no marker and are recognised by ``1.zarr`` being half the size of
``0.zarr`` (rounded up). A directory with ``bounds.toml`` is a point-cloud
pyramid. Nothing here reads a data chunk but ``stats.zarr``'s, a derived
object left out with an :class:`~moczarr.errors.ObjectDroppedWarning` when it
cannot be interpreted.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    ChunkError,
    MoczarrError,
    ObjectDroppedWarning,
    PyramidError,
    UnsupportedVersionError,
    warn,
)
from .location import Location


class NotAMorainePyramidError(PyramidError):
    """The directory is neither a marked (version >= 1) nor a legacy moraine pyramid."""


class MoraineLevelError(ArgumentError, IndexError):
    """A ``level=`` argument outside the levels a pyramid has (also an ``IndexError``)."""


#: Highest ``moraine_pyramid.version`` this reader understands.
SUPPORTED_VERSION = 1
#: Name of the attribute of ``0.zarr`` that marks a version >= 1 pyramid.
MARKER = "moraine_pyramid"
RASTER = "raster"
POINT_CLOUD = "point cloud"
#: The columns ``stats.zarr`` is documented to hold (its ``columns`` attribute is authoritative).
STATS_COLUMNS = ("nan_fraction", "min", "max", "mean", "std", "p01", "p50", "p99")

_METHODS = {RASTER: ("decimate", "mean"), POINT_CLOUD: ("first", "mean")}
_DEFAULT_METHOD = {RASTER: "decimate", POINT_CLOUD: "first"}


def level_name(level: int) -> str:
    """Name of the DataTree child holding ``level`` (``"l0"``, ``"l1"``, ...)."""
    return f"l{int(level)}"


def jsonable(value: Any) -> Any:
    """``value`` made JSON friendly: python scalars, lists, dicts; NaN and inf become None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


def _expected_n_levels(shape0: tuple[int, ...]) -> int:
    """Number of levels the contract gives a level 0 of ``shape0``: ``floor(log2(min)) + 1``."""
    m = min(int(shape0[0]), int(shape0[1]))
    return max(m, 1).bit_length()  # floor(log2(m)) + 1 without float rounding


def _level_shape(shape0: tuple[int, ...], level: int) -> tuple[int, ...]:
    f = 2**level
    return (-(-int(shape0[0]) // f), -(-int(shape0[1]) // f), *(int(n) for n in shape0[2:]))


def channel_dim_names(n: int) -> tuple[str, ...]:
    """Names of the ``n`` dims an array has past ``y`` and ``x`` (``channel``, or ``channel_0``, ``channel_1``, ...)."""
    if n == 0:
        return ()
    if n == 1:
        return ("channel",)
    return tuple(f"channel_{k}" for k in range(n))


def _is_half(shape0: tuple[int, ...], shape1: tuple[int, ...]) -> bool:
    return len(shape0) >= 2 and tuple(shape1) == _level_shape(shape0, 1)


@dataclass(frozen=True)
class MorainePyramid:
    """What :func:`read_moraine_info` finds in a pyramid directory (metadata only, no data).

    ``version`` is ``None`` and ``legacy`` true for pyramids made before the marker.
    ``method`` is the declared method or the default (decimate for rasters, first
    for point clouds); ``method_declared`` says which. ``shapes``/``dtypes`` are
    per level, finest first; ``dtype`` is level 0's (levels of a mean pyramid of
    integer or boolean data are float32). ``stats`` is the marker's ``stats``
    (JSON friendly, NaN as None) and ``channel_stats`` maps each column of
    ``stats.zarr`` to a value (2-D data) or nested list over the channels; for
    complex data the value columns are renamed ``amplitude_<column>`` like the
    marker's. ``bounds``, ``resolution`` (``ras_resolution``, the level-0 cell
    size), ``n_points``, ``point_dtype`` and ``has_rtree`` describe point clouds
    (``None``/false for rasters).
    """

    path: str
    kind: str
    version: int | None
    legacy: bool
    method: str
    method_declared: bool
    stats: dict | None
    n_levels: int
    shapes: list[tuple[int, ...]]
    dtypes: list[str]
    dtype: str
    zarr_format: int
    channel_dims: tuple[str, ...]
    bounds: tuple[float, float, float, float] | None = None
    resolution: float | None = None
    has_rtree: bool = False
    channel_stats: dict | None = None
    n_points: int | None = None
    point_dtype: str | None = None

    @property
    def is_point_cloud(self) -> bool:
        return self.kind == POINT_CLOUD

    @property
    def levels(self) -> list[int]:
        return list(range(self.n_levels))

    def level_name(self, level: int) -> str:
        return level_name(self._check_level(level))

    def cell_size(self, level: int) -> float | None:
        """Cell size of ``level`` of a point-cloud grid (``resolution * 2**level``)."""
        level = self._check_level(level)
        return None if self.resolution is None else self.resolution * 2**level

    def _check_level(self, level: int) -> int:
        if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, np.integer)):
            raise ArgumentTypeError(f"level must be an int, got {level!r}")
        level = int(level)
        if level < 0:
            level += self.n_levels
        if not 0 <= level < self.n_levels:
            raise MoraineLevelError(f"{self.path}: level {level} does not exist; levels are 0..{self.n_levels - 1}")
        return level

    def to_attrs(self) -> dict:
        """The JSON-friendly attrs put on the root of :func:`open_moraine_pyramid` (no NaN)."""
        return jsonable(
            {
                "kind": self.kind,
                "version": self.version,
                "legacy": self.legacy,
                "method": self.method,
                "method_declared": self.method_declared,
                "stats": self.stats,
                "channel_stats": self.channel_stats,
                "n_levels": self.n_levels,
                "levels": [level_name(lv) for lv in range(self.n_levels)],
                "shapes": [list(s) for s in self.shapes],
                "dtypes": self.dtypes,
                "dtype": self.dtype,
                "zarr_format": self.zarr_format,
                "channel_dims": list(self.channel_dims),
                "bounds": self.bounds,
                "resolution": self.resolution,
                "has_rtree": self.has_rtree,
                "n_points": self.n_points,
                "point_dtype": self.point_dtype,
                "source": self.path,
            }
        )


def _read_marker(loc: Location, a0) -> dict | None:
    attrs = a0.attrs.asdict() if hasattr(a0.attrs, "asdict") else dict(a0.attrs)
    if MARKER not in attrs:
        return None
    marker = attrs[MARKER]
    if not isinstance(marker, dict):
        raise PyramidError(f"{loc.url('0.zarr')}: attribute {MARKER} is not an object: {marker!r}")
    return marker


def _marker_version(loc: Location, marker: dict) -> int:
    version = marker.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise PyramidError(f"{loc.url('0.zarr')}: {MARKER}.version must be an integer, got {version!r}")
    if version > SUPPORTED_VERSION:
        raise UnsupportedVersionError(
            f"{loc.path}: moraine pyramid version {version} is newer than version "
            f"{SUPPORTED_VERSION}, the newest this reader supports"
        )
    if version < 1:
        raise PyramidError(f"{loc.url('0.zarr')}: {MARKER}.version {version} is not a valid version")
    return version


def _recognise(loc: Location):
    """(level-0 array, marker or None, version or None); raises if not a pyramid."""
    try:
        a0 = loc.probe("0.zarr")
    except PyramidError as exc:
        raise NotAMorainePyramidError(
            f"{loc.path} is not a moraine pyramid: its 0.zarr is not a zarr array ({exc.__cause__})"
        ) from exc
    if a0 is None:
        if loc.local and not os.path.isdir(loc.root):
            raise NotAMorainePyramidError(f"{loc.path} is not a moraine pyramid: the directory does not exist")
        raise NotAMorainePyramidError(
            f"{loc.path} is not a moraine pyramid: it has no 0.zarr array (the level-0 array every moraine pyramid has)"
        )
    marker = _read_marker(loc, a0)
    if marker is not None:
        return a0, marker, _marker_version(loc, marker)
    # legacy: no marker, level 1 half the size (ceil) of level 0
    a1 = loc.try_open("1.zarr")
    if a1 is None:
        raise NotAMorainePyramidError(
            f"{loc.path} is not a moraine pyramid: 0.zarr has no {MARKER} attribute and "
            f"there is no 1.zarr to recognise a legacy (unmarked) pyramid by"
        )
    if not _is_half(tuple(a0.shape), tuple(a1.shape)):
        raise NotAMorainePyramidError(
            f"{loc.path} is not a moraine pyramid: 0.zarr has no {MARKER} attribute and "
            f"1.zarr {tuple(a1.shape)} is not half the size of 0.zarr {tuple(a0.shape)} "
            f"(expected {_level_shape(tuple(a0.shape), 1) if len(a0.shape) >= 2 else 'a 2-D level 0'})"
        )
    return a0, None, None


def _read_bounds(loc: Location) -> tuple[float, float, float, float] | None:
    raw = loc.read_bytes("bounds.toml")
    if raw is None:
        return None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PyramidError(f"{loc.url('bounds.toml')} is not valid TOML: {exc}") from exc
    b = doc.get("bounds")
    if (
        not isinstance(b, list)
        or len(b) != 4
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in b)
    ):
        raise PyramidError(f"{loc.url('bounds.toml')}: bounds must be 4 numbers [x0, y0, xm, ym], got {b!r}")
    bounds = (float(b[0]), float(b[1]), float(b[2]), float(b[3]))
    if not all(math.isfinite(v) for v in bounds) or bounds[2] < bounds[0] or bounds[3] < bounds[1]:
        raise PyramidError(
            f"{loc.url('bounds.toml')}: bounds {list(b)} must be finite with xm >= x0 and ym >= y0 "
            "(the grid's lower-left and upper-right cell centres)"
        )
    return bounds


def _resolution(loc: Location, bounds, shape0) -> float | None:
    """``ras_resolution`` from the bounds: ``xm = x0 + (width - 1) * res`` (same for y)."""
    x0, y0, xm, ym = bounds
    nlines, width = int(shape0[0]), int(shape0[1])
    rx = (xm - x0) / (width - 1) if width > 1 else None
    ry = (ym - y0) / (nlines - 1) if nlines > 1 else None
    if rx is not None and ry is not None and not math.isclose(rx, ry, rel_tol=1e-6, abs_tol=1e-12):
        raise PyramidError(
            f"{loc.path}: bounds {list(bounds)} and the {nlines} x {width} grid give "
            f"different cell sizes in x ({rx}) and y ({ry})"
        )
    res = rx if rx is not None else ry
    if res is not None and not res > 0:
        raise PyramidError(f"{loc.path}: bounds {list(bounds)} give a non-positive cell size {res}")
    return res


def _read_channel_stats(loc: Location, channels: tuple[int, ...], complex_data: bool) -> dict | None:
    where = loc.url("stats.zarr")
    try:
        arr = loc.try_open("stats.zarr")
    except PyramidError as exc:  # unreadable metadata: a derived object, left out
        warn(f"{where} left out: {exc}", ObjectDroppedWarning)
        return None
    if arr is None:
        return None
    columns = arr.attrs.get("columns")
    problem = None
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        problem = f"its columns attribute is {columns!r}, not a list of names"
    elif tuple(arr.shape) != (*channels, len(columns)):
        problem = f"shape {tuple(arr.shape)} does not match channels {channels} x {len(columns)} columns"
    if problem:
        warn(f"{where} left out: {problem}", ObjectDroppedWarning)
        return None
    try:
        values = np.asarray(arr[...], dtype=np.float64)
    except MoczarrError as exc:
        if not isinstance(exc, ChunkError):
            raise
        values = None
    except Exception:  # a damaged chunk of a derived object
        values = None
    if values is None or values.shape != tuple(arr.shape):
        warn(f"{where} left out: its values cannot be read as float64", ObjectDroppedWarning)
        return None
    out = {}
    for k, col in enumerate(columns):
        name = col
        if complex_data and col != "nan_fraction" and not col.startswith("amplitude_"):
            name = f"amplitude_{col}"
        out[name] = jsonable(values[..., k])
    return out


def describe(loc: Location) -> tuple[MorainePyramid, list]:
    """The pyramid's description and its level arrays (finest first), from metadata only."""
    a0, marker, version = _recognise(loc)
    bounds = _read_bounds(loc)
    kind, method, declared, stats = _kind_and_method(loc, marker, bounds)
    shape0, arrays = _level_arrays(loc, a0)
    resolution = n_points = point_dtype = None
    has_rtree = False
    if kind == POINT_CLOUD:
        resolution, n_points, point_dtype, has_rtree = _point_cloud_facts(loc, bounds, shape0)
    channel_stats = _read_channel_stats(loc, shape0[2:], np.dtype(a0.dtype).kind == "c")
    info = MorainePyramid(
        path=loc.path,
        kind=kind,
        version=version,
        legacy=marker is None,
        method=method,
        method_declared=declared,
        stats=stats,
        n_levels=len(arrays),
        shapes=[tuple(int(n) for n in a.shape) for a in arrays],
        dtypes=[str(a.dtype) for a in arrays],
        dtype=str(a0.dtype),
        zarr_format=int(a0.metadata.zarr_format),
        channel_dims=channel_dim_names(len(shape0) - 2),
        bounds=bounds,
        resolution=resolution,
        has_rtree=has_rtree,
        channel_stats=channel_stats,
        n_points=n_points,
        point_dtype=point_dtype,
    )
    return info, arrays


def _kind_and_method(loc: Location, marker: dict | None, bounds) -> tuple[str, str, bool, dict | None]:
    """``(kind, method, method declared, stats)``: the marker's, checked against what ``bounds.toml`` says.

    An unmarked (legacy) pyramid is a point cloud exactly when it has a
    ``bounds.toml``, with that kind's default method.
    """
    found = POINT_CLOUD if bounds is not None else RASTER
    if marker is None:
        return found, _DEFAULT_METHOD[found], False, None
    kind = marker.get("kind")
    if kind not in _METHODS:
        raise PyramidError(f"{loc.url('0.zarr')}: {MARKER}.kind must be {RASTER!r} or {POINT_CLOUD!r}, got {kind!r}")
    if kind != found:
        why = "bounds.toml is present" if bounds is not None else "there is no bounds.toml"
        raise PyramidError(
            f"{loc.path}: the {MARKER} marker says kind {kind!r} but {why}, which makes it a {found} pyramid"
        )
    method = marker.get("method")
    declared = method is not None
    if method is None:
        method = _DEFAULT_METHOD[kind]
    elif method not in _METHODS[kind]:
        raise PyramidError(
            f"{loc.url('0.zarr')}: method {method!r} is not a {kind} pyramid method "
            f"(one of {', '.join(_METHODS[kind])})"
        )
    stats = marker.get("stats")
    if stats is not None and not isinstance(stats, dict):
        raise PyramidError(f"{loc.url('0.zarr')}: {MARKER}.stats is not an object: {stats!r}")
    return kind, method, declared, (jsonable(stats) if stats is not None else None)


def _level_arrays(loc: Location, a0) -> tuple[tuple[int, ...], list]:
    """``(level-0 shape, every level's array)``: each level present with level 0's shape halved, rounded up."""
    shape0 = tuple(int(n) for n in a0.shape)
    if len(shape0) < 2:
        raise PyramidError(f"{loc.url('0.zarr')}: level 0 must have at least 2 dimensions, got {shape0}")
    n_levels = _expected_n_levels(shape0)
    arrays = [a0]
    for lv in range(1, n_levels):
        arr = loc.try_open(f"{lv}.zarr")
        if arr is None:
            raise PyramidError(
                f"{loc.path}: level {lv}.zarr is missing; a level 0 of shape {shape0} has levels 0..{n_levels - 1}"
            )
        if tuple(arr.shape) != _level_shape(shape0, lv):
            raise PyramidError(
                f"{loc.url(f'{lv}.zarr')}: shape {tuple(arr.shape)}, expected "
                f"{_level_shape(shape0, lv)} (level 0 {shape0} / 2**{lv}, rounded up)"
            )
        arrays.append(arr)
    return shape0, arrays


def _point_cloud_facts(loc: Location, bounds, shape0) -> tuple[float | None, int | None, str | None, bool]:
    """``(resolution, number of points, point dtype, has an R-tree)`` of a point-cloud pyramid."""
    resolution = _resolution(loc, bounds, shape0)
    n_points = point_dtype = None
    pc = loc.try_open("pc.zarr")
    if pc is not None:
        n_points, point_dtype = int(pc.shape[0]), str(pc.dtype)
    return resolution, n_points, point_dtype, loc.try_open("rtree.zarr") is not None


def is_moraine_pyramid(path, storage_options: dict | None = None) -> bool:
    """True when ``path`` holds a moraine pyramid: ``0.zarr`` with the marker, or unmarked with
    ``1.zarr`` half the size of ``0.zarr``. Reads at most two array metadata documents (a marked
    pyramid of an unsupported version still counts as one). Content that is no pyramid answers
    False; a storage failure is not an answer and raises its
    :class:`~moczarr.errors.StorageError` (a 500 on the marker must not read as "not a pyramid")."""
    loc = Location(path, storage_options)
    try:
        a0 = loc.probe("0.zarr")
        if a0 is None:
            return False
        if _read_marker(loc, a0) is not None:
            return True
        a1 = loc.try_open("1.zarr")
        return a1 is not None and _is_half(tuple(a0.shape), tuple(a1.shape))
    except PyramidError:
        return False


def read_moraine_info(path, storage_options: dict | None = None) -> MorainePyramid:
    """Recognise the pyramid at ``path`` and describe it (metadata only; no chunk is read)."""
    return describe(Location(path, storage_options))[0]
