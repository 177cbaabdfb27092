"""The request counter: every request a moczarr storage makes, by operation and object kind.

Active only inside a :func:`count_requests` block (tests and benchmarks)::

    with count_requests() as counter:
        ds = open_hive(root)
    counter["GET", "stamp"], counter.lists
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager


class RequestCounter(Counter):
    """Counts requests as ``(op, kind)`` keys: op is ``GET``, ``LIST`` or ``HEAD``.

    Kinds of a ``GET``: ``manifest``, ``root_moc``, ``stamp`` (a zarr object's
    root ``zarr.json``), ``metadata`` (other ``zarr.json``), ``bitmap``,
    ``chunk:morton``, ``chunk:cell_ids``, ``chunk:data``, ``other``. A ``LIST``
    is of kind ``prefix``; a ``HEAD`` of kind ``bucket`` (an S3 bucket's region
    lookup, once per bucket and process).
    """

    @property
    def gets(self) -> int:
        return sum(n for (op, _), n in self.items() if op == "GET")

    @property
    def lists(self) -> int:
        return sum(n for (op, _), n in self.items() if op == "LIST")

    def kind(self, kind: str) -> int:
        """GETs of one object kind."""
        return self["GET", kind]

    def summary(self) -> dict[str, int]:
        """``{"GET stamp": n, ...}``, sorted, for printing."""
        return {f"{op} {kind}": n for (op, kind), n in sorted(self.items())}


_ACTIVE: list[RequestCounter] = []
_LOCK = threading.Lock()


@contextmanager
def count_requests() -> Iterator[RequestCounter]:
    """Count every request any moczarr storage makes inside the block (all threads)."""
    counter = RequestCounter()
    with _LOCK:
        _ACTIVE.append(counter)
    try:
        yield counter
    finally:
        with _LOCK:
            _ACTIVE.remove(counter)


def classify_key(key: str) -> str:
    """The object kind of a store key (see :class:`RequestCounter`)."""
    parts = key.strip("/").split("/")
    name = parts[-1]
    if name == "morton_hive.json":
        return "manifest"
    if name == "coverage.moc":
        return "root_moc" if len(parts) == 1 or not any(p.endswith(".zarr") for p in parts) else "bitmap"
    if name == "zarr.json":
        parent = parts[-2] if len(parts) > 1 else ""
        return "stamp" if parent.endswith(".zarr") else "metadata"
    if "c" in parts:
        array = parts[parts.index("c") - 1] if parts.index("c") > 0 else ""
        if array in ("morton", "cell_ids"):
            return f"chunk:{array}"
        return "chunk:data"
    return "other"


def record_request(op: str, key: str) -> None:
    """Count one request (``op`` ``GET``, ``LIST`` or ``HEAD``) of ``key`` in every active counter."""
    if _ACTIVE:
        kind = classify_key(key) if op == "GET" else ("prefix" if op == "LIST" else "bucket")
        with _LOCK:
            for counter in _ACTIVE:
                counter[op, kind] += 1


__all__ = ["RequestCounter", "classify_key", "count_requests", "record_request"]
