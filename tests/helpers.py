"""What the tests share: where the test stores are (two layers), copies of them, and small readers and writers.

Every test on real stores names a store the way ``../shared/fixtures`` names it
(``fixture_path("zagg/single_8/store")``) and runs in one or both **layers**:

``generated``
    stores the suite writes itself (``tests/stores``), cached between runs; always
    present. zagg's writer writes the hive stores, the project's spec-level
    writers (``moczarr.testing``) the raster leaf zagg writes only from imagery
    (``spec/raster_toc``) and the moraine pyramids.
``shared``
    ``../shared/fixtures`` (or ``$MOCZARR_SHARED/fixtures``): real stores nobody in
    this project wrote. Present in CI; when it is missing the shared layer skips
    locally and fails under ``CI=true``.

A test chooses its layers by a marker (``tests/conftest.py`` reads it): ``layers`` runs
it once per layer present (ids ``[generated]``/``[shared]``), ``conformance(reason)``
on the shared layer only (it pins a quirk of one shared store, or reads a store only
the shared layer holds, :data:`SHARED_ONLY`); an unmarked test reads
:data:`DEFAULT_LAYER`. The functions below read the layer of the running test.

Test modules import from here (``from tests.helpers import fixture_path``);
``conftest.py`` holds the fixtures and hooks only.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MOCZARR_SHARED", REPO.parent / "shared"))
FIXTURES = SHARED / "fixtures"
IN_CI = os.environ.get("CI", "").lower() == "true"
#: The committed sample catalog's stores (``elevation``, ``elevation_yearly``), written by ``moczarr.testing``.
SAMPLE = REPO / "catalogs" / "sample"

#: Store names (prefixes) that only the shared layer holds.
SHARED_ONLY = ("strata",)
#: The layers a test marked ``layers`` runs on.
LAYERS = ("generated", "shared") if (FIXTURES.is_dir() or IN_CI) else ("generated",)
#: The layer of a test not parametrized over layers.
DEFAULT_LAYER = "shared" if FIXTURES.is_dir() else "generated"
_layer = {"name": DEFAULT_LAYER}


# -- the layers -------------------------------------------------------------------------------------------
def fixtures_dir() -> Path:
    """The shared fixtures folder; fail under CI, skip elsewhere, when it is missing."""
    if not FIXTURES.is_dir():
        msg = f"shared fixtures not found at {FIXTURES} (set MOCZARR_SHARED)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return FIXTURES


@functools.cache
def generated_dir() -> Path:
    """The generated tree: written by the first test of any session that needs it, then cached (see tests/stores)."""
    from tests.stores.cache import generated_stores

    return generated_stores()


def select_layer(name: str) -> None:
    """Make ``name`` the layer the running tests read (``conftest.store_layer`` calls it per module and layer)."""
    _layer["name"] = name


def layer() -> str:
    """The layer the running test reads: ``generated`` or ``shared``."""
    return _layer["name"]


def layer_dir() -> Path:
    """The folder of the running test's layer."""
    return generated_dir() if layer() == "generated" else fixtures_dir()


def fixture_path(name: str) -> Path:
    """Store (or golden) ``name`` of the running test's layer; shared-only names always come from the shared layer."""
    base = fixtures_dir() if name.startswith(SHARED_ONLY) else layer_dir()
    path = base / name
    assert path.exists(), f"fixture {name} missing from {base} ({layer()} layer)"
    return path


def has_fixture(name: str) -> bool:
    """Whether the running test's layer holds ``name`` (shared-only names: whether the shared layer is there)."""
    base = FIXTURES if (name.startswith(SHARED_ONLY) or layer() == "shared") else generated_dir()
    return (base / name).exists()


def moraine_root() -> Path:
    """The folder of moraine pyramids of the running test's layer."""
    return fixture_path("moraine")


# -- copies -----------------------------------------------------------------------------------------------
def writable_copy(src: Path, dest: Path) -> Path:
    """A copy of ``src`` at ``dest`` a test may damage (the cached and shared stores are read-only)."""
    shutil.copytree(src, dest)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def link_copy(src: Path, dest: Path) -> Path:
    """A copy of ``src`` at ``dest`` made of hard links: a change must replace a file, never edit it."""
    shutil.copytree(src, dest, copy_function=os.link)
    return dest


# -- documents --------------------------------------------------------------------------------------------
def load_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def write_json(path: Path, obj: Any) -> None:
    Path(path).write_text(json.dumps(obj, indent=1))


def set_attrs(zarr_json: Path, update: Callable[[dict], None]) -> None:
    """Rewrite the attributes of a ``zarr.json`` document with ``update(attrs)``."""
    doc = load_json(zarr_json)
    update(doc.setdefault("attributes", {}))
    write_json(zarr_json, doc)


def rewrite_manifest(store: Path, **changes: Any) -> None:
    """Replace a store's manifest by a changed copy: a new file, so hard-linked copies of the store keep theirs."""
    path = Path(store) / "morton_hive.json"
    doc = {**load_json(path), **changes}
    path.unlink()
    write_json(path, doc)


def tree_snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the command line -------------------------------------------------------------------------------------
def catalog_script() -> str:
    """The ``moczarr-catalog`` console script installed beside this interpreter."""
    found = shutil.which("moczarr-catalog", path=str(Path(sys.executable).parent))
    assert found, "the moczarr-catalog console script is not installed beside this interpreter"
    return found


def run_catalog(
    *args: object, cwd: Path, env: dict | None = None, python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """The installed ``moczarr-catalog`` with ``args``, from ``cwd``; loopback traffic never goes through a proxy."""
    full_env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", **(env or {})}
    command = [sys.executable, *python_flags, catalog_script(), *map(str, args)]
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=600)


# -- running ----------------------------------------------------------------------------------------------
@contextmanager
def local_cluster() -> Iterator[Any]:
    """A dask.distributed cluster of two worker processes on 127.0.0.1 (no dashboard), and its client."""
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
            # no dashboard; the scheduler's bare HTTP endpoint takes a free port instead of 8787
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@contextmanager
def quiet() -> Iterator[None]:
    """A block in which any moczarr warning fails the test."""
    import moczarr

    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.errors.MoczarrWarning)
        yield
