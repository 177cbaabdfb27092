"""STAC for morton-hive stores and moraine pyramids: build, validate, thumbnails, and the way back.

One module per job: :mod:`.fields` (what a product's documents say), :mod:`.documents`
(Items, Collections and Catalogs as plain dicts, made once), :mod:`.save` (their places,
links, store addresses, quicklooks and bytes), :mod:`.build` (the catalog, from roots to files),
:mod:`.validate` (offline schema validation), :mod:`.thumbnails` (quicklook
PNGs), :mod:`.webmap` (web-map links and renders to a tile server), :mod:`.geoparquet`
(the Items as stac-geoparquet, for a STAC API server), :mod:`.open` (open an Item or
Collection with the reader it names).
"""

from moczarr.metadata import geometry_bbox, window_interval

from ..model.access import public_storage_options
from .build import StacCatalog, apply_href_policy, build_stac, product_collection, write_stac
from .fields import (
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
)
from .geoparquet import (
    API_COLLECTIONS,
    API_ITEMS,
    ApiDocuments,
    ApiOutputs,
    PendingApiOutputs,
    api_documents,
    machine_paths,
    start_api_outputs,
    write_api_collections,
    write_api_items,
    write_api_outputs,
    write_geoparquet,
)
from .open import StacDocumentError, StacNotFoundError, open_hint, open_stac, read_stac
from .thumbnails import draw_level_thumbnail, draw_moraine_thumbnail, draw_thumbnail
from .validate import MissingSchemaError, schema_dir, validate_document, validate_offline

__all__ = [
    "API_COLLECTIONS",
    "API_ITEMS",
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
    "ApiDocuments",
    "ApiOutputs",
    "MissingSchemaError",
    "PendingApiOutputs",
    "StacCatalog",
    "StacDocumentError",
    "StacNotFoundError",
    "api_documents",
    "apply_href_policy",
    "build_stac",
    "draw_level_thumbnail",
    "draw_moraine_thumbnail",
    "draw_thumbnail",
    "geometry_bbox",
    "machine_paths",
    "open_hint",
    "open_stac",
    "product_collection",
    "public_storage_options",
    "read_stac",
    "schema_dir",
    "start_api_outputs",
    "validate_document",
    "validate_offline",
    "window_interval",
    "write_api_collections",
    "write_api_items",
    "write_api_outputs",
    "write_geoparquet",
    "write_stac",
]
