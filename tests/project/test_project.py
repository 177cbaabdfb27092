"""Project hygiene: one version source, the project's links, the docs extra the site build installs."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import metadata, version

import moczarr
from tests.helpers import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_version_has_one_source():
    """pyproject's ``version``; ``moczarr.__version__`` is the installed distribution's, and no module repeats it."""
    declared = PYPROJECT["project"]["version"]
    assert moczarr.__version__ == version("moczarr") == declared
    literal = re.compile(r"^__version__\s*=", re.M)
    sources = [*(REPO / "moczarr").rglob("*.py"), *(REPO / "moczarr_intake").rglob("*.py")]
    assert [p.name for p in sources if literal.search(p.read_text())] == []


def test_the_project_links_are_declared():
    urls = PYPROJECT["project"]["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Source", "Issues", "Changelog"}
    assert all(url.startswith("https://") for url in urls.values())
    installed = {line.split(",", 1)[0] for line in metadata("moczarr").get_all("Project-URL") or []}
    assert installed == set(urls), "reinstall (pip install -e .) to refresh the installed metadata"


def test_the_docs_extra_holds_what_conf_py_loads():
    conf = (REPO / "docs" / "conf.py").read_text()
    extra = " ".join(PYPROJECT["project"]["optional-dependencies"]["docs"])
    assert "myst_parser" in conf and "myst-parser" in extra
    assert "numpydoc" in conf and "numpydoc" in extra
    assert "sphinx" in extra
