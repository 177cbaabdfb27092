"""Putting a staged catalog in place (moczarr_intake.staging)."""

from __future__ import annotations

from moczarr_intake.staging import move_in, replace


def test_replace_swaps_a_folder_whole_and_removes_the_previous(tmp_path):
    new, dst = tmp_path / "new", tmp_path / "out" / "product"
    (new / "items").mkdir(parents=True)
    (new / "items" / "a.json").write_text("new")
    (dst / "gone").mkdir(parents=True)
    (dst / "gone" / "b.json").write_text("old")
    aside = tmp_path / "out" / ".product.old"

    replace(new, dst, aside)

    assert sorted(p.relative_to(dst).as_posix() for p in dst.rglob("*")) == ["items", "items/a.json"]
    assert (dst / "items" / "a.json").read_text() == "new"
    assert not new.exists() and not aside.exists()


def test_replace_clears_what_a_stopped_run_left_aside(tmp_path):
    new, dst, aside = tmp_path / "new.json", tmp_path / "doc.json", tmp_path / "doc.json.old"
    new.write_text("new")
    dst.write_text("old")
    (aside / "left").mkdir(parents=True)  # a folder where the file is set aside: os.replace would fail on it

    replace(new, dst, aside)

    assert dst.read_text() == "new"
    assert not aside.exists()


def test_replace_creates_a_missing_destination_and_its_parents(tmp_path):
    new = tmp_path / "new"
    new.mkdir()
    (new / "x").write_text("1")
    dst = tmp_path / "a" / "b" / "c"

    replace(new, dst, tmp_path / "aside")

    assert (dst / "x").read_text() == "1"


def test_move_in_replaces_each_name_in_order_and_leaves_the_rest(tmp_path):
    staged, out = tmp_path / "staged", tmp_path / "out"
    (staged / "stac").mkdir(parents=True)
    (staged / "stac" / "catalog.json").write_text("new root")
    (staged / "catalog.yaml").write_text("new yaml")
    (out / "stac").mkdir(parents=True)
    (out / "stac" / "stale.json").write_text("old")
    (out / "catalog.yaml").write_text("old yaml")
    (out / "notes.txt").write_text("not ours")

    move_in(staged, out, ["stac", "catalog.yaml"])

    assert sorted(p.name for p in (out / "stac").iterdir()) == ["catalog.json"]
    assert (out / "catalog.yaml").read_text() == "new yaml"
    assert (out / "notes.txt").read_text() == "not ours"
    assert list(staged.iterdir()) == []
