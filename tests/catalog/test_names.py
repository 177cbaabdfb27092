"""Names and secrets: what store content and flags can put into a catalog, and what they never can.

Ids and entry names come from folder names and manifests, which the catalog
does not control: they are safe as file names (never ``.``/``..``, bounded,
a stable hash when cut); hrefs are percent-encoded, so a folder literally
named ``%2e%2e`` stays that folder; the catalog reads back (pystac, intake,
xarray, on disk and over HTTP) to the right store; no write lands outside
``--out``. A credential (URL userinfo, keys, secrets, tokens, profiles) never
reaches a document, the record or a line the command prints; an entry whose
store is at an ``http://`` href carries no S3 option. The stores are copies
of the bundled sample (``catalogs/sample``).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import intake
import pystac
import pytest
import xarray as xr
import yaml

import moczarr
from moczarr.errors import ArgumentError, StorageError
from moczarr_intake import stac
from moczarr_intake.model import naming
from moczarr_intake.model.access import public_storage_options
from moczarr_intake.model.hrefs import quote_path
from moczarr_intake.model.options import check_url
from moczarr_intake.stac import geoparquet, open_stac
from tests.helpers import SAMPLE, run_catalog
from tests.loopback import serve_folder

#: folder names a colleague may give a store: a space and non-ASCII, a literal percent-encoded "..", 250 characters
FOLDERS = ["a b é", "%2e%2e", "x" * 250]


# -- ids and entry names ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["", ".", "..", "...", "./..", "-.-", "%2e%2e", "../etc", "é", "/", " "])
def test_ids_are_never_dot_dotdot_or_empty(text):
    for name in (naming.slug(text), naming.identifier(text)):
        assert name not in ("", ".", "..") and not name.startswith(".") and "/" not in name
    assert naming.identifier(text).isidentifier()


def test_long_names_are_cut_with_a_stable_hash_and_stay_distinct():
    a, b = "L" * 300 + "a", "L" * 300 + "b"
    for make in (naming.slug, naming.identifier):
        ids = {make(a), make(b)}
        assert len(ids) == 2 and all(len(i) <= naming.MAX_NAME for i in ids)
        assert make(a) == make(a) and make(a).endswith(naming.name_hash(a))
    assert naming.slug(a) == "L" * 55 + "-" + naming.name_hash(a)  # the same id on every machine and run


@pytest.mark.parametrize("ordinary", ["elevation", "elevation_yearly", "atl06", "A_06", "x" * naming.MAX_NAME])
def test_ordinary_names_are_unchanged(ordinary):
    assert naming.slug(ordinary) == ordinary and naming.identifier(ordinary) == ordinary
    assert naming.slug("ATL06.v6-1") == "ATL06.v6-1"


def test_no_store_takes_the_name_of_a_folder_of_the_stac_api_outputs(tmp_path):
    assert {stac.API_ITEMS, stac.API_COLLECTIONS} == naming.RESERVED_IDS
    assert naming.dedupe(["api-items", "x"], reserved=naming.RESERVED_IDS) == ["api-items-2", "x"]


def test_paths_are_percent_encoded_segment_by_segment():
    assert quote_path("a b é/%2e%2e/../x") == "a%20b%20%C3%A9/%252e%252e/../x"
    assert quote_path("elevation_yearly/elevation-o6") == "elevation_yearly/elevation-o6"


# -- a build over hostile names -------------------------------------------------------------------------
def bare_copy(dest: Path, short_name: str | None = None) -> Path:
    """The sample's ``elevation`` product as a bare store at ``dest`` (its manifest's short_name changed)."""
    shutil.copytree(SAMPLE / "elevation", dest)
    if short_name is not None:
        manifest = dest / "morton_hive.json"
        doc = json.loads(manifest.read_text())
        doc["dataset"]["short_name"] = short_name
        manifest.write_text(json.dumps(doc))
    return dest


@pytest.fixture
def hostile(tmp_path) -> Path:
    """Five bare stores inside the catalog folder ``cat`` (so hrefs are relative): three hostile folder names,
    a manifest short_name ``..`` and one of 300 characters."""
    stores = tmp_path / "cat" / "stores"
    stores.mkdir(parents=True)
    for name in FOLDERS:
        bare_copy(stores / name)
    bare_copy(stores / "dots", "..")
    bare_copy(stores / "long", "S" * 300)
    return stores


def every_document(root: Path) -> list[pystac.STACObject]:
    """Every document the catalog at ``root`` links to, each read from its file (a dangling link raises)."""
    top = pystac.Catalog.from_file(str(root))
    docs: list[pystac.STACObject] = [top, *top.get_all_collections(), *top.get_items(recursive=True)]
    for doc in docs:
        assert Path(doc.get_self_href()).is_file(), doc.get_self_href()
        root_link = doc.get_single_link("root")
        assert root_link is not None and Path(root_link.get_absolute_href()).resolve() == root.resolve()
    return docs


def files_outside(folder: Path, keep: set[Path]) -> list[Path]:
    return [p for p in folder.rglob("*") if not any(p == k or p.is_relative_to(k) for k in keep)]


def test_hostile_names_build_a_catalog_that_reads_back_to_each_store(hostile, tmp_path):
    done = run_catalog("build", "cat/stores", "--discover", "--out", "cat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert files_outside(tmp_path, {tmp_path / "cat"}) == []  # nothing beside --out, no temp folder left
    docs = every_document(tmp_path / "cat" / "stac" / "catalog.json")
    collections = [d for d in docs if isinstance(d, pystac.Collection)]
    assert len(collections) == 5
    for doc in docs:
        assert doc.id not in (".", "..") and not doc.id.startswith(".") and len(doc.id) <= naming.MAX_NAME + 16
    for folder in [*FOLDERS, "dots", "long"]:
        # each store's o6 Item: its data asset a relative, percent-encoded href that open_stac follows to the store
        href = "/" + quote_path(folder)
        (collection,) = [c for c in collections if c.extra_fields["moczarr:store_root"].endswith(href)]
        item = next(i for i in collection.get_items() if i.properties["moczarr:cell_order"] == 6)
        assert item.assets["data"].href == "../../../stores/" + quote_path(folder)
        xr.testing.assert_identical(open_stac(item).load(), moczarr.open_level(str(hostile / folder), 6).load())
    v1 = intake.open_catalog(str(tmp_path / "cat" / "catalog.yaml"))
    v2 = intake.open_catalog(str(tmp_path / "cat" / "catalog_v2.yaml"))
    names = [n for n in v1 if not n.endswith("_tree")]
    assert len(names) == 5 and all(n.isidentifier() and len(n) <= naming.MAX_NAME for n in names)
    roots = set()
    for name in names:
        root = v1[name].describe()["args"]["store_root"].replace("{{ CATALOG_DIR }}", str(tmp_path / "cat"))
        roots.add(Path(root))
        want = moczarr.open_level(root, 6).load()
        xr.testing.assert_identical(v1[name](order=6).read(), want)
        xr.testing.assert_identical(v2[f"{name}_o6"].read(), want)
    assert roots == {hostile / f for f in [*FOLDERS, "dots", "long"]}  # each entry names its own store


def test_a_folder_whose_name_is_not_utf8_is_left_out_with_one_line(tmp_path):
    """One odd store never fails the build: a folder name no document can spell is a degraded line, the rest built."""
    stores = tmp_path / "stores"
    bare_copy(stores / "good")
    bare_copy(Path(os.fsdecode(os.fsencode(stores) + b"/bad\xff")))
    done = run_catalog("build", stores, "--discover", "--out", tmp_path / "cat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    degraded = [line for line in done.stderr.splitlines() if line.startswith("degraded:")]
    assert degraded == [
        f"degraded: {stores}/bad\\xff: left out of the catalog: its path is not valid UTF-8, so no document can "
        "name it (rename the folder)"
    ]
    catalog = pystac.Catalog.from_file(str(tmp_path / "cat" / "stac" / "catalog.json"))
    assert [c.id for c in catalog.get_all_collections()] == ["moczarr_sample"]
    assert "bad" not in (tmp_path / "cat" / "catalog.yaml").read_text()


def test_a_folder_named_like_an_encoded_dotdot_stays_that_folder(tmp_path):
    """``%2e%2e`` in an href would resolve as ``..``: published, it is ``%252e%252e`` and reaches the folder."""
    stores = tmp_path / "stores"
    bare_copy(stores / "%2e%2e")
    bare_copy(stores / "other")  # the folder a wrongly decoded href would reach instead
    done = run_catalog("build", "stores", "--discover", "--out", "cat", "--href-base", "https://data.example.org/hive",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = "".join(p.read_text() for p in (tmp_path / "cat").rglob("*") if p.suffix in (".json", ".yaml", ".ndjson"))
    assert "https://data.example.org/hive/%252e%252e" in text
    assert "hive/%2e%2e" not in text and "/hive/../" not in text


# -- published over HTTP: no S3 option on an http:// entry ------------------------------------------------
@pytest.fixture
def http_stores(tmp_path):
    """``tmp_path/stores`` served at an http:// URL on 127.0.0.1 (a plain file server, as a portal's)."""
    stores = tmp_path / "stores"
    stores.mkdir()

    with serve_folder(stores) as url:
        yield url, stores


def test_entries_published_over_http_open_with_no_option_and_s3_ones_keep_their_endpoint(
    http_stores, s3_server, tmp_path
):
    url, stores = http_stores
    bare_copy(stores / "a b é")
    bucket = s3_server.bucket("names-public", public=True)
    s3_server.upload_tree(SAMPLE / "elevation", bucket, "bare s3")
    s3_root = f"s3://{bucket}/bare s3"
    done = run_catalog("build", str(stores / "a b é"), s3_root, "--out", "cat", "--href-base", url, "--stores-root",
               str(stores), "--anon", "--endpoint-url", s3_server.endpoint_url, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    want = moczarr.open_level(str(stores / "a b é"), 6).load()
    published = f"{url}/a%20b%20%C3%A9"
    v1 = yaml.safe_load((tmp_path / "cat" / "catalog.yaml").read_text())["sources"]
    v2 = yaml.safe_load((tmp_path / "cat" / "catalog_v2.yaml").read_text())["data"]
    over_http = {k: s for k, s in v1.items() if s["args"]["store_root"].startswith(url)}
    assert {s["args"]["store_root"] for s in over_http.values()} == {published} and len(over_http) == 2
    for source in over_http.values():
        assert "storage_options" not in source["args"] and "storage_options" not in source["metadata"]
    over_s3 = [s for s in v1.values() if s["args"]["store_root"].startswith("s3://")]
    assert over_s3 and all(
        s["args"]["storage_options"] == {"anon": True, "client_kwargs": {"endpoint_url": s3_server.endpoint_url}}
        for s in over_s3
    )
    assert {d["kwargs"]["url"]: d["kwargs"]["storage_options"] for d in v2.values() if d["kwargs"]["url"] == published}
    assert all(d["kwargs"]["storage_options"] is None for d in v2.values() if d["kwargs"]["url"] == published)
    cat = intake.open_catalog(str(tmp_path / "cat" / "catalog.yaml"))
    (http_name,) = [k for k in over_http if not k.endswith("_tree")]
    (s3_name,) = [k for k, s in v1.items() if s in over_s3 and not k.endswith("_tree")]
    xr.testing.assert_identical(cat[http_name](order=6).read(), want)
    xr.testing.assert_identical(cat[s3_name](order=6).read(), want)
    top = pystac.Catalog.from_file(str(tmp_path / "cat" / "stac" / "catalog.json"))
    item = next(i for i in top.get_items(recursive=True) if i.assets["data"].href == published
                and i.properties["moczarr:cell_order"] == 6)  # fmt: skip
    asset = item.assets["data"]
    assert "xarray:storage_options" not in asset.extra_fields
    xr.testing.assert_identical(xr.open_dataset(asset.href, **asset.extra_fields["xarray:open_kwargs"]).load(), want)


# -- credentials ------------------------------------------------------------------------------------------
SECRET, KEY = "s3cr3t/Value+x", "AKIAEXAMPLEKEY"


@pytest.mark.parametrize("flag", ["--endpoint-url", "--href-base", "--catalog-url"])
def test_a_url_holding_a_credential_is_refused_without_echoing_it(tmp_path, flag):
    bare_copy(tmp_path / "store")
    done = run_catalog("build", "store", "--out", "cat", flag, f"http://{KEY}:{SECRET}@127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "cat").exists()
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {flag} ") and "environment" in line
    assert KEY not in done.stderr + done.stdout and "s3cr3t" not in done.stderr + done.stdout
    with pytest.raises(ArgumentError) as caught:
        check_url(f"ftp://{KEY}:{SECRET}@host", flag)
    assert "s3cr3t" not in str(caught.value) and KEY not in str(caught.value)


def test_no_credential_in_any_form_reaches_a_file_or_a_line(s3_server, tmp_path):
    from moczarr_intake import build

    bucket = s3_server.bucket("names-private", public=False)
    s3_server.upload_tree(SAMPLE / "elevation", bucket, "bare")
    full = s3_server.storage_options(anon=False)
    secrets = [full["key"], full["secret"], "T0KEN-value"]
    options = {**full, "token": "T0KEN-value"}  # key, secret, session token, endpoint, region
    written = build([f"s3://{bucket}/bare"], tmp_path / "cat", storage_options=options, progress=False)
    endpoint = full["client_kwargs"]["endpoint_url"]
    userinfo = endpoint.replace("://", f"://{full['key']}:{full['secret']}@")
    hidden = {"profile": "my-profile", "client_kwargs": {"endpoint_url": userinfo, "aws_session_token": "t"}}
    assert public_storage_options(hidden) == {"client_kwargs": {"endpoint_url": endpoint}}
    files = [p for p in (tmp_path / "cat").rglob("*") if p.is_file()]
    assert len(files) > 5 and any(p.name == "build-record.json" for p in files)
    for path in files:
        data = path.read_bytes()
        assert not [s for s in secrets if s.encode() in data], path
    assert not [s for s in secrets if any(s in n for n in written.notes)]


# -- the background stac-geoparquet writer ------------------------------------------------------------------
def test_a_failure_after_the_parquet_writer_started_leaves_nothing_outside_out(tmp_path, monkeypatch):
    """The Collections fail to be written (a full disk, a name too long) after the Item files were started:
    no file is written once the staging folder is removed, and nothing appears beside ``--out``."""
    from moczarr_intake import build

    stores = tmp_path / "stores"
    bare_copy(stores / "one")
    release = threading.Event()
    writers: list[threading.Thread] = []
    original = geoparquet._write_parquet

    def slow_write(rows, path):
        writers.append(threading.current_thread())
        release.wait(timeout=30)  # held until the build has failed and cleaned up
        return original(rows, path)

    def failing_collections(*args, **kwargs):
        raise StorageError("api-collections: no space left on device")

    monkeypatch.setattr(geoparquet, "_write_parquet", slow_write)
    monkeypatch.setattr(geoparquet, "write_api_collections", failing_collections)
    with pytest.raises(StorageError, match="no space left"):
        build([str(stores / "one")], tmp_path / "out", href_base="https://data.example.org", progress=False)
    release.set()
    for thread in writers:
        thread.join(timeout=30)
    assert not (tmp_path / "out").exists()
    assert files_outside(tmp_path, {stores}) == []


def test_a_parquet_file_is_never_written_into_a_removed_folder(tmp_path):
    folder = tmp_path / "gone" / "api-items"
    with pytest.raises(StorageError, match="gone"):
        geoparquet._write_parquet([{"id": "x"}], folder / "x.parquet")
    assert not (tmp_path / "gone").exists()


def test_an_error_line_never_shows_a_password_of_a_url(tmp_path):
    """The database's own message quotes the DSN it was given; the command's line shows ``***@`` instead."""
    bare_copy(tmp_path / "store")
    built = run_catalog(
        "build", "store", "--out", "cat", "--href-base", "https://data.example.org/stores", cwd=tmp_path
    )
    assert built.returncode == 0  # publishable: publish refuses a catalog naming paths of this machine first
    done = run_catalog("publish", "cat", "--pgstac", f"postgresql://user:{SECRET}@[::1/db", cwd=tmp_path)
    assert done.returncode == 2 and "s3cr3t" not in done.stderr + done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and "***@[::1/db" in line
