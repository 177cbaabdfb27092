"""``moczarr-catalog demo`` as a user runs it: the installed console script, from any folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import intake
import pytest

from moczarr.testing import EXPECTATIONS_NAME
from tests.helpers import REPO, catalog_script, load_json

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def _run(args: list[str], cwd: Path, tmpdir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.run([catalog_script(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


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


def _venv_beside(folder: Path) -> Path:
    """``folder/.venv``: a virtual environment that sees this one's packages, as README's install makes one.

    Its interpreter and its ``moczarr-catalog`` script live in ``.venv/bin``, which is not on ``PATH``.
    """
    venv = folder / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    (site_packages,) = (venv / "lib").glob("python3*/site-packages")
    (site_packages / "this_test_environment.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
    )
    script = venv / "bin" / "moczarr-catalog"
    script.write_text(f"#!{python}\nimport sys\nfrom moczarr_intake.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return venv


def test_demo_next_steps_work_as_printed(tmp_path):
    """README's demo run from a clone: each printed next step runs in that folder, environment not activated."""
    clone, scratch = tmp_path / "clone", tmp_path / "tmp"
    clone.mkdir()
    scratch.mkdir()
    venv = _venv_beside(clone)
    env = {**os.environ, "TMPDIR": str(scratch)}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != venv / "bin")
    done = subprocess.run(
        [".venv/bin/moczarr-catalog", "demo"], cwd=clone, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    steps = [line.strip() for line in lines[lines.index("next, try:") + 1 :] if line.strip()]
    assert len(steps) == 3
    assert all(step.startswith(".venv/bin/") for step in steps), steps  # reachable without activating
    outputs = []
    for step in steps:
        ran = subprocess.run(["bash", "-c", step], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, f"{step}\n{ran.stderr}"
        outputs.append(ran.stdout)
    assert "count total" in outputs[0] and (clone / "demo" / "catalog.yaml").is_file()
    assert "demo/sample: 2 product(s)" in outputs[1]
    assert "<xarray.Dataset>" in outputs[2] and "cells" in outputs[2]


#: runs the demo with every distribution outside moczarr's core dependencies made unimportable
_CORE_ONLY = r"""
import importlib.abc, importlib.metadata as md, io, json, sys, contextlib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as canon


def closure(root):
    seen, todo = {}, [(root, frozenset())]
    while todo:
        name, extras = todo.pop()
        key = canon(name)
        if key in seen and extras <= seen[key]:
            continue
        seen[key] = seen.get(key, frozenset()) | extras
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in {"", *extras}):
                todo.append((req.name, frozenset(req.extras)))
    return set(seen)


core = closure("moczarr")
owners = {top: {canon(d) for d in dists} for top, dists in md.packages_distributions().items()}
blocked = set()


class CoreOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in owners and not owners[top] & core:
            blocked.add(top)
            raise ModuleNotFoundError(f"No module named {name!r} (not a core dependency)", name=name)
        return None


sys.meta_path.insert(0, CoreOnly())
from moczarr_intake.cli import main

with contextlib.redirect_stdout(io.StringIO()) as out:
    rc = main(["demo"])
imported = {top for top in {m.partition(".")[0] for m in sys.modules} if top in owners}
try:
    import xpystac  # installed with the test extra, not a core dependency: must be out of reach here
    reachable = True
except ModuleNotFoundError:
    reachable = False
print(json.dumps({"rc": rc, "out": out.getvalue(), "imported": sorted(imported), "blocked": sorted(blocked),
                  "core": sorted(core), "xpystac_reachable": reachable}))
"""


def test_readme_demo_installs_the_project_alone():
    (command,) = [line for line in (REPO / "README.md").read_text().splitlines() if "moczarr-catalog demo" in line]
    assert command.endswith(".venv/bin/pip install -q . && .venv/bin/moczarr-catalog demo")  # no extra


def test_demo_needs_only_the_core_dependencies(tmp_path):
    """What README's demo installs (``.``, no extra) is all the demo needs: it runs with every distribution
    outside moczarr's core dependency closure made unimportable."""
    done = subprocess.run(
        [sys.executable, "-c", _CORE_ONLY],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["rc"] == 0, report["out"]
    assert "count total" in report["out"]
    assert not report["xpystac_reachable"]  # the guard holds for a package that is installed
    assert {"intake", "zarr", "pystac", "mortie"} <= set(report["imported"])
    assert {"intake", "zarr", "pystac", "pyyaml"} <= set(report["core"]) and "pytest" not in report["core"]
