"""moczarr: read morton-hive zarr stores (sparse HEALPix datasets) lazily with xarray.

The one-line opens::

    import moczarr
    ds = moczarr.open_hive("path/to/store")                 # every leaf, one lazy Dataset
    ds = moczarr.open_hive(root, aoi=["4331421"])           # rows meeting an AOI
    ds = moczarr.open_hive(root, aoi=moczarr.BBox(-77, 38, -76, 39))   # or a place
    leaf = moczarr.open_leaf(root, "4331421")               # one leaf
    tree = moczarr.open_store(root)                         # products and resolutions
    level = moczarr.open_level(root, 6)                     # one resolution

Every name below is imported on first use (the table is ``__init__.pyi``): ``import moczarr``
itself loads neither zarr, dask, xarray nor mortie.
"""

from ._lazy import attach_stub

_getattr, __dir__, __all__ = attach_stub(__name__, __file__)


def __getattr__(name: str) -> object:
    if name == "__version__":  # the installed distribution's, read only when asked (importlib.metadata is not free)
        from importlib.metadata import version

        return version("moczarr")
    return _getattr(name)
