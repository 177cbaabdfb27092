"""``verify_store`` on real stores, each doctored one way: exactly the matching finding, and nothing else wrong.

Every damaged store is a copy (``copy_fixture``) of a zagg-written store or of
the bundled sample; the originals are never touched.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
import zstandard

import moczarr
from moczarr import Finding, VerifyReport, verify_store
from moczarr.errors import DebrisWarning, WindowError
from moczarr.testing import write_sample_store
from moczarr.verify import combined_digest, content_digest
from tests.helpers import fixture_path, load_json, set_attrs, write_json

ZAGG_STORES = [
    "single_8",
    "single_ragged",
    "versioned",
    "windowed",
    "pyramid",
    "pyramid_windows",
    "pyramid_temporal",
    "column",
    "multi",
]


@pytest.fixture
def zagg(copy_fixture):
    """A writable copy of a zagg-written store, and its golden record: the one place stores are found."""

    def make(name: str) -> tuple[Path, dict]:
        return copy_fixture(f"zagg/{name}/store"), load_json(fixture_path(f"zagg/{name}/golden.json"))

    return make


def problems(report: VerifyReport) -> list[tuple[str, str, str]]:
    """``(kind, severity, object)`` of every error and warning (info findings are tallies)."""
    return [(f.kind, f.severity, f.object) for f in report.findings if f.severity != "info"]


def leaf_dir(store: Path, decimal: str, window: str | None = None) -> Path:
    head = 2 if decimal.startswith("-") else 1
    parts = [decimal[:head], *decimal[head:]]
    name = f"{decimal}.zarr" if window is None else f"{decimal}_{window}.zarr"
    return store.joinpath(*parts, name)


def first_leaf(store: Path) -> Path:
    return sorted(
        p for p in store.rglob("*.zarr") if p.name[0].isdigit() and "_" not in p.name and ".pyramid" not in p.name
    )[0]


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- clean stores ------------------------------------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize("name", ZAGG_STORES)
@pytest.mark.parametrize("deep", [False, True])
def test_clean_zagg_store_verifies(zagg, name, deep):
    store, golden = zagg(name)
    report = verify_store(store, deep=deep)
    assert report.ok, problems(report)
    products = golden["products"].values()
    assert report.counts["leaves_stamped"] == sum(p["n_leaves"] for p in products)
    assert report.counts["debris"] == sum(len(p["debris_leaves"]) for p in products)
    assert [k for k, _, _ in problems(report)] == ["debris"] * report.counts["debris"]
    if deep:
        assert report.counts["arrays_hashed"] > 0
        assert "content-unrecorded" not in report.kinds()  # zagg 0.61 records hashes in every stamp


def test_clean_sample_store_verifies(tmp_path):
    root = write_sample_store(tmp_path / "s")
    report = verify_store(root, deep=True)
    assert report.ok and problems(report) == []
    sample = load_json(Path(root) / "sample.json")
    assert report.counts["products"] == 2
    assert report.counts["overviews"] > 0 and report.counts["arrays_hashed"] > 0
    products = sample["products"]
    windowed = sum(len(w["leaves"]) for w in products["elevation_yearly"]["windows"].values())
    assert report.counts["leaves_stamped"] == len(products["elevation"]["leaves"]) + windowed


@pytest.mark.layers
def test_report_to_dict_is_json(zagg):
    store, _ = zagg("single_ragged")
    report = verify_store(store)
    doc = json.loads(json.dumps(report.to_dict()))
    assert doc["ok"] is True and doc["deep"] is False
    assert doc["severities"]["warning"] == 1 and doc["counts"]["debris"] == 1
    debris = [f for f in doc["findings"] if f["kind"] == "debris"]
    assert debris == [Finding("debris", "warning", "1/1/1/1/1/1/3/1111113.zarr", debris[0]["message"]).to_dict()]


@pytest.mark.layers
def test_verify_never_writes(zagg):
    store, _ = zagg("versioned")
    before = files(store)
    verify_store(store, deep=True)
    assert files(store) == before


# -- leaves ------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_debris_leaf(zagg):
    store, _ = zagg("single_8")
    src = leaf_dir(store, "1111111")
    debris = leaf_dir(store, "1111131")
    shutil.copytree(src, debris)
    set_attrs(debris / "zarr.json", lambda a: a.clear())
    report = verify_store(store)
    assert problems(report) == [("debris", "warning", "1/1/1/1/1/3/1/1111131.zarr")]
    assert report.ok and report.counts["debris"] == 1


@pytest.mark.layers
def test_dangling_pointer(zagg):
    store, _ = zagg("versioned")
    leaf = leaf_dir(store, "1111123")
    current = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]["current"]
    shutil.rmtree(leaf / current)
    with pytest.warns(DebrisWarning, match="1111123"):
        moczarr.open_hive(store).load()  # the reader skips the leaf at open, with a warning ...
    report = verify_store(store)  # ... the verifier calls it an error: committed data is gone
    assert problems(report) == [("version-missing", "error", "1/1/1/1/1/2/3/1111123.zarr")]
    assert not report.ok and report.counts["leaves_stamped"] == 7


@pytest.mark.layers
def test_unstamped_version_with_arrays_intact(zagg):
    store, _ = zagg("versioned")
    leaf = leaf_dir(store, "1111122")
    current = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]["current"]
    set_attrs(leaf / current / "zarr.json", lambda a: a.clear())
    ds = moczarr.open_hive(store)  # served: the open never reads the version's stamp
    assert "1111122" in ds.attrs["morton_hive"]["leaves"]
    report = verify_store(store)
    assert problems(report) == [("version-unstamped", "error", f"1/1/1/1/1/2/2/1111122.zarr/{current}")]
    assert "intact" in report.findings[[f.kind for f in report.findings].index("version-unstamped")].message


@pytest.mark.layers
def test_superseded_versions_are_reclaimable_info(zagg):
    store, _ = zagg("versioned")
    report = verify_store(store)
    superseded = sorted(f.object for f in report.findings if f.kind == "superseded-version")
    on_disk = []
    for leaf in store.rglob("*.zarr"):
        current = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]["current"]
        on_disk += [
            str((leaf / p.name).relative_to(store))
            for p in leaf.iterdir()
            if p.name.startswith("run-") and p.name != current
        ]
    assert superseded == sorted(on_disk) and len(superseded) == 3
    assert {f.severity for f in report.findings if f.kind == "superseded-version"} == {"info"}


@pytest.mark.layers
def test_bad_pointer(zagg):
    store, _ = zagg("versioned")
    set_attrs(leaf_dir(store, "1111144") / "zarr.json", lambda a: a["morton_hive_commit"].update(current="../run-x"))
    report = verify_store(store)
    assert problems(report) == [("bad-pointer", "error", "1/1/1/1/1/4/4/1111144.zarr")]


# -- coverage ----------------------------------------------------------------------------------------
@pytest.mark.layers
def test_stale_root_moc(zagg):
    store, _ = zagg("single_8")
    moc = load_json(store / "coverage.moc")
    moc["ranges"] = [r for r in moc["ranges"] if r != ["1111144", "1111144"]]
    write_json(store / "coverage.moc", moc)
    report = verify_store(store)
    assert problems(report) == [("root-moc-stale", "warning", "1/1/1/1/1/4/4/1111144.zarr")]


@pytest.mark.layers
def test_root_moc_naming_a_missing_leaf(zagg):
    store, _ = zagg("single_8")
    shutil.rmtree(leaf_dir(store, "1111112"))
    report = verify_store(store)
    assert problems(report) == [("moc-shard-without-leaf", "warning", "1/1/1/1/1/1/2/1111112.zarr")]


@pytest.mark.layers
def test_box_that_misses_the_bitmap(zagg):
    store, _ = zagg("single_8")
    leaf = leaf_dir(store, "1111124")
    occupied = moczarr.read_coverage_bitmap(store, "1111124")
    assert occupied.size > 1
    # a box of one occupied cell: still inside the shard, so only the bitmap read reveals it
    one = moczarr.ids.to_decimal(occupied[0])
    set_attrs(leaf / "zarr.json", lambda a: a["morton_hive_commit"]["coverage"].update(box=[one, None, None, None]))
    assert verify_store(store).ok
    report = verify_store(store, deep=True)
    assert problems(report) == [("box-misses-bitmap", "error", "1/1/1/1/1/2/4/1111124.zarr")]


@pytest.mark.layers
def test_bitmap_that_disagrees_with_count(zagg):
    store, _ = zagg("single_8")
    leaf = leaf_dir(store, "1111124")
    raw = zstandard.ZstdDecompressor().decompress((leaf / "coverage.moc").read_bytes())
    bits = np.unpackbits(np.frombuffer(raw, np.uint8))
    bits[np.flatnonzero(bits)[0]] = 0  # one occupied cell the bitmap no longer claims
    (leaf / "coverage.moc").write_bytes(zstandard.ZstdCompressor(level=3).compress(np.packbits(bits).tobytes()))
    report = verify_store(store, deep=True)
    assert problems(report) == [("bitmap-count-mismatch", "error", "1/1/1/1/1/2/4/1111124.zarr")]


# -- content -----------------------------------------------------------------------------------------
@pytest.mark.layers
def test_altered_chunk_bytes(zagg):
    store, _ = zagg("single_8")
    chunk = leaf_dir(store, "1111114") / "8" / "h_max" / "c" / "0"
    data = bytearray(chunk.read_bytes())
    data[5] ^= 0x40
    chunk.write_bytes(bytes(data))
    assert verify_store(store).ok  # a shallow verify reads no chunk
    report = verify_store(store, deep=True)
    assert problems(report) == [("content-mismatch", "error", "1/1/1/1/1/1/4/1111114.zarr/8/h_max")]


@pytest.mark.layers
def test_deleted_chunk(zagg):
    store, _ = zagg("versioned")
    leaf = leaf_dir(store, "1111121")
    current = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]["current"]
    (leaf / current / "8" / "h_min" / "c" / "0").unlink()
    report = verify_store(store, deep=True)
    assert problems(report) == [("content-mismatch", "error", f"1/1/1/1/1/2/1/1111121.zarr/{current}/8/h_min")]
    assert "0 of 1 chunk objects" in next(f.message for f in report.findings if f.kind == "content-mismatch")


@pytest.mark.layers
def test_replaced_chunk_in_sharded_leaf(zagg):
    store, _ = zagg("column")
    a, b = sorted(p for p in store.rglob("*.zarr") if p.name[0].isdigit())[:2]
    shutil.copyfile(b / "8" / "count" / "c" / "0", a / "8" / "count" / "c" / "0")
    report = verify_store(store, deep=True)
    kinds = {k for k, _, _ in problems(report)}
    assert ("content-mismatch", "error", f"{a.relative_to(store)}/8/count") in problems(report)
    assert kinds <= {"content-mismatch", "bitmap-count-mismatch", "cells-with-data-mismatch"}


# -- D20 sidecars ------------------------------------------------------------------------------------
LEAF = "1111114"
LEAF_PATH = "1/1/1/1/1/1/4/1111114.zarr"
NODE = "1/1/1/1/1/1/4"


def drop_stamp_hashes(store: Path) -> None:
    """The leaf's stamp as an older writer wrote it: no content_hashes (its D20 record keeps them)."""
    set_attrs(leaf_dir(store, LEAF) / "zarr.json", lambda a: a["morton_hive_commit"].pop("content_hashes"))


def edit_sidecar(store: Path, name: str, update) -> None:
    path = store / NODE / name
    doc = load_json(path)
    update(doc)
    write_json(path, doc)


@pytest.mark.layers
def test_d20_record_verifies_a_leaf_whose_stamp_records_no_hashes(zagg):
    store, _ = zagg("single_8")
    drop_stamp_hashes(store)
    report = verify_store(store, deep=True)
    assert problems(report) == [] and "content-unrecorded" not in report.kinds()
    assert report.counts["arrays_verified_by_record"] == len(
        load_json(store / NODE / "stats.json")["content_hashes"]["arrays"]
    )


@pytest.mark.layers
def test_d20_record_catches_altered_content_the_stamp_cannot(zagg):
    store, _ = zagg("single_8")
    drop_stamp_hashes(store)
    chunk = leaf_dir(store, LEAF) / "8" / "h_max" / "c" / "0"
    data = bytearray(chunk.read_bytes())
    data[5] ^= 0x40
    chunk.write_bytes(bytes(data))
    report = verify_store(store, deep=True)
    assert problems(report) == [("sidecar-content-mismatch", "warning", f"{NODE}/stats.json")]
    assert "8/h_max" in report.findings[[f.kind for f in report.findings].index("sidecar-content-mismatch")].message
    assert report.ok  # fail-open: a record may be left by an earlier run, so it cannot prove tampering


@pytest.mark.layers
@pytest.mark.parametrize(
    "damage, kind",
    [
        (lambda d: d["content_hashes"]["arrays"].update({"8/h_max": "0" * 64}), "sidecar-stale"),
        (lambda d: d.update(shard_key=d["shard_key"] + 1), "sidecar-foreign"),
        (lambda d: d.update(window="2019"), "sidecar-foreign"),
        (lambda d: d.update(schema_version=2), "sidecar-unsupported"),
        (lambda d: d.update(granules_sha256="f" * 64), "granules-unmatched"),
    ],
    ids=["hashes-of-another-run", "other-shard", "other-window", "schema-2", "granules-of-another-run"],
)
def test_damaged_d20_record_is_a_warning(zagg, damage, kind):
    store, _ = zagg("single_8")
    edit_sidecar(store, "stats.json", damage)
    report = verify_store(store, deep=True)
    where = f"{NODE}/granules.json" if kind.startswith("granules") else f"{NODE}/stats.json"
    assert problems(report) == [(kind, "warning", where)]
    assert report.ok and verify_store(store).ok  # the shallow verify reads no sidecar


@pytest.mark.layers
def test_unreadable_sidecars(zagg):
    store, _ = zagg("single_8")
    (store / NODE / "stats.json").write_bytes(b"{not json")
    (store / NODE / "granules.json").write_text("[1, 2]")
    report = verify_store(store, deep=True)
    assert sorted(problems(report)) == [
        ("sidecar-unreadable", "warning", f"{NODE}/granules.json"),
        ("sidecar-unreadable", "warning", f"{NODE}/stats.json"),
    ]


@pytest.mark.layers
def test_granule_list_that_does_not_hash_to_itself(zagg):
    store, _ = zagg("single_8")
    edit_sidecar(store, "granules.json", lambda d: d["granule_ids"].append("ATL06_forged.h5"))
    assert problems(verify_store(store, deep=True)) == [("granules-hash-mismatch", "warning", f"{NODE}/granules.json")]


@pytest.mark.layers
def test_stamp_granule_count_against_the_trusted_list(zagg):
    store, _ = zagg("single_8")
    names = load_json(store / NODE / "granules.json")["granule_ids"]
    set_attrs(
        leaf_dir(store, LEAF) / "zarr.json", lambda a: a["morton_hive_commit"].update(granule_count=len(names) + 3)
    )
    assert problems(verify_store(store, deep=True)) == [("granule-count-mismatch", "warning", LEAF_PATH)]


@pytest.mark.layers
def test_absent_sidecars_are_unverifiable_not_findings(zagg):
    store, _ = zagg("single_8")
    for sidecar in store.rglob("*.json"):
        if sidecar.name in ("stats.json", "granules.json"):
            sidecar.unlink()
    report = verify_store(store, deep=True)
    assert report.ok and problems(report) == []


@pytest.mark.conformance("pins the FORMAT.md §8.6 digests of the shared spec/versioned store")
def test_hashes_match_the_writer_goldens():
    # FORMAT.md §8.6 goldens of spec/versioned (= spec/minimal): recompute from the decoded arrays
    import zarr

    root = fixture_path("spec/versioned")
    leaf = root / "1/1/2/1/3/11213.zarr"
    stamp = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]
    recorded = stamp["content_hashes"]["arrays"]
    got = {k: content_digest(zarr.open_array(str(leaf / stamp["current"] / k), mode="r")[...]) for k in recorded}
    assert got == recorded and got["6/count"].startswith("29458cad")
    assert combined_digest(list(got.values())) == stamp["content_hashes"]["combined"]


def test_content_digest_vlen_rule():
    cells = np.array([b"ab", None, b""], dtype=object)
    import hashlib

    expect = hashlib.sha256(b"\x02\x00\x00\x00\x00\x00\x00\x00ab" + b"\x00" * 16).hexdigest()
    assert content_digest(cells) == expect
    with pytest.raises(TypeError):
        content_digest(np.array([1.5], dtype=object))


@pytest.mark.layers
def test_deep_reads_each_chunk_once_and_shallow_none(zagg):
    store, _ = zagg("single_8")
    chunks = [p for p in store.rglob("*") if p.is_file() and p.parent.name == "c"]
    with moczarr.count_requests() as shallow:
        verify_store(store)
    assert shallow.kind("chunk:data") == 0 and shallow.kind("chunk:morton") == 0
    with moczarr.count_requests() as deep:
        verify_store(store, deep=True)
    assert deep.kind("chunk:data") + deep.kind("chunk:morton") == len(chunks)


# -- pyramids ----------------------------------------------------------------------------------------
def overview(store: Path, node: str) -> Path:
    return (
        store.joinpath(*node, "all.zarr")
        if not node.startswith("-")
        else store.joinpath(node[:2], *node[2:], "all.zarr")
    )


@pytest.mark.layers
def test_off_order_overview_provenance(zagg):
    store, _ = zagg("pyramid")
    obj = overview(store, "11111")
    set_attrs(obj / "zarr.json", lambda a: a["zagg_overview"].update(cell_order=5))
    report = verify_store(store)
    assert problems(report) == [("overview-refused", "error", "1/1/1/1/1/all.zarr")]


@pytest.mark.layers
def test_uninterpretable_overview_is_dropped(zagg):
    store, _ = zagg("pyramid")
    set_attrs(overview(store, "111") / "zarr.json", lambda a: a.update(role="mystery"))
    report = verify_store(store)
    # the only order-2 object is dropped, so the level also has nothing the reader admits
    assert problems(report) == [("overview-dropped", "warning", "1/1/1/all.zarr")]


@pytest.mark.layers
def test_declared_level_never_swept(zagg):
    store, _ = zagg("pyramid")
    shutil.rmtree(overview(store, "111"))
    report = verify_store(store)
    assert [(k, s) for k, s, _ in problems(report)] == [("level-unswept", "warning")]
    assert "o4" in next(f.message for f in report.findings if f.kind == "level-unswept")


@pytest.mark.layers
def test_column_whose_address_disagrees(zagg):
    store, _ = zagg("column")
    col = sorted(store.rglob("all.pyramid.zarr"))[0]
    set_attrs(col / "zarr.json", lambda a: a["zagg_column"].update(node="1111144"))
    report = verify_store(store)
    assert problems(report) == [("column-refused", "error", str(col.relative_to(store)))]


@pytest.mark.layers
def test_overview_content_checked_deep(zagg):
    store, _ = zagg("pyramid_windows")
    obj = sorted(store.rglob("2019.zarr"))[0]
    chunk = next(p for p in obj.rglob("*") if p.is_file() and p.parent.name == "c" and p.parent.parent.name == "h_max")
    data = bytearray(chunk.read_bytes())
    data[1] ^= 0x01
    chunk.write_bytes(bytes(data))
    report = verify_store(store, deep=True)
    assert problems(report) == [("content-mismatch", "error", str(chunk.parent.parent.relative_to(store)))]


# -- manifest, roster, windows -----------------------------------------------------------------------
@pytest.mark.layers
def test_one_bad_product_manifest_leaves_the_others_verified(zagg):
    store, golden = zagg("multi")
    doc = load_json(store / "atl06_pyramid" / "morton_hive.json")
    doc["cell_order"] = 3
    write_json(store / "atl06_pyramid" / "morton_hive.json", doc)
    report = verify_store(store)
    assert problems(report) == [("manifest-invalid", "error", "atl06_pyramid/morton_hive.json")]
    others = [p for n, p in golden["products"].items() if n != "atl06_pyramid"]
    assert report.counts["leaves_stamped"] == sum(p["n_leaves"] for p in others)


@pytest.mark.layers
def test_window_scopes_the_leaves(zagg):
    store, golden = zagg("windowed")
    report = verify_store(store, window="2020")
    (product,) = golden["products"].values()
    assert report.ok and report.counts["leaves_stamped"] == sum(1 for k in product["leaves"] if k.endswith("_2020"))
    with pytest.raises(WindowError):
        verify_store(store, window="all")


def test_not_a_store(tmp_path):
    (tmp_path / "empty").mkdir()
    report = verify_store(tmp_path / "empty")
    assert problems(report) == [("not-a-store", "error", "")]


def test_sample_store_lost_stamp(tmp_path):
    root = Path(write_sample_store(tmp_path / "s"))
    leaf = next(p for p in sorted((root / "elevation").rglob("*.zarr")) if p.name[0].isdigit())
    cells = moczarr.open_hive(root / "elevation").sizes["cells"]
    set_attrs(leaf / "zarr.json", lambda a: a.clear())
    assert moczarr.open_hive(root / "elevation").sizes["cells"] == cells - 16  # the reader skips it (the seed)
    report = verify_store(root)
    rel = str(leaf.relative_to(root))
    # the root MOC names its shard and the o6 overview counts its rows: one finding, an error, never debris
    assert problems(report) == [("stamp-lost", "error", rel)] and not report.ok
    message = report.findings[0].message
    assert "16 rows" in message and "coverage.moc" in message and "o6 overview" in message
    assert "safe to delete" not in message and "re-run the writer for shard" in message


# -- an unstamped prefix the store vouches for: a lost stamp, never debris ---------------------------
def lost(report: VerifyReport) -> Finding:
    (finding,) = [f for f in report.findings if f.kind == "stamp-lost"]
    assert finding.severity == "error" and "safe to delete" not in finding.message
    return finding


@pytest.mark.layers
@pytest.mark.parametrize("deep", [False, True])
def test_lost_stamp_vouched_by_moc_and_d20_record(zagg, deep):
    store, golden = zagg("single_8")
    (leaf_dir(store, LEAF) / "zarr.json").unlink()  # the stamp object gone, the arrays intact
    report = verify_store(store, deep=deep)
    assert problems(report) == [("stamp-lost", "error", LEAF_PATH)]  # and no moc-shard-without-leaf beside it
    assert not report.ok and report.counts["stamp_lost"] == 1 and report.counts["debris"] == 0
    message = lost(report).message
    cells = golden["products"]["."]["cells_per_leaf"]
    assert f"hides its {cells} rows" in message and "coverage.moc names shard 1111114" in message
    assert f"{NODE}/stats.json" in message and "re-run the writer for shard 1111114" in message


@pytest.mark.layers
def test_lost_stamp_vouched_by_the_moc_alone(zagg):
    store, _ = zagg("single_8")
    set_attrs(leaf_dir(store, LEAF) / "zarr.json", lambda a: a.clear())
    (store / NODE / "stats.json").unlink()
    message = lost(verify_store(store)).message
    assert "coverage.moc names shard 1111114" in message and "stats.json" not in message


@pytest.mark.layers
def test_lost_stamp_vouched_by_the_d20_record_alone(zagg):
    store, _ = zagg("single_8")
    set_attrs(leaf_dir(store, LEAF) / "zarr.json", lambda a: a.clear())
    moc = load_json(store / "coverage.moc")  # a stale root MOC that no longer names the shard
    assert ["1111114", "1111124"] in moc["ranges"]
    moc["ranges"][moc["ranges"].index(["1111114", "1111124"])] = ["1111121", "1111124"]
    write_json(store / "coverage.moc", moc)
    message = lost(verify_store(store)).message
    assert f"{NODE}/stats.json" in message and "coverage.moc" not in message
    (store / NODE / "stats.json").unlink()  # now nothing vouches for it: debris, and the old advice
    report = verify_store(store)
    assert problems(report) == [("debris", "warning", LEAF_PATH)] and report.ok
    assert "safe to delete" in report.findings[0].message


@pytest.mark.layers
def test_lost_stamp_vouched_by_an_overview(zagg):
    store, golden = zagg("pyramid_windows")
    leaf = leaf_dir(store, "1111111", "2020")
    set_attrs(leaf / "zarr.json", lambda a: a.clear())
    (store / "1/1/1/1/1/1/1/stats_2020.json").unlink()
    report = verify_store(store)
    # the shard's other windows are stamped, so the MOC vouches for no window of it; the 2020 overview does
    assert problems(report) == [("stamp-lost", "error", "1/1/1/1/1/1/1/1111111_2020.zarr")]
    (product,) = golden["products"].values()
    observations = product["leaves"]["1111111_2020"]["count"]
    assert f"overview 1/1/1/1/1/2020.zarr counts {observations} observations" in lost(report).message
    assert verify_store(store, window="2020").kinds()["stamp-lost"] == 1  # scoped to the window too


@pytest.mark.layers
def test_unstamped_window_nothing_vouches_for_is_debris(zagg):
    store, _ = zagg("windowed")
    leaf = leaf_dir(store, "1111111", "2020")
    set_attrs(leaf / "zarr.json", lambda a: a.clear())
    (store / "1/1/1/1/1/1/1/stats_2020.json").unlink()
    # the MOC names the shard for its stamped 2019 and 2021 leaves; no overview, no record: a torn write
    for report in (verify_store(store), verify_store(store, window="2020")):
        assert problems(report) == [("debris", "warning", "1/1/1/1/1/1/1/1111111_2020.zarr")]


@pytest.mark.layers
def test_versioned_leaf_whose_root_stamp_is_lost(zagg):
    store, _ = zagg("versioned")
    leaf = leaf_dir(store, "1111122")
    stamp = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]
    (leaf / "zarr.json").unlink()
    report = verify_store(store)
    assert problems(report) == [("stamp-lost", "error", "1/1/1/1/1/2/2/1111122.zarr")]
    message = lost(report).message
    assert f"from its stamped version {stamp['current']}" in message
    assert f"cells), {stamp['cells_with_data']} of them with data" in message  # from the version's own stamp


@pytest.mark.layers
def test_debris_beside_a_lost_stamp_keeps_its_advice(zagg):
    store, _ = zagg("single_8")
    debris = leaf_dir(store, "1111131")  # a shard the MOC does not name, no record, no overview
    shutil.copytree(leaf_dir(store, "1111111"), debris)
    set_attrs(debris / "zarr.json", lambda a: a.clear())
    set_attrs(leaf_dir(store, LEAF) / "zarr.json", lambda a: a.clear())
    report = verify_store(store)
    assert sorted(problems(report)) == [
        ("debris", "warning", "1/1/1/1/1/3/1/1111131.zarr"),
        ("stamp-lost", "error", LEAF_PATH),
    ]
    assert "safe to delete" in next(f.message for f in report.findings if f.kind == "debris")


@pytest.mark.layers
def test_cli_reports_a_lost_stamp(zagg):
    store, _ = zagg("single_8")
    (leaf_dir(store, LEAF) / "zarr.json").unlink()
    command = shutil.which("moczarr-catalog", path=str(Path(sys.executable).parent))
    assert command, "the moczarr-catalog console script is not installed beside this interpreter"
    plain, done = (
        subprocess.run(
            [sys.executable, command, "verify", str(store), "--no-progress", *flags],
            capture_output=True,
            text=True,
            timeout=600,
        )
        for flags in ([], ["--deep", "--json"])
    )
    assert plain.returncode == 1, plain.stderr
    assert f"ERROR   stamp-lost {LEAF_PATH}:" in plain.stdout and "safe to delete" not in plain.stdout
    assert done.returncode == 1, done.stderr
    (doc,) = json.loads(done.stdout)
    assert doc["deep"] is True and doc["ok"] is False and doc["counts"]["stamp_lost"] == 1
    assert [(f["kind"], f["severity"], f["object"]) for f in doc["findings"] if f["severity"] != "info"] == [
        ("stamp-lost", "error", LEAF_PATH)
    ]


# -- moraine pyramids --------------------------------------------------------------------------------
MORAINE = ["cpx_mean_v1", "pc_first_v1", "pc_int_mean_v1", "ras_decimate_v1_zarr2", "ras_mean_v1", "stack_decimate_v1"]


@pytest.mark.layers
@pytest.mark.parametrize("name", MORAINE)
def test_clean_moraine_pyramid_verifies(name):
    from moczarr.moraine.verify import verify_moraine

    report = verify_moraine(fixture_path(f"moraine/{name}"))
    assert report.ok and problems(report) == [] and report.counts["levels"] >= 7


@pytest.mark.layers
def test_point_cloud_without_rtree(copy_fixture):
    import xarray as xr

    from moczarr.moraine import read_moraine_rtree
    from moczarr.moraine.verify import verify_moraine

    stored = read_moraine_rtree(fixture_path("moraine/pc_first_v1"))
    copy = copy_fixture("moraine/pc_first_v1")
    shutil.rmtree(copy / "rtree.zarr")
    before = files(copy)
    built = read_moraine_rtree(copy)
    assert files(copy) == before  # built in memory, never written
    assert built.attrs == {**stored.attrs, "built": True} and stored.attrs["built"] is False
    xr.testing.assert_equal(built.drop_attrs(), stored.compute().drop_attrs())
    report = verify_moraine(copy)
    assert report.ok and problems(report) == []
    assert [(f.kind, f.object) for f in report.findings] == [("rtree-absent", "rtree.zarr")]


def test_build_rtree_layout():
    from moczarr.moraine.rtree import build_rtree

    boxes = build_rtree([0, 1, 5, 6, 9], [0, 2, 4, 3, 1], page_size=2)
    # 3 pages -> 4 heap leaves (the last padding), 7 nodes; node 0 the union of everything
    expect = np.array(
        [[0, 0, 9, 4], [0, 0, 6, 4], [9, 1, 9, 1], [0, 0, 1, 2], [5, 3, 6, 4], [9, 1, 9, 1], [np.nan] * 4]
    )
    np.testing.assert_array_equal(boxes, expect)
    assert build_rtree([], []).shape == (0, 4)
    with pytest.raises(ValueError):
        build_rtree([1.0], [1.0], page_size=0)


@pytest.mark.layers
def test_rtree_that_disagrees_with_the_points(copy_fixture):
    import zarr

    from moczarr.moraine.verify import verify_moraine

    copy = copy_fixture("moraine/pc_int_mean_v1")
    arr = zarr.open_array(str(copy / "rtree.zarr"), mode="r+")
    arr[7] = [0.0, 0.0, 1.0, 1.0]  # a leaf page box that no longer bounds its points
    report = verify_moraine(copy)
    assert problems(report) == [("rtree-mismatch", "error", "rtree.zarr")]


@pytest.mark.layers
def test_moraine_level_of_the_wrong_shape(copy_fixture):
    from moczarr.moraine.verify import verify_moraine

    copy = copy_fixture("moraine/ras_mean_v1")
    meta = load_json(copy / "3.zarr" / "zarr.json")
    meta["shape"] = [meta["shape"][0] + 1, meta["shape"][1]]
    write_json(copy / "3.zarr" / "zarr.json", meta)
    report = verify_moraine(copy)
    assert problems(report) == [("moraine-invalid", "error", "3.zarr")]


@pytest.mark.layers
def test_moraine_index_out_of_range(copy_fixture):
    import zarr

    from moczarr.moraine.verify import verify_moraine

    copy = copy_fixture("moraine/pc_first_v1")
    arr = zarr.open_array(str(copy / "idx_2.zarr"), mode="r+")
    arr[0, 0] = 3000  # one past the last point
    report = verify_moraine(copy)
    assert problems(report) == [("index-out-of-range", "error", "idx_2.zarr")]


@pytest.mark.layers
def test_moraine_marker_too_new(copy_fixture):
    from moczarr.moraine.verify import verify_moraine

    copy = copy_fixture("moraine/ras_mean_v1")
    set_attrs(copy / "0.zarr" / "zarr.json", lambda a: a["moraine_pyramid"].update(version=99))
    assert problems(verify_moraine(copy)) == [("marker-unsupported", "error", "0.zarr")]


# -- the CLI -----------------------------------------------------------------------------------------
@pytest.mark.layers
def test_cli_exit_status_and_output(zagg, capsys):
    from moczarr_intake.cli import main

    clean, _ = zagg("single_8")
    damaged, _ = zagg("versioned")
    leaf = leaf_dir(damaged, "1111144")
    shutil.rmtree(leaf / load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]["current"])
    assert main(["verify", str(clean), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "OK - 0 errors" in out and "leaves_stamped" in out
    assert main(["verify", str(clean), str(damaged), "--deep", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "ERROR   version-missing 1/1/1/1/1/4/4/1111144.zarr:" in out and "FAILED - 1 errors" in out


@pytest.mark.layers
def test_cli_json_covers_moraine_and_hive(zagg, capsys):
    from moczarr_intake.cli import main

    store, _ = zagg("single_ragged")
    pyramid = fixture_path("moraine/pc_int_legacy_090")
    assert main(["verify", str(store), str(pyramid), "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [d["ok"] for d in docs] == [True, True]
    assert {f["kind"] for f in docs[0]["findings"]} == {"debris", "leaves-stamped"}
    assert {f["kind"] for f in docs[1]["findings"]} == {"marker-absent", "bounds-mismatch", "rtree-absent"}


@pytest.mark.layers
def test_cli_bad_usage_is_2(zagg, capsys):
    from moczarr_intake.cli import main

    store, _ = zagg("windowed")
    assert main(["verify", str(store), "--window", "all", "--no-progress"]) == 2
    assert "reserved all-time token" in capsys.readouterr().err
    assert main(["verify", str(store.parent / "no-such-root"), "--no-progress"]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["verify"])
    assert exc.value.code == 2


@pytest.mark.layers
def test_every_bad_product_manifest_is_reported(zagg):
    store, _ = zagg("multi")
    for name in ("atl06", "atl06_column"):
        (store / name / "morton_hive.json").write_text("{not json")
    report = verify_store(store)
    assert problems(report) == [
        ("manifest-invalid", "error", "atl06/morton_hive.json"),
        ("manifest-invalid", "error", "atl06_column/morton_hive.json"),
    ]
    assert report.counts["products"] == 3


@pytest.mark.layers
def test_truncated_chunk_is_unreadable(zagg):
    store, _ = zagg("single_8")
    chunk = leaf_dir(store, "1111112") / "8" / "h_min" / "c" / "0"
    chunk.write_bytes(chunk.read_bytes()[:7])
    report = verify_store(store, deep=True)
    assert problems(report) == [("chunk-unreadable", "error", "1/1/1/1/1/1/2/1111112.zarr/8/h_min")]


@pytest.mark.layers
def test_array_recorded_but_gone(zagg):
    store, _ = zagg("single_8")
    shutil.rmtree(leaf_dir(store, "1111121") / "8" / "h_q25")
    assert verify_store(store).ok
    report = verify_store(store, deep=True)
    assert problems(report) == [("content-array-missing", "error", "1/1/1/1/1/2/1/1111121.zarr/8/h_q25")]


@pytest.mark.layers
def test_malformed_root_moc(zagg):
    store, _ = zagg("pyramid")
    moc = load_json(store / "coverage.moc")
    moc["ranges"][0] = ["1111112", "1111111"]  # runs backwards
    write_json(store / "coverage.moc", moc)
    report = verify_store(store)
    assert problems(report)[0] == ("root-moc-malformed", "error", "coverage.moc")
    # without a usable MOC the declared overview levels cannot be enumerated
    assert {k for k, _, _ in problems(report)[1:]} == {"level-unenumerable"}


# -- over S3 (a real moto server on 127.0.0.1) -------------------------------------------------------
@pytest.mark.layers
def test_verify_over_s3_equals_local(zagg, s3_server):
    store, _ = zagg("versioned")
    leaf = leaf_dir(store, "1111111")
    current = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]["current"]
    (leaf / current / "8" / "h_max" / "c" / "0").unlink()
    shutil.rmtree(
        leaf_dir(store, "1111144")
        / load_json(leaf_dir(store, "1111144") / "zarr.json")["attributes"]["morton_hive_commit"]["current"]
    )
    local = verify_store(store, deep=True)
    bucket = s3_server.bucket("verify", public=True)
    prefix = f"versioned-{uuid.uuid4().hex[:8]}"
    s3_server.upload_tree(store, bucket, prefix)
    remote = verify_store(f"s3://{bucket}/{prefix}", deep=True, storage_options=s3_server.storage_options(anon=True))
    assert (
        sorted(problems(remote))
        == sorted(problems(local))
        == sorted(
            [
                ("content-mismatch", "error", f"1/1/1/1/1/1/1/1111111.zarr/{current}/8/h_max"),
                ("version-missing", "error", "1/1/1/1/1/4/4/1111144.zarr"),
            ]
        )
    )
    assert remote.counts == local.counts


@pytest.mark.layers
def test_legacy_leaf_without_its_data_group(zagg):
    store, _ = zagg("single_8")
    shutil.rmtree(leaf_dir(store, "1111122") / "8")
    report = verify_store(store, deep=True)
    assert problems(report) == [("data-group-missing", "error", "1/1/1/1/1/2/2/1111122.zarr/8")]


@pytest.mark.layers
def test_unparsable_overview_stamp(zagg):
    store, _ = zagg("pyramid")
    (overview(store, "11111") / "zarr.json").write_text("{torn")
    report = verify_store(store)
    # the openers drop an uninterpretable cache object (the seed), so the verifier reports what they drop
    assert problems(report) == [("overview-dropped", "warning", "1/1/1/1/1/all.zarr/zarr.json")]


@pytest.mark.layers
def test_moraine_stats_zarr_that_does_not_match(copy_fixture):
    from moczarr.moraine.verify import verify_moraine

    copy = copy_fixture("moraine/stack_decimate_v1")
    set_attrs(copy / "stats.zarr" / "zarr.json", lambda a: a.update(columns=["nan_fraction", "min"]))
    assert problems(verify_moraine(copy)) == [("stats-dropped", "warning", "stats.zarr")]


@pytest.mark.layers
def test_product_under_a_name_the_grammar_refuses(zagg):
    store, golden = zagg("multi")
    (store / "atl06_column").rename(store / "ATL06-Column")
    report = verify_store(store)
    assert problems(report) == [("product-name-invalid", "warning", "ATL06-Column/")]
    assert report.counts["products"] == len(golden["products"]) - 1


@pytest.mark.layers
def test_stamp_window_that_disagrees_with_the_name(zagg):
    store, _ = zagg("windowed")
    leaf = leaf_dir(store, "1111111", "2020")
    set_attrs(leaf / "zarr.json", lambda a: a["morton_hive_commit"].update(window="2019"))
    report = verify_store(store)
    assert problems(report) == [("stamp-window-mismatch", "warning", "1/1/1/1/1/1/1/1111111_2020.zarr")]
