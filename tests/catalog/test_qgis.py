"""QGIS, the desktop GIS, draws ``moczarr-catalog serve``'s layers: an Item's ``xyz`` and ``wmts`` links, a polar grid.

QGIS (Debian's ``qgis`` and ``python3-qgis``) runs offscreen in its own Python, driven by
``tests/qgis_driver.py``: each layer is made as QGIS's *XYZ Tiles* and *WMS/WMTS* connections make
it (the ``wms`` provider, its data source URI encoded by QGIS itself) and rendered by QGIS's map
renderer over a box of whole tiles at one zoom, one map pixel per tile pixel. What QGIS drew must
be the tile server's own tiles of that box (fetched here and laid side by side): their colours where
they have data, nothing (transparent) where they have none. The servers are the real ones: the
sample's stores and catalog served over HTTP and ``moczarr-catalog serve`` (``tests/stac_browser.py``),
and for the polar grid the server over the generated layer's polar product.

The tests skip, naming what is missing, when ``/usr/bin/python3 -c "import qgis.core"`` fails (or
``$MOCZARR_QGIS_PYTHON``'s): QGIS is a gigabyte of Debian packages that CI does not install.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import morecantile
import numpy as np
import pystac
import pytest
from PIL import Image

from tests import qgis_driver
from tests.helpers import fixture_path
from tests.pictures import served_png, uniform
from tests.stac_browser import published_sample, tile_server
from tests.tiles_oracle import first_numeric

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]  # QGIS and its servers

ITEM = "sample/elevation/elevation-o8/elevation-o8.json"
#: the polar product of the test stores (Antarctica), one window, and the zoom drawn
POLAR = {"product": "atl06_windows", "window": "2019"}
POLAR_GRID, POLAR_ZOOM = "UPSAntarcticWGS84Quad", 3
#: the most tiles a box spans each way before its one-tile margin
MAX_SPAN = 3


@pytest.fixture(scope="module")
def qgis():
    """QGIS's Python, with PyQGIS; the module skips without it."""
    why = qgis_driver.missing()
    if why:
        pytest.skip(why)


@pytest.fixture(scope="module")
def published(qgis, tmp_path_factory):
    """The sample's catalog built with ``--tiles-url``, its stores and its tile server, served on 127.0.0.1."""
    with published_sample(tmp_path_factory.mktemp("qgis")) as served:
        yield served


def tile_box(
    tms: morecantile.TileMatrixSet, tiles: list[morecantile.Tile], margin: int
) -> tuple[list[list[morecantile.Tile]], list[float]]:
    """The tiles of the rectangle holding ``tiles`` (one zoom) and ``margin`` tiles around, row by row; and its
    box in the grid's CRS."""
    z = tiles[0].z
    last = tms.matrix(z).matrixWidth - 1, tms.matrix(z).matrixHeight - 1
    xs = range(max(min(t.x for t in tiles) - margin, 0), min(max(t.x for t in tiles) + margin, last[0]) + 1)
    ys = range(max(min(t.y for t in tiles) - margin, 0), min(max(t.y for t in tiles) + margin, last[1]) + 1)
    rows = [[morecantile.Tile(x, y, z) for x in xs] for y in ys]
    top_left, bottom_right = tms.xy_bounds(rows[0][0]), tms.xy_bounds(rows[-1][-1])
    return rows, [top_left.left, bottom_right.bottom, bottom_right.right, top_left.top]


def served_tile(template: str, tile: morecantile.Tile) -> np.ndarray:
    """The server's PNG tile (``template`` with ``{z}/{x}/{y}``), RGBA; a tile it has no data in (404) is empty."""
    try:
        return served_png(template.format(z=tile.z, x=tile.x, y=tile.y))
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        return np.zeros((256, 256, 4), np.uint8)


def stitched(template: str, rows: list[list[morecantile.Tile]]) -> np.ndarray:
    """The server's PNG tiles of ``rows`` laid side by side (:func:`served_tile`)."""
    return np.concatenate([np.concatenate([served_tile(template, t) for t in row], axis=1) for row in rows])


def qgis_render(tmp_path: Path, params: dict, crs: str, box: list, shape: tuple[int, ...]) -> tuple[np.ndarray, dict]:
    """The RGBA picture QGIS's renderer makes of the ``wms`` provider's layer of ``params`` over ``box``
    (``crs``), one pixel per tile pixel; and QGIS's answer for the layer (its URI, the requests it made)."""
    png = tmp_path / "qgis.png"
    height, width = shape[:2]
    job = {"job": "render", "crs": crs, "extent": box, "size": [width, height]}
    answer = qgis_driver.run({**job, "layers": [{"name": "layer", "params": params, "png": str(png)}]})
    (layer,) = answer["layers"]
    return np.asarray(Image.open(png).convert("RGBA")), {**layer, "requests": answer["requests"]}


def assert_drawn_like(shown: np.ndarray, expected: np.ndarray, what: str) -> None:
    """``shown`` (QGIS's picture) has ``expected``'s colours where it has data, nothing where it has none.

    Compared away from the edges of colour and of data (a pixel off there is resampling, not a wrong layer).
    """
    assert shown.shape == expected.shape
    data = uniform(expected, 2) & (expected[..., 3] == 255)
    empty = uniform(expected, 2) & (expected[..., 3] == 0)
    assert data.sum() > 300 and empty.sum() > 10_000  # the box holds data and room around it
    same = (np.abs(shown.astype(int) - expected.astype(int)) <= 8).all(axis=-1)
    assert same[data].mean() > 0.99, f"QGIS's {what} layer differs from the tile server's tiles where there is data"
    assert (shown[empty][:, 3] == 0).mean() > 0.99, f"QGIS's {what} layer draws where the tile server has no data"


def web_mercator_box(bbox: list[float]) -> tuple[list[list[morecantile.Tile]], list[float]]:
    """The box of whole Web Mercator tiles around a lon/lat ``bbox``: the highest zoom at which it spans at most
    :data:`MAX_SPAN` tiles each way, and a tile of margin."""
    tms = morecantile.tms.get("WebMercatorQuad")
    for z in range(1, 20):
        tiles = list(tms.tiles(*bbox, [z]))
        if max(len({t.x for t in tiles}), len({t.y for t in tiles})) > MAX_SPAN:
            break
        found = tiles
    return tile_box(tms, found, 1)


@pytest.mark.parametrize("rel", ["xyz", "wmts"])
def test_qgis_draws_an_items_web_map_link_as_the_tile_server_tiles_it(published, tmp_path, rel):
    item = pystac.Item.from_file(str(published.base / "cat" / "stac" / ITEM))
    assert item.bbox is not None
    (xyz,) = (link for link in item.links if link.rel == "xyz")
    (link,) = (link for link in item.links if link.rel == rel)
    if rel == "xyz":  # what the XYZ Tiles connection stores: the URL template as the link gives it
        params = {"type": "xyz", "url": link.href, "zmin": 0, "zmax": 22}
    else:  # what the WMS/WMTS connection stores once its layer is picked: the capabilities URL and the layer
        layer = link.extra_fields["wmts:layer"]
        params = {"url": link.href, "layers": layer, "styles": layer, "tileMatrixSet": "WebMercatorQuad"}
        params |= {"format": "image/png", "crs": "EPSG:3857"}
    rows, box = web_mercator_box(item.bbox)
    expected = stitched(xyz.href, rows)
    shown, layer = qgis_render(tmp_path, params, "EPSG:3857", box, expected.shape)
    assert layer["valid"] and not layer["errors"], layer
    assert_drawn_like(shown, expected, rel)


@pytest.mark.layers
def test_qgis_draws_a_polar_wmts_layer_in_its_own_grid(qgis, tmp_path):
    """The capabilities declare UPSAntarcticWGS84Quad (EPSG:5042): QGIS takes the grid from them and draws
    the Antarctic product in its polar projection. QGIS 3.22 reads EPSG:5042's axes as inverted (north first)
    and then asks the wrong tiles, so the connection ignores the axis orientation, as docs/maps.md tells users to.
    Drawn: the four tiles meeting at the pole, at one map pixel per tile pixel."""
    root = fixture_path("multiproduct_hive")
    tms = morecantile.tms.get(POLAR_GRID)
    with tile_server(str(root)) as tiles:
        variable = first_numeric(root / POLAR["product"], window=POLAR["window"])
        base = {"url": str(root), **POLAR, "variable": variable}
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{tiles}/statistics?{urlencode(base)}", timeout=60) as resp:
            (stats,) = json.load(resp).values()
        assert stats["min"] < stats["max"]
        query = urlencode({**base, "rescale": f"{stats['min']},{stats['max']}", "colormap_name": "viridis"})
        layer = f"{root}_{POLAR_GRID}_default"
        params = {"url": f"{tiles}/WMTSCapabilities.xml?{query}", "layers": layer, "styles": layer}
        params |= {"tileMatrixSet": POLAR_GRID, "format": "image/png", "crs": "EPSG:5042", "IgnoreAxisOrientation": 1}
        around_pole = [tms.tile(lon, -89.99, POLAR_ZOOM) for lon in (-135, -45, 45, 135)]
        rows, box = tile_box(tms, around_pole, 0)
        expected = stitched(f"{tiles}/tiles/{POLAR_GRID}/{{z}}/{{x}}/{{y}}.png?{query}", rows)
        shown, drawn = qgis_render(tmp_path, params, "EPSG:5042", box, expected.shape)
    assert drawn["valid"] and not drawn["errors"], drawn
    asked = {url.split("?")[0].split(f"/{POLAR_GRID}/", 1)[-1] for url in drawn["requests"] if "/tiles/" in url}
    assert asked == {f"{t.z}/{t.x}/{t.y}.png" for row in rows for t in row}, "QGIS asked other tiles than the box's"
    assert_drawn_like(shown, expected, POLAR_GRID)
