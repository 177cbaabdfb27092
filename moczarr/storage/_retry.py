"""Bounded object-store reads: one retry budget per object, transient failures only, typed errors.

Every read of a remote store runs through :func:`read_with_retries`: at most
``attempts`` tries inside one ``deadline`` (seconds, wall clock, counted from
the first try; every try is cut off when the deadline passes), with
exponential backoff between tries. Only transient failures are retried:
HTTP 5xx, throttling (``SlowDown``, 503), connection resets and refused or
timed-out connections, truncated bodies and checksum mismatches. Anything
else (403, a bad request) fails at once. Both object-store clients are
understood: botocore/aiohttp failures (through s3fs) and obstore's (its
exceptions carry the HTTP status and the transport error kind only in their
text: ``Server returned non-2xx status code: 503 ...``, ``HttpError { kind:
Timeout ...``). A failure that survives the budget
is raised as a :class:`~moczarr.errors.StorageError` (or its
``StorageTimeoutError``, ``StoragePermissionError``,
``StorageThrottledError`` subclasses) naming the object, with the original
exception chained.

A clean miss (``FileNotFoundError``, a 404) is not a failure: the zarr store
answers it as ``None`` before it reaches this layer.
"""

from __future__ import annotations

import asyncio
import errno
import re
import socket
import time
from contextlib import suppress
from dataclasses import asdict, dataclass, fields

from ..errors import (
    ArgumentError,
    ChecksumMismatchError,
    MoczarrError,
    StorageError,
    StoragePermissionError,
    StorageThrottledError,
    StorageTimeoutError,
    StoreNotFoundError,
)

#: socket timeouts of every object-store request, in seconds, on either client (``config_kwargs`` overrides)
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one object read tries: ``attempts`` tries within ``deadline`` seconds.

    Backoff before try ``i`` (from 1) is ``min(backoff * 2**(i-1), max_backoff)``.
    The defaults bound a stalled object to :attr:`deadline` (30 s).
    """

    attempts: int = 4
    deadline: float = 30.0
    backoff: float = 0.1
    max_backoff: float = 2.0

    @classmethod
    def local(cls) -> RetryPolicy:
        """Local files: one try, no deadline (a local error is never transient)."""
        return cls(attempts=1, deadline=0.0)

    def to_dict(self) -> dict:
        return asdict(self)


def policy_from_options(value) -> RetryPolicy:
    """The policy a ``storage_options["moczarr_retry"]`` value asks for (None: the defaults).

    Raises :class:`~moczarr.errors.ArgumentError` for unknown keys or values out of range.
    """
    if value is None:
        return RetryPolicy()
    if isinstance(value, RetryPolicy):
        return value
    known = {f.name for f in fields(RetryPolicy)}
    if not isinstance(value, dict) or set(value) - known:
        raise ArgumentError(f"storage_options['moczarr_retry'] must be a mapping of {sorted(known)}, got {value!r}")
    policy = None
    with suppress(TypeError, ValueError):
        candidate = RetryPolicy(**value)
        if int(candidate.attempts) >= 1 and float(candidate.deadline) > 0 and float(candidate.backoff) >= 0:
            policy = candidate
    if policy is None:
        raise ArgumentError(
            f"storage_options['moczarr_retry'] = {value!r}: attempts must be >= 1, deadline > 0, backoff >= 0"
        )
    return policy


def _chain(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _status(exc: BaseException) -> tuple[int | None, str]:
    """The HTTP status and error code of a botocore ``ClientError`` or an obstore error anywhere in the chain."""
    for e in _chain(exc):
        response = getattr(e, "response", None)
        if isinstance(response, dict) and "Error" in response:
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            return status, str(response["Error"].get("Code") or "")
        if _is_obstore(e):
            text = str(e)
            status = _OBSTORE_STATUS.search(text)
            code = _S3_CODE.search(text)
            return (int(status.group(1)) if status else None), (code.group(1) if code else "")
    return None, ""


def _is_obstore(exc: BaseException) -> bool:
    return type(exc).__module__.partition(".")[0] == "obstore"


def _obstore_http_kind(exc: BaseException) -> str:
    """The ``HttpErrorKind`` of an obstore transport failure (``Connect``, ``Timeout``, ...), else ``""``."""
    for e in _chain(exc):
        if _is_obstore(e):
            kind = _OBSTORE_HTTP_KIND.search(str(e))
            return kind.group(1) if kind else ""
    return ""


#: obstore (object_store) spells the status of a failed request in its message, in either of these forms
_OBSTORE_STATUS = re.compile(r"(?:non-2xx status code:|error with status) (\d{3})\b")
_OBSTORE_HTTP_KIND = re.compile(r"HttpError \{\s*kind: (\w+)")
_S3_CODE = re.compile(r"<Code>(\w+)</Code>")
#: object_store's HttpErrorKind values of a request that may succeed when sent again (``Unknown`` may not)
_OBSTORE_TRANSIENT_KINDS = {"Connect", "Request", "Interrupted", "Decode"}
_THROTTLE_CODES = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests"}
_TRANSIENT_ERRNOS = {
    errno.EBUSY,
    errno.EAGAIN,
    errno.ECONNRESET,
    errno.ECONNREFUSED,
    errno.ECONNABORTED,
    errno.ETIMEDOUT,
    errno.EPIPE,
    getattr(errno, "EREMOTEIO", errno.EIO),
}
_TRANSIENT_NAMES = {
    "ClientPayloadError",
    "ServerDisconnectedError",
    "ClientConnectionError",
    "ClientOSError",
    "ServerTimeoutError",
    "ClientConnectorError",
    "FlexibleChecksumError",
    "IncompleteRead",
    "ResponseStreamingError",
    "HTTPClientError",
    "ConnectionClosedError",
    "EndpointConnectionError",
    "ReadTimeoutError",
    "ConnectTimeoutError",
    "ResponseParserError",
    "ContentLengthError",
}
_DENIED_NAMES = {"PermissionDeniedError", "UnauthenticatedError"}  # obstore's 403 and 401


def classify(exc: BaseException) -> str:
    """A read failure's kind: ``"missing"``, ``"timeout"``, ``"throttled"``, ``"transient"``, ``"denied"``, ``"fatal"``.

    ``missing`` (a 404, ``FileNotFoundError``) is absence, never retried;
    ``timeout``, ``throttled`` (429, 503, ``SlowDown``) and ``transient`` (other
    5xx, resets, refused connections, truncated bodies) are retried;
    ``denied`` (401, 403) and ``fatal`` (anything else, a 400) are not.
    """
    status, code = _status(exc)
    names = {type(e).__name__ for e in _chain(exc)}
    http_kind = _obstore_http_kind(exc)
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)) or status == 404:
        return "missing"
    if (
        any(isinstance(e, (TimeoutError, socket.timeout)) for e in _chain(exc))
        or http_kind == "Timeout"
        or names & {"ReadTimeoutError", "ConnectTimeoutError", "ServerTimeoutError"}
    ):
        return "timeout"
    if code in _THROTTLE_CODES or status in (429, 503) or "reduce your request rate" in str(exc):
        return "throttled"
    if isinstance(exc, PermissionError) or status in (401, 403) or names & _DENIED_NAMES:
        return "denied"
    if (status is not None and status >= 500) or names & _TRANSIENT_NAMES or http_kind in _OBSTORE_TRANSIENT_KINDS:
        return "transient"
    if any(isinstance(e, ConnectionError) for e in _chain(exc)):
        return "transient"
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS and status is None:
        return "transient"
    return "fatal"


def missing_bucket(exc: BaseException) -> bool:
    """True when ``exc`` is the server saying the bucket (or container) itself does not exist."""
    return _status(exc)[1] in ("NoSuchBucket", "ContainerNotFound")


_TYPES = {
    "missing": (StoreNotFoundError, "found nothing"),
    "timeout": (StorageTimeoutError, "timed out"),
    "throttled": (StorageThrottledError, "throttled by the server"),
    "denied": (StoragePermissionError, "access denied"),
    "transient": (StorageError, "failed"),
    "fatal": (StorageError, "failed"),
}


def _message(exc: BaseException) -> str:
    """The failure's message for ours; obstore's multi-line ``Debug source:`` dump is left out."""
    return (str(exc).split("\n\nDebug source:")[0].strip() or type(exc).__name__)[:500]


def storage_error(exc: BaseException, where: str, tries: int, elapsed: float) -> StorageError:
    """The typed error of a read of ``where`` that failed with ``exc`` after ``tries`` tries."""
    kind, what = _TYPES[classify(exc)]
    detail = _message(exc)
    budget = f" after {tries} tr{'y' if tries == 1 else 'ies'} in {elapsed:.1f} s" if tries > 1 or elapsed >= 1 else ""
    return kind(f"{where}: read {what}{budget} ({type(exc).__name__}: {detail})")


def retryable(exc: BaseException) -> bool:
    return classify(exc) in ("timeout", "throttled", "transient")


async def read_with_retries(call, policy: RetryPolicy, where: str):
    """Await ``call()`` under ``policy``; raise a :class:`StorageError` naming ``where`` when it fails.

    ``call`` is a zero-argument function returning a fresh awaitable per try.
    :class:`MoczarrError` and cancellation pass through untouched.
    """
    start = time.monotonic()
    tries = 0
    while True:
        tries += 1
        remaining = policy.deadline - (time.monotonic() - start) if policy.deadline else None
        try:
            if remaining is None:
                return await call()
            return await asyncio.wait_for(call(), timeout=max(remaining, 0.001))
        except ChecksumMismatchError as exc:  # ours, but a transport failure like any other: retried
            failure: Exception = exc
        except MoczarrError:
            raise
        except Exception as exc:  # every storage library's failure ends here, typed
            failure = exc
        await asyncio.sleep(_backoff(failure, policy, where, tries, start))


def read_with_retries_blocking(call, policy: RetryPolicy, where: str):
    """:func:`read_with_retries` for a blocking ``call()`` (a client's blocking request, in the calling thread).

    The same budget and the same typed errors. A try is not cut off at the
    deadline from here: the client's own timeouts bound it (obstore's
    ``timeout`` option, which :mod:`moczarr.storage._obstore` sets to the deadline).
    """
    start = time.monotonic()
    tries = 0
    while True:
        tries += 1
        try:
            return call()
        except ChecksumMismatchError as exc:
            failure: Exception = exc
        except MoczarrError:
            raise
        except Exception as exc:
            failure = exc
        time.sleep(_backoff(failure, policy, where, tries, start))


def _backoff(failure: Exception, policy: RetryPolicy, where: str, tries: int, start: float) -> float:
    """The seconds to wait before trying again after ``failure``; raises the typed error when the read is over."""
    if classify(failure) == "missing":
        # the zarr store answers a missing object as None: this is the root (or its bucket) missing
        raise StoreNotFoundError(f"{where}: the store root does not exist ({_message(failure)})") from failure
    elapsed = time.monotonic() - start
    delay = min(policy.backoff * 2 ** (tries - 1), policy.max_backoff)
    out_of_budget = tries >= policy.attempts or (policy.deadline and elapsed + delay >= policy.deadline)
    if not retryable(failure) or out_of_budget:
        raise storage_error(failure, where, tries, elapsed) from failure
    return delay


__all__ = [
    "CONNECT_TIMEOUT",
    "READ_TIMEOUT",
    "RetryPolicy",
    "classify",
    "missing_bucket",
    "policy_from_options",
    "read_with_retries",
    "read_with_retries_blocking",
    "storage_error",
]
