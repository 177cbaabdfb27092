"""moczarr: read morton-hive zarr stores (sparse HEALPix datasets) lazily with xarray.

The one-line opens::

    import moczarr
    ds = moczarr.open_hive("path/to/store")                 # every leaf, one lazy Dataset
    ds = moczarr.open_hive(root, aoi=["4331421"])           # rows meeting an AOI
    ds = moczarr.open_hive(root, aoi=moczarr.BBox(-77, 38, -76, 39))   # or a place
    leaf = moczarr.open_leaf(root, "4331421")               # one leaf
    tree = moczarr.open_store(root)                         # products and resolutions
    level = moczarr.open_level(root, 6)                     # one resolution

Every name below is imported on first use (:mod:`moczarr.lazy`): ``import moczarr``
itself loads neither zarr, dask, xarray nor mortie.
"""

from .lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    __package__,
    {
        "assemble": ("pick_cells",),
        "backend": ("resolve_cell_order",),
        "cells": ("compose", "join_coarse", "parent_cells"),
        "coverage": ("aoi_mask",),
        "declaration": ("PyramidDeclaration", "pyramid_declaration", "pyramid_levels"),
        "errors": (
            "AOIError",
            "AOITypeError",
            "ArgumentError",
            "ArgumentTypeError",
            "ArrayContractError",
            "ChunkError",
            "CoverageError",
            "CoverageFallbackWarning",
            "DebrisWarning",
            "EmptySelectionWarning",
            "IndexDegradedWarning",
            "IndexKindMismatchError",
            "KeyContainmentError",
            "LevelOmittedError",
            "LevelOmittedWarning",
            "ManifestError",
            "MapError",
            "MissingLeafWarning",
            "MissingSchemaError",
            "MixedOrderError",
            "MoczarrError",
            "MoczarrWarning",
            "MoraineLevelError",
            "NoCoverageError",
            "NotAHiveStoreError",
            "NotAMorainePyramidError",
            "ObjectDroppedWarning",
            "PrecisionWarning",
            "ProductError",
            "PyramidError",
            "RaggedError",
            "SchemaError",
            "SelectionError",
            "StaleCoverageError",
            "StampError",
            "StorageError",
            "StoragePermissionError",
            "StorageThrottledError",
            "StorageTimeoutError",
            "StoreNotFoundError",
            "UncommittedError",
            "UnsupportedVersionError",
            "VersionPointerError",
            "WindowError",
        ),
        "hive": ("list_windows", "open_hive", "open_leaf", "read_coverage_bitmap"),
        "index": ("MortonMocIndex",),
        "manifest": ("Manifest",),
        "maps": ("cell_centers", "plot_cells"),
        "occupancy": ("occupied",),
        "places": ("BBox", "Circle", "aoi_cover"),
        "pyramid": ("level_demotions", "open_level", "open_overview_order", "open_pyramid"),
        "ragged": ("decode_cell", "decode_variable", "parse_ragged_attrs", "read_ragged"),
        "ranges": ("MortonRanges",),
        "roster": ("list_products", "read_manifest"),
        "storage": ("count_requests",),
        "store": ("leaf_data_prefix", "read_commits"),
        "times": ("observed_between",),
        "tree": ("finest_source_at", "open_store", "overview_orders", "source_orders"),
        "verify": ("Finding", "VerifyReport", "verify_store"),
    },
)
