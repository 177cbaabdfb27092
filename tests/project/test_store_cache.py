"""The cache of generated test stores: keyed by zagg and the generator sources, written once and atomically,
read-only, sealed by a manifest that finds any write into it; and collection writes none of it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.stores import cache


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
    assert os.listdir(tmp_path / "c") == [f".lock-{cache.version_key()}"], "no tree, no temporary: the lock only"


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
    assert cache.damage(root) == [], "the manifest describes the tree as written"
    assert cache.generated_stores() == root and len(calls) == 1, "a complete tree is reused"
    cache.discard(root)
    assert not root.exists()


def sealed_tree(monkeypatch, tmp_path) -> Path:
    """A small finished tree: two stores of two files."""
    monkeypatch.setenv("MOCZARR_TEST_CACHE", str(tmp_path / "c"))

    def small(out):
        for store in ("a", "b"):
            (out / store / "c").mkdir(parents=True)
            (out / store / "zarr.json").write_text('{"zarr_format": 3}')
            (out / store / "c" / "0").write_bytes(b"\x01" * 64)

    monkeypatch.setattr(cache, "write_tree", small)
    return cache.generated_stores()


def writable(path: Path) -> None:
    for p in [path, *path.parents]:
        if p.name.startswith("zagg-"):
            break
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


@pytest.mark.parametrize(
    "write, changed",
    [
        ("rewrite", ["a/zarr.json"]),  # same size, new content: the mtime tells
        ("append", ["a/c/0"]),
        ("add", ["a/c", "a/c/1"]),
        ("remove", ["b", "b/zarr.json"]),
        ("rename", ["a/c", "a/c/0", "a/c/0.bak"]),
    ],
)
def test_any_write_into_the_tree_is_found(monkeypatch, tmp_path, write, changed):
    root = sealed_tree(monkeypatch, tmp_path)
    time.sleep(0.01)  # a write in the same clock tick as the seal would keep its mtime on a coarse clock
    target = {"rewrite": root / "a" / "zarr.json", "append": root / "a" / "c" / "0"}.get(write)
    if write == "rewrite":
        writable(target)
        target.write_text('{"zarr_format": 2}')
    elif write == "append":
        writable(target)
        with target.open("ab") as f:
            f.write(b"\x02")
    elif write == "add":
        writable(root / "a" / "c")
        (root / "a" / "c" / "1").write_bytes(b"")
    elif write == "remove":
        writable(root / "b")
        (root / "b" / "zarr.json").unlink()
    else:
        writable(root / "a" / "c")
        (root / "a" / "c" / "0").rename(root / "a" / "c" / "0.bak")
    assert cache.damage(root) == changed


def test_a_tree_without_its_manifest_is_damaged(monkeypatch, tmp_path):
    root = sealed_tree(monkeypatch, tmp_path)
    writable(root / cache.MANIFEST)
    root.chmod(0o755)
    (root / cache.MANIFEST).unlink()
    assert cache.damage(root) == [cache.MANIFEST]


def test_concurrent_sessions_write_one_tree(monkeypatch, tmp_path):
    """Processes (here threads, each with its own lock handle, as pytest-xdist workers have) asking for a tree
    being written wait for it instead of writing their own."""
    monkeypatch.setenv("MOCZARR_TEST_CACHE", str(tmp_path / "c"))
    writes = []
    started = threading.Event()

    def slow(out):
        writes.append(out)
        started.set()
        time.sleep(0.5)
        (out / "store").mkdir(parents=True)

    monkeypatch.setattr(cache, "write_tree", slow)
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(cache.generated_stores)
        assert started.wait(10)
        others = [pool.submit(cache.generated_stores) for _ in range(2)]
        roots = {f.result(timeout=30) for f in [first, *others]}
    assert len(writes) == 1 and roots == {tmp_path / "c" / cache.version_key()}
    assert (next(iter(roots)) / "store").is_dir()


@pytest.mark.subprocess
def test_collection_writes_no_store(tmp_path):
    """``pytest --collect-only`` over a module on stores writes nothing into an empty cache."""
    env = {**os.environ, "MOCZARR_TEST_CACHE": str(tmp_path / "cache")}
    modules = ["tests/reader/test_hive_contract.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *modules],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[generated]" in done.stdout  # the store tests were collected
    assert not (tmp_path / "cache").exists()


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
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [root.name, f".lock-{root.name}", new_tree.name, fresh_torn.name]
    )
