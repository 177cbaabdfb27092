"""Putting a staged catalog in place so that a reader, or a run stopped at any moment, never meets a dangling href.

A build writes the whole catalog into a temporary sibling of its output
folder (object storage: a local temporary folder) and then places it file by
file (:func:`move_in`; :mod:`.outstore` PUTs the same files in the same
order). The invariant, at every moment of a run and wherever it is killed:

    **every document reachable from an entry document** (``stac/catalog.json``,
    ``catalog.yaml``, ``catalog_v2.yaml``) **is whole and every href it holds
    resolves.**

It holds because of three facts and one order. Every placement is whole
(:func:`os.replace` of a complete file; a PUT). A catalog's links point down
(a Catalog to its children, a Collection to its Items, an Item to its
assets, each in a folder below the document, pystac's layout), and its up
links (``parent``, ``root``, ``collection``) point to documents every
generation has at the same path. The files are placed in :func:`order`:
files that link nothing first (thumbnails, stac-geoparquet, the pgstac
ndjson), then the STAC documents deepest path first, then the entry
documents and the build record, last and one at a time. So a document is
placed only once everything it links down to is in place, and an entry
document of either generation only ever reaches documents that are there
(some already with the new generation's bytes at the same path). Only then
are the files of the previous catalog that the new one no longer has
removed (:func:`remove_stale`): nothing placed links to them.

A run stopped before its entry documents leaves the previous catalog's
entry documents, each reaching complete documents; stopped after, the new
one's, plus files of the other generation that nothing reaches. The next
run (under the lock of :mod:`.lock`, which also tells it that the previous
holder died while writing) rebuilds the whole catalog and removes those:
what is stale is found by listing the folders a build owns, so nothing a
killed run meant to delete is forgotten. Leftover staging folders
(``.OUT.xxxxxxxx.tmp`` beside the output) are removed by the next run too
(:func:`sweep`).

:func:`pause` is a test hook: with ``MOCZARR_CATALOG_PAUSE=<step>`` in the
environment a run prints ``moczarr-catalog: paused at <step>`` on stderr at
that step and sleeps, so a test can kill it there (``tests/catalog/test_crash.py``).
It is read at a handful of steps per run, never per file.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

#: the environment variable naming the step :func:`pause` stops at (a test hook)
PAUSE_ENV = "MOCZARR_CATALOG_PAUSE"
#: the steps a run can be paused at, in the order a run passes them
PAUSE_STEPS = ("locked", "staged", "moving", "roots", "deleting")


def pause(step: str) -> None:
    """Test hook: stop at ``step`` when :data:`PAUSE_ENV` names it (print a marker line on stderr, then sleep)."""
    if os.environ.get(PAUSE_ENV) == step:
        print(f"moczarr-catalog: paused at {step}", file=sys.stderr, flush=True)
        while True:
            time.sleep(60)


def order(keys: Iterable[str], last: Sequence[str]) -> list[list[str]]:
    """The waves files are placed in (see the module docstring): each wave's files may be placed concurrently.

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
    for part in scope:
        base = folder / part if part else folder
        if base.is_file():
            found.append(part)
            continue
        for parent, _, names in os.walk(base):
            rel = Path(parent).relative_to(folder).as_posix()
            found += [name if rel == "." else f"{rel}/{name}" for name in names]
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

    ``scope``: the files and folders of ``out`` this catalog owns (a full
    build: its top-level outputs); a file found below them that ``staged``
    does not hold is stale (``claims``: when given, only the files it
    claims). Files outside ``scope`` are never touched.
    """
    keys = files_below(staged)
    waves = order(keys, last)
    pause("staged")
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
    for key in sorted({str(Path(k).parent) for k in stale}, key=lambda k: -k.count("/")):
        folder = out / key
        while folder != out and folder.is_relative_to(out):
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone): its parents are not empty either
                break
            folder = folder.parent


def staging_folders(out: Path) -> list[Path]:
    """The staging folders of ``out`` that exist beside it: ``.OUT.xxxxxxxx.tmp`` (:func:`tempfile.mkdtemp`'s)."""
    pattern = re.compile(rf"\.{re.escape(out.name)}\.[a-z0-9_]{{8}}\.tmp")
    try:
        names = os.listdir(out.parent)
    except FileNotFoundError:
        return []
    return [out.parent / n for n in names if pattern.fullmatch(n) and (out.parent / n).is_dir()]


def sweep(out: Path) -> list[Path]:
    """Remove the staging folders of ``out`` that runs before left (call it only under the catalog's lock)."""
    found = staging_folders(out)
    for folder in found:
        shutil.rmtree(folder, ignore_errors=True)
    return found
