"""The tile server (moczarr.tiles.app) over HTTP: uvicorn on 127.0.0.1 in a thread, asked as a web map asks it.

Every ``.npy`` tile is compared pixel by pixel with the oracle (``tests/tiles_oracle.py``), in the four grids a
portal needs, at several zooms; the documents (tilejson, WMTS) point back at the server; ``/point`` is the
cell's value; a PNG with ``rescale`` and ``colormap_name`` is the colormap of the values, transparent where
there are none; concurrent requests share one open; a changed store is noticed; an S3 store is served; and
a request for a store outside the allowed prefixes is refused.
"""

from __future__ import annotations

import io
import json
import shutil
import urllib.error
import urllib.parse
import urllib.request
import warnings
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

import morecantile
import numpy as np
import pytest

import moczarr
from moczarr.storage import count_requests
from moczarr.testing import write_sample_store
from tests.helpers import SAMPLE, fixture_path, layer_dir
from tests.loopback import http_get, serve_asgi
from tests.tiles_oracle import data_centre, expected_order, expected_tile, first_numeric, served_npy

tiles = pytest.importorskip("moczarr.tiles")
app_module = pytest.importorskip("moczarr.tiles.app")

pytestmark = pytest.mark.slow

WMTS = {"wmts": "http://www.opengis.net/wmts/1.0", "ows": "http://www.opengis.net/ows/1.1"}


def query(**params) -> str:
    return urllib.parse.urlencode({k: str(v) for k, v in params.items() if v is not None})


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_tile_cache):
    """Every test starts with no store, level or pixel cells kept."""


@pytest.fixture(scope="module")
def server(store_layer):
    """The server of this layer's stores (only they are allowed), for the module."""
    with serve_asgi(app_module.create_app(allow=[str(layer_dir())])) as url:
        yield url


#: (grid, store, product, window) whose tiles are checked: each grid at least once, the polar ones on the
#: polar (windowed) product, the rest on a pyramid of three levels
CASES = [
    ("WebMercatorQuad", "zagg/pyramid/store", None, None),
    ("WorldCRS84Quad", "zagg/pyramid/store", None, None),
    ("UPSArcticWGS84Quad", "zagg/pyramid/store", None, None),
    ("UPSAntarcticWGS84Quad", "multiproduct_hive", "atl06_windows", "2019"),
    ("WorldCRS84Quad", "multiproduct_hive", "atl06_windows", "2019"),
]


@pytest.mark.layers
@pytest.mark.parametrize("grid,store,product,window", CASES)
def test_npy_tiles_equal_the_oracle_at_several_zooms(server, grid, store, product, window):
    root = fixture_path(store)
    data = root / product if product else root
    variable = first_numeric(data, window=window)
    common = {"url": root, "product": product, "window": window, "variable": variable}
    status, body, _ = http_get(f"{server}/{grid}/tilejson.json?{query(**common)}")
    assert status == 200, body
    maxzoom = json.loads(body)["maxzoom"]
    status, body, _ = http_get(f"{server}/info?{query(**common)}")
    assert status == 200, body
    info = json.loads(body)
    levels = info["levels"]
    tms = morecantile.tms.get(grid)
    lon, lat = data_centre(data, variable, window=window)
    held = 0
    for zoom in sorted({max(maxzoom - 2, 0), maxzoom, maxzoom + 2}):
        tile = tms.tile(lon, lat, zoom)
        status, body, kind = http_get(f"{server}/tiles/{grid}/{zoom}/{tile.x}/{tile.y}.npy?{query(**common)}")
        assert status == 200 and kind == "application/x-binary", body
        got = served_npy(body)
        assert str(got.dtype) == info["dtype"]  # /info names the dtype the tiles carry
        order = expected_order(levels, tms, zoom)
        want = expected_tile(data, tms, tile, 256, order, variable, window=window)
        assert got.shape == (256, 256)
        assert np.array_equal(got.mask, want.mask), f"{grid} {tile}: masks differ"
        assert np.array_equal(got.data[~got.mask], want.data[~want.mask].astype(got.dtype)), f"{grid} {tile}"
        held += int((~got.mask).sum())
    assert held > 0  # the tiles met the data: values were compared


@pytest.mark.layers
def test_tilejson_and_wmts_point_at_the_server_and_their_tiles_answer(server):
    root = fixture_path("zagg/pyramid/store")
    common = query(url=root, variable="count")
    status, body, _ = http_get(f"{server}/WebMercatorQuad/tilejson.json?{common}&tile_format=png")
    assert status == 200, body
    doc = json.loads(body)
    (template,) = doc["tiles"]
    assert template.startswith(f"{server}/tiles/WebMercatorQuad/{{z}}/{{x}}/{{y}}.png?")
    tile = morecantile.tms.get("WebMercatorQuad").tile(*data_centre(root, "count"), doc["maxzoom"])
    status, body, kind = http_get(template.format(z=tile.z, x=tile.x, y=tile.y))
    assert status == 200 and kind == "image/png", body

    status, body, kind = http_get(f"{server}/WMTSCapabilities.xml?{query(url=f'{root}/', variable='count')}")
    assert status == 200 and "xml" in kind, body
    xml = ET.fromstring(body)
    layers = {
        layer.find("ows:Identifier", WMTS).text: layer.find("wmts:ResourceURL", WMTS).get("template")
        for layer in xml.iter(f"{{{WMTS['wmts']}}}Layer")
    }
    grids = {"WebMercatorQuad", "WorldCRS84Quad", "UPSArcticWGS84Quad", "UPSAntarcticWGS84Quad"}
    polar = {layer: url for layer, url in layers.items() if "UPSArcticWGS84Quad" in layer}
    assert grids <= {g for g in morecantile.tms.list() if any(f"_{g}_" in layer for layer in layers)}
    assert set(polar) == {f"{root}/_UPSArcticWGS84Quad_default"}  # the url= as given names the layer
    (arctic,) = polar.values()
    assert arctic.startswith(f"{server}/tiles/UPSArcticWGS84Quad/{{TileMatrix}}/{{TileCol}}/{{TileRow}}.png?")
    tile = morecantile.tms.get("UPSArcticWGS84Quad").tile(*data_centre(root, "count"), 3)
    status, body, kind = http_get(arctic.format(TileMatrix=tile.z, TileCol=tile.x, TileRow=tile.y))
    assert status == 200 and kind == "image/png", body


@pytest.mark.layers
def test_the_wmts_route_of_one_grid_answers_the_capabilities(server):
    """``/{tms}/WMTSCapabilities.xml`` (older titiler's route) leads to the same document, its query kept."""
    root = fixture_path("zagg/pyramid/store")
    common = query(url=f"{root}/", variable="count")
    status, body, kind = http_get(f"{server}/UPSAntarcticWGS84Quad/WMTSCapabilities.xml?{common}")
    assert status == 200 and "xml" in kind, body
    assert body == http_get(f"{server}/WMTSCapabilities.xml?{common}")[1]
    status, body, _ = http_get(f"{server}/NoSuchGrid/WMTSCapabilities.xml?{common}")
    assert status == 404 and b"NoSuchGrid" in body


@pytest.mark.layers
def test_point_is_the_cell_value_open_level_selects(server):
    root = fixture_path("zagg/pyramid/store")
    lon, lat = data_centre(root, "count")
    status, body, _ = http_get(f"{server}/point/{lon},{lat}?{query(url=root, variable='count')}")
    assert status == 200, body
    (value,) = json.loads(body)["values"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        ds = moczarr.cell_centers(moczarr.open_level(root, 8))
    at = int(np.argmin(np.hypot(ds["lon"].values - lon, ds["lat"].values - lat)))
    word = ds["morton"].values[at]
    (want,) = moczarr.open_level(root, 8).sel(morton=[word])["count"].values
    assert value == float(want) != 0


@pytest.mark.layers
def test_statistics_lie_within_the_values_of_the_finest_level(server):
    root = fixture_path("zagg/pyramid/store")
    status, body, _ = http_get(f"{server}/statistics?{query(url=root, variable='count')}")
    assert status == 200, body
    stats = json.loads(body)["b1"]
    values = moczarr.open_level(root, 8)["count"].values
    values = values[np.isfinite(values)]
    assert values.min() <= stats["min"] <= stats["max"] <= values.max()
    assert stats["count"] > 0 and 0 < stats["valid_percent"] < 100


@pytest.mark.layers
def test_a_png_with_rescale_and_colormap_is_the_colormap_of_the_values_and_transparent_elsewhere(server):
    from PIL import Image
    from rio_tiler.colormap import cmap

    root = fixture_path("zagg/pyramid/store")
    tms = morecantile.tms.get("WebMercatorQuad")
    common = {"url": root, "variable": "count"}
    status, body, _ = http_get(f"{server}/WebMercatorQuad/tilejson.json?{query(**common)}")
    tile = tms.tile(*data_centre(root, "count"), json.loads(body)["maxzoom"])
    path = f"{server}/tiles/WebMercatorQuad/{tile.z}/{tile.x}/{tile.y}"
    status, body, _ = http_get(f"{path}.npy?{query(**common)}")
    values = served_npy(body)
    lo, hi = 0.0, float(values.max())
    status, body, kind = http_get(f"{path}.png?{query(**common, rescale=f'{lo},{hi}', colormap_name='viridis')}")
    assert status == 200 and kind == "image/png", body
    rgba = np.asarray(Image.open(io.BytesIO(body)).convert("RGBA"))
    assert rgba.shape == (256, 256, 4)
    np.testing.assert_array_equal(rgba[..., 3] == 255, ~values.mask)
    assert (rgba[..., 3][values.mask] == 0).all()
    index = np.clip((values.data - lo) / (hi - lo) * 255, 0, 255).astype(np.uint8)
    palette = cmap.get("viridis")
    want = np.array([palette[int(i)][:3] for i in index[~values.mask]], dtype=np.uint8)
    np.testing.assert_array_equal(rgba[..., :3][~values.mask], want)
    assert len({tuple(c) for c in want}) > 1  # coloured: more than one colour drawn


def concurrent_cold(server: str, clients: int = 16):
    """One cold request of a tile, then ``clients`` cold requests of it at once: ``(single, answers, counters)``
    (the body of the single request, each concurrent ``get``, and the requests each phase made)."""
    root = fixture_path("zagg/pyramid/store")
    tile = morecantile.tms.get("WebMercatorQuad").tile(*data_centre(root, "count"), 5)
    url = f"{server}/tiles/WebMercatorQuad/{tile.z}/{tile.x}/{tile.y}.npy?{query(url=root, variable='count')}"
    with count_requests() as one:
        status, single, _ = http_get(url)
    assert status == 200
    tiles.clear_cache()
    with count_requests() as many, ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(http_get, [url] * clients))
    return single, answers, (one, many)


@pytest.mark.layers
def test_sixteen_concurrent_tile_requests_are_all_answered(server):
    single, answers, _ = concurrent_cold(server)
    assert [a[0] for a in answers] == [200] * 16
    assert all(a[1] == single for a in answers)


@pytest.mark.layers
def test_sixteen_concurrent_first_requests_open_the_store_once(server):
    _, answers, (one, many) = concurrent_cold(server)
    assert [a[0] for a in answers] == [200] * 16
    assert many.kind("manifest") == one.kind("manifest") > 0  # the store was opened once, not per request
    assert many.kind("stamp") == one.kind("stamp")  # and its leaves once


def test_a_changed_store_is_noticed(tmp_path, monkeypatch):
    monkeypatch.setattr(tiles.cache, "REVALIDATE_SECONDS", 0.0)
    store = write_sample_store(tmp_path / "sample", seed=1)
    tms = morecantile.tms.get("WebMercatorQuad")
    data = store / "elevation"
    lon, lat = data_centre(data, "count")
    tile = tms.tile(lon, lat, 6)
    params = query(url=store, product="elevation", variable="count", cell_order=8)
    with serve_asgi(app_module.create_app(allow=[str(tmp_path)])) as server:
        path = f"{server}/tiles/WebMercatorQuad/{tile.z}/{tile.x}/{tile.y}.npy?{params}"
        status, before, _ = http_get(path)
        assert status == 200
        write_sample_store(store, seed=2, overwrite=True)
        status, after, _ = http_get(path)
    assert status == 200 and after != before
    want = expected_tile(data, tms, tile, 256, 8, "count")
    got = served_npy(after)
    assert np.array_equal(got.mask, want.mask) and np.array_equal(got.data[~got.mask], want.data[~want.mask])


def test_an_s3_store_is_served_and_other_buckets_refused(s3_server):
    bucket = s3_server.bucket("tiles-server")
    s3_server.upload_tree(SAMPLE, bucket, "stores/sample")
    app = app_module.create_app(allow=[f"s3://{bucket}/stores"], storage_options=s3_server.storage_options(anon=False))
    tms = morecantile.tms.get("WorldCRS84Quad")
    data = SAMPLE / "elevation"
    tile = tms.tile(*data_centre(data, "count"), 6)
    params = {"product": "elevation", "variable": "count", "cell_order": 8}
    with serve_asgi(app) as server:
        path = f"{server}/tiles/WorldCRS84Quad/{tile.z}/{tile.x}/{tile.y}.npy"
        status, body, _ = http_get(f"{path}?{query(url=f's3://{bucket}/stores/sample', **params)}")
        assert status == 200, body
        refused = http_get(f"{path}?{query(url=f's3://{bucket}/other', **params)}")
    got, want = served_npy(body), expected_tile(data, tms, tile, 256, 8, "count")
    assert np.array_equal(got.mask, want.mask) and np.array_equal(got.data[~got.mask], want.data[~want.mask])
    assert (~got.mask).any()
    assert refused[0] == 403
    # every client's tiles of a store read through its one handle: its in-flight limit is theirs together
    from moczarr.storage import DEFAULT_CONCURRENCY
    from moczarr.tiles.cache import TILE_CONCURRENCY, opened_store

    opened = opened_store(
        f"s3://{bucket}/stores/sample", "elevation", None, None, s3_server.storage_options(anon=False)
    )
    assert opened.storage.concurrency == TILE_CONCURRENCY > DEFAULT_CONCURRENCY


@pytest.mark.parametrize(
    "params,status,words",
    [
        ({"url": "{allowed}/../elsewhere"}, 403, "outside the stores this server serves"),
        ({"url": "{allowed}/link"}, 403, "outside the stores this server serves"),  # a link out of the prefix
        ({"url": "/"}, 403, "outside the stores this server serves"),
        ({"url": "s3://bucket/x"}, 403, "outside the stores this server serves"),
        ({"url": "{allowed}/absent"}, 404, "absent"),
        ({"url": "{allowed}/sample"}, 400, "pass product="),
        ({"url": "{allowed}/sample", "product": "nope"}, 400, "nope"),
        ({"url": "{allowed}/sample", "product": "elevation", "cell_order": 5}, 400, "cell_order=5"),
        ({"url": "{allowed}/sample", "product": "elevation", "time": "2019"}, 400, "START/END"),
        ({"url": "{allowed}/sample", "product": "elevation", "variable": "nope"}, 400, "nope"),
    ],
)
def test_a_bad_request_is_one_line_with_its_status(tmp_path, params, status, words):
    allowed = tmp_path / "allowed"
    shutil.copytree(SAMPLE, allowed / "sample")
    (tmp_path / "elsewhere").mkdir()
    (allowed / "link").symlink_to(tmp_path / "elsewhere")
    params = {k: str(v).replace("{allowed}", str(allowed)) for k, v in params.items()}
    route = "statistics" if "variable" in params else "info"
    with serve_asgi(app_module.create_app(allow=[str(allowed)])) as server:
        got, body, _ = http_get(f"{server}/{route}?{query(**params)}")
    assert got == status, body
    detail = json.loads(body)["detail"]
    assert words in detail and "\n" not in detail, detail
