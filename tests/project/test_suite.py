"""The suite's own layout: tests mirror the packages, share through ``tests.helpers``, and name their store layers.

Read from the source with ``ast``, as ``test_layout`` reads the packages': a test module sits in the folder of
the package it tests, imports shared code from ``tests.helpers`` (never from a conftest or another test module),
and a test whose own code names a store of the running layer carries the marker that chooses its layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

TESTS = REPO / "tests"
#: the folders of test modules: the reader's, the catalog's, the project's
FOLDERS = ("reader", "catalog", "project")
#: a test naming one of these in its own code (or requesting the fixtures) reads the running test's layer
STORE_LOOKUPS = {"fixture_path", "layer_dir", "moraine_root", "fixtures", "copy_fixture"}
LAYER_MARKERS = {"layers", "conformance"}
MODULES = sorted(TESTS.rglob("test_*.py"))


def _markers(node: ast.expr) -> set[str]:
    """The ``pytest.mark.X`` names an expression (a decorator, a ``pytestmark`` value) applies."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
            found.add(sub.attr)
    return found


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def test_every_test_module_sits_in_the_folder_of_its_package():
    misplaced = [_rel(p) for p in MODULES if p.parent.parent != TESTS or p.parent.name not in FOLDERS]
    assert misplaced == [], f"move each into tests/reader, tests/catalog or tests/project: {misplaced}"


def test_shared_code_comes_from_the_helpers_never_a_conftest_or_a_test_module():
    bad = []
    for path in [*MODULES, *sorted(TESTS.rglob("conftest.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                last = (node.module or "").rsplit(".", 1)[-1]
                if last == "conftest" or last.startswith("test_"):
                    bad.append(f"{_rel(path)}:{node.lineno}: from {'.' * node.level}{node.module} import ...")
    assert bad == [], f"import shared code from tests.helpers (a fixture goes to a conftest.py): {bad}"


def test_a_test_on_the_running_layers_stores_is_marked_with_its_layers():
    """Unmarked, such a test would read one layer only, silently: mark it ``layers`` (or ``conformance``)."""
    unmarked = [f"{_rel(path)}::{name}" for path in MODULES for name in _unmarked_store_tests(path)]
    assert unmarked == [], f"mark these @pytest.mark.layers (or conformance): {unmarked}"


def _unmarked_store_tests(path: Path) -> list[str]:
    """The tests of a module that name a store lookup in their own code with no layer marker, nor one on the module."""
    tree = ast.parse(path.read_text())
    module_marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            module_marks |= _markers(node.value)
    if module_marks & LAYER_MARKERS:
        return []
    unmarked = []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        if set().union(*map(_markers, node.decorator_list)) & LAYER_MARKERS:
            continue
        named = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {a.arg for a in node.args.args}
        if named & STORE_LOOKUPS:
            unmarked.append(node.name)
    return unmarked
