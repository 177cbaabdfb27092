"""A real STAC API database for the tests: PostgreSQL + PostGIS + pgstac, and stac-fastapi-pgstac under uvicorn.

Debian's PostgreSQL (``postgresql``, ``postgresql-15-postgis-3``; ``.ci/run``
installs them) is initialised into a temporary folder and started on a free
127.0.0.1 port (as the ``postgres`` user when the tests run as root:
PostgreSQL refuses to run as root); ``pypgstac migrate`` installs pgstac;
stac-fastapi-pgstac is served by uvicorn on another free port. A watchdog
child process stops both when the test process goes, so nothing outlives the
tests. :func:`missing` says what is not installed (the tests fail on it
under ``CI=true`` and skip elsewhere).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

START_SECONDS = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bindir() -> Path | None:
    """The folder of Debian's PostgreSQL server binaries (the newest installed), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def missing() -> str | None:
    """Why the stack cannot start here (None when everything is installed)."""
    bindir = pg_bindir()
    if bindir is None:
        return "PostgreSQL is not installed (apt-get install postgresql postgresql-15-postgis-3)"
    version = bindir.parts[-2] if bindir.parts[-1] == "bin" else "15"
    if not glob.glob(f"/usr/share/postgresql/{version}/extension/postgis.control"):
        return f"PostGIS is not installed for PostgreSQL {version} (apt-get install postgresql-{version}-postgis-3)"
    for module in ("pypgstac", "stac_fastapi.pgstac", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[pgstac]')"
    return None


def _as_postgres(cmd: list[str]) -> list[str]:
    """``cmd`` as the ``postgres`` user when running as root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


class PgstacStack:
    """``with PgstacStack() as stack``: ``stack.dsn`` (the database), ``stack.api`` (the STAC API root URL)."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="moczarr-pgstac-"))
        self.port, self.api_port = free_port(), free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.api = f"http://127.0.0.1:{self.api_port}"
        self.bindir = pg_bindir()
        self._children: list[subprocess.Popen] = []

    def __enter__(self) -> PgstacStack:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _start(self) -> None:
        data, log = self.folder / "data", self.folder / "postgres.log"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        subprocess.run(
            _as_postgres(
                [str(self.bindir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
        )
        options = f"-p {self.port} -h 127.0.0.1 -k {self.folder} -c fsync=off -c full_page_writes=off"
        subprocess.run(
            _as_postgres([str(self.bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"]),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [str(Path(sys.executable).with_name("pypgstac")), "migrate", "--dsn", self.dsn],
            check=True,
            capture_output=True,
        )
        env = {
            **os.environ,
            "PGUSER": "postgres",
            "PGPASSWORD": "trust",
            "PGHOST": "127.0.0.1",
            "PGPORT": str(self.port),
            "PGDATABASE": "postgres",
        }
        self._children.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "stac_fastapi.pgstac.app:create_app",
                    "--factory",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.api_port),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        self._children.insert(0, self._watchdog(self._children[-1].pid))
        self._wait_for_api()

    def _watchdog(self, api_pid: int) -> subprocess.Popen:
        """A child that stops the API and the database once this process is gone (a killed run leaves nothing)."""
        stop = _as_postgres([str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "stop"])
        code = (
            "import os, subprocess, sys, time\n"
            f"parent = {os.getpid()}\n"
            "while os.getppid() == parent:\n"
            "    time.sleep(0.5)\n"
            f"subprocess.run(['kill', '{api_pid}'], capture_output=True)\n"
            f"subprocess.run({stop!r}, capture_output=True)\n"
        )
        return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)

    def _wait_for_api(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self._children[-1].poll() is not None:
                raise RuntimeError("stac-fastapi-pgstac exited at start")
            try:
                with urllib.request.urlopen(f"{self.api}/_mgmt/ping", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"stac-fastapi-pgstac did not answer on {self.api} within {START_SECONDS} s")

    def stop(self) -> None:
        for child in reversed(self._children):
            child.terminate()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
        self._children.clear()
        if (self.folder / "data" / "postmaster.pid").exists():
            subprocess.run(
                _as_postgres([str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "stop"]),
                capture_output=True,
            )
        shutil.rmtree(self.folder, ignore_errors=True)
