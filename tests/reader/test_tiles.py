"""The tile reader (moczarr.tiles): every pixel of a tile against an independent oracle, in each grid.

The oracle never goes through the reader's pixel path: a pixel's centre from
morecantile's tile bounds and an affine transform, its lon/lat from pyproj, its
authalic latitude from the closed-form WGS84 formula, its HEALPix NESTED id at
the level from cdshealpix, that id as the store's packed word by mortie's
documented ``norm2mort`` (nested id = base cell * 4**order + in-base address),
and its value from ``open_level`` over the whole level.
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import morecantile
import numpy as np
import pytest
from rio_tiler.errors import TileOutsideBounds

import moczarr
import moczarr.tiles as tiles
from moczarr.dataplane.reads import CellsSource
from moczarr.errors import ArgumentError, LevelError, MissingExtraError, ProductError, StoreNotFoundError
from tests.helpers import fixture_path
from tests.tiles_oracle import (
    EARTH_RADIUS_KM,
    data_centre,
    expected_order,
    first_numeric,
    oracle_lonlat,
    oracle_values,
    oracle_words,
)


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_tile_cache):
    """Every test starts with no store, level or pixel cells kept."""


# -- the oracle (tests/tiles_oracle.py) ------------------------------------------------------------------
def check_tile(reader, root, tile, variable, **kw) -> int:
    """Compare every pixel of ``tile`` with the oracle; return the count of pixels holding a value."""
    img = reader.tile(tile.x, tile.y, tile.z)
    order = expected_order(reader.levels, reader.tms, tile.z) if reader.cell_order is None else reader.cell_order
    assert img.metadata["cell_order"] == order
    lon, lat = oracle_lonlat(reader.tms, tile, img.width)
    expected = oracle_values(root, order, oracle_words(lon, lat, order), variable, **kw)
    got = img.array[0]
    assert np.array_equal(got.mask, expected.mask), (
        f"{tile}: masks differ at {np.argwhere(got.mask != expected.mask)[:5]}"
    )
    assert np.array_equal(got.data[~got.mask], expected.data[~expected.mask]), f"{tile}: values differ"
    return int((~got.mask).sum())


# -- tiles against the oracle ---------------------------------------------------------------------------------
GRIDS = ["WebMercatorQuad", "WorldCRS84Quad", "UPSArcticWGS84Quad"]


@pytest.mark.layers
@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize(
    "store,variable", [("zagg/pyramid/store", "count"), ("serc_hive", "h_mean"), ("overview_hive/atl06", "h_max")]
)
def test_tile_pixels_are_the_cells_holding_their_centres(grid, store, variable):
    root = fixture_path(store)
    reader = tiles.HiveReader(str(root), tms=morecantile.tms.get(grid), variable=variable)
    lon, lat = data_centre(root, variable)
    held = 0
    for zoom in (reader.maxzoom - 2, reader.maxzoom, reader.maxzoom + 2):
        held += check_tile(reader, root, reader.tms.tile(lon, lat, max(zoom, 0)), variable)
    assert held > 0  # the tiles meet the data: the comparison compared values


@pytest.mark.layers
@pytest.mark.parametrize("grid", ["UPSAntarcticWGS84Quad", "WorldCRS84Quad"])
def test_polar_tiles_of_a_windowed_product(grid):
    root = fixture_path("multiproduct_hive")
    variable = first_numeric(root / "atl06_windows", window="2019")
    reader = tiles.HiveReader(
        str(root), product="atl06_windows", window="2019", tms=morecantile.tms.get(grid), variable=variable
    )
    lon, lat = data_centre(root / "atl06_windows", variable, window="2019")
    assert lat < -60
    held = sum(
        check_tile(reader, root / "atl06_windows", reader.tms.tile(lon, lat, z), variable, window="2019")
        for z in (max(reader.maxzoom - 1, 0), reader.maxzoom + 1)
    )
    assert held > 0


@pytest.mark.layers
def test_an_overview_level_asked_by_cell_order_is_drawn_from_it():
    root = fixture_path("zagg/pyramid/store")
    reader = tiles.HiveReader(str(root), variable="count", cell_order=4)
    lon, lat = data_centre(root, "count")
    assert check_tile(reader, root, reader.tms.tile(lon, lat, 5), "count") > 0


# -- the level rule --------------------------------------------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize(
    "grid,read",
    # a CRS84 pixel at zoom 0 (78 km) is smaller than an order-6 cell (102 km): every zoom reads order 8
    [("WebMercatorQuad", {6, 8}), ("WorldCRS84Quad", {8}), ("UPSAntarcticWGS84Quad", {6, 8})],
)
def test_each_zoom_reads_the_coarsest_level_no_larger_than_a_pixel_else_the_finest(grid, read):
    reader = tiles.HiveReader(str(fixture_path("zagg/pyramid/store")), tms=grid, variable="count")
    assert reader.levels == (8, 6, 4)
    picked = {z: reader.order_for_zoom(z) for z in range(8)}
    assert picked == {z: expected_order((8, 6, 4), reader.tms, z) for z in picked}
    assert set(picked.values()) == read


def test_pick_order_is_the_rule():
    cell = {o: math.sqrt(4 * math.pi * EARTH_RADIUS_KM**2 / (12 * 4**o)) * 1000 for o in (4, 6, 8)}
    assert tiles.pick_order([4, 6, 8], cell[4] * 1.01) == 4  # every level fits: the coarsest
    assert tiles.pick_order([4, 6, 8], cell[4] * 0.99) == 6  # order 4 is larger than the pixel
    assert tiles.pick_order([4, 6, 8], cell[8] * 1.0001) == 8
    assert tiles.pick_order([4, 6, 8], cell[8] * 0.5) == 8  # none fits: the finest


# -- points ------------------------------------------------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize("cell_order", [None, 6])
def test_point_is_open_level_sel_of_the_cell_holding_it(cell_order):
    root = fixture_path("zagg/pyramid/store")
    reader = tiles.HiveReader(str(root), variable="count", cell_order=cell_order)
    order = 8 if cell_order is None else cell_order
    ds = moczarr.open_level(root, order)
    lon, lat = data_centre(root, "count")
    word = oracle_words(np.array([lon]), np.array([lat]), order)
    expected = ds["count"].sel(morton=word).values
    got = reader.point(lon, lat)
    assert got.band_descriptions == ["count"]
    assert not got.array.mask.any() and got.array.data.tolist() == expected.tolist()


@pytest.mark.layers
def test_a_point_no_cell_holds_is_masked():
    reader = tiles.HiveReader(str(fixture_path("zagg/pyramid/store")), variable="count")
    assert reader.point(-100.0, 40.0).array.mask.all()


# -- what a read costs ---------------------------------------------------------------------------------------
@pytest.mark.layers
def test_a_tile_reads_only_the_leaves_its_pixels_fall_in_and_a_warm_tile_reads_none_again():
    root = fixture_path("zagg/single_8")  # eight leaves
    store = root / "store" if (root / "store").is_dir() else root
    lon, lat = data_centre(store, "count")
    with moczarr.count_requests() as cold:
        reader = tiles.HiveReader(str(store), variable="count")
        tile = reader.tms.tile(lon, lat, 9)  # well inside one order-6 shard
        reader.tile(tile.x, tile.y, tile.z)
    assert cold.kind("stamp") == 1, cold.summary()
    # the open's manifest and root MOC: each read once (together, one round trip), however many uses they have
    assert cold.kind("manifest") == 1 and cold.kind("root_moc") == 1, cold.summary()
    with moczarr.count_requests() as warm:
        again = tiles.HiveReader(str(store), variable="count")
        again.tile(tile.x, tile.y, tile.z)
    assert warm.kind("stamp") == 0 and warm.kind("manifest") == 0, warm.summary()


@pytest.mark.layers
def test_a_tile_outside_the_data_reads_no_leaf_and_is_outside_bounds():
    reader = tiles.HiveReader(str(fixture_path("zagg/pyramid/store")), variable="count")
    tile = reader.tms.tile(-100.0, 40.0, 6)
    with moczarr.count_requests() as seen, pytest.raises(TileOutsideBounds):
        reader.tile(tile.x, tile.y, tile.z)
    assert seen.kind("stamp") == 0


class Gate:
    """Counts the callers of a step and of an open; an open waits (30 s at most) until every caller of its step
    has arrived, so every thread has asked before any open ends and none finds another's result kept."""

    def __init__(self, callers: int):
        self.callers, self.arrived, self.opened = callers, {}, {}
        self.cond = threading.Condition()

    def step(self, what: str, call):
        def arrive(*args, **kwargs):
            with self.cond:
                self.arrived[what] = self.arrived.get(what, 0) + 1
                self.cond.notify_all()
            return call(*args, **kwargs)

        return arrive

    def open(self, what: str, call):
        def opening(*args, **kwargs):
            with self.cond:
                self.opened[what] = self.opened.get(what, 0) + 1
                self.cond.wait_for(lambda: self.arrived.get(what, 0) >= self.callers, timeout=30)
            return call(*args, **kwargs)

        return opening


@pytest.mark.layers
def test_concurrent_first_readers_open_the_store_and_the_level_once(monkeypatch):
    root = str(fixture_path("zagg/pyramid/store"))
    tile = morecantile.tms.get("WebMercatorQuad").tile(*data_centre(root, "count"), 5)
    alone = tiles.HiveReader(root, variable="count").tile(tile.x, tile.y, tile.z).array
    tiles.clear_cache()
    gate = Gate(callers=8)
    monkeypatch.setattr(tiles.cache, "cache_key", gate.step("store", tiles.cache.cache_key))
    monkeypatch.setattr(tiles.cache.OpenedStore, "level", gate.step("level", tiles.cache.OpenedStore.level))
    monkeypatch.setattr(tiles.cache, "root_shards", gate.open("store", tiles.cache.root_shards))
    monkeypatch.setattr(tiles.cache, "open_level_in", gate.open("level", tiles.cache.open_level_in))

    def draw(_):
        return tiles.HiveReader(root, variable="count").tile(tile.x, tile.y, tile.z).array

    with ThreadPoolExecutor(8) as pool:
        drawn = list(pool.map(draw, range(8)))
    assert gate.arrived == {"store": 8, "level": 8}  # every thread asked for both
    assert gate.opened == {"store": 1, "level": 1}  # and one open served them all
    assert all(np.array_equal(d.mask, alone.mask) and np.array_equal(d.data, alone.data) for d in drawn)
    assert tiles.cache_info() == {"stores": 1, "datasets": 1}


def test_a_failed_open_is_shared_by_its_waiters_and_not_kept(tmp_path):
    from moczarr.testing import write_sample_store

    root = tmp_path / "later"

    def open_reader(_):
        try:
            return tiles.HiveReader(str(root), product="elevation", variable="count")
        except StoreNotFoundError as exc:
            return exc

    with ThreadPoolExecutor(4) as pool:
        failed = list(pool.map(open_reader, range(4)))
    assert all(isinstance(f, StoreNotFoundError) and str(root) in str(f) for f in failed), failed
    write_sample_store(root)
    assert open_reader(0).levels  # the failure was not kept: the store, now there, opens


@pytest.mark.layers
def test_a_tile_builds_the_read_of_its_variable_alone(monkeypatch):
    root = fixture_path("zagg/pyramid/store")
    reader = tiles.HiveReader(str(root), variable="count")
    tile = reader.tms.tile(*data_centre(root, "count"), reader.maxzoom)
    picked = []
    real_pick = CellsSource.pick

    def pick(source, *args, **kwargs):
        picked.append(source.name)
        return real_pick(source, *args, **kwargs)

    monkeypatch.setattr(CellsSource, "pick", pick)
    with moczarr.count_requests() as seen:
        held = check_tile(reader, root, tile, "count")
    assert held > 0
    assert picked == ["count"]  # of the level's nine variables, the drawn one's read alone was built
    assert seen.kind("chunk:data") > 0


@pytest.mark.layers
@pytest.mark.parametrize("zoom", ["max", 5])  # the source level (order 8) and an overview (order 6)
def test_a_cold_tile_builds_the_arrays_of_its_variable_alone(monkeypatch, zoom):
    from moczarr.dataplane import assemble

    root = fixture_path("zagg/pyramid/store")
    reader = tiles.HiveReader(str(root), variable="count")
    tile = reader.tms.tile(*data_centre(root, "count"), reader.maxzoom if zoom == "max" else zoom)
    built: list[str] = []
    real_build = assemble.lazy_cells_array

    def build(storage, schema, *args, **kwargs):
        built.append(schema.name)
        return real_build(storage, schema, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(assemble, "lazy_cells_array", build)
        reader.tile(tile.x, tile.y, tile.z)
    assert check_tile(reader, root, tile, "count") > 0  # and drawn right (the oracle opens every variable)
    assert built and set(built) <= {"count", "cell_ids"}, built  # not the level's eight other variables
    assert "count" in built


@pytest.mark.layers
@pytest.mark.parametrize("grid", ["WebMercatorQuad", "UPSAntarcticWGS84Quad"])
def test_a_grid_is_one_shared_instance_and_its_crs_is_made_once(grid):
    from moczarr.tiles.app import tiler_factory

    root = fixture_path("zagg/pyramid/store")
    readers = [tiles.HiveReader(str(root), tms=grid, variable="count") for _ in range(2)]
    assert readers[0].tms is readers[1].tms  # an id names one instance, not a copy per reader
    served = tiler_factory(allow=[str(root)]).supported_tms
    assert served.get(grid) is served.get(grid) is readers[0].tms  # nor a copy per request
    with pytest.raises(morecantile.errors.InvalidIdentifier):
        served.get("Nowhere")
    # grids copied apart (morecantile's get) draw in one CRS object: its WKT and authority are found once
    copies = [tiles.HiveReader(str(root), tms=morecantile.tms.get(grid), variable="count") for _ in range(2)]
    tile = copies[0].tms.tile(*data_centre(root, "count"), 3)
    first, second = (r.tile(tile.x, tile.y, tile.z).crs for r in copies)
    assert first is second and first == morecantile.tms.get(grid).rasterio_crs


@pytest.mark.filterwarnings("ignore::rio_tiler.errors.InvalidDatatypeWarning")  # rescale's and PNG's, titiler's
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("dtype", ["int64", "float32", "uint8"])
@pytest.mark.parametrize("bands", [1, 2])
def test_a_served_npy_is_titiler_s_npy_byte_for_byte(dtype, bands):
    from rio_tiler.models import ImageData
    from titiler.core.resources.enums import ImageType
    from titiler.core.utils import render_image

    from moczarr.tiles.app import render_tile, tiler_factory

    rng = np.random.default_rng(41)
    values = (rng.random((bands, 32, 48)) * 200).astype(dtype)
    mask = rng.random((bands, 32, 48)) < 0.3
    mask[:, :4] = True  # whole masked rows: the mask band's minimum shows

    def image():  # a fresh one per render: titiler's rescale rescales the image it is given
        return ImageData(np.ma.MaskedArray(values.copy(), mask=mask.copy()))

    for options in ({}, {"add_mask": False}, {"rescale": [(0, 100)] * bands}):
        got = render_tile(image(), output_format=ImageType.npy, **options)
        assert got == render_image(image(), output_format=ImageType.npy, **options), options
    assert render_tile(image(), output_format=ImageType.png) == render_image(image(), output_format=ImageType.png)
    assert tiler_factory(allow=["."]).render_func is render_tile


def test_a_tile_route_parses_its_parameters_in_the_event_loop():
    import inspect

    from moczarr.tiles.app import tiler_factory

    factory = tiler_factory(allow=["."])
    (route,) = [r for r in factory.router.routes if getattr(r, "path", "") == "/tiles/{tileMatrixSetId}/{z}/{x}/{y}"]
    calls = [d.call for d in route.dependant.dependencies]  # type: ignore[attr-defined]
    assert len(calls) == 9 and all(inspect.iscoroutinefunction(c) for c in calls), calls  # no thread pool hop
    params = {p.alias for d in route.dependant.dependencies for p in d.query_params}  # type: ignore[attr-defined]
    assert {"url", "variable", "time", "cell_order", "rescale", "colormap_name", "bidx", "return_mask"} <= params
    (wmts,) = factory.extensions  # it calls a layer's dependencies itself, as plain functions
    assert len(wmts.tile_dependencies) == 7
    assert not any(inspect.iscoroutinefunction(d) for d in wmts.tile_dependencies)


def test_a_factory_serves_a_reader_subclass_and_refuses_anything_else():
    from moczarr.errors import ArgumentError
    from moczarr.tiles.app import create_app, tiler_factory

    class Subclass(tiles.HiveReader):
        pass

    assert tiler_factory(allow=["."], reader=Subclass).reader is Subclass
    assert tiler_factory(allow=["."]).reader is tiles.HiveReader
    assert create_app(allow=["."], reader=Subclass).routes  # create_app hands the factory its options
    for wrong in (object, "HiveReader", 1):
        with pytest.raises(ArgumentError, match="reader= must be HiveReader"):
            tiler_factory(allow=["."], reader=wrong)


def test_a_grid_s_cells_are_computed_once_and_kept_within_their_bound(monkeypatch):
    from moczarr.tiles import pixels

    calls = []
    real = pixels.cell_words
    monkeypatch.setattr(pixels, "cell_words", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    tms = morecantile.tms.get("WebMercatorQuad")
    crs = tiles.levels.tms_crs(tms)
    bounds = [tuple(tms.xy_bounds(morecantile.Tile(x, 5, 4))) for x in (3, 4)]
    first = pixels.grid_cells(crs, bounds[0], 256, 256, 6)
    assert pixels.grid_cells(crs, bounds[0], 256, 256, 6) is first and calls == [6]
    pixels.grid_cells(crs, bounds[0], 256, 256, 7)  # another order: other cells
    assert calls == [6, 7]
    monkeypatch.setattr(pixels, "MAX_GRID_CELLS_BYTES", first.nbytes)
    pixels.grid_cells(crs, bounds[1], 256, 256, 6)  # over the bound: the least recently asked dropped
    pixels.grid_cells(crs, bounds[0], 256, 256, 6)
    assert calls == [6, 7, 6, 6]


def test_a_grid_s_ancestor_cells_are_computed_once_per_pair_of_orders(monkeypatch):
    import mortie

    from moczarr.tiles import pixels

    tms = morecantile.tms.get("WebMercatorQuad")
    cells = pixels.grid_cells(tiles.levels.tms_crs(tms), tuple(tms.xy_bounds(morecantile.Tile(9, 5, 4))), 64, 64, 8)
    calls = []
    real = mortie.clip2order
    monkeypatch.setattr(mortie, "clip2order", lambda order, words: calls.append(order) or real(order, words))
    shards, nodes = cells.ancestors(6, 4)
    assert np.array_equal(shards, np.unique(np.asarray(real(6, cells.words), dtype=np.uint64)))
    assert np.array_equal(nodes, np.asarray(real(4, shards), dtype=np.uint64)) and shards.size > 1
    assert cells.ancestors(6, 4)[0] is shards and calls == [6, 4]  # asked again: kept
    cells.ancestors(6, 6)
    assert calls == [6, 4, 6, 6]


@pytest.mark.parametrize("grid", ["WebMercatorQuad", "WorldCRS84Quad", "UPSArcticWGS84Quad"])
def test_a_grid_s_lonlat_and_cells_are_each_pixel_s_own(grid):
    from moczarr.tiles import pixels

    tms = morecantile.tms.get(grid)
    crs = tiles.levels.tms_crs(tms)
    for tile in (morecantile.Tile(0, 0, 1), tms.tile(20.0, 60.0, 7), tms.tile(100.0, 75.0, 4)):
        bounds = tuple(tms.xy_bounds(tile))
        lon, lat = pixels.grid_lonlat(crs, bounds, 256, 256)
        want_lon, want_lat = pixels.to_lonlat(crs, *pixels.pixel_centres(bounds, 256, 256))
        assert np.array_equal(lon, want_lon, equal_nan=True) and np.array_equal(lat, want_lat, equal_nan=True)
        words = pixels.cell_words(lon, lat, 9)
        cells = pixels.grid_cells(crs, bounds, 256, 256, 9)
        assert np.array_equal(np.where(cells.inverse >= 0, cells.words[cells.inverse], 0), words)
        assert np.all(np.diff(cells.words.astype(np.float64)) > 0) and 0 not in cells.words


def test_a_changed_manifest_is_noticed(tmp_path, monkeypatch):
    from moczarr.testing import write_sample_store
    from tests.helpers import rewrite_manifest

    store = write_sample_store(tmp_path / "sample") / "elevation"
    first = tiles.HiveReader(str(store), variable="count")
    assert tiles.HiveReader(str(store), variable="count").store is first.store  # warm: the same open
    monkeypatch.setattr(tiles.cache, "REVALIDATE_SECONDS", 0.0)
    assert tiles.HiveReader(str(store), variable="count").store is first.store  # unchanged bytes: kept
    rewrite_manifest(store, generated_at="2030-01-01T00:00:00Z")
    assert tiles.HiveReader(str(store), variable="count").store is not first.store
    tiles.clear_cache()
    assert tiles.cache_info() == {"stores": 0, "datasets": 0}


# -- windows, parts, previews, statistics, info --------------------------------------------------------------
@pytest.mark.layers
def test_time_draws_one_band_per_window_each_its_windows_values():
    root = fixture_path("zagg/windowed/store")
    lon, lat = data_centre(root, "count", window="2020")
    both = tiles.HiveReader(str(root), variable="count", time=("2019-01-01", "2021-01-01"))
    tile = both.tms.tile(lon, lat, both.maxzoom)
    img = both.tile(tile.x, tile.y, tile.z)
    assert img.band_descriptions == ["2019", "2020"]
    for band, window in enumerate(("2019", "2020")):
        one = tiles.HiveReader(str(root), variable="count", window=window).tile(tile.x, tile.y, tile.z).array[0]
        assert np.array_equal(img.array[band].mask, one.mask)
        assert np.array_equal(img.array[band].data[~one.mask], one.data[~one.mask])


@pytest.mark.layers
def test_part_preview_statistics_and_info_describe_the_data():
    root = fixture_path("zagg/pyramid/store")
    reader = tiles.HiveReader(str(root), variable="count")
    preview = reader.preview(max_size=256)
    assert max(preview.width, preview.height) <= 256 and preview.crs == "EPSG:4326"
    assert (~preview.array.mask).any()
    part = reader.part(reader.bounds, width=64, height=64)
    assert part.array.shape == (1, 64, 64) and (~part.array.mask).any()
    stats = reader.statistics(max_size=256)["b1"]
    held = preview.array[0].compressed()
    assert stats.max == held.max() and stats.min == held.min() and stats.count == held.size
    info = reader.info()
    assert info.bounds == reader.bounds and info.model_extra["levels"] == [8, 6, 4]
    w, s, e, n = reader.bounds
    lon, lat = data_centre(root, "count")
    assert w <= lon <= e and s <= lat <= n


@pytest.mark.layers
@pytest.mark.parametrize("variable", ["count", "h_mean"])  # an integer variable and a float one
def test_info_names_the_variable_s_dtype_which_its_tiles_carry(variable):
    root = fixture_path("zagg/pyramid/store")
    stored = moczarr.open_level(root, 8)[variable].dtype
    reader = tiles.HiveReader(str(root), variable=variable)
    info = reader.info()
    assert info.dtype == str(stored)
    tile = reader.tms.tile(*data_centre(root, variable), reader.maxzoom)
    assert reader.tile(tile.x, tile.y, tile.z).array.dtype == stored
    assert tiles.HiveReader(str(root)).info().dtype == "float64"  # no variable named: the stand-in
    with pytest.raises(ArgumentError, match=r"variable='h_nope'.*variables: .*count"):
        tiles.HiveReader(str(root), variable="h_nope").info()


# -- typed errors ----------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_bad_arguments_raise_one_typed_error_naming_the_choices():
    root = fixture_path("zagg/pyramid/store")
    with pytest.raises(LevelError, match=r"cell_order=5 .*levels: 8, 6, 4"):
        tiles.HiveReader(str(root), variable="count", cell_order=5)
    with pytest.raises(ArgumentError, match=r"tms='Nowhere'.*WebMercatorQuad"):
        tiles.HiveReader(str(root), variable="count", tms="Nowhere")
    lon, lat = data_centre(root, "count")
    reader = tiles.HiveReader(str(root), variable="h_nope")
    tile = reader.tms.tile(lon, lat, 5)
    with pytest.raises(ArgumentError, match=r"variable='h_nope'.*variables: .*count"):
        reader.tile(tile.x, tile.y, tile.z)


@pytest.mark.layers
def test_a_multi_product_root_needs_product_and_names_its_products():
    root = fixture_path("multiproduct_hive")
    with pytest.raises(ProductError, match=r"product= one of atl06, .*atl06_windows"):
        tiles.HiveReader(str(root), variable="count")
    with pytest.raises(ProductError, match=r"no product 'nope'; products: atl06"):
        tiles.HiveReader(str(root), product="nope", variable="count")
    with pytest.raises(ProductError, match=r"bare store"):
        tiles.HiveReader(str(root / "atl06"), product="atl06", variable="count")


def test_without_the_extra_the_package_names_it(monkeypatch):
    for name in [m for m in sys.modules if m == "moczarr.tiles" or m.startswith("moczarr.tiles.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "rio_tiler", None)
    with pytest.raises(MissingExtraError, match=r"moczarr\[tiles\]"):
        importlib.import_module("moczarr.tiles")


@pytest.mark.layers
def test_readers_in_many_threads_draw_what_one_thread_draws():
    from concurrent.futures import ThreadPoolExecutor

    root = fixture_path("zagg/pyramid/store")
    lon, lat = data_centre(root, "count")
    tms = morecantile.tms.get("WebMercatorQuad")
    wanted = [tms.tile(lon + dx, lat + dy, z) for z in (5, 7) for dx in (-0.5, 0, 0.5) for dy in (-0.5, 0.5)]

    def draw(tile):
        img = tiles.HiveReader(str(root), variable="count").tile(tile.x, tile.y, tile.z)
        return img.array.filled(-1)

    alone = [draw(t) for t in wanted]
    tiles.clear_cache()
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(draw, wanted * 2))
    assert all(np.array_equal(a, b) for a, b in zip(alone * 2, together, strict=True))
