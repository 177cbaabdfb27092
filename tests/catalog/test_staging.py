"""Putting a staged catalog in place (moczarr_intake.living.staging)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from moczarr_intake.living import staging
from moczarr_intake.living.staging import exchange, move_in, order, staging_folders, sweep, switch

LAST = ["stac/catalog.json", "catalog.yaml"]


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def _write(folder: Path, files: dict[str, str]) -> Path:
    for key, text in files.items():
        (folder / key).parent.mkdir(parents=True, exist_ok=True)
        (folder / key).write_text(text)
    return folder


def _catalogs(tmp_path: Path) -> tuple[Path, Path]:
    """A staged generation and the catalog it replaces: one document changed, one gone, one added, a user's file."""
    staged = _write(
        tmp_path / "staged", {"stac/catalog.json": "new root", "stac/new/c.json": "new", "catalog.yaml": "y2"}
    )
    out = _write(
        tmp_path / "out",
        {"stac/catalog.json": "old root", "stac/gone/items/a.json": "old", "catalog.yaml": "y1", "notes.txt": "mine"},
    )
    return staged, out


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


def test_switch_makes_the_new_generation_from_links_and_staged_files_and_never_edits_the_previous(tmp_path):
    staged, out = _catalogs(tmp_path)
    os.chmod(out, 0o750)
    old_root = tmp_path / "old-root-link"
    os.link(out / "stac" / "catalog.json", old_root)  # the previous generation's file, as a reader holds it
    notes = (out / "notes.txt").stat().st_ino

    assert switch(staged, out, last=LAST, scope=["stac", "catalog.yaml"]) is None

    assert _tree(out) == {
        "catalog.yaml": "y2",
        "notes.txt": "mine",
        "stac/catalog.json": "new root",
        "stac/new/c.json": "new",
    }
    assert not (out / "stac" / "gone").exists()  # the folders the stale files leave empty go too
    assert old_root.read_text() == "old root"  # replaced by a new file, not written over
    assert (out / "notes.txt").stat().st_ino == notes  # a file no build owns: the same file, linked
    assert stat.S_IMODE(out.stat().st_mode) == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "old-root-link",
        "out",
    ]  # staged became out; the previous removed


def test_a_first_switch_renames_the_staged_folder_in_with_the_default_permissions(tmp_path):
    staged = _write(tmp_path / "staged", {"stac/catalog.json": "root", "catalog.yaml": "y"})
    os.chmod(staged, 0o700)
    out = tmp_path / "out"

    assert switch(staged, out, last=LAST, scope=["stac", "catalog.yaml"]) is None

    assert _tree(out) == {"catalog.yaml": "y", "stac/catalog.json": "root"}
    umask = os.umask(0o22)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_switch_keeps_a_file_placed_in_the_catalog_while_it_was_writing(tmp_path, monkeypatch):
    staged, out = _catalogs(tmp_path)

    def pause(step: str) -> None:  # the test hook, at the moment the previous generation is linked
        if step == "linked":
            (out / "late.txt").write_text("placed meanwhile")

    monkeypatch.setattr(staging, "pause", pause)
    switch(staged, out, last=LAST, scope=["stac", "catalog.yaml"])

    assert (out / "late.txt").read_text() == "placed meanwhile"


def test_switch_exchanges_the_target_of_a_symlinked_catalog(tmp_path):
    staged, real = _catalogs(tmp_path)
    out = tmp_path / "link"
    out.symlink_to(real)

    switch(staged, out, last=LAST, scope=["stac", "catalog.yaml"])

    assert out.is_symlink() and os.readlink(out) == str(real)
    assert _tree(out)["stac/catalog.json"] == "new root"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "out"]


def test_switch_places_file_by_file_where_the_system_cannot_exchange_and_says_so_once(tmp_path, monkeypatch):
    staged, out = _catalogs(tmp_path)
    monkeypatch.setattr(staging, "_swap_function", lambda: None)
    called = []

    note = switch(staged, out, last=LAST, scope=["stac", "catalog.yaml"], before_in_place=lambda: called.append(1))

    assert note is not None and note.startswith(f"note: {out}: placed file by file (this system (")
    assert called == [1]
    assert _tree(out) == {
        "catalog.yaml": "y2",
        "notes.txt": "mine",
        "stac/catalog.json": "new root",
        "stac/new/c.json": "new",
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "staged"]


def test_exchange_swaps_two_folders_and_refuses_across_filesystems_changing_nothing(tmp_path):
    a = _write(tmp_path / "a", {"f": "a"})
    b = _write(tmp_path / "b", {"f": "b"})
    assert exchange(a, b)
    assert (a / "f").read_text() == "b" and (b / "f").read_text() == "a"
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second filesystem to try an exchange across")
    with tempfile.TemporaryDirectory(dir=shm) as other:
        _write(Path(other), {"f": "other"})
        assert not exchange(Path(other), a)  # EXDEV
        assert (Path(other) / "f").read_text() == "other" and (a / "f").read_text() == "b"


def test_sweep_removes_what_runs_left_beside_the_target_of_a_symlinked_catalog(tmp_path):
    (tmp_path / "data" / "cat").mkdir(parents=True)
    (tmp_path / "data" / ".cat.abcd1234.tmp").mkdir()
    (tmp_path / "cat-link").symlink_to(tmp_path / "data" / "cat")

    assert sweep(tmp_path / "cat-link") == [tmp_path / "data" / ".cat.abcd1234.tmp"]

    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["cat"]
