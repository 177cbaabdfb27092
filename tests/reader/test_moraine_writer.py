"""moczarr.testing.moraine: the pyramids it writes follow the contract, read back through moczarr.moraine,
and (when ../shared/fixtures/moraine is there) lay out like the moraine project's own pyramids."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
import zarr

from moczarr.moraine import (
    open_moraine_index,
    open_moraine_level,
    open_moraine_points,
    read_moraine_info,
    read_moraine_rtree,
)
from moczarr.testing.moraine import (
    block_mean,
    first_of_blocks,
    hilbert_order,
    hilbert_rtree,
    level_shapes,
    marker_statistics,
    write_point_cloud_pyramid,
    write_raster_pyramid,
)
from tests.helpers import FIXTURES, fixtures_dir, generated_dir
from tests.stores.moraine_stores import write_all

NAMES = [
    "ras_mean_v1",
    "stack_decimate_v1",
    "cpx_mean_v1",
    "ras_decimate_v1_zarr2",
    "pc_first_v1",
    "pc_int_mean_v1",
    "ras_legacy_090",
    "pc_int_legacy_090",
]


def _points(n=200, seed=0):
    rng = np.random.default_rng(seed)
    cells = rng.choice(40 * 30, size=n, replace=False)
    i, j = np.divmod(cells, 30)
    return (10.0 + j * 2.0).astype(np.float64), (-5.0 + i * 2.0).astype(np.float64), i, j


# -- the writer's own rules --------------------------------------------------------------------------------
def test_level_shapes_follow_the_contract():
    assert level_shapes((300, 200)) == [(300, 200), (150, 100), (75, 50), (38, 25), (19, 13), (10, 7), (5, 4), (3, 2)]
    assert level_shapes((5, 9, 3)) == [(5, 9, 3), (3, 5, 3), (2, 3, 3)]
    with pytest.raises(ValueError, match="2 pixels"):
        level_shapes((1, 40))


def test_block_mean_over_finite_pixels_and_first_of_blocks():
    a = np.array([[1.0, np.nan, 4.0], [3.0, np.nan, np.nan]], dtype=np.float32)
    np.testing.assert_array_equal(block_mean(a, 2), [[2.0, 4.0]])
    assert np.isnan(block_mean(np.full((2, 2), np.nan), 2)).all()
    idx = np.array([[-1, 5, -1], [7, -1, -1], [-1, -1, 2]])
    np.testing.assert_array_equal(first_of_blocks(idx), [[5, -1], [-1, 2]])


def test_raster_pyramid_round_trips_through_the_reader(tmp_path):
    rng = np.random.default_rng(1)
    data = rng.normal(size=(37, 20)).astype(np.float32)
    data[3:9, 4:6] = np.nan
    path = write_raster_pyramid(tmp_path / "r", data, method="mean", chunks=(16, 16))
    info = read_moraine_info(path)
    assert (info.kind, info.method, info.version, info.legacy) == ("raster", "mean", 1, False)
    assert info.shapes == level_shapes(data.shape)
    np.testing.assert_array_equal(open_moraine_level(path, 0).values, data)
    for lv in range(1, info.n_levels):
        np.testing.assert_allclose(
            open_moraine_level(path, lv).values, block_mean(data, 2**lv), rtol=1e-6, equal_nan=True
        )
    finite = data[np.isfinite(data)].astype(np.float64)
    assert info.stats["mean"] == pytest.approx(finite.mean(), rel=1e-5)
    assert info.stats["nan_fraction"] == pytest.approx(12 / data.size, rel=1e-5)


def test_integer_raster_mean_levels_are_float32_and_decimate_keeps_the_dtype(tmp_path):
    data = np.arange(64, dtype=np.int16).reshape(8, 8)
    mean = read_moraine_info(write_raster_pyramid(tmp_path / "m", data, method="mean"))
    assert mean.dtypes[1] == "float32" and mean.dtypes[0] == "int16"
    dec = write_raster_pyramid(tmp_path / "d", data)
    np.testing.assert_array_equal(open_moraine_level(dec, 2).values, data[::4, ::4])
    assert open_moraine_level(dec, 2).dtype == np.int16


def test_point_cloud_pyramid_round_trips_through_the_reader(tmp_path):
    x, y, i, j = _points()
    pc = (i * 100 + j).astype(np.int16)
    path = write_point_cloud_pyramid(tmp_path / "p", x, y, pc, resolution=2.0, method="mean", page_size=32)
    # with an r-tree the points are stored in Hilbert order (the tree's pages are runs of stored points)
    perm = hilbert_order(x, y, 2.0)
    x, y, i, j, pc = x[perm], y[perm], i[perm], j[perm], pc[perm]
    info = read_moraine_info(path)
    assert (info.kind, info.method, info.n_points, info.resolution) == ("point cloud", "mean", 200, 2.0)
    idx0 = open_moraine_index(path, 0).values
    ii, jj = np.nonzero(idx0 >= 0)
    assert sorted(idx0[ii, jj]) == list(range(200)), "version 1: every point in its own cell"
    np.testing.assert_array_equal(ii, i[idx0[ii, jj]] - i.min())
    np.testing.assert_array_equal(open_moraine_level(path, 0).values[ii, jj], pc[idx0[ii, jj]].astype(np.float32))
    pts = open_moraine_points(path).compute()
    np.testing.assert_array_equal(pts["pc"].values, pc)
    boxes = read_moraine_rtree(path).values
    assert boxes.shape == (2 * 8 - 1, 4) and read_moraine_rtree(path).attrs["page_size"] == 32
    assert np.isnan(boxes).all(axis=1).sum() == 8 - math.ceil(200 / 32)
    np.testing.assert_array_equal(boxes[0], [x.min(), y.min(), x.max(), y.max()])


def test_several_points_in_a_cell_show_the_first(tmp_path):
    x = np.array([0.0, 0.2, 3.0, 0.1, 3.0])
    y = np.array([0.0, 0.1, 3.0, 0.0, 0.0])
    pc = np.array([10.0, 20.0, 30.0, 40.0, 50.0], dtype=np.float32)
    path = write_point_cloud_pyramid(tmp_path / "p", x, y, pc, resolution=1.0, rtree=False)
    idx0 = open_moraine_index(path, 0).values
    assert idx0[0, 0] == 0 and idx0[3, 3] == 2 and idx0[0, 3] == 4
    assert int((idx0 >= 0).sum()) == 3


def test_legacy_layouts(tmp_path):
    x, y, i, j = _points()
    pc = (i + j).astype(np.int16)
    path = write_point_cloud_pyramid(tmp_path / "p", x, y, pc, resolution=2.0, rtree=False, legacy=True)
    info = read_moraine_info(path)
    assert info.legacy and info.version is None and not info.has_rtree and info.stats is None
    assert info.shapes[0] == (int(i.max()), int(j.max()))  # the last line and column merged
    level0 = open_moraine_level(path, 0).values
    assert level0.dtype == np.int16 and (level0[open_moraine_index(path, 0).values < 0] == 0).all()
    raster = write_raster_pyramid(tmp_path / "r", np.ones((8, 8), np.float32), legacy=True)
    assert not (raster / "stats.zarr").exists() and read_moraine_info(raster).legacy
    with pytest.raises(ValueError, match="legacy"):
        write_raster_pyramid(tmp_path / "bad", np.ones((8, 8)), method="mean", legacy=True)
    with pytest.raises(ValueError, match="legacy"):
        write_point_cloud_pyramid(tmp_path / "bad", x, y, pc, resolution=2.0, legacy=True)


def test_bad_arguments_raise(tmp_path):
    x, y, _, _ = _points()
    with pytest.raises(ValueError, match="method"):
        write_raster_pyramid(tmp_path / "a", np.ones((4, 4)), method="first")
    with pytest.raises(ValueError, match="method"):
        write_point_cloud_pyramid(tmp_path / "b", x, y, x, resolution=1.0, method="decimate")
    with pytest.raises(ValueError, match="same points"):
        write_point_cloud_pyramid(tmp_path / "c", x, y[:-1], x, resolution=1.0)
    with pytest.raises(ValueError, match="resolution"):
        write_point_cloud_pyramid(tmp_path / "d", x, y, x, resolution=0)
    write_raster_pyramid(tmp_path / "e", np.ones((4, 4)))
    with pytest.raises(FileExistsError, match="overwrite"):
        write_raster_pyramid(tmp_path / "e", np.ones((4, 4)))
    write_raster_pyramid(tmp_path / "e", np.zeros((4, 4)), overwrite=True)
    assert open_moraine_level(tmp_path / "e", 0).values.max() == 0


def test_marker_statistics_kinds():
    assert marker_statistics(np.array([True, False, False, True])) == {"true_fraction": 0.5}
    cpx = marker_statistics(np.array([3 + 4j, 0 + 1j], dtype=np.complex64))
    assert cpx["amplitude_max"] == 5.0 and "max" not in cpx
    empty = marker_statistics(np.full(3, np.nan))
    assert empty["nan_fraction"] == 1.0 and empty["min"] is None


def test_rtree_boxes_hold_their_pages():
    x, y, _, _ = _points(n=100)
    boxes = hilbert_rtree(x, y, 2.0, page_size=10)
    leaves = boxes[15:]  # 10 pages -> 16 leaves in heap layout
    assert np.isnan(leaves[10:]).all() and not np.isnan(leaves[:10]).any()
    for k in range(15):
        kids = boxes[[2 * k + 1, 2 * k + 2]]
        kids = kids[~np.isnan(kids).all(axis=1)]
        if kids.size:
            assert boxes[k][0] <= kids[:, 0].min() and boxes[k][3] >= kids[:, 3].max()
    with pytest.raises(ValueError, match="page_size"):
        hilbert_rtree(x, y, 2.0, page_size=0)


def test_writer_is_deterministic(tmp_path):
    write_all(tmp_path / "a")
    write_all(tmp_path / "b")
    for name in NAMES:
        for f in sorted((tmp_path / "a" / name).rglob("*")):
            if f.is_file():
                assert f.read_bytes() == (tmp_path / "b" / name / f.relative_to(tmp_path / "a" / name)).read_bytes()


# -- conventions shared with the moraine project's pyramids --------------------------------------------------
def _layout(root: Path) -> dict:
    """Files and, per array, the metadata conventions (not the values) of a pyramid."""
    out = {}
    for entry in sorted(root.iterdir()):
        if entry.suffix != ".zarr":
            out[entry.name] = "file"
            continue
        arr = zarr.open_array(str(entry), mode="r")
        attrs = dict(arr.attrs)
        marker = attrs.pop("moraine_pyramid", None)
        out[entry.name] = {
            "shape": arr.shape,
            "dtype": str(arr.dtype),
            "chunks": arr.chunks,
            "fill_value": str(arr.fill_value),
            "zarr_format": arr.metadata.zarr_format,
            "compressors": [type(c).__name__ for c in arr.compressors],
            "attr_keys": sorted(attrs),
            "columns": attrs.get("columns"),
            "page_size": attrs.get("page_size"),
            "marker": None if marker is None else {k: marker[k] for k in ("version", "kind", "method")},
            "stat_keys": None if marker is None else sorted(marker["stats"]),
        }
    return out


@pytest.mark.conformance("compares the generated pyramids with the moraine project's")
def test_generated_pyramids_lay_out_like_the_moraine_projects():
    """Same files, and per array the same shape, dtype, chunks, fill, format, codecs and attribute keys."""
    for name in NAMES:
        shared = fixtures_dir() / "moraine" / name
        assert shared.is_dir(), f"{name} missing from {FIXTURES / 'moraine'}"
        mine, theirs = _layout(generated_dir() / "moraine" / name), _layout(shared)
        assert sorted(mine) == sorted(theirs), name
        for entry, want in theirs.items():
            assert mine[entry] == want, f"{name}/{entry}"
        bounds = generated_dir() / "moraine" / name / "bounds.toml"
        if (shared / "bounds.toml").exists():
            assert len(tomllib.loads(bounds.read_text())["bounds"]) == 4, name
