"""A catalog written to object storage: ``--out s3://bucket/catalog`` (or ``gs://``, ``az://``, any URL).

The build is staged in a temporary local folder exactly as a local build is
(the catalog's published location is the URL, so its hrefs are:
:mod:`moczarr_intake.pipeline.upload`), then written
through the storage layer's :class:`~moczarr.metadata.Writer` (its timeouts,
retries and in-flight limit) in the order of :mod:`.staging`, which a reader
can rely on (every document reachable from a root is whole and its hrefs
resolve, at every moment, however the run ends):

1. every document except the roots, in waves (:func:`~.staging.order`):
   the files that link nothing, then the STAC documents from the deepest
   path up, each wave concurrently;
2. the roots: ``stac/catalog.json``, then ``catalog.yaml`` and ``catalog_v2.yaml``;
3. the build record, which says what the catalog now is;
4. the documents of the previous build that this one no longer has (products
   that are gone), deleted once nothing written links to them.

Keys never change between generations (ids and hrefs are a promise), so a
set of PUTs is never atomic; what a run stopped between them leaves is
mended by the next one, which never forgets a key: before its first write a
run notes in the catalog's lock (:mod:`.lock`) the keys it will write and
delete (its ``journal``). A run that takes over the lock of one that died
writes each of those keys again if its catalog has it and deletes it if not,
whatever the record says; the journal stays in the lock until a run has.
That costs one PUT of the lock per run that writes (two PUTs and a DELETE
of the lock per run in all), where listing the owned prefixes on every run
would cost a LIST per 1,000 documents.

A document whose bytes equal the previous build's (the record keeps each
document's SHA-256) is not uploaded again, so an update that changed one
product writes that product's documents, the exports and the roots that changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from moczarr.metadata import Writer

from .lock import CatalogLock
from .record import RECORD_NAME, BuildRecord, document_hashes
from .staging import order, pause

#: the documents written after every other one, in this order
ROOT_DOCUMENTS = ("stac/catalog.json", "catalog.yaml", "catalog_v2.yaml")
#: the top-level names a build owns under its output (only these are ever deleted)
OWNED = ("stac/", "pgstac/", *ROOT_DOCUMENTS)


def previous_record(writer: Writer) -> BuildRecord | None:
    """The build record at the output, or None when there is none (a first build)."""
    payload = writer.get(RECORD_NAME)
    return None if payload is None else BuildRecord.from_json(payload, f"{writer.location}/{RECORD_NAME}")


@dataclass
class Uploaded:
    """What a write to object storage did: documents written, left as they were (same bytes), deleted."""

    written: int
    unchanged: int
    deleted: int


def write_tree(staged: Path, writer: Writer, previous: BuildRecord | None, lock: CatalogLock | None = None) -> Uploaded:
    """Write the staged build folder to ``writer``'s location in the order of the module docstring.

    Returns the counts (:class:`Uploaded`). Without a
    previous record the stale documents are found by listing what the
    output holds under the names a build owns. ``lock``: the catalog's lock,
    whose journal names the keys a killed run left unknown (written again or
    deleted here) and receives this run's before its first write.
    """
    record = (staged / RECORD_NAME).read_bytes()
    hashes = BuildRecord.from_json(record, os.fspath(staged / RECORD_NAME)).documents or document_hashes(staged)
    hashes.pop(RECORD_NAME, None)
    if previous is not None:
        before = dict(previous.documents)
    else:
        before = {key: "" for key in writer.list_all() if key.startswith(OWNED) or key in ROOT_DOCUMENTS}
    journal = (lock.journal if lock is not None else None) or {}
    unknown = {*journal.get("put", ()), *journal.get("delete", ())}
    todo = [key for key, digest in hashes.items() if before.get(key) != digest or key in unknown]
    stale = sorted(key for key in {*before, *unknown} if key not in hashes and key.startswith(OWNED))
    put_record = previous is None or previous.to_json() != record or bool(unknown)
    if lock is not None and (todo or stale or put_record):
        lock.note(writing=True, journal={"put": sorted(todo), "delete": stale})
    pause("staged")
    waves = order(todo, ROOT_DOCUMENTS)
    for i, wave in enumerate(waves, 1):
        writer.put_many([(key, (staged / key).read_bytes()) for key in wave])
        if i == max(1, len(waves) // 2):
            pause("moving")
        if wave == [ROOT_DOCUMENTS[0]]:
            pause("roots")
    if put_record:
        writer.put_many([(RECORD_NAME, record)])
    if stale:
        half = len(stale) // 2
        writer.delete_many(stale[:half])
        pause("deleting")
        writer.delete_many(stale[half:])
    if lock is not None:
        lock.written()
    return Uploaded(len(todo), len(hashes) - len(todo), len(stale))
