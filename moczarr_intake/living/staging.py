"""Putting a staged catalog in place: a reader, or a run stopped at any moment, meets one whole generation.

A build writes the whole catalog (an update: the documents it changes) into
a temporary sibling of its output folder, ``.OUT.xxxxxxxx.tmp``
(:func:`staging_folder`; every file written there new). Then :func:`switch`
makes that folder the new generation and puts it in place:

1. every other file of the current ``OUT`` is **hard-linked** into it (the
   build's, and any file someone placed in ``OUT``), except those the new
   generation no longer has (the stale ones), ``OUT``'s folders made there
   with their permissions. No file of the current generation is ever
   opened for writing, so nothing written reaches it through the links it
   shares; every placed file is a new one;
2. **one exchange** swaps the two folders (Linux ``renameat2`` with
   ``RENAME_EXCHANGE``, macOS ``renamex_np`` with ``RENAME_SWAP``:
   :func:`exchange`), so ``OUT`` is the new generation, whole, from one
   instant on; a first build renames its folder to ``OUT`` instead (a
   symlinked ``OUT``: its target is what is swapped, the link stays);
3. the previous generation, now in the sibling folder, is removed (a file
   some other program created in ``OUT`` while the run was writing is moved
   into the new generation first, not lost).

The invariant, at every moment of a run and wherever it is killed:

    **every file under** ``OUT`` **is of one generation: the previous
    complete catalog, or the new complete one** (every href resolves; the
    root never links a missing document).

Ids and paths never change between generations (a published href is a
promise), so there is no other place to put a new generation than ``OUT``
itself; the exchange is what makes the switch one step. A run stopped
before it leaves the previous catalog untouched, after it the new one; what
it leaves beside ``OUT`` (its staging folders, the previous generation) is
removed by the next run on the catalog, which holds the lock of
:mod:`.lock` (:func:`sweep`). Its cost is one hard link per file of the
catalog per run that writes (an ``update`` that finds nothing changed
writes nothing).

**Where the exchange is unavailable** (another system; a filesystem
without it; ``OUT`` a mount point; a filesystem without hard links), or
where ``OUT`` holds a store of the catalog (its files are not the
catalog's to link and swap: a store is large, and its writer may be
writing into it), the run
says so in one ``note:`` line and places the staged files into ``OUT`` file
by file (:func:`move_in`), with the weaker guarantee of earlier releases:
every document reachable from an entry document (``stac/catalog.json``,
``catalog.yaml``, ``catalog_v2.yaml``) is whole and every href it holds
resolves, but a run killed halfway leaves the previous entry documents over
documents some of which already have the new bytes. It holds because every
placement is whole, a catalog's links point down (pystac's layout: a child
in a folder below its parent; the up links name documents every generation
has at the same path) and the files are placed in :func:`order`: files that
link nothing first, then the STAC documents deepest path first, then the
entry documents and the build record, last and one at a time; the stale
files are removed after (:func:`remove_stale`). The caller learns of it
(``before_in_place``) so that the lock marks the run as writing and the
next run, should this one die, rewrites the whole catalog.

:func:`pause` is a test hook: with ``MOCZARR_CATALOG_PAUSE=<step>`` in the
environment a run prints ``moczarr-catalog: paused at <step>`` on stderr at
that step and sleeps, so a test can kill it there (``tests/catalog/test_crash.py``).
It is read at a handful of steps per run, never per file.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

#: the environment variable naming the step :func:`pause` stops at (a test hook)
PAUSE_ENV = "MOCZARR_CATALOG_PAUSE"
#: the steps a run can be paused at, in the order a run passes them: ``linked`` (the new generation complete
#: beside ``OUT``), ``swapped`` (exchanged; the previous one beside ``OUT``), ``deleting`` (half of the previous
#: one removed); placing file by file, ``moving`` (half of the waves placed), ``roots`` (the STAC root placed),
#: ``deleting`` (half of the stale files removed)
PAUSE_STEPS = ("locked", "staged", "linked", "moving", "roots", "swapped", "deleting")

#: ``errno`` values of an exchange this system or filesystem cannot do (nothing was changed)
_CANNOT_EXCHANGE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.EBUSY, errno.ENOTSUP, errno.EOPNOTSUPP})
#: ``errno`` values of a hard link this filesystem cannot make
_CANNOT_LINK = frozenset({errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP})
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2  # linux/fs.h
_RENAME_SWAP = 2  # macOS sys/stdio.h


def pause(step: str) -> None:
    """Test hook: stop at ``step`` when :data:`PAUSE_ENV` names it (print a marker line on stderr, then sleep)."""
    if os.environ.get(PAUSE_ENV) == step:
        print(f"moczarr-catalog: paused at {step}", file=sys.stderr, flush=True)
        while True:
            time.sleep(60)


def staging_folder(out: Path) -> Path:
    """A new staging folder ``.OUT.xxxxxxxx.tmp`` beside ``out`` (beside its target when ``out`` is a symlink:
    the staged files are renamed into the generation that replaces it, on its filesystem)."""
    target = Path(os.path.realpath(out))
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))


def switch(
    staged: Path,
    out: Path,
    *,
    last: Sequence[str],
    scope: Iterable[str],
    claims: Callable[[str], bool] | None = None,
    before_in_place: Callable[[], None] | None = None,
    in_place: str | None = None,
) -> str | None:
    """Make ``out`` the new generation: its files, with those of ``staged`` in place of theirs, less the stale ones.

    ``staged``: a folder beside ``out`` (:func:`staging_folder`), which
    becomes the new generation. Stale: a file found below ``scope`` (the
    files and folders of ``out`` this catalog owns) that ``staged`` does not
    hold (``claims``: when given, only the files it claims). Every other
    file of ``out`` is kept. The switch is one exchange of two folders (see
    the module docstring); where it cannot be, the files are placed into
    ``out`` in :func:`order` (``last``: the entry documents and the record),
    ``before_in_place`` called first; ``in_place``: the reason to place file
    by file even where the exchange is available. Returns None, or the one
    ``note:`` line saying the catalog was placed file by file, and why.
    ``staged`` is gone or empty afterwards.
    """
    pause("staged")
    target = Path(os.path.realpath(out))
    if not os.path.lexists(target):  # a first build: its folder renamed in
        os.chmod(staged, 0o777 & ~_umask())
        os.rename(staged, target)
        return None
    placed = set(files_below(staged))
    scope = list(scope)
    stale = [k for k in files_below(target, scope) if k not in placed and (claims is None or claims(k))]
    why = in_place or _cannot_exchange(target)
    linked: list[str] = []
    if why is None:
        try:
            linked = _link_tree(target, staged, placed.union(stale))
        except OSError as e:
            if e.errno not in _CANNOT_LINK:
                raise
            why = "no hard links here"  # what was linked is placed onto itself below: a rename that does nothing
    if why is None:
        _prune(staged, stale)
        pause("linked")
        if exchange(staged, target):
            pause("swapped")
            _drop(staged, target, placed.union(stale, linked))
            return None
        why = "this filesystem cannot exchange two folders"
    if before_in_place is not None:
        before_in_place()
    move_in(staged, target, last=last, scope=scope, claims=claims)
    return f"note: {out}: placed file by file ({why}): a run killed meanwhile may leave files of both generations"


def exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` (two existing folders or files of one filesystem) in one atomic step.

    Linux ``renameat2(..., RENAME_EXCHANGE)`` (glibc 2.28 or later), macOS
    ``renamex_np(..., RENAME_SWAP)``. Returns False, nothing changed, where
    this system or filesystem cannot (``EINVAL``, ``ENOSYS``, ``EXDEV``,
    ``EBUSY``: a mount point, ``ENOTSUP``); raises :class:`OSError` for any
    other failure.
    """
    swap = _swap_function()
    if swap is None:
        return False
    if swap(os.fsencode(a), os.fsencode(b)) == 0:
        return True
    code = ctypes.get_errno()
    if code in _CANNOT_EXCHANGE:
        return False
    raise OSError(code, os.strerror(code), os.fspath(a), None, os.fspath(b))


@functools.cache
def _swap_function() -> Callable[[bytes, bytes], int] | None:
    """The C function exchanging two paths on this system, or None."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = getattr(libc, "renameat2", None)
        if renameat2 is None:
            return None
        renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        renameat2.restype = ctypes.c_int
        return lambda a, b: renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE)
    if sys.platform == "darwin":  # not tested here
        libc = ctypes.CDLL(None, use_errno=True)
        renamex_np = getattr(libc, "renamex_np", None)
        if renamex_np is None:
            return None
        renamex_np.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        renamex_np.restype = ctypes.c_int
        return lambda a, b: renamex_np(a, b, _RENAME_SWAP)
    return None


def _cannot_exchange(target: Path) -> str | None:
    """Why the generations of ``target`` cannot be exchanged, known before trying; or None."""
    if _swap_function() is None:
        return f"this system ({sys.platform}) cannot exchange two folders"
    if not target.is_dir():
        return "it is not a folder"
    if os.path.ismount(target):
        return "it is a mount point"
    return None


def _umask() -> int:
    """The process's file mode creation mask (read by setting it, then set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _link_tree(current: Path, fresh: Path, skip: set[str]) -> list[str]:
    """Hard-link every file of ``current`` except ``skip`` into ``fresh`` (a symlink as itself), every folder of
    ``current`` made there with its permissions; returns the relative paths linked."""
    linked = []
    os.chmod(fresh, stat.S_IMODE(current.stat().st_mode))
    todo = [""]
    while todo:
        rel = todo.pop()
        with os.scandir(os.path.join(current, rel)) as entries:
            for entry in entries:
                key = f"{rel}/{entry.name}" if rel else entry.name
                dst = os.path.join(fresh, key)
                if entry.is_dir(follow_symlinks=False):
                    os.makedirs(dst, exist_ok=True)
                    os.chmod(dst, stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode))
                    todo.append(key)
                elif key not in skip:
                    os.link(entry.path, dst, follow_symlinks=False)
                    linked.append(key)
    return linked


def _drop(previous: Path, current: Path, known: set[str]) -> None:
    """Remove the previous generation (at ``previous`` after the exchange).

    A file there that the run did not know of (``known``: what it linked,
    replaced or found stale) was created in the catalog while the run was
    writing: it is moved into ``current`` (unless that has one at its path).
    """
    files = files_below(previous)
    for key in files:
        if key not in known and not os.path.lexists(current / key):
            (current / key).parent.mkdir(parents=True, exist_ok=True)
            os.replace(previous / key, current / key)
    for i, key in enumerate(files):
        if i == len(files) // 2:
            pause("deleting")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(previous, key))
    shutil.rmtree(previous, ignore_errors=True)


def order(keys: Iterable[str], last: Sequence[str]) -> list[list[str]]:
    """The waves files are placed in file by file (see the module docstring): each wave's files may be placed
    concurrently.

    ``keys``: relative paths (``/``-separated); ``last``: the entry
    documents and the record, placed after every other file, one per wave,
    in the order given (those not in ``keys`` are skipped).
    """
    keys = set(keys)
    rest = keys.difference(last)
    docs = [k for k in rest if k.endswith(".json")]
    waves = [sorted(rest.difference(docs))]
    waves += [sorted(k for k in docs if k.count("/") == d) for d in sorted({k.count("/") for k in docs}, reverse=True)]
    waves += [[k] for k in last if k in keys]
    return [w for w in waves if w]


def files_below(folder: Path, scope: Iterable[str] = ("",)) -> list[str]:
    """The relative paths of the files below ``folder/<each of scope>`` (a folder or a file; missing ones skipped)."""
    found = []
    root = os.fspath(folder)
    for part in scope:
        base = os.path.join(root, part) if part else root
        if os.path.isfile(base):
            found.append(part)
            continue
        for parent, _, names in os.walk(base):
            rel = parent[len(root) + 1 :].replace(os.sep, "/")
            found += [f"{rel}/{name}" if rel else name for name in names]
    return sorted(found)


def move_in(
    staged: Path,
    out: Path,
    *,
    last: Sequence[str],
    scope: Iterable[str],
    claims: Callable[[str], bool] | None = None,
) -> None:
    """Place every file of ``staged`` into ``out`` in :func:`order`, then :func:`remove_stale` what it replaces.

    The placement file by file, where :func:`switch` cannot exchange the
    generations. ``scope``: the files and folders of ``out`` this catalog
    owns (a full build: its top-level outputs); a file found below them that
    ``staged`` does not hold is stale (``claims``: when given, only the
    files it claims). Files outside ``scope`` are never touched.
    """
    keys = files_below(staged)
    waves = order(keys, last)
    half = max(1, len(waves) // 2)
    for i, wave in enumerate(waves, 1):
        for key in wave:
            dst = out / key
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged / key, dst)
        if i == half:
            pause("moving")
        if last and wave == [last[0]]:
            pause("roots")
    placed = set(keys)
    stale = [k for k in files_below(out, scope) if k not in placed and (claims is None or claims(k))]
    remove_stale(out, stale)


def remove_stale(out: Path, stale: Sequence[str]) -> None:
    """Remove the files ``stale`` (relative to ``out``), then the folders they leave empty (never ``out``)."""
    for i, key in enumerate(stale):
        if i == len(stale) // 2:
            pause("deleting")
        with contextlib.suppress(FileNotFoundError):
            (out / key).unlink()
    _prune(out, stale)


def _prune(out: Path, gone: Sequence[str]) -> None:
    """Remove the folders of ``out`` that the files ``gone`` (relative paths) leave empty, never ``out`` itself."""
    for key in sorted({str(Path(k).parent) for k in gone}, key=lambda k: -k.count("/")):
        folder = out / key
        while folder != out and folder.is_relative_to(out):
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone): its parents are not empty either
                break
            folder = folder.parent


def staging_folders(out: Path) -> list[Path]:
    """The staging folders of ``out`` that exist beside it: ``.OUT.xxxxxxxx.tmp`` (:func:`tempfile.mkdtemp`'s, and
    the generations :func:`switch` makes); beside its target too when ``out`` is a symlink."""
    found = []
    for path in dict.fromkeys([Path(os.path.abspath(out)), Path(os.path.realpath(out))]):
        pattern = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp")
        try:
            names = os.listdir(path.parent)
        except FileNotFoundError:
            continue
        found += [path.parent / n for n in names if pattern.fullmatch(n) and (path.parent / n).is_dir()]
    return found


def sweep(out: Path) -> list[Path]:
    """Remove the staging folders of ``out`` that runs before left (call it only under the catalog's lock)."""
    found = staging_folders(out)
    for folder in found:
        shutil.rmtree(folder, ignore_errors=True)
    return found
