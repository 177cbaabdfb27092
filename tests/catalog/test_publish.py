"""A published catalog, used with the ecosystem's own tools over real HTTP.

One build (module scope) over copies of real stores of every kind: a bare
store and a multi-product root whose folders are both called ``store`` and
which both hold a product ``atl06``, a windowed pyramid with all-time folds, a ragged store, the
bundled sample, and two moraine pyramids (raster, point cloud). The stores and
the catalog are served by a real ``http.server`` on 127.0.0.1; the catalog is
built with ``--href-base`` and ``--catalog-url`` pointing there. Every level
Item is then opened over HTTP with xarray's ``moczarr`` engine from its own
asset hints, with ``open_stac``, with xpystac and with intake's STAC reader,
and compared with ``open_level`` on the local copy.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import intake
import numpy as np
import pystac
import pytest
import xarray as xr

import moczarr
from moczarr.moraine import open_moraine_level
from moczarr_intake.cli import main
from moczarr_intake.stac import ENGINE, HIVE_MEDIA_TYPE, MEDIA_TYPE, XARRAY, open_stac, validate_offline
from tests.engines import register_engine
from tests.helpers import REPO, fixture_path, writable_copy
from tests.loopback import BurstServer

pytestmark = [pytest.mark.filterwarnings("ignore::moczarr.errors.MoczarrWarning"), pytest.mark.slow]

#: where each store copy goes below ``stores/`` -> the store it is a copy of
STORES = {
    "A/store": "zagg/single_8/store",
    "B/store": "zagg/multi/store",
    "windowed/store": "zagg/pyramid_temporal/store",  # windows, overview levels, all-time folds
    "ragged/store": "zagg/single_ragged/store",
    "moraine/ras_mean_v1": "moraine/ras_mean_v1",
    "moraine/pc_first_v1": "moraine/pc_first_v1",
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    """The one store lookup of this file: copies of real stores under ``{tmp}/stores``."""
    base = tmp_path_factory.mktemp("published")
    for dest, name in STORES.items():
        writable_copy(fixture_path(name), base / "stores" / dest)
    writable_copy(REPO / "catalogs" / "sample", base / "stores" / "sample")
    return base


#: a loopback opener that never goes through a configured HTTP proxy
LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Server:
    """``http.server`` on 127.0.0.1 serving a folder, recording every request line."""

    def __init__(self, folder: Path):
        self.requests: list[str] = []
        log = self.requests

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, fmt, *args):
                log.append(self.requestline)

        self.httpd = BurstServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def published(stores):
    register_engine()
    server = Server(stores)
    out = stores / "site" / "cat"
    roots = [str(stores / "stores" / d) for d in [*STORES, "sample"]]
    argv = [
        "build",
        *roots,
        "--out",
        str(out),
        "--thumbnails",
        "--href-base",
        f"{server.url}/stores",
        "--catalog-url",
        f"{server.url}/site/cat",
        "--license",
        "CC-BY-4.0",
    ]
    assert main(argv) == 0
    try:
        yield SimpleNamespace(
            server=server, out=out, base=stores, url=server.url, root_url=f"{server.url}/site/cat/stac/catalog.json"
        )
    finally:
        server.stop()


def _local(published, href: str) -> Path:
    assert href.startswith(published.url + "/"), href
    return published.base / href[len(published.url) + 1 :]


def _level_items(published):
    catalog = pystac.Catalog.from_file(published.root_url)
    items = [i for i in catalog.get_items(recursive=True) if "moczarr:cell_order" in i.properties]
    assert len(items) > 20
    return items


def _same(a: xr.Dataset, b: xr.Dataset):
    xr.testing.assert_identical(a.load(), b.load())


def _direct(published, item: pystac.Item) -> xr.Dataset:
    hint = item.assets["data"].extra_fields["xarray:open_kwargs"]
    root = _local(published, item.assets["data"].href)
    return moczarr.open_level(root, hint["cell_order"], hint.get("window"), all_time=bool(hint.get("all_time")))


@pytest.mark.layers
def test_no_document_holds_a_machine_path(published):
    documents = list(published.out.rglob("*.json")) + list(published.out.glob("*.yaml"))
    assert len(documents) > 40
    for path in documents:
        text = path.read_text()
        assert str(published.base) not in text, f"{path} holds a path of this machine"
    catalog = pystac.Catalog.from_file(published.root_url)
    for item in catalog.get_items(recursive=True):
        for key, asset in item.assets.items():
            if key != "thumbnail":
                assert asset.href.startswith(f"{published.url}/stores/"), (item.id, key, asset.href)


@pytest.mark.layers
def test_published_links_follow_relative_published(published):
    """Every Catalog and Collection says where it is published (an absolute self link); other links are relative."""
    stac_dir = published.out / "stac"
    documents = 0
    for path in stac_dir.rglob("*.json"):
        if path.parent.name == "api-collections":
            continue
        doc = json.loads(path.read_text())
        selves = [link["href"] for link in doc["links"] if link["rel"] == "self"]
        if doc["type"] in ("Catalog", "Collection"):
            assert selves == [f"{published.url}/site/cat/stac/{path.relative_to(stac_dir).as_posix()}"], path
            documents += 1
        else:
            assert not selves, path  # Items: relative, as RELATIVE_PUBLISHED writes them
        others = [link for link in doc["links"] if link["rel"] not in ("self", "license")]
        assert others and all(not link["href"].startswith("http") for link in others), path
        if selves:  # served where it says it is
            with LOOPBACK.open(selves[0], timeout=10) as response:
                assert response.read() == path.read_bytes(), path
    assert documents > 10
    assert validate_offline(stac_dir / "catalog.json")


@pytest.mark.layers
def test_every_level_item_opens_over_http_from_its_asset_hints(published):
    items = _level_items(published)
    assert any(i.assets["data"].extra_fields["xarray:open_kwargs"].get("all_time") for i in items)
    for item in items:
        asset = item.assets["data"]
        assert asset.media_type == MEDIA_TYPE and XARRAY in item.stac_extensions
        kwargs = asset.extra_fields["xarray:open_kwargs"]
        assert kwargs["engine"] == ENGINE
        start = len(published.server.requests)
        ds = xr.open_dataset(asset.href, **kwargs)
        _same(ds, _direct(published, item))
        lists = [r for r in published.server.requests[start:] if r.split()[1].endswith("/")]
        assert lists == [], f"{item.id}: the reader listed {lists}"


@pytest.mark.layers
def test_open_stac_over_http(published):
    items = _level_items(published)
    for item in items[::3]:
        _same(open_stac(item.get_self_href()), _direct(published, item))
    catalog = pystac.Catalog.from_file(published.root_url)
    moraine = {i.id: i for i in catalog.get_items() if "moraine:kind" in i.properties}
    assert set(moraine) == {"ras_mean_v1", "pc_first_v1"}
    got = open_stac(moraine["ras_mean_v1"].get_self_href(), level=2)
    xr.testing.assert_identical(
        got.compute(), open_moraine_level(published.base / "stores/moraine/ras_mean_v1", 2).compute()
    )
    points = open_stac(moraine["pc_first_v1"], asset="points")
    assert points.sizes["point"] == 3000


@pytest.mark.layers
def test_collections_open_over_http(published):
    catalog = pystac.Catalog.from_file(published.root_url)
    for collection in catalog.get_all_collections():
        hint = collection.assets["data"].extra_fields["moczarr:open"]["kwargs"]
        window = (collection.extra_fields["moczarr:windows"] or [None])[0]
        tree = open_stac(collection.get_self_href(), **({"window": window} if window else {}))
        root = _local(published, hint["store_root"])
        expected = moczarr.open_store(root, hint.get("products"), window=window)
        assert {n.path for n in tree.subtree} == {n.path for n in expected.subtree}, collection.id
        for node in expected.subtree:  # equal values (the attrs name the location it was opened from)
            xr.testing.assert_equal(tree[node.path].to_dataset().load(), node.to_dataset().load())


@pytest.mark.layers
def test_xpystac_opens_the_data_asset(published):
    for item in _level_items(published)[::2]:
        ds = xr.open_dataset(item.assets["data"], engine="stac")
        _same(ds, _direct(published, item))


@pytest.mark.layers
def test_xpystac_cannot_open_an_item_itself(published):
    """xpystac 0.5 opens an Item only through kerchunk references; for any other Item it returns nothing."""
    from xpystac.core import to_xarray

    item = _level_items(published)[0]
    assert to_xarray(item) is None


@pytest.mark.layers
def test_intake_stac_reader_opens_the_morton_hive_asset(published):
    from intake.readers.catalogs import StacCatalogReader
    from intake.readers.datatypes import STACJSON

    for item in _level_items(published)[::4]:
        cat = StacCatalogReader(STACJSON(url=item.get_self_href()), cls="Item").read()
        assert item.assets["morton-hive"].media_type == HIVE_MEDIA_TYPE
        _same(cat["morton-hive"].read(), _direct(published, item))


@pytest.mark.layers
def test_intake_catalogs_of_the_published_build(published):
    for name in ("catalog.yaml", "catalog_v2.yaml"):
        cat = intake.open_catalog(str(published.out / name))
        assert len(list(cat)) > 10
    v1 = intake.open_catalog(str(published.out / "catalog.yaml"))
    entry = next(n for n in v1 if v1[n].describe()["metadata"].get("product") == "atl06" and not n.endswith("_tree"))
    assert v1[entry].describe()["args"]["store_root"].startswith(f"{published.url}/stores/")


@pytest.mark.layers
def test_titles_are_unique_and_say_where(published):
    catalog = pystac.Catalog.from_file(published.root_url)
    collections = list(catalog.get_all_collections())
    titles = [c.title for c in collections]
    assert len(set(titles)) == len(titles), titles
    assert {t for t in titles if "atl06" in t.lower() and "store" in t} >= {
        "ATL06 v006 in store A-store",
        "ATL06 v006: atl06 in store B-store",
    } or len([t for t in titles if "in store" in t]) >= 2
    assert catalog.title == "moczarr catalog: 5 morton-hive stores and 2 moraine pyramids"
    for c in collections:
        assert c.license == "CC-BY-4.0"
        assert "cube:dimensions" in c.extra_fields and "cube:variables" in c.extra_fields
        assert set(c.item_assets) >= {"data", "morton-hive", "manifest"}
        assert all(link.title for link in c.links if link.rel in ("item", "child"))
    items = list(catalog.get_items(recursive=True))
    assert len({i.properties["title"] for i in items}) == len(items)


@pytest.mark.layers
def test_times_are_observation_times_or_stated_placeholders(published):
    for item in _level_items(published):
        p = item.properties
        source = p["moczarr:datetime_source"]
        assert source in ("window", "time_range", "placeholder")
        manifest = json.loads(_local(published, item.assets["manifest"].href).read_text())
        if source == "placeholder":
            assert p["datetime"] == "1970-01-01T00:00:00Z" and "placeholder" in p["description"]
        else:
            assert p["datetime"] == p["start_datetime"] < p["end_datetime"]  # a server may drop a null datetime
        assert p["created"][:19] == manifest["generated_at"][:19]
        assert p.get("datetime") != p["created"]


@pytest.mark.layers
def test_thumbnails_show_values(published):
    from PIL import Image

    catalog = pystac.Catalog.from_file(published.root_url)
    drawn = 0
    for item in catalog.get_items(recursive=True):
        if "thumbnail" not in item.assets:
            continue
        local = (
            published.out
            / "stac"
            / Path(item.get_self_href()[len(published.url + "/site/cat/stac/") :]).parent
            / "thumbnail.png"
        )
        pixels = np.asarray(Image.open(local).convert("RGBA"))
        opaque = pixels[pixels[..., 3] > 0][:, :3]
        assert len(opaque), f"{item.id}: an empty quicklook"
        if "moraine:kind" in item.properties:  # a moraine level as an image: the fixtures' levels vary
            assert len(np.unique(opaque, axis=0)) > 10, item.id
            drawn += 1
            continue
        variable = item.assets["thumbnail"].title.removeprefix("quicklook: ").split()[0]
        values = np.asarray(_direct(published, item)[variable].values, dtype=float)
        distinct = len(np.unique(values[np.isfinite(values)]))
        if distinct > 1:  # the picture shows the values, not an outline
            assert len(np.unique(opaque, axis=0)) > 1, f"{item.id}: {distinct} values drawn in one colour"
        drawn += 1
    assert drawn >= 20


@pytest.mark.layers
def test_two_roots_of_one_folder_and_product_name_keep_their_stores(published):
    v2 = intake.open_catalog(str(published.out / "catalog_v2.yaml"))
    a = moczarr.open_level(published.base / "stores/A/store")
    b = moczarr.open_level(published.base / "stores/B/store/atl06")
    names = list(v2)
    level_a = [n for n in names if n.startswith("A_store_atl06_o")]
    level_b = [n for n in names if n.startswith("B_store_atl06_o")]
    assert level_a and level_b
    native_a = f"A_store_atl06_o{a.attrs['zagg_level']['cell_order']}"
    native_b = f"B_store_atl06_o{b.attrs['zagg_level']['cell_order']}"
    _same(v2[native_a].read(), a)
    _same(v2[native_b].read(), b)


def test_a_self_contained_catalog_opens_over_http(tmp_path):
    """The committed catalog folder served as is: relative hrefs resolve against the Item's URL."""
    register_engine()
    site = tmp_path / "catalogs"
    shutil.copytree(REPO / "catalogs", site)
    server = Server(site)
    try:
        url = f"{server.url}/stac/sample/elevation/elevation-o6/elevation-o6.json"
        expected = moczarr.open_level(site / "sample" / "elevation", 6)
        _same(open_stac(url), expected)
        item = pystac.Item.from_file(url)
        asset = item.assets["data"]
        assert not asset.href.startswith("http")  # written relative: the folder moves as a whole
        _same(xr.open_dataset(asset.get_absolute_href(), **asset.extra_fields["xarray:open_kwargs"]), expected)
    finally:
        server.stop()
