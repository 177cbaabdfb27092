"""Shared test fixtures: where ``../shared/fixtures`` is, and damaged copies of it.

Tests against the shared fixtures fail (never skip) when ``CI=true`` and the
folder is missing; elsewhere they skip with a message saying where to put it.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MOCZARR_SHARED", REPO.parent / "shared"))
FIXTURES = SHARED / "fixtures"


def fixtures_dir() -> Path:
    """The shared fixtures folder; fail under CI, skip elsewhere, when it is missing."""
    if not FIXTURES.is_dir():
        msg = f"shared fixtures not found at {FIXTURES} (set MOCZARR_SHARED)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return FIXTURES


@pytest.fixture
def fixtures() -> Path:
    return fixtures_dir()


def fixture_path(name: str) -> Path:
    path = fixtures_dir() / name
    assert path.exists(), f"fixture {name} missing from {FIXTURES}"
    return path


def load_json(path: Path):
    return json.loads(Path(path).read_text())


def write_json(path: Path, obj) -> None:
    Path(path).write_text(json.dumps(obj, indent=1))


@pytest.fixture
def copy_fixture(tmp_path):
    """Copy a fixture store to a temporary folder (tests damage the copy, never the original)."""

    def copy(name: str) -> Path:
        dest = tmp_path / name.replace("/", "__")
        shutil.copytree(fixture_path(name), dest)
        for p in [dest, *dest.rglob("*")]:  # the shared copy is read-only
            p.chmod(0o755 if p.is_dir() else 0o644)
        return dest

    return copy


def set_attrs(zarr_json: Path, update) -> None:
    """Rewrite the attributes of a ``zarr.json`` document with ``update(attrs)``."""
    doc = load_json(zarr_json)
    update(doc.setdefault("attributes", {}))
    write_json(zarr_json, doc)


@contextmanager
def quiet():
    """A block in which any moczarr warning fails the test."""
    import moczarr

    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.MoczarrWarning)
        yield


@pytest.fixture(scope="session", autouse=True)
def moczarr_engine():
    """The ``moczarr`` xarray engine, as pyproject declares it (see tests/engines.py: a no-op when installed)."""
    from .engines import register_engine

    register_engine()
