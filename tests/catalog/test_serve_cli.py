"""``moczarr-catalog serve``: the real command as a subprocess on a free 127.0.0.1 port, its first stderr line the
server's URL, serving the stores under ``--allow`` and refusing the rest with 403; stopped by SIGINT.

The tiles themselves are checked against the oracle in ``tests/reader/test_tiles_server.py`` (the same
application in a thread); this module checks what the command adds: its flags, its URL line, its stop.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import SAMPLE, catalog_script, run_catalog
from tests.loopback import http_get

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]


@contextmanager
def serving(*args: object, cwd: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """``moczarr-catalog serve --port 0 ARGS`` running; yields the URL its first line names, and the process."""
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    command = [sys.executable, catalog_script(), "serve", "--port", "0", *map(str, args)]
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        found = re.match(r"serving (http://127\.0\.0\.1:\d+) \(stores under (.*)\); Ctrl-C stops$", first.strip())
        assert found, first + proc.stderr.read()
        yield found[1], proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def test_serve_answers_for_the_stores_under_allow_and_403_elsewhere(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "stores" / "sample")
    (tmp_path / "private").mkdir()
    with serving("--allow", tmp_path / "stores", cwd=tmp_path) as (url, proc):
        status, body, _ = http_get(f"{url}/info?url=stores/sample&product=elevation")
        assert status == 200, body
        assert json.loads(body)["bounds"]
        status, body, _ = http_get(f"{url}/info?url={tmp_path / 'private'}")
        assert status == 403
        assert "outside the stores this server serves" in json.loads(body)["detail"]
        status, body, _ = http_get(f"{url}/info?url={tmp_path / 'stores' / '..' / 'private'}")
        assert status == 403
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130  # as every command interrupted (the server shut down first)
    assert err.splitlines() == ["error: interrupted"]


def test_serve_without_allow_serves_the_current_folder_only(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "sample")
    with serving(cwd=tmp_path) as (url, _):
        assert http_get(f"{url}/info?url=sample&product=elevation")[0] == 200
        assert http_get(f"{url}/info?url={SAMPLE}&product=elevation")[0] == 403


def test_a_port_in_use_is_one_error_line(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run_catalog("serve", "--port", port, cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and "in use" in line, line


def test_a_bad_endpoint_url_is_refused_before_serving(tmp_path):
    done = run_catalog("serve", "--endpoint-url", "not-a-url", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: --endpoint-url"), line


def test_the_served_connections_send_without_waiting_for_an_ack():
    """TCP_NODELAY on every accepted connection: without it, a kept-alive request (a browser's) waits 40 ms for the
    delayed ACK of the response's header write before its body goes out."""
    import http.client
    import threading

    import uvicorn

    from moczarr_intake.cli.serve import listening_socket

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})

    sock = listening_socket("127.0.0.1", 0)
    assert sock.getsockname()[0] == "127.0.0.1"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        conn = http.client.HTTPConnection(*sock.getsockname()[:2], timeout=30)
        for _ in range(2):  # the same kept-alive connection twice
            conn.request("GET", "/")
            assert conn.getresponse().read() == b"ok"
        accepted = [c.transport.get_extra_info("socket") for c in server.server_state.connections]
        assert accepted
        assert all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in accepted)
        conn.close()
    finally:
        server.should_exit = True
        thread.join(10)
