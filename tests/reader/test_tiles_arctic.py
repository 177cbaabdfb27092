"""Map tiles over the Arctic, the North pole included: every pixel against the oracle (``tests/tiles_oracle.py``).

``arctic_hive`` is the generated layer's own store (no shared store holds Arctic data): cells of order 7 from
65°N to the pole in the four northern polar base cells, across the antimeridian, a tenth of them empty, and
overview levels of orders 6 and 5. UPSArcticWGS84Quad is drawn at three zooms, one of them reading an
overview level, each time the tiles whose corner is the pole, through ``HiveReader.tile`` and over HTTP
through the real application; tiles beside the antimeridian and Web Mercator and CRS84 tiles at high
latitude too. Most pixels of each tile hold data, and each tile differs from its mirror image and from the
one the neighbouring level would give, so the comparison cannot pass on an empty tile, a flipped row order
or a wrong level. A point exactly on a polar base cell's meridian is the oracle's cell however its longitude is
spelled (mortie's own answer there depends on the spelling: the reader takes longitudes in [0, 360)).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import morecantile
import numpy as np
import pytest

import moczarr.tiles as tiles
from tests.helpers import generated_dir
from tests.loopback import http_get, serve_asgi
from tests.tiles_oracle import expected_order, expected_tile, oracle_values, oracle_words, served_npy

app_module = pytest.importorskip("moczarr.tiles.app")

ARCTIC = "UPSArcticWGS84Quad"
VARIABLE = "count"
#: the zooms of the tiles around the pole: zoom 0 reads the overview of order 6, the others the cells (7)
POLE_ZOOMS = (0, 3, 5)
#: the least share of a tile's pixels holding a value (the zoom-0 tile is the hemisphere, the data 65°N and north)
LEAST_HELD = {0: 0.02, 3: 0.5, 5: 0.8}
#: (grid, lon, lat, zoom) of tiles away from the pole, each holding data in most of its pixels
HIGH_LATITUDE = [
    (ARCTIC, 179.9, 75.0, 5),  # the tiles either side of the antimeridian, a tile off the pole
    (ARCTIC, -179.9, 75.0, 5),
    ("WebMercatorQuad", 120.0, 60.0, 1),  # longitudes 0 to 180: base cells 1 and 2
    ("WebMercatorQuad", 179.9, 80.0, 4),
    ("WebMercatorQuad", -179.9, 80.0, 4),
    ("WorldCRS84Quad", -179.9, 89.9, 2),  # a top-row tile: pixel rows up to the pole, from the antimeridian
]


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_tile_cache):
    """Every test starts with no store, level or pixel cells kept."""


@pytest.fixture(scope="module")
def root() -> Path:
    return generated_dir() / "arctic_hive"


def pole_tiles(tms: morecantile.TileMatrixSet, zoom: int) -> list[morecantile.Tile]:
    """The tiles of ``zoom`` meeting at the North pole (the one tile of zoom 0), each checked to touch it."""
    found = sorted({tms.tile(lon, 89.999, zoom) for lon in (45.0, 135.0, -135.0, -45.0)})
    pole = tms.xy(0.0, 90.0)
    for tile in found:
        left, bottom, right, top = tms.xy_bounds(tile)
        assert left - 1 <= pole.x <= right + 1 and bottom - 1 <= pole.y <= top + 1, tile  # a metre of rounding
    assert len(found) == (1 if zoom == 0 else 4)
    return found


def assert_is_oracle(got: np.ma.MaskedArray, root: Path, tms, tile, order: int, least_held: float) -> None:
    """``got`` is the oracle's tile, pixel by pixel, and the comparison can tell: at least ``least_held`` of its
    pixels hold a value, its mirror image and the tile of the neighbouring level differ from it."""
    want = expected_tile(root, tms, tile, got.shape[-1], order, VARIABLE)
    assert got.shape == want.shape == (256, 256)
    wrong = np.argwhere(got.mask != want.mask)
    assert wrong.size == 0, f"{tms.id} {tile}: masks differ at {wrong[:5].tolist()} ({len(wrong)} pixels)"
    assert np.array_equal(got.data[~got.mask], want.data[~want.mask].astype(got.dtype)), f"{tms.id} {tile}: values"
    held = float((~want.mask).mean())
    assert held >= least_held, f"{tms.id} {tile}: {held:.0%} of the pixels hold data"
    filled = want.filled(-1)
    assert not np.array_equal(filled, filled[::-1]), f"{tms.id} {tile}: a flipped tile would pass"
    other = expected_tile(root, tms, tile, 256, 6 if order == 7 else 7, VARIABLE).filled(-1)
    assert not np.array_equal(filled, other), f"{tms.id} {tile}: the tile of another level would pass"


# -- the reader ----------------------------------------------------------------------------------------------
def test_the_arctic_store_has_levels_and_its_zooms_read_an_overview_and_the_cells(root):
    tms = morecantile.tms.get(ARCTIC)
    reader = tiles.HiveReader(str(root), tms=tms, variable=VARIABLE)
    assert reader.levels == (7, 6, 5)
    assert [expected_order(reader.levels, tms, z) for z in POLE_ZOOMS] == [6, 7, 7]
    assert [reader.order_for_zoom(z) for z in POLE_ZOOMS] == [6, 7, 7]


@pytest.mark.parametrize("zoom", POLE_ZOOMS)
def test_the_tiles_meeting_at_the_pole_are_the_oracle_s(root, zoom):
    reader = tiles.HiveReader(str(root), tms=ARCTIC, variable=VARIABLE)
    order = expected_order(reader.levels, reader.tms, zoom)
    for tile in pole_tiles(reader.tms, zoom):
        img = reader.tile(tile.x, tile.y, tile.z)
        assert img.metadata["cell_order"] == order
        assert_is_oracle(img.array[0], root, reader.tms, tile, order, LEAST_HELD[zoom])


@pytest.mark.parametrize("grid,lon,lat,zoom", HIGH_LATITUDE)
def test_high_latitude_tiles_are_the_oracle_s(root, grid, lon, lat, zoom):
    reader = tiles.HiveReader(str(root), tms=grid, variable=VARIABLE)
    tile = reader.tms.tile(lon, lat, zoom)
    order = expected_order(reader.levels, reader.tms, zoom)
    img = reader.tile(tile.x, tile.y, tile.z)
    assert img.metadata["cell_order"] == order
    assert_is_oracle(img.array[0], root, reader.tms, tile, order, 0.5)


@pytest.mark.parametrize("lon,lat", [(-180.0, 70.0), (-90.0, 75.0), (-180.0, 89.9)])
def test_a_point_on_a_base_cell_meridian_is_the_oracle_s_whichever_way_its_longitude_is_spelled(root, lon, lat):
    reader = tiles.HiveReader(str(root), variable=VARIABLE)
    east = oracle_words(np.array([lon + 360.0]), np.array([lat]), 7)
    assert np.array_equal(east, oracle_words(np.array([lon]), np.array([lat]), 7))  # the oracle: one cell
    want = oracle_values(root, 7, east, VARIABLE)
    assert reader.point(lon + 360.0, lat).array.tolist() == want.tolist()  # spelled positive: the oracle's
    assert reader.point(lon, lat).array.tolist() == want.tolist()


# -- over HTTP -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(root):
    """The application serving the Arctic store (and nothing else), for the module."""
    with serve_asgi(app_module.create_app(allow=[str(root)])) as url:
        yield url


def served_levels(server: str, params: str) -> list[int]:
    """The levels the server's ``/info`` names."""
    status, body, _ = http_get(f"{server}/info?{params}")
    assert status == 200, body
    return json.loads(body)["levels"]


@pytest.mark.slow
@pytest.mark.parametrize("zoom", POLE_ZOOMS)
def test_npy_tiles_meeting_at_the_pole_are_the_oracle_s(server, root, zoom):
    params = urllib.parse.urlencode({"url": str(root), "variable": VARIABLE})
    tms = morecantile.tms.get(ARCTIC)
    order = expected_order(served_levels(server, params), tms, zoom)
    for tile in pole_tiles(tms, zoom):
        status, body, _ = http_get(f"{server}/tiles/{ARCTIC}/{zoom}/{tile.x}/{tile.y}.npy?{params}")
        assert status == 200, body
        assert_is_oracle(served_npy(body), root, tms, tile, order, LEAST_HELD[zoom])


@pytest.mark.slow
def test_an_npy_web_mercator_tile_at_high_latitude_is_the_oracle_s(server, root):
    params = urllib.parse.urlencode({"url": str(root), "variable": VARIABLE})
    tms = morecantile.tms.get("WebMercatorQuad")
    tile = tms.tile(179.9, 80.0, 4)
    status, body, _ = http_get(f"{server}/tiles/WebMercatorQuad/{tile.z}/{tile.x}/{tile.y}.npy?{params}")
    assert status == 200, body
    assert_is_oracle(served_npy(body), root, tms, tile, expected_order(served_levels(server, params), tms, 4), 0.5)
