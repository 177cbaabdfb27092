"""Storage: one zarr store handle per open call, batched concurrent reads, a request counter.

Every byte moczarr reads goes through :class:`Storage`, which wraps a zarr v3
store (``LocalStore`` for local paths, ``FsspecStore`` for ``s3://`` and other
fsspec URLs). Metadata reads are issued concurrently (bounded by
``concurrency``); the lazy arrays built on top read chunks through the same
store object, so one filesystem handle serves the whole open and every later
compute.

Requests are classified by object kind and counted while a
:func:`count_requests` block is active, for tests and benchmarks::

    with count_requests() as counter:
        ds = open_hive(root)
    counter["GET", "stamp"], counter.lists
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import zarr
from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import FsspecStore, LocalStore, ObjectStore, StorePath, WrapperStore

from .errors import StampError

DEFAULT_CONCURRENCY = 32


class RequestCounter(Counter):
    """Counts requests as ``(op, kind)`` keys: op is ``GET`` or ``LIST``.

    Kinds: ``manifest``, ``root_moc``, ``stamp`` (a zarr object's root
    ``zarr.json``), ``metadata`` (other ``zarr.json``), ``bitmap``,
    ``chunk:morton``, ``chunk:cell_ids``, ``chunk:data``, ``other``.
    """

    @property
    def gets(self) -> int:
        return sum(n for (op, _), n in self.items() if op == "GET")

    @property
    def lists(self) -> int:
        return sum(n for (op, _), n in self.items() if op == "LIST")

    def kind(self, kind: str) -> int:
        """GETs of one object kind."""
        return self["GET", kind]

    def summary(self) -> dict[str, int]:
        """``{"GET stamp": n, ...}``, sorted, for printing."""
        return {f"{op} {kind}": n for (op, kind), n in sorted(self.items())}


_ACTIVE: list[RequestCounter] = []
_LOCK = threading.Lock()


@contextmanager
def count_requests() -> Iterator[RequestCounter]:
    """Count every request any moczarr storage makes inside the block (all threads)."""
    counter = RequestCounter()
    with _LOCK:
        _ACTIVE.append(counter)
    try:
        yield counter
    finally:
        with _LOCK:
            _ACTIVE.remove(counter)


def classify_key(key: str) -> str:
    """The object kind of a store key (see :class:`RequestCounter`)."""
    parts = key.strip("/").split("/")
    name = parts[-1]
    if name == "morton_hive.json":
        return "manifest"
    if name == "coverage.moc":
        return "root_moc" if len(parts) == 1 or not any(p.endswith(".zarr") for p in parts) else "bitmap"
    if name == "zarr.json":
        parent = parts[-2] if len(parts) > 1 else ""
        return "stamp" if parent.endswith(".zarr") else "metadata"
    if "c" in parts:
        array = parts[parts.index("c") - 1] if parts.index("c") > 0 else ""
        if array in ("morton", "cell_ids"):
            return f"chunk:{array}"
        return "chunk:data"
    return "other"


def _record(op: str, key: str) -> None:
    if _ACTIVE:
        kind = classify_key(key) if op == "GET" else "prefix"
        with _LOCK:
            for counter in _ACTIVE:
                counter[op, kind] += 1


class CountingStore(WrapperStore):
    """A read-only zarr store wrapper that reports each request to the active counters."""

    async def get(self, key: str, prototype=None, byte_range: ByteRequest | None = None):
        _record("GET", key)
        return await self._store.get(key, prototype or default_buffer_prototype(), byte_range)

    async def get_partial_values(self, prototype, key_ranges):
        key_ranges = list(key_ranges)
        for key, _ in key_ranges:
            _record("GET", key)
        return await self._store.get_partial_values(prototype, key_ranges)

    async def exists(self, key: str) -> bool:
        _record("GET", key)
        return await self._store.exists(key)

    def list_dir(self, prefix: str):
        _record("LIST", prefix)
        return self._store.list_dir(prefix)

    def list_prefix(self, prefix: str):
        _record("LIST", prefix)
        return self._store.list_prefix(prefix)

    def list(self):
        _record("LIST", "")
        return self._store.list()

    def __reduce__(self):
        return (CountingStore, (self._store,))


def _split_url(url: str) -> tuple[str | None, str]:
    if "://" in url:
        protocol, _, rest = url.partition("://")
        return protocol, rest
    return None, url


def make_store(
    url: str | os.PathLike, storage_options: dict | None = None, concurrency: int = DEFAULT_CONCURRENCY
) -> Store:
    """A read-only zarr store for a local path, ``file://`` URL or fsspec URL (``s3://...``)."""
    url = os.fspath(url)
    protocol, rest = _split_url(url)
    if protocol in (None, "file", "local"):
        path = rest if protocol else url
        base: Store = LocalStore(os.path.abspath(path), read_only=True)
    else:
        base = _obstore_s3(rest, storage_options) if protocol in ("s3", "s3a") else None
        if base is None:
            opts = _fsspec_options(protocol, storage_options)
            if protocol in ("s3", "s3a"):
                opts = _s3_pool(opts, concurrency)
            base = FsspecStore.from_url(url, storage_options=opts, read_only=True)
    return CountingStore(base)


_OBSTORE_CREDENTIALS = {"key": "access_key_id", "secret": "secret_access_key", "token": "session_token"}


def _obstore_s3(bucket_path: str, storage_options: dict | None) -> Store | None:
    """An obstore-backed store for ``s3://bucket/path`` when the options are explicit and all map, else None.

    obstore (Rust, no GIL held per request) reads small objects several times
    faster than s3fs at the same in-flight limit (docs/performance.md). It is
    used when ``obstore`` is installed and the options are only ``anon``, or
    ``key``/``secret`` (``token``), plus ``client_kwargs`` ``endpoint_url`` /
    ``region_name``; any other option, or ambient credentials (a profile, an
    instance role), keeps s3fs, which resolves those the botocore way.
    """
    try:
        from obstore.store import S3Store
    except ImportError:
        return None
    opts = dict(storage_options or {})
    client = dict(opts.pop("client_kwargs", None) or {})
    config: dict = {}
    if opts.pop("anon", False):
        config["skip_signature"] = True
    for src, dst in _OBSTORE_CREDENTIALS.items():
        if src in opts:
            config[dst] = opts.pop(src)
    if "skip_signature" not in config and not {"access_key_id", "secret_access_key"} <= config.keys():
        return None
    endpoint = client.pop("endpoint_url", None)
    region = client.pop("region_name", None)
    if opts or client:
        return None
    client_options = {}
    if endpoint:
        config.update(endpoint=endpoint, virtual_hosted_style_request=False)
        client_options["allow_http"] = endpoint.startswith("http://")
    bucket, _, prefix = bucket_path.strip("/").partition("/")
    store = S3Store(bucket, prefix=prefix or None, region=region or "us-east-1", client_options=client_options, **config)
    return _ObjectStore(store, read_only=True)


def _os_error(exc: Exception) -> OSError:
    """obstore's errors as the built-in kinds fsspec raises (a refusal is a ``PermissionError``)."""
    from obstore.exceptions import PermissionDeniedError, UnauthenticatedError

    kind = PermissionError if isinstance(exc, (PermissionDeniedError, UnauthenticatedError)) else OSError
    return kind(str(exc))


class _ObjectStore(ObjectStore):
    """zarr's ``ObjectStore`` raising built-in ``OSError`` kinds instead of obstore's own."""

    async def get(self, key, prototype, byte_range=None):
        from obstore.exceptions import BaseError

        try:
            return await super().get(key, prototype, byte_range)
        except BaseError as exc:
            raise _os_error(exc) from exc

    async def list_dir(self, prefix: str):
        from obstore.exceptions import BaseError

        try:
            async for name in super().list_dir(prefix):
                yield name
        except BaseError as exc:
            raise _os_error(exc) from exc


def _s3_pool(opts: dict, concurrency: int) -> dict:
    """botocore's connection pool sized to ``concurrency`` (its default of 10 capped every batch at 10 in flight)."""
    config = dict(opts.get("config_kwargs") or {})
    config.setdefault("max_pool_connections", max(1, int(concurrency)))
    return {**opts, "config_kwargs": config}


def local_root(store: Store) -> str | None:
    """The directory of a (counted) ``LocalStore``, else None: such roots are read with plain file reads."""
    base = store._store if isinstance(store, WrapperStore) else store
    return os.fspath(base.root) if isinstance(base, LocalStore) else None


def _fsspec_options(protocol: str | None, storage_options: dict | None) -> dict:
    """The caller's ``storage_options`` plus the defaults S3 needs (the caller's values win).

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
    if protocol in ("s3", "s3a"):
        opts.setdefault("max_concurrency", 1)
        opts.setdefault("use_listings_cache", False)
    return opts


class Storage:
    """A store handle rooted at one prefix, with batched reads.

    ``Storage`` never writes. Keys passed to its methods are relative to
    ``root`` (``""`` is the root itself). ``location`` is the user-facing
    address used in messages.
    """

    def __init__(self, store: Store, root: str = "", *, location: str = "", concurrency: int = DEFAULT_CONCURRENCY):
        self.store = store
        self.root = root.strip("/")
        self.location = location or root
        self.concurrency = max(1, int(concurrency))
        #: per-open memo of parsed small objects (the root MOC), so one open reads each once
        self.memo: dict = {}
        self._local = local_root(store)
        #: one in-flight limit per event loop, shared by every batch of this handle (open and load alike)
        self._limits: dict[int, asyncio.Semaphore] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_limits": {}}

    @classmethod
    def open(
        cls,
        url: str | os.PathLike,
        storage_options: dict | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> "Storage":
        """One handle for ``url``; every read of the open call goes through it."""
        if isinstance(url, Storage):
            return url
        url = os.fspath(url)
        return cls(make_store(url, storage_options, concurrency), "", location=url.rstrip("/"), concurrency=concurrency)

    def child(self, sub: str) -> "Storage":
        """The same handle rooted at ``{root}/{sub}`` (a product inside a multi-product root)."""
        sub = sub.strip("/")
        return Storage(
            self.store, self.key(sub), location=f"{self.location}/{sub}", concurrency=self.concurrency
        )

    def key(self, rel: str) -> str:
        rel = rel.strip("/")
        return f"{self.root}/{rel}" if self.root and rel else (self.root or rel)

    def describe(self, rel: str = "") -> str:
        """The user-facing address of ``rel`` (for error messages)."""
        return f"{self.location}/{rel}" if rel else self.location

    # -- reads ---------------------------------------------------------------------------------
    def _limit(self) -> asyncio.Semaphore:
        loop = id(asyncio.get_running_loop())
        sem = self._limits.get(loop)
        if sem is None:
            sem = self._limits.setdefault(loop, asyncio.Semaphore(self.concurrency))
        return sem

    async def _get(self, rel: str) -> bytes | None:
        async with self._limit():
            buf = await self.store.get(self.key(rel), default_buffer_prototype())
        return None if buf is None else buf.to_bytes()

    def _read_local(self, rel: str) -> bytes | None:
        key = self.key(rel)
        _record("GET", key)
        try:
            with open(os.path.join(self._local, key), "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def get_bytes(self, rel: str) -> bytes | None:
        """The object's bytes, or None when it does not exist."""
        if self._local is not None:
            return self._read_local(rel)
        return sync(self._get(rel))

    def get_many(self, rels: Sequence[str]) -> list[bytes | None]:
        """Many objects at once; None for each missing one.

        Local roots are read by plain file reads in the calling thread (a
        thread hop per file costs more than the read). Other roots are read
        concurrently, at most ``concurrency`` requests in flight per handle,
        however many threads (dask tasks) share it.
        """
        if not rels:
            return []
        if self._local is not None:
            return [self._read_local(r) for r in rels]

        async def go():
            return await asyncio.gather(*(self._get(r) for r in rels))

        return list(sync(go()))

    def get_json(self, rel: str) -> Any:
        """Parsed JSON of an object, None when missing. Raises :class:`StampError` when unparsable."""
        return parse_json(self.get_bytes(rel), self.describe(rel))

    def get_many_json(self, rels: Sequence[str]) -> list[Any]:
        """:meth:`get_many` parsed as JSON (None for missing objects)."""
        return [parse_json(b, self.describe(r)) for b, r in zip(self.get_many(rels), rels)]

    def list_dir(self, rel: str = "") -> list[str]:
        """Immediate child names under ``rel`` (one delimiter-LIST)."""
        async def go():
            prefix = self.key(rel)
            return sorted([name async for name in self.store.list_dir(prefix)])

        return sync(go())

    def list_many(self, rels: Sequence[str]) -> list[list[str]]:
        """:meth:`list_dir` of many prefixes concurrently."""
        if not rels:
            return []

        async def one(rel, sem):
            async with sem:
                return sorted([name async for name in self.store.list_dir(self.key(rel))])

        async def go():
            sem = asyncio.Semaphore(self.concurrency)
            return await asyncio.gather(*(one(r, sem) for r in rels))

        return list(sync(go()))

    def array(self, rel: str, metadata: dict) -> zarr.Array:
        """A zarr array at ``rel`` built from already-read metadata: no request is made."""
        from zarr.core.array import AsyncArray

        return zarr.Array(AsyncArray(metadata=metadata, store_path=StorePath(self.store, self.key(rel))))

    def __repr__(self) -> str:
        return f"Storage({self.location!r})"


def parse_json(payload: bytes | None, where: str) -> Any:
    """JSON from bytes; None stays None. Raises :class:`StampError` naming ``where`` when unparsable."""
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StampError(f"{where}: not valid JSON ({exc})") from None
