"""Putting a staged catalog in place: each file or folder moved over its namesake, the previous one removed after.

A build writes into a temporary sibling of its output folder and moves the
result in at the end (:func:`move_in`), so a build that fails leaves the
previous catalog as it was; an update that keeps most of a catalog swaps in
only the folders it wrote (:func:`replace`). Every move is an
:func:`os.replace` within one file system: a reader meets the previous
content, the new one or, between the two moves, nothing at that path; never a
half-written file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path


def replace(new: Path, dst: Path, aside: Path) -> None:
    """Move ``new`` (a file or a folder) to ``dst``; what was at ``dst`` goes to ``aside`` first and is removed after.

    ``aside`` is cleared first: a run stopped between the two moves leaves the
    previous content there.
    """
    _remove(aside)
    if dst.exists():
        os.replace(dst, aside)
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(new, dst)
    _remove(aside)


def move_in(staged: Path, out: Path, names: Iterable[str]) -> None:
    """:func:`replace` ``out/name`` by ``staged/name`` for each name, in order (the old set aside in ``staged``)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        replace(staged / name, out / name, staged / f"{name}.old")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
