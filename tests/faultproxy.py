"""A fault-injecting HTTP proxy on 127.0.0.1, in front of the moto server of ``tests/s3server.py``.

Clients use the proxy's address as their S3 ``endpoint_url``; every request
is forwarded to the real server unless a rule says otherwise. A rule matches
a substring of the request path (and optionally the method, and a substring
of the query: ``query="prefix=a/b/"`` picks out one LIST) and injects one
fault, a given number of times or forever:

- ``status``: answer ``status`` with an S3 XML error body (``code``): 500
  ``InternalError``, 503 ``SlowDown``, 403 ``AccessDenied``;
- ``reset``: close the connection without an answer (a TCP reset);
- ``truncate``: forward, but send only the first half of the body under the
  full ``Content-Length``, then close;
- ``cut``: forward only the first half of the body, with an honest
  ``Content-Length`` for that half and no ``ETag`` or checksum header: a
  server that serves a short object, which only the content can give away;
- ``corrupt``: forward with every byte of the body flipped (same length, so
  only a checksum can tell);
- ``stall``: hold the request ``seconds`` before answering (or until the
  proxy stops);
- ``latency``: wait ``seconds``, then forward.

The proxy binds 127.0.0.1 only, records every request it sees
(:attr:`FaultProxy.seen`), and stops itself on ``__exit__``: stalled handlers
are released at once, and every handler thread is a daemon.
"""

from __future__ import annotations

import http.client
import socket
import struct
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from tests.loopback import BurstServer

_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


@dataclass
class Rule:
    match: str
    kind: str
    method: str | None = None
    times: int | None = None  # None: forever
    status: int = 500
    code: str = "InternalError"
    seconds: float = 0.0
    query: str | None = None
    hits: int = 0

    def applies(self, method: str, path: str, query: str = "") -> bool:
        if self.method and self.method != method:
            return False
        if self.match not in path or (self.query is not None and self.query not in query):
            return False
        return self.times is None or self.hits < self.times


class _QuietServer(BurstServer):
    """A client that gave up on an answer (its timeout, a cancelled batch) is the point of a fault, not an error."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FaultProxy:
    """``with FaultProxy(upstream) as proxy: proxy.add(...)``; ``proxy.endpoint_url`` for clients."""

    def __init__(self, upstream: str, *, max_stall: float = 30.0):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.max_stall = max_stall
        self.rules: list[Rule] = []
        self.seen: Counter = Counter()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.endpoint_url = ""

    # -- rules --------------------------------------------------------------------------------------
    def add(self, match: str, kind: str, **kwargs) -> Rule:
        rule = Rule(match, kind, **kwargs)
        with self.lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()
            self.seen.clear()

    def count(self, match: str = "", method: str = "GET") -> int:
        """Requests seen whose path contains ``match``."""
        with self.lock:
            return sum(n for (m, p), n in self.seen.items() if m == method and match in p)

    def _rule_for(self, method: str, path: str, query: str = "") -> Rule | None:
        with self.lock:
            self.seen[method, path] += 1
            for rule in self.rules:
                if rule.applies(method, path, query):
                    rule.hits += 1
                    return rule
        return None

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                proxy._handle(self)

            do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.endpoint_url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- one request --------------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        parts = urlsplit(h.path)
        path = unquote(parts.path)
        rule = self._rule_for(h.command, path, unquote(parts.query))
        kind = rule.kind if rule else None
        if kind == "stall":
            self.stopping.wait(min(rule.seconds or self.max_stall, self.max_stall))
            h.close_connection = True
            return
        if kind == "latency":
            self.stopping.wait(rule.seconds)
        if kind == "reset":
            # SO_LINGER 0: close() sends a RST, the client sees "connection reset by peer"
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.close_connection = True
            return
        if kind == "status":
            payload = (
                f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{rule.code}</Code>'
                f"<Message>injected {rule.code}</Message><RequestId>faultproxy</RequestId></Error>"
            ).encode()
            h.send_response(rule.status)
            h.send_header("Content-Type", "application/xml")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(payload)
            return
        status, headers, data = self._forward(h, body)
        if kind == "corrupt":
            data = bytes(b ^ 0xFF for b in data)
        if kind == "cut":
            data = data[: len(data) // 2]
            drop = ("etag", "content-md5")  # a multipart object's ETag is no MD5 either: nothing to check the body by
            headers = [(k, v) for k, v in headers if k.lower() not in drop and "checksum" not in k.lower()]
        h.send_response(status)
        for name, value in headers:
            if name.lower() not in _HOP and name.lower() != "content-length":
                h.send_header(name, value)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command == "HEAD":
            return
        if kind == "truncate" and len(data) > 1:
            h.wfile.write(data[: len(data) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        h.wfile.write(data)

    def _forward(self, h: BaseHTTPRequestHandler, body: bytes):
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP}
            conn.request(h.command, h.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, resp.getheaders(), data
        finally:
            conn.close()


def wait_until(predicate, timeout: float = 5.0, step: float = 0.02) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes (for asserting on proxy counts)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


__all__ = ["FaultProxy", "Rule", "wait_until"]
