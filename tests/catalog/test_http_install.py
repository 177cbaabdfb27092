"""What a plain install (``pip install .``, no extras) opens, and what it is told when it needs an extra.

A plain install is this environment with every package outside the closure of
``pyproject.toml``'s core dependencies hidden from imports: each test runs its
Python in a subprocess whose ``sitecustomize`` marks those modules absent
(``sys.modules[name] = None``: ``import`` raises ``ModuleNotFoundError`` and
``importlib.util.find_spec`` answers ``None``, as for a package that is not
installed). The closure is read from the metadata of the installed
distributions, so a dependency the project stops declaring is hidden here
the day it is dropped.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers import REPO
from tests.helpers import run_catalog as run
from tests.loopback import serve_folder

SAMPLE = REPO / "catalogs" / "sample"

SITECUSTOMIZE = """\
import os, sys
for _name in filter(None, os.environ.get("MOCZARR_TEST_HIDDEN", "").split(",")):
    if _name not in sys.modules:
        sys.modules[_name] = None
"""


def core_distributions() -> set[str]:
    """The distributions a plain install brings: the core dependencies and theirs, each extra a requirement names
    followed (``fsspec[http]``), by canonical name."""
    todo = [Requirement(r) for r in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]]
    extras: dict[str, set[str]] = {}
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in extras and set(req.extras) <= extras[name]:
            continue
        wanted = extras.setdefault(name, set())
        wanted |= set(req.extras)
        try:
            requires = importlib.metadata.distribution(req.name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            sub = Requirement(line)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in wanted | {""}):
                todo.append(sub)
    return set(extras)


@functools.cache
def plain_install_hides() -> tuple[str, ...]:
    """The top-level modules installed here by distributions a plain install lacks (the extras' and the tools')."""
    core = core_distributions() | {"moczarr"}
    return tuple(
        sorted(
            module
            for module, dists in importlib.metadata.packages_distributions().items()
            if not any(canonicalize_name(d) in core for d in dists)
        )
    )


def hiding(tmp_path: Path, modules) -> dict:
    """The environment of a subprocess in which ``modules`` are not installed."""
    site = tmp_path / "hide"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return {"PYTHONPATH": str(site), "MOCZARR_TEST_HIDDEN": ",".join(modules)}


def python(code: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    full = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=full, capture_output=True, text=True, timeout=300
    )


def test_the_closure_is_what_a_plain_install_lacks():
    """The simulation hides the extras' clients and the test tools, and keeps the core's own dependencies."""
    hidden = set(plain_install_hides())
    assert {"s3fs", "obstore", "psycopg", "pypgstac", "pytest", "moto"} <= hidden
    assert not {"zarr", "xarray", "fsspec", "moczarr", "moczarr_intake", "numpy"} & hidden


@pytest.fixture
def served(tmp_path):
    """A copy of the sample under ``stores/``, served over HTTP on 127.0.0.1: ``(url, stores)``."""
    stores = tmp_path / "stores"
    stores.mkdir()
    shutil.copytree(SAMPLE, stores / "sample")

    with serve_folder(stores) as url:
        yield url, stores


@pytest.mark.subprocess
def test_a_plain_install_opens_what_a_catalog_publishes_over_http(served, tmp_path):
    """README's ``pip install .``, then a catalog built with ``--href-base http://...``: an Item's href with its
    ``xarray:open_kwargs``, the Item through ``open_stac`` (docs/stac.md's client) and the Intake entry all open."""
    url, _ = served
    done = run("build", "stores/sample", "--out", "cat", "--href-base", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    opened = python(
        """
        import importlib.util, intake, pystac, xarray as xr
        from moczarr_intake import open_stac

        assert importlib.util.find_spec("s3fs") is None and importlib.util.find_spec("obstore") is None
        top = pystac.Catalog.from_file("cat/stac/catalog.json")
        item = next(i for i in top.get_items(recursive=True) if i.properties.get("moczarr:cell_order") == 6)
        asset = item.assets["data"]
        assert asset.href.startswith("http://127.0.0.1:"), asset.href
        a = xr.open_dataset(asset.href, **asset.extra_fields["xarray:open_kwargs"]).load()
        b = open_stac(item).load()
        cat = intake.open_catalog("cat/catalog.yaml")
        name = next(k for k in cat if not k.endswith("_tree"))
        c = cat[name](order=6).read()
        print(a.sizes["cells"], b.sizes["cells"], c.sizes["cells"])
        """,
        hiding(tmp_path, plain_install_hides()),
        tmp_path,
    )
    assert opened.returncode == 0, opened.stderr
    sizes = opened.stdout.split()
    assert len(sizes) == 3 and len(set(sizes)) == 1 and int(sizes[0]) > 0


@pytest.mark.parametrize(
    "url, extra",
    [("s3://bucket/store", "s3"), ("gs://bucket/store", "gcs"), ("az://container/store", "azure")],
)
@pytest.mark.subprocess
def test_an_object_store_root_without_its_extra_names_the_extra(tmp_path, url, extra):
    opened = python(
        f"""
        import moczarr
        from moczarr.errors import MissingExtraError
        try:
            moczarr.open_hive({url!r}, storage_options={{"anon": True}})
        except MissingExtraError as exc:
            assert isinstance(exc, ImportError)
            print(exc)
        """,
        hiding(tmp_path, plain_install_hides()),
        tmp_path,
    )
    assert opened.returncode == 0, opened.stderr
    assert f"pip install 'moczarr[{extra}]'" in opened.stdout and url in opened.stdout


@pytest.mark.subprocess
def test_publish_without_the_pgstac_extra_is_one_line_naming_it(tmp_path):
    """The real ``moczarr-catalog publish`` with psycopg and pypgstac hidden: one ``error:`` line naming the extra,
    before the catalog or the database is touched."""
    done = run(
        "publish", "cat", "--pgstac", "postgresql://user@127.0.0.1:9/db", cwd=tmp_path,
        env=hiding(tmp_path, ["psycopg", "pypgstac", "psycopg_binary", "psycopg_pool"]),
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line == "error: publish needs psycopg and pypgstac, not installed here: pip install 'moczarr[pgstac]'"
