"""obstore as the client of object-store roots: which roots and options it serves, and the store it builds.

:func:`obstore_options` maps fsspec-style ``storage_options`` onto one of
obstore's stores (``S3Store``, ``GCSStore``, ``AzureStore``) without a request,
as an :class:`ObstoreSpec`, or raises :class:`~moczarr.errors.ObstoreUnsupportedError`
saying what obstore cannot express (the caller then reads through fsspec).
:func:`open_obstore` builds the store, settling what an S3 spec leaves open the
way the AWS clients do: the bucket's region from one ``HEAD`` on the bucket
(:func:`~moczarr.storage.bucket_region`, cached per bucket for the process; with ``deferred=True``
looked up by the first read, in the thread that reads) and ambient
credentials from botocore's own chain (:func:`aws_credentials`: environment,
shared files and profiles, SSO, ``credential_process``, containers, instance
metadata), both in :mod:`moczarr.storage._aws`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import partial
from typing import Any

from zarr.abc.store import ByteRequest, Store
from zarr.storage import ObjectStore

from ..errors import ChecksumMismatchError, ObstoreUnsupportedError
from ._aws import aws_credentials, region_for
from ._retry import CONNECT_TIMEOUT, READ_TIMEOUT, RetryPolicy

#: ``storage_options`` key choosing the client of an object-store root: ``"obstore"`` (the default for
#: ``s3://``, ``gs://``, ``az://`` when installed and the options map, see :func:`obstore_options`) or
#: ``"fsspec"`` (alias ``"s3fs"``)
BACKEND_OPTION = "moczarr_backend"
BACKENDS = ("obstore", "fsspec", "s3fs")
#: the roots obstore serves by default (``https://`` stays on fsspec: obstore's HTTPStore lists only over WebDAV)
OBSTORE_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs")
#: moczarr's own options, never passed to a client
_OWN_OPTIONS = ("moczarr_retry", BACKEND_OPTION)
_S3_CREDENTIALS = {"key": "access_key_id", "secret": "secret_access_key", "token": "session_token"}
_GCS_INTERACTIVE_TOKENS = ("google_default", "cloud", "cache", "browser")


@dataclass(frozen=True)
class ObstoreSpec:
    """The obstore store a root maps onto: the store class name, the bucket, its keyword arguments.

    An ``S3Store`` spec may leave two things to :func:`open_obstore`: the
    ``region`` (absent from ``kwargs``: found from the bucket) and the
    credentials (``ambient``: neither ``anon`` nor a key was given, so AWS's
    own chain resolves them, for ``profile`` when one is named). ``kwargs``
    may hold secrets and is left out of the repr.
    """

    store: str
    bucket: str
    kwargs: dict = field(repr=False)
    ambient: bool = False
    profile: str | None = None


def obstore_options(url: str, storage_options: dict | None, policy: RetryPolicy, concurrency: int) -> ObstoreSpec:
    """The obstore store an object-store root maps onto; no request is made.

    The fsspec options that map:

    - ``s3://``: ``anon``, or ``key``/``secret`` (``token``), or neither
      (ambient credentials, ``profile`` naming an AWS profile); ``endpoint_url``
      (top level, in ``client_kwargs``, or ``AWS_ENDPOINT_URL_S3`` /
      ``AWS_ENDPOINT_URL`` in the environment, as the AWS clients read it),
      ``client_kwargs["region_name"]`` (else the bucket's region is looked up at
      open), ``requester_pays``; ``config_kwargs`` ``connect_timeout``,
      ``read_timeout``, ``max_pool_connections``.
    - ``gs://``: ``token="anon"``, a service-account JSON path or dict as
      ``token``, or no token (obstore's application-default chain);
      ``endpoint_url``.
    - ``az://``: ``account_name`` with ``account_key``, ``sas_token`` or ``anon``.

    Every store gets the same bounds as the fsspec clients: one try per request
    (``max_retries=0``: ``policy`` is the only retry loop), connect and read
    timeouts, and an idle pool of ``concurrency`` connections (the in-flight
    limit itself is :class:`~moczarr.storage.Storage`'s).

    Raises :class:`~moczarr.errors.ObstoreUnsupportedError` saying why obstore
    cannot serve the root: obstore not installed, a chained or other URL, an
    option it does not take (named), missing Azure credentials.
    """
    try:
        import obstore  # noqa: F401
    except ImportError:
        raise ObstoreUnsupportedError("obstore is not installed (pip install 'moczarr[s3]')") from None
    scheme, _, rest = url.partition("://")
    if "::" in scheme:
        raise ObstoreUnsupportedError("a chained fsspec URL")
    scheme = scheme.lower()
    if scheme not in OBSTORE_SCHEMES:
        raise ObstoreUnsupportedError(
            f"{scheme}:// roots are read through fsspec (obstore serves {', '.join(OBSTORE_SCHEMES)})"
        )
    opts = {k: v for k, v in (storage_options or {}).items() if k not in _OWN_OPTIONS}
    client = dict(opts.pop("client_kwargs", None) or {})
    config = dict(opts.pop("config_kwargs", None) or {})
    bucket, _, prefix = rest.strip("/").partition("/")
    if scheme in ("s3", "s3a"):
        spec = _s3_spec(bucket, opts, client)
    elif scheme in ("gs", "gcs"):
        spec = _gcs_spec(bucket, opts)
    else:
        spec = _azure_spec(bucket, opts)
    bounds = _client_bounds(config, policy, concurrency, spec.kwargs.get("endpoint") or spec.kwargs.get("base_url"))
    left = (
        sorted(opts) + [f"client_kwargs.{k}" for k in sorted(client)] + [f"config_kwargs.{k}" for k in sorted(config)]
    )
    if left:
        raise ObstoreUnsupportedError(f"options obstore does not take: {left}")
    return replace(spec, kwargs={**spec.kwargs, "prefix": prefix or None, **bounds})


def _s3_spec(bucket: str, opts: dict, client: dict) -> ObstoreSpec:
    """An ``S3Store`` spec from the S3 options (popped from ``opts`` and ``client`` as they are taken)."""
    kwargs: dict = {}
    anon = bool(opts.pop("anon", False))
    keys = {dst: opts.pop(src) for src, dst in _S3_CREDENTIALS.items() if src in opts}
    profile = opts.pop("profile", None)
    if anon:
        kwargs["skip_signature"] = True
    elif keys and not {"access_key_id", "secret_access_key"} <= keys.keys():
        raise ObstoreUnsupportedError("a key without its secret (or a token alone)")
    kwargs.update(keys)
    endpoint = (
        opts.pop("endpoint_url", None)
        or client.pop("endpoint_url", None)
        or os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL")
    )
    if endpoint:
        kwargs.update(endpoint=endpoint, virtual_hosted_style_request=False)
    region = client.pop("region_name", None)
    if region:
        kwargs["region"] = region
    if opts.pop("requester_pays", False):
        kwargs["request_payer"] = True
    return ObstoreSpec("S3Store", bucket, kwargs, ambient=not anon and not keys, profile=profile)


def _gcs_spec(bucket: str, opts: dict) -> ObstoreSpec:
    """A ``GCSStore`` spec from the gcsfs options (popped from ``opts``)."""
    kwargs: dict = {}
    token = opts.pop("token", None)
    if token == "anon":
        kwargs["skip_signature"] = True
    elif isinstance(token, dict):
        kwargs["service_account_key"] = json.dumps(token)
    elif isinstance(token, (str, os.PathLike)) and token not in _GCS_INTERACTIVE_TOKENS:
        kwargs["service_account_path"] = os.fspath(token)
    elif token not in (None, "google_default"):
        raise ObstoreUnsupportedError(f"gcsfs token {token!r} has no obstore counterpart")
    endpoint = opts.pop("endpoint_url", None)
    if endpoint:
        kwargs["base_url"] = endpoint
    opts.pop("project", None)  # only used to create buckets
    return ObstoreSpec("GCSStore", bucket, kwargs)


def _azure_spec(container: str, opts: dict) -> ObstoreSpec:
    """An ``AzureStore`` spec from the adlfs options (popped from ``opts``)."""
    if "@" in container:
        raise ObstoreUnsupportedError("an abfs://container@account URL")
    kwargs: dict = {"account_name": opts.pop("account_name", None)}
    if not kwargs["account_name"]:
        raise ObstoreUnsupportedError("no account_name")
    if opts.pop("anon", False):
        kwargs["skip_signature"] = True
    for src, dst in (("account_key", "account_key"), ("sas_token", "sas_key")):
        if src in opts:
            kwargs[dst] = opts.pop(src)
    if not kwargs.keys() & {"skip_signature", "account_key", "sas_key"}:
        raise ObstoreUnsupportedError(
            "no account_key, sas_token nor anon=True: ambient credentials are resolved by adlfs"
        )
    return ObstoreSpec("AzureStore", container, kwargs)


def _client_bounds(config: dict, policy: RetryPolicy, concurrency: int, endpoint: str | None) -> dict:
    """``client_options`` and ``retry_config`` of every obstore store (the ``config_kwargs`` it takes are popped)."""
    connect = config.pop("connect_timeout", CONNECT_TIMEOUT)
    read = config.pop("read_timeout", READ_TIMEOUT)
    pool = config.pop("max_pool_connections", concurrency)
    client_options = {
        "connect_timeout": timedelta(seconds=float(connect)),
        "read_timeout": timedelta(seconds=float(read)),
        "timeout": timedelta(seconds=max(float(policy.deadline), float(read))),
        "pool_max_idle_per_host": str(max(1, int(pool))),
        "allow_http": (endpoint or "").startswith("http://"),
    }
    retry_config = {"max_retries": 0, "retry_timeout": timedelta(seconds=max(float(policy.deadline), 1.0))}
    return {"client_options": client_options, "retry_config": retry_config}


def open_obstore(spec: ObstoreSpec, *, deferred: bool = False) -> VerifiedObjectStore:
    """zarr's read-only ``ObjectStore`` over the store ``spec`` describes.

    An ``S3Store`` without a region gets its bucket's (:func:`~moczarr.storage.bucket_region`;
    without an answer ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, then
    ``us-east-1`` on an S3-compatible endpoint or when the server answered
    naming no region), and ambient credentials are resolved by
    :func:`aws_credentials`. Roots of one bucket opened with the
    same options share one obstore store (:func:`shared_store`), so they share
    its connection pool; the root's prefix is the returned store's
    :attr:`VerifiedObjectStore.prefix`. Raises
    :class:`~moczarr.errors.ObstoreUnsupportedError` when AWS does not answer
    the region lookup and none is set, or the AWS chain finds no credentials:
    s3fs, which follows AWS's redirects and reports missing credentials itself,
    serves those.

    ``deferred=True`` makes no request here: the region is looked up by the
    store's first read, in the thread that reads (so threads opening many
    buckets look them up at once, not one after another in the opening
    thread). A lookup AWS does not answer then fails that read as a transient
    ``ConnectionError`` (retried under the read's policy, then a
    :class:`~moczarr.errors.StorageError` naming the object), not by falling
    back to s3fs.
    """
    kwargs = dict(spec.kwargs)
    prefix = (kwargs.pop("prefix", None) or "").strip("/")
    endpoint = kwargs.get("endpoint") or kwargs.get("base_url") or ""
    if spec.store == "S3Store" and spec.ambient:
        kwargs.update(aws_credentials(spec.profile))
    settled = replace(spec, kwargs=kwargs, ambient=False)
    verify = endpoint.startswith("http://")
    if deferred and spec.store == "S3Store" and "region" not in kwargs:
        where = f"s3://{spec.bucket}"
        return VerifiedObjectStore.deferred(partial(_open_in_reader, settled), where, verify_etag=verify, prefix=prefix)
    return VerifiedObjectStore(shared_store(settled), read_only=True, verify_etag=verify, prefix=prefix)


def _open_in_reader(spec: ObstoreSpec):
    """:func:`shared_store` for the read that needs it; a region AWS did not tell fails that read as transient."""
    try:
        return shared_store(spec)
    except ObstoreUnsupportedError as exc:
        raise ConnectionError(str(exc)) from exc


#: bucket-level obstore stores kept for reuse, the least recently used dropped first
SHARED_STORES = 64
_STORES: OrderedDict[tuple, Any] = OrderedDict()
_STORES_LOCK = threading.Lock()


def shared_store(spec: ObstoreSpec):
    """The obstore store of ``spec`` (a bucket, no prefix, credentials settled), one per spec in a process.

    Every obstore store has its own HTTP client and connection pool, and a
    catalog build opens hundreds of roots in one bucket: a store per root would
    open new connections for every root. The stores of the last
    :data:`SHARED_STORES` specs are kept (keyed by their options, secrets
    included, in memory only).
    """
    import obstore.store

    key = (spec.store, spec.bucket, repr(sorted(spec.kwargs.items())))
    with _STORES_LOCK:
        if key in _STORES:
            _STORES.move_to_end(key)
            return _STORES[key]
    kwargs = dict(spec.kwargs)
    if spec.store == "S3Store" and "region" not in kwargs:
        timeout = kwargs["client_options"]["connect_timeout"].total_seconds()
        kwargs["region"] = region_for(spec.bucket, kwargs.get("endpoint"), timeout)
    inner = getattr(obstore.store, spec.store)(spec.bucket, **kwargs)
    with _STORES_LOCK:
        inner = _STORES.setdefault(key, inner)
        while len(_STORES) > SHARED_STORES:
            _STORES.popitem(last=False)
    return inner


_MD5_ETAG = re.compile(r'^"?([0-9a-f]{32})"?$')


class VerifiedObjectStore(ObjectStore):
    """zarr's ``ObjectStore`` below a ``prefix`` of a shared obstore store; whole bodies checked against MD5 ETags.

    Keys are relative to ``prefix`` (a root's path in its bucket), so roots of
    one bucket share one obstore store and its connection pool
    (:func:`shared_store`). obstore parses every key it is given and refuses
    ``..`` segments, so no key leads above the bucket.

    botocore validates the checksum S3 sends with each object; obstore does
    not. Over ``https://`` TLS guards the bytes in transit; over a plain
    ``http://`` endpoint (a local S3-compatible server) nothing would, so a body
    whose ETag is a plain MD5 (a single-part upload without SSE-KMS/SSE-C, which
    is what such servers answer) must hash to it, else the read fails with
    :class:`ChecksumMismatchError` and is retried.
    """

    def __init__(self, store, *, read_only: bool = False, verify_etag: bool = False, prefix: str = "") -> None:
        self._opener: Callable[[], Any] | None = None
        self._where = ""
        super().__init__(store, read_only=read_only)
        self.verify_etag = verify_etag
        self.prefix = prefix.strip("/")

    @classmethod
    def deferred(
        cls, opener: Callable[[], Any], where: str, *, verify_etag: bool = False, prefix: str = ""
    ) -> VerifiedObjectStore:
        """A read-only store whose obstore store is ``opener()``, called by the first use of :attr:`store`.

        ``where`` (``s3://bucket``) names the bucket in addresses until then
        (:attr:`bucket_url`). ``opener`` may be called by two threads at once:
        it must answer both with the same store (:func:`shared_store` does).
        """
        self = cls.__new__(cls)
        Store.__init__(self, read_only=True)  # ObjectStore.__init__ only checks and sets the store, deferred here
        self._opener, self._where = opener, where
        self.verify_etag = verify_etag
        self.prefix = prefix.strip("/")
        return self

    @property
    def store(self):
        """The obstore store (opened now, in the calling thread, when this store was made :meth:`deferred`)."""
        inner = self.__dict__.get("_inner")
        if inner is None:
            assert self._opener is not None  # set by deferred(); __init__ sets the store itself
            inner = self.__dict__["_inner"] = self._opener()
        return inner

    @store.setter
    def store(self, value) -> None:
        self.__dict__["_inner"] = value

    @property
    def bucket_url(self) -> str | None:
        """``s3://bucket`` of a :meth:`deferred` store not opened yet, else None (the store's config names it)."""
        return self._where if "_inner" not in self.__dict__ else None

    def __getstate__(self) -> dict:
        return dict(self.__dict__)  # obstore stores pickle as they are, as do openers over specs

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __eq__(self, value: object) -> bool:
        return super().__eq__(value) and getattr(value, "prefix", "") == self.prefix

    def __str__(self) -> str:
        inner = self.bucket_url or self.store
        return f"object_store://{inner}/{self.prefix}" if self.prefix else f"object_store://{inner}"

    def with_read_only(self, read_only: bool = False) -> VerifiedObjectStore:
        if self.bucket_url is not None and read_only:
            assert self._opener is not None
            return type(self).deferred(self._opener, self._where, verify_etag=self.verify_etag, prefix=self.prefix)
        return type(self)(self.store, read_only=read_only, verify_etag=self.verify_etag, prefix=self.prefix)

    def path(self, key: str) -> str:
        """The bucket path of a key (``key`` below :attr:`prefix`)."""
        key = key.strip("/")
        return f"{self.prefix}/{key}" if self.prefix and key else (self.prefix or key)

    def _relative(self, path: str) -> str:
        return path[len(self.prefix) + 1 :] if self.prefix else path

    async def get(self, key: str, prototype, byte_range: ByteRequest | None = None):
        if byte_range is not None or not self.verify_etag:
            return await super().get(self.path(key), prototype, byte_range)
        import obstore

        try:
            result = await obstore.get_async(self.store, self.path(key))
            payload = await result.bytes_async()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        return prototype.buffer.from_bytes(self._checked(key, payload, result.meta))

    def get_blocking(self, key: str) -> bytes | None:
        """The whole object at ``key`` (None when missing) through obstore's blocking call, checked as :meth:`get`.

        For a caller reading from many threads of its own: the request runs in
        the calling thread with the GIL released, with no event loop between.
        """
        import obstore

        try:
            result = obstore.get(self.store, self.path(key))
            payload = result.bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        return self._checked(key, bytes(payload), result.meta)

    def _checked(self, key: str, payload, meta) -> bytes:
        """``payload``, unless its ETag is a plain MD5 it does not hash to (:class:`ChecksumMismatchError`)."""
        etag = _MD5_ETAG.match(meta.get("e_tag") or "") if self.verify_etag else None
        if etag and hashlib.md5(payload, usedforsecurity=False).hexdigest() != etag.group(1):
            raise ChecksumMismatchError(f"{key}: the body's MD5 does not match its ETag {etag.group(1)}")
        return payload

    async def get_partial_values(self, prototype, key_ranges):
        return await super().get_partial_values(prototype, [(self.path(k), r) for k, r in key_ranges])

    async def exists(self, key: str) -> bool:
        return await super().exists(self.path(key))

    async def getsize(self, key: str) -> int:
        return await super().getsize(self.path(key))

    async def getsize_prefix(self, prefix: str) -> int:
        return await super().getsize_prefix(self.path(prefix))

    async def set(self, key: str, value) -> None:
        await super().set(self.path(key), value)

    async def set_if_not_exists(self, key: str, value) -> None:
        await super().set_if_not_exists(self.path(key), value)

    async def delete(self, key: str) -> None:
        await super().delete(self.path(key))

    async def delete_dir(self, prefix: str) -> None:
        await super().delete_dir(self.path(prefix))

    def list(self) -> AsyncGenerator[str, None]:
        return self.list_prefix("")

    def list_prefix(self, prefix: str) -> AsyncGenerator[str, None]:
        return (self._relative(path) async for path in super().list_prefix(self.path(prefix)))

    def list_dir(self, prefix: str) -> AsyncGenerator[str, None]:
        return super().list_dir(self.path(prefix))


__all__ = [
    "BACKENDS",
    "BACKEND_OPTION",
    "OBSTORE_SCHEMES",
    "ObstoreSpec",
    "VerifiedObjectStore",
    "obstore_options",
    "open_obstore",
    "shared_store",
]
