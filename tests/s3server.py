"""A real S3-compatible server for the object-store tests: moto's server mode on 127.0.0.1.

The tests talk HTTP to it through s3fs exactly as they would to AWS; nothing
is mocked in-process. :class:`S3Server` starts ``moto.server.ThreadedMotoServer``
on a free loopback port, creates buckets (public-read by bucket policy, or
private), fills them with local directory trees (setup, written straight into
the in-process server's backend), and counts the HTTP
requests the server answers, so a test can check what actually went over the
wire (for example that no ``HEAD`` precedes each ``GET``).

Moto and anonymous access (moto 5.x, checked against its ``s3/responses.py``):

- Object reads (``GET``/``HEAD`` of an existing key) without an
  ``Authorization`` header or a presigned signature are refused with 403
  unless the bucket policy allows the action or the key's ACL is public-read.
  So an anonymous (``anon=True``, unsigned) client really is refused by a
  private bucket and served by a bucket whose policy allows ``s3:GetObject``.
  Moto matches the policy against the literal action, so a ``HEAD`` is checked
  as ``s3:HeadObject`` (AWS checks ``s3:GetObject`` for it); the public policy
  below names both so either reader behaves as it would on AWS.
- Bucket-level requests (``ListObjectsV2``) and signatures are only checked
  when moto's IAM simulation is on (``INITIAL_NO_AUTH_ACTION_COUNT``, off by
  default, and process-wide for a threaded server, so it would apply to every
  bucket at once). With it off, an anonymous LIST of a private bucket is
  served, and any key/secret pair is accepted: "requires credentials" here
  means "anonymous object reads are refused", not "the secret is verified".
- A GET of a missing key answers 404 whatever the policy. AWS answers 403 to
  an anonymous GET of a missing key unless the policy also grants
  ``s3:ListBucket``; the public policy grants it, so both servers agree that
  a miss is a clean 404 (the reader treats a miss as trustworthy absence).

One server per test process: the session fixture ``s3_server`` of
``tests/conftest.py`` starts it on first use (so a pytest-xdist worker that
runs no object-store test starts none) and every module shares it. Moto keeps
its buckets per process, so each user takes its own bucket with
:meth:`S3Server.bucket`, which hands it over empty whatever an earlier module
(or the other store layer's run of the same module) left there.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import boto3
from botocore.config import Config
from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends
from moto.s3.utils import compute_checksum
from moto.server import ThreadedMotoServer

ACCESS_KEY = "moczarr-test-key"
SECRET_KEY = "moczarr-test-secret"
REGION = "us-east-1"

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # werkzeug colours error lines
_REQUEST_LINE = re.compile(r"\b(GET|HEAD|PUT|POST|DELETE|OPTIONS) (/\S*) HTTP/")


class HttpCounter(Counter):
    """HTTP requests the server answered, as ``(method, what)`` keys.

    ``what`` is ``"list"`` for a bucket listing, else the object key (bucket
    name stripped), or the bucket name for other bucket-level requests.
    """

    def method(self, method: str) -> int:
        return sum(n for (m, _), n in self.items() if m == method)

    @property
    def lists(self) -> int:
        return sum(n for (m, what), n in self.items() if m == "GET" and what == "list")

    @property
    def object_gets(self) -> int:
        return self.method("GET") - self.lists

    @property
    def heads(self) -> int:
        return self.method("HEAD")

    @property
    def total(self) -> int:
        return sum(self.values())


class _RequestLog(logging.Handler):
    """Feeds werkzeug's per-request log lines (emitted before the response is sent) to counters."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.active: list[HttpCounter] = []
        self.guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if not self.active:
            return
        match = _REQUEST_LINE.search(ANSI.sub("", record.getMessage()))
        if not match:
            return
        method, target = match.groups()
        parts = urlsplit(target)
        bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
        query = parse_qs(parts.query, keep_blank_values=True)
        what = "list" if method == "GET" and not key and ("list-type" in query or "prefix" in query) else key
        with self.guard:
            for counter in self.active:
                counter[method, what or bucket] += 1


class S3Server:
    """Moto's S3 server on a free loopback port; ``with S3Server() as server: ...`` or start()/stop()."""

    def __init__(self, ip_address: str = "127.0.0.1", port: int = 0):
        self._server = ThreadedMotoServer(ip_address=ip_address, port=port, verbose=False)
        self._log = _RequestLog()
        self._werkzeug = logging.getLogger("werkzeug")
        self._saved: tuple[int, bool] | None = None
        self.endpoint_url = ""

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> S3Server:
        # werkzeug logs one line per request; route them to the counter, not to stderr
        self._saved = (self._werkzeug.level, self._werkzeug.propagate)
        self._werkzeug.setLevel(logging.INFO)
        self._werkzeug.propagate = False
        self._werkzeug.addHandler(self._log)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._server.stop()
        self._werkzeug.removeHandler(self._log)
        if self._saved is not None:
            self._werkzeug.setLevel(self._saved[0])
            self._werkzeug.propagate = self._saved[1]
            self._saved = None

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- clients and options --------------------------------------------------------------------
    def client(self, region: str = REGION):
        """A boto3 S3 client with the test credentials (used for setup only)."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=region,
            config=Config(max_pool_connections=32, retries={"max_attempts": 2}),
        )

    def storage_options(self, *, anon: bool) -> dict:
        """fsspec ``storage_options`` for this server: anonymous, or signed with the test credentials."""
        client_kwargs = {"endpoint_url": self.endpoint_url, "region_name": REGION}
        if anon:
            return {"anon": True, "client_kwargs": client_kwargs}
        return {"key": ACCESS_KEY, "secret": SECRET_KEY, "client_kwargs": client_kwargs}

    # -- buckets and uploads --------------------------------------------------------------------
    def bucket(self, name: str, *, public: bool = False, region: str | None = None) -> str:
        """Bucket ``name``, empty, with the policy ``public`` asks for (whatever an earlier user left); returns it.

        A new bucket is made in ``region`` (default the server's); an existing one keeps its region.
        """
        s3 = self.client()
        try:
            s3.head_bucket(Bucket=name)
        except s3.exceptions.ClientError:
            self.create_bucket(name, public=public, region=region or REGION)
            return name
        self.delete_prefix(name, "")
        if public:
            self.create_bucket(name, public=True, exists=True)
        else:
            s3.delete_bucket_policy(Bucket=name)
        return name

    def create_bucket(self, name: str, *, public: bool = False, region: str = REGION, exists: bool = False) -> None:
        """A new bucket in ``region`` (or, ``exists=True``, one already there); ``public=True`` attaches a policy
        allowing anonymous reads and listings."""
        s3 = self.client(region)
        if not exists:
            where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
            s3.create_bucket(Bucket=name, **where)
        if public:
            policy = {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "PublicRead",
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": ["s3:GetObject", "s3:HeadObject"],
                        "Resource": f"arn:aws:s3:::{name}/*",
                    },
                    {
                        "Sid": "PublicList",
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": ["s3:ListBucket"],
                        "Resource": f"arn:aws:s3:::{name}",
                    },
                ],
            }
            s3.put_bucket_policy(Bucket=name, Policy=json.dumps(policy))

    def upload_tree(self, local: str | os.PathLike, bucket: str, prefix: str) -> int:
        """Every file under ``local`` as an object ``s3://{bucket}/{prefix}/...``; returns the file count.

        Setup, not under test: the objects go straight into the in-process server's
        backend, the same objects a PUT stores, without signing and sending each
        over HTTP (40x faster; reads still go through the server).
        """
        root = Path(local)
        prefix = prefix.strip("/")
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
        backend.get_bucket(bucket)  # a missing bucket raises here, as a PUT would fail
        files = sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            rel, body = path.relative_to(root).as_posix(), path.read_bytes()
            # the CRC32 a boto3 PUT sends and a GET with checksum mode returns, as the server would keep it
            crc = compute_checksum(body, algorithm="CRC32").decode()
            key = backend.put_object(bucket, f"{prefix}/{rel}" if prefix else rel, body, checksum_value=crc)
            key.checksum_algorithm = "CRC32"
        return len(files)

    def put_bytes(self, bucket: str, key: str, payload: bytes) -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=payload)

    def delete_prefix(self, bucket: str, prefix: str) -> None:
        s3 = self.client()
        keys = [
            o["Key"]
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for o in page.get("Contents", [])
        ]
        for i in range(0, len(keys), 1000):
            s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[i : i + 1000]]})

    # -- request counting -----------------------------------------------------------------------
    @contextmanager
    def count_http(self) -> Iterator[HttpCounter]:
        """Count the HTTP requests the server answers inside the block (any client, any thread)."""
        counter = HttpCounter()
        with self._log.guard:
            self._log.active.append(counter)
        try:
            yield counter
        finally:
            with self._log.guard:
                self._log.active.remove(counter)


__all__ = ["ACCESS_KEY", "REGION", "SECRET_KEY", "HttpCounter", "S3Server"]
