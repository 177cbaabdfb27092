"""An HTTP server class for the suite's servers on 127.0.0.1.

``http.server``'s listen backlog is 5: a burst of the reader's concurrent GETs
overflows it, the kernel drops the other handshakes, and each dropped client
waits out its first SYN retransmission (1 s) before it is served.
"""

from __future__ import annotations

from http.server import ThreadingHTTPServer


class BurstServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` whose backlog holds the reader's in-flight requests at once."""

    request_queue_size = 128
    daemon_threads = True
