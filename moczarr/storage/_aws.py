"""What AWS tells an S3 client before its first request: a bucket's region and the ambient credentials.

:func:`bucket_region` asks the server with one unsigned ``HEAD`` on the bucket
(cached per endpoint and bucket for the process); :func:`region_for` settles the
region an ``S3Store`` is signed for from that answer and the environment;
:func:`aws_credentials` walks botocore's own chain (environment, shared files
and profiles, SSO, ``credential_process``, containers, instance metadata),
refreshing credentials served by :class:`AwsCredentialChain`.
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import HTTPRedirectHandler, Request, build_opener

from ..errors import ObstoreUnsupportedError
from ._counter import record_request
from ._retry import CONNECT_TIMEOUT


def region_for(bucket: str, endpoint: str | None, timeout: float) -> str:
    """The region an ``S3Store`` of ``bucket`` is signed for (see :func:`~moczarr.storage.open_obstore`)."""
    failure = None
    try:
        region = _looked_up(bucket, endpoint, timeout)
    except (OSError, ValueError) as exc:  # unreachable, refused, timed out, a malformed URL
        region, failure = None, exc
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        return region
    if endpoint or failure is None:
        # an S3-compatible server that names no region, or AWS answering without one (a bucket that is not there:
        # its reads then get the server's own answer): the AWS clients' default
        return "us-east-1"
    raise ObstoreUnsupportedError(
        f"the region of bucket {bucket!r} could not be found: no answer to a HEAD on the bucket "
        f"({type(failure).__name__}: {failure}) and no AWS_REGION set"
    )


class _NoRedirects(HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # a 301 names the region in its headers: read it, do not follow


_OPENER = build_opener(_NoRedirects)
_REGIONS: dict[tuple[str, str], str] = {}
#: one lock per endpoint and bucket: a bucket is looked up by one thread at a time
_LOOKUPS: dict[tuple[str, str], threading.Lock] = {}
_LOOKUPS_LOCK = threading.Lock()
AWS_S3 = "https://s3.amazonaws.com"


def bucket_region(bucket: str, endpoint: str | None = None, *, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """The region the server names for ``bucket``: ``x-amz-bucket-region`` of one unsigned ``HEAD`` on the bucket.

    What the AWS clients do to find a bucket's region: S3 answers the header
    whether or not it lets the caller in (200, 301 from another region, 403).
    ``endpoint`` is an S3-compatible server's (None: AWS). Answers are cached
    per endpoint and bucket for the life of the process; None (not cached)
    when the request fails or the answer names no region. Safe from many
    threads: buckets are looked up at once, each by one thread at a time (a
    thread asking for a bucket another is looking up waits for its answer).
    """
    try:
        return _looked_up(bucket, endpoint, timeout)
    except (OSError, ValueError):  # unreachable, refused, timed out, a malformed URL
        return None


def _looked_up(bucket: str, endpoint: str | None, timeout: float) -> str | None:
    """:func:`bucket_region`, but a request that got no answer raises (``OSError``, ``ValueError``)."""
    base = (endpoint or "").rstrip("/")
    key = (base, bucket)
    cached = _REGIONS.get(key)
    if cached is not None:
        return cached
    with _LOOKUPS_LOCK:
        lock = _LOOKUPS.setdefault(key, threading.Lock())
    with lock:
        cached = _REGIONS.get(key)
        if cached is not None:  # another thread's answer, while this one waited
            return cached
        if base:
            url = f"{base}/{quote(bucket)}"
        elif "." in bucket:  # not a DNS label: path style on the global endpoint
            url = f"{AWS_S3}/{quote(bucket)}"
        else:
            url = f"https://{bucket}.s3.amazonaws.com/"
        record_request("HEAD", bucket)
        try:
            with _OPENER.open(Request(url, method="HEAD"), timeout=timeout) as response:
                region = response.headers.get("x-amz-bucket-region")
        except HTTPError as exc:  # an answer all the same
            region = exc.headers.get("x-amz-bucket-region")
        if region:
            _REGIONS[key] = region
        return region or None


_CREDENTIALS: dict[tuple, dict] = {}
_CREDENTIALS_LOCK = threading.Lock()


def aws_credentials(profile: str | None = None) -> dict:
    """Ambient AWS credentials as ``S3Store`` keyword arguments, found by botocore's own chain.

    The chain every AWS client walks: environment variables, the shared
    credentials and config files (``AWS_PROFILE`` or ``profile``; SSO,
    ``credential_process``, assumed roles), container credentials, instance
    metadata. Static credentials become ``access_key_id`` / ``secret_access_key``
    (/ ``session_token``); refreshing ones a ``credential_provider``
    (:class:`AwsCredentialChain`). Resolved once per profile and AWS
    environment in a process. Raises :class:`~moczarr.errors.ObstoreUnsupportedError`
    when botocore is missing, the chain fails (an unknown profile) or finds nothing.
    """
    key = (profile, tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))))
    with _CREDENTIALS_LOCK:
        if key not in _CREDENTIALS:
            _CREDENTIALS[key] = _resolve_credentials(profile)
        return dict(_CREDENTIALS[key])


def _resolve_credentials(profile: str | None) -> dict:
    try:
        import botocore.credentials
        import botocore.exceptions
        import botocore.session
    except ImportError:
        raise ObstoreUnsupportedError(
            "ambient AWS credentials are resolved by botocore (installed with s3fs)"
        ) from None
    try:
        credentials = botocore.session.Session(profile=profile).get_credentials()
    except botocore.exceptions.BotoCoreError as exc:
        raise ObstoreUnsupportedError(f"the AWS credential chain failed ({exc})") from None
    if credentials is None:
        raise ObstoreUnsupportedError("the AWS credential chain found no credentials")
    if isinstance(credentials, botocore.credentials.RefreshableCredentials):
        return {"credential_provider": AwsCredentialChain(profile, credentials)}
    frozen = credentials.get_frozen_credentials()
    out = {"access_key_id": frozen.access_key, "secret_access_key": frozen.secret_key}
    if frozen.token:
        out["session_token"] = frozen.token
    return out


class AwsCredentialChain:
    """An obstore credential provider over botocore's refreshing credentials (SSO, roles, instance metadata).

    Each call hands obstore the current credentials for :attr:`TTL` (botocore
    refreshes them ahead of their expiry). Pickles as its profile, so a dask
    worker resolves its own credentials, as s3fs does.
    """

    TTL = timedelta(minutes=5)

    def __init__(self, profile: str | None = None, credentials=None):
        self.profile = profile
        self._credentials = credentials

    def __call__(self) -> dict:
        if self._credentials is None:
            import botocore.session

            self._credentials = botocore.session.Session(profile=self.profile).get_credentials()
        frozen = self._credentials.get_frozen_credentials()
        return {
            "access_key_id": frozen.access_key,
            "secret_access_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": datetime.now(UTC) + self.TTL,
        }

    def __reduce__(self):
        return (type(self), (self.profile,))
