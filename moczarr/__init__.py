"""moczarr: read morton-hive zarr stores (sparse HEALPix datasets) lazily with xarray.

The one-line opens::

    import moczarr
    ds = moczarr.open_hive("path/to/store")                 # every leaf, one lazy Dataset
    ds = moczarr.open_hive(root, aoi=["4331421"])           # rows meeting an AOI
    leaf = moczarr.open_leaf(root, "4331421")               # one leaf
    tree = moczarr.open_store(root)                         # products and resolutions
    level = moczarr.open_level(root, 6)                     # one resolution
"""

from .coverage import aoi_mask, read_coverage_bitmap
from .errors import (
    AOIError,
    ArgumentError,
    StoreNotFoundError,
    SelectionError,
    ArgumentTypeError,
    ChunkError,
    KeyContainmentError,
    MissingLeafWarning,
    SchemaError,
    StorageError,
    StoragePermissionError,
    StorageThrottledError,
    StorageTimeoutError,
    ArrayContractError,
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
from .index import IndexKindMismatchError, MortonMocIndex
from .manifest import Manifest, read_manifest
from .cells import compose, join_coarse, parent_cells
from .ranges import MortonRanges
from .products import finest_source_at, list_products, open_store, overview_orders, source_orders
from .pyramid import (
    level_demotions,
    open_level,
    open_overview_order,
    open_pyramid,
    pyramid_declaration,
    pyramid_levels,
)
from .ragged import RaggedError, decode_cell, decode_variable, parse_ragged_attrs, read_ragged
from .storage import count_requests
from .store import leaf_data_prefix, read_commits

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "StoreNotFoundError",
    "SelectionError",
    "ArgumentTypeError",
    "ChunkError",
    "KeyContainmentError",
    "MissingLeafWarning",
    "SchemaError",
    "StorageError",
    "StoragePermissionError",
    "StorageThrottledError",
    "StorageTimeoutError",
    "compose",
    "IndexKindMismatchError",
    "MortonMocIndex",
    "MortonRanges",
    "ArrayContractError",
    "RaggedError",
    "decode_variable",
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
    "decode_cell",
    "finest_source_at",
    "join_coarse",
    "leaf_data_prefix",
    "level_demotions",
    "list_products",
    "list_windows",
    "open_hive",
    "open_leaf",
    "open_level",
    "open_overview_order",
    "open_pyramid",
    "open_store",
    "overview_orders",
    "parent_cells",
    "parse_ragged_attrs",
    "pyramid_declaration",
    "pyramid_levels",
    "read_commits",
    "read_coverage_bitmap",
    "read_manifest",
    "read_ragged",
    "source_orders",
]
