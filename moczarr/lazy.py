"""Public names imported on first use (PEP 562), so ``import moczarr`` loads no heavy library.

zarr, dask, xarray and mortie (which brings pandas) cost most of a second
to import; a catalog listing, an xarray backend probe or a CLI's ``--help``
needs none of them. A module that re-exports names from its package's
submodules declares them in one table and gets its ``__getattr__``,
``__dir__`` and ``__all__`` from :func:`lazy_exports`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping


def lazy_exports(
    owner: str, package: str, exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for module ``owner`` (call with ``__name__, __package__``).

    ``exports`` maps a module of ``package`` (``"hive"``) to the names it
    provides. A name is imported on its first access and then bound on
    ``owner``, so later lookups are plain attribute reads. When ``owner`` is
    a package, its submodules are reachable as attributes too
    (``moczarr.hive`` after ``import moczarr``). Unknown names raise
    :class:`AttributeError`, as for any module.
    """
    source = {name: module for module, names in exports.items() for name in names}
    if len(source) != sum(len(names) for names in exports.values()):
        raise ValueError(f"{owner}: a name is exported by two modules")

    def __getattr__(name: str) -> object:
        module = source.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
        elif package == owner and not name.startswith("__") and importlib.util.find_spec(f"{owner}.{name}"):
            value = importlib.import_module(f"{owner}.{name}")
        else:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        setattr(sys.modules[owner], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[owner])) | set(source))

    return __getattr__, __dir__, sorted(source)


__all__ = ["lazy_exports"]
