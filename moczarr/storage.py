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

from .errors import (
    ArgumentError,
    MoczarrError,
    StampError,
    StorageError,
    StoreNotFoundError,
)
from .keys import product_name, relative_key
from .locations import is_remote, normalize_location, protocol
from .retry import RetryPolicy, policy_from_options, read_with_retries

DEFAULT_CONCURRENCY = 32
#: ``storage_options`` key choosing the object-store client of an ``s3://`` root: ``"obstore"`` (opt-in, about
#: twice as fast, see docs/performance.md) or s3fs (the default: its failures are the ones the retry budget classifies)
BACKEND_OPTION = "moczarr_backend"
#: botocore socket timeouts of every object-store request, in seconds (``config_kwargs`` overrides)
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0


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
    """A read-only zarr store wrapper: counts each request, retries transient failures, types the rest.

    Every read runs under ``policy`` (:class:`~moczarr.retry.RetryPolicy`: a
    bounded number of attempts inside one deadline, transient failures only);
    a failure that survives it is raised as a
    :class:`~moczarr.errors.StorageError` naming the object's address.
    """

    def __init__(self, store: Store, policy: RetryPolicy | None = None):
        super().__init__(store)
        self.policy = policy or RetryPolicy.local()

    def _with_store(self, store: Store) -> "CountingStore":
        return type(self)(store, self.policy)  # zarr's clones (with_read_only) keep the policy

    def address(self, key: str) -> str:
        """The user-facing address of a store key (``s3://bucket/...`` or a local path)."""
        return describe_key(self._store, key)

    async def get(self, key: str, prototype=None, byte_range: ByteRequest | None = None):
        _record("GET", key)
        prototype = prototype or default_buffer_prototype()
        return await read_with_retries(
            lambda: self._store.get(key, prototype, byte_range), self.policy, self.address(key)
        )

    async def get_partial_values(self, prototype, key_ranges):
        key_ranges = list(key_ranges)
        for key, _ in key_ranges:
            _record("GET", key)
        where = self.address(key_ranges[0][0]) if key_ranges else self.address("")
        return await read_with_retries(
            lambda: self._store.get_partial_values(prototype, key_ranges), self.policy, where
        )

    async def exists(self, key: str) -> bool:
        _record("GET", key)
        return await read_with_retries(lambda: self._store.exists(key), self.policy, self.address(key))

    async def _listed(self, listing, prefix: str):
        async def collect():
            return [name async for name in listing()]

        for name in await read_with_retries(collect, self.policy, self.address(prefix) + "/ (LIST)"):
            yield name

    def list_dir(self, prefix: str):
        _record("LIST", prefix)
        return self._listed(lambda: self._store.list_dir(prefix), prefix)

    def list_prefix(self, prefix: str):
        _record("LIST", prefix)
        return self._listed(lambda: self._store.list_prefix(prefix), prefix)

    def list(self):
        _record("LIST", "")
        return self._listed(self._store.list, "")

    def __reduce__(self):
        return (CountingStore, (self._store, self.policy))


def describe_key(store: Store, key: str) -> str:
    """``s3://bucket/prefix/key`` for an fsspec store, ``/root/key`` for a local one."""
    if isinstance(store, FsspecStore):
        protocol = store.fs.protocol[0] if isinstance(store.fs.protocol, (tuple, list)) else store.fs.protocol
        base = f"{protocol}://{store.path.strip('/')}"
    elif isinstance(store, LocalStore):
        base = str(store.root)
    else:
        base = str(getattr(store, "path", "") or store)
    return f"{base.rstrip('/')}/{key}" if key else base


def make_store(
    url: str | os.PathLike, storage_options: dict | None = None, concurrency: int = DEFAULT_CONCURRENCY
) -> Store:
    """A read-only zarr store for a local path, ``file://`` URL or fsspec URL (``s3://...``).

    Object-store reads are bounded (:func:`fsspec_options`, :mod:`moczarr.retry`);
    the ``moczarr_retry`` key of ``storage_options`` tunes the retry budget.
    """
    url = os.fspath(url)
    if not is_remote(url):
        return CountingStore(LocalStore(normalize_location(url), read_only=True), RetryPolicy.local())
    scheme = protocol(url)
    options, policy = fsspec_options(scheme, storage_options, concurrency)
    if scheme in ("s3", "s3a") and (storage_options or {}).get(BACKEND_OPTION) == "obstore":
        caller = {k: v for k, v in storage_options.items() if k not in ("moczarr_retry", BACKEND_OPTION)}
        fast = _obstore_s3(url.split("://", 1)[1], caller)
        if fast is None:
            raise ArgumentError(
                f"{url}: {BACKEND_OPTION}='obstore' takes only anon, key/secret/token and client_kwargs "
                f"endpoint_url/region_name; got {sorted(caller)}"
            )
        return CountingStore(fast, policy)
    try:
        base = FsspecStore.from_url(url, storage_options=options, read_only=True)
        if scheme in ("s3", "s3a"):
            base.fs.retries = 1  # one try per call: moczarr's policy is the only retry loop
    except MoczarrError:
        raise
    except Exception as exc:  # an unknown protocol, a missing s3fs, a bad option
        raise StorageError(f"{url}: cannot open the object store ({type(exc).__name__}: {exc})") from exc
    return CountingStore(base, policy)


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
    # the same per-request bounds as botocore's (the retry budget wraps both backends alike)
    client_options = {"connect_timeout": f"{CONNECT_TIMEOUT:g}s", "timeout": f"{READ_TIMEOUT:g}s"}
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
      :class:`~moczarr.retry.RetryPolicy` fields (``attempts``, ``deadline``,
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
    if opts.pop(BACKEND_OPTION, "s3fs") not in ("s3fs", "obstore"):
        raise ArgumentError(f"storage_options[{BACKEND_OPTION!r}] must be 's3fs' or 'obstore'")
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
    """

    def __init__(self, store: Store, root: str = "", *, location: str = "", concurrency: int = DEFAULT_CONCURRENCY):
        self.store = store
        self.root = root.strip("/")
        self.location = location or root
        self.concurrency = max(1, int(concurrency))
        #: per-open memo of parsed small objects (the root MOC), so one open reads each once
        self.memo: dict = {}
        #: ``{store key: bytes}`` of every whole object read through this handle (shared with its children)
        self.sizes: dict[str, int] = {}
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
        url, concurrency = check_open_arguments(url, storage_options, concurrency)
        return cls(make_store(url, storage_options, concurrency), "", location=url.rstrip("/"), concurrency=concurrency)

    def child(self, sub: str) -> "Storage":
        """The same handle rooted at ``{root}/{sub}`` (a product inside a multi-product root).

        Raises :class:`~moczarr.errors.KeyContainmentError` unless ``sub`` is a product name.
        """
        sub = product_name(sub, self.location)
        child = Storage(self.store, self.key(sub), location=f"{self.location}/{sub}", concurrency=self.concurrency)
        child.sizes = self.sizes
        return child

    def key(self, rel: str) -> str:
        """The store key of ``rel``; raises :class:`~moczarr.errors.KeyContainmentError` for a key leaving the root."""
        rel = relative_key(rel, self.location)
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
        key = self.key(rel)
        async with self._limit():
            buf = await self.store.get(key, default_buffer_prototype())
        if buf is None:
            return None
        payload = buf.to_bytes()
        self.sizes[key] = len(payload)
        return payload

    def _read_local(self, rel: str) -> bytes | None:
        key = self.key(rel)
        _record("GET", key)
        try:
            with open(os.path.join(self._local, key), "rb") as f:
                payload = f.read()
        except (FileNotFoundError, NotADirectoryError):
            if not os.path.isdir(self._local):
                raise StoreNotFoundError(f"{self.location}: the store root does not exist") from None
            return None
        self.sizes[key] = len(payload)
        return payload

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

        return list(sync(bounded_batch([lambda r=r: self._get(r) for r in rels], self.concurrency)))

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

        async def one(rel):
            return sorted([name async for name in self.store.list_dir(self.key(rel))])

        return list(sync(bounded_batch([lambda r=r: one(r) for r in rels], self.concurrency)))

    def array(self, rel: str, metadata: dict) -> zarr.Array:
        """A zarr array at ``rel`` built from already-read metadata: no request is made."""
        from zarr.core.array import AsyncArray

        return zarr.Array(AsyncArray(metadata=metadata, store_path=StorePath(self.store, self.key(rel))))

    def __repr__(self) -> str:
        return f"Storage({self.location!r})"


def check_open_arguments(url, storage_options, concurrency) -> tuple[str, int]:
    """``(url, concurrency)`` validated; raises :class:`~moczarr.errors.ArgumentError` naming the bad one."""
    from .errors import ArgumentError

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


async def bounded_batch(calls: list, concurrency: int) -> list:
    """Await every ``call()`` (at most ``concurrency`` at once) in order; the first failure ends the batch.

    The failure is raised once the calls in flight are cancelled; calls still
    waiting for a slot are never started, so an error that ends an open costs
    no further requests (plain ``gather`` would send them all).
    """
    sem = asyncio.Semaphore(concurrency)
    failed = asyncio.Event()

    async def one(call):
        async with sem:
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
