"""``moczarr-catalog demo`` as a user runs it: the installed console script, from any folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import intake
import pytest

from moczarr.testing import EXPECTATIONS_NAME

from .conftest import load_json

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def _script() -> str:
    found = shutil.which("moczarr-catalog", path=str(Path(sys.executable).parent))
    assert found, "the moczarr-catalog console script is not installed beside this interpreter"
    return found


def _run(args: list[str], cwd: Path, tmpdir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.run([_script(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_demo_runs_outside_a_checkout_and_cleans_up(tmp_path):
    work, scratch = tmp_path / "elsewhere", tmp_path / "tmp"
    work.mkdir()
    scratch.mkdir()
    done = _run(["demo"], work, scratch)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any("count total" in line for line in lines)
    nxt = lines.index("next, try:")
    assert len([line for line in lines[nxt + 1 :] if line.strip()]) == 3  # the three lines a user types next
    assert list(scratch.iterdir()) == [], "the demo left its temporary folder behind"
    assert list(work.iterdir()) == []


def test_demo_out_keeps_a_catalog_that_opens(tmp_path):
    done = _run(["demo", "--out", "demo"], tmp_path, Path(tempfile.gettempdir()))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "demo"
    expect = load_json(out / "sample" / EXPECTATIONS_NAME)["products"]
    cat = intake.open_catalog(str(out / "catalog.yaml"))
    ds = cat["elevation"].read()
    assert int(ds["count"].sum()) == expect["elevation"]["totals"]["count_sum"]
