"""Warnings point at the user's line (``moczarr.errors.find_stack_level``), however deep the opener."""

from __future__ import annotations

import shutil
import warnings

import moczarr
from tests.helpers import REPO


def _sample_without_root_moc(tmp_path):
    root = tmp_path / "sample"
    shutil.copytree(REPO / "catalogs" / "sample", root)
    (root / "elevation" / "coverage.moc").unlink()
    return root


def test_degrade_warnings_name_the_callers_line(tmp_path):
    root = _sample_without_root_moc(tmp_path)
    openers = {
        "open_hive": lambda: moczarr.open_hive(root / "elevation"),
        "open_level": lambda: moczarr.open_level(root / "elevation", 8),
        "open_store": lambda: moczarr.open_store(root, window="2019"),
        "open_pyramid": lambda: moczarr.open_pyramid(root / "elevation"),
    }
    for name, call in openers.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        mine = [w for w in caught if issubclass(w.category, moczarr.errors.MoczarrWarning)]
        assert mine, f"{name} emitted no moczarr warning on a store without its root MOC"
        for w in mine:
            assert w.filename == __file__, f"{name}: {w.category.__name__} points at {w.filename}:{w.lineno}"
