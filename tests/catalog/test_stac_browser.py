"""A portal's map, the real one: STAC Browser (the npm package, served on 127.0.0.1) in headless Chromium.

The sample is written into a folder served over HTTP (with CORS, as a portal's bucket is) and
catalogued into the same folder with ``--href-base`` pointing there; STAC Browser, served from its
own origin, opens an Item by its external route and the map is screenshot once drawn
(``tests/stac_browser.py``). What the map shows is checked against the Item: the footprint's
stroke lies on the Item's geometry, projected with the map's own view, and follows all of it.
Locally the tests skip when Chromium, Playwright or the built STAC Browser is missing; under
``CI=true`` (or with ``$MOCZARR_STAC_BROWSER`` set) they fail.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pystac
import pytest
import shapely
from shapely.geometry import shape

from moczarr.testing import write_sample_store
from moczarr_intake import cli
from tests.loopback import serve_folder
from tests.stac_browser import MapShot, bundle_dir, headless_chromium, missing, required, show

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
    """The sample's catalog, built today, and its stores, served together over HTTP with CORS."""
    base = tmp_path_factory.mktemp("browser")
    write_sample_store(base / "stores" / "sample")
    with serve_folder(base, cors=True) as url, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = ["build", str(base / "stores" / "sample"), "--out", str(base / "cat")]
        assert cli.main([*args, "--href-base", f"{url}/stores", "--stores-root", str(base / "stores")]) == 0
        yield SimpleNamespace(base=base, url=url)


def colour_mask(shot: MapShot, rgb: tuple[int, int, int], tolerance: int = 24) -> np.ndarray:
    """Where the map's pixels are within ``tolerance`` of ``rgb`` in every channel."""
    return (np.abs(shot.pixels.astype(int) - np.array(rgb)) <= tolerance).all(axis=-1)


def on_screen(geometry: dict, shot: MapShot) -> shapely.Geometry:
    """A GeoJSON geometry in the map's pixels (column, row), its edges straight on the map as OpenLayers draws them."""
    return shapely.transform(shape(geometry), lambda xy: np.array([shot.pixel_of(x, y) for x, y in xy]))


def test_the_map_shows_the_footprint_of_an_item_built_today(browser, published):
    path = published.base / "cat" / "stac" / "sample" / "elevation" / "elevation-o8" / "elevation-o8.json"
    item = pystac.Item.from_file(str(path))
    shot, _ = show(browser.chromium, browser.app, f"{published.url}/{path.relative_to(published.base).as_posix()}")
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
