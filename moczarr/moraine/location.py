"""A moraine pyramid's directory: a local path or an fsspec URL, read through moczarr's storage handle."""

from __future__ import annotations

import os
from typing import Any

import zarr
import zarr.errors

from ..errors import ArgumentError, MoczarrError, PyramidError, StorageError
from ..storage import Storage, is_remote, join_location, normalize_location


class Location:
    """A pyramid directory: a local path (or ``file://`` URL; ``storage_options`` are then unused)
    or an fsspec URL plus its storage options."""

    def __init__(self, path: Any, storage_options: dict | None = None):
        try:
            raw = os.fsdecode(os.fspath(path))
        except (TypeError, ValueError) as exc:
            raise ArgumentError(f"path must be a local path or an fsspec URL, got {path!r}") from exc
        if storage_options is not None and not isinstance(storage_options, dict):
            raise ArgumentError(f"storage_options must be a dict, got {storage_options!r}")
        self.storage_options = dict(storage_options or {})
        self.local = not is_remote(raw)
        self.root = normalize_location(raw)
        self.path = self.root
        self._storage: Storage | None = None

    # zarr -----------------------------------------------------------------------
    @property
    def storage(self) -> Storage:
        """moczarr's bounded, typed store handle (timeouts, retry budget, errors naming the object)."""
        if self._storage is None:
            self._storage = Storage.open(self.root, None if self.local else self.storage_options)
        return self._storage

    @property
    def store(self):
        return self.storage.store

    def url(self, name: str) -> str:
        return join_location(self.root, name)

    def try_open(self, name: str):
        """The zarr array ``name`` (v2 or v3), or ``None`` when there is none there."""
        try:
            return zarr.open_array(store=self.store, path=name, mode="r", zarr_format=None)
        except (FileNotFoundError, zarr.errors.NodeNotFoundError):
            return None
        except MoczarrError:  # a typed storage failure: not a statement about the content
            raise
        except OSError as exc:  # permissions, a name the filesystem refuses
            raise StorageError(f"{self.url(name)}: cannot be read ({type(exc).__name__}: {exc})") from exc
        except Exception as exc:  # a group, unreadable metadata, ...
            raise PyramidError(f"{self.url(name)} is not a readable zarr array: {exc}") from exc

    def probe(self, name: str):
        """:meth:`try_open` of the first object a recognition reads; a storage failure there names the directory.

        The probe object is an implementation detail of recognising a pyramid:
        a store that cannot be reached is reported as itself, first. Raises the
        same :class:`~moczarr.errors.StorageError` subclass, naming :attr:`path`
        and then the failed read.
        """
        try:
            return self.try_open(name)
        except StorageError as exc:
            raise type(exc)(f"{self.path}: cannot be read ({exc})") from exc

    def open(self, name: str, what: str):
        arr = self.try_open(name)
        if arr is None:
            raise PyramidError(f"{self.path}: {name} ({what}) is missing")
        return arr

    # plain files ----------------------------------------------------------------
    def read_bytes(self, name: str) -> bytes | None:
        """The bytes of a plain object, None when it is absent."""
        return self.storage.get_bytes(name)
