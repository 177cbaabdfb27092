"""The ``moczarr`` xarray backend: ``xr.open_dataset(root, engine="moczarr")`` and ``xr.open_datatree``.

Registered under the ``xarray.backends`` entry point group, so any client that
hands xarray a location and open keywords (the xarray-assets STAC extension's
``xarray:open_kwargs``, xpystac, a portal's own code) opens one resolution of a
morton-hive store without importing moczarr itself::

    xr.open_dataset(root, engine="moczarr")                      # the native level
    xr.open_dataset(root, engine="moczarr", cell_order=6, window="2020")
    xr.open_datatree(root, engine="moczarr")                     # every product and level
    xr.open_datatree(local_root, window="2020")                  # a local root is recognised without engine=

One vocabulary: the **cell order** (HEALPix order of the level's cells).
``order``, ``zoom`` (HEALPix catalogs' word) and ``level`` are accepted as its
aliases; giving two different values raises :class:`TypeError`.

xarray imports every registered backend whenever it lists its engines, so
this module imports the openers (and with them zarr, dask and mortie) only
when it opens a store.
"""

from __future__ import annotations

import operator
import os
from pathlib import Path

from xarray.backends import BackendEntrypoint

from .errors import ArgumentTypeError, LevelOmittedError

#: the words accepted for the cell order, besides ``cell_order`` itself
CELL_ORDER_ALIASES = ("order", "zoom", "level")


def resolve_cell_order(cell_order=None, **aliases):
    """The one cell order among ``cell_order`` and its aliases (``order``, ``zoom``, ``level``), or None.

    Values may be ints or decimal strings (what templated catalogs render).
    Raises :class:`~moczarr.errors.ArgumentTypeError` (a :class:`TypeError`) for an
    unknown keyword, a value that is no integer, or two different values.
    """
    unknown = set(aliases) - set(CELL_ORDER_ALIASES)
    if unknown:
        raise ArgumentTypeError(
            f"unknown keyword(s) {sorted(unknown)}; the cell order is cell_order= (or {', '.join(CELL_ORDER_ALIASES)})"
        )
    given = {k: v for k, v in {"cell_order": cell_order, **aliases}.items() if v is not None and v != ""}
    try:
        values = {_as_order(v) for v in given.values()}
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"cell orders {given} must be integers or decimal strings") from None
    if len(values) > 1:
        raise ArgumentTypeError(
            f"conflicting cell orders {given}: give one of cell_order, {', '.join(CELL_ORDER_ALIASES)}"
        )
    return values.pop() if values else None


def _as_order(value) -> int:
    """An int cell order from an int or a decimal string (a bool or a float is no cell order)."""
    if isinstance(value, str):
        return int(value)
    if isinstance(value, bool):
        raise TypeError(value)
    return operator.index(value)  # ints and numpy ints; a float raises TypeError


def _location(filename_or_obj) -> str:
    if isinstance(filename_or_obj, (str, os.PathLike)):
        return os.fspath(filename_or_obj)
    raise ArgumentTypeError(
        f"the moczarr engine opens a store root (path or URL), not {type(filename_or_obj).__name__}"
    )


class MoczarrBackendEntrypoint(BackendEntrypoint):
    """xarray backend over :func:`moczarr.open_level` (datasets) and :func:`moczarr.open_store` (trees)."""

    description = "Open morton-hive zarr stores (sparse HEALPix datasets) with moczarr"
    url = "https://github.com/moczarr/moczarr"
    #: a store root opens as a tree (``open_datatree``, ``open_groups``): xarray guesses this engine for trees too
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj",
        "drop_variables",
        "cell_order",
        "window",
        "aoi",
        "all_time",
        "storage_options",
        "verify_chunks",
        "order",
        "zoom",
        "level",
    )

    def open_dataset(
        self,
        filename_or_obj,
        *,
        drop_variables=None,
        cell_order=None,
        window=None,
        aoi=None,
        all_time=False,
        storage_options=None,
        verify_chunks=False,
        order=None,
        zoom=None,
        level=None,
    ):
        """:func:`moczarr.open_level` of the store at ``filename_or_obj`` (native order by default).

        Raises :class:`~moczarr.errors.LevelOmittedError` (a ``LookupError``, from ``open_level``) when the level has
        no materialized object.
        """
        from .openers.pyramid import open_level

        root = _location(filename_or_obj)
        r = resolve_cell_order(cell_order, order=order, zoom=zoom, level=level)
        ds = open_level(
            root, r, window or None, aoi, bool(all_time), storage_options=storage_options, verify_chunks=verify_chunks
        )
        if ds is None:  # an all-time level with no stamped fold (warned); xarray needs a Dataset
            raise LevelOmittedError(f"{root}: cell order {r} has no stamped all-time fold to open")
        if drop_variables:
            ds = ds.drop_vars(
                [drop_variables] if isinstance(drop_variables, str) else list(drop_variables), errors="ignore"
            )
        return ds

    def open_datatree(
        self,
        filename_or_obj,
        *,
        drop_variables=None,
        products=None,
        window=None,
        aoi=None,
        storage_options=None,
        verify_chunks=False,
    ):
        """:func:`moczarr.open_store` of the store root at ``filename_or_obj``."""
        from .openers.tree import open_store

        tree = open_store(
            _location(filename_or_obj),
            products,
            aoi,
            window or None,
            storage_options=storage_options,
            verify_chunks=verify_chunks,
        )
        if drop_variables:
            names = [drop_variables] if isinstance(drop_variables, str) else list(drop_variables)
            tree = tree.map_over_datasets(lambda ds: ds.drop_vars(names, errors="ignore"))
        return tree

    def open_groups_as_dict(self, filename_or_obj, **kwargs) -> dict:
        """The nodes of :meth:`open_datatree` by path (``xr.open_groups``): ``{"/": root, "/atl06": ..., ...}``."""
        tree = self.open_datatree(filename_or_obj, **kwargs)
        return {node.path: node.to_dataset() for node in tree.subtree}

    def guess_can_open(self, filename_or_obj) -> bool:
        """True for a local store root: a ``morton_hive.json`` there, or in one of its product folders.

        Remote roots are never probed (no request is made to guess); pass ``engine="moczarr"``.
        """
        from .format.manifest import MANIFEST_NAME

        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        text = os.fspath(filename_or_obj)
        if "://" in text and not text.startswith("file://"):
            return False
        path = Path(text.removeprefix("file://"))
        if not path.is_dir():
            return False
        if (path / MANIFEST_NAME).is_file():
            return True
        try:
            return any((child / MANIFEST_NAME).is_file() for child in path.iterdir() if child.is_dir())
        except OSError:
            return False
