"""The suite's HTTP servers on 127.0.0.1: a folder (http.server) or an ASGI application (uvicorn).

``http.server``'s listen backlog is 5: a burst of the reader's concurrent GETs
overflows it, the kernel drops the other handshakes, and each dropped client
waits out its first SYN retransmission (1 s) before it is served.
"""

from __future__ import annotations

import functools
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class BurstServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` whose backlog holds the reader's in-flight requests at once."""

    request_queue_size = 128
    daemon_threads = True


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass


class _CorsHandler(_QuietHandler):
    """Every response readable by a page of another origin (a web app reading a catalog served beside it)."""

    def end_headers(self):
        self.send_header("Access-Control-Allow-Origin", "*")
        super().end_headers()


@contextmanager
def serve_folder(folder: Path, *, cors: bool = False) -> Iterator[str]:
    """``folder`` served by ``http.server`` on 127.0.0.1 (quietly, a :class:`BurstServer`); yields its URL.

    ``cors=True`` lets pages of any origin read it (``Access-Control-Allow-Origin: *``).
    """
    handler = _CorsHandler if cors else _QuietHandler
    httpd = BurstServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@contextmanager
def serve_asgi(app) -> Iterator[str]:
    """An ASGI ``app`` served by uvicorn on 127.0.0.1 in a thread (quietly); yields its URL, stops it after."""

    import uvicorn

    from moczarr_intake.cli.serve import listening_socket  # TCP_NODELAY on kept-alive connections

    sock = listening_socket("127.0.0.1", 0, BurstServer.request_queue_size)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the ASGI server stopped before it started")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


#: an opener that ignores proxy settings: the suite's servers are on 127.0.0.1
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str) -> tuple[int, bytes, str]:
    """The status, body and content type of a GET (an HTTP error's too)."""
    try:
        with DIRECT.open(url, timeout=120) as resp:
            return resp.status, resp.read(), resp.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("content-type", "")
