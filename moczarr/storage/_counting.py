"""The counting store: the read-only zarr store wrapper every read of a handle goes through, and what a store is.

:class:`CountingStore` counts each request for :func:`~moczarr.storage.count_requests`,
retries transient failures under one :class:`~moczarr.storage.RetryPolicy` and
types the rest as :class:`~moczarr.errors.StorageError` naming the object's
address (:func:`describe_key`); :func:`client_name` and :func:`local_root` tell
which client a (wrapped) store reads through.
"""

from __future__ import annotations

import os

from zarr.abc.store import ByteRequest, Store
from zarr.storage import FsspecStore, LocalStore, ObjectStore, WrapperStore

from .._zarr import default_buffer_prototype
from ._counter import record_request
from ._entries import Entries, list_entries, obstore_entries
from ._obstore import VerifiedObjectStore
from ._retry import RetryPolicy, read_with_retries, read_with_retries_blocking

_OBSTORE_SCHEME = {"S3Store": "s3", "GCSStore": "gs", "AzureStore": "az"}


class CountingStore(WrapperStore):
    """A read-only zarr store wrapper: counts each request, retries transient failures, types the rest.

    Every read runs under ``policy`` (:class:`~moczarr.storage.RetryPolicy`: a
    bounded number of attempts inside one deadline, transient failures only);
    a failure that survives it is raised as a
    :class:`~moczarr.errors.StorageError` naming the object's address.
    """

    def __init__(self, store: Store, policy: RetryPolicy | None = None):
        super().__init__(store)
        self.policy = policy or RetryPolicy.local()

    def with_read_only(self, read_only: bool = False) -> CountingStore:
        """This wrapper over the inner store's read-only (or writable) clone, with the same retry policy."""
        return type(self)(self._store.with_read_only(read_only), self.policy)

    def __enter__(self) -> CountingStore:
        return type(self)(self._store.__enter__(), self.policy)

    def address(self, key: str) -> str:
        """The user-facing address of a store key (``s3://bucket/...`` or a local path)."""
        return describe_key(self._store, key)

    async def get(self, key: str, prototype=None, byte_range: ByteRequest | None = None):
        record_request("GET", key)
        prototype = prototype or default_buffer_prototype()
        return await read_with_retries(
            lambda: self._store.get(key, prototype, byte_range), self.policy, self.address(key)
        )

    async def get_partial_values(self, prototype, key_ranges):
        key_ranges = list(key_ranges)
        for key, _ in key_ranges:
            record_request("GET", key)
        where = self.address(key_ranges[0][0]) if key_ranges else self.address("")
        return await read_with_retries(
            lambda: self._store.get_partial_values(prototype, key_ranges), self.policy, where
        )

    async def exists(self, key: str) -> bool:
        record_request("GET", key)
        return await read_with_retries(lambda: self._store.exists(key), self.policy, self.address(key))

    async def _listed(self, listing, prefix: str):
        async def collect():
            return [name async for name in listing()]

        for name in await read_with_retries(collect, self.policy, self.address(prefix) + "/ (LIST)"):
            yield name

    def list_dir(self, prefix: str):
        record_request("LIST", prefix)
        return self._listed(lambda: self._store.list_dir(prefix), prefix)

    def list_prefix(self, prefix: str):
        record_request("LIST", prefix)
        return self._listed(lambda: self._store.list_prefix(prefix), prefix)

    def list(self):
        record_request("LIST", "")
        return self._listed(self._store.list, "")

    async def list_entries(self, prefix: str) -> Entries:
        """The immediate children of ``prefix`` told apart (one delimiter-LIST, counted and retried)."""
        record_request("LIST", prefix)
        return await read_with_retries(
            lambda: list_entries(self._store, prefix), self.policy, self.address(prefix) + "/ (LIST)"
        )

    @property
    def blocking(self) -> bool:
        """True when the client has blocking calls (:meth:`get_blocking`, :meth:`list_entries_blocking`): obstore."""
        return isinstance(self._store, VerifiedObjectStore)

    def get_blocking(self, key: str) -> bytes | None:
        """:meth:`get` of a whole object in the calling thread (no event loop), counted and retried alike.

        Only where :attr:`blocking` is True.
        """
        record_request("GET", key)
        return read_with_retries_blocking(lambda: self._store.get_blocking(key), self.policy, self.address(key))

    def list_entries_blocking(self, prefix: str) -> Entries:
        """:meth:`list_entries` in the calling thread (no event loop); only where :attr:`blocking` is True."""
        import obstore

        record_request("LIST", prefix)
        store = self._store
        path = store.path(prefix.strip("/"))
        return read_with_retries_blocking(
            lambda: obstore_entries(obstore.list_with_delimiter(store.store, prefix=path or None), path),
            self.policy,
            self.address(prefix) + "/ (LIST)",
        )

    def __reduce__(self):
        return (CountingStore, (self._store, self.policy))


def describe_key(store: Store, key: str) -> str:
    """``s3://bucket/prefix/key`` for an fsspec or obstore store, ``/root/key`` for a local one."""
    if isinstance(store, FsspecStore):
        protocol = store.fs.protocol[0] if isinstance(store.fs.protocol, (tuple, list)) else store.fs.protocol
        path = store.path.strip("/")
        base = path if "://" in path else f"{protocol}://{path}"  # HTTP's paths are whole URLs
    elif isinstance(store, VerifiedObjectStore) and store.bucket_url is not None:  # not opened: no request for a name
        base = f"{store.bucket_url}/{store.prefix}".rstrip("/")
    elif isinstance(store, ObjectStore) and type(store.store).__name__ in _OBSTORE_SCHEME:
        inner = store.store
        bucket = inner.config.get("bucket") or inner.config.get("container_name") or ""
        below = [(inner.prefix or "").strip("/"), getattr(store, "prefix", "")]
        base = f"{_OBSTORE_SCHEME[type(inner).__name__]}://{bucket}/{'/'.join(p for p in below if p)}"
    elif isinstance(store, LocalStore):
        base = str(store.root)
    else:
        base = str(getattr(store, "path", "") or store)
    return f"{base.rstrip('/')}/{key}" if key else base


def client_name(store: Store) -> str:
    """``"local"``, ``"obstore"``, or the package of an fsspec store's filesystem (``"s3fs"``; ``"fsspec"``: HTTP)."""
    base = store._store if isinstance(store, WrapperStore) else store
    if isinstance(base, LocalStore):
        return "local"
    if isinstance(base, ObjectStore):
        return "obstore"
    if isinstance(base, FsspecStore):
        return type(base.fs).__module__.partition(".")[0]
    return type(base).__name__


def local_root(store: Store) -> str | None:
    """The directory of a (counted) ``LocalStore``, else None: such roots are read with plain file reads."""
    base = store._store if isinstance(store, WrapperStore) else store
    return os.fspath(base.root) if isinstance(base, LocalStore) else None
