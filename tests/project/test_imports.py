"""Light imports: ``import moczarr``, the xarray backend probe and ``import intake`` load no heavy library."""

from __future__ import annotations

import subprocess
import sys

import pytest

import moczarr
import moczarr.metadata

HEAVY = ("zarr", "dask", "mortie", "pandas", "xarray")


def modules_after(statement: str) -> set[str]:
    """Top-level packages in ``sys.modules`` after running ``statement`` in a fresh interpreter."""
    code = f"{statement}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize(
    "statement, allowed",
    [
        ("import moczarr", ()),
        ("import moczarr.metadata", ()),
        ("import intake", ()),
        ("import moczarr_intake", ()),
        ("import xarray, moczarr.backend", ("xarray", "pandas")),  # what xarray's engine listing does
    ],
)
@pytest.mark.subprocess
def test_import_loads_no_heavy_library(statement, allowed):
    loaded = modules_after(statement) & set(HEAVY)
    assert loaded <= set(allowed), f"{statement!r} imported {sorted(loaded - set(allowed))}"


@pytest.mark.subprocess
def test_errors_import_nothing_heavy():
    """Catching a moczarr error must not cost an xarray import (nor zarr, dask, numpy, mortie)."""
    loaded = modules_after("import moczarr.errors") & {*HEAVY, "numpy"}
    assert not loaded, f"'import moczarr.errors' imported {sorted(loaded)}"


@pytest.mark.subprocess
def test_first_use_imports_the_name():
    assert "open_hive" in dir(moczarr)
    assert modules_after("import moczarr; moczarr.open_hive") >= {"zarr", "dask", "mortie"}


@pytest.mark.parametrize("module", [moczarr, moczarr.metadata], ids=lambda m: m.__name__)
def test_every_exported_name_resolves(module):
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert not missing
    assert set(module.__all__) <= set(dir(module))


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'open_hives'"):
        _ = moczarr.open_hives
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = moczarr.metadata.nothing


@pytest.mark.subprocess
def test_submodules_are_attributes_of_the_package():
    out = subprocess.run(
        [sys.executable, "-c", "import moczarr; print(moczarr.errors.__name__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "moczarr.errors"
