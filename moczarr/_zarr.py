"""The zarr internals moczarr relies on, in one place, for the zarr releases named in :data:`SUPPORTED`.

zarr-python 3 keeps its codec pipeline, array metadata records, buffer
prototype and event-loop bridge under ``zarr.core``, which is not a public API
and changes between minor releases. The data plane decodes chunks without
zarr's array machinery (one codec chain parsed per variable, chunks read in
batches), the verifier reads arrays through ``AsyncArray`` and the storage
layer bridges its async reads with zarr's loop, so they need these names. They
are imported here and nowhere else; ``tests/reader/test_zarr_compat.py`` pins the
releases this module is known to work with, and ``pyproject.toml`` declares
the same range.

Importing this module imports zarr: import it inside the functions that need it
where import time matters.
"""

from __future__ import annotations

from zarr.core.array import AsyncArray
from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.chunk_utils import ChunkTransform
from zarr.core.codec_pipeline import AsyncChunkTransform
from zarr.core.metadata.v3 import ArrayV3Metadata, RegularChunkGridMetadata
from zarr.core.sync import sync

#: the zarr minor releases (``major.minor``) these internals are known to hold for
SUPPORTED = ("3.3", "3.4")

__all__ = [
    "SUPPORTED",
    "ArrayConfig",
    "ArraySpec",
    "ArrayV3Metadata",
    "AsyncArray",
    "AsyncChunkTransform",
    "ChunkTransform",
    "RegularChunkGridMetadata",
    "default_buffer_prototype",
    "sync",
]
