"""Putting a staged catalog in place (moczarr_intake.living.staging)."""

from __future__ import annotations

from moczarr_intake.living.staging import move_in, order, staging_folders, sweep


def test_order_places_what_links_nothing_first_then_documents_deepest_first_then_the_roots():
    keys = [
        "catalog.yaml",
        "stac/catalog.json",
        "stac/p/collection.json",
        "stac/p/p-o8/p-o8.json",
        "stac/p/p-o8/thumb.png",
        "stac/api-items/p.parquet",
        "stac/api-collections/p.json",
        "pgstac/items.ndjson",
        "build-record.json",
    ]
    waves = order(keys, ["stac/catalog.json", "catalog.yaml", "catalog_v2.yaml", "build-record.json"])
    assert waves == [
        ["pgstac/items.ndjson", "stac/api-items/p.parquet", "stac/p/p-o8/thumb.png"],
        ["stac/p/p-o8/p-o8.json"],
        ["stac/api-collections/p.json", "stac/p/collection.json"],
        ["stac/catalog.json"],
        ["catalog.yaml"],
        ["build-record.json"],
    ]


def test_move_in_places_every_file_and_removes_only_stale_files_it_owns(tmp_path):
    staged, out = tmp_path / "staged", tmp_path / "out"
    (staged / "stac" / "new").mkdir(parents=True)
    (staged / "stac" / "catalog.json").write_text("new root")
    (staged / "stac" / "new" / "collection.json").write_text("new")
    (staged / "catalog.yaml").write_text("new yaml")
    (out / "stac" / "gone" / "items").mkdir(parents=True)
    (out / "stac" / "gone" / "items" / "a.json").write_text("old")
    (out / "stac" / "catalog.json").write_text("old root")
    (out / "catalog.yaml").write_text("old yaml")
    (out / "notes.txt").write_text("not ours")

    move_in(staged, out, last=["stac/catalog.json", "catalog.yaml"], scope=["stac", "catalog.yaml"])

    kept = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert kept == ["catalog.yaml", "notes.txt", "stac", "stac/catalog.json", "stac/new", "stac/new/collection.json"]
    assert (out / "catalog.yaml").read_text() == "new yaml"
    assert not [p for p in staged.rglob("*") if p.is_file()]


def test_move_in_removes_only_what_claims_owns(tmp_path):
    staged, out = tmp_path / "staged", tmp_path / "out"
    (staged / "stac" / "b").mkdir(parents=True)
    (staged / "stac" / "b" / "collection.json").write_text("new b")
    for name in ("a", "b"):
        (out / "stac" / name).mkdir(parents=True)
        (out / "stac" / name / "old-item.json").write_text("old")

    move_in(staged, out, last=[], scope=["stac"], claims=lambda key: key.startswith("stac/b/"))

    assert (out / "stac" / "a" / "old-item.json").exists()  # not this write's: kept
    assert sorted(p.name for p in (out / "stac" / "b").iterdir()) == ["collection.json"]


def test_sweep_removes_the_staging_folders_of_its_catalog_only(tmp_path):
    out = tmp_path / "cat"
    for name in (".cat.abcd_123.tmp", ".cat.x1y2z3w4.tmp", ".cat.2024.abcdefgh.tmp", ".cats.abcdefgh.tmp"):
        (tmp_path / name).mkdir()
    assert sorted(p.name for p in staging_folders(out)) == [".cat.abcd_123.tmp", ".cat.x1y2z3w4.tmp"]

    sweep(out)

    assert sorted(p.name for p in tmp_path.iterdir()) == [".cat.2024.abcdefgh.tmp", ".cats.abcdefgh.tmp"]
