"""The cache of generated test stores: keyed by zagg and the generator sources, written atomically, read-only."""

from __future__ import annotations

import os
import stat
import time
from importlib.metadata import version

import pytest

from .stores import cache


def test_key_names_zagg_and_changes_with_the_sources(monkeypatch, tmp_path):
    key = cache.version_key()
    assert key.startswith(f"zagg-{version('zagg')}-") and key == cache.version_key()
    edited = tmp_path / "zagg_stores.py"
    edited.write_text(cache.SOURCES[0].read_text() + "\n# edited\n")
    monkeypatch.setattr(cache, "SOURCES", (edited, *cache.SOURCES[1:]))
    assert cache.version_key() != key


def test_interrupted_write_leaves_nothing_behind(monkeypatch, tmp_path):
    monkeypatch.setenv("MOCZARR_TEST_CACHE", str(tmp_path / "c"))

    def torn(out):
        out.mkdir()
        (out / "half_a_store").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(cache, "write_tree", torn)
    with pytest.raises(KeyboardInterrupt):
        cache.generated_stores()
    assert os.listdir(tmp_path / "c") == []


def test_written_tree_is_complete_and_read_only(monkeypatch, tmp_path):
    monkeypatch.setenv("MOCZARR_TEST_CACHE", str(tmp_path / "c"))
    calls = []

    def small(out):
        calls.append(out)
        (out / "store").mkdir(parents=True)
        (out / "store" / "morton_hive.json").write_text("{}")

    monkeypatch.setattr(cache, "write_tree", small)
    root = cache.generated_stores()
    assert root == tmp_path / "c" / cache.version_key() and (root / cache.COMPLETE).is_file()
    assert not stat.S_IMODE((root / "store" / "morton_hive.json").stat().st_mode) & 0o222
    assert not stat.S_IMODE((root / "store").stat().st_mode) & 0o222
    before = cache.fingerprint(root)
    assert cache.generated_stores() == root and len(calls) == 1, "a complete tree is reused"
    os.chmod(root / "store", 0o755)
    (root / "store" / "extra").write_text("damage")
    assert cache.fingerprint(root) != before
    cache.discard(root)
    assert not root.exists()


def test_stale_trees_and_torn_temporaries_are_pruned(monkeypatch, tmp_path):
    folder = tmp_path / "c"
    monkeypatch.setenv("MOCZARR_TEST_CACHE", str(folder))
    old_tree, new_tree, torn, fresh_torn = (
        folder / n for n in ("zagg-0.1-old", "zagg-0.2-new", ".tmp-x-1", ".tmp-y-2")
    )
    for d in (old_tree, new_tree, torn, fresh_torn):
        (d / "store").mkdir(parents=True)
    long_ago = time.time() - 30 * 86400
    for d in (old_tree, torn):
        os.utime(d, (long_ago, long_ago))
    monkeypatch.setattr(cache, "write_tree", lambda out: out.mkdir())
    root = cache.generated_stores()
    assert sorted(p.name for p in folder.iterdir()) == sorted([root.name, new_tree.name, fresh_torn.name])
