"""The newer Intake readers/datatypes layer (``intake.imports`` entry point).

Importing this module registers a datatype recognised by its ``morton_hive.json``
and two readers, so ``intake.readers`` discovery and ``version: 2`` catalogs
find them::

    import intake
    data = moczarr_intake.readers.MortonHive(url="path/to/store")
    ds = intake.reader_from_call ... or MortonLevelReader(data).read(cell_order=6)
"""

from __future__ import annotations

from intake.readers.datatypes import FileData
from intake.readers.readers import BaseReader

import moczarr


class MortonHive(FileData):
    """A morton-hive store (a bare store or one product of a multi-product root)."""

    filepattern = ""
    structure = {"hierarchy", "array"}
    mimetypes = r"application/vnd\+zarr.*profile=morton-hive"
    contains = {r"morton_hive\.json$"}


class MortonLevelReader(BaseReader):
    """One resolution of a store as an ``xarray.Dataset`` (:func:`moczarr.open_level`)."""

    output_instance = "xarray:Dataset"
    implements = {MortonHive}
    imports = {"moczarr", "xarray"}
    func = "moczarr:open_level"
    url_arg = "store_root"

    def _read(self, data, cell_order=None, window=None, aoi=None, all_time=False, **kw):
        order = None if cell_order is None else int(cell_order)
        return moczarr.open_level(data.url, order, window, aoi, all_time, storage_options=data.storage_options, **kw)


class MortonStoreReader(BaseReader):
    """A store's products and resolutions as an ``xarray.DataTree`` (:func:`moczarr.open_store`)."""

    output_instance = "xarray:DataTree"
    implements = {MortonHive}
    imports = {"moczarr", "xarray"}
    func = "moczarr:open_store"
    url_arg = "store_root"

    def _read(self, data, products=None, aoi=None, window=None, **kw):
        return moczarr.open_store(data.url, products, aoi, window, storage_options=data.storage_options, **kw)
