"""The layout rules of docs/architecture.md, checked on the source (ast), imports inside functions included.

- no import cycle in or across the project's packages (importing ``a.b.c`` also
  runs ``a/__init__`` and ``a/b/__init__``, so those count as edges too);
- no private name (``_x``) imported from, or reached as an attribute of, another module;
- ``moczarr_intake`` uses only the public boundary: names in ``moczarr.__all__``
  and ``moczarr.metadata.__all__`` (and the public API of ``moczarr_moraine``
  and ``moczarr_samples``);
- the hive reader never imports ``moczarr_moraine``, ``moczarr_samples`` or
  ``moczarr_intake`` (only its deprecated re-export shims name another package),
  and ``moczarr_moraine`` shares only the error types, storage, locations and the findings record.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("moczarr", "moczarr_moraine", "moczarr_samples", "moczarr_intake")
#: one-release re-export modules kept at old import paths (docs/architecture.md)
SHIMS = {"moczarr.moraine", "moczarr.products", "moczarr_intake.summary"}
PUBLIC_CORE = {"moczarr", "moczarr.metadata"}
MORAINE_MAY_USE = {"moczarr.errors", "moczarr.storage", "moczarr.locations", "moczarr.findings"}


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


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not _is_package(importer):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str) -> list[tuple[str, str | None, int]]:
    """``(module imported, name taken from it or None, line)`` for every import statement of a module."""
    tree = ast.parse(MODULES[name].read_text(), filename=str(MODULES[name]))
    out = []
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
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_layout_checker_sees_what_it_checks():
    """The walker finds this project's modules and their imports, inside functions too."""
    assert {"moczarr.hive", "moczarr.metadata", "moczarr_intake.stac.build", "moczarr_moraine.reader"} <= set(MODULES)
    graph = _edges()
    assert "moczarr.errors" in graph["moczarr.hive"]
    assert "moczarr.metadata" in graph["moczarr_intake.stac.build"]
    assert "moczarr_intake.stac" in graph["moczarr_intake.moraine_catalog"]  # the parent package runs first
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    assert _cycle(_edges()) is None


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
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            if node.attr.startswith("_") and not node.attr.startswith("__"):
                problems.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    assert not problems, f"{name} reaches private names of other modules: {problems}"


def _public(module: str) -> set[str]:
    return set(importlib.import_module(module).__all__)


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("moczarr_intake") and m not in SHIMS))
def test_the_catalog_uses_only_the_public_reader(name):
    problems = []
    for target, taken, line in _imports(name):
        top = target.split(".")[0]
        if top == "moczarr":
            if target not in PUBLIC_CORE:
                problems.append(f"line {line}: imports {target} (public: {sorted(PUBLIC_CORE)})")
            elif taken is not None and taken not in _public(target):
                problems.append(f"line {line}: {taken} is not in {target}.__all__")
        elif top in ("moczarr_moraine", "moczarr_samples"):
            if target != top or (taken is not None and taken not in _public(top)):
                problems.append(f"line {line}: {target}.{taken} is not public API of {top}")
    assert not problems, f"{name}: {problems}"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.split(".")[0] in ("moczarr", "moczarr_moraine")))
def test_package_boundaries(name):
    targets = {t for t, _, _ in _imports(name)}
    if name.startswith("moczarr_moraine"):
        foreign = {t for t in targets if t.split(".")[0] == "moczarr" and t not in MORAINE_MAY_USE}
        assert not foreign, f"{name} uses the hive reader beyond errors/storage/locations: {foreign}"
        return
    if name in SHIMS:
        return
    foreign = {t for t in targets if t.split(".")[0] != "moczarr"}
    assert not foreign, f"the hive reader module {name} imports {foreign}"
