"""The catalog's documents are made once as plain dicts: every output is the bytes pystac's object model writes.

Three checks that fail when a byte moves: the committed catalog (``catalogs/``,
written by the pystac-assembled build this replaced) is rebuilt byte for byte;
every STAC document of suite catalogs (windowed, multi-product, moraine,
thumbnails, ``--href-base``, ``--catalog-url``) is what pystac writes when it
reads the document into its objects and writes it again; and the STAC API
Collections, the pgstac ndjson and the stac-geoparquet rows are those the
pystac path (:func:`~moczarr_intake.stac.api_documents` of the catalog read back)
makes of the same catalog.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pystac
import pytest
import rustac

import moczarr_intake
from moczarr.errors import MoczarrWarning
from moczarr_intake.pgstac.publish import COLLECTIONS_NDJSON, ITEMS_NDJSON, ndjson_line, pgstac_documents
from moczarr_intake.stac import api_documents, write_api_collections, write_api_items
from tests.helpers import REPO, fixture_path

KINDS = {"Catalog": pystac.Catalog, "Collection": pystac.Collection, "Feature": pystac.Item}


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def build(roots, out: Path, **kw) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MoczarrWarning)
        moczarr_intake.build([str(r) for r in roots], out, progress=False, **kw)
    return out


def test_the_committed_catalog_is_rebuilt_byte_for_byte(tmp_path):
    work = tmp_path / "catalogs"
    shutil.copytree(REPO / "catalogs" / "sample", work / "sample")
    build([work / "sample"], work, thumbnails=True)
    committed, fresh = files(REPO / "catalogs" / "stac"), files(work / "stac")
    assert fresh.keys() == committed.keys()
    assert [name for name in committed if fresh[name] != committed[name]] == []
    for name in ("catalog.yaml", "catalog_v2.yaml"):
        assert (work / name).read_bytes() == (REPO / "catalogs" / name).read_bytes(), name


@pytest.fixture(scope="module")
def suite(tmp_path_factory, store_layer):
    """Catalogs over the sample and fixtures copied into the output folder: published (href-base and catalog-url,
    quicklooks) and publishable without a catalog URL."""
    out = tmp_path_factory.mktemp("documents")
    stores = out / "stores"
    shutil.copytree(REPO / "catalogs" / "sample", stores / "sample")
    for name in ("zagg/column/store", "multiproduct_hive", "overview_hive", "moraine/ras_mean_v1"):
        shutil.copytree(fixture_path(name), stores / name.replace("/", "_"))
    roots = sorted(stores.iterdir())
    base = {"href_base": "https://example.org/data", "stores_root": str(stores)}
    published = build(roots, out / "published", thumbnails=True, catalog_url="https://example.org/cat", **base)
    return {"published": published, "served": build(roots, out / "served", **base), "local": build(roots, out / "l")}


@pytest.mark.parametrize("name", ["published", "served", "local"])
def test_every_document_is_what_pystac_writes_of_it(suite, name):
    stac_dir = suite[name] / "stac"
    documents = [p for p in stac_dir.rglob("*.json") if p.parent.name != "api-collections"]
    assert len(documents) > 20
    dumps = pystac.StacIO.default().json_dumps
    for path in documents:
        text = path.read_text()
        doc = json.loads(text)
        obj = KINDS[doc["type"]].from_dict(doc, migrate=False)
        assert dumps(obj.to_dict(transform_hrefs=False)) == text, path
    links = json.loads((stac_dir / "catalog.json").read_text())["links"]
    assert ("self" in [x["rel"] for x in links]) == (name == "published")


def test_the_api_outputs_and_ndjson_are_those_of_the_catalog_read_back(suite, tmp_path):
    out = suite["served"]
    catalog = pystac.Catalog.from_file(str(out / "stac" / "catalog.json"))
    documents = api_documents(catalog)
    key = json.loads((out / COLLECTIONS_NDJSON).read_text().splitlines()[0])["moczarr:catalog"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MoczarrWarning)  # the moraine Item has no geometry: pgstac leaves it out
        collections, items = pgstac_documents(catalog, key, documents)
    assert (out / COLLECTIONS_NDJSON).read_text() == "".join(ndjson_line(d) for d in collections)
    assert (out / ITEMS_NDJSON).read_text() == "".join(ndjson_line(d) for d in items)
    write_api_collections(catalog, tmp_path / "collections", documents)
    assert files(tmp_path / "collections") == files(out / "stac" / "api-collections")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MoczarrWarning)
        written = write_api_items(catalog, tmp_path / "items", documents)
    assert sorted(p.name for p in written) == sorted(p.name for p in (out / "stac" / "api-items").iterdir())
    for path in written:
        expected = rustac.read_sync(str(path))["features"]
        assert rustac.read_sync(str(out / "stac" / "api-items" / path.name))["features"] == expected, path.name
