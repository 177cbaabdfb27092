"""Opening: a root's URL and options checked, and the read-only zarr store of the client that serves it.

:func:`make_store` picks the client (``LocalStore``, obstore through
:mod:`moczarr.storage._obstore`, else fsspec), bounds its requests
(:func:`fsspec_options`: timeouts, one try per client call, the ``moczarr_retry``
budget) and wraps it in a :class:`~moczarr.storage.CountingStore`;
:func:`check_open_arguments` is the one check of an open's arguments.
"""

from __future__ import annotations

import os

from zarr.abc.store import Store
from zarr.storage import FsspecStore, LocalStore

from ..errors import ArgumentError, MissingExtraError, MoczarrError, ObstoreUnsupportedError, StorageError
from ._counting import CountingStore
from ._locations import is_remote, normalize_location, protocol
from ._obstore import BACKEND_OPTION, BACKENDS, OBSTORE_SCHEMES, obstore_options, open_obstore
from ._retry import CONNECT_TIMEOUT, READ_TIMEOUT, RetryPolicy, policy_from_options

DEFAULT_CONCURRENCY = 32
#: the extra that installs the clients of an object-store scheme, and the packages it names
EXTRAS = {
    **dict.fromkeys(("s3", "s3a"), ("s3", "obstore or s3fs")),
    **dict.fromkeys(("gs", "gcs"), ("gcs", "obstore")),
    **dict.fromkeys(("az", "azure", "abfs"), ("azure", "obstore")),
}


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
    included, through fsspec (its HTTP client, aiohttp, is a core dependency:
    a plain install opens the ``https://`` hrefs a catalog publishes).
    ``storage_options["moczarr_backend"]`` forces one:
    ``"obstore"`` (an :class:`~moczarr.errors.ObstoreUnsupportedError`, an
    ``ArgumentError``, saying why when it cannot serve the root) or
    ``"fsspec"`` (alias ``"s3fs"``). Reads are bounded alike on both
    (:data:`CONNECT_TIMEOUT`, :data:`READ_TIMEOUT`, one try per client call, the
    ``moczarr_retry`` budget of :mod:`moczarr.storage` around it).
    Raises :class:`~moczarr.errors.MissingExtraError` naming the extra to
    install (``pip install 'moczarr[s3]'``) when no client of the scheme is.

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
    except ImportError as exc:  # fsspec names its own package (``Install s3fs``), not the extra that brings it
        if scheme in EXTRAS:
            raise MissingExtraError.of(f"{url}: reading {scheme}:// roots", *EXTRAS[scheme]) from exc
        raise StorageError(f"{url}: cannot open the object store: a package it needs is not installed ({exc})") from exc
    except Exception as exc:  # an unknown protocol, a bad option
        raise StorageError(f"{url}: cannot open the object store ({type(exc).__name__}: {exc})") from exc
    return CountingStore(base, policy)


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
