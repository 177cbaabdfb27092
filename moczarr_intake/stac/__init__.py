"""STAC for morton-hive stores and moraine pyramids: build, validate, thumbnails, and the way back.

One module per job: :mod:`.build` (Collections, Items, the catalog),
:mod:`.validate` (offline schema validation), :mod:`.thumbnails` (quicklook
PNGs), :mod:`.geoparquet` (the Items as stac-geoparquet, for a STAC API
server), :mod:`.open` (open an Item or Collection with the reader it names).
"""

from moczarr.metadata import geometry_bbox, window_interval

from .build import (
    DATACUBE,
    ENGINE,
    FILE,
    HIVE_MEDIA_TYPE,
    MEDIA_TYPE,
    OPEN_LEVEL,
    OPEN_STORE,
    STORAGE,
    VERSION,
    XARRAY,
    apply_href_policy,
    build_stac,
    product_collection,
    public_storage_options,
    relativize_local_hrefs,
    stac_hrefs,
)
from .geoparquet import API_COLLECTIONS, write_api_collections, write_geoparquet
from .open import StacDocumentError, StacNotFoundError, open_hint, open_stac, read_stac
from .thumbnails import draw_level_thumbnail, draw_moraine_thumbnail, draw_thumbnail
from .validate import MissingSchemaError, schema_dir, validate_document, validate_offline

__all__ = [
    "API_COLLECTIONS",
    "DATACUBE",
    "ENGINE",
    "FILE",
    "HIVE_MEDIA_TYPE",
    "MEDIA_TYPE",
    "OPEN_LEVEL",
    "OPEN_STORE",
    "STORAGE",
    "VERSION",
    "XARRAY",
    "MissingSchemaError",
    "StacDocumentError",
    "StacNotFoundError",
    "apply_href_policy",
    "build_stac",
    "draw_level_thumbnail",
    "draw_moraine_thumbnail",
    "draw_thumbnail",
    "geometry_bbox",
    "open_hint",
    "open_stac",
    "product_collection",
    "public_storage_options",
    "read_stac",
    "relativize_local_hrefs",
    "schema_dir",
    "stac_hrefs",
    "validate_document",
    "validate_offline",
    "window_interval",
    "write_api_collections",
    "write_geoparquet",
]
