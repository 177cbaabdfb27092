"""Make the ``moczarr`` xarray engine visible through the real entry-point machinery.

An editable install made before ``pyproject.toml`` declared the
``xarray.backends`` entry point does not list it; :func:`register_engine`
then writes a minimal distribution (``*.dist-info`` with the entry point read
from ``pyproject.toml``) into a temporary folder on ``sys.path``, so xarray
finds the engine exactly as it finds an installed one.
"""

from __future__ import annotations

import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def declared_backends() -> dict[str, str]:
    """The ``xarray.backends`` entry points ``pyproject.toml`` declares."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return dict(project["entry-points"]["xarray.backends"])


def register_engine() -> None:
    from xarray.backends import plugins

    plugins.list_engines.cache_clear()
    if "moczarr" in plugins.list_engines():
        return
    folder = Path(tempfile.mkdtemp(prefix="moczarr-engine-"))
    info = folder / "moczarr_engine_under_test-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: moczarr-engine-under-test\nVersion: 0.0\n")
    lines = ["[xarray.backends]", *(f"{k} = {v}" for k, v in declared_backends().items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    sys.path.append(str(folder))
    import importlib

    importlib.invalidate_caches()
    plugins.list_engines.cache_clear()
    assert "moczarr" in plugins.list_engines(), "the moczarr engine could not be registered"
