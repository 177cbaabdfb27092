"""Storage: one zarr store handle per open call, batched concurrent reads.

Every byte moczarr reads goes through :class:`Storage`, which wraps a zarr v3
store: ``LocalStore`` for local paths, zarr's ``ObjectStore`` over obstore for
``s3://``, ``gs://`` and ``az://`` roots whose options map onto it
(:mod:`moczarr.storage._obstore`), ``FsspecStore`` for every other URL. Reads
are issued concurrently, at most ``concurrency`` in flight per handle (one
limit for open and load alike); the lazy arrays built on top read through the
same store object, so one client serves the whole open and every later
compute. A handle that only reads small documents from many threads of its
caller (a catalog build) can make obstore's blocking calls instead
(``blocking=True``, :mod:`moczarr.storage._blocking`). Every request is
counted for :func:`~moczarr.storage.count_requests`.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from zarr.abc.store import ByteRequest, Store
from zarr.storage import FsspecStore, LocalStore, ObjectStore, WrapperStore

from .._zarr import default_buffer_prototype, sync
from ..errors import (
    ArgumentError,
    MoczarrError,
    NotAHiveStoreError,
    ObstoreUnsupportedError,
    StampError,
    StorageError,
    StoreNotFoundError,
)
from ._blocking import BlockingReads
from ._counter import record_request
from ._locations import is_remote, normalize_location, protocol
from ._obstore import BACKEND_OPTION, BACKENDS, OBSTORE_SCHEMES, VerifiedObjectStore, obstore_options, open_obstore
from ._retry import (
    CONNECT_TIMEOUT,
    READ_TIMEOUT,
    RetryPolicy,
    missing_bucket,
    policy_from_options,
    read_with_retries,
    read_with_retries_blocking,
    storage_error,
)
from .keys import product_name, relative_key

DEFAULT_CONCURRENCY = 32
#: the one turn at local reads of the process (:meth:`Storage.turn`); reentrant, as a decode may read
_LOCAL_TURN = threading.RLock()
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
            lambda: _obstore_entries(obstore.list_with_delimiter(store.store, prefix=path or None), path),
            self.policy,
            self.address(prefix) + "/ (LIST)",
        )

    def __reduce__(self):
        return (CountingStore, (self._store, self.policy))


@dataclass(frozen=True)
class Entries:
    """The immediate children of a prefix: ``folders`` (child prefixes) and ``objects`` (name -> version tag).

    A version tag identifies an object's state without reading it: the ETag
    an object store lists (``"etag:..."``), else its size and modification
    time (``"size:mtime"``, local files and stores that list no ETag), or None
    when the listing tells neither (an HTTP directory index).
    """

    folders: tuple[str, ...] = ()
    objects: dict[str, str | None] = field(default_factory=dict)


async def list_entries(store: Store, prefix: str) -> Entries:
    """:class:`Entries` of ``prefix`` in a zarr store (local, obstore or fsspec), one delimiter-LIST.

    A missing prefix lists as empty, as object stores have no empty prefixes;
    a missing bucket raises (``FileNotFoundError``: :func:`read_with_retries`
    makes it a :class:`~moczarr.errors.StoreNotFoundError`), as obstore's 404 does.
    """
    prefix = prefix.strip("/")
    if isinstance(store, LocalStore):
        return await asyncio.to_thread(_local_entries, os.path.join(os.fspath(store.root), prefix))
    if isinstance(store, ObjectStore):
        import obstore

        path = store.path(prefix) if isinstance(store, VerifiedObjectStore) else prefix
        return _obstore_entries(await obstore.list_with_delimiter_async(store.store, prefix=path or None), path)
    if isinstance(store, FsspecStore):
        root = store.path.rstrip("/")
        path = f"{root}/{prefix}" if root and prefix else (root or prefix)
        try:
            listed = await store.fs._ls(path, detail=True)
        except FileNotFoundError as exc:
            if missing_bucket(exc):  # s3fs says so for a bucket that is not there: no listing answered
                raise
            return Entries()
        names: set[str] = set()
        versions: dict[str, str | None] = {}
        for info in listed:
            name = str(info["name"]).rstrip("/")
            name = name.rsplit("/", 1)[-1] if name != path.rstrip("/") else ""
            if not name or name in (".", "..") or "#" in name or "?" in name:
                continue
            if info.get("type") == "directory":
                names.add(name)
            else:
                etag = info.get("ETag") or info.get("etag") or info.get("e_tag")
                versions[name] = _version(etag, info.get("size"), info.get("LastModified") or info.get("mtime"))
        return Entries(tuple(sorted(names)), dict(sorted(versions.items())))
    raise ArgumentError(f"{type(store).__name__}: no listing of entries for this kind of store")


def _obstore_entries(listed: Mapping[str, Any], path: str) -> Entries:
    """:class:`Entries` of obstore's delimiter listing of ``path`` (the bucket path listed)."""
    folders = tuple(sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in listed["common_prefixes"]))
    objects = {
        meta["path"].rsplit("/", 1)[-1]: _version(meta.get("e_tag"), meta.get("size"), meta.get("last_modified"))
        for meta in listed["objects"]
        if meta["path"].rstrip("/") != path
    }
    return Entries(folders, dict(sorted(objects.items())))


def _local_entries(path: str) -> Entries:
    """:class:`Entries` of a local folder; nothing at ``path`` (or a file there) lists as empty.

    Only the operating system saying nothing is there (``FileNotFoundError``,
    ``NotADirectoryError``: a listing that succeeded) reads as empty; any other
    failure (denied, a symlink loop, an I/O error) raises a
    :class:`~moczarr.errors.StorageError` naming the folder, never an empty listing.
    """
    folders, objects = [], {}
    try:
        with os.scandir(path) as it:
            for entry in it:
                try:
                    if entry.is_dir():
                        folders.append(entry.name)
                    elif entry.is_file():
                        st = entry.stat()
                        objects[entry.name] = f"{st.st_size}:{st.st_mtime_ns}"
                except FileNotFoundError:  # removed since the folder was read: that one entry is gone, not the folder
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return Entries()
    except OSError as exc:
        raise storage_error(exc, f"{path.rstrip(os.sep)}{os.sep} (LIST)", 1, 0.0) from exc
    return Entries(tuple(sorted(folders)), dict(sorted(objects.items())))


def _version(etag, size, modified) -> str | None:
    if etag:
        return f"etag:{str(etag).strip(chr(34))}"
    if size is not None and modified is not None:
        return f"{size}:{modified.isoformat() if hasattr(modified, 'isoformat') else modified}"
    return None


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


def make_store(
    url: str | os.PathLike,
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    *,
    deferred: bool = False,
) -> Store:
    """A read-only zarr store for a local path, ``file://`` URL or object-store / fsspec URL.

    ``s3://``, ``gs://`` and ``az://`` roots are read through obstore when it is
    installed and every storage option maps onto it (:func:`obstore_options`),
    else through fsspec (s3fs, gcsfs, adlfs); every other protocol, ``https://``
    included, through fsspec. ``storage_options["moczarr_backend"]`` forces one:
    ``"obstore"`` (an :class:`~moczarr.errors.ObstoreUnsupportedError`, an
    ``ArgumentError``, saying why when it cannot serve the root) or
    ``"fsspec"`` (alias ``"s3fs"``). Reads are bounded alike on both
    (:data:`CONNECT_TIMEOUT`, :data:`READ_TIMEOUT`, one try per client call, the
    ``moczarr_retry`` budget of :mod:`moczarr.storage` around it).

    ``deferred=True``: an S3 bucket's region, when the options do not give it,
    is looked up by the store's first read, in the thread that reads, not here
    (:func:`~moczarr.storage.open_obstore`).
    """
    url = os.fspath(url)
    if not is_remote(url):
        return CountingStore(LocalStore(normalize_location(url), read_only=True), RetryPolicy.local())
    scheme = protocol(url)
    options, policy = fsspec_options(scheme, storage_options, concurrency)
    backend = (storage_options or {}).get(BACKEND_OPTION)  # validated by fsspec_options
    if backend == "obstore" or (backend is None and scheme in OBSTORE_SCHEMES):
        try:
            spec = obstore_options(url, storage_options, policy, concurrency)
            return CountingStore(open_obstore(spec, deferred=deferred), policy)
        except ObstoreUnsupportedError as exc:
            if backend == "obstore":
                raise ObstoreUnsupportedError(
                    f"{url}: {BACKEND_OPTION}='obstore' cannot serve this root: {exc}"
                ) from None
    try:
        base = FsspecStore.from_url(url, storage_options=options, read_only=True)
        if scheme in ("s3", "s3a"):
            base.fs.retries = 1  # one try per call: moczarr's policy is the only retry loop
    except MoczarrError:
        raise
    except Exception as exc:  # an unknown protocol, a missing s3fs, a bad option
        raise StorageError(f"{url}: cannot open the object store ({type(exc).__name__}: {exc})") from exc
    return CountingStore(base, policy)


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


def local_root(store: Store) -> str | None:
    """The directory of a (counted) ``LocalStore``, else None: such roots are read with plain file reads."""
    base = store._store if isinstance(store, WrapperStore) else store
    return os.fspath(base.root) if isinstance(base, LocalStore) else None


def fsspec_options(
    protocol: str | None, storage_options: dict | None, concurrency: int = DEFAULT_CONCURRENCY
) -> tuple[dict, RetryPolicy]:
    """The fsspec options of an open (the caller's values win) and the retry policy it reads under.

    S3 (``s3://``, ``s3a://``) gets bounded requests set once here:

    - ``config_kwargs``: ``connect_timeout`` :data:`CONNECT_TIMEOUT`,
      ``read_timeout`` :data:`READ_TIMEOUT`, ``retries={"total_max_attempts": 1}``
      and ``max_pool_connections = concurrency``. botocore makes one attempt:
      the retries are moczarr's (below), so they are counted once, not
      multiplied through botocore's and s3fs's nested loops.
    - s3fs's own retry loop (its ``retries`` attribute, not a constructor
      option) is set to one try on the filesystem for the same reason.
    - ``moczarr_retry`` (popped, never passed to fsspec): the
      :class:`~moczarr.storage.RetryPolicy` fields (``attempts``, ``deadline``,
      ``backoff``, ``max_backoff``) for every read of the open.
    - ``max_concurrency=1``: s3fs sizes every whole-object read with a HEAD when
      ``max_concurrency > 1`` (its default is 10), to split large objects into
      parallel ranged GETs. Hive objects are small, so that HEAD only doubled
      every request: one GET per object instead.
    - ``use_listings_cache=False``: fsspec shares one filesystem instance
      between opens with equal options, and s3fs keeps its listings forever by
      default, so a later walk or product roster in the same process would not
      see leaves committed since. Every LIST goes to the server.
    """
    opts = dict(storage_options or {})
    policy = policy_from_options(opts.pop("moczarr_retry", None))
    if opts.pop(BACKEND_OPTION, "fsspec") not in BACKENDS:
        raise ArgumentError(f"storage_options[{BACKEND_OPTION!r}] must be one of {BACKENDS}")
    if protocol in ("s3", "s3a"):
        opts.setdefault("max_concurrency", 1)
        opts.setdefault("use_listings_cache", False)
        config = dict(opts.get("config_kwargs") or {})
        config.setdefault("connect_timeout", CONNECT_TIMEOUT)
        config.setdefault("read_timeout", READ_TIMEOUT)
        config.setdefault("retries", {"total_max_attempts": 1})
        config.setdefault("max_pool_connections", max(10, int(concurrency)))
        opts["config_kwargs"] = config
    return opts, policy


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
                out.append(_local_entries(os.path.join(self._local, self.key(rel))))
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
            raise ArgumentError(f"{self.location}: a conditional write needs the obstore client (pip install obstore)")

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
                f"{self.location}: a version tag is read through the obstore client (pip install obstore)"
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


def check_open_arguments(url, storage_options, concurrency) -> tuple[str, int]:
    """``(url, concurrency)`` validated; raises :class:`~moczarr.errors.ArgumentError` naming the bad one."""
    from ..errors import ArgumentError

    try:
        url = os.fspath(url)
    except TypeError:
        raise ArgumentError(f"store_root must be a path or URL string, got {url!r}") from None
    if isinstance(url, bytes):
        url = os.fsdecode(url)
    if not url or "\x00" in url:
        raise ArgumentError(f"store_root {url!r} is empty or holds a NUL byte")
    if storage_options is not None and not isinstance(storage_options, dict):
        raise ArgumentError(f"storage_options must be a dict, got {storage_options!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ArgumentError(f"concurrency must be a positive integer, got {concurrency!r}")
    return url, concurrency


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
