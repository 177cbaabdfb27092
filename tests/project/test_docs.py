"""Every ```python block in README.md and docs/*.md runs verbatim, as a reader of a clone would run it.

Each page runs in a fresh temporary folder holding a copy of the repository's
``catalogs/`` (the bundled sample and its committed catalogs: all a block may
name), with the working directory set there. Blocks run in page order in one
namespace, so a block may build on the blocks before it. Nothing in a block is
rewritten; blocks marked ``notest`` are skipped. A page with blocks marked ``s3`` (docs/object-storage.md) runs
against the session's S3 server on 127.0.0.1 (tests/s3server.py), handed to it as a user's environment would:
``AWS_ENDPOINT_URL``, the AWS keys, and ``MOCZARR_BUCKET`` naming an empty bucket.
"""

from __future__ import annotations

import http.server
import re
import shutil
import socket
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers import REPO

BLOCK = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
ALL_PAGES = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md", *(REPO / "docs").glob("*.md")])
# pages with at least one runnable block (api.md is a table of names only)
PAGES = [page for page in ALL_PAGES if any("notest" not in m.group(1) for m in BLOCK.finditer(page.read_text()))]


def runnable_blocks(text: str) -> list[str]:
    return [m.group(2) for m in BLOCK.finditer(text) if "notest" not in m.group(1)]


def test_pages_are_found():
    assert {"README.md", "quickstart.md", "stac.md", "catalog.md", "places.md"} <= {p.name for p in PAGES}


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda p: p.name)
def test_no_page_names_what_a_clone_lacks(page):
    """The test fixtures beside a checkout (``../shared``) are not part of a clone."""
    assert "../shared" not in page.read_text()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run(page, tmp_path, monkeypatch, request):
    if any("s3" in m.group(1).split() for m in BLOCK.finditer(page.read_text())):
        from tests.s3server import ACCESS_KEY, REGION, SECRET_KEY

        server = request.getfixturevalue("s3_server")
        monkeypatch.setenv("MOCZARR_BUCKET", server.bucket(f"docs-{page.stem}"))
        for name, value in [("AWS_ENDPOINT_URL", server.endpoint_url), ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
                            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY), ("AWS_REGION", REGION)]:  # fmt: skip
            monkeypatch.setenv(name, value)
    shutil.copytree(
        REPO / "catalogs", tmp_path / "catalogs", ignore=shutil.ignore_patterns("items.parquet", "api-collections")
    )
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(runnable_blocks(page.read_text())):
            exec(compile(code, f"{page.name} (python block {i + 1})", "exec"), namespace)


def connected_in_one_burst(server_class, n: int) -> int:
    """How many of ``n`` connections made at once to a listening ``server_class`` that accepts none yet
    complete: those its listen backlog holds. The kernel drops the others' handshakes, and a client
    retries a dropped one only after its first retransmission timeout (1 s), past the 0.9 s allowed."""
    server = server_class(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    try:

        def connect(_):
            sock = socket.socket()
            sock.settimeout(0.9)
            try:
                sock.connect(server.server_address)
                return sock
            except OSError:
                sock.close()
                return None

        with ThreadPoolExecutor(n) as pool:
            socks = list(pool.map(connect, range(n)))
        for sock in socks:
            if sock is not None:
                sock.close()
        return sum(sock is not None for sock in socks)
    finally:
        server.server_close()


def test_the_publishing_server_takes_the_readers_requests_in_flight():
    """docs/stac.md's server holds a burst of the reader's 32 requests in flight in its listen queue."""
    from moczarr.storage import DEFAULT_CONCURRENCY

    block = next(
        code for code in runnable_blocks((REPO / "docs" / "stac.md").read_text()) if "request_queue_size" in code
    )
    namespace: dict = {}
    exec(compile(block, "stac.md (the server block)", "exec"), namespace)
    assert connected_in_one_burst(namespace["CatalogServer"], DEFAULT_CONCURRENCY) == DEFAULT_CONCURRENCY
    # the standard library's own server drops most of the same burst: the check tells the two apart
    assert connected_in_one_burst(http.server.ThreadingHTTPServer, DEFAULT_CONCURRENCY) < DEFAULT_CONCURRENCY
