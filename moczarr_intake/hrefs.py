"""How a catalog document spells the address of a store it points at."""

from __future__ import annotations

import os
from pathlib import Path

from moczarr.metadata import is_remote, normalize_location


def catalog_location(root: str, out_dir: Path, template: str) -> str:
    """A store address as a catalog in ``out_dir`` should spell it.

    URLs stay as given; a local store inside ``out_dir`` becomes ``template``
    (e.g. ``{{ CATALOG_DIR }}``) plus its relative path, so the folder moves as
    a whole; any other local store stays an absolute path.
    """
    if is_remote(root):
        return normalize_location(root)
    given = normalize_location(root)
    path, base = Path(given).resolve(), Path(out_dir).resolve()
    if not path.is_relative_to(base):
        return given
    rel = os.path.relpath(path, base)
    return template + ("" if rel == "." else "/" + rel.replace(os.sep, "/"))
