"""``build --tiles-url``: every Item and Collection points a web map at the tile server, in every output.

A catalog of generated stores (a polar product among mid-latitude ones,
windows, all-time folds, a ragged variable) is built by the command with
``--href-base``, ``--catalog-url``, ``--thumbnails`` and ``--tiles-url``,
the stores served over HTTP on 127.0.0.1. Its documents must carry the
web-map links (web-map-links v1.2.0) and a render (render v2.0.0) whose URLs,
once their ``{z}/{x}/{y}`` are filled, name titiler's routes under the tiles
URL with the store's published address (which opens with the reader) and a
variable of the level; the rescale is the 2nd..98th percentile range of the
level's values (computed here from ``open_level``); the polar grids appear
exactly where the footprint reaches beyond 60°. The documents validate
against the bundled schemas, pystac reads them, the STAC API outputs and the
pgstac ndjson carry the same links, an update keeps them, and a build whose
stores would be named by paths of this machine is refused.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pystac
import pytest
import rustac
from pystac.extensions.render import RenderExtension

import moczarr
from moczarr.errors import ArgumentError, MoczarrWarning
from moczarr.metadata import is_remote, join_location
from moczarr_intake import update
from moczarr_intake.cli import main
from moczarr_intake.living.record import RECORD_NAME
from moczarr_intake.model.options import BuildOptions
from moczarr_intake.pgstac.publish import COLLECTIONS_NDJSON, ITEMS_NDJSON
from moczarr_intake.stac import API_COLLECTIONS, API_ITEMS, validate_offline
from tests.helpers import fixture_path, link_copy, rewrite_manifest, run_catalog, tree_snapshot
from tests.loopback import serve_folder

TILES = "http://127.0.0.1:8000/tiler"
WEB_MAP_LINKS = "https://stac-extensions.github.io/web-map-links/v1.2.0/schema.json"
RENDER = "https://stac-extensions.github.io/render/v2.0.0/schema.json"
WEB_MAP_RELS = ("xyz", "tilejson", "wmts")


@pytest.fixture(scope="module")
def served(tmp_path_factory, store_layer):
    """The catalog built by the command, its stores and catalog served on 127.0.0.1 while the module runs."""
    site = tmp_path_factory.mktemp("webmap")
    for name in ("multiproduct_hive", "overview_hive"):
        shutil.copytree(fixture_path(name), site / "stores" / name)
    with serve_folder(site) as url, warnings.catch_warnings():
        warnings.simplefilter("ignore", MoczarrWarning)
        roots = [str(site / "stores" / name) for name in ("multiproduct_hive", "overview_hive")]
        flags = ["--href-base", f"{url}/stores", "--catalog-url", f"{url}/catalog", "--thumbnails"]
        assert main(["build", *roots, "--out", str(site / "catalog"), *flags, "--tiles-url", TILES + "/"]) == 0
        yield {"out": site / "catalog", "url": url}


def documents(out: Path) -> list[tuple[Path, dict]]:
    """Every Collection and Item of the static catalog, with its path."""
    found = []
    for path in sorted((out / "stac").rglob("*.json")):
        if path.parent.name in (API_COLLECTIONS, API_ITEMS):
            continue
        doc = json.loads(path.read_text())
        if doc["type"] != "Catalog":
            found.append((path, doc))
    return found


def hint(doc: dict) -> dict:
    return doc["assets"]["data"].get("xarray:open_kwargs", {})


def renders(doc: dict) -> dict:
    return doc["properties"].get("renders", {}) if doc["type"] == "Feature" else doc.get("renders", {})


def variables(doc: dict) -> dict:
    return doc["properties"]["cube:variables"] if doc["type"] == "Feature" else doc.get("cube:variables", {})


def drawable(variable: dict) -> bool:
    """A variable a tile can show: one value per cell, a number."""
    return (
        variable["moczarr:kind"] == "dense" and variable["dimensions"] == ["cells"] and variable["data_type"] != "other"
    )


def first_drawable(doc: dict) -> str:
    """The variable a document's layer shows: its first drawable float variable, else its first drawable one; of a
    Collection, among those every level holds when one of them is drawable."""
    choices = variables(doc)
    levels = [set(level["variables"]) for level in doc.get("moczarr:levels", [])]
    everywhere = {n: v for n, v in choices.items() if all(n in names for names in levels)}
    if any(map(drawable, everywhere.values())):
        choices = everywhere
    names = [n for n, v in choices.items() if drawable(v)]
    return next(iter([n for n in names if choices[n]["data_type"].startswith("float")] or names))


def web_map(doc: dict) -> list[dict]:
    return [link for link in doc["links"] if link["rel"] in WEB_MAP_RELS]


def store_address(doc: dict, path: Path, out: Path, url: str) -> str:
    """The published address of the document's data asset: its URL, or its relative href against the document's."""
    href = doc["assets"]["data"]["href"]
    own = f"{url}/catalog/{path.relative_to(out).as_posix()}"
    return href if is_remote(href) else join_location(own, "..", href)


def test_every_collection_and_item_links_its_layer_and_names_its_render(served):
    docs = documents(served["out"])
    linked = [(p, d) for p, d in docs if web_map(d)]
    all_time = [d["id"] for _, d in docs if hint(d).get("all_time")]
    assert all_time and len(linked) > 10
    # every document has its layer but the all-time folds (the tiler reads windows) and those of ragged data alone
    unlinked = [d["id"] for _, d in docs if hint(d).get("all_time") or not any(map(drawable, variables(d).values()))]
    assert sorted(d["id"] for _, d in docs if not web_map(d)) == sorted(unlinked)
    assert all(not renders(d) for _, d in docs if d["id"] in unlinked)
    for _, doc in linked:
        (name,) = renders(doc)
        render = renders(doc)[name]
        assert render["variable"] == name == first_drawable(doc)
        assert render["assets"] == ["data"] and render["colormap_name"] == "viridis"
        assert {"xyz", "tilejson", "wmts"} == {link["rel"] for link in web_map(doc)}
        assert [link["rel"] for link in web_map(doc)].count("xyz") == 1
        assert all(link["render"] == name for link in web_map(doc))
        assert {WEB_MAP_LINKS, RENDER} <= set(doc["stac_extensions"])
        if doc["type"] == "Feature":
            assert render["cell_order"] == hint(doc)["cell_order"] and render.get("window") == hint(doc)["window"]
        else:
            assert "cell_order" not in render


def test_the_links_are_titilers_routes_naming_the_store_and_the_levels_variable(served):
    out, url = served["out"], served["url"]
    opened = 0
    for path, doc in documents(out):
        if not web_map(doc):
            continue
        (name,) = renders(doc)
        render = renders(doc)[name]
        store = store_address(doc, path, out, url)
        for link in web_map(doc):
            parts = urlsplit(link["href"].format(z=3, x=2, y=1))
            assert (parts.scheme, parts.netloc) == ("http", "127.0.0.1:8000")
            query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=True)
            expected = {"url": [store], "variable": [name], "colormap_name": ["viridis"]}
            if "rescale" in render:
                expected["rescale"] = [",".join(str(v) for v in render["rescale"][0])]
            for key in ("cell_order", "window"):
                if key in render:
                    expected[key] = [str(render[key])]
            assert query == expected, link
            if link["rel"] == "xyz":
                assert parts.path == "/tiler/tiles/WebMercatorQuad/3/2/1.png" and link["type"] == "image/png"
            elif link["rel"] == "tilejson":
                assert parts.path == "/tiler/WebMercatorQuad/tilejson.json" and link["type"] == "application/json"
            else:
                assert parts.path == "/tiler/WMTSCapabilities.xml" and link["type"] == "application/xml"
                assert link["wmts:layer"].startswith(f"{store}_") and link["wmts:layer"].endswith("_default")
        if doc["type"] == "Feature":  # the address opens with the reader, at the Item's level, and holds the variable
            ds = moczarr.open_level(store, render["cell_order"], render.get("window"))
            assert name in ds.data_vars
            opened += 1
    assert opened > 5


def test_the_rescale_is_the_range_of_the_levels_values(served):
    """A drawn level's render spans its values' 2nd..98th percentiles; a level whose range is one value (no scale)
    and its Collection span the product's drawn levels of the variable."""
    out, url = served["out"], served["url"]
    own: dict[str, tuple[float, float]] = {}
    collection_of: dict[str, str] = {}
    for path, doc in documents(out):
        if doc["type"] != "Feature" or not web_map(doc) or "thumbnail" not in doc["assets"]:
            continue
        (name,) = renders(doc)
        level = renders(doc)[name]
        ds = moczarr.open_level(store_address(doc, path, out, url), level["cell_order"], level.get("window"))
        values = np.asarray(ds[name].values, dtype=float)
        own[doc["id"]] = tuple(np.percentile(values[np.isfinite(values)], [2, 98]))
        collection_of[doc["id"]] = doc["collection"]
    spans: dict[str, list] = {}
    for item_id, (low, high) in own.items():
        if low < high:
            spans.setdefault(collection_of[item_id], []).append((low, high))
    product = {c: [min(s[0] for s in v), max(s[1] for s in v)] for c, v in spans.items()}
    assert len(own) > 5 and any(low == high for low, high in own.values())  # both cases are met
    for _, doc in documents(out):
        if doc["id"] in own:
            low, high = own[doc["id"]]
            expected = [low, high] if low < high else product[doc["collection"]]
        elif doc["type"] == "Collection" and doc["id"] in product:
            expected = product[doc["id"]]
        else:
            continue
        (render,) = renders(doc).values()
        assert render["rescale"] == [[pytest.approx(v) for v in expected]], doc["id"]


def test_a_polar_footprint_gets_the_ups_grid_and_a_mid_latitude_one_does_not(served):
    grids_found = []
    for _, doc in documents(served["out"]):
        if not web_map(doc):
            continue
        _, south, _, north = doc["bbox"] if doc["type"] == "Feature" else doc["extent"]["spatial"]["bbox"][0]
        expected = {"WebMercatorQuad"}
        expected |= {"UPSAntarcticWGS84Quad"} if south < -60 else set()
        expected |= {"UPSArcticWGS84Quad"} if north > 60 else set()
        layers = [link["wmts:layer"] for link in web_map(doc) if link["rel"] == "wmts"]
        found = {layer.rsplit("_", 2)[1] for layer in layers}
        assert found == expected and len(layers) == len(found), doc["id"]
        xyz = [link["href"] for link in web_map(doc) if link["rel"] in ("xyz", "tilejson")]
        assert all("/WebMercatorQuad/" in href for href in xyz)  # xyz and TileJSON clients read Web Mercator only
        grids_found.append(frozenset(found))
    assert frozenset({"WebMercatorQuad"}) in grids_found
    assert frozenset({"WebMercatorQuad", "UPSAntarcticWGS84Quad"}) in grids_found


def test_the_documents_validate_and_pystac_reads_the_links_and_renders(served):
    out = served["out"]
    checked = validate_offline(out / "stac" / "catalog.json")
    with_both = [uris for uris in checked.values() if WEB_MAP_LINKS in uris and RENDER in uris]
    assert len(with_both) == sum(1 for _, d in documents(out) if web_map(d))
    catalog = pystac.Catalog.from_file(str(out / "stac" / "catalog.json"))
    items = [i for i in catalog.get_items(recursive=True) if i.get_links("xyz")]
    assert len(items) > 5
    for item in items:
        (name, render) = next(iter(RenderExtension.ext(item).renders.items()))
        assert render.properties["variable"] == name
        assert item.get_single_link("xyz").extra_fields["render"] == name
        if "thumbnail" in item.assets:
            assert render.rescale is not None and render.rescale[0][0] < render.rescale[0][1]


def test_every_document_is_what_pystac_writes_of_it(served):
    """The documents with their links and renders are written in the bytes pystac writes (as every document is)."""
    dumps = pystac.StacIO.default().json_dumps
    kinds = {"Collection": pystac.Collection, "Feature": pystac.Item}
    for path, doc in documents(served["out"]):
        obj = kinds[doc["type"]].from_dict(doc, migrate=False)
        assert dumps(obj.to_dict(transform_hrefs=False)) == path.read_text(), path


def test_the_stac_api_outputs_and_the_pgstac_ndjson_carry_the_same_links(served):
    out = served["out"]
    static = {d["id"]: (web_map(d), renders(d)) for _, d in documents(out)}
    rows = [
        row
        for p in sorted((out / "stac" / API_ITEMS).glob("*.parquet"))
        for row in rustac.read_sync(str(p))["features"]
    ]
    collections = [json.loads(p.read_text()) for p in sorted((out / "stac" / API_COLLECTIONS).glob("*.json"))]
    lines = [
        json.loads(line)
        for name in (ITEMS_NDJSON, COLLECTIONS_NDJSON)
        for line in (out / name).read_text().splitlines()
    ]
    for what, docs in (("stac-geoparquet", rows), ("api-collections", collections), ("pgstac", lines)):
        assert sum(1 for d in docs if web_map(d)) > 1, what
        for doc in docs:
            links, render = static[doc["id"]]
            assert web_map(doc) == links, (what, doc["id"])
            assert renders(doc) == render, (what, doc["id"])


def test_an_update_builds_with_the_recorded_tiles_url(sample, tmp_path):
    stores = tmp_path / "stores"
    link_copy(sample, stores / "sample")
    out = tmp_path / "cat"
    href = ["--href-base", "https://example.org/stores"]
    assert main(["build", str(stores / "sample"), "--out", str(out), *href, "--tiles-url", TILES]) == 0
    assert json.loads((out / RECORD_NAME).read_text())["options"]["tiles_url"] == TILES
    rewrite_manifest(stores / "sample" / "elevation", generated_at="2031-01-01T00:00:00+00:00")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MoczarrWarning)
        result = update(str(out))
    assert result.refresh.read == [str(stores / "sample" / "elevation")]
    collection = json.loads((out / "stac" / "sample" / "elevation" / "collection.json").read_text())
    assert collection["created"] == "2031-01-01T00:00:00Z"  # rewritten by the update, with its links
    assert [link["rel"] for link in web_map(collection)] == ["xyz", "tilejson", "wmts"]
    assert parse_qs(urlsplit(web_map(collection)[0]["href"]).query)["url"] == [
        "https://example.org/stores/sample/elevation"
    ]
    # no quicklook was drawn: the renders have no rescale, and the build says so rather than make one up
    assert "rescale" not in renders(collection)["h_max"]
    assert any("no quicklook drew h_max" in note and "elevation" in note for note in result.notes)


@pytest.mark.parametrize("inside", [False, True], ids=["store-outside-out", "store-inside-out-no-catalog-url"])
def test_stores_named_by_paths_of_this_machine_are_refused(sample, tmp_path, inside):
    out = tmp_path / "cat"
    store = link_copy(sample, (out if inside else tmp_path / "stores") / "sample")
    before = tree_snapshot(tmp_path)
    done = run_catalog("build", store, "--out", out, "--tiles-url", TILES, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: --tiles-url") and "--href-base" in line and "Traceback" not in done.stderr
    assert tree_snapshot(tmp_path) == before  # nothing written


@pytest.mark.parametrize(
    "url", ["s3://bucket/tiles", "https://user:secret@tiles.example.org", "https://tiles.example.org/?k=1", "tiles"]
)
def test_a_tiles_url_must_be_an_http_url_without_credential_or_query(url):
    with pytest.raises(ArgumentError, match="--tiles-url") as caught:
        BuildOptions(tiles_url=url).checked()
    assert "secret" not in str(caught.value)
    assert (
        BuildOptions(tiles_url="https://tiles.example.org/base/").checked().tiles_url
        == "https://tiles.example.org/base"
    )
