"""The one write path: whole objects below a catalog's output folder or prefix, never a store being read.

:class:`Writer` has the read path's bounds (the same client options and
timeouts, the ``moczarr_retry`` policy, one in-flight limit, every request
counted) and the conditional write a catalog's lock is made of
(:meth:`Writer.put_if`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from .._zarr import default_buffer_prototype, sync
from ..errors import ArgumentError
from ._counter import record_request
from ._counting import CountingStore
from ._locations import is_remote, normalize_location
from ._obstore import VerifiedObjectStore
from ._opening import DEFAULT_CONCURRENCY, check_open_arguments, make_store
from ._retry import read_with_retries
from ._storage import bounded_batch
from .keys import relative_key


class Writer:
    """Whole-object writes below one location: a catalog's output folder or prefix, never a store being read.

    The write path of the catalog builder (nothing in the reader writes). It
    has the read path's bounds: the same client options and timeouts
    (:func:`make_store`), every PUT, DELETE and LIST under the ``moczarr_retry``
    policy (whole-object PUTs and DELETEs are idempotent, so a retry is safe),
    at most ``concurrency`` requests in flight, each counted by
    :func:`count_requests` (``PUT``/``DELETE`` with the object kind). Local
    locations are written file by file (a temporary sibling renamed in, so a
    reader never sees half a document).
    """

    def __init__(
        self, url: str | os.PathLike, storage_options: dict | None = None, concurrency: int = DEFAULT_CONCURRENCY
    ):
        url, concurrency = check_open_arguments(url, storage_options, concurrency)
        self.location = normalize_location(url)
        self.concurrency = concurrency
        self._local = None if is_remote(url) else self.location
        store = None if self._local else make_store(url, storage_options, concurrency).with_read_only(False)
        assert store is None or isinstance(store, CountingStore)  # make_store wraps every object store to count
        self._store: CountingStore | None = store

    def _remote(self) -> CountingStore:
        """The writable store of an object-store location (only called once the local case is handled)."""
        assert self._store is not None
        return self._store

    def __repr__(self) -> str:
        return f"Writer({self.location!r})"

    def _address(self, rel: str) -> str:
        return f"{self.location.rstrip('/')}/{rel}"

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Write each ``(key, bytes)`` (keys relative to the location), concurrently; the first failure raises."""
        items = [(relative_key(rel, self.location), payload) for rel, payload in items]
        if self._local is not None:
            for rel, payload in items:
                record_request("PUT", rel)
                path = os.path.join(self._local, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(payload)
                os.replace(tmp, path)
            return

        async def put(rel: str, payload: bytes):
            record_request("PUT", rel)
            buf = default_buffer_prototype().buffer.from_bytes(payload)
            store = self._remote()
            await read_with_retries(lambda: store.set(rel, buf), store.policy, self._address(rel))

        if items:
            sync(bounded_batch([lambda r=r, p=p: put(r, p) for r, p in items], asyncio.Semaphore(self.concurrency)))

    def delete_many(self, rels: Sequence[str]) -> None:
        """Delete each object (keys relative to the location); a missing one is not an error."""
        rels = [relative_key(rel, self.location) for rel in rels]
        if self._local is not None:
            for rel in rels:
                record_request("DELETE", rel)
                with suppress(FileNotFoundError):
                    os.unlink(os.path.join(self._local, rel))
            return

        async def delete(rel: str):
            record_request("DELETE", rel)
            store = self._remote()
            await read_with_retries(lambda: store.delete(rel), store.policy, self._address(rel))

        if rels:
            sync(bounded_batch([lambda r=r: delete(r) for r in rels], asyncio.Semaphore(self.concurrency)))

    def get(self, rel: str) -> bytes | None:
        """An object's bytes (None when missing): what the previous build left there."""
        rel = relative_key(rel, self.location)
        if self._local is not None:
            record_request("GET", rel)
            try:
                with open(os.path.join(self._local, rel), "rb") as f:
                    return f.read()
            except (FileNotFoundError, NotADirectoryError):
                return None

        async def get():  # the counting store records and retries it
            buf = await self._remote().get(rel, default_buffer_prototype())
            return None if buf is None else buf.to_bytes()

        return sync(get())

    def put_if(self, rel: str, payload: bytes, tag: str | None = None) -> str | None:
        """Write ``rel`` only if it is absent (``tag`` None) or still the version ``tag``; its new version, or None.

        One conditional request (``If-None-Match: *`` / ``If-Match``): of two
        writers racing for the same condition exactly one succeeds; the other
        gets None. What a catalog's lock is made of. Locally the creation is
        atomic (a complete file linked in); the replacement compares first.
        Object stores are written through obstore (raises
        :class:`~moczarr.errors.ArgumentError` for another client).
        """
        rel = relative_key(rel, self.location)
        record_request("PUT", rel)
        if self._local is not None:
            path = os.path.join(self._local, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "wb") as f:
                f.write(payload)
            try:
                if tag is None:
                    try:
                        os.link(tmp, path)
                    except FileExistsError:
                        return None
                elif _local_tag(path) != tag:
                    return None
                else:
                    os.replace(tmp, path)
            finally:
                with suppress(FileNotFoundError):
                    os.unlink(tmp)
            return _local_tag(path)
        store = self._remote()
        inner = store._store
        if not isinstance(inner, VerifiedObjectStore):
            raise ArgumentError(
                f"{self.location}: a conditional write needs the obstore client (pip install 'moczarr[s3]')"
            )

        async def put():
            import obstore
            from obstore.exceptions import AlreadyExistsError, PreconditionError

            mode: Any = "create" if tag is None else {"e_tag": tag}
            try:
                done = await obstore.put_async(inner.store, inner.path(rel), payload, mode=mode)
            except (AlreadyExistsError, PreconditionError):
                return None
            return done.get("e_tag")

        return sync(read_with_retries(put, store.policy, self._address(rel)))

    def get_tagged(self, rel: str) -> tuple[bytes, str | None] | None:
        """An object's bytes and version tag (the ETag :meth:`put_if` compares), or None when it is missing."""
        rel = relative_key(rel, self.location)
        record_request("GET", rel)
        if self._local is not None:
            path = os.path.join(self._local, rel)
            try:
                with open(path, "rb") as f:
                    return f.read(), _local_tag(path)
            except (FileNotFoundError, NotADirectoryError):
                return None
        store = self._remote()
        inner = store._store
        if not isinstance(inner, VerifiedObjectStore):
            raise ArgumentError(
                f"{self.location}: a version tag is read through the obstore client (pip install 'moczarr[s3]')"
            )

        async def get():
            import obstore

            try:
                result = await obstore.get_async(inner.store, inner.path(rel))
                return bytes(await result.bytes_async()), result.meta.get("e_tag")
            except FileNotFoundError:
                return None

        return sync(read_with_retries(get, store.policy, self._address(rel)))

    def list_all(self, rel: str = "") -> list[str]:
        """Every object key below ``rel`` (relative to the location), sorted; a recursive listing."""
        rel = relative_key(rel, self.location)
        if self._local is not None:
            record_request("LIST", rel)
            base = os.path.join(self._local, rel)
            found = [
                os.path.relpath(os.path.join(folder, name), self._local).replace(os.sep, "/")
                for folder, _, names in os.walk(base)
                for name in names
            ]
            return sorted(found)

        async def collect():
            return sorted([key async for key in self._remote().list_prefix(f"{rel}/" if rel else "")])

        return sync(collect())


def _local_tag(path: str) -> str | None:
    """A local file's version tag for :meth:`Writer.put_if`: its inode and modification time (None when missing)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return f"{st.st_ino}-{st.st_mtime_ns}"
