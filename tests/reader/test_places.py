"""Places: every AOI spelling, the meets semantics against an independent shapely computation, argument checks.

The independent side never uses moczarr's covers: each cell's boundary comes
from mortie (``mort2polygon``, 16 points per side) and the test is shapely's
planar ``intersects`` in lon/lat (or a haversine distance for discs).
"""

from __future__ import annotations

import json
import math
import warnings

import mortie
import numpy as np
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import moczarr
from moczarr import BBox, Circle
from moczarr.errors import AOIError, LevelError
from moczarr.places import aoi_cover, as_place, canonical_words
from tests.helpers import SAMPLE, fixture_path, quiet

ELEVATION = SAMPLE / "elevation"


def cell_polygons(words) -> list:
    rings = mortie.mort2polygon(np.asarray(words, dtype=np.uint64), step=16)
    return [shapely.Polygon(np.asarray(r)[:, ::-1]) for r in rings]


def meeting(words, geom) -> np.ndarray:
    """Independent truth: which cells' polygons intersect the geometry (shapely, planar lon/lat)."""
    return np.array([p.intersects(geom) for p in cell_polygons(words)], dtype=bool)


def full_level(order: int) -> tuple[np.ndarray, np.ndarray]:
    """Every row of a level of the sample, and which are occupied (``count > 0``)."""
    with quiet():
        ds = moczarr.open_pyramid(ELEVATION)[f"o{order}"].ds
    return np.asarray(ds["morton"].values, dtype=np.uint64), ds["count"].values > 0


BOXES = [
    BBox(-76.6, 38.8, -76.4, 39.0),  # inside one leaf
    BBox(-77.2, 38.5, -76.3, 39.3),  # across several leaves
    BBox(-76.0, 37.0, -75.0, 40.0),  # the store's eastern edge
    BBox(-90.0, 10.0, -80.0, 20.0),  # outside the store
]


@pytest.mark.parametrize("box", BOXES, ids=lambda b: f"{b.west},{b.south},{b.east},{b.north}")
@pytest.mark.parametrize("order", [8, 6, 4])
def test_bbox_rows_are_exactly_the_cells_meeting_the_box(box, order):
    every, occupied = full_level(order)
    geom = shapely.box(box.west, box.south, box.east, box.north)
    meets = meeting(every, geom)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.EmptySelectionWarning)
        ds = moczarr.open_level(ELEVATION, order, aoi=box)
    got = np.asarray(ds["morton"].values, dtype=np.uint64)
    assert set(ds.data_vars) >= {"count", "h_min"}  # schema-correct even when empty
    # every returned cell meets the box, and every occupied cell meeting it is returned
    np.testing.assert_array_equal(np.setdiff1d(got, every[meets]), [])
    np.testing.assert_array_equal(np.setdiff1d(every[meets & occupied], got), [])
    # what is left out is only the empty cells of leaves whose tier-0 box misses the place
    left_out = np.isin(every, np.setdiff1d(every[meets], got))
    assert not occupied[left_out].any()
    if order < 8:  # derived levels have no box reject: exactly the meeting cells
        np.testing.assert_array_equal(got, every[meets])


def test_small_bbox_reads_the_stamps_of_the_covered_shards_only():
    with quiet(), moczarr.count_requests() as full:
        everything = moczarr.open_hive(ELEVATION)
    box = BBox(-76.6, 38.8, -76.4, 39.0)
    with quiet(), moczarr.count_requests() as small:
        ds = moczarr.open_hive(ELEVATION, aoi=box)
    shards = np.asarray(mortie.clip2order(6, ds["morton"].values), dtype=np.uint64)
    assert small.kind("stamp") == np.unique(shards).size == 1
    assert full.kind("stamp") == everything.attrs["morton_hive"]["n_leaves"] == 10
    assert ds.sizes["cells"] == 4


def _region_cells(box: BBox, order: int) -> np.ndarray:
    return np.asarray(mortie.moc_to_order(aoi_cover(box, order), order), dtype=np.uint64)


@pytest.mark.parametrize(
    "box,order,pad",
    [
        (BBox(170, -20, -170, -10), 6, 1.0),  # crosses the antimeridian
        (BBox(179, 60, -179, 89), 8, 0.5),  # crosses it near the pole
        (BBox(-10, 80, 10, 90), 6, 2.0),  # touches the north pole
        (BBox(-180, -90, 180, -85), 5, 2.0),  # the south polar cap, every longitude
    ],
)
def test_antimeridian_and_polar_boxes_match_shapely(box, order, pad):
    flat = _region_cells(box, order)
    region = BBox(
        box.west - pad if box.width < 360 else -180,
        max(-90, box.south - pad),
        box.east + pad if box.width < 360 else 180,
        min(90, box.north + pad),
    )
    candidates = _region_cells(region, order)
    if box.crosses_antimeridian:
        geom = shapely.union(
            shapely.box(box.west, box.south, 180, box.north), shapely.box(-180, box.south, box.east, box.north)
        )
    else:
        geom = shapely.box(box.west, box.south, box.east, box.north)
    truth = candidates[meeting(candidates, geom)]
    np.testing.assert_array_equal(np.setdiff1d(truth, flat), [])
    np.testing.assert_array_equal(np.setdiff1d(flat, truth), [])
    assert np.isin(flat, candidates).all() and truth.size > 0


def _haversine_m(lat1, lon1, lat2, lon2):
    p1, p2 = np.radians(lat1), np.radians(lat2)
    dl = np.radians(lon2 - lon1)
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    return 2 * moczarr.places.EARTH_RADIUS_M * np.arcsin(np.sqrt(np.clip(a, 0, 1)))


def _around(circle: Circle, margin: float) -> BBox:
    """A box holding every point within ``margin`` degrees of arc of the circle's centre (all longitudes by a pole)."""
    south, north = max(-90.0, circle.lat - margin), min(90.0, circle.lat + margin)
    widest = max(abs(south), abs(north))
    half = 180.0 if widest >= 89.0 else margin / math.cos(math.radians(widest))
    if half >= 180.0:
        return BBox(-180, south, 180, north)
    return BBox((circle.lon - half + 180) % 360 - 180, south, (circle.lon + half + 180) % 360 - 180, north)


@pytest.mark.parametrize(
    "circle,order",
    [(Circle(-76.5, 38.9, 30_000), 8), (Circle(0.0, 89.5, 200_000), 8), (Circle(179.9, 0.0, 80_000), 8)],
)
def test_circle_cover_holds_every_cell_within_the_radius(circle, order):
    got = np.asarray(mortie.moc_to_order(aoi_cover(circle, order), order), dtype=np.uint64)
    margin = 2 * circle.radius_m / moczarr.places.EARTH_RADIUS_M * 180 / math.pi + 1
    candidates = _region_cells(_around(circle, margin), order)
    home = np.asarray(mortie.geo2mort(np.array([circle.lat]), np.array([circle.lon]), order=order), dtype=np.uint64)[0]
    rings = np.asarray(mortie.mort2polygon(candidates, step=16))  # (cells, points, lat/lon)
    nearest = _haversine_m(circle.lat, circle.lon, rings[..., 0], rings[..., 1]).min(axis=1)
    nearest[candidates == home] = 0.0
    cell_m = mortie.order2res(order) * 1000
    truth = candidates[nearest <= circle.radius_m]
    np.testing.assert_array_equal(np.setdiff1d(truth, got), [])  # no cell within the radius is missed
    extra = np.setdiff1d(got, truth)
    assert np.isin(extra, candidates).all()  # nothing is covered far outside the circle
    # the only extras sit within a cell's sampling error of the circle (cell edges are traced by 16 points)
    assert (nearest[np.isin(candidates, extra)] <= circle.radius_m + cell_m / 16).all()
    assert truth.size > 0


def test_every_geometry_spelling_selects_the_same_rows():
    box = BBox(-77.2, 38.5, -76.3, 39.3)
    poly = shapely.box(box.west, box.south, box.east, box.north)
    geojson = json.loads(shapely.to_geojson(poly))
    spellings = {
        "bbox": box,
        "shapely": poly,
        "geometry": geojson,
        "feature": {"type": "Feature", "properties": {}, "geometry": geojson},
        "collection": {"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": geojson}]},
        "wkt": poly.wkt,
        "ewkt": "SRID=4326;" + poly.wkt,
    }
    with quiet():
        rows = {k: moczarr.open_hive(ELEVATION, aoi=v)["morton"].values for k, v in spellings.items()}
    for name, got in rows.items():
        np.testing.assert_array_equal(got, rows["bbox"], err_msg=name)
    assert rows["bbox"].size > 16


def test_points_lines_and_collections():
    every, occupied = full_level(8)
    target = every[np.flatnonzero(occupied)[3]]
    lat, lon = mortie.mort2geo(np.asarray([target, target], dtype=np.uint64))
    point = shapely.Point(lon[0], lat[0])  # mortie's 0..360 longitude, taken as it is
    line = shapely.LineString([(-77.2, 38.6), (-76.3, 39.2)])
    with quiet():
        at_point = moczarr.open_hive(ELEVATION, aoi=point)["morton"].values
        along = moczarr.open_hive(ELEVATION, aoi=line)["morton"].values
        both = moczarr.open_hive(ELEVATION, aoi=shapely.GeometryCollection([point, line]))["morton"].values
    np.testing.assert_array_equal(at_point, [target])
    meets = meeting(every, line)
    np.testing.assert_array_equal(np.setdiff1d(along, every[meets]), [])
    np.testing.assert_array_equal(np.setdiff1d(every[meets & occupied], along), [])
    assert along.size > 5
    np.testing.assert_array_equal(both, np.union1d(at_point, along))


def test_id_spellings_are_unchanged():
    with quiet():
        by_text = moczarr.open_hive(ELEVATION, aoi=["4331421"])["morton"].values
        word = mortie.decimal_to_word("4331421")
        by_word = moczarr.open_hive(ELEVATION, aoi=int(word))["morton"].values
        by_array = moczarr.open_hive(ELEVATION, aoi=np.asarray([word], dtype=np.uint64))["morton"].values
        by_moc = moczarr.open_hive(ELEVATION, aoi=mortie.Moc(np.asarray([word], dtype=np.uint64)))["morton"].values
        mixed = moczarr.open_hive(ELEVATION, aoi=["4331421", int(mortie.decimal_to_word("43314221"))])["morton"].values
    assert by_text.size == 16
    for other in (by_word, by_array, by_moc):
        np.testing.assert_array_equal(other, by_text)
    assert mixed.size == 16 + 4  # an order-7 id meets its four order-8 children


# -- the empty AOI -------------------------------------------------------------------------------
def test_empty_aoi_selects_no_rows_on_every_opener():
    empties = [[], (), np.empty(0, np.uint64), shapely.Polygon(), {"type": "FeatureCollection", "features": []}]
    for aoi in empties:
        with pytest.warns(moczarr.errors.EmptySelectionWarning):
            ds = moczarr.open_hive(ELEVATION, aoi=aoi)
        assert ds.sizes["cells"] == 0 and "count" in ds
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        level = moczarr.open_level(ELEVATION, 6, aoi=[])
    assert level.sizes["cells"] == 0 and "count" in level
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        tree = moczarr.open_pyramid(ELEVATION, aoi=[])
    assert {n: tree[n].ds.sizes["cells"] for n in tree.children} == {"o8": 0, "o6": 0, "o4": 0}
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        store = moczarr.open_store(ELEVATION.parent, aoi=[], window="2019")
    assert all(node.ds.sizes.get("cells", 0) == 0 for node in store.subtree if "morton" in node.ds)


# -- arguments checked before mortie or zarr ------------------------------------------------------------
BAD_AOIS = [
    (4331421, "not a canonical packed morton word"),
    (0, "reserved empty word"),
    (2**70, "unsigned 64-bit"),
    (-31123, "decimal ids are strings"),
    (1.5, "float"),
    (b"4331421", "bytes"),
    ([["4331421"]], "nested lists"),
    ([1.0, 2.0], "float is not a morton id"),
    ("4331421" + "1" * 5000, "not a morton decimal id"),
    ("4331051", "not a morton decimal id"),
    ("7", "not a morton decimal id"),
    ("hello", "not a morton decimal id"),
    ((-77.0, 38.0, -76.0, 39.0), "BBox"),
    (np.array([[1, 2]], dtype=np.uint64), "2-D"),
    (np.array([1.5]), "dtype float64"),
    ([(1 << 60) | (1 << 50) | 3], "body bits are set below its order"),
    ("POLYGON ((0 0, 1 1", "unparsable WKT"),
    ("POLYGON ((0 0, 400 0, 400 1, 0 0))", "outside lon"),
    ("POLYGON ((0 0, 1 0, 1 95, 0 0))", "outside lon"),
    ({"type": "Polygon"}, "not a GeoJSON"),
    ({"type": "FeatureCollection", "features": "x"}, "features"),
    (object(), "not an AOI"),
    (True, "bool"),
]


def _case_id(aoi) -> str:
    """A test id that is the same in every process (pytest-xdist workers must collect the same ids)."""
    return type(aoi).__name__ if type(aoi).__repr__ is object.__repr__ else repr(aoi)[:30]


@pytest.mark.parametrize("aoi,message", BAD_AOIS, ids=[_case_id(a) for a, _ in BAD_AOIS])
def test_bad_aoi_raises_a_typed_error_and_prints_nothing(aoi, message, capfd):
    with pytest.raises(AOIError, match=message) as info:
        moczarr.open_hive(ELEVATION, aoi=aoi)
    assert "aoi" in str(info.value)
    for opener in (
        lambda: moczarr.open_level(ELEVATION, 6, aoi=aoi),
        lambda: moczarr.open_pyramid(ELEVATION, aoi=aoi),
        lambda: moczarr.open_store(ELEVATION.parent, aoi=aoi, window="2019"),
        lambda: moczarr.aoi_mask(np.asarray([mortie.decimal_to_word("4331421")], dtype=np.uint64), aoi),
    ):
        with pytest.raises(AOIError, match=message):
            opener()
    out, err = capfd.readouterr()
    assert err == "" and out == ""


@pytest.mark.layers
def test_read_ragged_names_its_cells_argument(capfd):
    root = fixture_path("spec/minimal")
    with pytest.raises(AOIError, match=r"cells.*canonical"):
        moczarr.read_ragged(root, "h_tdigest", 4331421)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda: BBox(-77, 39, -76, 38), "south < north"),
        (lambda: BBox(-77, 38, -77, 39), "spans no longitude"),
        (lambda: BBox(-200, 38, -76, 39), r"\[-180, 180\]"),
        (lambda: BBox(-77, 38, 400, 39), r"\[-180, 180\]"),
        (lambda: BBox(float("nan"), 38, -76, 39), "finite"),
        (lambda: BBox("a", 38, -76, 39), "finite"),
        (lambda: Circle(0, 0, 0), "radius_m"),
        (lambda: Circle(0, 0, 3e7), "radius_m"),
        (lambda: Circle(0, 95, 10), "outside"),
    ],
)
def test_bad_places_raise_at_construction(make, message):
    with pytest.raises(AOIError, match=message):
        make()


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"cell_order": [8]}, "cell_order=\\[8\\] must be an integer"),
        ({"cell_order": "8"}, "must be an integer"),
        ({"cell_order": 8.0}, "must be an integer"),
        ({"cell_order": 99}, "outside the HEALPix orders"),
        ({"cell_order": True}, "must be an integer"),
    ],
)
def test_bad_cell_order_raises_level_error(kwargs, message, capfd):
    with pytest.raises(LevelError, match=message):
        moczarr.open_level(ELEVATION, **kwargs)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    "levels,message",
    [([], "names no level"), ("8", "cell order"), ([8.5], "integer"), ([[8]], "integer"), (8.0, "cell order")],
)
def test_bad_levels_raise_level_error(levels, message):
    with pytest.raises(LevelError, match=message):
        moczarr.open_pyramid(ELEVATION, levels=levels)


def test_bbox_takes_mortie_longitudes_modulo_360():
    assert BBox(283.0, 38.0, 284.0, 39.0) == BBox(-77.0, 38.0, -76.0, 39.0)
    assert BBox(0, -10, 360, 10).width == 360


@pytest.mark.parametrize("lon,lat", [(-180.0, 70.0), (-90.0, 75.0), (-0.0, 80.0), (-180.0, -70.0)])
def test_a_point_on_a_polar_base_cell_meridian_is_one_cell_however_its_longitude_is_spelled(lon, lat):
    east = aoi_cover(shapely.Point(lon + 360.0, lat), 7)
    assert east.size == 1
    np.testing.assert_array_equal(aoi_cover(shapely.Point(lon, lat), 7), east)


def test_canonical_words_is_mortie_strict():
    words = np.asarray(
        mortie.decimal_to_word(np.asarray(["4331421", "-31123", "1", "-6", "4" + "1" * 29], dtype=object)),
        dtype=np.uint64,
    )
    assert canonical_words(words).all()
    bad = np.asarray([0, 13 << 60, (1 << 60) | (1 << 50) | 3, 15 << 60 | 5], dtype=np.uint64)
    assert not canonical_words(bad).any()


# -- hypothesis: no untyped exception, no third-party output ------------------------------------------
#: these properties read what the code under test printed (``capfd``): the fixture is reset by ``readouterr`` in
#: every example, which is what Hypothesis's function-scoped-fixture check cannot see
CAPFD = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.text(alphabet="-1234567p", max_size=40),
    st.binary(max_size=12),
    st.none(),
    st.booleans(),
)
aois = st.one_of(
    scalars,
    st.lists(scalars, max_size=5),
    st.lists(st.lists(scalars, max_size=3), max_size=3),
    st.tuples(st.floats(), st.floats(), st.floats(), st.floats()),
    st.dictionaries(st.sampled_from(["type", "coordinates", "features", "geometry"]), scalars, max_size=3),
)


@CAPFD
@given(aoi=aois)
def test_any_argument_gives_a_place_or_an_aoi_error(aoi, capfd):
    try:
        place = as_place(aoi)
        if place is not None:
            cover = place.cover(8)
            assert cover.dtype == np.uint64
    except AOIError as exc:
        assert str(exc)
    _out, err = capfd.readouterr()
    assert err == ""


@CAPFD
@given(aoi=aois)
def test_open_hive_takes_any_argument_or_raises_typed(aoi, capfd):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        try:
            ds = moczarr.open_hive(ELEVATION, aoi=aoi)
            assert "count" in ds
        except AOIError:
            pass
    assert capfd.readouterr().err == ""


@given(west=st.floats(-180, 180), south=st.floats(-90, 89), width=st.floats(0.01, 359), height=st.floats(0.01, 30))
def test_random_boxes_cover_their_corners(west, south, width, height):
    east = (west + width + 180) % 360 - 180
    north = min(90.0, south + height)
    if east == west or north <= south:
        return
    box = BBox(west, south, east, north)
    cover = aoi_cover(box, 3)
    # corners a hair inside the box: a cell that only touches the box along an edge (zero area in common) is not
    # promised (the documented meets rule); -0.0 = 0.0 on a cell edge once found exactly that
    e = 1e-7
    lats = np.array([south + e, south + e, north - e, north - e])
    lons = np.array([west + e, east - e, west + e, east - e])
    corners = mortie.geo2mort(lats, (lons + 180) % 360 - 180, order=3)
    mask = moczarr.aoi_mask(np.asarray(corners, dtype=np.uint64), cover)
    assert mask.all()


any_value = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.tuples(scalars, scalars),
    st.floats(),
    st.integers(-100, 100),
    st.dates().map(str),
    st.datetimes().map(lambda d: d.isoformat()),
)


@CAPFD
@given(cell_order=any_value)
def test_any_cell_order_opens_or_raises_level_error(cell_order, capfd):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        try:
            moczarr.open_level(ELEVATION, cell_order)
        except LevelError as exc:
            assert "cell_order" in str(exc) or "not a level" in str(exc)
    assert capfd.readouterr().err == ""


@CAPFD
@given(levels=any_value)
def test_any_levels_opens_or_raises_level_error(levels, capfd):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        try:
            moczarr.open_pyramid(ELEVATION, levels=levels)
        except LevelError as exc:
            assert "levels" in str(exc) or "not levels" in str(exc)
    assert capfd.readouterr().err == ""


@CAPFD
@given(window=any_value, time=st.one_of(st.none(), any_value))
def test_any_window_or_time_opens_or_raises_window_error(window, time, capfd):
    root = ELEVATION.parent / "elevation_yearly"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        try:
            moczarr.open_hive(root, window=window, time=time)
        except moczarr.errors.WindowError as exc:
            assert "window" in str(exc) or "time" in str(exc)
    assert capfd.readouterr().err == ""


@pytest.mark.layers
def test_aoi_mask_and_read_ragged_take_places():
    box = BBox(-77.2, 38.5, -76.3, 39.3)
    every, _ = full_level(8)
    with quiet():
        rows = moczarr.open_level(ELEVATION, 8, aoi=box)["morton"].values
    mask = moczarr.aoi_mask(every, box)
    np.testing.assert_array_equal(np.setdiff1d(rows, every[mask]), [])
    np.testing.assert_array_equal(every[mask], every[meeting(every, shapely.box(-77.2, 38.5, -76.3, 39.3))])
    root = fixture_path("spec/minimal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.CoverageFallbackWarning)  # spec/minimal has no root MOC
        ds = moczarr.open_hive(root)
    lat, lon = mortie.mort2geo(ds["morton"].values[[0, 0]])
    disc = Circle(float(lon[0]) - 360 if lon[0] > 180 else float(lon[0]), float(lat[0]), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.CoverageFallbackWarning)
        got = moczarr.read_ragged(root, "h_tdigest", disc)
        by_id = moczarr.read_ragged(root, "h_tdigest", [int(ds["morton"].values[0])])
    assert list(got) == list(by_id)
    np.testing.assert_array_equal(next(iter(got.values())), next(iter(by_id.values())))
