"""moczarr: read morton-hive zarr stores (sparse HEALPix datasets) lazily with xarray.

The one-line opens::

    import moczarr
    ds = moczarr.open_hive("path/to/store")                 # every leaf, one lazy Dataset
    ds = moczarr.open_hive(root, aoi=["4331421"])           # rows meeting an AOI
    leaf = moczarr.open_leaf(root, "4331421")               # one leaf
"""

from .coverage import aoi_mask, read_coverage_bitmap
from .errors import (
    AOIError,
    CoverageError,
    CoverageFallbackWarning,
    DebrisWarning,
    EmptySelectionWarning,
    IndexDegradedWarning,
    LevelOmittedWarning,
    ManifestError,
    MixedOrderError,
    MoczarrError,
    MoczarrWarning,
    NoCoverageError,
    NotAHiveStoreError,
    ObjectDroppedWarning,
    PrecisionWarning,
    PyramidError,
    StaleCoverageError,
    StampError,
    UncommittedError,
    UnsupportedVersionError,
    VersionPointerError,
    WindowError,
)
from .hive import list_windows, open_hive, open_leaf
from .manifest import Manifest, read_manifest
from .products import list_products
from .storage import count_requests
from .store import leaf_data_prefix, read_commits

__version__ = "0.1.0"

__all__ = [
    "AOIError",
    "CoverageError",
    "CoverageFallbackWarning",
    "DebrisWarning",
    "EmptySelectionWarning",
    "IndexDegradedWarning",
    "LevelOmittedWarning",
    "Manifest",
    "ManifestError",
    "MixedOrderError",
    "MoczarrError",
    "MoczarrWarning",
    "NoCoverageError",
    "NotAHiveStoreError",
    "ObjectDroppedWarning",
    "PrecisionWarning",
    "PyramidError",
    "StaleCoverageError",
    "StampError",
    "UncommittedError",
    "UnsupportedVersionError",
    "VersionPointerError",
    "WindowError",
    "aoi_mask",
    "count_requests",
    "leaf_data_prefix",
    "list_products",
    "list_windows",
    "open_hive",
    "open_leaf",
    "read_commits",
    "read_coverage_bitmap",
    "read_manifest",
]
