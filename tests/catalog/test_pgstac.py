"""A database-backed STAC API in the loop: build -> ndjson -> pgstac -> stac-fastapi-pgstac -> pystac-client -> open.

The real parts (``tests/pgstac_server.py``): Debian's PostgreSQL with PostGIS
on 127.0.0.1, ``pypgstac migrate``, stac-fastapi-pgstac under uvicorn. The
catalog is built with ``--discover`` over a folder of stores written by
``moczarr.testing`` (the sample root and two bare copies of its ``elevation``
product under other names), served by ``http.server`` on 127.0.0.1 and
published there (``--href-base``, ``--catalog-url``: a portal serves no path of
the building machine); ``pypgstac load`` takes its ndjson as is and
``moczarr-catalog publish`` upserts it. Searches (bbox that hits, bbox that
hits nothing, datetime, collection, a CQL2 filter) must return exactly the
Items the built documents say they should (shapely on the footprints, STAC's
closed time intervals), every hit opens with ``xr.open_dataset(href,
**xarray:open_kwargs)`` equal to ``open_level``, and after stores change,
``update`` then ``publish`` make the same searches return the new state, and
publish's report by id is what the database holds. A catalog that names paths
of this machine, or whose ndjson is cut, emptied, removed or another
catalog's, is refused with the database untouched; no message spells the
DSN's password.
Under ``CI=true`` a missing PostgreSQL, PostGIS or pgstac package fails the tests.
"""

from __future__ import annotations

import datetime as dt
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import shapely
import xarray as xr
from pystac_client import Client
from shapely.geometry import shape

import moczarr
from moczarr.metadata import parse_time
from moczarr.testing import write_sample_store
from moczarr_intake.cli import main
from tests.helpers import IN_CI, rewrite_manifest
from tests.loopback import BurstServer
from tests.pgstac_server import PgstacStack, free_port, missing

pytestmark = pytest.mark.filterwarnings("ignore::moczarr.errors.MoczarrWarning")

#: a box cutting the sample's footprint (eastern North America)
HIT = [-77.5, 38.0, -77.0, 39.0]
#: inside the footprint's bounding box, outside the footprint itself: a bbox-only search would wrongly hit
MISS = [-78.7, 40.9, -78.5, 41.1]
WORLD = [-180.0, -90.0, 180.0, 90.0]


@pytest.fixture(scope="module")
def stack():
    why = missing()
    if why:
        if IN_CI:
            pytest.fail(f"the pgstac tests need their database: {why}")
        pytest.skip(why)
    with PgstacStack() as running, pytest.MonkeyPatch.context() as mp:
        for name in ("NO_PROXY", "no_proxy"):  # loopback traffic never goes to a configured proxy
            mp.setenv(name, "127.0.0.1,localhost")
        yield running


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def built(tmp_path_factory, stack):
    """The catalog of the module, its stores served over HTTP on 127.0.0.1 where the catalog says they are."""
    base = tmp_path_factory.mktemp("pgstac")
    stores = base / "stores"
    sample = write_sample_store(stores / "sample")
    for name in ("solo", "gone"):
        shutil.copytree(sample / "elevation", stores / name)
        rewrite_manifest(stores / name, dataset={"short_name": name.upper(), "version": "1"})
    server = BurstServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(stores)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    out = base / "cat"
    published = ["--href-base", url, "--stores-root", str(stores), "--catalog-url", f"{url}/cat"]
    try:
        assert quiet(main, ["build", str(stores), "--discover", "--out", str(out), *published]) == 0
        yield SimpleNamespace(base=base, stores=stores, out=out, url=url)
    finally:
        server.shutdown()
        server.server_close()


def quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def ndjson(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rows(stack, sql: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(stack.dsn) as conn:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]


def database(stack) -> tuple[list[tuple], list[tuple]]:
    """Every Collection and Item in the database, by id and content digest: what "untouched" compares."""
    return (
        sorted(rows(stack, "SELECT id, md5(content::text) FROM pgstac.collections")),
        sorted(rows(stack, "SELECT collection, id, md5(content::text) FROM pgstac.items")),
    )


def report(out: str) -> dict[str, str]:
    """publish's report lines after the summary, by what they name (``upserted collections`` ...)."""
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("published "))
    return dict(line.split(": ", 1) for line in lines[start + 1 :])


def test_pypgstac_load_takes_the_ndjson_as_is(stack, built):
    pypgstac = str(Path(sys.executable).with_name("pypgstac"))
    for kind in ("collections", "items"):
        subprocess.run(
            [
                pypgstac,
                "load",
                kind,
                str(built.out / "pgstac" / f"{kind}.ndjson"),
                "--dsn",
                stack.dsn,
                "--method",
                "upsert",
            ],
            check=True,
            capture_output=True,
        )
    items = ndjson(built.out / "pgstac" / "items.ndjson")
    collections = ndjson(built.out / "pgstac" / "collections.ndjson")
    assert sorted(rows(stack, "SELECT collection, id FROM pgstac.items")) == sorted(
        (i["collection"], i["id"]) for i in items
    )
    assert sorted(r[0] for r in rows(stack, "SELECT id FROM pgstac.collections")) == sorted(
        c["id"] for c in collections
    )
    assert {c["id"] for c in collections} == {"elevation", "elevation_yearly", "solo", "gone"}


def interval(props: dict) -> tuple[dt.datetime, dt.datetime]:
    if props.get("start_datetime"):
        return parse_time(props["start_datetime"]), parse_time(props["end_datetime"])
    return parse_time(props["datetime"]), parse_time(props["datetime"])


def expected(items: list[dict], *, bbox=WORLD, datetime=None, collections=None, where=None) -> set[str]:
    """The Items a STAC API must return: geometry meets ``bbox``, closed time intervals meet, filter holds."""
    box = shapely.box(*bbox)
    lo, hi = dt.datetime.min.replace(tzinfo=dt.UTC), dt.datetime.max.replace(tzinfo=dt.UTC)
    if datetime:
        start, _, end = datetime.partition("/")
        lo, hi = parse_time(start), parse_time(end) if end else parse_time(start)
    out = set()
    for item in items:
        t0, t1 = interval(item["properties"])
        if collections is not None and item["collection"] not in collections:
            continue
        if where is not None and not where(item["properties"]):
            continue
        if shape(item["geometry"]).intersects(box) and t0 <= hi and t1 >= lo:
            out.add(item["id"])
    return out


def searches(items):
    """``(name, search kwargs, expected ids)`` of every query the API must answer exactly."""
    return [
        ("bbox-hit", {"bbox": HIT}, expected(items, bbox=HIT)),
        ("bbox-miss", {"bbox": MISS}, expected(items, bbox=MISS)),
        (
            "datetime-2019",
            {"datetime": "2019-03-01T00:00:00Z/2019-09-01T00:00:00Z"},
            expected(items, datetime="2019-03-01T00:00:00Z/2019-09-01T00:00:00Z"),
        ),
        ("collection", {"collections": ["solo"]}, expected(items, collections=["solo"])),
        (
            "cql2-cell-order",
            {"filter": {"op": "=", "args": [{"property": "moczarr:cell_order"}, 4]}, "filter_lang": "cql2-json"},
            expected(items, where=lambda p: p.get("moczarr:cell_order") == 4),
        ),
        (
            "cql2-version-2",
            {"filter": {"op": "=", "args": [{"property": "version"}, "2"]}, "filter_lang": "cql2-json"},
            expected(items, where=lambda p: p.get("version") == "2"),
        ),
    ]


def run_searches(api: str, items: list[dict]) -> dict[str, tuple[set, set]]:
    client = Client.open(api)
    out = {}
    for name, kwargs, want in searches(items):
        got = {i.id for i in client.search(**kwargs, limit=5, max_items=500).items()}
        out[name] = (got, want)
    return out


def test_publish_then_search_returns_exactly_the_intersecting_items_and_they_open(stack, built, capsys):
    assert quiet(main, ["publish", str(built.out), "--pgstac", stack.dsn]) == 0
    assert capsys.readouterr().out.startswith("published 4 Collections and")
    items = ndjson(built.out / "pgstac" / "items.ndjson")
    results = run_searches(stack.api, items)
    for name, (got, want) in results.items():
        assert got == want, name
    assert results["bbox-hit"][0] and not results["bbox-miss"][0] and results["datetime-2019"][0]
    assert results["collection"][0] and results["cql2-cell-order"][0] and not results["cql2-version-2"][0]
    client = Client.open(stack.api)
    hits = list(client.search(bbox=HIT, max_items=500).items())
    for item in hits:
        asset = item.assets["data"]
        hint = asset.extra_fields["moczarr:open"]["kwargs"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            via_hints = xr.open_dataset(asset.href, **asset.extra_fields["xarray:open_kwargs"])
            direct = moczarr.open_level(**hint)
        xr.testing.assert_identical(via_hints.load(), direct.load())


def test_update_then_publish_makes_the_same_searches_return_the_new_state(stack, built, capsys):
    before = ndjson(built.out / "pgstac" / "items.ndjson")
    assert quiet(main, ["publish", str(built.out), "--pgstac", stack.dsn]) == 0  # the state before, whatever ran first
    capsys.readouterr()
    shutil.rmtree(built.stores / "gone")
    rewrite_manifest(built.stores / "solo", dataset={"short_name": "SOLO", "version": "2"})
    assert quiet(main, ["update", str(built.out)]) == 0
    assert quiet(main, ["publish", str(built.out), "--pgstac", stack.dsn]) == 0
    out = capsys.readouterr().out
    gone_items = sorted(i["id"] for i in before if i["collection"] == "gone")
    assert f"deleted {len(gone_items)} Items and 1 Collections no longer built" in out, out
    lines = report(out)
    assert lines["deleted collections"] == "gone"
    assert lines["deleted items"] == "gone: " + ", ".join(gone_items)
    assert not rows(stack, "SELECT id FROM pgstac.items WHERE id = ANY(%s)", (gone_items,))
    owned = "SELECT id FROM pgstac.collections WHERE content->>%s = %s"
    ours = {r[0] for r in rows(stack, owned, (CATALOG, key_of(built)))}
    assert set(lines["upserted collections"].split(", ")) == ours == {"elevation", "elevation_yearly", "solo"}
    per_collection = "SELECT collection, count(*) FROM pgstac.items WHERE collection = ANY(%s) GROUP BY 1"
    counts = rows(stack, per_collection, (sorted(ours),))
    said = dict(part.rsplit(" ", 1) for part in lines["upserted items"].split(", "))
    assert {c: int(n) for c, n in said.items()} == dict(counts)
    items = ndjson(built.out / "pgstac" / "items.ndjson")
    assert not any(i["collection"] == "gone" for i in items)
    results = run_searches(stack.api, items)
    for name, (got, want) in results.items():
        assert got == want, name
    assert results["cql2-version-2"][0] == {i["id"] for i in items if i["collection"] == "solo"}
    collections = {c.id for c in Client.open(stack.api).get_collections()}
    assert collections == {"elevation", "elevation_yearly", "solo"}
    assert not rows(stack, "SELECT id FROM pgstac.items WHERE collection = 'gone'")


def test_publish_names_an_unreachable_database_without_its_password(built, capsys):
    assert main(["publish", str(built.out), "--pgstac", "postgresql://u:secret@127.0.0.1:1/db"]) == 2
    err = capsys.readouterr().err
    assert "pgstac at 127.0.0.1:1/db" in err and "secret" not in err


SECRET = "Pw-s3cr3t"


#: a malformed DSN: psycopg's message spells it whole
MALFORMED = f"postgresql://user:{SECRET}@[::1/db"


@pytest.mark.parametrize(
    "dsn",
    [
        MALFORMED,
        "postgresql://user:{secret}@127.0.0.1:{port}/db",  # nothing listens there
        "host=127.0.0.1 port={port} user=u password={secret} dbname=db",
        "host=127.0.0.1 port={port} user=u password='{secret}' dbname=db",
        "host=127.0.0.1 port={port} user=u password='{secret} dbname=db",  # malformed: an unterminated quote
    ],
    ids=["malformed-url", "refused-url", "refused-keywords", "refused-quoted", "malformed-keywords"],
)
def test_no_message_of_publish_spells_the_password(built, dsn, capsys):
    dsn = dsn.format(secret=SECRET, port=free_port())
    assert main(["publish", str(built.out), "--pgstac", dsn]) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: pgstac at "), captured.err
    assert "s3cr3t" not in captured.out + captured.err


def test_the_installed_command_never_spells_the_password(built):
    done = cli("publish", built.out, "--pgstac", MALFORMED)
    assert done.returncode == 2, done
    assert done.stderr.startswith("error: pgstac at postgresql://user:***@[::1/db"), done.stderr
    assert "s3cr3t" not in done.stdout + done.stderr


def cli(*args) -> subprocess.CompletedProcess:
    """The installed ``moczarr-catalog`` with ``args``, as a cron job runs it."""
    script = str(Path(sys.executable).with_name("moczarr-catalog"))
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    return subprocess.run(
        [sys.executable, script, *map(str, args)], capture_output=True, text=True, timeout=300, env=env
    )


CATALOG = "moczarr:catalog"


def key_of(built) -> str:
    """The module catalog's key: the URL it was built to be published at."""
    return f"{built.url}/cat"


def test_publish_refuses_a_catalog_naming_paths_of_this_machine(stack, built, tmp_path, capsys):
    assert quiet(main, ["publish", str(built.out), "--pgstac", stack.dsn]) == 0  # a catalog already published
    before = database(stack)
    store = tmp_path / "stores" / "machine"
    shutil.copytree(built.stores / "sample" / "elevation", store)
    rewrite_manifest(store, dataset={"short_name": "MACHINE", "version": "1"})
    local = tmp_path / "local"
    assert quiet(main, ["build", str(store), "--out", str(local)]) == 0  # no --href-base: paths of this machine
    capsys.readouterr()
    assert quiet(main, ["publish", str(local), "--pgstac", stack.dsn]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "--href-base URL" in lines[0] and "--stores-root DIR" in lines[0]
    assert "path(s) of the building machine" in lines[0] and str(store) in lines[0]
    docs = ndjson(local / "pgstac" / "collections.ndjson") + ndjson(local / "pgstac" / "items.ndjson")
    assert f"name {len(set(local_paths(docs)))} path(s)" in lines[0]
    assert not captured.out
    assert database(stack) == before
    assert not rows(stack, "SELECT id FROM pgstac.collections WHERE content->>%s = %s", (CATALOG, str(local)))
    assert not rows(stack, "SELECT id FROM pgstac.items WHERE collection = 'machine'")


def local_paths(node, key=None):
    """Every absolute path a document names where a location goes (hrefs, store roots, open hints' paths)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from local_paths(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from local_paths(v, key)
    elif key in ("href", "store_root", "path", "moczarr:store_root") and str(node).startswith("/"):
        yield node


def _truncate_items(out: Path) -> str:
    path = out / "pgstac" / "items.ndjson"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-2]))  # cut at a line's end
    return "pgstac/items.ndjson"


def _remove_items(out: Path) -> str:
    (out / "pgstac" / "items.ndjson").unlink()
    return "pgstac/items.ndjson"


def _cut_mid_line(out: Path) -> str:
    path = out / "pgstac" / "items.ndjson"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return "pgstac/items.ndjson"


def _empty_both(out: Path) -> str:
    for name in ("collections", "items"):
        (out / "pgstac" / f"{name}.ndjson").write_text("")
    return "pgstac/collections.ndjson"


def _drop_a_collection(out: Path) -> str:
    path = out / "pgstac" / "collections.ndjson"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))
    return "pgstac/items.ndjson"  # its Items are there, their Collection is not


def _another_catalog(out: Path) -> str:
    path = out / "pgstac" / "collections.ndjson"
    docs = [{**doc, CATALOG: "https://elsewhere.example/cat"} for doc in ndjson(path)]
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    return "pgstac/collections.ndjson"


def _older_release(out: Path) -> str:
    path = out / "pgstac" / "collections.ndjson"
    docs = [{k: v for k, v in doc.items() if k != "moczarr:item_count"} for doc in ndjson(path)]
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    return "pgstac/collections.ndjson"  # its Items cannot be told whole


@pytest.mark.parametrize(
    "damage",
    [_truncate_items, _remove_items, _cut_mid_line, _empty_both, _drop_a_collection, _another_catalog, _older_release],
)
def test_publish_refuses_files_that_are_not_whole_and_deletes_nothing(stack, built, tmp_path, capsys, damage):
    out = tmp_path / "cat"
    shutil.copytree(built.out, out)  # its Collections name the published place, not this folder
    assert quiet(main, ["publish", str(out), "--pgstac", stack.dsn]) == 0
    before = database(stack)
    assert before[1]
    named = damage(out)
    capsys.readouterr()
    assert quiet(main, ["publish", str(out), "--pgstac", stack.dsn]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {out}/{named}: "), err
    assert "nothing published" in err[0]
    assert database(stack) == before


def test_the_ndjson_is_location_free(built):
    for doc in ndjson(built.out / "pgstac" / "items.ndjson"):
        assert not {lk["rel"] for lk in doc["links"]} & {"self", "root", "parent", "collection"}
        assert all(a["href"].startswith(built.url + "/") for a in doc["assets"].values())
        assert doc["assets"]["data"]["moczarr:open"]["kwargs"]["store_root"] == doc["assets"]["data"]["href"]


def test_each_collection_line_counts_its_items(built):
    items = ndjson(built.out / "pgstac" / "items.ndjson")
    for doc in ndjson(built.out / "pgstac" / "collections.ndjson"):
        assert doc["moczarr:item_count"] == sum(i["collection"] == doc["id"] for i in items) > 0
