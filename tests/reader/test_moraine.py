"""Tests of moczarr.moraine against the moraine pyramid fixtures (../shared/fixtures/moraine).

Expected values are recomputed here from each pyramid's level 0 or its points, following the
contract (seeds/002_7c4e8f220373dadc.txt); the only facts taken as given are those the fixtures'
README documents (kind, method, level-0 shape, level count, cell size).

When the fixtures folder is missing the tests skip locally and FAIL under CI (``CI`` set to
anything other than "", "0", "false" or "no").
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr

from moczarr.errors import (
    ArgumentError,
    ChunkError,
    MoczarrError,
    PyramidError,
    UnsupportedVersionError,
)
from moczarr.moraine import (
    MoraineLevelError,
    MorainePyramid,
    NotAMorainePyramidError,
    is_moraine_pyramid,
    open_moraine_index,
    open_moraine_level,
    open_moraine_points,
    open_moraine_pyramid,
    read_moraine_info,
    read_moraine_rtree,
)
from tests.helpers import layer, moraine_root

pytestmark = pytest.mark.layers

#: the shared layer's pyramids (``MOCZARR_MORAINE_FIXTURES`` overrides the folder)
SHARED_MORAINE = os.environ.get("MOCZARR_MORAINE_FIXTURES")


def moraine_dir() -> Path:
    """The pyramids of the running layer: generated ones, or the shared fixtures."""
    if SHARED_MORAINE and layer() == "shared":
        return Path(SHARED_MORAINE)
    return moraine_root()


# What the fixtures' README documents about each pyramid (not read from the pyramids).
DOC = {
    "ras_mean_v1": {
        "kind": "raster",
        "method": "mean",
        "legacy": False,
        "shape0": (300, 200),
        "dtype": "float32",
        "levels": 8,
        "zarr_format": 3,
    },
    "stack_decimate_v1": {
        "kind": "raster",
        "method": "decimate",
        "legacy": False,
        "shape0": (300, 200, 3),
        "dtype": "float32",
        "levels": 8,
        "zarr_format": 3,
    },
    "cpx_mean_v1": {
        "kind": "raster",
        "method": "mean",
        "legacy": False,
        "shape0": (120, 80, 2),
        "dtype": "complex64",
        "levels": 7,
        "zarr_format": 3,
    },
    "ras_decimate_v1_zarr2": {
        "kind": "raster",
        "method": "decimate",
        "legacy": False,
        "shape0": (300, 200),
        "dtype": "float32",
        "levels": 8,
        "zarr_format": 2,
    },
    "pc_first_v1": {
        "kind": "point cloud",
        "method": "first",
        "legacy": False,
        "shape0": (150, 100, 2),
        "dtype": "float32",
        "levels": 7,
        "zarr_format": 3,
        "res": 20.0,
        "n_points": 3000,
    },
    "pc_int_mean_v1": {
        "kind": "point cloud",
        "method": "mean",
        "legacy": False,
        "shape0": (150, 100),
        "dtype": "float32",
        "levels": 7,
        "zarr_format": 3,
        "res": 1.0,
        "n_points": 3000,
    },
    "ras_legacy_090": {
        "kind": "raster",
        "method": "decimate",
        "legacy": True,
        "shape0": (300, 200),
        "dtype": "float32",
        "levels": 8,
        "zarr_format": 3,
    },
    "pc_int_legacy_090": {
        "kind": "point cloud",
        "method": "first",
        "legacy": True,
        "shape0": (149, 99),
        "dtype": "int16",
        "levels": 7,
        "zarr_format": 3,
        "res": 1.0,
        "n_points": 3000,
    },
}
ALL = list(DOC)
RASTERS = [n for n in ALL if DOC[n]["kind"] == "raster"]
POINT_CLOUDS = [n for n in ALL if DOC[n]["kind"] == "point cloud"]
V1 = [n for n in ALL if not DOC[n]["legacy"]]
LEGACY = [n for n in ALL if DOC[n]["legacy"]]


@pytest.fixture(scope="module")
def root(store_layer) -> Path:
    folder = moraine_dir()
    missing = [n for n in ALL if not (folder / n / "0.zarr").is_dir()]
    assert not missing, f"moraine fixtures not found under {folder}: {', '.join(missing)}"
    return folder


def test_fixtures_are_present():
    folder = moraine_dir()
    missing = [n for n in ALL if not (folder / n / "0.zarr").is_dir()]
    assert not missing, f"moraine fixtures not found under {folder}: {', '.join(missing)}"


def raw(root: Path, name: str, array: str) -> np.ndarray:
    """An array of a fixture read straight with zarr (not through the reader)."""
    return zarr.open_array(store=str(root / name / array), mode="r", zarr_format=None)[...]


def copy_fixture(root: Path, name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(root / name, dst)
    return dst


# ----------------------------------------------------------------------------- recomputations


def contract_shapes(shape0):
    """Level shapes by the contract: L = floor(log2(min(nlines, width))), ceil halving."""
    nlines, width, *channels = shape0
    top = math.floor(math.log2(min(nlines, width)))
    return [(math.ceil(nlines / 2**lv), math.ceil(width / 2**lv), *channels) for lv in range(top + 1)]


def block_mean(a: np.ndarray, f: int) -> np.ndarray:
    """Mean of every f x f block (edge blocks partial) over the finite values; nan where none.

    Sums by ``np.add.reduceat`` over the block starts, not by the writers' pad-and-reshape, so the
    recomputation is an independent check of them.
    """
    work = np.complex128 if a.dtype.kind == "c" else np.float64
    finite = np.isfinite(a)
    rows, cols = np.arange(0, a.shape[0], f), np.arange(0, a.shape[1], f)

    def block_sums(v: np.ndarray) -> np.ndarray:
        return np.add.reduceat(np.add.reduceat(v, rows, axis=0), cols, axis=1)

    total = block_sums(np.where(finite, a, 0).astype(work))
    count = block_sums(finite.astype(np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def first_of_blocks(idx: np.ndarray) -> np.ndarray:
    """idx of the next level: the first non-empty (>= 0) cell of each 2 x 2 block, row-major.

    Fills each block from its cells in row-major order, keeping the first non-empty one.
    """
    out = np.full((math.ceil(idx.shape[0] / 2), math.ceil(idx.shape[1] / 2)), -1, dtype=idx.dtype)
    for di, dj in ((0, 0), (0, 1), (1, 0), (1, 1)):
        cell = idx[di::2, dj::2]
        view = out[: cell.shape[0], : cell.shape[1]]
        take = (view < 0) & (cell >= 0)
        view[take] = cell[take]
    return out


def recomputed_stats(values: np.ndarray) -> dict:
    """Contract statistics of ``values`` (amplitudes for complex data), all values sampled."""
    v = np.abs(values) if values.dtype.kind == "c" else values
    v = np.asarray(v, dtype=np.float64).ravel()
    finite = v[np.isfinite(v)]
    out = {"nan_fraction": float(np.isnan(v).mean()) if v.size else float("nan")}
    if finite.size:
        p01, p50, p99 = np.percentile(finite, [1, 50, 99])
        out.update(min=finite.min(), max=finite.max(), mean=finite.mean(), std=finite.std(), p01=p01, p50=p50, p99=p99)
    else:
        out.update({k: float("nan") for k in ("min", "max", "mean", "std", "p01", "p50", "p99")})
    return out


def expand(mask: np.ndarray, ndim: int) -> np.ndarray:
    return mask.reshape(mask.shape + (1,) * (ndim - mask.ndim))


# ----------------------------------------------------------------------------- recognition / info


@pytest.mark.parametrize("name", ALL)
def test_info_matches_documentation(root, name):
    doc = DOC[name]
    path = root / name
    assert is_moraine_pyramid(path)
    assert is_moraine_pyramid(str(path) + "/")
    info = read_moraine_info(path)
    assert isinstance(info, MorainePyramid)
    assert info.kind == doc["kind"]
    assert info.method == doc["method"]
    assert info.legacy is doc["legacy"]
    assert info.version == (None if doc["legacy"] else 1)
    assert info.method_declared is (not doc["legacy"])
    assert info.shapes[0] == doc["shape0"]
    assert info.n_levels == doc["levels"] == len(info.shapes)
    assert info.dtype == doc["dtype"]
    assert info.zarr_format == doc["zarr_format"]
    assert info.channel_dims == (("channel",) if len(doc["shape0"]) == 3 else ())
    if doc["kind"] == "point cloud":
        assert info.resolution == pytest.approx(doc["res"], rel=1e-9)
        assert info.n_points == doc["n_points"]
        assert len(info.bounds) == 4
    else:
        assert info.bounds is None and info.resolution is None and not info.has_rtree


@pytest.mark.parametrize("name", ALL)
def test_level_count_and_shapes_follow_contract(root, name):
    info = read_moraine_info(root / name)
    expected = contract_shapes(info.shapes[0])
    assert info.shapes == expected
    assert min(expected[-1][:2]) >= 2, "contract: at least 2 pixels per side at level L"
    tree = open_moraine_pyramid(root / name)
    assert list(tree.children) == [f"l{lv}" for lv in range(len(expected))]
    for lv, shape in enumerate(expected):
        level = open_moraine_level(root / name, lv)
        assert level.shape == shape
        assert level.dims[:2] == ("y", "x")
        assert isinstance(level.data, da.Array), "levels must open lazily"
        assert tree[f"l{lv}"]["data"].shape == shape
        # nothing transformed: the reader's values are the stored ones
        np.testing.assert_array_equal(level.values, raw(root, name, f"{lv}.zarr"))


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_recognised_by_half_size_rule(root, name, tmp_path):
    info = read_moraine_info(root / name)
    assert info.legacy and info.version is None and info.stats is None and info.channel_stats is None
    assert not info.method_declared
    assert info.method == ("decimate" if info.kind == "raster" else "first")
    assert not info.has_rtree
    tree = open_moraine_pyramid(root / name)
    assert tree.attrs["legacy"] is True and tree.attrs["version"] is None
    # the rule is what recognises it: without a half-size level 1 it is no pyramid
    copy = copy_fixture(root, name, tmp_path)
    shutil.rmtree(copy / "1.zarr")
    assert not is_moraine_pyramid(copy)
    with pytest.raises(NotAMorainePyramidError, match=r"1\.zarr"):
        read_moraine_info(copy)
    shutil.rmtree(copy / "0.zarr")
    shutil.copytree(root / name / "2.zarr", copy / "0.zarr")
    shutil.copytree(root / name / "4.zarr", copy / "1.zarr")  # a quarter, not half
    assert not is_moraine_pyramid(copy)
    with pytest.raises(NotAMorainePyramidError, match="half"):
        read_moraine_info(copy)


# ----------------------------------------------------------------------------- level values


@pytest.mark.parametrize("name", RASTERS)
def test_raster_levels_follow_method(root, name):
    info = read_moraine_info(root / name)
    tree = open_moraine_pyramid(root / name)
    l0 = tree["l0"]["data"].values
    np.testing.assert_array_equal(l0, raw(root, name, "0.zarr"))
    for lv in range(1, info.n_levels):
        f = 2**lv
        got = tree[f"l{lv}"]["data"].values
        if info.method == "decimate":
            assert got.dtype == l0.dtype
            np.testing.assert_array_equal(got, l0[::f, ::f])
        else:
            exp_dtype = l0.dtype if l0.dtype.kind in "fc" else np.dtype("float32")
            assert got.dtype == exp_dtype
            expected = block_mean(l0, f)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", POINT_CLOUDS)
def test_point_cloud_index_levels(root, name):
    info = read_moraine_info(root / name)
    idx0 = open_moraine_index(root / name, 0)
    assert idx0.dims == ("y", "x") and isinstance(idx0.data, da.Array)
    prev = idx0.values
    np.testing.assert_array_equal(prev, raw(root, name, "idx_0.zarr"))
    filled = prev[prev >= 0]
    assert len(np.unique(filled)) == filled.size, "a point is shown in one level-0 cell only"
    for lv in range(1, info.n_levels):
        idx = open_moraine_index(root / name, lv).values
        np.testing.assert_array_equal(idx, first_of_blocks(prev))
        prev = idx


@pytest.mark.parametrize("name", POINT_CLOUDS)
def test_point_cloud_levels_follow_method(root, name):
    info = read_moraine_info(root / name)
    pc = open_moraine_points(root / name)["pc"].values
    idx0 = open_moraine_index(root / name, 0).values
    tree = open_moraine_pyramid(root / name)
    float_points = pc.dtype.kind in "fc"
    for lv in range(info.n_levels):
        got = tree[f"l{lv}"]["data"].values
        idx = tree[f"l{lv}"]["idx"].values
        np.testing.assert_array_equal(idx, open_moraine_index(root / name, lv).values)
        empty = expand(idx < 0, got.ndim)
        if info.legacy:
            # 0.9.0: cells keep the points' dtype and empty cells are 0, not nan
            assert got.dtype == pc.dtype
            empty_value = 0
        else:
            assert got.dtype == (pc.dtype if float_points else np.dtype("float32"))
            empty_value = np.nan
        if info.method == "first" or lv == 0:
            shown = pc[np.maximum(idx, 0)].astype(got.dtype)
            expected = np.where(empty, empty_value, shown)
            np.testing.assert_array_equal(got, expected)
        else:
            # mean of the points of the 2**lv x 2**lv block of level-0 cells
            f = 2**lv
            cells_i, cells_j = np.nonzero(idx0 >= 0)
            points = idx0[cells_i, cells_j]
            shape = got.shape
            total = np.zeros(shape, dtype=np.complex128 if pc.dtype.kind == "c" else np.float64)
            count = np.zeros(shape[:2], dtype=np.int64)
            np.add.at(total, (cells_i // f, cells_j // f), pc[points])
            np.add.at(count, (cells_i // f, cells_j // f), 1)
            expected = np.where(expand(count > 0, total.ndim), total / expand(np.maximum(count, 1), total.ndim), np.nan)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
            np.testing.assert_array_equal(count == 0, idx < 0)
            np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", POINT_CLOUDS)
def test_point_cloud_grid_coordinates(root, name):
    info = read_moraine_info(root / name)
    res = DOC[name]["res"]
    x0, y0 = info.bounds[:2]
    pts = open_moraine_points(root / name).compute()
    x, y = pts["x"].values.astype(np.float64), pts["y"].values.astype(np.float64)
    assert x0 == pytest.approx(x.min()) and y0 == pytest.approx(y.min())
    for lv in range(info.n_levels):
        level = open_moraine_level(root / name, lv)
        n_y, n_x = level.shape[:2]
        np.testing.assert_allclose(level["x"].values, x0 + np.arange(n_x) * res * 2**lv, rtol=1e-12)
        np.testing.assert_allclose(level["y"].values, y0 + np.arange(n_y) * res * 2**lv, rtol=1e-12)
        assert level.attrs["cell_size"] == pytest.approx(res * 2**lv)
    # every point sits in the level-0 cell of its nearest centre
    level0 = open_moraine_index(root / name, 0)
    idx = level0.values
    ii, jj = np.nonzero(idx >= 0)
    p = idx[ii, jj]
    dx = np.abs(x[p] - level0["x"].values[jj])
    dy = np.abs(y[p] - level0["y"].values[ii])
    if info.legacy:
        # 0.9.0 may merge the last line / column into the previous one
        assert np.all(dx <= 1.5 * res + 1e-9) and np.all(dy <= 1.5 * res + 1e-9)
        assert (dx <= res / 2 + 1e-9).mean() > 0.99 and (dy <= res / 2 + 1e-9).mean() > 0.99
    else:
        assert np.all(dx <= res / 2 + 1e-9) and np.all(dy <= res / 2 + 1e-9)
        assert p.size == x.size, "version 1: every point has its own cell"
        # bounds reach the centre of the last cell
        xm, ym = info.bounds[2:]
        assert xm == pytest.approx(x0 + (idx.shape[1] - 1) * res)
        assert ym == pytest.approx(y0 + (idx.shape[0] - 1) * res)


def test_fill_value_is_not_missing(root):
    """0.0 is the zarr fill value of the grids; real zeros must stay zeros, not become nan."""
    name = "pc_int_mean_v1"
    pc = open_moraine_points(root / name)["pc"].values
    level0 = open_moraine_level(root / name, 0).values
    n_zero_points = int((pc == 0).sum())
    assert n_zero_points > 0
    assert int((level0 == 0).sum()) == n_zero_points
    assert int(np.isnan(level0).sum()) == int((open_moraine_index(root / name, 0).values < 0).sum())
    assert "_FillValue" not in open_moraine_level(root / name, 0).attrs
    legacy0 = open_moraine_level(root / "pc_int_legacy_090", 0)
    assert legacy0.dtype == np.int16 and legacy0.attrs["empty_cells"].startswith("not marked")


# ----------------------------------------------------------------------------- stats


STAT_KEYS = ("min", "max", "mean", "std", "p01", "p50", "p99")


def _check_stats(declared: dict, recomputed: dict, complex_data: bool, rtol: float, atol: float):
    prefix = "amplitude_" if complex_data else ""
    assert declared["nan_fraction"] == pytest.approx(recomputed["nan_fraction"], abs=max(atol, 1e-12))
    for key in STAT_KEYS:
        got = declared[prefix + key]
        want = recomputed[key]
        if want is None or (isinstance(want, float) and math.isnan(want)):
            assert got is None, f"{prefix + key}: expected no value, got {got}"
        else:
            assert got == pytest.approx(want, rel=rtol, abs=atol), f"{prefix + key}"
    if complex_data:
        assert not any(k in declared for k in STAT_KEYS), "complex stats are amplitude_* only"


def _data_values(root, name):
    info = read_moraine_info(root / name)
    if info.kind == "point cloud":
        return info, open_moraine_points(root / name)["pc"].values
    return info, open_moraine_level(root / name, 0).values


@pytest.mark.parametrize("name", V1)
def test_marker_stats_match_recomputation(root, name):
    info, values = _data_values(root, name)
    assert info.stats is not None
    complex_data = values.dtype.kind == "c"
    # the marker stores 6 significant digits
    _check_stats(info.stats, recomputed_stats(values), complex_data, rtol=1e-5, atol=1e-6)
    tree = open_moraine_pyramid(root / name)
    assert tree.attrs["stats"] == info.stats
    json.dumps(tree.attrs, allow_nan=False)


@pytest.mark.parametrize("name", V1)
def test_channel_stats_match_recomputation(root, name):
    info, values = _data_values(root, name)
    cs = info.channel_stats
    assert cs is not None
    complex_data = values.dtype.kind == "c"
    n_channel_dims = values.ndim - (1 if info.kind == "point cloud" else 2)
    if n_channel_dims == 0:
        _check_stats(cs, recomputed_stats(values), complex_data, rtol=1e-7, atol=1e-12)
        return
    n = values.shape[-1]
    for key, column in cs.items():
        assert isinstance(column, list) and len(column) == n, key
    for k in range(n):
        per = {key: column[k] for key, column in cs.items()}
        _check_stats(per, recomputed_stats(values[..., k]), complex_data, rtol=1e-7, atol=1e-12)


def test_all_nan_channel_has_no_statistics(root):
    info = read_moraine_info(root / "stack_decimate_v1")
    level0 = open_moraine_level(root / "stack_decimate_v1", 0).values
    empty = [k for k in range(level0.shape[-1]) if np.isnan(level0[..., k]).all()]
    assert empty == [2]  # README: image 2 all nan
    assert info.channel_stats["nan_fraction"][2] == 1.0
    assert all(info.channel_stats[key][2] is None for key in STAT_KEYS)


# ----------------------------------------------------------------------------- zarr v2


def test_zarr2_fixture_equals_its_v3_siblings(root):
    v2 = read_moraine_info(root / "ras_decimate_v1_zarr2")
    assert v2.zarr_format == 2
    legacy = read_moraine_info(root / "ras_legacy_090")
    stack = read_moraine_info(root / "stack_decimate_v1")
    mean = read_moraine_info(root / "ras_mean_v1")
    assert v2.shapes == legacy.shapes == mean.shapes == [s[:2] for s in stack.shapes]
    # the same raster: level 0 of all, and channel 0 of the stack
    a = open_moraine_level(root / "ras_decimate_v1_zarr2", 0).values
    np.testing.assert_array_equal(a, open_moraine_level(root / "ras_mean_v1", 0).values)
    np.testing.assert_array_equal(a, open_moraine_level(root / "stack_decimate_v1", 0).values[..., 0])
    # decimated levels agree with the other decimate pyramids
    for lv in range(v2.n_levels):
        got = open_moraine_level(root / "ras_decimate_v1_zarr2", lv).values
        np.testing.assert_array_equal(got, open_moraine_level(root / "ras_legacy_090", lv).values)
        np.testing.assert_array_equal(got, open_moraine_level(root / "stack_decimate_v1", lv).values[..., 0])
    assert v2.stats == mean.stats
    for key, values in v2.channel_stats.items():
        assert values == pytest.approx(stack.channel_stats[key][0], rel=1e-12), key


# ----------------------------------------------------------------------------- tree, points, rtree


@pytest.mark.parametrize("name", ALL)
def test_datatree_layout(root, name):
    info = read_moraine_info(root / name)
    tree = open_moraine_pyramid(root / name)
    assert isinstance(tree, xr.DataTree)
    assert not tree.dataset.data_vars
    for key in ("kind", "method", "stats", "version", "legacy", "n_levels", "shapes"):
        assert key in tree.attrs
    assert tree.attrs["kind"] == info.kind and tree.attrs["method"] == info.method
    assert tree.attrs["shapes"] == [list(s) for s in info.shapes]
    json.dumps(tree.attrs, allow_nan=False)
    for lv in range(info.n_levels):
        node = tree[f"l{lv}"]
        assert node.attrs["level"] == lv and node.attrs["factor"] == 2**lv
        assert set(node.data_vars) == ({"data", "idx"} if info.kind == "point cloud" else {"data"})
        if info.kind == "point cloud":
            assert set(node.coords) >= {"x", "y"}


def test_level_argument(root):
    path = root / "ras_mean_v1"
    n = read_moraine_info(path).n_levels
    np.testing.assert_array_equal(open_moraine_level(path, -1).values, open_moraine_level(path, n - 1).values)
    with pytest.raises(MoraineLevelError, match=f"0..{n - 1}"):
        open_moraine_level(path, n)
    with pytest.raises(IndexError):
        open_moraine_level(path, -n - 1)
    with pytest.raises(TypeError):
        open_moraine_level(path, "1")


@pytest.mark.parametrize("name", POINT_CLOUDS)
def test_points_dataset(root, name):
    ds = open_moraine_points(root / name)
    assert set(ds.data_vars) == {"x", "y", "pc"}
    n = DOC[name]["n_points"]
    assert ds.sizes["point"] == n and ds.attrs["n_points"] == n
    for var in ("x", "y", "pc"):
        assert isinstance(ds[var].data, da.Array)
        np.testing.assert_array_equal(ds[var].values, raw(root, name, f"{var}.zarr"))
    assert ds["pc"].dims[0] == "point"


@pytest.mark.parametrize("name", RASTERS)
def test_points_and_index_refused_for_rasters(root, name):
    # the pyramid is sound: asking a raster for points is the caller's mistake, not damaged content
    for call in (lambda: open_moraine_points(root / name), lambda: open_moraine_index(root / name, 0)):
        with pytest.raises(ArgumentError, match=rf"{name} is a raster pyramid; only point-cloud") as info:
            call()
        assert not isinstance(info.value, PyramidError)
    assert read_moraine_rtree(root / name) is None


@pytest.mark.parametrize("name", POINT_CLOUDS)
def test_rtree(root, name):
    info = read_moraine_info(root / name)
    tree = read_moraine_rtree(root / name)
    # a pyramid without rtree.zarr gets the tree built in memory from its points (the contract's reader rule)
    assert info.has_rtree == (name != "pc_int_legacy_090") and tree.attrs["built"] == (not info.has_rtree)
    assert tree.dims == ("node", "bound") and tree.shape[1] == 4
    pts = open_moraine_points(root / name).compute()
    x, y = pts["x"].values, pts["y"].values
    assert tree.attrs["n_points"] == x.size and tree.attrs["page_size"] > 0
    boxes = tree.values
    padding = np.isnan(boxes).all(axis=1)  # absent nodes of the tree layout are all nan
    assert not np.isnan(boxes[~padding]).any()
    boxes = boxes[~padding]
    assert len(boxes) >= math.ceil(x.size / tree.attrs["page_size"])  # at least the leaves
    assert np.all(boxes[:, 0] <= boxes[:, 2]) and np.all(boxes[:, 1] <= boxes[:, 3])
    union = [boxes[:, 0].min(), boxes[:, 1].min(), boxes[:, 2].max(), boxes[:, 3].max()]
    np.testing.assert_allclose(union, [x.min(), y.min(), x.max(), y.max()])


# ----------------------------------------------------------------------------- modified copies


def _edit_marker(path: Path, edit) -> None:
    v3 = path / "0.zarr" / "zarr.json"
    if v3.exists():
        meta = json.loads(v3.read_text())
        edit(meta["attributes"]["moraine_pyramid"])
        v3.write_text(json.dumps(meta))
    else:
        v2 = path / "0.zarr" / ".zattrs"
        attrs = json.loads(v2.read_text())
        edit(attrs["moraine_pyramid"])
        v2.write_text(json.dumps(attrs))


@pytest.mark.parametrize("name", ["ras_mean_v1", "ras_decimate_v1_zarr2", "pc_first_v1"])
def test_newer_version_rejected(root, name, tmp_path):
    copy = copy_fixture(root, name, tmp_path)
    _edit_marker(copy, lambda m: m.update(version=2))
    assert is_moraine_pyramid(copy), "it is a moraine pyramid, only of an unsupported version"
    for call in (
        read_moraine_info,
        open_moraine_level,
        open_moraine_pyramid,
        lambda p: open_moraine_index(p, 0),
    ):
        with pytest.raises(UnsupportedVersionError) as err:
            call(copy)
        assert "version 2" in str(err.value) and "version 1" in str(err.value)
        assert isinstance(err.value, MoczarrError)


def test_bad_marker_version_rejected(root, tmp_path):
    copy = copy_fixture(root, "ras_mean_v1", tmp_path)
    _edit_marker(copy, lambda m: m.update(version="1"))
    with pytest.raises(PyramidError, match="version"):
        read_moraine_info(copy)


def test_kind_mismatch_rejected(root, tmp_path):
    pc = copy_fixture(root, "pc_first_v1", tmp_path)
    _edit_marker(pc, lambda m: m.update(kind="raster"))
    with pytest.raises(PyramidError, match=r"bounds\.toml"):
        read_moraine_info(pc)

    ras = copy_fixture(root, "ras_mean_v1", tmp_path)
    (ras / "bounds.toml").write_text("bounds = [0, 0, 199, 299]\n")
    with pytest.raises(PyramidError, match="kind 'raster'"):
        read_moraine_info(ras)

    lost = copy_fixture(root, "pc_int_mean_v1", tmp_path)
    (lost / "bounds.toml").unlink()
    with pytest.raises(PyramidError, match=r"no bounds\.toml"):
        read_moraine_info(lost)


def test_unknown_method_and_missing_level_rejected(root, tmp_path):
    copy = copy_fixture(root, "ras_mean_v1", tmp_path)
    _edit_marker(copy, lambda m: m.update(method="first"))  # a point-cloud method
    with pytest.raises(PyramidError, match="method"):
        read_moraine_info(copy)
    copy2 = copy_fixture(root, "stack_decimate_v1", tmp_path)
    shutil.rmtree(copy2 / "5.zarr")
    with pytest.raises(PyramidError, match=r"5\.zarr"):
        read_moraine_info(copy2)


def test_method_absent_means_default(root, tmp_path):
    copy = copy_fixture(root, "pc_first_v1", tmp_path)
    _edit_marker(copy, lambda m: m.pop("method"))
    info = read_moraine_info(copy)
    assert info.method == "first" and not info.method_declared and not info.legacy


def test_not_a_pyramid(root, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello")
    assert not is_moraine_pyramid(empty)
    with pytest.raises(NotAMorainePyramidError) as err:
        read_moraine_info(empty)
    assert str(empty) in str(err.value) and "0.zarr" in str(err.value)
    assert isinstance(err.value, PyramidError)

    missing = tmp_path / "does-not-exist"
    assert not is_moraine_pyramid(missing)
    with pytest.raises(NotAMorainePyramidError, match="does not exist"):
        open_moraine_pyramid(missing)

    # a 0.zarr without the marker and nothing else
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copytree(root / "ras_legacy_090" / "0.zarr", lone / "0.zarr")
    assert not is_moraine_pyramid(lone)
    with pytest.raises(NotAMorainePyramidError) as err:
        read_moraine_info(lone)
    assert str(lone) in str(err.value) and "moraine_pyramid" in str(err.value) and "1.zarr" in str(err.value)

    # a zarr group at 0.zarr
    grp = tmp_path / "grp"
    zarr.open_group(str(grp / "0.zarr"), mode="w")
    assert not is_moraine_pyramid(grp)
    with pytest.raises(NotAMorainePyramidError, match="not a zarr array"):
        read_moraine_info(grp)


def test_levels_are_lazy(root, tmp_path):
    copy = copy_fixture(root, "ras_mean_v1", tmp_path)
    chunk = copy / "0.zarr" / "c" / "0" / "0"
    assert chunk.is_file()
    chunk.write_bytes(b"not a zstd frame")
    level = open_moraine_level(copy, 0)  # opening reads metadata only
    tree = open_moraine_pyramid(copy)
    np.testing.assert_array_equal(tree["l1"]["data"].values, open_moraine_level(root / "ras_mean_v1", 1).values)
    with pytest.raises(ChunkError, match=r"0\.zarr"):
        level.compute()


def _snapshot(path: Path) -> dict:
    return {
        str(p.relative_to(path)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("name", ["pc_first_v1", "ras_decimate_v1_zarr2"])
def test_nothing_is_written(root, name, tmp_path):
    copy = copy_fixture(root, name, tmp_path)
    before = _snapshot(copy)
    info = read_moraine_info(copy)
    is_moraine_pyramid(copy)
    open_moraine_pyramid(copy).compute()
    for lv in range(info.n_levels):
        open_moraine_level(copy, lv).compute()
    if info.kind == "point cloud":
        open_moraine_points(copy).compute()
        open_moraine_index(copy, 1).compute()
        read_moraine_rtree(copy).compute()
    assert _snapshot(copy) == before


def test_malformed_stats_zarr_is_dropped_with_warning(root, tmp_path):
    from moczarr.errors import ObjectDroppedWarning

    copy = copy_fixture(root, "stack_decimate_v1", tmp_path)
    meta_path = copy / "stats.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["attributes"]["columns"] = ["nan_fraction", "min"]  # 2 names for 8 columns
    meta_path.write_text(json.dumps(meta))
    with pytest.warns(ObjectDroppedWarning, match="stats.zarr"):
        info = read_moraine_info(copy)
    assert info.channel_stats is None and info.stats is not None


# ----------------------------------------------------------------------------- fsspec (s3)


@pytest.fixture(scope="module")
def s3(root, s3_server):
    """Signed ``storage_options`` for the session's S3 server, holding two pyramids in bucket ``moraine``."""
    s3_server.bucket("moraine")
    for name in ("pc_first_v1", "ras_decimate_v1_zarr2"):
        s3_server.upload_tree(root / name, "moraine", name)
    return s3_server.storage_options(anon=False)


@pytest.mark.parametrize("name", ["pc_first_v1", "ras_decimate_v1_zarr2"])
def test_s3_matches_local(root, s3, name):
    url = f"s3://moraine/{name}"
    assert is_moraine_pyramid(url, storage_options=s3)
    remote = read_moraine_info(url, storage_options=s3)
    local = read_moraine_info(root / name)
    for field in (
        "kind",
        "version",
        "method",
        "stats",
        "shapes",
        "dtypes",
        "zarr_format",
        "bounds",
        "resolution",
        "has_rtree",
        "channel_stats",
        "n_points",
    ):
        assert getattr(remote, field) == getattr(local, field), field
    assert remote.path == url
    last = remote.n_levels - 1
    for lv in (0, last):
        np.testing.assert_array_equal(
            open_moraine_level(url, lv, storage_options=s3).values, open_moraine_level(root / name, lv).values
        )
    tree = open_moraine_pyramid(url, storage_options=s3)
    assert list(tree.children) == [f"l{lv}" for lv in range(remote.n_levels)]
    if remote.kind == "point cloud":
        xr.testing.assert_equal(
            open_moraine_points(url, storage_options=s3).compute(),
            open_moraine_points(root / name).compute().assign_attrs(source=url),
        )
        np.testing.assert_array_equal(
            read_moraine_rtree(url, storage_options=s3).values, read_moraine_rtree(root / name).values
        )
    assert not is_moraine_pyramid("s3://moraine/nothing-here", storage_options=s3)
    with pytest.raises(NotAMorainePyramidError, match=r"0\.zarr"):
        read_moraine_info("s3://moraine/nothing-here", storage_options=s3)
