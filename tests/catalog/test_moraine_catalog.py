"""Catalog tests for moraine pyramids (moczarr_intake.moraine_catalog) against ../shared/fixtures/moraine.

For every fixture: an Intake ``version: 1`` catalog written by ``moraine_sources`` opens the same data
as :func:`moczarr.moraine.open_moraine_level` at several levels, ``level`` errors are clear, point
clouds get a points entry, the metadata says what the pyramid is; the STAC Item validates offline,
its raster statistics equal the marker / ``stats.zarr`` values (read here straight from zarr, not
through the reader), and only the EPSG:3857-like point cloud gets the projection extension and a
WGS84 bbox. Missing fixtures fail under ``CI=true`` (``tests/conftest.py``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import shutil
from pathlib import Path

import dask.array as da
import intake
import numpy as np
import pystac
import pytest
import xarray as xr
import yaml
import zarr
from pystac.errors import STACValidationError

from moczarr.moraine import (
    MoraineLevelError,
    open_moraine_level,
    open_moraine_points,
    read_moraine_info,
)
from moczarr_intake import stac as stac_module
from moczarr_intake.intake_yaml.catalog import v1_catalog, write_yaml
from moczarr_intake.moraine_catalog import (
    PROJECTION_EXT,
    RASTER_EXT,
    ZARR_MEDIA_TYPE,
    MissingSchemaError,
    MoraineLevelSource,
    MorainePointsSource,
    moraine_sources,
    moraine_stac_item,
    validate_item,
)
from tests.helpers import fixture_path

# intake 2.0.9 warns about shell templates for every string default, whatever the catalog holds
pytestmark = [pytest.mark.layers, pytest.mark.filterwarnings("ignore:Shell command not executed:UserWarning")]

# what the fixtures' README documents (not read from the pyramids)
FIXTURES = {
    "ras_mean_v1": {"kind": "raster", "levels": 8, "legacy": False},
    "stack_decimate_v1": {"kind": "raster", "levels": 8, "legacy": False},
    "cpx_mean_v1": {"kind": "raster", "levels": 7, "legacy": False},
    "ras_decimate_v1_zarr2": {"kind": "raster", "levels": 8, "legacy": False},
    "pc_first_v1": {"kind": "point cloud", "levels": 7, "legacy": False},
    "pc_int_mean_v1": {"kind": "point cloud", "levels": 7, "legacy": False},
    "ras_legacy_090": {"kind": "raster", "levels": 8, "legacy": True},
    "pc_int_legacy_090": {"kind": "point cloud", "levels": 7, "legacy": True},
}
NAMES = list(FIXTURES)
POINT_CLOUDS = [n for n in NAMES if FIXTURES[n]["kind"] == "point cloud"]
GEOREFERENCED = {"pc_first_v1"}  # README: "EPSG:3857-like coords"
R = 6378137.0
CORE = "https://schemas.stacspec.org/v1.1.0/item-spec/json-schema/item.json"


def _path(name: str) -> Path:
    return fixture_path(f"moraine/{name}")


def _catalog(out: Path, names, stac_hrefs=None):
    sources = {}
    for name in names:
        info = read_moraine_info(_path(name))
        sources.update(moraine_sources(info, out, stac_hrefs or {}))
    path = out / "catalog.yaml"
    path.write_text(yaml.safe_dump({"sources": sources}, sort_keys=False))
    return intake.open_catalog(str(path)), sources


def _check_levels(n: int) -> list[int]:
    return sorted({0, 1, n // 2, n - 1})


# --------------------------------------------------------------------------- intake


@pytest.mark.parametrize("name", NAMES)
def test_entries_open_the_reader_levels(name, tmp_path):
    cat, _ = _catalog(tmp_path, [name])
    n = FIXTURES[name]["levels"]
    assert name in cat
    lazy = cat[name].to_dask()  # default level 0
    assert isinstance(lazy.data, da.Array)
    xr.testing.assert_identical(lazy.compute(), open_moraine_level(_path(name), 0).compute())
    for level in _check_levels(n):
        source = cat[name](level=level)
        assert isinstance(source, MoraineLevelSource)
        lazy = source.to_dask()
        assert isinstance(lazy.data, da.Array), "to_dask() must stay lazy"
        loaded = source.read()
        assert isinstance(loaded.data, np.ndarray)
        expected = open_moraine_level(_path(name), level)
        xr.testing.assert_identical(loaded, expected.compute())
        xr.testing.assert_identical(lazy.compute(), expected.compute())
        assert isinstance(source.to_dask().data, da.Array), "read() must not load the lazy array in place"
        schema = source.discover()
        assert tuple(schema["shape"]) == tuple(expected.shape)
        assert schema["dtype"] == str(expected.dtype)


@pytest.mark.parametrize("name", NAMES)
def test_level_parameter(name, tmp_path):
    cat, _ = _catalog(tmp_path, [name])
    n = FIXTURES[name]["levels"]
    (param,) = cat[name].describe()["user_parameters"]
    assert param["name"] == "level" and param["type"] == "int" and param["default"] == 0
    assert param["allowed"] == list(range(n))
    assert (param["min"], param["max"]) == (0, n - 1)
    with pytest.raises(ValueError, match=rf"level={n} is greater than {n - 1}"):
        cat[name](level=n)
    with pytest.raises(ValueError, match=r"level=-1 is less than 0"):
        cat[name](level=-1)
    assert cat[name](level=str(n - 1)).to_dask().attrs["level"] == n - 1  # strings are coerced
    # the source on its own: the reader's error names the levels there are
    with pytest.raises(MoraineLevelError, match=rf"level {n + 3} does not exist; levels are 0\.\.{n - 1}"):
        MoraineLevelSource(str(_path(name)), level=n + 3).to_dask()
    with pytest.raises(TypeError, match="level must be an integer"):
        MoraineLevelSource(str(_path(name)), level="coarse")


@pytest.mark.parametrize("name", NAMES)
def test_points_entry(name, tmp_path):
    cat, _ = _catalog(tmp_path, [name])
    if name not in POINT_CLOUDS:
        assert f"{name}_points" not in cat
        assert list(cat) == [name]
        return
    source = cat[f"{name}_points"]
    assert isinstance(source, MorainePointsSource)
    lazy = source.to_dask()
    assert all(isinstance(v.data, da.Array) for v in lazy.data_vars.values())
    expected = open_moraine_points(_path(name)).compute()
    xr.testing.assert_identical(source.read(), expected)
    meta = source.metadata
    assert meta["n_points"] == 3000 == expected.sizes["point"]
    assert meta["point_dtype"] == str(expected.pc.dtype)
    assert meta["bounds"] == list(read_moraine_info(_path(name)).bounds)


@pytest.mark.parametrize("name", NAMES)
def test_entry_metadata(name, tmp_path):
    path = _path(name)
    info = read_moraine_info(path)
    cat, sources = _catalog(tmp_path, [name], {info.path: f"stac/{name}/{name}.json"})
    meta = cat[name].metadata
    doc = FIXTURES[name]
    assert meta["kind"] == doc["kind"]
    assert meta["legacy"] is doc["legacy"]
    assert meta["version"] == (None if doc["legacy"] else 1)
    assert meta["method"] == info.method and meta["method_declared"] is (not doc["legacy"])
    assert meta["n_levels"] == doc["levels"]
    assert meta["shapes"] == [list(s) for s in info.shapes]
    assert meta["dtype"] == info.dtype and meta["dtypes"] == info.dtypes
    assert meta["stats"] == info.stats and meta["channel_stats"] == info.channel_stats
    if doc["legacy"]:
        assert meta["stats"] is None and meta["channel_stats"] is None
    else:
        assert meta["stats"] and meta["channel_stats"]
    if doc["kind"] == "point cloud":
        assert meta["bounds"] == list(info.bounds) and meta["resolution"] == info.resolution
    else:
        assert meta["bounds"] is None and meta["resolution"] is None
    assert meta["georeferenced"] is (name in GEOREFERENCED)
    assert meta["crs"] == ("EPSG:3857" if name in GEOREFERENCED else None)
    assert meta["stac_href"] == f"stac/{name}/{name}.json"
    # outside the catalog folder: an absolute path
    assert sources[name]["args"] == {"path": os.path.abspath(path), "level": "{{ level }}"}
    # without a STAC href there is none
    _, plain = _catalog(tmp_path, [name])
    assert "stac_href" not in plain[name]["metadata"]


def test_paths_inside_the_catalog_folder_and_safe_names(tmp_path):
    out = tmp_path / "catalog"
    moved = out / "data" / "3-odd name.v1"
    shutil.copytree(_path("pc_first_v1"), moved)
    for p in [moved, *moved.rglob("*")]:  # the shared copy is read-only
        p.chmod(0o755 if p.is_dir() else 0o644)
    info = read_moraine_info(moved)
    sources = moraine_sources(info, out, {})
    assert list(sources) == ["moraine_3_odd_name_v1", "moraine_3_odd_name_v1_points"]
    entry = sources["moraine_3_odd_name_v1"]
    assert entry["args"]["path"] == "{{ CATALOG_DIR }}/data/3-odd name.v1"
    assert entry["metadata"]["path"] == "{{ CATALOG_DIR }}/data/3-odd name.v1"
    write_yaml({"sources": sources}, out / "catalog.yaml")
    # the catalog folder moves with its pyramids
    elsewhere = tmp_path / "moved"
    shutil.move(out, elsewhere)
    cat = intake.open_catalog(str(elsewhere / "catalog.yaml"))
    got = cat.moraine_3_odd_name_v1(level=2).read()
    xr.testing.assert_identical(got, open_moraine_level(_path("pc_first_v1"), 2).compute())
    assert cat.moraine_3_odd_name_v1_points.read().sizes["point"] == 3000


def test_v1_catalog_includes_moraine_entries(tmp_path):
    """The path the ``build`` command takes: v1_catalog(..., moraine=[infos])."""
    infos = [read_moraine_info(_path(n)) for n in NAMES]
    hrefs = {infos[0].path: "stac/first.json"}
    doc = v1_catalog([], tmp_path, stac_hrefs=hrefs, moraine=infos)
    path = write_yaml(doc, tmp_path / "catalog.yaml")
    cat = intake.open_catalog(str(path))
    assert sorted(cat) == sorted([*NAMES, *(f"{n}_points" for n in POINT_CLOUDS)])
    assert cat[NAMES[0]].metadata["stac_href"] == "stac/first.json"
    xr.testing.assert_identical(
        cat.stack_decimate_v1(level=3).read(), open_moraine_level(_path("stack_decimate_v1"), 3).compute()
    )


# --------------------------------------------------------------------------- STAC


def _marker_stats(path: Path) -> dict | None:
    attrs = zarr.open_array(str(path / "0.zarr"), mode="r").attrs.asdict()
    return (attrs.get("moraine_pyramid") or {}).get("stats")


def _stats_zarr(path: Path):
    """(columns, values) of stats.zarr read directly, or None."""
    if not (path / "stats.zarr").is_dir():
        return None
    arr = zarr.open_array(str(path / "stats.zarr"), mode="r")
    return list(arr.attrs["columns"]), np.asarray(arr[...], dtype=np.float64)


def _copy_with_new_mtimes(path: Path, dest: Path) -> Path:
    shutil.copytree(path, dest)  # copytree sets new modification times on the metadata documents
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
        os.utime(p, (1e9, 1e9))
    return dest


def test_item_time_does_not_change_with_a_copy(tmp_path):
    path = _path("ras_mean_v1")
    copied = _copy_with_new_mtimes(path, tmp_path / "ras_mean_v1")
    first, second = moraine_stac_item(read_moraine_info(path)), moraine_stac_item(read_moraine_info(copied))
    assert first.datetime == second.datetime
    assert first.properties["moraine:datetime_source"] == second.properties["moraine:datetime_source"]


@pytest.mark.parametrize("name", NAMES)
def test_stac_item_validates_offline(name):
    path = _path(name)
    info = read_moraine_info(path)
    item = moraine_stac_item(info)
    used = validate_item(item)
    expected_ext = [RASTER_EXT, PROJECTION_EXT] if name in GEOREFERENCED else [RASTER_EXT]
    assert item.stac_extensions == expected_ext
    assert used == [CORE, *expected_ext]
    # the JSON form validates too (what a static catalog holds)
    validate_item(pystac.Item.from_dict(item.to_dict()))
    assert item.id == name
    n = FIXTURES[name]["levels"]
    levels = [f"l{i}" for i in range(n)]
    assert [k for k in item.assets if k.startswith("l")] == levels
    for i, key in enumerate(levels):
        asset = item.assets[key]
        assert asset.href == f"{info.path}/{i}.zarr" and Path(asset.href).is_dir()
        assert asset.media_type == f"{ZARR_MEDIA_TYPE}; version={info.zarr_format}"
        assert "data" in asset.roles
        assert asset.extra_fields["moraine:shape"] == list(info.shapes[i])
        bands = asset.extra_fields["raster:bands"]
        assert len(bands) == int(np.prod(info.shapes[i][2:], dtype=int))
    if name in POINT_CLOUDS:
        for key, file in (("points", "pc.zarr"), ("x", "x.zarr"), ("y", "y.zarr")):
            assert item.assets[key].href == f"{info.path}/{file}"
            assert Path(item.assets[key].href).is_dir()
            assert item.assets[key].roles == ["data"]
    else:
        assert not {"points", "x", "y"} & set(item.assets)
    props = item.properties
    assert props["moraine:kind"] == FIXTURES[name]["kind"]
    assert props["moraine:legacy"] is FIXTURES[name]["legacy"]
    assert props["moraine:n_levels"] == n
    # datetime convention: when 0.zarr's metadata was written
    # no time is recorded in these pyramids: a stated placeholder, never a file's modification time
    assert item.datetime == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert props["moraine:datetime_source"].startswith("placeholder")


@pytest.mark.parametrize("name", NAMES)
def test_raster_statistics_equal_the_stored_ones(name):
    path = _path(name)
    item = moraine_stac_item(read_moraine_info(path))
    marker = _marker_stats(path)
    table = _stats_zarr(path)
    stats_asset = "points" if name in POINT_CLOUDS else "l0"
    bands = item.assets[stats_asset].extra_fields["raster:bands"]
    # statistics only where they describe the data: level 0 of a raster, the points of a point cloud
    for key, asset in item.assets.items():
        if key != stats_asset:
            for band in asset.extra_fields.get("raster:bands", []):
                assert "statistics" not in band and "moraine:percentiles" not in band
    if FIXTURES[name]["legacy"]:
        assert marker is None and table is None
        assert all("statistics" not in b for b in bands)
        assert "moraine:stats" not in item.properties
        return
    assert item.properties["moraine:stats"] == marker
    columns, values = table
    rows = values.reshape(-1, len(columns))
    assert len(bands) == len(rows)
    amplitude = np.dtype(read_moraine_info(path).dtype).kind == "c"
    for band, row in zip(bands, rows, strict=True):
        col = dict(zip(columns, row, strict=True))
        st = band["statistics"]
        assert st["valid_percent"] == pytest.approx(100.0 * (1.0 - col["nan_fraction"]), abs=1e-12)
        if col["nan_fraction"] == 1.0:  # an all-nan channel (stack image 2)
            assert st == {"valid_percent": 0.0} and "moraine:percentiles" not in band
            continue
        assert st["minimum"] == col["min"] and st["maximum"] == col["max"]
        assert st["mean"] == col["mean"] and st["stddev"] == col["std"]
        assert band["moraine:percentiles"] == {"p01": col["p01"], "p50": col["p50"], "p99": col["p99"]}
        if amplitude:
            assert band["moraine:statistics_of"] == "amplitude"
            assert band["data_type"] == "cfloat32"
        else:
            assert "moraine:statistics_of" not in band
    # one band: the stats.zarr row agrees with the marker's (rounded) stats
    if len(bands) == 1:
        st = bands[0]["statistics"]
        for field, key in (("minimum", "min"), ("maximum", "max"), ("mean", "mean"), ("stddev", "std")):
            assert st[field] == pytest.approx(marker[key], rel=1e-5, abs=1e-6)
        assert st["valid_percent"] == pytest.approx(100 * (1 - marker["nan_fraction"]), rel=1e-5)
    if amplitude:
        assert {k for k in marker if k != "nan_fraction"} == {
            f"amplitude_{c}" for c in ("min", "max", "mean", "std", "p01", "p50", "p99")
        }


def test_statistics_without_stats_zarr_and_boolean():
    """Marker stats fill a single band when there is no stats.zarr; boolean data gets only true_fraction."""
    info = read_moraine_info(_path("ras_mean_v1"))
    marker = _marker_stats(_path("ras_mean_v1"))
    no_table = dataclasses.replace(info, channel_stats=None)
    item = moraine_stac_item(no_table)
    validate_item(item)
    (band,) = item.assets["l0"].extra_fields["raster:bands"]
    assert band["statistics"] == {
        "minimum": marker["min"],
        "maximum": marker["max"],
        "mean": marker["mean"],
        "stddev": marker["std"],
        "valid_percent": 100.0 * (1.0 - marker["nan_fraction"]),
    }
    boolean = dataclasses.replace(
        info,
        dtype="bool",
        dtypes=["bool"] + ["float32"] * (info.n_levels - 1),
        stats={"true_fraction": 0.25},
        channel_stats=None,
    )
    item = moraine_stac_item(boolean)
    validate_item(item)
    (band,) = item.assets["l0"].extra_fields["raster:bands"]
    assert band == {"data_type": "other", "moraine:true_fraction": 0.25}


def _to_mercator(lon: float, lat: float) -> tuple[float, float]:
    return R * math.radians(lon), R * math.log(math.tan(math.pi / 4 + math.radians(lat) / 2))


@pytest.mark.parametrize("name", NAMES)
def test_projection_only_where_georeferenced(name):
    info = read_moraine_info(_path(name))
    item = moraine_stac_item(info)
    d = item.to_dict()
    proj_keys = {k for k in d["properties"] if k.startswith("proj:")}
    proj_keys |= {k for a in d["assets"].values() for k in a if k.startswith("proj:")}
    if name not in GEOREFERENCED:
        assert item.geometry is None and item.bbox is None
        assert d["geometry"] is None and "bbox" not in d
        assert item.properties["moraine:georeferenced"] is False
        assert "no geographic reference" in item.properties["moraine:coordinates"]
        assert not proj_keys and PROJECTION_EXT not in item.stac_extensions
        return
    props = item.properties
    assert props["moraine:georeferenced"] is True and props["proj:code"] == "EPSG:3857"
    x0, y0, xm, ym = info.bounds
    half = info.resolution / 2
    assert props["proj:bbox"] == pytest.approx([x0 - half, y0 - half, xm + half, ym + half])
    for level, shape in enumerate(info.shapes):
        asset = item.assets[f"l{level}"]
        assert asset.extra_fields["proj:shape"] == list(shape[:2])
        a, b, c, d_, e, f = asset.extra_fields["proj:transform"]
        # the centre of cell (row 0, column 0) is (x0, y0); cells are resolution * 2**level wide
        assert (a * 0.5 + b * 0.5 + c, d_ * 0.5 + e * 0.5 + f) == pytest.approx((x0, y0))
        assert a == e == info.resolution * 2**level
    west, south, east, north = item.bbox
    assert -180 <= west < east <= 180 and -90 <= south < north <= 90
    assert 0 < east - west < 1 and 0 < north - south < 1  # a ~2 km x 3 km grid
    # the WGS84 bbox maps back onto proj:bbox
    back = [*_to_mercator(west, south), *_to_mercator(east, north)]
    assert back == pytest.approx(props["proj:bbox"], abs=1e-3)
    ring = item.geometry["coordinates"][0]
    assert item.geometry["type"] == "Polygon" and ring[0] == ring[-1] and len(ring) == 5
    assert {tuple(p) for p in ring} == {(west, south), (east, south), (east, north), (west, north)}
    # every point falls inside the bbox
    pts = open_moraine_points(_path(name))
    for x, y in ((float(pts.x.min()), float(pts.y.min())), (float(pts.x.max()), float(pts.y.max()))):
        lon = math.degrees(x / R)
        lat = math.degrees(2 * math.atan(math.exp(y / R)) - math.pi / 2)
        assert west <= lon <= east and south <= lat <= north


def test_crs_override_and_href_base():
    info = read_moraine_info(_path("pc_first_v1"))
    plain = moraine_stac_item(info, crs=None)
    assert plain.geometry is None and plain.properties["moraine:georeferenced"] is False
    validate_item(plain)
    raster = read_moraine_info(_path("ras_mean_v1"))
    with pytest.raises(ValueError, match="raster pyramid has no coordinates"):
        moraine_stac_item(raster, crs="EPSG:3857")
    with pytest.raises(ValueError, match="crs must be"):
        moraine_stac_item(info, crs="EPSG:4326")
    item = moraine_stac_item(info, href_base="https://example.org/pyramids/pc_first_v1/")
    assert item.assets["l3"].href == "https://example.org/pyramids/pc_first_v1/3.zarr"
    assert item.assets["points"].href == "https://example.org/pyramids/pc_first_v1/pc.zarr"
    when = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    given = moraine_stac_item(info, datetime=when)
    assert given.datetime == when and given.properties["moraine:datetime_source"] == "given"


def test_validate_item_fails_loudly(tmp_path, monkeypatch):
    info = read_moraine_info(_path("pc_first_v1"))
    item = moraine_stac_item(info)
    unknown = item.clone()
    unknown.stac_extensions.append("https://stac-extensions.github.io/not-here/v9.9.9/schema.json")
    with pytest.raises(MissingSchemaError, match=r"not-here/v9\.9\.9"):
        validate_item(unknown)
    with monkeypatch.context() as m:
        m.setattr(stac_module.validate, "SCHEMA_DIR", tmp_path / "no-schemas-here")
        with pytest.raises(MissingSchemaError, match=r"raster/v1\.1\.0"):
            validate_item(item)
    bad = item.clone()
    bad.assets["l0"].extra_fields["raster:bands"][0]["data_type"] = "float99"
    with pytest.raises(STACValidationError, match=r"raster/v1\.1\.0"):
        validate_item(bad)
    bad = item.clone()
    bad.properties["proj:shape"] = [150]
    with pytest.raises(STACValidationError, match=r"projection/v2\.0\.0"):
        validate_item(bad)
