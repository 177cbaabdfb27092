"""The newer Intake readers/datatypes layer (``intake.imports`` entry point).

Importing this module registers a datatype recognised by its ``morton_hive.json``
and two readers, so ``intake.readers`` discovery and ``version: 2`` catalogs
find them::

    import intake
    data = moczarr_intake.readers.MortonHive(url="path/to/store")
    ds = MortonLevelReader(data).read(cell_order=6)     # or zoom=6
"""

from __future__ import annotations

from typing import ClassVar

from intake.readers.datatypes import FileData
from intake.readers.readers import BaseReader

import moczarr

from .model.access import merge_storage_options
from .model.templates import parse_aoi


class MortonHive(FileData):
    """A morton-hive store (a bare store or one product of a multi-product root).

    Recognised by a ``morton_hive.json`` inside, or by the media type
    ``application/vnd.morton-hive+zarr`` (the ``morton-hive`` asset of a moczarr
    STAC Item; distinct from ``application/vnd+zarr``, which intake's ``Zarr`` claims).
    When made from such an asset, its metadata holds the asset's
    ``xarray:open_kwargs``, which the level reader takes as its defaults.
    """

    filepattern = ""
    structure: ClassVar[set[str]] = {"hierarchy", "array"}
    mimetypes = r"application/vnd\.morton-hive\+zarr"
    contains: ClassVar[set[str]] = {r"morton_hive\.json$"}


class MortonHiveTree(MortonHive):
    """A store root to be read whole, as a DataTree (:class:`MortonStoreReader`).

    Never guessed from a location or a media type (no pattern of its own), so
    intake's discovery hands a :class:`MortonHive` to exactly one reader
    (:class:`MortonLevelReader`); ``version: 2`` tree entries name this type.
    """

    mimetypes = ""
    contains: ClassVar[set[str]] = set()


def _asset_hints(data) -> dict:
    hints = (
        (data.metadata or {}).get("xarray:open_kwargs") if isinstance(getattr(data, "metadata", None), dict) else None
    )
    return {k: v for k, v in (hints or {}).items() if k in ("cell_order", "window", "all_time")}


def _storage_options(data):
    opts = data.storage_options
    hinted = (
        (data.metadata or {}).get("xarray:storage_options")
        if isinstance(getattr(data, "metadata", None), dict)
        else None
    )
    return opts or hinted or None


class MortonLevelReader(BaseReader):
    """One resolution of a store as an ``xarray.Dataset`` (:func:`moczarr.open_level`)."""

    output_instance = "xarray:Dataset"
    implements: ClassVar[set[type]] = {MortonHive}
    imports: ClassVar[set[str]] = {"moczarr", "xarray"}
    func = "moczarr:open_level"
    url_arg = "store_root"

    def _read(
        self, data, cell_order=None, window=None, aoi=None, all_time=False, *, order=None, zoom=None, level=None, **kw
    ):
        """:func:`moczarr.open_level`; ``order``/``zoom``/``level`` are aliases of ``cell_order``.

        Arguments not given default to the data's STAC hints (``xarray:open_kwargs``);
        ``storage_options=`` (credentials, say) are laid over the data's own.
        """
        hints = _asset_hints(data)
        r = moczarr.resolve_cell_order(cell_order, order=order, zoom=zoom, level=level)
        r = hints.get("cell_order") if r is None else r
        window = window or hints.get("window")
        all_time = bool(all_time or hints.get("all_time"))
        options = merge_storage_options(_storage_options(data), kw.pop("storage_options", None))
        return moczarr.open_level(data.url, r, window, parse_aoi(aoi), all_time, storage_options=options, **kw)


class MortonStoreReader(BaseReader):
    """A store's products and resolutions as an ``xarray.DataTree`` (:func:`moczarr.open_store`)."""

    output_instance = "xarray:DataTree"
    implements: ClassVar[set[type]] = {MortonHiveTree}
    imports: ClassVar[set[str]] = {"moczarr", "xarray"}
    func = "moczarr:open_store"
    url_arg = "store_root"

    def _read(self, data, products=None, aoi=None, window=None, **kw):
        """:func:`moczarr.open_store`; ``storage_options=`` (credentials) are laid over the data's own."""
        options = merge_storage_options(_storage_options(data), kw.pop("storage_options", None))
        return moczarr.open_store(data.url, products, parse_aoi(aoi), window, storage_options=options, **kw)
