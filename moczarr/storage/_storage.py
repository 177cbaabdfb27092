"""The handle: one zarr store handle per open call, batched concurrent reads.

Every byte moczarr reads goes through :class:`Storage`, over the counting
store :func:`~moczarr.storage.make_store` opens (:mod:`moczarr.storage._opening`):
``LocalStore`` for local paths, zarr's ``ObjectStore`` over obstore for
``s3://``, ``gs://`` and ``az://`` roots whose options map onto it
(:mod:`moczarr.storage._obstore`), ``FsspecStore`` for every other URL. Reads
are issued concurrently (:func:`bounded_batch`), at most ``concurrency`` in
flight per handle (one limit for open and load alike); the lazy arrays built
on top read through the same store object, so one client serves the whole open
and every later compute. Local roots are read with plain file reads
(:func:`read_file`) in the calling thread. A handle that only reads small
documents from many threads of its caller (a catalog build) can make obstore's
blocking calls instead (``blocking=True``, :mod:`moczarr.storage._blocking`).
Every request is counted for :func:`~moczarr.storage.count_requests`.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from functools import partial
from typing import Any

from zarr.abc.store import Store

from .._zarr import default_buffer_prototype, sync
from ..errors import ArgumentError, MoczarrError, NotAHiveStoreError, StampError, StoreNotFoundError
from ._blocking import BlockingReads
from ._counter import record_request
from ._counting import CountingStore, client_name, local_root
from ._entries import Entries, local_entries
from ._opening import DEFAULT_CONCURRENCY, check_open_arguments, make_store
from .keys import product_name, relative_key

#: the one turn at local reads of the process (:meth:`Storage.turn`); reentrant, as a decode may read
_LOCAL_TURN = threading.RLock()


#: bytes a local read asks for first: every stamp, metadata document and zagg chunk fits
_FIRST_READ = 1 << 16
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)


def read_file(path: str) -> bytes:
    """A whole file's bytes through the OS calls alone (no file object: the hive's files are small and many).

    ``open()`` builds a buffered file object around every read; for the
    thousands of small files of an open or a load that costs more than the
    read. Raises what :func:`os.open` and :func:`os.read` raise
    (``FileNotFoundError``, ``NotADirectoryError``, ``IsADirectoryError``, ...).
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        payload = os.read(fd, _FIRST_READ)
        if len(payload) == _FIRST_READ:  # a large object: the rest in one more read (or a few, if it grows)
            parts = [payload]
            while part := os.read(fd, max(os.fstat(fd).st_size - sum(map(len, parts)), _FIRST_READ)):
                parts.append(part)
            payload = b"".join(parts)
        return payload
    finally:
        os.close(fd)


def missing_local_root(path: str, location: str) -> MoczarrError:
    """The error for a local store root that is not a folder: a file there, or nothing at all.

    A file is :class:`~moczarr.errors.NotAHiveStoreError` (the path holds
    something that is not a store, as a folder without a manifest does);
    nothing is :class:`~moczarr.errors.StoreNotFoundError`.
    """
    if os.path.lexists(path):
        return NotAHiveStoreError(
            f"{location}: a file, not a store root (a store root is a folder holding morton_hive.json, "
            "or product folders that do)"
        )
    return StoreNotFoundError(f"{location}: the store root does not exist")


class Storage:
    """A store handle rooted at one prefix, with batched reads.

    ``Storage`` never writes. Keys passed to its methods are relative to
    ``root`` (``""`` is the root itself). ``location`` is the user-facing
    address used in messages.

    ``blocking=True`` (an obstore client only; others ignore it) makes the
    handle's own reads (:meth:`get_many`, :meth:`list_many`,
    :meth:`list_entries`) blocking calls in the calling thread, under a
    thread-safe limit of ``concurrency`` slots
    (:class:`~moczarr.storage._blocking.BlockingReads`) instead of the event
    loop's: for a caller that reads from many threads of its own (a catalog
    build), at less than half the CPU per request. Such a handle is for
    metadata: lazy arrays built on its store would read through the event
    loop, under another limit.
    """

    def __init__(
        self,
        store: Store,
        root: str = "",
        *,
        location: str = "",
        concurrency: int = DEFAULT_CONCURRENCY,
        blocking: bool = False,
    ):
        self.store = store
        self.root = root.strip("/")
        self.location = location or root
        self.concurrency = max(1, int(concurrency))
        #: per-open memo of parsed small objects (the root MOC), so one open reads each once
        self.memo: dict = {}
        #: ``{store key: bytes or None}`` read ahead by :meth:`prefetch`, each answered once; shared with
        #: children, so a product's objects read ahead through its multi-product root are answered to the product
        self._prefetched: dict[str, bytes | None] = {}
        #: ``{store key: bytes}`` of the objects read at the top of the store (a root's and its products'
        #: documents, at most one component below this handle: what a catalog reports as file sizes),
        #: shared with its children; leaf objects are not recorded, so a long-lived open does not grow
        self.sizes: dict[str, int] = {}
        self._local = local_root(store)
        if self._local is not None:
            self._local = self._local.rstrip("/") or "/"
        #: one in-flight limit per event loop, shared by every batch of this handle (open and load alike)
        self._limits: dict[int, asyncio.Semaphore] = {}
        #: the limit and threads of blocking reads (``blocking=True`` on an obstore client), else None
        self._blocking = (
            BlockingReads(self.concurrency)
            if blocking and isinstance(store, CountingStore) and store.blocking and self._local is None
            else None
        )

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_limits": {}, "_blocking": self._blocking is not None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._blocking = BlockingReads(self.concurrency) if state["_blocking"] else None

    @classmethod
    def open(
        cls,
        url: str | os.PathLike,
        storage_options: dict | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        *,
        blocking: bool = False,
    ) -> Storage:
        """One handle for ``url``; every read of the open call goes through it (``blocking``: see the class).

        A blocking handle makes no request here: an S3 bucket's region, when
        the options do not give it, is looked up by its first read, in the
        thread that reads (so threads reading many buckets look them up at
        once), once per bucket in a process.
        """
        if isinstance(url, Storage):
            return url
        url, concurrency = check_open_arguments(url, storage_options, concurrency)
        store = make_store(url, storage_options, concurrency, deferred=blocking)
        return cls(store, "", location=url.rstrip("/"), concurrency=concurrency, blocking=blocking)

    def child(self, sub: str) -> Storage:
        """The same handle rooted at ``{root}/{sub}`` (a product inside a multi-product root).

        Raises :class:`~moczarr.errors.KeyContainmentError` unless ``sub`` is a product name.
        """
        sub = product_name(sub, self.location)
        child = Storage(self.store, self.key(sub), location=f"{self.location}/{sub}", concurrency=self.concurrency)
        child.sizes, child._prefetched = self.sizes, self._prefetched
        child._limits, child._blocking = self._limits, self._blocking  # one in-flight limit for root and products
        return child

    def below(self, rel: str) -> Storage:
        """A new handle rooted at ``{root}/{rel}`` on the same store client and in-flight limit.

        For reading many stores under one prefix (a catalog build) through one
        client; ``rel`` is any relative key (each component checked, see
        :meth:`key`; ``""`` is the root itself). The new handle has memos of
        its own. Raises :class:`~moczarr.errors.KeyContainmentError` for a key leaving the root.
        """
        rel = relative_key(rel, self.location)
        location = f"{self.location.rstrip('/')}/{rel}" if rel else self.location
        sub = Storage(self.store, self.key(rel), location=location, concurrency=self.concurrency)
        sub._limits, sub._blocking = self._limits, self._blocking
        return sub

    def key(self, rel: str) -> str:
        """The store key of ``rel``; raises :class:`~moczarr.errors.KeyContainmentError` for a key leaving the root."""
        rel = relative_key(rel, self.location)
        return f"{self.root}/{rel}" if self.root and rel else (self.root or rel)

    def describe(self, rel: str = "") -> str:
        """The user-facing address of ``rel`` (for error messages)."""
        return f"{self.location}/{rel}" if rel else self.location

    # -- reads ---------------------------------------------------------------------------------
    def limit(self) -> asyncio.Semaphore:
        """The handle's in-flight limit (``concurrency`` slots) on the running event loop.

        One limit serves every read of the handle, open and load alike, however
        many threads (dask tasks) share it: a request holds a slot while it is
        on the wire, retries included.
        """
        loop = id(asyncio.get_running_loop())
        sem = self._limits.get(loop)
        if sem is None:
            sem = self._limits.setdefault(loop, asyncio.Semaphore(self.concurrency))
        return sem

    async def _batch(self, calls: list) -> list:
        return await bounded_batch(calls, self.limit())

    async def _fetch(self, rel: str) -> bytes | None:
        """One object's bytes (None when missing); the caller holds a slot of :meth:`limit`."""
        key = self.key(rel)
        buf = await self.store.get(key, default_buffer_prototype())
        if buf is None:
            return None
        payload = buf.to_bytes()
        self._note_size(rel, key, payload)
        return payload

    def _fetch_blocking(self, rel: str) -> bytes | None:
        """:meth:`_fetch` through the client's blocking call (a handle opened with ``blocking=True``)."""
        key = self.key(rel)
        assert isinstance(self.store, CountingStore)  # a handle reads blocking only over one (see __init__)
        payload = self.store.get_blocking(key)
        if payload is not None:
            self._note_size(rel, key, payload)
        return payload

    def _note_size(self, rel: str, key: str, payload: bytes) -> None:
        """Record the size of an object read at the top of the store (see :attr:`sizes`)."""
        if rel.count("/") <= 1:
            self.sizes[key] = len(payload)

    def _read_local(self, rels: Sequence[str]) -> list[bytes | None]:
        """Plain file reads in the calling thread, every key checked (:meth:`key`) and counted."""
        base, root, location = self._local, self.root, self.location
        assert base is not None  # only called for local roots
        out: list[bytes | None] = []
        for rel in rels:
            key = relative_key(rel, location)
            if root:
                key = f"{root}/{key}" if key else root
            record_request("GET", key)
            try:
                payload = read_file(f"{base}/{key}")
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):  # a folder is no object, as in S3
                if not os.path.isdir(base):
                    raise missing_local_root(base, self.location) from None
                out.append(None)
                continue
            self._note_size(rel, key, payload)
            out.append(payload)
        return out

    def get_bytes(self, rel: str) -> bytes | None:
        """The object's bytes, or None when it does not exist."""
        return self.get_many([rel])[0]

    def get_many(self, rels: Sequence[str]) -> list[bytes | None]:
        """Many objects at once; None for each missing one.

        Local roots are read by plain file reads in the calling thread (a
        thread hop per file costs more than the read). Other roots are read
        concurrently, at most ``concurrency`` requests in flight per handle,
        however many threads (dask tasks) share it.
        """
        if not rels:
            return []
        if self._prefetched:
            ahead: dict[str, bytes | None] = {}
            for r in dict.fromkeys(rels):
                with suppress(KeyError):  # one pop, no test first: product threads share the memo
                    ahead[r] = self._prefetched.pop(self.key(r))
            if ahead:
                rest = [r for r in rels if r not in ahead]
                fetched = dict(zip(rest, self.get_many(rest), strict=True))
                return [ahead[r] if r in ahead else fetched[r] for r in rels]
        if self._local is not None:
            return self._read_local(rels)
        if self._blocking is not None:
            return self._blocking.run([partial(self._fetch_blocking, r) for r in rels])
        return list(sync(self._batch([lambda r=r: self._fetch(r) for r in rels])))

    def prefetch(self, rels: Sequence[str]) -> None:
        """Read ``rels`` now, in one batch; the next read of each through this handle is answered from memory.

        For a caller that knows which objects a chain of dependent reads will
        ask for (a catalog whose listing showed a bare store's manifest and
        root MOC, or each product's of a multi-product root): one round trip for
        all of them instead of one each. A product's objects read ahead here
        (``{product}/...``) are answered to its handle (:meth:`child`) too. Each
        object is answered once, then forgotten; requests are counted when
        made. Raises what :meth:`get_many` raises.
        """
        rels = [r for r in dict.fromkeys(rels) if self.key(r) not in self._prefetched]
        self._prefetched.update(zip(map(self.key, rels), self.get_many(rels), strict=True))

    def turn(self) -> AbstractContextManager:
        """The context a batch of reads and decodes of many small objects runs in.

        For a local root it holds the process's one turn at local reads (a lock
        shared by every handle): reading and decoding small files is work for
        the GIL, so two threads doing it at once only hand the GIL to each other
        around every file open and read (the load runs no faster, with twice
        the CPU). Other roots wait on the network with the GIL released: no turn.
        """
        return _LOCAL_TURN if self._local is not None else nullcontext()

    def get_json(self, rel: str) -> Any:
        """Parsed JSON of an object, None when missing. Raises :class:`StampError` when unparsable."""
        return parse_json(self.get_bytes(rel), self.describe(rel))

    def get_many_json(self, rels: Sequence[str]) -> list[Any]:
        """:meth:`get_many` parsed as JSON (None for missing objects)."""
        return [parse_json(b, self.describe(r)) for b, r in zip(self.get_many(rels), rels, strict=True)]

    def list_dir(self, rel: str = "") -> list[str]:
        """Immediate child names under ``rel`` (one delimiter-LIST)."""
        return self.list_many([rel])[0]

    def list_many(self, rels: Sequence[str]) -> list[list[str]]:
        """:meth:`list_dir` of many prefixes concurrently."""
        if not rels:
            return []
        if self._blocking is not None:
            return [sorted([*e.folders, *e.objects]) for e in self.list_entries(rels)]

        async def one(rel):
            return sorted([name async for name in self.store.list_dir(self.key(rel))])

        return list(sync(self._batch([lambda r=r: one(r) for r in rels])))

    def list_entries(self, rels: Sequence[str]) -> list[Entries]:
        """:class:`Entries` (child folders, objects with version tags) of many prefixes, concurrently."""
        if not rels:
            return []
        if self._local is not None:  # plain directory scans in the calling thread, as local reads are
            out = []
            for rel in rels:
                record_request("LIST", self.key(rel))
                out.append(local_entries(os.path.join(self._local, self.key(rel))))
            return out
        store = self.store
        if not isinstance(store, CountingStore):  # Storage.open wraps every object store in one
            raise ArgumentError(f"{self.location}: entries are listed only through the store Storage.open makes")
        if self._blocking is not None:
            return self._blocking.run([partial(store.list_entries_blocking, self.key(r)) for r in rels])
        return list(sync(self._batch([lambda r=r: store.list_entries(self.key(r)) for r in rels])))

    @property
    def client(self) -> str:
        """The client this handle reads through: ``"local"``, ``"obstore"``, or the fsspec package (``"s3fs"``, ...)."""
        return client_name(self.store)

    def __repr__(self) -> str:
        return f"Storage({self.location!r}, client={self.client!r})"


async def bounded_batch(calls: list, limit: asyncio.Semaphore) -> list:
    """Await every ``call()`` in order, each holding a slot of ``limit``; the first failure ends the batch.

    ``limit`` is the in-flight limit of the handle (:meth:`Storage.limit`), shared
    by every batch running on it, so concurrent batches (dask tasks) never
    exceed it together. The failure is raised once the calls in flight are
    cancelled; calls still waiting for a slot are never started, so an error
    that ends an open costs no further requests (plain ``gather`` would send
    them all).
    """
    failed = asyncio.Event()

    async def one(call):
        async with limit:
            if failed.is_set():
                raise asyncio.CancelledError
            try:
                return await call()
            except BaseException:
                failed.set()  # before the slot is released: no waiter starts after a failure
                raise

    tasks = [asyncio.ensure_future(one(c)) for c in calls]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def parse_json(payload: bytes | None, where: str) -> Any:
    """JSON from bytes; None stays None. Raises :class:`StampError` naming ``where`` when unparsable."""
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StampError(f"{where}: not valid JSON ({exc})") from None
