"""The layout rules of docs/architecture.md, checked on the source (ast), imports inside functions included.

- the layer table of docs/architecture.md: a module imports only its own layer
  and the layers below it (the lazy exports of an ``__init__.pyi`` stub count as
  imports of its package);
- no import cycle in or across the project's packages (importing ``a.b.c`` also
  runs ``a/__init__`` and ``a/b/__init__``, so those count as edges too);
- no private name (``_x``) imported from, or reached as an attribute of, another
  module, and no private module imported from outside its package;
- ``moczarr_intake`` uses only the public boundary of the reader: names in the
  ``__all__`` of :data:`PUBLIC_CORE`;
- the size rule, in the packages of :data:`SIZED`: no module over
  :data:`MAX_MODULE_LINES` lines, no function or method over
  :data:`MAX_FUNCTION_LINES` lines (``def`` to its last line, docstring included):
  a longer one is cut along its seams, whole functions and classes moved.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.helpers import REPO

PACKAGES = ("moczarr", "moczarr_intake")
#: the reader modules the catalog may import (moczarr.tiles.app: the tile server ``moczarr-catalog serve`` runs)
PUBLIC_CORE = {
    "moczarr",
    "moczarr.metadata",
    "moczarr.errors",
    "moczarr.moraine",
    "moczarr.testing",
    "moczarr.tiles.app",
}
#: the packages held to the size rule (a package joins by its name here)
SIZED = ("moczarr", "moczarr_intake")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _layer_table() -> dict[str, int]:
    """``{package or module: layer}`` from the table of docs/architecture.md (rows ``| N | `a`, `b` | ... |``)."""
    table: dict[str, int] = {}
    for line in (REPO / "docs" / "architecture.md").read_text().splitlines():
        row = re.match(r"^\|\s*(\d+)\s*\|([^|]*)\|", line)
        if row:
            for name in re.findall(r"`([\w.]+)`", row.group(2)):
                table[name] = int(row.group(1))
    return table


LAYERS = _layer_table()


def layer_of(module: str) -> int:
    """The layer of a module: that of the longest table entry it is, or lies inside."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        if name in LAYERS:
            return LAYERS[name]
    raise AssertionError(f"{module} is in no layer of docs/architecture.md")


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(importer: str, node: ast.ImportFrom, *, package: bool | None = None) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not (_is_package(importer) if package is None else package):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _sources(name: str) -> list[tuple[Path, bool]]:
    """The module's source, and for a package its ``__init__.pyi`` stub of lazy exports when there is one."""
    path = MODULES[name]
    out = [(path, False)]
    stub = path.with_suffix(".pyi")
    if path.name == "__init__.py" and stub.is_file():
        out.append((stub, True))
    return out


def _imports(name: str) -> list[tuple[str, str | None, int]]:
    """``(module imported, name taken from it or None, line)`` for every import statement of a module."""
    out = []
    for path, _stub in _sources(name):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out += [(alias.name, None, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(name, node)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES:  # ``from . import ids``: the submodule itself
                        out.append((sub, None, node.lineno))
                    else:
                        out.append((target, alias.name, node.lineno))
    return [(m, n, line) for m, n, line in out if m.split(".")[0] in PACKAGES]


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for name in MODULES:
        for target, _, _ in _imports(name):
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                ancestor = ".".join(parts[:i])
                if ancestor not in MODULES or ancestor == name:
                    continue
                if i < len(parts) and (name == ancestor or name.startswith(ancestor + ".")):
                    continue  # a package's own submodule does not re-run the package __init__
                graph[name].add(ancestor)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _upward(name: str) -> list[str]:
    """The imports of ``name`` that reach a higher layer than its own (the reader's or the catalog's)."""
    own = layer_of(name)
    problems = []
    for target, _, line in _imports(name):
        if target != name and layer_of(target) > own:
            problems.append(f"line {line}: {target} (layer {layer_of(target)})")
    return problems


def test_the_layout_checker_sees_what_it_checks():
    """The walker finds this project's modules, their imports (inside functions and stubs), and the layers."""
    assert {"moczarr.openers.hive", "moczarr.metadata", "moczarr_intake.stac.build", "moczarr.moraine.reader"} <= set(
        MODULES
    )
    graph = _edges()
    assert "moczarr.errors" in graph["moczarr.openers.hive"]
    assert "moczarr.metadata" in graph["moczarr_intake.stac.build"]
    assert "moczarr_intake.stac" in graph["moczarr_intake.moraine_catalog"]  # the parent package runs first
    assert "moczarr.openers.hive" in graph["moczarr"]  # a stub's lazy export is an edge
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert layer_of("moczarr.errors") == 0 < layer_of("moczarr.storage._storage") < layer_of("moczarr.openers.hive")
    assert layer_of("moczarr") > layer_of("moczarr.openers.tree")
    assert layer_of("moczarr_intake.cli") > layer_of("moczarr.testing")
    assert (
        layer_of("moczarr.testing") < layer_of("moczarr_intake.model.options") < layer_of("moczarr_intake.stac.build")
    )
    assert layer_of("moczarr_intake.living.refresh") < layer_of("moczarr_intake.pipeline.updating")
    assert (
        layer_of("moczarr_intake.pipeline.building") < layer_of("moczarr_intake.cli.build") < layer_of("moczarr_intake")
    )


def test_every_module_is_in_a_layer():
    assert not [m for m in MODULES if not _in_table(m)]


def _in_table(module: str) -> bool:
    try:
        layer_of(module)
    except AssertionError:
        return False
    return True


def test_no_import_cycle():
    assert _cycle(_edges()) is None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_import_from_a_higher_layer(name):
    assert not _upward(name), f"{name} (layer {layer_of(name)}) imports from higher layers: {_upward(name)}"


def test_the_layer_check_sees_an_upward_import(tmp_path, monkeypatch):
    """An import of the openers from the format layer, inside a function, is refused."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from ..openers.hive import open_hive\n")
    monkeypatch.setitem(MODULES, "moczarr.format.fake", fake)
    assert _upward("moczarr.format.fake") == ["line 2: moczarr.openers.hive (layer 7)"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_name_crosses_a_module(name):
    tree = ast.parse(MODULES[name].read_text())
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(name, node)
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    bound[alias.asname] = alias.name
    problems = [
        f"line {line}: {n} from {m}"
        for m, n, line in _imports(name)
        if n and n.startswith("_") and not n.startswith("__") and m != name
    ]
    problems.extend(
        f"line {node.lineno}: {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in bound
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    )
    for target, _, line in _imports(name):
        parts = target.split(".")
        for i, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                owner = ".".join(parts[:i])
                if not (name == owner or name.startswith(owner + ".")):
                    problems.append(f"line {line}: the private module {target} of {owner}")
                break
    assert not problems, f"{name} reaches private names of other modules: {problems}"


def _public(module: str) -> set[str]:
    return set(importlib.import_module(module).__all__)


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("moczarr_intake")))
def test_the_catalog_uses_only_the_public_reader(name):
    problems = []
    for target, taken, line in _imports(name):
        if target.split(".")[0] != "moczarr":
            continue
        if target not in PUBLIC_CORE:
            problems.append(f"line {line}: imports {target} (public: {sorted(PUBLIC_CORE)})")
        elif taken is not None and taken not in _public(target):
            problems.append(f"line {line}: {taken} is not in {target}.__all__")
    assert not problems, f"{name}: {problems}"


def _oversized(path: Path) -> list[str]:
    """What in one source file breaks the size rule: the module's line count, each function too long."""
    text = path.read_text()
    problems = []
    if len(text.splitlines()) > MAX_MODULE_LINES:
        problems.append(f"{len(text.splitlines())} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                problems.append(f"line {node.lineno}: {node.name} is {length} lines (at most {MAX_FUNCTION_LINES})")
    return problems


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.split(".")[0] in SIZED))
def test_no_module_or_function_over_the_size_rule(name):
    assert not _oversized(MODULES[name]), f"{MODULES[name].relative_to(REPO)}: {_oversized(MODULES[name])}"


def _def(name: str, lines: int, indent: str = "") -> str:
    """Source of a function of exactly ``lines`` lines: its ``def`` and ``lines - 1`` statements."""
    return f"{indent}def {name}():\n" + "".join(f"{indent}    x = {i}\n" for i in range(lines - 1))


def test_the_size_rule_sees_a_long_function_and_a_long_module(tmp_path):
    """A function or method one line over the limit and a module one line over are refused; the limits are not."""
    fn, mod = MAX_FUNCTION_LINES, MAX_MODULE_LINES
    fits = tmp_path / "fits.py"
    fits.write_text(_def("f", fn) + "\n" * (mod - fn))
    assert len(fits.read_text().splitlines()) == mod
    assert _oversized(fits) == []
    long = tmp_path / "long.py"
    long.write_text(_def("f", fn + 1) + "class C:\n" + _def("g", fn + 1, "    ") + "\n" * (mod - 2 * fn - 2))
    assert _oversized(long) == [
        f"{mod + 1} lines (at most {mod})",
        f"line 1: f is {fn + 1} lines (at most {fn})",
        f"line {fn + 3}: g is {fn + 1} lines (at most {fn})",
    ]


def test_the_layer_check_sees_an_upward_import_in_the_catalog(tmp_path, monkeypatch):
    """The living catalog calling back up into the build pipeline, inside a function, is refused."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from ..pipeline.building import run_build\n")
    monkeypatch.setitem(MODULES, "moczarr_intake.living.fake", fake)
    assert _upward("moczarr_intake.living.fake") == [
        f"line 2: moczarr_intake.pipeline.building (layer {layer_of('moczarr_intake.pipeline')})"
    ]
