"""``moczarr-catalog show`` says which levels ``open_level`` will refuse: what it lists as openable opens."""

from __future__ import annotations

import re
import shutil
import warnings

import pytest

import moczarr
from moczarr.errors import LevelOmittedError
from moczarr.testing import write_sample_store
from moczarr_intake.cli import main


@pytest.fixture
def garbage_moc(tmp_path):
    root = write_sample_store(tmp_path / "sample")
    (root / "elevation" / "coverage.moc").write_text("garbage")
    return root


def test_show_marks_the_levels_a_garbage_root_moc_closes_and_says_degraded(garbage_moc, capsys):
    assert main(["show", str(garbage_moc)]) == 0
    out, err = capsys.readouterr()
    product = garbage_moc / "elevation"
    degraded = [line for line in err.splitlines() if line.startswith("degraded:")]
    assert degraded == [
        f"degraded: {product}: no usable root coverage.moc: level(s) o6, o4 cannot be opened (open_level refuses "
        "them until the writer rewrites coverage.moc); the source level opens through the discovery walk"
    ]
    elevation = out.split("- elevation_yearly")[0]
    listed = re.findall(r"^    o(\d+) +(\w+) .*?(\(cannot be opened[^)]*\))?$", elevation, re.M)
    assert {int(o) for o, _, closed in listed if closed} == {6, 4}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for order, _, closed in listed:  # what show says is what the reader does
            if closed:
                with pytest.raises(LevelOmittedError, match=f"o{order} cannot be enumerated"):
                    moczarr.open_level(str(product), int(order))
            else:
                assert moczarr.open_level(str(product), int(order)).sizes["cells"] > 0


def test_show_of_a_healthy_store_has_no_degraded_line(tmp_path, capsys):
    root = write_sample_store(tmp_path / "sample")
    shutil.rmtree(root / "elevation_yearly")  # one product left: still a multi-product root
    assert main(["show", str(root)]) == 0
    out, err = capsys.readouterr()
    assert "degraded:" not in err and "cannot be opened" not in out and "o6   overview" in out


def test_build_says_a_fallen_back_root_moc_once(garbage_moc, tmp_path, capsys):
    """One cause, one line: the ``degraded:`` line, not a reader warning repeating it under another spelling."""
    assert main(["build", str(garbage_moc), "--out", str(tmp_path / "cat")]) == 0
    err = capsys.readouterr().err.splitlines()
    about = [line for line in err if "no usable root coverage.moc" in line]
    assert about == [
        "degraded: elevation: no usable root coverage.moc: footprint, bbox and shard count (10) from the discovery walk"
    ]
