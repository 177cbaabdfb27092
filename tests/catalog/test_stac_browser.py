"""A portal's map, the real one: STAC Browser (the npm package, served on 127.0.0.1) in headless Chromium.

The sample is written into a folder served over HTTP (with CORS, as a portal's bucket is) and
catalogued into the same folder with ``--href-base`` pointing there and ``--tiles-url`` pointing at
a running ``moczarr-catalog serve`` (``tests/stac_browser.py``). STAC Browser, served from its own
origin, opens an Item by its external route, with no configuration, and its map is screenshot once
drawn. What the map shows is checked against the Item and the tile server: the footprint's stroke
lies on the Item's geometry, projected with the map's own view, and follows all of it; the data
layer, where the tile server's own picture of the map's area (its ``/bbox`` PNG, pixel for pixel)
has data, shows that picture's colours, and where it has none, no colour of the colormap.
Locally the tests skip when Chromium, Playwright or the built STAC Browser is missing; under
``CI=true`` (or with ``$MOCZARR_STAC_BROWSER`` set) they fail.
"""

from __future__ import annotations

from types import SimpleNamespace
from urllib.parse import urlsplit

import numpy as np
import pystac
import pytest
import shapely
from rio_tiler.colormap import cmap
from shapely.geometry import shape

from tests.loopback import serve_folder
from tests.pictures import served_png, uniform
from tests.stac_browser import MapShot, bundle_dir, headless_chromium, missing, published_sample, required, show

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]  # a browser and its servers

#: ol-stac's default stroke of an Item's footprint (``#3399CC``, 3 px)
FOOTPRINT = (0x33, 0x99, 0xCC)
#: how far (pixels) a stroke pixel may sit from the projected outline: half the stroke, antialiasing, rounding
STROKE_SLACK = 4.0


@pytest.fixture(scope="module")
def browser():
    """STAC Browser's bundle served on 127.0.0.1, and headless Chromium."""
    why = missing()
    if why:
        if required():
            pytest.fail(f"the STAC Browser tests need it: {why}")
        pytest.skip(why)
    with serve_folder(bundle_dir()) as app, headless_chromium() as chromium:
        yield SimpleNamespace(app=app, chromium=chromium)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The sample's catalog built today with ``--tiles-url``, its stores and its tile server, served on 127.0.0.1."""
    with published_sample(tmp_path_factory.mktemp("browser")) as served:
        yield served


def colour_mask(shot: MapShot, rgb: tuple[int, int, int], tolerance: int = 24) -> np.ndarray:
    """Where the map's pixels are within ``tolerance`` of ``rgb`` in every channel."""
    return (np.abs(shot.pixels.astype(int) - np.array(rgb)) <= tolerance).all(axis=-1)


def on_screen(geometry: dict, shot: MapShot) -> shapely.Geometry:
    """A GeoJSON geometry in the map's pixels (column, row), its edges straight on the map as OpenLayers draws them."""
    return shapely.transform(shape(geometry), lambda xy: np.array([shot.pixel_of(x, y) for x, y in xy]))


def open_item(browser, published, item_path: str) -> tuple[pystac.Item, MapShot]:
    """The Item at ``item_path`` (below the catalog's ``stac``), and its map in STAC Browser."""
    path = published.base / "cat" / "stac" / item_path
    shot, _ = show(browser.chromium, browser.app, f"{published.url}/{path.relative_to(published.base).as_posix()}")
    return pystac.Item.from_file(str(path)), shot


def test_the_map_shows_the_footprint_of_an_item_built_today(browser, published):
    item, shot = open_item(browser, published, "sample/elevation/elevation-o8/elevation-o8.json")
    outline = on_screen(item.geometry, shot).boundary
    rows, cols = np.nonzero(colour_mask(shot, FOOTPRINT))
    assert len(rows) > outline.length  # a 3 px stroke along the whole outline
    distance = shapely.distance(shapely.points(cols + 0.5, rows + 0.5), outline)
    assert (distance <= STROKE_SLACK).mean() > 0.99, "the stroke is not where the Item's geometry is"
    stroke = shapely.multipoints(np.column_stack([cols + 0.5, rows + 0.5]))
    along = shapely.line_interpolate_point(outline, np.arange(0, outline.length, 5.0))
    assert (shapely.distance(along, stroke) <= STROKE_SLACK).all(), "a part of the Item's outline is not drawn"
    height, width, _ = shot.pixels.shape
    assert shapely.box(0, 0, width, height).contains(outline)  # the map fits the Item


@pytest.mark.parametrize(
    "item_path",
    [
        "sample/elevation/elevation-o4/elevation-o4.json",  # a coarse level: large cells
        "sample/elevation_yearly/elevation_yearly-o8-2020/elevation_yearly-o8-2020.json",  # one window of a product
    ],
)
def test_the_map_shows_the_data_layer_where_the_data_is_and_nothing_elsewhere(browser, published, item_path):
    item, shot = open_item(browser, published, item_path)
    (link,) = (link for link in item.links if link.rel == "xyz")
    assert link.href.startswith(f"{published.tiles}/tiles/WebMercatorQuad/")
    height, width, _ = shot.pixels.shape
    box = ",".join(map(repr, shot.extent))
    query = urlsplit(link.href).query + "&coord_crs=epsg:3857&dst_crs=epsg:3857"
    # the tile server's own picture of the map's area, pixel for pixel
    expected = served_png(f"{published.tiles}/bbox/{box}/{width}x{height}.png?{query}")
    rows, cols = np.mgrid[0:height, 0:width]
    outline = on_screen(item.geometry, shot).boundary
    off_stroke = shapely.distance(shapely.points(cols + 0.5, rows + 0.5), outline) > STROKE_SLACK
    data = uniform(expected, 2) & (expected[..., 3] == 255) & off_stroke
    empty = uniform(expected, 2) & (expected[..., 3] == 0) & off_stroke
    assert data.sum() > 300 and empty.sum() > 10_000  # the view holds data (away from its edges) and room around it
    shown = shot.pixels.astype(int)
    matches = (np.abs(shown - expected[..., :3]) <= 8).all(axis=-1)
    assert matches[data].mean() > 0.99, "the map's data layer differs from the tile server's picture"
    palette = np.array([rgba[:3] for rgba in cmap.get("viridis").values()], int)
    there = np.unique(shown[empty], axis=0)  # the few colours of the empty area
    nearest = np.abs(there[:, None, :] - palette[None, :, :]).max(axis=-1).min(axis=-1)
    assert (nearest > 8).all(), f"the map shows colours of the colormap where there is no data: {there[nearest <= 8]}"
