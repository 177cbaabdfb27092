"""The cached tree of generated test stores: keyed, written atomically, read-only once written.

:func:`generated_stores` returns a folder mirroring ``../shared/fixtures`` (the
names :data:`tests.stores.zagg_stores.STORES`, :data:`tests.stores.spec_stores.STORES`
and :data:`tests.stores.moraine_stores.PYRAMIDS` list). It lives under
``$MOCZARR_TEST_CACHE`` (default ``~/.cache/moczarr-test-stores``) in a
sub-folder named by :func:`version_key`: the zagg version plus a hash of the
generator sources, so changing a generator or zagg regenerates. A tree is
written into a temporary sibling and renamed into place only when complete,
so an interrupted run never leaves half a store in the cache, and under a file
lock, so concurrent sessions (or pytest-xdist workers) write one tree between
them. The finished tree is made read-only (tests damage copies) and carries a
:data:`MANIFEST` of every entry's size and modification time, written once;
:func:`damage` compares the tree with it in one directory walk, so a session
can check at its end that nothing wrote into the tree (a user who can ignore
permissions, root, could) and discard it if something did.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import time
import uuid
from importlib.metadata import version
from pathlib import Path

from filelock import FileLock

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
#: Every source file whose change must regenerate the tree.
SOURCES = (
    HERE / "zagg_stores.py",
    HERE / "moraine_stores.py",
    HERE / "spec_stores.py",
    HERE / "cache.py",
    *(REPO / "moczarr" / "testing" / name for name in ("moraine.py", "hive.py", "raster.py")),
)
COMPLETE = "COMPLETE"
#: Every entry of a finished tree (but itself): relative path -> [size (0 for a folder), mtime in ns].
MANIFEST = "MANIFEST.json"


def version_key() -> str:
    """``zagg-<version>-<hash of the generator sources>``."""
    digest = hashlib.sha256()
    for path in SOURCES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for dist in ("zarr", "mortie", "numpy"):
        digest.update(f"{dist}={version(dist)}".encode())
    return f"zagg-{version('zagg')}-{digest.hexdigest()[:16]}"


def cache_root() -> Path:
    return Path(os.environ.get("MOCZARR_TEST_CACHE") or Path.home() / ".cache" / "moczarr-test-stores")


def generated_stores() -> Path:
    """The complete generated tree for this generator and zagg, writing it first if the cache lacks it.

    The writer holds ``.lock-<key>`` beside the tree, so a second process asking
    for the same tree meanwhile waits for it instead of writing its own.
    """
    final = cache_root() / version_key()
    if (final / COMPLETE).is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(final.parent / f".lock-{final.name}"):
        if not (final / COMPLETE).is_file():  # nobody wrote it while this process waited for the lock
            write_atomically(final)
    prune(final.parent, keep=final)
    return final


def write_atomically(final: Path) -> None:
    """Write the tree into a temporary sibling, seal it (manifest, read-only) and rename it to ``final``."""
    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        t0 = time.perf_counter()
        write_tree(tmp)
        (tmp / COMPLETE).write_text(f"written in {time.perf_counter() - t0:.1f} s\n")
        (tmp / MANIFEST).write_text(json.dumps(inventory(tmp), separators=(",", ":")))
        make_read_only(tmp)
        try:
            tmp.rename(final)
        except OSError:  # another session, not holding this lock (an older checkout), finished the same tree first
            if not (final / COMPLETE).is_file():
                raise
    finally:
        if tmp.exists():
            remove_tree(tmp)


#: Other trees (older generators, or zagg versions) and torn temporaries are removed after this long unused.
STALE_S = {"zagg-": 7 * 86400, ".lock-": 7 * 86400, ".tmp-": 3600}


def prune(folder: Path, keep: Path) -> None:
    """Remove trees (and locks) of other keys unused for a week, and temporaries a killed session left an hour ago."""
    now = time.time()
    for entry in folder.iterdir():
        age = next((limit for prefix, limit in STALE_S.items() if entry.name.startswith(prefix)), None)
        if entry == keep or entry.name == f".lock-{keep.name}" or age is None:
            continue
        try:
            if now - entry.stat().st_mtime > age:
                remove_tree(entry)
        except OSError:  # another session removed or is removing it
            continue


def inventory(root: Path) -> dict[str, list[int]]:
    """Every entry under ``root`` but the manifest: relative path -> ``[size, mtime_ns]`` (size 0 for a folder).

    One ``os.scandir`` walk (a stat per entry), what a test writing, adding,
    removing or renaming anything in the tree would change.
    """
    found: dict[str, list[int]] = {}
    folders = [""]
    while folders:
        rel = folders.pop()
        with os.scandir(root / rel) as entries:
            for entry in entries:
                path = f"{rel}/{entry.name}" if rel else entry.name
                if path == MANIFEST:
                    continue
                st = entry.stat(follow_symlinks=False)
                is_dir = entry.is_dir(follow_symlinks=False)
                found[path] = [0 if is_dir else st.st_size, st.st_mtime_ns]
                if is_dir:
                    folders.append(path)
    return found


def damage(root: Path) -> list[str]:
    """The entries of a finished tree that differ from its manifest (added, removed or changed), sorted.

    A tree without a readable manifest is damaged as a whole (``[MANIFEST]``).
    """
    try:
        sealed = json.loads((root / MANIFEST).read_text())
    except (OSError, ValueError):
        return [MANIFEST]
    now = inventory(root)
    return sorted(path for path in sealed.keys() | now.keys() if sealed.get(path) != now.get(path))


def discard(root: Path) -> None:
    """Remove a damaged tree so the next session writes it afresh."""
    if root.exists():
        remove_tree(root)


def write_tree(out: Path) -> None:
    from . import moraine_stores, spec_stores, zagg_stores

    out.mkdir()
    zagg_stores.write_all(out)
    spec_stores.write_all(out)
    moraine_stores.write_all(out / "moraine")
    shutil.rmtree(out / ".inputs", ignore_errors=True)


def make_read_only(root: Path) -> None:
    for path in [*root.rglob("*"), root]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode):
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def remove_tree(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(root)
