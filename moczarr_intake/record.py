"""The build record: what a catalog was built from, so ``moczarr-catalog update`` can follow the stores.

``OUT/build-record.json`` is written beside the catalog by every build. It holds

- the roots as given, whether they were discovery prefixes, and the build's
  options (no credential: only the storage options a catalog may publish);
- per store root: its kind, its **state** (what identifies it without reading
  it: the version tags, ETags on object stores, of ``morton_hive.json`` and
  ``coverage.moc`` as the root's listing shows them, per product of a
  multi-product root, and for a moraine pyramid its folder's and ``0.zarr``'s
  listings) and its facts (the store summary, or the pyramid's description);
- per written document its SHA-256, so a rebuild into object storage uploads
  only what changed and deletes what is gone;
- the moczarr release that wrote it: an update by the same release that
  finds nothing changed has nothing to write (another release may write other
  documents from the same facts).

A store is unchanged when its state is equal and fully known; its recorded
facts then stand in for a new read. zagg rewrites ``coverage.moc`` at the end
of every run and the manifest when a sweep adds actuals, so a store that
gained leaves, windows or levels shows a new state. A listing that tells no
version (an ``https://`` directory index) leaves the state unknown: such a
store is read again on every update.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import moczarr
from moczarr.errors import ArgumentError
from moczarr.metadata import MANIFEST_NAME, ROOT_MOC_NAME, StoreSummary, is_remote, normalize_location
from moczarr.moraine import MorainePyramid

from .discover import HIVE, MORAINE, Found
from .publish import COLLECTIONS_NDJSON, ITEMS_NDJSON, PGSTAC_DIR, write_ndjson
from .reading import Read, Reading
from .stac import ApiDocuments, public_storage_options

RECORD_NAME = "build-record.json"
SPEC = "moczarr-catalog-build/1"
#: the objects of a hive root whose version tags make its state
HIVE_STATE_OBJECTS = (MANIFEST_NAME, ROOT_MOC_NAME)


def state_of(found: Found) -> dict:
    """The state of a root from its listings (see the module docstring); ``{}`` when it has none."""
    state: dict = {}
    for rel, entries in sorted(found.listings.items()):
        if found.kind == MORAINE:
            state[rel] = {"folders": list(entries.folders), "objects": dict(entries.objects)}
        elif rel == "" and MANIFEST_NAME not in entries.objects:  # a multi-product root: its products by name
            state[rel] = {"products": sorted(n for n in found.listings if n)}
        else:
            state[rel] = {"objects": {n: entries.objects.get(n) for n in HIVE_STATE_OBJECTS}}
    return state


def state_known(state: dict) -> bool:
    """True when every version tag of a state is known (and there is a state at all)."""

    def tags(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "objects":
                    yield from value.values()
                else:
                    yield from tags(value)

    return bool(state) and all(tag is not None for tag in tags(state))


def moraine_to_dict(info: MorainePyramid) -> dict:
    return dataclasses.asdict(info)


def moraine_from_dict(doc: dict) -> MorainePyramid:
    """A :class:`MorainePyramid` from :func:`moraine_to_dict` (tuples restored)."""
    doc = dict(doc)
    doc["shapes"] = [tuple(s) for s in doc["shapes"]]
    doc["channel_dims"] = tuple(doc["channel_dims"])
    if doc.get("bounds") is not None:
        doc["bounds"] = tuple(doc["bounds"])
    return MorainePyramid(**doc)


@dataclass
class StoreRecord:
    """One root of a build: location, kind, state and facts (a summary document or a pyramid's)."""

    root: str
    kind: str
    state: dict
    facts: dict

    def read(self, found: Found) -> Read:
        """The recorded facts as a :class:`~.reading.Read` of ``found`` (no request)."""
        if self.kind == MORAINE:
            return Read(found, moraine=moraine_from_dict(self.facts))
        return Read(found, summary=StoreSummary.from_dict(self.facts))


@dataclass
class BuildRecord:
    """``build-record.json``: the roots, the options, every store's state and facts, the documents written."""

    roots: list[str]
    discover: bool
    options: dict
    stores: list[StoreRecord] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)
    #: the local folder the record lives in: local paths are written relative to it (no path of this machine
    #: in a published folder, and a folder moved with its stores still updates); None for a URL
    base: str | None = None
    #: the moczarr release that wrote the catalog (None: a record from before releases were recorded)
    written_by: str | None = None

    @classmethod
    def of(
        cls, roots, discover: bool, options: dict, reading: Reading, documents: dict[str, str], base: str | None = None
    ) -> BuildRecord:
        stores = []
        for r in reading.reads:
            if r.summary is not None:
                stores.append(StoreRecord(r.found.root, HIVE, state_of(r.found), r.summary.to_dict()))
            elif r.moraine is not None:
                stores.append(StoreRecord(r.found.root, MORAINE, state_of(r.found), moraine_to_dict(r.moraine)))
        if options.get("stores_root"):
            options = {**options, "stores_root": normalize_location(options["stores_root"])}
        roots = [normalize_location(x) for x in roots]
        return cls(roots, discover, options, stores, documents, base, written_by=moczarr.__version__)

    def to_json(self) -> bytes:
        def rel(path):
            if self.base is None or not isinstance(path, str) or is_remote(path):
                return path
            return os.path.relpath(path, self.base)

        doc = {
            "spec": SPEC,
            "roots": [rel(r) for r in self.roots],
            "discover": self.discover,
            "options": {k: rel(v) if k == "stores_root" else v for k, v in self.options.items()},
            "stores": [
                {"root": rel(s.root), "kind": s.kind, "state": s.state, "facts": _paths(s.facts, rel)}
                for s in self.stores
            ],
            "documents": self.documents,
        }
        if self.written_by is not None:
            doc["written_by"] = self.written_by
        return (json.dumps(doc, indent=None, sort_keys=False) + "\n").encode()

    @classmethod
    def from_json(cls, payload: bytes, where: str, base: str | None = None) -> BuildRecord:
        """Parse a record; raises :class:`~moczarr.errors.ArgumentError` naming ``where`` when it is not one."""
        try:
            doc = json.loads(payload)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ArgumentError(f"{where}: not a build record ({exc})") from None
        if not isinstance(doc, dict) or doc.get("spec") != SPEC:
            raise ArgumentError(
                f"{where}: not a {SPEC} build record (spec {doc.get('spec') if isinstance(doc, dict) else None!r})"
            )

        def absolute(path):
            if base is None or not isinstance(path, str) or is_remote(path) or os.path.isabs(path):
                return path
            return os.path.normpath(os.path.join(base, path))

        stores = [
            StoreRecord(absolute(s["root"]), s["kind"], s["state"], _paths(s["facts"], absolute)) for s in doc["stores"]
        ]
        options = {k: absolute(v) if k == "stores_root" else v for k, v in doc["options"].items()}
        roots = [absolute(r) for r in doc["roots"]]
        documents = dict(doc.get("documents") or {})
        written_by = doc.get("written_by") if isinstance(doc.get("written_by"), str) else None
        return cls(roots, bool(doc["discover"]), options, stores, documents, base, written_by)

    def by_root(self) -> dict[str, StoreRecord]:
        return {s.root: s for s in self.stores}


def _paths(facts: dict, spell) -> dict:
    """``facts`` with its store locations (a summary's roots, a pyramid's path) spelled by ``spell`` (a copy)."""
    out = dict(facts)
    for key in ("root", "path"):
        if key in out:
            out[key] = spell(out[key])
    if "products" in out:
        out["products"] = [{**p, "root": spell(p["root"])} for p in out["products"]]
    return out


def document_hashes(folder: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file below ``folder`` (the documents a build wrote)."""
    out = {}
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        out[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def write_record(tmp: Path, record: BuildRecord) -> Path:
    """Write ``record`` into the staged build folder ``tmp`` (beside the catalog)."""
    path = Path(tmp) / RECORD_NAME
    path.write_bytes(record.to_json())
    return path


def changed(found: Found, previous: StoreRecord | None) -> bool:
    """True when ``found`` must be read again: new, of another kind, or its state differs or is not fully known."""
    if previous is None or previous.kind != found.kind:
        return True
    state = state_of(found)
    return not state_known(state) or state != previous.state


def recorded_options(options: dict, storage_options: dict | None) -> dict:
    """The options a record keeps: the build's, with the storage options a catalog may publish (never a credential)."""
    return {**options, "storage_options": public_storage_options(storage_options)}


def write_beside(
    tmp: Path,
    catalog,
    record: BuildRecord,
    catalog_key: str,
    *,
    hashes: bool = False,
    documents: ApiDocuments | None = None,
    ndjson: tuple[str, str] | None = None,
    kept: dict[str, str] | None = None,
) -> list[str]:
    """Write the pgstac ndjson and the build record into the staged build ``tmp``; returns the names written.

    ``record``: what the build read, its roots and options (:meth:`BuildRecord.of`,
    with :func:`recorded_options`); ``catalog_key``: the catalog's published
    location, which marks its Collections in a shared database. ``hashes``:
    record each document's SHA-256 (what an object-storage output compares; a
    local output is swapped in whole and needs none; they become ``record``'s
    ``documents``), with ``kept``: those of the documents an update keeps
    without staging them. ``documents``: the
    catalog's :func:`~.stac.geoparquet.api_documents`, when the caller has
    them; ``ndjson``: the two pgstac files' text, when the caller made them
    (an update that keeps the lines of unchanged products).
    """
    if ndjson is None:
        write_ndjson(catalog, tmp, catalog_key, documents)
    else:
        (tmp / PGSTAC_DIR).mkdir(parents=True, exist_ok=True)
        for name, text in zip((COLLECTIONS_NDJSON, ITEMS_NDJSON), ndjson, strict=True):
            (tmp / name).write_text(text)
    if hashes:
        merged = {**(kept or {}), **document_hashes(tmp)}
        record.documents = {key: merged[key] for key in sorted(merged, key=PurePosixPath)}  # document_hashes' order
    write_record(tmp, record)
    return [PGSTAC_DIR, RECORD_NAME]
