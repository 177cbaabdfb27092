"""A real STAC API in the loop: build -> stac-geoparquet -> ``rustac serve`` -> pystac-client search -> open.

The catalog is built by ``moczarr-catalog build`` over copies of the bundled
sample (``catalogs/sample``: a root of two products) and of two shared fixtures, all inside
the output folder, which a real ``http.server`` serves on 127.0.0.1; the build
gets ``--href-base`` pointing there, so every store address in the STAC API
outputs is a URL. ``rustac serve`` (its in-memory backend) serves the Items
``OUT/stac/api-items/*.parquet`` (one file per Collection and key shape) and
the Collections ``OUT/stac/api-collections/*.json`` on a free 127.0.0.1 port
for the module; searches go through pystac-client, and what they find is
checked against the Items whose geometry meets the box (shapely) and whose
time overlaps (STAC API closed intervals), computed from the built catalog on
disk. Every document the server serves must validate against its schemas.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import http.server
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path
from types import SimpleNamespace

import pystac
import pytest
import rustac
import shapely
import xarray as xr
from pystac_client import Client
from shapely.geometry import shape

import moczarr
from moczarr.metadata import parse_time
from moczarr_intake import cli
from moczarr_intake.pgstac.publish import CATALOG_FIELD, pgstac_documents
from moczarr_intake.stac import (
    api_documents,
    open_stac,
    start_api_outputs,
    validate_document,
    write_api_outputs,
    write_geoparquet,
)
from tests.helpers import REPO, fixture_path
from tests.loopback import BurstServer

pytestmark = [pytest.mark.layers, pytest.mark.slow, pytest.mark.subprocess]  # rustac serve

SERVER_START_SECONDS = 30
WORLD = [-180.0, -90.0, 180.0, 90.0]
#: a box cutting the sample stores' footprint (eastern North America)
SAMPLE_BOX = [-77.5, 38.0, -77.0, 39.0]
#: inside the sample footprint's bounding box, outside the footprint itself
SAMPLE_CORNER = [-78.7, 40.9, -78.5, 41.1]
#: a box cutting the shared fixtures' footprint
FIXTURE_BOX = [45.0, 1.0, 46.0, 2.0]

# (name, bbox, datetime, collections): every query the server must answer exactly
QUERIES = [
    ("sample-box", SAMPLE_BOX, None, None),
    ("corner-outside-footprint", SAMPLE_CORNER, None, None),
    ("fixture-box-2020", FIXTURE_BOX, "2020-03-01T00:00:00Z/2020-09-01T00:00:00Z", None),
    (
        "world-2019-2020-two-collections",
        WORLD,
        "2019-06-01T00:00:00Z/2020-06-01T00:00:00Z",
        ["elevation_yearly", "windowed-atl06"],
    ),
    ("one-collection", WORLD, None, ["pyramid-atl06"]),
    ("instant", WORLD, "2019-07-01T00:00:00Z", None),  # inside the 2019 windows
    ("open-end", FIXTURE_BOX, "2021-06-01T00:00:00Z/..", None),
    ("window-boundary", WORLD, "2021-01-01T00:00:00Z/2021-02-01T00:00:00Z", None),
]


def quiet(fn, *args, **kwargs):
    """Call a reader with its (expected, separately tested) warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


class StoreServer(BurstServer):
    """The output folder over HTTP on 127.0.0.1."""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> SimpleNamespace:
    """The stores of the catalog, copied into its output folder (the one place that says where they come from).

    ``roots``: what the build is given (the sample's multi-product root and two
    bare stores); ``products``: every product root's URL, where an Item's data
    is. The folder is served over HTTP for the module.
    """
    out = tmp_path_factory.mktemp("stacapi")
    sample = out / "sample"
    shutil.copytree(REPO / "catalogs" / "sample", sample)
    roots = [sample]
    for name, fixture in (("windowed", "zagg/windowed/store"), ("pyramid", "zagg/pyramid/store")):
        shutil.copytree(fixture_path(fixture), out / name)  # fails under CI=true when fixtures are missing
        roots.append(out / name)
    for path in [out, *out.rglob("*")]:  # the shared copy is read-only
        path.chmod(0o755 if path.is_dir() else 0o644)
    server = StoreServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    products = [sample / "elevation", sample / "elevation_yearly", *roots[1:]]

    def to_url(path: Path) -> str:
        return f"{url}/{path.relative_to(out).as_posix()}"

    try:
        with pytest.MonkeyPatch.context() as mp:  # loopback traffic must not go to a configured proxy
            for name in ("NO_PROXY", "no_proxy"):
                mp.setenv(name, "127.0.0.1,localhost")
            yield SimpleNamespace(
                out=out,
                url=url,
                roots=roots,
                products={to_url(p) for p in products},
                root_urls={to_url(r) for r in roots},
            )
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def built(stores):
    out = stores.out  # the stores sit in the output folder, as catalogs/sample does in catalogs/
    rc = quiet(cli.main, ["build", *map(str, stores.roots), "--out", str(out), "--href-base", stores.url])
    assert rc == 0
    catalog = pystac.Catalog.from_file(str(out / "stac" / "catalog.json"))
    items = list(catalog.get_items(recursive=True))
    collections = sorted((out / "stac" / "api-collections").glob("*.json"))
    parquets = sorted((out / "stac" / "api-items").glob("*.parquet"))
    return SimpleNamespace(out=out, parquets=parquets, collections=collections, catalog=catalog, items=items)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rustac_command() -> str:
    """The ``rustac`` console script installed beside the interpreter running the tests (else on PATH)."""
    beside = Path(sys.executable).with_name("rustac")
    found = str(beside) if beside.exists() else shutil.which("rustac")
    assert found, "the rustac command is missing (pip install rustac)"
    return found


#: a loopback opener that never goes through a configured HTTP proxy
LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def start_server(parquets: list[Path], collections: list[Path], log: Path) -> tuple[subprocess.Popen, str]:
    """``rustac serve`` on a free 127.0.0.1 port, answering within SERVER_START_SECONDS, or the test fails.

    A port taken between choosing and binding it makes the server exit: up to
    three ports are tried. The failure message carries the server's stderr.
    """
    for _attempt in range(3):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        # --use-duckdb false: the DuckDB backend fetches DuckDB extensions on first use; the in-memory one needs nothing
        cmd = [
            rustac_command(),
            "serve",
            *map(str, parquets),
            *map(str, collections),
            "--use-duckdb",
            "false",
            "--addr",
            f"127.0.0.1:{port}",
        ]
        with open(log, "wb") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + SERVER_START_SECONDS
        while proc.poll() is None:
            try:
                with LOOPBACK.open(url + "/", timeout=2) as response:
                    if response.status == 200:
                        return proc, url
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                stop(proc)
                pytest.fail(f"rustac serve not answering at {url} after {SERVER_START_SECONDS} s: {log.read_text()}")
            time.sleep(0.1)
        if "in use" not in log.read_text():
            break
    pytest.fail(f"rustac serve exited with {proc.returncode}: {log.read_text()}")


@pytest.fixture(scope="module")
def api(built, tmp_path_factory):
    """``rustac serve`` over the built geoparquet on 127.0.0.1; stopped when the module is done."""
    log = tmp_path_factory.mktemp("rustac") / "stderr.txt"
    proc, url = start_server(built.parquets, built.collections, log)
    try:
        yield SimpleNamespace(url=url, client=Client.open(url))
    finally:
        stop(proc)


def interval(item: pystac.Item) -> tuple[dt.datetime, dt.datetime]:
    props = item.properties
    if props.get("start_datetime"):
        return parse_time(props["start_datetime"]), parse_time(props["end_datetime"])
    return item.datetime, item.datetime


def query_interval(text: str | None) -> tuple[dt.datetime, dt.datetime]:
    lo, hi = dt.datetime.min.replace(tzinfo=dt.UTC), dt.datetime.max.replace(tzinfo=dt.UTC)
    if text is None:
        return lo, hi
    start, slash, end = text.partition("/")
    if not slash:
        return parse_time(start), parse_time(start)
    return (lo if start in ("", "..") else parse_time(start)), (hi if end in ("", "..") else parse_time(end))


def expected_ids(items, bbox, datetime, collections) -> set[str]:
    """Items whose geometry meets ``bbox`` and whose closed [start, end] meets the query's (STAC API semantics)."""
    box = shapely.box(*bbox)
    q0, q1 = query_interval(datetime)
    out = set()
    for item in items:
        if collections is not None and item.collection_id not in collections:
            continue
        if item.geometry is None or not shape(item.geometry).intersects(box):
            continue
        t0, t1 = interval(item)
        if t0 <= q1 and t1 >= q0:
            out.add(item.id)
    return out


def search(api, bbox, datetime, collections):
    kwargs = {"bbox": bbox, "limit": 4, "max_items": 200}  # limit 4: the client follows the server's next links
    if datetime is not None:
        kwargs["datetime"] = datetime
    if collections is not None:
        kwargs["collections"] = collections
    return api.client.search(**kwargs)


def rows_of(built) -> list[dict]:
    return [row for path in built.parquets for row in rustac.read_sync(str(path))["features"]]


def test_build_writes_every_item_as_geoparquet(built, stores):
    rows = rows_of(built)
    assert sorted(r["id"] for r in rows) == sorted(i.id for i in built.items)
    for row in rows:
        assert not {link["rel"] for link in row["links"]} & {"self", "root", "parent", "collection"}
        hint = row["assets"]["data"]["moczarr:open"]
        assert hint["kwargs"]["store_root"] in stores.products  # a published URL, never a path of this machine
        assert row["assets"]["data"]["href"] in stores.products
        assert all(a["href"].startswith(stores.url + "/") for a in row["assets"].values())


def test_one_file_holds_one_collection_and_rows_of_one_shape(built):
    """No row of a file carries a key another row lacks: no product's variables turn up as null in another's."""
    for path in built.parquets:
        rows = rustac.read_sync(str(path))["features"]
        assert len({r["collection"] for r in rows}) == 1, path.name
        for row in rows:
            want = next(i for i in built.items if i.id == row["id"]).to_dict(transform_hrefs=False)
            assert set(row["properties"]["cube:variables"]) == set(want["properties"]["cube:variables"]), row["id"]
            assert None not in row["properties"]["cube:variables"].values()
    assert len({rustac.read_sync(str(p))["features"][0]["collection"] for p in built.parquets}) == len(
        list(built.catalog.get_all_collections())
    )


def test_write_geoparquet_leaves_out_items_without_geometry(built, tmp_path):
    items = [i.clone() for i in built.items[:2]]
    items[0].geometry, items[0].bbox = None, None
    with pytest.warns(moczarr.errors.MoczarrWarning, match=items[0].id):
        path = write_geoparquet(items, tmp_path / "two.parquet")
    assert [r["id"] for r in rustac.read_sync(str(path))["features"]] == [items[1].id]
    with pytest.warns(moczarr.errors.MoczarrWarning):
        assert write_geoparquet(items[:1], path) is None
    assert not path.exists()  # no stale file is left where the export was asked for
    with pytest.raises(ValueError, match="no Items"):
        write_geoparquet([], tmp_path / "none.parquet")
    with pytest.raises(ValueError, match="not a STAC Item"):
        write_geoparquet([built.catalog], tmp_path / "none.parquet")


def test_relative_hrefs_without_a_self_href_are_refused(built, tmp_path):
    doc = built.items[0].to_dict(include_self_link=False, transform_hrefs=False)
    doc["links"] = []
    doc["assets"]["data"]["href"] = "../sample/elevation"
    with pytest.raises(ValueError, match="no self href"):
        write_geoparquet([doc], tmp_path / "x.parquet")


def test_api_outputs_written_in_the_background_are_those_written_at_once(built, tmp_path):
    pending = start_api_outputs(built.catalog, tmp_path / "background", api_documents(built.catalog))
    at_once = write_api_outputs(built.catalog, tmp_path / "at-once")
    written = pending.wait()
    assert pending.wait() is written  # a second wait returns the same outputs
    assert [p.name for p in written.items] == [p.name for p in at_once.items] and written.items
    assert [p.name for p in written.collections] == [p.name for p in at_once.collections] and written.collections
    for mine, theirs in zip(written.items + written.collections, at_once.items + at_once.collections, strict=True):
        assert mine.read_bytes() == theirs.read_bytes(), mine.name


def test_a_file_written_in_the_background_that_fails_fails_the_wait(built, tmp_path):
    documents = api_documents(built.catalog)
    documents.items[0] = {**documents.items[0], "geometry": {"type": "Polygon", "coordinates": "not coordinates"}}
    pending = start_api_outputs(built.catalog, tmp_path, documents)
    with pytest.raises(rustac.RustacError, match="coordinate"):
        pending.wait()


def test_the_pgstac_documents_leave_the_shared_documents_as_they_are(built):
    documents = api_documents(built.catalog)
    before = copy.deepcopy(documents)
    collections, items = pgstac_documents(built.catalog, "https://example.org/catalog", documents)
    assert {c[CATALOG_FIELD] for c in collections} == {"https://example.org/catalog"}
    assert [i["id"] for i in items] == [i["id"] for i in documents.items if i.get("geometry")]
    assert documents == before


@pytest.mark.parametrize("name,bbox,datetime,collections", QUERIES, ids=[q[0] for q in QUERIES])
def test_search_finds_exactly_the_items_meeting_box_and_time(api, built, name, bbox, datetime, collections):
    want = expected_ids(built.items, bbox, datetime, collections)
    got = [item.id for item in search(api, bbox, datetime, collections).items()]
    assert len(got) == len(set(got))
    assert set(got) == want
    if name == "corner-outside-footprint":  # the box meets the Items' bboxes: the server tested geometries
        assert any(shapely.box(*i.bbox).intersects(shapely.box(*bbox)) for i in built.items)
    else:
        assert want, f"query {name} selects nothing: it would not tell a server that drops filters"


def test_the_queries_tell_the_filters_apart(built):
    """Each filter of the queries removes Items some other query keeps (the searches above can fail)."""
    every = {i.id for i in built.items}
    assert expected_ids(built.items, SAMPLE_BOX, None, None) < every
    assert expected_ids(built.items, WORLD, "2025-01-01T00:00:00Z", None) < every
    assert expected_ids(built.items, WORLD, None, ["pyramid-atl06"]) < every
    start = parse_time("2021-01-01T00:00:00Z")  # the window-boundary query starts where a window ends
    found = expected_ids(built.items, WORLD, "2021-01-01T00:00:00Z/2021-02-01T00:00:00Z", None)
    assert any(interval(i)[1] == start for i in built.items if i.id in found)


TIME_KEYS = {"datetime", "start_datetime", "end_datetime", "created", "updated"}


def prune_nulls(value):
    """A document without its nulls: the server drops some (asset fields), the built Items hold others.

    Timestamps compare as instants: the server may spell UTC ``+00:00`` where the document says ``Z``.
    """
    if isinstance(value, dict):
        return {
            k: pystac.utils.str_to_datetime(v) if k in TIME_KEYS and isinstance(v, str) else prune_nulls(v)
            for k, v in value.items()
            if v is not None
        }
    if isinstance(value, list):
        return [prune_nulls(v) for v in value]
    return value


def test_served_items_are_the_built_items(api, built, stores):
    served = {d["id"]: d for d in search(api, WORLD, None, None).items_as_dicts()}
    assert set(served) == {i.id for i in built.items}
    for item in built.items:
        got, want = served[item.id], item.to_dict(transform_hrefs=False)
        for key in ("properties", "geometry", "bbox", "collection", "stac_extensions"):
            assert prune_nulls(got[key]) == prune_nulls(want[key]), (item.id, key)
        assert got["assets"].keys() == want["assets"].keys()
        self_link = [link["href"] for link in got["links"] if link["rel"] == "self"]
        assert self_link == [f"{api.url}/collections/{item.collection_id}/items/{item.id}"]


def test_every_served_document_validates_against_its_schemas(api, built):
    """What the server serves, as a client gets it, is valid STAC: core, datacube, every declared extension."""
    served = list(search(api, WORLD, None, None).items_as_dicts())
    assert len(served) == len(built.items)
    for doc in served:
        checked = validate_document(doc, where=f"served Item {doc['id']!r}")
        assert checked[0].endswith("item.json") and set(doc["stac_extensions"]) <= set(checked)
        assert doc["properties"]["datetime"] is not None  # a window Item carries its start, not null
        assert None not in doc["properties"]["cube:variables"].values()  # no variable of another product
    collections = [c.to_dict() for c in api.client.get_collections()]
    assert len(collections) == len(built.collections)
    for doc in collections:
        assert validate_document(doc, where=f"served Collection {doc['id']!r}")[0].endswith("collection.json")
    windowed = [i for i in built.items if i.properties.get("moczarr:datetime_source") == "window"]
    assert windowed and all(i.datetime == parse_time(i.properties["start_datetime"]) for i in windowed)


def test_the_api_serves_the_catalogs_own_collections(api, built):
    want = {c.id: c for c in built.catalog.get_all_collections()}
    assert [p.stem for p in built.collections] == sorted(want)
    served = {c.id: c for c in api.client.get_collections()}
    assert set(served) == set(want)
    for cid, collection in want.items():
        got, doc = served[cid].to_dict(), collection.to_dict(transform_hrefs=False)
        for key in (
            "title",
            "description",
            "license",
            "extent",
            "providers",
            "summaries",
            "item_assets",
            "cube:dimensions",
        ):
            assert prune_nulls(got.get(key)) == prune_nulls(doc.get(key)), (cid, key)
        assert {link["rel"] for link in got["links"]} >= {"self", "items"}  # the API's own links
        assert not any(link["href"].startswith(".") for link in got["links"])


def test_served_collections_open_to_what_open_store_gives(api, stores):
    opened = 0
    for collection in api.client.get_collections():
        if collection.summaries.get_list("moczarr:window"):
            continue  # a windowed product's tree needs window=: the Items cover each window
        hint = collection.assets["data"].extra_fields["moczarr:open"]["kwargs"]
        assert hint["store_root"] in stores.products | stores.root_urls  # a published URL
        tree = quiet(open_stac, collection)
        want = quiet(moczarr.open_store, hint["store_root"], **{k: v for k, v in hint.items() if k != "store_root"})
        xr.testing.assert_identical(tree.load(), want.load())
        opened += 1
    assert opened


def served_level_items(api, bbox, datetime):
    items = list(search(api, bbox, datetime, None).items())
    assert items
    return items


def direct_open(item: pystac.Item, stores, aoi=None):
    """``open_level`` on the store an Item's data asset names."""
    root = item.assets["data"].href
    assert root in stores.products
    props = item.properties
    return quiet(moczarr.open_level, root, props["moczarr:cell_order"], window=props.get("moczarr:window"), aoi=aoi)


def test_found_items_open_to_what_open_level_gives(api, stores):
    for item in served_level_items(api, WORLD, None):
        opened = quiet(open_stac, item)
        assert opened.sizes["cells"] > 0
        xr.testing.assert_identical(opened.load(), direct_open(item, stores).load())


def test_found_items_open_within_the_search_box(api, stores):
    for name, box, datetime in (("sample", SAMPLE_BOX, None), ("fixtures", FIXTURE_BOX, "2020-03-01T00:00:00Z/..")):
        aoi = moczarr.BBox(*box)
        fewer, rows = False, 0
        for item in served_level_items(api, box, datetime):
            got = quiet(open_stac, item, aoi=aoi).load()
            xr.testing.assert_identical(got, direct_open(item, stores, aoi=aoi).load())
            everything = quiet(open_stac, item).sizes["cells"]
            assert got.sizes["cells"] <= everything
            fewer |= got.sizes["cells"] < everything
            rows += got.sizes["cells"]
        assert rows, f"the {name} box selects no row of any Item found: the comparison would be empty"
        assert fewer, f"the {name} box cuts no Item's rows: it would not tell an AOI that is ignored"
