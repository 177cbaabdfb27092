"""zarr's internals are reached through moczarr._zarr only, for the zarr releases it names."""

from __future__ import annotations

import ast
import re
import tomllib
from importlib.metadata import version

from packaging.requirements import Requirement
from packaging.version import Version

from moczarr import _zarr
from tests.helpers import REPO


def test_the_installed_zarr_is_one_the_compat_module_supports():
    major_minor = ".".join(version("zarr").split(".")[:2])
    assert major_minor in _zarr.SUPPORTED, f"zarr {version('zarr')} is not in moczarr._zarr.SUPPORTED {_zarr.SUPPORTED}"


def test_the_declared_zarr_range_is_the_supported_releases():
    """pyproject's zarr requirement admits every supported release and nothing past the last one."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [Requirement(r) for r in declared if Requirement(r).name == "zarr"]
    for release in _zarr.SUPPORTED:
        assert Version(f"{release}.0") in spec.specifier, f"zarr {release} is supported but not admitted by {spec}"
    last = Version(_zarr.SUPPORTED[-1])
    assert Version(f"{last.major}.{last.minor + 1}.0") not in spec.specifier, f"{spec} admits an unsupported zarr"
    first = Version(_zarr.SUPPORTED[0])
    assert Version(f"{first.major}.{first.minor - 1}.0") not in spec.specifier, f"{spec} admits an unsupported zarr"


def test_every_internal_name_resolves():
    for name in _zarr.__all__:
        assert getattr(_zarr, name) is not None


def test_no_other_module_reaches_zarr_internals():
    """``zarr.core`` (and any private zarr name) is imported by moczarr/_zarr.py alone."""
    problems = []
    for path in sorted((REPO / "moczarr").rglob("*.py")) + sorted((REPO / "moczarr_intake").rglob("*.py")):
        if path == REPO / "moczarr" / "_zarr.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            bad = [n for n in names if n.startswith("zarr.") and re.search(r"(^|\.)(core|_\w+)(\.|$)", n[5:])]
            problems += [f"{path.relative_to(REPO)}:{node.lineno}: {n}" for n in bad]
    assert not problems, problems
