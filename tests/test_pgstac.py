"""A database-backed STAC API in the loop: build -> ndjson -> pgstac -> stac-fastapi-pgstac -> pystac-client -> open.

The real parts (``tests/pgstac_server.py``): Debian's PostgreSQL with PostGIS
on 127.0.0.1, ``pypgstac migrate``, stac-fastapi-pgstac under uvicorn. The
catalog is built with ``--discover`` over a folder of stores written by
``moczarr.testing`` (the sample root and two bare copies of its ``elevation``
product under other names); ``pypgstac load`` takes its ndjson as is and
``moczarr-catalog publish`` upserts it. Searches (bbox that hits, bbox that
hits nothing, datetime, collection, a CQL2 filter) must return exactly the
Items the built documents say they should (shapely on the footprints, STAC's
closed time intervals), every hit opens with ``xr.open_dataset(href,
**xarray:open_kwargs)`` equal to ``open_level``, and after stores change,
``update`` then ``publish`` make the same searches return the new state.
Under ``CI=true`` a missing PostgreSQL, PostGIS or pgstac package fails the tests.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
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

from .conftest import IN_CI, rewrite_manifest
from .pgstac_server import PgstacStack, missing

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


@pytest.fixture(scope="module")
def built(tmp_path_factory, stack):
    base = tmp_path_factory.mktemp("pgstac")
    sample = write_sample_store(base / "stores" / "sample")
    for name in ("solo", "gone"):
        shutil.copytree(sample / "elevation", base / "stores" / name)
        rewrite_manifest(base / "stores" / name, dataset={"short_name": name.upper(), "version": "1"})
    out = base / "cat"
    assert quiet(main, ["build", str(base / "stores"), "--discover", "--out", str(out)]) == 0
    return SimpleNamespace(base=base, stores=base / "stores", out=out)


def quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def ndjson(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rows(stack, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(stack.dsn) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


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
    gone_items = sum(i["collection"] == "gone" for i in before)
    assert f"deleted {gone_items} Items and 1 Collections no longer built" in out, out
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


def test_the_ndjson_is_location_free(built):
    for doc in ndjson(built.out / "pgstac" / "items.ndjson"):
        assert not {lk["rel"] for lk in doc["links"]} & {"self", "root", "parent", "collection"}
        assert all(os.path.isabs(a["href"]) for a in doc["assets"].values())
        assert doc["assets"]["data"]["moczarr:open"]["kwargs"]["store_root"] == doc["assets"]["data"]["href"]
