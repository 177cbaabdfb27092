"""The living catalog: discovery, concurrent reads, object-storage output, update, the dask scheduler.

Stores are written by ``moczarr.testing`` (the sample root and copies of its
bare ``elevation`` product, a raster pyramid), so nothing here needs the
shared fixtures. Object storage is moto's real S3 server on 127.0.0.1
(``tests/s3server.py``); requests are counted by ``moczarr.count_requests``
on the client and by the server's own request log.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

import moczarr
from moczarr.metadata import MANIFEST_NAME, ROOT_MOC_NAME, Scanner
from moczarr.storage import Storage, count_requests
from moczarr.testing.moraine import write_raster_pyramid
from moczarr_intake import build, update
from moczarr_intake.cli import main
from moczarr_intake.living.lock import LOCK_KEY
from moczarr_intake.living.record import RECORD_NAME, BuildRecord
from moczarr_intake.roots import scan as reading
from moczarr_intake.roots.discover import discover
from moczarr_intake.roots.scan import read_roots
from moczarr_intake.stac import geoparquet
from tests.helpers import link_copy, local_cluster, rewrite_manifest
from tests.s3server import ANSI, S3Server

pytestmark = pytest.mark.filterwarnings("ignore::moczarr.errors.MoczarrWarning")

#: what one bare copy of the sample's ``elevation`` product costs a build: its root LIST, then the summary's GETs
ELEVATION_REQUESTS = {"LIST prefix": 1, "GET manifest": 1, "GET root_moc": 1, "GET stamp": 1, "GET metadata": 4}


@pytest.fixture(scope="module")
def bucket(sample, tmp_path_factory) -> Path:
    """Roots of every kind below one folder, plus what discovery must skip or never enter."""
    base = tmp_path_factory.mktemp("bucket") / "bucket"
    link_copy(sample / "elevation", base / "A" / "store")  # a bare store in a folder of its own
    link_copy(sample, base / "B" / "store")  # a multi-product root (two products, sample.json)
    link_copy(sample / "elevation", base / "loose" / "x")  # two products side by side, and a folder of notes:
    link_copy(sample / "elevation", base / "loose" / "y")  # a multi-product root
    (base / "loose" / "notes").mkdir()
    (base / "loose" / "notes" / "readme.json").write_text("{}")
    write_raster_pyramid(base / "ras", np.arange(64 * 64, dtype="float32").reshape(64, 64))
    pending = link_copy(sample / "elevation", base / "pending" / "store")
    (pending / "morton_hive.json").unlink()  # a digit tree whose manifest has not landed
    (base / "zarrthing").mkdir()
    (base / "zarrthing" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    link_copy(sample / "elevation", base / "out" / "inside")  # the catalog's own output folder: excluded
    return base


EXPECTED_ROOTS = {"A/store": "bare", "B/store": "multi", "loose": "multi", "ras": "pyramid"}
#: the folders the walk lists: the prefix, its 6 folders (out/ excluded), 6 below them, B/store's 2 products,
#: and the pyramid's 0.zarr; never a digit node, a leaf, or anything below a root
EXPECTED_LISTS = 1 + 6 + 6 + 2 + 1


def test_discovery_finds_every_root_and_stops_at_them(bucket):
    with count_requests() as counter:
        found = discover(Scanner(bucket), exclude=[str(bucket / "out")])
    assert {os.path.relpath(f.root, bucket): f.layout for f in found.found} == EXPECTED_ROOTS
    assert dict(found.skipped) == {
        str(bucket / "pending" / "store"): "digit trees without a manifest (a store still being written?)",
        str(bucket / "zarrthing"): "zarr hierarchies (not stores)",
    }
    assert found.lists == counter.lists == EXPECTED_LISTS and counter.gets == 0, counter.summary()
    loose = next(f for f in found.found if f.root.endswith("loose"))
    assert sorted(loose.listings) == ["", "x", "y"]  # each product's listing: its state
    assert found.summary() == (
        f"discovered 3 morton-hive store root(s) (2 multi-product), 1 moraine pyramid(s) below {bucket} in "
        f"{EXPECTED_LISTS} LIST(s); skipped 2: 1 digit trees without a manifest (a store still being written?), "
        "1 zarr hierarchies (not stores)"
    )


def test_discovery_over_s3_lists_the_same_folders(bucket):
    with S3Server() as server:
        server.create_bucket("living", public=True)
        server.upload_tree(bucket, "living", "bucket")
        scanner = Scanner("s3://living", server.storage_options(anon=True))
        with count_requests() as counter, server.count_http() as http:
            found = discover(scanner, "bucket", exclude=["s3://living/bucket/out"])
    assert {f.root.removeprefix("s3://living/bucket/"): f.layout for f in found.found} == EXPECTED_ROOTS
    assert found.lists == counter.lists == http.lists == EXPECTED_LISTS and http.object_gets == 0
    ras = next(f for f in found.found if f.kind == "moraine")
    assert all(v and v.startswith("etag:") for v in ras.listings["0.zarr"].objects.values())


def test_build_discover_cli_catalogs_what_it_found(bucket, tmp_path, capsys):
    out = bucket / "out"
    assert main(["build", str(bucket), "--discover", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "discovered 3 morton-hive store root(s) (2 multi-product), 1 moraine pyramid(s)" in err
    record = BuildRecord.from_json((out / RECORD_NAME).read_bytes(), "record", base=str(out))
    assert (
        str(bucket) not in (out / RECORD_NAME).read_text()
    )  # local paths relative to the record: none of this machine
    assert record.discover and record.roots == [str(bucket)]
    assert sorted(os.path.relpath(s.root, bucket) for s in record.stores) == sorted(EXPECTED_ROOTS)
    collections = [json.loads(line)["id"] for line in (out / "pgstac" / "collections.ndjson").read_text().splitlines()]
    # A/store (named by its short name), B/store's two products, loose's two; the raster pyramid has grid
    # coordinates only, so no geometry: pgstac, which searches by geometry, gets no Item (nor Collection) of it
    assert collections == ["moczarr_sample", "elevation", "elevation_yearly", "x", "y"]


@pytest.fixture(scope="module")
def s3():
    with S3Server() as server:
        server.create_bucket("living", public=True)
        yield server


def test_products_are_read_concurrently_at_the_requests_they_need(sample, s3, tmp_path):
    for i in range(6):
        s3.upload_tree(sample / "elevation", "living", f"conc/p{i}")
    roots = [f"s3://living/conc/p{i}" for i in range(6)]
    options = s3.storage_options(anon=True)
    with count_requests() as counter:
        concurrent = read_roots(roots, options)
    assert counter.summary() == {k: 6 * n for k, n in ELEVATION_REQUESTS.items()}
    one_at_a_time = read_roots(roots, options, concurrency=1)
    assert [s.to_dict() for s in concurrent.summaries] == [s.to_dict() for s in one_at_a_time.summaries]
    assert [s.root for s in concurrent.summaries] == roots  # the order given


def test_a_given_roots_read_follows_its_own_probe_not_every_probe(sample, s3, monkeypatch):
    """With one thread the order shows it: each root is probed then read before the next root's probe."""
    for i in range(3):
        s3.upload_tree(sample / "elevation", "living", f"pipe/p{i}")
    roots = [f"s3://living/pipe/p{i}" for i in range(3)]
    steps: list[tuple[str, str]] = []
    real_probe, real_read = reading.probe, reading.read_one

    def probing(scanner, rel=""):
        steps.append(("probe", rel))
        return real_probe(scanner, rel)

    def reading_one(found, scanners, workers=reading.PRODUCT_WORKERS):
        steps.append(("read", found.root.rsplit("/", 2)[-2] + "/" + found.root.rsplit("/", 1)[-1]))
        return real_read(found, scanners, workers)

    monkeypatch.setattr(reading, "probe", probing)
    monkeypatch.setattr(reading, "read_one", reading_one)
    read = read_roots([*roots, roots[1]], s3.storage_options(anon=True), concurrency=1)  # one given twice
    assert steps == [(step, f"pipe/p{i}") for i in range(3) for step in ("probe", "read")]
    assert [s.root for s in read.summaries] == roots  # the order given, each location once


def test_a_bare_roots_manifest_and_root_moc_come_in_one_batch(sample, s3, monkeypatch):
    """The listing shows both, so the summary's first two dependent GETs become one round trip, at the same count."""
    s3.upload_tree(sample / "elevation", "living", "ahead/p0")
    batches: list[list[str]] = []
    real = Storage.get_many

    def recording(self, rels):
        batches.append(list(rels))
        return real(self, rels)

    monkeypatch.setattr(Storage, "get_many", recording)
    with count_requests() as counter:
        read = read_roots(["s3://living/ahead/p0"], s3.storage_options(anon=True))
    assert counter.summary() == ELEVATION_REQUESTS
    assert batches[0] == [MANIFEST_NAME, ROOT_MOC_NAME]
    monkeypatch.setattr(reading, "_read_ahead", lambda found: [])
    one_by_one = read_roots(["s3://living/ahead/p0"], s3.storage_options(anon=True))
    assert [s.to_dict() for s in read.summaries] == [s.to_dict() for s in one_by_one.summaries]


def test_a_multi_product_roots_manifests_and_root_mocs_come_in_one_batch(sample, s3, monkeypatch):
    """The listings show each product's manifest and root MOC: all read before any product's next step.

    One request in flight and one product at a time: before, each product's
    root MOC came after the previous product's stamp and arrays. The same
    requests either way, and the same summary; the walk's listing of the root
    is not made again, nor its manifest asked for (the listing shows none).
    """
    names = ("alpha", "beta", "gamma")
    for name in names:
        s3.upload_tree(sample / "elevation", "living", f"aheadmulti/{name}")
    options = s3.storage_options(anon=True)
    found, _ = reading.locate(["s3://living/aheadmulti"], reading.Scanners(options), discover_below=True)
    assert [(f.root, f.layout) for f in found] == [("s3://living/aheadmulti", "multi")]

    def gets_in_order() -> tuple[list[str], dict, list]:
        log = _ServerLog("GET")
        logging.getLogger("werkzeug").addHandler(log)
        try:
            with count_requests() as counter:
                read = read_roots(["s3://living/aheadmulti"], options, discover_below=True, concurrency=1)
        finally:
            logging.getLogger("werkzeug").removeHandler(log)
        return [key.removeprefix("aheadmulti/") for _, key in log.lines], counter.summary(), read.summaries

    ahead, ahead_count, ahead_read = gets_in_order()
    first = [f"{n}/{obj}" for n in names for obj in (MANIFEST_NAME, ROOT_MOC_NAME)]
    assert sorted(ahead[: len(first)]) == sorted(first)
    assert not [key for key in ahead[len(first) :] if key.endswith((MANIFEST_NAME, ROOT_MOC_NAME))]
    monkeypatch.setattr(reading, "_read_ahead", lambda found: [])
    chained, chained_count, chained_read = gets_in_order()
    alpha_leaf = next(k for k in chained if k.startswith("alpha/") and not k.endswith((MANIFEST_NAME, ROOT_MOC_NAME)))
    assert chained.index(alpha_leaf) < chained.index(f"gamma/{ROOT_MOC_NAME}")  # the chain this test tells apart
    walked = {"GET manifest": 3, "GET metadata": 12, "GET root_moc": 3, "GET stamp": 3, "LIST prefix": 4}
    assert ahead_count == chained_count == walked  # the products' manifests; the walk's LISTs only (root, products)
    assert sorted(ahead) == sorted(chained)
    assert [s.to_dict() for s in ahead_read] == [s.to_dict() for s in chained_read]
    assert [p.name for p in ahead_read[0].products] == list(names)


def test_a_product_read_ahead_through_its_root_is_answered_to_the_products_handle(sample):
    root = Storage.open(sample)
    product = sorted(p.name for p in sample.iterdir() if (p / MANIFEST_NAME).is_file())[0]
    with count_requests() as counter:
        root.prefetch([f"{product}/{ROOT_MOC_NAME}"])
        assert counter.summary() == {"GET root_moc": 1}
        child = root.child(product)
        assert child.get_bytes(ROOT_MOC_NAME) == (sample / product / ROOT_MOC_NAME).read_bytes()
        assert counter.summary() == {"GET root_moc": 1}  # from memory
        child.get_bytes(ROOT_MOC_NAME)
        assert counter.summary() == {"GET root_moc": 2}  # answered once, then read again
        assert root.sizes[f"{product}/{ROOT_MOC_NAME}"] == (sample / product / ROOT_MOC_NAME).stat().st_size


def test_a_prefetched_object_is_answered_once_from_memory(sample):
    storage = Storage.open(sample / "elevation")
    with count_requests() as counter:
        storage.prefetch([MANIFEST_NAME, "absent.json"])
        assert counter.summary() == {"GET manifest": 1, "GET other": 1}
        assert storage.get_many(["absent.json", MANIFEST_NAME]) == [
            None,
            (sample / "elevation" / MANIFEST_NAME).read_bytes(),
        ]
        assert counter.summary() == {"GET manifest": 1, "GET other": 1}  # both answered from memory
        storage.get_bytes(MANIFEST_NAME)
        assert counter.summary() == {"GET manifest": 2, "GET other": 1}  # once only: then read again


def test_given_remote_roots_are_probed_at_once_in_their_order(sample, s3, monkeypatch):
    """The LIST that tells what each given root is runs for every root at once (under the in-flight limit)."""
    for i in range(6):
        s3.upload_tree(sample / "elevation", "living", f"probe/p{i}")
    roots = [f"s3://living/probe/p{i}" for i in range(6)]
    options = s3.storage_options(anon=True)
    threads: dict[str, set[int]] = {}
    real = reading.probe

    def recording(scanner, rel=""):
        threads.setdefault(mode, set()).add(threading.get_ident())
        time.sleep(0.05)  # long enough for the pool to hand the next roots to other threads
        return real(scanner, rel)

    monkeypatch.setattr(reading, "probe", recording)
    found = {}
    for mode, limit in (("concurrent", 32), ("one at a time", 1)):
        found[mode], _ = reading.locate(roots, reading.Scanners(options, limit))
    assert len(threads["concurrent"]) > 1
    assert len(threads["one at a time"]) == 1
    assert [f.root for f in found["concurrent"]] == roots  # the order given
    assert [(f.root, f.kind, sorted(f.listings)) for f in found["concurrent"]] == [
        (f.root, f.kind, sorted(f.listings)) for f in found["one at a time"]
    ]


class _ServerLog(logging.Handler):
    """``(method, key)`` of the requests moto answered in bucket ``living``, in the order its log shows them."""

    def __init__(self, *methods: str):
        super().__init__(logging.INFO)
        self.lines: list[tuple[str, str]] = []
        self._pattern = re.compile(rf"\b({'|'.join(methods)}) /living/([^?\s]+)\S* HTTP")

    def emit(self, record):
        found = self._pattern.search(ANSI.sub("", record.getMessage()))  # a 404's line is coloured
        if found and not found.group(2).endswith(f"/{LOCK_KEY}"):  # the catalog's documents, not its lock
            self.lines.append((found.group(1), found.group(2)))


def _keys(s3, prefix: str) -> set[str]:
    pages = s3.client().get_paginator("list_objects_v2").paginate(Bucket="living", Prefix=prefix)
    return {o["Key"].removeprefix(prefix) for page in pages for o in page.get("Contents", [])}


def test_out_to_object_storage_writes_leaves_first_and_replaces_the_previous_catalog(sample, s3):
    s3.upload_tree(sample / "elevation", "living", "outs/a")
    other = link_copy(sample / "elevation", sample.parent / "other")
    rewrite_manifest(other, dataset={"short_name": "OTHER", "version": "1"})  # a second name: no prefixed ids
    s3.upload_tree(other, "living", "outs/b")
    roots = ["s3://living/outs/a", "s3://living/outs/b"]
    options = s3.storage_options(anon=False)
    log = _ServerLog("PUT", "DELETE")
    logging.getLogger("werkzeug").addHandler(log)
    try:
        written = build(roots, "s3://living/cat", storage_options=options, progress=False)
        first, keys = list(log.lines), _keys(s3, "cat/")
        catalog = json.loads(s3.client().get_object(Bucket="living", Key="cat/stac/catalog.json")["Body"].read())
        log.lines.clear()
        again = build(roots[:1], "s3://living/cat", storage_options=options, progress=False)  # b is gone
        log.lines.clear()
        same = build(roots[:1], "s3://living/cat", storage_options=options, progress=False)
        third = list(log.lines)
    finally:
        logging.getLogger("werkzeug").removeHandler(log)
    assert written.stac == "s3://living/cat/stac/catalog.json"
    puts = [key for op, key in first if op == "PUT"]
    roots_at = [puts.index(f"cat/{k}") for k in ("stac/catalog.json", "catalog.yaml", "catalog_v2.yaml")]
    assert roots_at == sorted(roots_at) and roots_at[0] == len(puts) - 4 and puts[-1] == f"cat/{RECORD_NAME}"
    item_at = max(i for i, k in enumerate(puts) if re.search(r"-o\d+/[^/]+\.json$", k))
    collection_at = min(i for i, k in enumerate(puts) if k.endswith("/collection.json"))
    assert item_at < collection_at  # the deepest documents first
    assert next(lk["href"] for lk in catalog["links"] if lk["rel"] == "self") == written.stac
    for link in catalog["links"]:  # every child the root names was written
        if link["rel"] == "child":
            assert "stac/" + link["href"].removeprefix("./") in keys
    after = _keys(s3, "cat/")
    gone = keys - after
    assert gone and all("other" in key for key in gone), gone  # the documents of the product that is gone
    assert again.uploaded.deleted == len(gone) and not any("other" in key for key in after)
    # every document links to the root with its title, which counts the stores: all were rewritten; a build of
    # the same stores rewrites nothing (the documents and the record are byte for byte the same)
    assert asdict(same.uploaded) == {"written": 0, "unchanged": len(after) - 1, "deleted": 0} and third == []


def test_update_of_200_products_rereads_only_the_changed_one(sample, tmp_path):
    prefix = tmp_path / "many"
    for i in range(200):
        link_copy(sample / "elevation", prefix / f"p{i:04}")
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True)
    rewrite_manifest(prefix / "p0007", generated_at="2031-01-01T00:00:00+00:00")
    with count_requests() as counter:
        result = update(str(out))
    # the walk: the prefix and each product's listing; then the one changed product's summary and the record
    assert counter.lists == 1 + 200
    assert counter.summary() == {
        "LIST prefix": 201,
        **{k: n for k, n in ELEVATION_REQUESTS.items() if k.startswith("GET")},
        "GET other": 1,  # the build record
    }
    assert asdict(result.refresh) == {"read": [str(prefix / "p0007")], "added": [], "removed": [], "unchanged": 199}
    collection = json.loads((out / "stac" / "many" / "p0007" / "collection.json").read_text())
    assert collection["created"] == "2031-01-01T00:00:00Z"


def _tree(folder: Path) -> dict[str, bytes]:
    names = ("stac", "catalog.yaml", "catalog_v2.yaml")
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).parts[0] in names
    }


def test_update_adds_and_removes_stores_and_equals_a_fresh_build(sample, tmp_path, capsys):
    prefix = tmp_path / "stores"
    for name in ("a", "b", "c"):
        link_copy(sample / "elevation", prefix / "one" / name)
    link_copy(sample, prefix / "two")
    out = tmp_path / "cat"
    assert main(["build", str(prefix), "--discover", "--out", str(out)]) == 0
    shutil.rmtree(prefix / "one" / "b")
    link_copy(sample / "elevation", prefix / "one" / "d")
    rewrite_manifest(prefix / "two" / "elevation_yearly", generated_at="2032-02-02T00:00:00+00:00")
    capsys.readouterr()
    assert main(["update", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"updated {out}: 1 changed, 1 added, 1 removed, 3 unchanged")
    assert not (out / "stac" / "one" / "b").exists()
    fresh = tmp_path / "fresh"
    build([str(prefix)], fresh, progress=False, discover=True)
    assert _tree(out) == _tree(fresh)


def _stats(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file below ``folder`` with its inode and modification time: what a write would change."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_update_that_finds_nothing_changed_writes_nothing(sample, tmp_path, capsys):
    prefix = tmp_path / "stores"
    for name in ("a", "b"):
        link_copy(sample / "elevation", prefix / name)
    out = tmp_path / "cat"
    assert main(["build", str(prefix), "--discover", "--out", str(out)]) == 0
    before = _stats(out)
    capsys.readouterr()
    with count_requests() as counter:
        assert main(["update", str(out)]) == 0
    assert capsys.readouterr().out.startswith(
        f"updated {out}: 0 changed, 0 added, 0 removed, 2 unchanged; nothing to write"
    )
    assert _stats(out) == before  # not one file replaced
    assert counter.summary() == {"LIST prefix": 3, "GET other": 1}  # the walk and the build record
    result = update(str(out))
    assert result.written is False and result.stac == out / "stac" / "catalog.json"
    assert asdict(result.refresh) == {"read": [], "added": [], "removed": [], "unchanged": 2}


@pytest.mark.parametrize("why", ["another release wrote it", "a document is missing", "other storage options"])
def test_update_rewrites_an_unchanged_catalog_it_cannot_vouch_for(sample, tmp_path, why):
    a = link_copy(sample / "elevation", tmp_path / "a")
    out = tmp_path / "cat"
    build([str(a)], out, progress=False)
    fresh = _tree(out)
    options = None
    if why == "another release wrote it":
        record = json.loads((out / RECORD_NAME).read_text())
        (out / RECORD_NAME).write_text(json.dumps({**record, "written_by": "0.0.1"}))
    elif why == "a document is missing":
        (out / "catalog_v2.yaml").unlink()
    else:
        options = {"anon": True}  # published in the documents, so they change
    result = update(str(out), storage_options=options)
    assert result.written is not False and result.refresh.unchanged == 1
    assert json.loads((out / RECORD_NAME).read_text())["written_by"] == moczarr.__version__
    if options is None:
        assert _tree(out) == fresh
    else:
        assert _tree(out) != fresh and "anon: true" in (out / "catalog.yaml").read_text()


def test_update_to_object_storage_that_finds_nothing_changed_sends_no_write(sample, s3):
    s3.upload_tree(sample / "elevation", "living", "still/p0")
    options = s3.storage_options(anon=False)  # writes are signed (the server refuses anonymous overwrites)
    out = "s3://living/still-cat"
    build(["s3://living/still/p0"], out, storage_options=options, progress=False)
    with count_requests() as counter:
        result = update(out, storage_options=options)
    assert result.written is False and result.stac == f"{out}/stac/catalog.json"
    writes = {k: n for k, n in counter.summary().items() if k.startswith(("PUT", "DELETE"))}
    assert writes == {"PUT bucket": 1, "DELETE bucket": 1}  # the lock's own: update holds it, as the command did
    assert result.uploaded.written == 0 and result.uploaded.unchanged > 0


def _living_stores(sample: Path, prefix: Path) -> Path:
    """Three bare stores, a multi-product root and a raster pyramid below ``prefix``."""
    for name in ("a", "b", "c"):
        link_copy(sample / "elevation", prefix / "one" / name)
    link_copy(sample, prefix / "two")
    write_raster_pyramid(prefix / "ras", np.arange(32 * 32, dtype="float32").reshape(32, 32))
    return prefix


def _drop_pyramid(store: Path, **changes) -> None:
    """Rewrite a store's manifest without its pyramid declaration (a product of one level), as a new file."""
    path = store / MANIFEST_NAME
    doc = {k: v for k, v in json.loads(path.read_text()).items() if k != "pyramid"} | changes
    path.unlink()
    path.write_text(json.dumps(doc))


def _every_file(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("options", ["href-base", "catalog-url and thumbnails"])
def test_update_writes_only_the_changed_products_and_equals_a_full_build(sample, tmp_path, options):
    prefix = _living_stores(sample, tmp_path / "stores")
    kw: dict = {"href_base": "https://data.example.org/stores", "stores_root": str(prefix)}
    if options != "href-base":
        kw |= {"catalog_url": "https://data.example.org/catalog", "thumbnails": True}
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True, **kw)
    before = {name: stat for name, stat in _stats(out).items() if (out / name).is_file()}
    assert {"stac/api-items/b.1.parquet", "stac/api-items/b.2.parquet"} <= set(before)  # source and overview keys
    _drop_pyramid(prefix / "one" / "b", generated_at="2031-01-01T00:00:00+00:00")
    rewrite_manifest(prefix / "two" / "elevation_yearly", generated_at="2032-02-02T00:00:00+00:00")
    result = update(str(out))
    assert sorted(result.refresh.read) == [str(prefix / "one" / "b"), str(prefix / "two" / "elevation_yearly")]
    after = _stats(out)
    changed = {name for name in before if before[name] != after.get(name)}
    assert changed, "nothing written"
    written_products = {
        "stac/one/b/",
        "stac/two/elevation_yearly/",
        "stac/api-items/b.",
        "stac/api-items/elevation_yearly.",
    }
    listing = {"stac/catalog.json", "stac/one/catalog.json", "stac/two/catalog.json", "catalog.yaml", "catalog_v2.yaml"}
    listing |= {"pgstac/collections.ndjson", "pgstac/items.ndjson", RECORD_NAME}
    listing |= {"stac/api-collections/b.json", "stac/api-collections/elevation_yearly.json"}
    # the kept products' documents (folders, thumbnails, STAC API files) and the moraine Item stay as they were
    stray = {name for name in changed if name not in listing and not name.startswith(tuple(written_products))}
    assert not stray, sorted(stray)
    assert any(name.startswith("stac/one/b/") for name in changed)
    assert before["stac/one/a/collection.json"] == after["stac/one/a/collection.json"]
    assert json.loads((out / "stac" / "one" / "b" / "collection.json").read_text())["created"] == "2031-01-01T00:00:00Z"
    # b lost its overviews: one level Item, one file of one key shape; its overview Items and files are gone
    levels_before = {name.split("/")[3] for name in before if name.startswith("stac/one/b/b-o")}
    levels_after = {p.name for p in (out / "stac" / "one" / "b").iterdir() if p.is_dir()}
    assert len(levels_before) == 3 and len(levels_after) == 1 and levels_after < levels_before
    assert (out / "stac" / "api-items" / "b.parquet").exists()
    assert not (out / "stac" / "api-items" / "b.1.parquet").exists()
    updated = _every_file(out)
    shutil.rmtree(out)
    build([str(prefix)], out, progress=False, discover=True, **kw)
    assert updated == _every_file(out)  # every document, the pgstac ndjson and the record: a full build's bytes


@pytest.mark.parametrize("why", ["paths of this machine", "another release wrote it", "a store was added"])
def test_update_writes_the_whole_catalog_when_it_cannot_keep_a_product(sample, tmp_path, why):
    prefix = _living_stores(sample, tmp_path / "stores")
    kw: dict = (
        {} if why == "paths of this machine" else {"href_base": "https://h.example.org/s", "stores_root": str(prefix)}
    )
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True, **kw)
    kept = out / "stac" / "one" / "a" / "collection.json"
    inode = kept.stat().st_ino
    rewrite_manifest(prefix / "one" / "b", generated_at="2031-01-01T00:00:00+00:00")
    if why == "another release wrote it":
        record = json.loads((out / RECORD_NAME).read_text())
        (out / RECORD_NAME).write_text(json.dumps({**record, "written_by": "0.0.1"}))
    elif why == "a store was added":
        link_copy(sample / "elevation", prefix / "one" / "d")
    result = update(str(out))
    assert result.refresh.read == [str(prefix / "one" / "b")]
    assert kept.stat().st_ino != inode  # written again: the catalog was swapped in whole
    updated = _every_file(out)
    shutil.rmtree(out)
    build([str(prefix)], out, progress=False, discover=True, **kw)
    assert updated == _every_file(out)


def test_update_of_a_catalog_moved_with_its_stores_equals_a_full_build_there(sample, tmp_path):
    prefix = _living_stores(sample, tmp_path / "site" / "stores")
    kw: dict = {"href_base": "https://h.example.org/s", "stores_root": str(prefix)}
    build([str(prefix)], tmp_path / "site" / "cat", progress=False, discover=True, **kw)
    os.rename(tmp_path / "site", tmp_path / "moved")  # the record spells local paths relative to the catalog
    prefix, out = tmp_path / "moved" / "stores", tmp_path / "moved" / "cat"
    rewrite_manifest(prefix / "one" / "b", generated_at="2031-01-01T00:00:00+00:00")
    result = update(str(out))
    assert result.refresh.read == [str(prefix / "one" / "b")]
    # the pgstac Collections name the catalog's place: the kept lines would name the old one, so all is written
    assert str(tmp_path / "site") not in (out / "pgstac" / "collections.ndjson").read_text()
    updated = _every_file(out)
    shutil.rmtree(out)
    build([str(prefix)], out, progress=False, discover=True, **{**kw, "stores_root": str(prefix)})
    assert updated == _every_file(out)


def test_update_whose_changed_product_stops_the_api_outputs_writes_the_whole_catalog(sample, tmp_path, monkeypatch):
    prefix = _living_stores(sample, tmp_path / "stores")
    kw: dict = {"href_base": "https://h.example.org/s", "stores_root": str(prefix)}
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True, **kw)
    kept = out / "stac" / "one" / "a" / "collection.json"
    inode = kept.stat().st_ino
    rewrite_manifest(prefix / "one" / "b", generated_at="2031-01-01T00:00:00+00:00")
    # from now on every document names a path of this machine: a full build writes no STAC API outputs
    monkeypatch.setattr(geoparquet, "machine_paths", lambda catalog, documents=None: ["/here"])
    result = update(str(out))
    assert result.refresh.read == [str(prefix / "one" / "b")] and kept.stat().st_ino != inode
    assert not (out / "stac" / "api-items").exists() and not result.api_items
    updated = _every_file(out)
    shutil.rmtree(out)
    build([str(prefix)], out, progress=False, discover=True, **kw)
    assert updated == _every_file(out)


def test_update_to_object_storage_puts_only_the_changed_products_documents(sample, s3):
    for name in ("a", "b", "c"):
        s3.upload_tree(sample / "elevation", "living", f"part/{name}")
    options = s3.storage_options(anon=False)
    out = "s3://living/part-cat"
    build(["s3://living/part"], out, storage_options=options, progress=False, discover=True)
    changed = link_copy(sample / "elevation", sample.parent / "part-b")
    _drop_pyramid(changed, generated_at="2031-01-01T00:00:00+00:00")
    s3.upload_tree(changed, "living", "part/b")
    log = _ServerLog("PUT", "DELETE")
    logging.getLogger("werkzeug").addHandler(log)
    try:
        with count_requests() as counter:
            result = update(out, storage_options=options)
        puts = [key.removeprefix("part-cat/") for op, key in log.lines if op == "PUT"]
        log.lines.clear()
        record = s3.client().get_object(Bucket="living", Key=f"part-cat/{RECORD_NAME}")["Body"].read()
        again = build(["s3://living/part"], out, storage_options=options, progress=False, discover=True)
        rewritten = [key for op, key in log.lines if op == "PUT"]
    finally:
        logging.getLogger("werkzeug").removeHandler(log)
    assert result.refresh.read == ["s3://living/part/b"]
    # the build record, the two pgstac ndjson files, and the lock read back before it is deleted (still this run's?)
    assert counter.summary()["GET other"] == 4
    assert puts and all(
        key.startswith(("stac/part/b/", "stac/api-items/b.", "stac/api-collections/b.json", "pgstac/"))
        or key in ("stac/part/catalog.json", "stac/catalog.json", "catalog.yaml", "catalog_v2.yaml", RECORD_NAME)
        for key in puts
    ), puts
    assert "stac/part/b/collection.json" in puts and puts[-1] == RECORD_NAME
    keys = _keys(s3, "part-cat/")  # b's overview Items and its files of two key shapes are gone
    assert {k.split("/")[3] for k in keys if k.startswith("stac/part/b/b-o")} == {"b-o8"}
    assert "stac/api-items/b.parquet" in keys and not [k for k in keys if k.startswith("stac/api-items/b.")][1:]
    assert result.uploaded.deleted > 0
    assert not any(key.startswith("stac/part/a/") for key in puts)
    # a full build of the same stores finds every document, the record included, as the update left it
    assert (
        rewritten == []
        and record == s3.client().get_object(Bucket="living", Key=f"part-cat/{RECORD_NAME}")["Body"].read()
    )
    assert asdict(again.uploaded) == {
        "written": 0,
        "unchanged": result.uploaded.written + result.uploaded.unchanged,
        "deleted": 0,
    }


def test_update_of_a_given_root_that_is_gone_drops_it_only_when_asked(sample, tmp_path, capsys):
    a = link_copy(sample / "elevation", tmp_path / "a")
    b = link_copy(sample / "elevation", tmp_path / "b")
    out = tmp_path / "cat"
    build([str(a), str(b)], out, progress=False)
    before = _stats(out)
    shutil.rmtree(b)
    capsys.readouterr()
    assert main(["update", str(out)]) == 2  # missing is not deleted: the catalog stays as it is
    assert capsys.readouterr().err == (
        f"error: {b}: not found (its listing shows no store); the previous documents stay; "
        "pass --remove-missing to drop it\n"
    )
    assert _stats(out) == before
    result = update(str(out), remove_missing=True)
    assert result.refresh.removed == [str(b)] and result.refresh.unchanged == 1
    assert [s.root for s in result.summaries] == [str(a)]
    assert json.loads((out / RECORD_NAME).read_text())["roots"] == ["../a"]  # the next update asks no more
    assert update(str(out)).written is False


def test_update_without_a_build_record_is_an_error(tmp_path, capsys):
    assert main(["update", str(tmp_path)]) == 2
    assert f"{tmp_path}: no {RECORD_NAME}; build the catalog there first" in capsys.readouterr().err


def test_scheduler_reads_on_the_cluster_and_builds_the_same(sample, tmp_path):
    prefix = tmp_path / "stores"
    for name in ("a", "b", "c"):
        link_copy(sample / "elevation", prefix / name / "store")
    kw = {"href_base": "https://h.example.org/s", "stores_root": str(prefix)}  # publishable: an update keeps a and c
    here = build([str(prefix)], tmp_path / "here", progress=False, discover=True, **kw)
    with local_cluster() as client:
        there = build(
            [str(prefix)], tmp_path / "there", progress=False, discover=True, scheduler=client.scheduler.address, **kw
        )
        assert _tree(tmp_path / "here") == _tree(tmp_path / "there")
        assert [s.to_dict() for s in here.summaries] == [s.to_dict() for s in there.summaries]
        before = _stats(tmp_path / "there")
        rewrite_manifest(prefix / "b" / "store", generated_at="2033-03-03T00:00:00+00:00")
        updated = update(str(tmp_path / "there"), scheduler=client.scheduler.address)
    assert updated.refresh.read == [str(prefix / "b" / "store")]
    after = _stats(tmp_path / "there")
    # the products the cluster found unchanged kept their documents; b's were written again
    kept = [name for name in before if name.startswith(("stac/a-store-", "stac/c-store-")) and name.endswith(".json")]
    assert len(kept) == 8 and all(before[name] == after[name] for name in kept)
    assert before["stac/b-store-moczarr_sample/collection.json"] != after["stac/b-store-moczarr_sample/collection.json"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fresh = build([str(prefix)], tmp_path / "fresh", progress=False, discover=True, **kw)
    assert [s.to_dict() for s in updated.summaries] == [s.to_dict() for s in fresh.summaries]
    assert _tree(tmp_path / "there") == _tree(tmp_path / "fresh")
