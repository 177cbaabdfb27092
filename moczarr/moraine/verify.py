"""``verify_moraine``: check a moraine raster or point-cloud pyramid against its contract (version 1).

The reader recognises a pyramid and refuses the first thing it cannot read;
the verifier goes on and reports everything it can see, as the same
:class:`~moczarr.verify.VerifyReport` the hive verifier returns: the marker
(version, kind, method, stats keys), the levels (the reader's shape rules,
the dtype each method gives), and for point clouds the points, the per-level
``idx_l`` arrays (shape, dtype, range), the bounds against the points, and
``rtree.zarr`` against the tree built from ``x.zarr`` / ``y.zarr``. Reads
every point coordinate and index array once; never writes.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

from ..errors import ObjectDroppedWarning, PyramidError, UnsupportedVersionError
from ..verify import VerifyReport
from .reader import (
    POINT_CLOUD,
    STATS_COLUMNS,
    NotAMorainePyramidError,
    open_moraine_index,
    open_moraine_points,
    read_moraine_info,
    read_moraine_rtree,
)
from .rtree import build_rtree


def verify_moraine(path, storage_options: dict | None = None) -> VerifyReport:
    """Verify the moraine pyramid at ``path`` (local path or fsspec URL); damage is reported, never raised.

    Findings name objects relative to ``path`` (``0.zarr``, ``idx_2.zarr``,
    ``rtree.zarr``); see ``docs/verify.md`` for every kind.
    """
    where = os.fspath(path)
    report = VerifyReport(where.rstrip("/"), deep=True)

    def obj(message: str) -> str:
        head = message.split(": ", 1)[0]
        for base in (os.path.abspath(where) if "://" not in where else where.rstrip("/"), where.rstrip("/")):
            if head.startswith(base + "/"):
                return head[len(base) + 1 :]
        return ""

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            info = read_moraine_info(path, storage_options=storage_options)
        except NotAMorainePyramidError as exc:
            report.add("not-a-pyramid", "error", "", str(exc))
            return report
        except UnsupportedVersionError as exc:
            report.add("marker-unsupported", "error", "0.zarr", str(exc))
            return report
        except PyramidError as exc:
            report.add("moraine-invalid", "error", obj(str(exc)), str(exc))
            return report
    for w in caught:
        if issubclass(w.category, ObjectDroppedWarning):
            report.add("stats-dropped", "warning", "stats.zarr", str(w.message))
    report.counts["levels"] = info.n_levels
    if info.legacy:
        report.add(
            "marker-absent",
            "info",
            "0.zarr",
            "no moraine_pyramid marker: a pyramid made before version 1, recognised by its half-size level 1",
        )
    _check_stats(report, info)
    _check_dtypes(report, info)
    if info.kind == POINT_CLOUD:
        _check_points(report, info, path, storage_options, obj)
    return report


def _check_stats(report: VerifyReport, info) -> None:
    if info.stats is None:
        return
    if np.dtype(info.dtype).kind == "b":
        expected = ["true_fraction"]
    else:
        prefix = "amplitude_" if np.dtype(info.dtype).kind == "c" else ""
        expected = ["nan_fraction"] + [prefix + c for c in STATS_COLUMNS if c != "nan_fraction"]
    missing = [k for k in expected if k not in info.stats]
    if missing:
        report.add("stats-incomplete", "warning", "0.zarr", f"the marker's stats lack {', '.join(missing)}")


def _check_dtypes(report: VerifyReport, info) -> None:
    """Decimate and first keep level 0's dtype; mean keeps floating and complex, gives float32 otherwise."""
    d0 = np.dtype(info.dtype)
    if info.method == "mean" and d0.kind not in "fc":
        expected = np.dtype("float32")
    else:
        expected = d0
    for level, dt in enumerate(info.dtypes[1:], start=1):
        if np.dtype(dt) != expected and not (info.legacy and np.dtype(dt) == d0):
            report.add(
                "level-dtype",
                "error",
                f"{level}.zarr",
                f"dtype {dt}, the contract gives {expected} to level {level} of a {info.method} pyramid of {d0} data",
            )


def _check_points(report: VerifyReport, info, path, storage_options, obj) -> None:
    try:
        points = open_moraine_points(path, storage_options=storage_options)
    except PyramidError as exc:
        report.add("points-invalid", "error", obj(str(exc)), str(exc))
        return
    x = np.asarray(points["x"].values, dtype=np.float64)
    y = np.asarray(points["y"].values, dtype=np.float64)
    n = x.size
    report.counts["points"] = n
    for level in info.levels:
        name = f"idx_{level}.zarr"
        try:
            idx = open_moraine_index(path, level, storage_options=storage_options)
        except PyramidError as exc:
            report.add("index-invalid", "error", obj(str(exc)) or name, str(exc))
            continue
        if idx.dtype.kind not in "iu":
            report.add("index-invalid", "error", name, f"dtype {idx.dtype}: point indexes must be integers")
            continue
        values = idx.values
        bad = (values < -1) | (values >= n)
        if bad.any():
            report.add(
                "index-out-of-range",
                "error",
                name,
                f"{int(bad.sum())} cells index outside -1..{n - 1} (the {n} points)",
            )
        elif level == 0 and n and np.unique(values[values >= 0]).size != int((values >= 0).sum()):
            report.add(
                "index-shared",
                "warning",
                name,
                "level-0 cells share a point: points in different cells never share one",
            )
    _check_bounds(report, info, x, y)
    _check_rtree(report, path, storage_options, x, y, obj)


def _check_bounds(report: VerifyReport, info, x, y) -> None:
    """``bounds = [min x, min y, x0 + (width - 1) res, y0 + (nlines - 1) res]``, every point in a grid cell."""
    if x.size == 0 or info.bounds is None or info.resolution is None:
        return
    x0, y0, xm, ym = info.bounds
    res = info.resolution
    tol = 1e-9 * max(1.0, abs(x0), abs(y0), abs(xm), abs(ym))
    problems = []
    if not math.isclose(x0, np.nanmin(x), abs_tol=tol) or not math.isclose(y0, np.nanmin(y), abs_tol=tol):
        problems.append(f"[x0, y0] = [{x0}, {y0}] but the points start at [{np.nanmin(x)}, {np.nanmin(y)}]")
    if np.nanmax(x) > xm + res / 2 + tol or np.nanmax(y) > ym + res / 2 + tol:
        problems.append(f"points reach [{np.nanmax(x)}, {np.nanmax(y)}], past the last cells centred at [{xm}, {ym}]")
    if problems:
        severity = "warning" if info.legacy else "error"  # legacy pyramids may merge the last line or column
        report.add("bounds-mismatch", severity, "bounds.toml", "; ".join(problems))


def _check_rtree(report: VerifyReport, path, storage_options, x, y, obj) -> None:
    try:
        tree = read_moraine_rtree(path, storage_options=storage_options)
    except PyramidError as exc:
        report.add("rtree-invalid", "error", obj(str(exc)) or "rtree.zarr", str(exc))
        return
    if tree is None:  # a raster pyramid: no point index to check
        return
    if tree.attrs.get("built"):
        report.add(
            "rtree-absent", "info", "rtree.zarr", "no rtree.zarr: readers build the tree from x.zarr / y.zarr in memory"
        )
        return
    page_size, n_points = tree.attrs.get("page_size"), tree.attrs.get("n_points")
    if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
        report.add(
            "rtree-invalid", "error", "rtree.zarr", f"attribute page_size is {page_size!r}, not a positive integer"
        )
        return
    if n_points != x.size:
        report.add(
            "rtree-invalid",
            "error",
            "rtree.zarr",
            f"attribute n_points is {n_points!r}, the pyramid has {x.size} points",
        )
        return
    expected = build_rtree(x, y, page_size)
    stored = np.asarray(tree.values, dtype=np.float64)
    if stored.shape != expected.shape or not np.allclose(stored, expected, equal_nan=True, rtol=0, atol=0):
        report.add(
            "rtree-mismatch",
            "error",
            "rtree.zarr",
            f"the stored tree {stored.shape} is not the tree of the points {expected.shape}: "
            "queries through it miss or misplace points; rebuild it",
        )


__all__ = ["verify_moraine"]
