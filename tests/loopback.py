"""An HTTP server class for the suite's servers on 127.0.0.1.

``http.server``'s listen backlog is 5: a burst of the reader's concurrent GETs
overflows it, the kernel drops the other handshakes, and each dropped client
waits out its first SYN retransmission (1 s) before it is served.
"""

from __future__ import annotations

import functools
import threading
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
