"""An update that writes only the products that changed, keeping the rest of the previous catalog as it is.

A product's documents are its Collection folder (the Collection, its Items and
their thumbnails), its STAC API files (``api-items/{id}[.n].parquet``,
``api-collections/{id}.json``) and its lines of the pgstac ndjson. They are a
function of the product's facts and of what surrounds it: the roots and their
order, every store's product names (ids and titles come from them), the
build's options, the catalog's location and the moczarr release. When all of
those are as the build record says and a product's facts equal the recorded
ones, a full build would write its documents byte for byte as they are; so an
update keeps them and writes

- the documents of the products whose facts differ (a folder replaced whole,
  the product's STAC API files replaced),
- the documents that list every product: the root catalog, the store
  Catalogs, both Intake YAML flavours, the pgstac ndjson (the kept products'
  lines taken from the previous files) and the build record.

:func:`plan` says when that holds. Anything else rebuilds the whole catalog:
a root added or gone, a product added to or gone from a multi-product root, a
moraine pyramid changed, another moczarr release or other options, a previous
catalog without its STAC API outputs (a catalog that names paths of the
building machine has none), a local catalog moved to another folder (its
pgstac Collections name its place), or a Collection id that another's
stac-geoparquet file names could be mistaken for (``a`` and ``a.2``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from pathlib import Path

import moczarr
from moczarr.metadata import Writer, is_remote

from ..model.entries import CatalogEntries
from ..pgstac.publish import CATALOG_FIELD, COLLECTIONS_NDJSON, ITEMS_NDJSON, ndjson_line
from ..roots.discover import HIVE
from ..stac import API_COLLECTIONS, API_ITEMS
from .record import BuildRecord
from .staging import switch

#: the folder of the static catalog below the output
STAC = "stac"
#: a stac-geoparquet file's stem when its Collection is split by key shape: ``{collection}.{n}``
_SPLIT = re.compile(r"(.+)\.\d+")


@dataclass
class Reuse:
    """What an update keeps of the previous catalog (:func:`plan`), and how it fits the rest around it."""

    #: ids of the Collections and moraine Items whose documents stay as they are
    keep: frozenset[str]
    #: every Collection and moraine Item id -> its folder below the output (``stac/store/product``)
    folders: dict[str, str]
    #: the previous build's record (its document hashes: what an object-storage output keeps)
    previous: BuildRecord
    #: the previous pgstac ndjson, ``(collections, items)``, as text
    ndjson: tuple[str, str]

    @property
    def written(self) -> list[str]:
        """The Collections written again (their ids), in catalog order."""
        return [i for i in self.folders if i not in self.keep]

    def pgstac_ndjson(self, collection_ids: list[str], collections: list[dict], items: list[dict]) -> tuple[str, str]:
        """The two ndjson files of the catalog: the written Collections' documents (``collections``, ``items``,
        as :func:`~..pgstac.publish.pgstac_documents` makes them) in place of their previous lines, every other
        line kept.

        ``collection_ids``: every Collection of the catalog in its order (the
        order a full build writes); lines of the previous files outside them
        (the moraine pyramids' Collection and Items) keep their place: the
        Collection last, the Items first.
        """
        before_c, before_i = (text.splitlines(keepends=True) for text in self.ndjson)
        by_id = {json.loads(line)["id"]: line for line in before_c}
        items_by: dict[str, list[str]] = {}
        for line in before_i:
            items_by.setdefault(json.loads(line)["collection"], []).append(line)
        fresh_c = {doc["id"]: ndjson_line(doc) for doc in collections}
        fresh_i: dict[str, list[str]] = {cid: [] for cid in self.written}
        for doc in items:
            fresh_i[doc["collection"]].append(ndjson_line(doc))
        listed = set(collection_ids)
        out_c = [text for cid in collection_ids if (text := fresh_c.get(cid) or by_id.get(cid))]
        out_c += [line for cid, line in by_id.items() if cid not in listed]
        out_i = [line for cid, lines in items_by.items() if cid not in listed for line in lines]
        for cid in collection_ids:
            out_i += fresh_i[cid] if cid in fresh_i else items_by.get(cid, [])
        return "".join(out_c), "".join(out_i)

    def kept_hashes(self) -> dict[str, str]:
        """``{key: sha256}`` of the previous record's documents that stay: the kept folders and STAC API files."""
        folders = tuple(f"{self.folders[i]}/" for i in self.keep)
        return {
            key: digest
            for key, digest in self.previous.documents.items()
            if key.startswith(folders) or _api_owner(key, self.folders) in self.keep
        }

    def place(
        self,
        staged: Path,
        out: Path,
        names: Iterable[str],
        before_in_place: Callable[[], None] | None = None,
        in_place: str | None = None,
    ) -> str | None:
        """Switch the local catalog ``out`` to a generation with the staged partial build in it
        (:func:`~.staging.switch`; ``names``: the entry documents and the record, placed last when it has to
        place file by file, after ``before_in_place``, or because of ``in_place``). Returns its note, if any.

        The written products' folders and STAC API files are this write's:
        a file below them that the build has no longer (an Item gone, a
        Collection's stac-geoparquet file split otherwise) is left out of
        the new generation; every other file of ``out`` is kept.
        """
        folders = tuple(f"{self.folders[cid]}/" for cid in self.written)
        owned = set(self.written)
        return switch(
            staged,
            out,
            last=list(names),
            scope=[*(self.folders[cid] for cid in self.written), f"{STAC}/{API_ITEMS}", f"{STAC}/{API_COLLECTIONS}"],
            claims=lambda key: key.startswith(folders) or _api_owner(key, self.folders) in owned,
            before_in_place=before_in_place,
            in_place=in_place,
        )


def _api_owner(key: str, ids: Container[str]) -> str | None:
    """The Collection id a STAC API output file belongs to (``api-collections/{id}.json``,
    ``api-items/{id}.parquet`` or ``api-items/{id}.{n}.parquet``), or None."""
    head, _, name = key.rpartition("/")
    if head == f"{STAC}/{API_COLLECTIONS}" and name.endswith(".json"):
        return name[: -len(".json")] if name[: -len(".json")] in ids else None
    if head != f"{STAC}/{API_ITEMS}" or not name.endswith(".parquet"):
        return None
    stem = name[: -len(".parquet")]
    if stem in ids:
        return stem
    split = _SPLIT.fullmatch(stem)
    return split.group(1) if split and split.group(1) in ids else None


def plan(
    entries: CatalogEntries,
    candidate: BuildRecord,
    previous: BuildRecord | None,
    out: str,
    catalog_key: str,
    storage_options: dict | None = None,
) -> Reuse | None:
    """What an update can keep of the catalog at ``out`` (see the module docstring), or None to write it all.

    ``candidate``: the record this build will write (its roots, options and
    facts, no hashes); ``previous``: the record at ``out``; ``catalog_key``:
    the catalog's published location, which its pgstac Collections carry (a
    local catalog moved to another folder has another). Reads the previous
    pgstac ndjson (two GETs on an object store) only once everything else allows it.
    """
    if previous is None or previous.written_by != moczarr.__version__ or not _same_context(candidate, previous):
        return None
    folders = _folders(entries)
    ids = [e.collection_id for e in entries.products]
    if any((split := _SPLIT.fullmatch(cid)) and split.group(1) in folders for cid in ids):
        return None  # a.2.parquet would be a's second file or a.2's only one
    unchanged = _unchanged(entries, candidate, previous)
    if not unchanged:
        return None  # every product is written: that is a full build
    keep = unchanged | {m.item_id for m in entries.moraine}
    if not _previous_outputs(out, previous, ids, [folders[i] for i in keep]):
        return None
    writer = Writer(out, storage_options)
    texts = [writer.get(name) for name in (COLLECTIONS_NDJSON, ITEMS_NDJSON)]
    if texts[0] is None or texts[1] is None:
        return None
    first = texts[0].split(b"\n", 1)[0]
    if first and json.loads(first).get(CATALOG_FIELD) != catalog_key:
        return None  # the kept lines would name where the catalog was
    return Reuse(frozenset(keep), folders, previous, (texts[0].decode(), texts[1].decode()))


def _previous_outputs(out: str, previous: BuildRecord, ids: list[str], kept: list[str]) -> bool:
    """True when the catalog at ``out`` holds the kept folders, the root catalog and every Collection's STAC API
    document (an object store's as its record lists them)."""
    api = [f"{STAC}/{API_COLLECTIONS}/{cid}.json" for cid in ids]
    if is_remote(out):
        present = set(previous.documents)
        folders = {key.rsplit("/", 1)[0] for key in present}
        return f"{STAC}/catalog.json" in present and all(k in present for k in api) and all(f in folders for f in kept)
    base = Path(out)
    listed = set(os.listdir(base / STAC / API_COLLECTIONS)) if (base / STAC / API_COLLECTIONS).is_dir() else set()
    return (
        (base / STAC / "catalog.json").is_file()
        and all(key.rsplit("/", 1)[1] in listed for key in api)
        and all((base / folder).is_dir() for folder in kept)
    )


def _same_context(candidate: BuildRecord, previous: BuildRecord) -> bool:
    """True when both records name the same roots, options, stores and products (all but the products' facts)."""
    if (candidate.roots, candidate.discover, candidate.options) != (
        previous.roots,
        previous.discover,
        previous.options,
    ):
        return False
    if len(candidate.stores) != len(previous.stores):
        return False
    for new, old in zip(candidate.stores, previous.stores, strict=True):
        if (new.root, new.kind) != (old.root, old.kind):
            return False
        if new.kind != HIVE:
            if _canonical(new.facts) != _canonical(old.facts):
                return False
            continue
        if any(_canonical(new.facts.get(k)) != _canonical(old.facts.get(k)) for k in ("root", "layout", "damaged")):
            return False
        if [p["name"] for p in new.facts["products"]] != [p["name"] for p in old.facts["products"]]:
            return False
    return True


def _unchanged(entries: CatalogEntries, candidate: BuildRecord, previous: BuildRecord) -> set[str]:
    """The Collection ids of the products whose facts equal the recorded ones (same stores, same order)."""
    new = [p for s in candidate.stores if s.kind == HIVE for p in s.facts["products"]]
    old = [p for s in previous.stores if s.kind == HIVE for p in s.facts["products"]]
    return {
        e.collection_id for e, a, b in zip(entries.products, new, old, strict=True) if _canonical(a) == _canonical(b)
    }


def _canonical(facts) -> str:
    """Facts as JSON text with sorted keys (tuples and lists alike, as the record stores them)."""
    return json.dumps(facts, sort_keys=True)


def _folders(entries: CatalogEntries) -> dict[str, str]:
    """Every Collection id and moraine Item id -> its folder below the output, in catalog order.

    pystac's layout (best practices): a child under its parent's folder,
    named by its id; a product of a multi-product root under its store Catalog's folder.
    """
    index = {id(store): i for i, store in enumerate(entries.stores)}
    folders: dict[str, str] = {}
    for e in entries.products:
        parent = f"{STAC}/{entries.sub_catalog_ids[index[id(e.store)]]}" if e.multi else STAC
        folders[e.collection_id] = f"{parent}/{e.collection_id}"
    folders.update({m.item_id: f"{STAC}/{m.item_id}" for m in entries.moraine})
    return folders
