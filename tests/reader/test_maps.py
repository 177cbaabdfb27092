"""xdggs conventions, cell centres, plotting, and occupied rows.

Centres are checked against mortie's ``mort2geo`` (the reader's only
geometry source) and against xdggs' own decoding; occupancy against a
computed ``count > 0`` filter.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import mortie
import numpy as np
import pytest
import xarray as xr
import xdggs

import moczarr
from moczarr.errors import MapError
from tests.helpers import SAMPLE, fixture_path, quiet

XDGGS_ATTRS = {"grid_name", "level", "indexing_scheme", "ellipsoid"}


def _levels(root, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        tree = moczarr.open_pyramid(root, **kw)
    return {name: tree[name].ds for name in tree.children}


STORES = [
    (SAMPLE / "elevation", {}),
    (SAMPLE / "elevation_yearly", {"window": "2019"}),
    ("serc_hive", {}),
    ("zagg/column/store", {}),
    ("zagg/pyramid_windows/store", {"window": "2020"}),
    ("spec/temporal", {}),
    ("spec/minimal", {}),
    ("serc_hive_pg3", {}),
]


@pytest.mark.layers
@pytest.mark.parametrize("store,kw", STORES, ids=[str(s).split("catalogs/")[-1] for s, _ in STORES])
def test_xdggs_decodes_every_level_and_agrees_with_mortie(store, kw):
    root = store if isinstance(store, Path) else fixture_path(store)
    levels = _levels(root, **kw)
    assert levels
    for name, ds in levels.items():
        attrs = ds["cell_ids"].attrs
        assert set(attrs) == XDGGS_ATTRS, name
        assert attrs["level"] == ds.attrs["morton_hive"]["cell_order"] and attrs["indexing_scheme"] == "nested"
        decoded = xdggs.decode(ds)
        info = decoded.dggs.grid_info
        assert info.level == attrs["level"]
        words = ds["morton"].values
        centres = decoded.dggs.cell_centers()
        lat, lon = mortie.mort2geo(np.asarray(words, dtype=np.uint64))
        np.testing.assert_allclose(centres["latitude"].values, np.atleast_1d(lat), atol=1e-9, err_msg=name)
        dlon = (centres["longitude"].values - np.atleast_1d(lon) + 180) % 360 - 180
        np.testing.assert_allclose(dlon, 0, atol=1e-9, err_msg=name)


def test_cell_centers_adds_lon_lat_from_the_index_without_reading_data():
    with quiet():
        ds = moczarr.open_hive(SAMPLE / "elevation")
    with moczarr.count_requests() as counter:
        out = moczarr.cell_centers(ds)
    assert counter.gets == 0
    lat, lon = mortie.mort2geo(ds["morton"].values)
    np.testing.assert_allclose(out["lat"].values, lat)
    np.testing.assert_allclose(out["lon"].values, (np.asarray(lon) + 180) % 360 - 180)
    assert out["lon"].dims == ("cells",) and (out["lon"].values < 0).all()  # Chesapeake Bay: west of Greenwich
    assert out["lat"].attrs["units"] == "degrees_north"
    with pytest.raises(MapError, match="morton"):
        moczarr.cell_centers(xr.Dataset({"x": ("cells", [1])}))


def test_plot_cells_draws_one_polygon_per_cell():
    import matplotlib

    matplotlib.use("Agg")
    with quiet():
        ds = moczarr.open_hive(SAMPLE / "elevation", aoi=moczarr.BBox(-77.2, 38.5, -76.3, 39.3))
    ax = moczarr.plot_cells(ds, "h_mean")
    (coll,) = ax.collections
    assert len(coll.get_paths()) == ds.sizes["cells"]
    values = np.ma.getdata(coll.get_array())
    np.testing.assert_array_equal(np.isnan(values), np.isnan(ds["h_mean"].values))
    x0, x1 = ax.get_xlim()
    assert -78 < x0 < x1 < -76
    with pytest.raises(MapError, match="no variable"):
        moczarr.plot_cells(ds, "nope")


def test_plot_cells_names_the_extra_when_matplotlib_is_missing(monkeypatch):
    with quiet():
        ds = moczarr.open_hive(SAMPLE / "elevation", aoi=["4331421"])
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"moczarr\[plot\]"):
        moczarr.plot_cells(ds, "count")


@pytest.mark.layers
def test_plot_cells_refuses_a_stacked_variable():
    with quiet():
        ds = moczarr.open_hive(fixture_path("zagg/windowed/store"), time=("2019-01-01", "2021-01-01"))
    with pytest.raises(MapError, match="one value per cell"):
        moczarr.plot_cells(ds, "count")


# -- occupied ----------------------------------------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize(
    "store,kw",
    [
        (SAMPLE / "elevation", {}),
        ("serc_hive", {}),
        ("serc_hive_pg3", {}),
        ("zagg/windowed/store", {"window": "2020"}),
        ("spec/minimal", {}),
    ],
    ids=["sample", "serc_hive", "serc_hive_pg3", "windowed", "minimal"],
)
def test_occupied_equals_count_filter_and_reads_no_data(store, kw, tmp_path):
    root = store if isinstance(store, Path) else fixture_path(store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        ds = moczarr.open_hive(root, **kw)
    with moczarr.count_requests() as counter:
        got = moczarr.occupied(ds, root)
    n = ds.attrs["morton_hive"]["n_leaves"]
    assert counter.kind("stamp") == n and counter.kind("bitmap") <= n
    assert {k for _, k in counter} <= {"manifest", "stamp", "bitmap"}, counter.summary()
    counts = ds["count"].values
    expect = ds["morton"].values[counts > 0]
    np.testing.assert_array_equal(got["morton"].values, expect)
    np.testing.assert_array_equal(got["count"].values, counts[counts > 0])
    assert (got["count"].values > 0).all()
    got.to_zarr(tmp_path / "occupied.zarr", consolidated=False)
    back = xr.open_zarr(tmp_path / "occupied.zarr", consolidated=False)
    np.testing.assert_array_equal(back["count"].values, counts[counts > 0])


def test_occupied_without_a_store_or_on_derived_levels_uses_count():
    levels = _levels(SAMPLE / "elevation")
    for name, ds in levels.items():
        with moczarr.count_requests() as counter:
            got = moczarr.occupied(ds)
        assert counter.kind("stamp") == 0 and counter.kind("bitmap") == 0
        np.testing.assert_array_equal(got["morton"].values, ds["morton"].values[ds["count"].values > 0], err_msg=name)
    with pytest.raises(moczarr.errors.CoverageError, match="count"):
        moczarr.occupied(levels["o8"].drop_vars("count"))


@pytest.mark.layers
def test_occupied_on_a_time_stack_keeps_cells_observed_in_any_window():
    with quiet():
        ds = moczarr.open_hive(fixture_path("zagg/windowed/store"), time=("2019-01-01", "2022-01-01"))
    got = moczarr.occupied(ds, fixture_path("zagg/windowed/store"))
    any_count = (np.nan_to_num(ds["count"].values) > 0).any(axis=0)
    np.testing.assert_array_equal(got["morton"].values, ds["morton"].values[any_count])
