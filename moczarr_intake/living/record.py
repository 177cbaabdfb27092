"""The build record: what a catalog was built from, so ``moczarr-catalog update`` can follow the stores.

``OUT/build-record.json`` is written beside the catalog by every build. It holds

- the roots as given, whether they were discovery prefixes, and the build's
  options (no credential: only the storage options a catalog may publish);
- per store root: its kind, its **state** (what identifies it without reading
  it: the version tags, ETags on object stores, of ``morton_hive.json`` and
  ``coverage.moc`` as the root's listing shows them, per product of a
  multi-product root, and for a moraine pyramid its folder's and ``0.zarr``'s
  listings), its facts (the store summary, or the pyramid's description) and
  its **identity** (:class:`~..model.entries.RootIdentity`: how its folder was read,
  bare, multi-product or pyramid, and what each product was published as:
  Collection id and entry name, a multi-product root's sub-catalog id, a
  pyramid's Item id and entry name), which later builds and updates keep;
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

A record is checked as it is read: a damaged or hand-edited one is one
:class:`~moczarr.errors.ArgumentError` naming the file and the field. A record
written before identities were recorded gets those a full build computed from
its facts (:meth:`BuildRecord.identities`).
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

from ..model.entries import LAYOUTS, CatalogEntries, Names, RootIdentity, catalog_entries
from ..pgstac.publish import COLLECTIONS_NDJSON, ITEMS_NDJSON, PGSTAC_DIR, write_ndjson
from ..roots.discover import HIVE, MORAINE, Found
from ..roots.scan import Read, Reading
from ..stac import ApiDocuments, public_storage_options

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
    #: how the root was read and named (None: a record from before identities were recorded)
    identity: RootIdentity | None = None

    def read(self, found: Found) -> Read:
        """The recorded facts as a :class:`~..roots.scan.Read` of ``found`` (no request)."""
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
        cls,
        roots,
        discover: bool,
        options: dict,
        reading: Reading,
        documents: dict[str, str],
        base: str | None = None,
        entries: CatalogEntries | None = None,
    ) -> BuildRecord:
        """The record of a build that read ``reading`` and named its products ``entries`` (their identities)."""
        named = entries.identities() if entries is not None else {}
        stores = []
        for r in reading.reads:
            if r.summary is not None:
                ident = named.get(normalize_location(r.summary.root))
                stores.append(StoreRecord(r.found.root, HIVE, state_of(r.found), r.summary.to_dict(), ident))
            elif r.moraine is not None:
                ident = named.get(normalize_location(r.moraine.path))
                stores.append(StoreRecord(r.found.root, MORAINE, state_of(r.found), moraine_to_dict(r.moraine), ident))
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
                | ({"identity": identity_to_dict(s.identity)} if s.identity is not None else {})
                for s in self.stores
            ],
            "documents": self.documents,
        }
        if self.written_by is not None:
            doc["written_by"] = self.written_by
        return (json.dumps(doc, indent=None, sort_keys=False) + "\n").encode()

    @classmethod
    def from_json(cls, payload: bytes, where: str, base: str | None = None) -> BuildRecord:
        """Parse and check a record; raises :class:`~moczarr.errors.ArgumentError` naming ``where`` and the field
        when it is not one (not JSON, another spec, a field missing or of the wrong type)."""
        try:
            doc = json.loads(payload)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ArgumentError(f"{where}: not a build record ({exc})") from None
        if not isinstance(doc, dict) or doc.get("spec") != SPEC:
            raise ArgumentError(
                f"{where}: not a {SPEC} build record (spec {doc.get('spec') if isinstance(doc, dict) else None!r})"
            )
        check = _Checker(where)

        def absolute(path):
            if base is None or not isinstance(path, str) or is_remote(path) or os.path.isabs(path):
                return path
            return os.path.normpath(os.path.join(base, path))

        roots = [absolute(r) for r in check.strings(doc, "roots")]
        discover = check.typed(doc, "discover", bool)
        options = check.typed(doc, "options", dict)
        check.typed(options, "stores_root", (str, type(None)), "options.stores_root", required=False)
        options = {k: absolute(v) if k == "stores_root" else v for k, v in options.items()}
        stores = [check.store(s, f"stores[{i}]", absolute) for i, s in enumerate(check.typed(doc, "stores", list))]
        documents = check.typed(doc, "documents", dict, required=False) or {}
        for key in documents:
            check.typed(documents, key, str, f"documents[{key!r}]")
        written_by = doc.get("written_by") if isinstance(doc.get("written_by"), str) else None
        return cls(roots, discover, options, stores, dict(documents), base, written_by)

    def identities(self) -> dict[str, RootIdentity]:
        """Every recorded root's :class:`~..model.entries.RootIdentity`, by location.

        A root recorded without one (a record from before identities were
        recorded) gets what a full build of the recorded facts named it, so a
        catalog keeps its ids when it is first updated by this release.
        """
        known = {normalize_location(s.root): s.identity for s in self.stores if s.identity is not None}
        if len(known) == len(self.stores):
            return known
        hive = [StoreSummary.from_dict(s.facts) for s in self.stores if s.kind == HIVE]
        moraine = [moraine_from_dict(s.facts) for s in self.stores if s.kind == MORAINE]
        return catalog_entries(hive, moraine).identities() | known

    def by_root(self) -> dict[str, StoreRecord]:
        return {s.root: s for s in self.stores}


def identity_to_dict(identity: RootIdentity) -> dict:
    """A :class:`~..model.entries.RootIdentity` as the record spells it."""
    doc: dict = {"layout": identity.layout}
    if identity.products:
        doc["products"] = {name: {"id": n.id, "entry": n.entry} for name, n in identity.products.items()}
    if identity.catalog is not None:
        doc["catalog"] = identity.catalog
    if identity.item is not None:
        doc["item"] = {"id": identity.item.id, "entry": identity.item.entry}
    return doc


def _type_name(value) -> str:
    return "null" if value is None else type(value).__name__


class _Checker:
    """The checks of :meth:`BuildRecord.from_json`: each failure one ArgumentError naming the file and the field."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, name: str, wanted: str, value) -> ArgumentError:
        got = "missing" if value is _MISSING else f"not {_type_name(value)}"
        return ArgumentError(
            f"{self.where}: field {name!r} must be {wanted}, {got}; rebuild the catalog (moczarr-catalog build) "
            "or restore the record"
        )

    def typed(self, doc: dict, key: str, types, name: str | None = None, *, required: bool = True):
        value = doc.get(key, _MISSING)
        if value is _MISSING and not required:
            return None
        if value is _MISSING or not isinstance(value, types):
            wanted = {bool: "true or false", dict: "an object", list: "a list", str: "a string"}.get(types)
            raise self.fail(name or key, wanted or "a string or null", value)
        return value

    def strings(self, doc: dict, key: str, name: str | None = None) -> list[str]:
        value = doc.get(key, _MISSING)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(name or key, "a list of strings", value)
        return value

    def names(self, doc, name: str) -> Names:
        if not isinstance(doc, dict):
            raise self.fail(name, "an object with 'id' and 'entry'", doc)
        return Names(self.typed(doc, "id", str, f"{name}.id"), self.typed(doc, "entry", str, f"{name}.entry"))

    def store(self, doc, name: str, spell) -> StoreRecord:
        if not isinstance(doc, dict):
            raise self.fail(name, "an object", doc)
        kind = doc.get("kind", _MISSING)
        if kind not in (HIVE, MORAINE):
            got = "missing" if kind is _MISSING else repr(kind)
            raise ArgumentError(
                f"{self.where}: field '{name}.kind' must be {HIVE!r} or {MORAINE!r}, not {got}; rebuild the catalog "
                "(moczarr-catalog build) or restore the record"
            )
        root = self.typed(doc, "root", str, f"{name}.root")
        state = self.typed(doc, "state", dict, f"{name}.state")
        facts = self.typed(doc, "facts", dict, f"{name}.facts")
        if kind == HIVE:
            self.typed(facts, "root", str, f"{name}.facts.root")
            products = self.typed(facts, "products", list, f"{name}.facts.products")
            for j, p in enumerate(products):
                where = f"{name}.facts.products[{j}]"
                if not isinstance(p, dict):
                    raise self.fail(where, "an object", p)
                self.typed(p, "root", str, f"{where}.root")
                self.typed(p, "name", str, f"{where}.name")
        else:
            self.typed(facts, "path", str, f"{name}.facts.path")
        identity = None
        if "identity" in doc:
            identity = self.identity(doc["identity"], f"{name}.identity")
        return StoreRecord(spell(root), kind, state, _paths(facts, spell), identity)

    def identity(self, doc, name: str) -> RootIdentity:
        if not isinstance(doc, dict):
            raise self.fail(name, "an object", doc)
        layout = doc.get("layout", _MISSING)
        if layout not in LAYOUTS:
            got = "missing" if layout is _MISSING else repr(layout)
            raise ArgumentError(
                f"{self.where}: field '{name}.layout' must be one of {', '.join(map(repr, LAYOUTS))}, not {got}; "
                "rebuild the catalog (moczarr-catalog build) or restore the record"
            )
        products = self.typed(doc, "products", dict, f"{name}.products", required=False) or {}
        item = doc.get("item")
        return RootIdentity(
            layout,
            {p: self.names(n, f"{name}.products.{p}") for p, n in products.items()},
            self.typed(doc, "catalog", (str, type(None)), f"{name}.catalog", required=False),
            self.names(item, f"{name}.item") if item is not None else None,
        )


_MISSING = object()


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
    catalog's :func:`~..stac.geoparquet.api_documents`, when the caller has
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
