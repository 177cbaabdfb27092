"""A catalog written to object storage: ``--out s3://bucket/catalog`` (or ``gs://``, ``az://``, any URL).

The build is staged in a temporary local folder exactly as a local build is
(the catalog's published location is the URL, so its hrefs are), then written
through the storage layer's :class:`~moczarr.metadata.Writer` (its timeouts,
retries and in-flight limit) in an order a reader can rely on:

1. every document except the roots, in waves from the deepest path up
   (Items, then Collections, then store Catalogs; the stac-geoparquet, API
   and pgstac exports with them), each wave concurrently;
2. the roots: ``stac/catalog.json``, then ``catalog.yaml`` and ``catalog_v2.yaml``;
3. the build record, which says what the catalog now is;
4. the documents of the previous build that this one no longer has (products
   that are gone), deleted once nothing written links to them.

A document whose bytes equal the previous build's (the record keeps each
document's SHA-256) is not uploaded again, so an update that changed one
product writes that product's documents, the exports and the roots that changed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from moczarr.metadata import Writer, normalize_location

from .record import RECORD_NAME, BuildRecord, document_hashes

#: the documents written after every other one, in this order
ROOT_DOCUMENTS = ("stac/catalog.json", "catalog.yaml", "catalog_v2.yaml")
#: the top-level names a build owns under its output (only these are ever deleted)
OWNED = ("stac/", "pgstac/", *ROOT_DOCUMENTS)


def previous_record(writer: Writer) -> BuildRecord | None:
    """The build record at the output, or None when there is none (a first build)."""
    payload = writer.get(RECORD_NAME)
    return None if payload is None else BuildRecord.from_json(payload, f"{writer.location}/{RECORD_NAME}")


def write_tree(staged: Path, writer: Writer, previous: BuildRecord | None) -> dict[str, int]:
    """Write the staged build folder to ``writer``'s location in the order of the module docstring.

    Returns the counts ``written``, ``unchanged`` and ``deleted``. Without a
    previous record the stale documents are found by listing what the
    output holds under the names a build owns.
    """
    record = (staged / RECORD_NAME).read_bytes()
    hashes = BuildRecord.from_json(record, os.fspath(staged / RECORD_NAME)).documents or document_hashes(staged)
    hashes.pop(RECORD_NAME, None)
    if previous is not None:
        before = dict(previous.documents)
    else:
        before = {key: "" for key in writer.list_all() if key.startswith(OWNED) or key in ROOT_DOCUMENTS}
    todo = [key for key, digest in hashes.items() if before.get(key) != digest]
    leaves = [key for key in todo if key not in ROOT_DOCUMENTS]
    for depth in sorted({key.count("/") for key in leaves}, reverse=True):
        writer.put_many([(key, (staged / key).read_bytes()) for key in leaves if key.count("/") == depth])
    for key in ROOT_DOCUMENTS:
        if key in todo:
            writer.put_many([(key, (staged / key).read_bytes())])
    if previous is None or previous.to_json() != record:
        writer.put_many([(RECORD_NAME, record)])
    stale = sorted(key for key in before if key not in hashes and key.startswith(OWNED))
    writer.delete_many(stale)
    return {"written": len(todo), "unchanged": len(hashes) - len(todo), "deleted": len(stale)}


def build_to_url(build: Callable[..., dict], roots, out: str, *, storage_options=None, catalog_url=None, **kw) -> dict:
    """``build(roots, staging, ...)`` then :func:`write_tree` to ``out``; returns the build's result with URLs.

    ``catalog_url`` defaults to ``out`` itself: the STAC root's self link is
    the URL it is written to, and every href below it is relative to it. A
    ``previous`` record in ``kw`` (an update's) is the one at ``out``; else it is read there.
    """
    out = normalize_location(out)
    writer = Writer(out, storage_options)
    previous = kw.get("previous") or previous_record(writer)
    with tempfile.TemporaryDirectory(prefix="moczarr-catalog-") as tmp:
        staged = Path(tmp) / "out"
        written = build(
            roots,
            staged,
            storage_options=storage_options,
            catalog_url=catalog_url or out,
            out_location=out,
            **kw,
        )
        counts = write_tree(staged, writer, previous)
    return {**_as_urls(written, staged, out), "uploaded": counts}


def _as_urls(written: dict, staged: Path, out: str) -> dict:
    """The build's result with the staged paths spelled as the output URL."""

    def url(value):
        if isinstance(value, Path) and value.is_relative_to(staged):
            return f"{out}/{value.relative_to(staged).as_posix()}"
        if isinstance(value, list) and value and all(isinstance(v, Path) for v in value):
            return [url(v) for v in value]
        return value

    return {key: url(value) for key, value in written.items()}
