"""Storage: one zarr store handle per open, batched concurrent reads, retries, the request counter.

The layer every read goes through: locations (local paths and URLs) normalised
once, a retry budget that types every failure as a :class:`moczarr.errors.StorageError`,
one in-flight limit per handle, and :mod:`moczarr.storage.keys`, the grammar
every key taken from store content must pass before it is read. Names are
imported on first use (see ``__init__.pyi``), so the light parts (locations,
keys) load no zarr.
"""

from .._lazy import attach_stub

__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
