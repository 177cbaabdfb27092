"""Public names imported on first use (PEP 562), declared once in a package's ``__init__.pyi``.

zarr, dask, xarray and mortie (which brings pandas) cost most of a second to
import; a catalog listing, an xarray backend probe or a CLI's ``--help`` needs
none of them. A package that re-exports names from its submodules lists them
as ``from .module import name as name`` lines in its ``__init__.pyi`` stub
(which type checkers read) and gets its ``__getattr__``, ``__dir__`` and
``__all__`` from :func:`attach_stub`, so the table exists once.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path


def stub_exports(owner: str, init_file: str) -> dict[str, str]:
    """``{name: module}`` of the relative ``from .module import name`` lines of the stub beside ``init_file``.

    ``owner`` is the package the stub belongs to; modules are returned as
    absolute names. Raises :class:`ValueError` when a line imports other than
    relatively, or one export is named twice.
    """
    stub = Path(init_file).with_suffix(".pyi")
    tree = ast.parse(stub.read_text(), filename=str(stub))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 or not node.module:
                raise ValueError(f"{stub}: only relative 'from .module import name' lines may export names")
            module = importlib.util.resolve_name("." * node.level + node.module, owner)
            for alias in node.names:
                name = alias.asname or alias.name
                if name in out:
                    raise ValueError(f"{stub}: {name!r} is exported twice")
                out[name] = module
    return out


def attach_stub(owner: str, init_file: str) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for package ``owner`` (call with ``__name__, __file__``).

    A name is imported from its module on its first access and then bound on
    ``owner``, so later lookups are plain attribute reads. The package's
    submodules are reachable as attributes too (``moczarr.errors`` after
    ``import moczarr``). Unknown names raise :class:`AttributeError`, as for
    any module.
    """
    source = stub_exports(owner, init_file)

    def __getattr__(name: str) -> object:
        module = source.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{owner}.{name}"):
            value = importlib.import_module(f"{owner}.{name}")
        else:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        setattr(sys.modules[owner], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[owner])) | set(source))

    return __getattr__, __dir__, sorted(source)


__all__ = ["attach_stub", "stub_exports"]
