"""moczarr: read morton-hive zarr stores (sparse HEALPix datasets) lazily with xarray.

The one-line opens::

    import moczarr
    ds = moczarr.open_hive("path/to/store")                 # every leaf, one lazy Dataset
    ds = moczarr.open_hive(root, aoi=["4331421"])           # rows meeting an AOI
    ds = moczarr.open_hive(root, aoi=moczarr.BBox(-77, 38, -76, 39))   # or a place
    leaf = moczarr.open_leaf(root, "4331421")               # one leaf
    tree = moczarr.open_store(root)                         # products and resolutions
    level = moczarr.open_level(root, 6)                     # one resolution
"""

from .backend import resolve_cell_order
from .cells import compose, join_coarse, parent_cells
from .coverage import aoi_mask
from .declaration import PyramidDeclaration, pyramid_declaration, pyramid_levels
from .errors import (
    AOIError,
    AOITypeError,
    ArgumentError,
    ArgumentTypeError,
    ArrayContractError,
    ChunkError,
    CoverageError,
    CoverageFallbackWarning,
    DebrisWarning,
    EmptySelectionWarning,
    IndexDegradedWarning,
    IndexKindMismatchError,
    KeyContainmentError,
    LevelOmittedWarning,
    ManifestError,
    MapError,
    MissingLeafWarning,
    MissingSchemaError,
    MixedOrderError,
    MoczarrError,
    MoczarrWarning,
    MoraineLevelError,
    NoCoverageError,
    NotAHiveStoreError,
    NotAMorainePyramidError,
    ObjectDroppedWarning,
    PrecisionWarning,
    ProductError,
    PyramidError,
    RaggedError,
    SchemaError,
    SelectionError,
    StaleCoverageError,
    StampError,
    StorageError,
    StoragePermissionError,
    StorageThrottledError,
    StorageTimeoutError,
    StoreNotFoundError,
    UncommittedError,
    UnsupportedVersionError,
    VersionPointerError,
    WindowError,
)
from .hive import list_windows, open_hive, open_leaf, read_coverage_bitmap
from .index import MortonMocIndex
from .manifest import Manifest
from .maps import cell_centers, plot_cells
from .occupancy import occupied
from .places import BBox, Circle, aoi_cover
from .pyramid import level_demotions, open_level, open_overview_order, open_pyramid
from .ragged import decode_cell, decode_variable, parse_ragged_attrs, read_ragged
from .ranges import MortonRanges
from .roster import list_products, read_manifest
from .storage import count_requests
from .store import leaf_data_prefix, read_commits
from .times import observed_between
from .tree import finest_source_at, open_store, overview_orders, source_orders
from .verify import Finding, VerifyReport, verify_store

__version__ = "0.1.0"

__all__ = [
    "BBox",
    "Circle",
    "MapError",
    "cell_centers",
    "occupied",
    "plot_cells",
    "aoi_cover",
    "observed_between",
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
    "decode_variable",
    "AOIError",
    "AOITypeError",
    "CoverageError",
    "CoverageFallbackWarning",
    "DebrisWarning",
    "EmptySelectionWarning",
    "IndexDegradedWarning",
    "LevelOmittedWarning",
    "Manifest",
    "ManifestError",
    "MissingSchemaError",
    "MixedOrderError",
    "MoczarrError",
    "MoczarrWarning",
    "MoraineLevelError",
    "NoCoverageError",
    "NotAMorainePyramidError",
    "NotAHiveStoreError",
    "ObjectDroppedWarning",
    "PrecisionWarning",
    "ProductError",
    "PyramidDeclaration",
    "PyramidError",
    "RaggedError",
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
    "resolve_cell_order",
    "source_orders",
    "Finding",
    "VerifyReport",
    "verify_store",
]
