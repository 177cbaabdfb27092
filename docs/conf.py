"""Sphinx configuration: the pages of docs/ (Markdown, read by MyST) and an API reference generated from the docstrings.

Build it as CI does (warnings are errors): ``sphinx-build -W --keep-going -b html docs OUT``.
"""

import importlib
import re
from importlib.metadata import version as _version
from pathlib import Path

project = "moczarr"
author = "the moczarr developers"
copyright = "the moczarr developers (BSD-3-Clause)"
release = _version("moczarr")
version = ".".join(release.split(".")[:2])

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "generated/*.md"]
templates_path = ["_templates"]

# the pages link to each other's sections by their titles ([x](stac.md#a-stac-api-round-trip))
myst_heading_anchors = 3

# one page per public name, written at build time into docs/generated/ (git ignores it)
autosummary_generate = True
autosummary_ignore_module_all = False  # a module's public names are its __all__ (lazy packages included)
autosummary_imported_members = True  # ... which the lazy packages define in their submodules
autodoc_default_options = {"members": False}
autodoc_typehints = "signature"


def _reexports() -> set[str]:
    """Public names of a class that an earlier module of reference.md documents already (``moczarr.Manifest``
    before ``moczarr.metadata.Manifest``): their pages link to it, and the class is described (indexed) once."""
    reference = (Path(__file__).parent / "reference.md").read_text()
    modules = re.findall(r"^   (moczarr[\w.]*)$", reference.split("```", 2)[1], re.M)
    first, later = {}, set()
    for module in modules:
        package = importlib.import_module(module)
        for name in package.__all__:
            obj = getattr(package, name)
            if isinstance(obj, type):
                canonical = f"{obj.__module__}.{obj.__qualname__}"
                if first.setdefault(canonical, f"{module}.{name}") != f"{module}.{name}":
                    later.add(f"{module}.{name}")
    return later


autosummary_context = {"reexports": _reexports()}
numpydoc_show_class_members = False  # autosummary lists the members; numpydoc would list them twice
numpydoc_validation_checks: set[str] = set()

html_theme = "alabaster"
html_title = f"moczarr {release}"
