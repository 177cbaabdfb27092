"""One run at a time on a catalog, locally and on object storage; what a run that died left is taken over.

``build``, ``update`` and ``publish`` hold the catalog's lock while they
read its record, write its documents or load them into pgstac
(:func:`catalog_lock`). A second run on the same catalog refuses at once
with one line naming the holder (command, pid, host, since when): a
scheduled run finds the next slot, nothing waits unboundedly.

- **A local folder** ``OUT``: the file ``.OUT.moczarr-lock`` beside it, held
  with ``flock``. The system releases it when its process ends, however it
  ends (SIGKILL included), so a dead holder never blocks the next run.
- **Object storage** ``s3://bucket/cat``: the object ``cat/.moczarr-lock``,
  created with a conditional PUT (``If-None-Match: *``): of two runs exactly
  one creates it. A lock whose holder ran on this host (same boot) and whose
  process is gone is taken over with another conditional PUT
  (``If-Match`` its ETag: of two runs taking it over, one wins). A lock held
  from another host cannot be checked from here: the run refuses, naming it,
  and ``--break-lock`` (:func:`break_lock`) marks it broken once the operator
  knows its process is gone; the next run takes it over. A holder whose lock
  was broken stops at its next write of the lock.

Both hold a JSON record of the holder. What a run that dies while writing
leaves is known from it: the next holder finds the previous record (the
lock file's content, or the object it took over) and, when that run had
started writing (``writing``), **unsettles** the catalog: the build record
is rewritten with ``unsettled`` (who died, when) and without its release
(``written_by``), so the next ``update`` writes the whole catalog instead
of keeping documents, and ``publish`` refuses until one has
(``settled=True``). On object storage the record also carries the dead
run's ``journal``: the keys it was writing and deleting, whose state in the
bucket is unknown; :func:`~.outstore.write_tree` writes or deletes each of
them again and the journal stays in the lock until a write has. The dead
run's staging folders are removed (:func:`~.staging.sweep`).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

from moczarr.errors import StorageError
from moczarr.metadata import Writer, is_remote, normalize_location

from .staging import pause, sweep

#: the lock object below an object-store catalog's location
LOCK_KEY = ".moczarr-lock"
SPEC = "moczarr-catalog-lock/1"
#: the build record's name (as :data:`.record.RECORD_NAME`; not imported: the record imports the catalog's writers)
_RECORD = "build-record.json"


class CatalogLockedError(StorageError):
    """Another run holds the catalog's lock (the message names it), or the lock was taken from this run."""


class UnsettledCatalogError(StorageError):
    """A run that died while writing left the catalog unsettled: ``update`` (or ``build``) it before publishing."""


_held: dict[str, CatalogLock] = {}
_guard = threading.Lock()


def held(location: str | os.PathLike) -> CatalogLock | None:
    """The lock this process holds on the catalog at ``location``, if it holds one."""
    return _held.get(_key(location))


@contextlib.contextmanager
def catalog_lock(
    location: str | os.PathLike,
    storage_options: dict | None = None,
    command: str = "build",
    *,
    settled: bool = False,
) -> Iterator[CatalogLock]:
    """Hold the lock of the catalog at ``location`` (a folder or a URL) for the ``with`` body.

    Re-entrant within a process (an ``update`` that calls ``build``: the
    inner use is the outer lock). Raises :class:`CatalogLockedError` naming
    the holder when another run holds it; with ``settled=True``,
    :class:`UnsettledCatalogError` when a run that died while writing left
    the catalog unsettled (``publish`` wraps itself in this). Takes over a
    lock whose holder is dead (see the module docstring).
    """
    key = _key(location)
    with _guard:
        mine = _held.get(key)
    if mine is not None:
        if settled:
            mine.check_settled()
        yield mine
        return
    lock = _RemoteLock(key, storage_options, command) if is_remote(key) else _LocalLock(key, command)
    lock.acquire()
    try:
        with _guard:
            _held[key] = lock
        lock.recover()
        if settled:
            lock.check_settled()
        pause("locked")
        yield lock
    except BaseException:
        with contextlib.suppress(Exception):  # the failure that ended the run is the one to report
            _release(key, lock)
        raise
    _release(key, lock)


def _release(key: str, lock: CatalogLock) -> None:
    with _guard:
        _held.pop(key, None)
    lock.release()


def break_lock(location: str | os.PathLike, storage_options: dict | None = None) -> str | None:
    """Mark the lock of the object-store catalog at ``location`` broken, so the next run takes it over.

    For a lock held from another host whose process the operator knows is
    gone. Returns the line naming the holder it broke, or None when there
    was no lock. A local lock needs no breaking (the system releases it with
    its process): None.
    """
    key = _key(location)
    if not is_remote(key):
        return None
    writer = Writer(key, storage_options)
    found = writer.get_tagged(LOCK_KEY)
    if found is None:
        return None
    record = _parse(found[0])
    if writer.put_if(LOCK_KEY, _dump({**record, "broken": True}), found[1]) is None:
        raise CatalogLockedError(f"{key}: the lock changed while it was being broken; run again")
    return _holder(record)


class CatalogLock:
    """A held catalog lock: the holder's record, and what a dead previous holder left (``inherited``)."""

    def __init__(self, location: str, command: str):
        self.location = location
        self.token = uuid.uuid4().hex
        self.record: dict = {
            "spec": SPEC,
            "command": command,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "boot": _boot_id(),
            "started": _process_start(os.getpid()),
            "since": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "token": self.token,
            "writing": False,
        }
        #: the record of the dead holder this run took the lock over from (None: the lock was free)
        self.inherited: dict | None = None

    @property
    def unsettled(self) -> bool:
        """True when the holder before this one died while writing (the catalog may hold two generations)."""
        return bool(self.inherited and self.inherited.get("writing"))

    @property
    def journal(self) -> dict | None:
        """The keys whose state in the bucket is unknown: ``{"put": [...], "delete": [...]}`` (object storage)."""
        return self.record.get("journal")

    def note(self, **fields) -> None:
        """Update the holder's record where the next run finds it (``writing``, ``journal``) before writing."""
        self.record.update(fields)
        self._store()

    def written(self) -> None:
        """The catalog was written whole: the journal (in memory; released with the lock) is done with."""
        self.record["journal"] = None
        self.record["writing"] = False

    def recover(self) -> None:
        """After taking over a dead holder's lock: remove its staging, unsettle the catalog if it was writing."""
        if self.inherited is None:
            return
        token = self.inherited.get("token")
        if isinstance(token, str) and token.isalnum() and self.inherited.get("host") == self.record["host"]:
            for path in Path(tempfile.gettempdir()).glob(f"{staging_prefix(token)}*"):
                shutil.rmtree(path, ignore_errors=True)
        if not self.unsettled:
            return
        reason = f"{_holder(self.inherited)} died while writing"
        writer = self._writer()
        payload = writer.get(_RECORD)
        if payload is not None:
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                doc = json.loads(payload)
                if isinstance(doc, dict):
                    doc.pop("written_by", None)
                    doc["unsettled"] = reason
                    writer.put_many([(_RECORD, (json.dumps(doc) + "\n").encode())])
        self.note(writing=True, journal=self.inherited.get("journal"))

    def check_settled(self) -> None:
        """Raise :class:`UnsettledCatalogError` when the catalog's build record says a killed run left it unsettled."""
        payload = self._writer().get(_RECORD)
        try:
            reason = json.loads(payload).get("unsettled") if payload is not None else None
        except (ValueError, UnicodeDecodeError, AttributeError):
            reason = None
        if reason or self.unsettled:
            raise UnsettledCatalogError(
                f"{self.location}: the catalog was left unsettled ({reason or _holder(self.inherited or {})}); "
                "run moczarr-catalog update (or build) on it first"
            )

    def _writer(self) -> Writer:
        raise NotImplementedError

    def _store(self) -> None:
        raise NotImplementedError

    def acquire(self) -> None:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError


class _LocalLock(CatalogLock):
    """``.OUT.moczarr-lock`` beside the folder ``OUT``, held with ``flock``."""

    def __init__(self, location: str, command: str):
        super().__init__(location, command)
        out = Path(location)
        self.path = out.parent / f".{out.name}.moczarr-lock"
        self.fd: int | None = None

    def _writer(self) -> Writer:
        return Writer(self.location)

    def acquire(self) -> None:
        import fcntl

        if not self.path.parent.is_dir():  # nothing there to lock, nor to write into without creating it
            return
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                record = _parse(_read_fd(fd))
                os.close(fd)
                raise CatalogLockedError(
                    f"{self.location}: locked by another moczarr-catalog run ({_holder(record)}); "
                    "try again once it has finished"
                ) from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # else the holder removed the file as this run opened it: open the new one
                break
            os.close(fd)
        self.fd = fd
        previous = _read_fd(fd)
        if previous.strip():  # a holder that ends normally removes its file: this one died
            self.inherited = _parse(previous)
        self._store()
        sweep(Path(self.location))

    def _store(self) -> None:
        if self.fd is None:
            return
        payload = _dump(self.record)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, payload, 0)

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # while still held: a run that opened this file sees it gone and opens a new one
        os.close(self.fd)
        self.fd = None


class _RemoteLock(CatalogLock):
    """``LOCATION/.moczarr-lock``, created and taken over with conditional PUTs."""

    def __init__(self, location: str, storage_options: dict | None, command: str):
        super().__init__(location, command)
        self.writer = Writer(location, storage_options)
        self.tag: str | None = None

    def _writer(self) -> Writer:
        return self.writer

    def acquire(self) -> None:
        for _ in range(5):  # a lock released between the PUT and the GET: try again
            tag = self.writer.put_if(LOCK_KEY, _dump(self.record))
            if tag is not None:
                self.tag = tag
                return
            found = self.writer.get_tagged(LOCK_KEY)
            if found is None:
                continue
            other = _parse(found[0])
            if other.get("token") == self.token:  # our own PUT, retried after it had landed
                self.tag = found[1]
                return
            if not (other.get("broken") or other.get("released") or _dead(other)):
                raise CatalogLockedError(
                    f"{self.location}: locked by another moczarr-catalog run ({_holder(other)}); try again once it "
                    "has finished, or, if that process is gone, run again with --break-lock"
                )
            if other.get("journal"):  # carried until a write consumes it, whoever holds the lock meanwhile
                self.record["journal"] = other["journal"]
            tag = self.writer.put_if(LOCK_KEY, _dump(self.record), found[1])
            if tag is None:
                continue
            self.tag = tag
            self.inherited = None if other.get("released") else other
            return
        raise CatalogLockedError(f"{self.location}: the lock kept changing; another run is taking it")

    def _store(self) -> None:
        tag = self.writer.put_if(LOCK_KEY, _dump(self.record), self.tag)
        if tag is None:
            raise CatalogLockedError(f"{self.location}: this run's lock was broken (--break-lock) or taken over")
        self.tag = tag

    def release(self) -> None:
        if self.tag is None:
            return
        found = self.writer.get_tagged(LOCK_KEY)
        if found is not None and _parse(found[0]).get("token") == self.token:
            if self.journal:  # keys still unknown: the next run must still see them
                self.writer.put_if(LOCK_KEY, _dump({**self.record, "released": True}), found[1])
            else:
                self.writer.delete_many([LOCK_KEY])
        self.tag = None


def staging_prefix(token: str) -> str:
    """The name prefix of the local staging folder of an object-store run holding the lock ``token``."""
    return f"moczarr-catalog-{token}-"


def _key(location: str | os.PathLike) -> str:
    """The identity of a catalog's location: its normalized URL, or the real path of a folder."""
    text = os.fspath(location)
    if is_remote(text):
        return normalize_location(text).rstrip("/")
    path = Path(os.path.abspath(text))
    return os.fspath(Path(os.path.realpath(path.parent)) / path.name)


def _dump(record: dict) -> bytes:
    return (json.dumps(record, sort_keys=True) + "\n").encode()


def _parse(payload: bytes) -> dict:
    try:
        doc = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _read_fd(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _holder(record: dict) -> str:
    """One phrase naming a lock's holder: command, pid, host and since when."""
    if not record.get("host"):
        return "a run whose lock record is unreadable"
    return (
        f"moczarr-catalog {record.get('command', '?')}, pid {record.get('pid', '?')} on {record['host']}, "
        f"since {record.get('since', '?')}"
    )


def _dead(record: dict) -> bool:
    """True when the holder ran on this host and its process is gone (a reboot since, or no such process now)."""
    if record.get("host") != socket.gethostname():
        return False
    if record.get("boot") and _boot_id() and record["boot"] != _boot_id():
        return True
    pid = record.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # a process of another user: alive
        return False
    started = record.get("started")
    return started is not None and _process_start(pid) not in (None, started)  # the pid now names another process


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), telling a reused pid from its first owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])
