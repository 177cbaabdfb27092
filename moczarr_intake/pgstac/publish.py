"""Into a STAC API database: ndjson that ``pypgstac load`` takes as is, and ``moczarr-catalog publish``.

Every build writes ``OUT/pgstac/collections.ndjson`` and
``OUT/pgstac/items.ndjson``: one location-free document per line (the
catalog's structural links dropped, every relative href resolved, as in the
stac-geoparquet export), so

    pypgstac load collections OUT/pgstac/collections.ndjson --method upsert
    pypgstac load items OUT/pgstac/items.ndjson --method upsert

loads the catalog into pgstac. pgstac keeps every Item in a Collection and
searches by geometry, so two things differ from the static catalog: the
moraine pyramid Items (which sit under the root Catalog) go into one extra
Collection, :data:`MORAINE_COLLECTION`, and Items without geometry are left
out (with a warning naming them). Each Collection carries
``moczarr:catalog``, the catalog's published location, so that ``publish``
knows which Collections of a shared database are this catalog's.

``upsert_catalog(OUT, dsn)`` (what ``moczarr_intake.publish`` runs, holding the
catalog's lock) reads those two files from ``OUT`` (a folder or an
object-store URL), upserts the Collections and Items through pypgstac's
loader, and deletes what the files say is gone. It reports both by id
(:class:`PublishResult`).

What publish deletes, and when it refuses
-----------------------------------------
The files are the catalog's word on what exists: an update drops a product
only when a listing that succeeded showed it absent (or the user removed it),
so a Collection or Item missing from complete files is gone. publish deletes

- the Items of the files' Collections that the files no longer hold, and
- the Collections marked with this catalog's :data:`CATALOG_FIELD` that the
  files no longer hold (with their Items);

never anything of a Collection another catalog marks. It deletes on no
other reason: before it touches the database it checks that the files are
whole, and refuses (one typed error naming the file, nothing loaded or
deleted) when

- either file is missing (:class:`~moczarr.errors.NotFoundError`) or cannot be
  read (:class:`~moczarr.errors.StorageError`);
- a line is not a JSON document of its kind, an id is there twice, or
  ``collections.ndjson`` holds no Collection (:class:`~moczarr.errors.ContentError`);
- a Collection does not say how many Items it has (:data:`ITEM_COUNT_FIELD`: files
  of an older release), or ``items.ndjson`` holds another number of them, or
  an Item of a Collection the files do not hold (a truncated or mixed file:
  :class:`~moczarr.errors.ContentError`);
- the Collections name no catalog, several, or another than the one the
  caller says ``OUT`` is (``catalog_key``: files copied from another catalog,
  or a catalog moved and not updated: :class:`~moczarr.errors.ContentError`);
- a document names a path of the building machine, which a portal cannot
  serve: a catalog built without ``--href-base`` (the same test as the STAC
  API outputs', :func:`~..stac.geoparquet.document_machine_paths`:
  :class:`~moczarr.errors.ArgumentError`).

No message of publish spells the database's password: every DSN in an error,
and what psycopg or pypgstac say (their messages and logs can echo it), has
it replaced by ``***`` (:func:`redact`).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import pystac

from moczarr.errors import ArgumentError, ContentError, MoczarrWarning, NotFoundError, StorageError
from moczarr.metadata import Writer, is_remote, normalize_location, warn

from ..stac.geoparquet import ApiDocuments, api_documents, document_machine_paths

PGSTAC_DIR = "pgstac"
COLLECTIONS_NDJSON = f"{PGSTAC_DIR}/collections.ndjson"
ITEMS_NDJSON = f"{PGSTAC_DIR}/items.ndjson"
#: the field naming the catalog a Collection belongs to (its published location)
CATALOG_FIELD = "moczarr:catalog"
#: the field of a Collection line saying how many of its Items ``items.ndjson`` holds (publish checks the file by it)
ITEM_COUNT_FIELD = "moczarr:item_count"
#: the Collection of the moraine pyramid Items in pgstac (the static catalog has none)
MORAINE_COLLECTION = "moraine-pyramids"


def pgstac_documents(
    catalog: pystac.Catalog | None, catalog_key: str, documents: ApiDocuments | None = None
) -> tuple[list[dict], list[dict]]:
    """``(collections, items)``: the catalog's documents as pgstac loads them (see the module docstring).

    Each Collection carries :data:`CATALOG_FIELD` (``catalog_key``) and
    :data:`ITEM_COUNT_FIELD` (the number of its Items in ``items``).

    ``documents``: the catalog's :func:`~..stac.geoparquet.api_documents`, when
    the caller has them (they are not changed: what differs is a copy); ``catalog`` may then be None.
    """
    if documents is None:
        assert catalog is not None, "pgstac_documents: give a catalog or its documents"
        documents = api_documents(catalog)
    collections = [{**doc, CATALOG_FIELD: catalog_key} for doc in documents.collections]
    items, loose, left_out = [], [], []
    for doc in documents.items:
        if not doc.get("geometry"):
            left_out.append(doc["id"])
            continue
        if not doc.get("collection"):
            doc = dict(doc)  # given the pgstac Collection below
            loose.append(doc)
        items.append(doc)
    if loose:
        moraine_id = _free_id(MORAINE_COLLECTION, {c["id"] for c in collections})
        for doc in loose:
            doc["collection"] = moraine_id
        collections.append(_moraine_collection(moraine_id, loose, catalog_key))
    if left_out:
        warn(f"pgstac: Items without geometry left out (pgstac searches by geometry): {left_out}", MoczarrWarning)
    counts = Counter(doc["collection"] for doc in items)
    for doc in collections:
        doc[ITEM_COUNT_FIELD] = counts.get(doc["id"], 0)
    return collections, items


def _free_id(base: str, taken: set[str]) -> str:
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _moraine_collection(collection_id: str, items: list[dict], catalog_key: str) -> dict:
    """The Collection pgstac needs around the moraine pyramid Items: their union extent, nothing else."""
    boxes = [d["bbox"] for d in items if d.get("bbox")]
    bbox = (
        [min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)]
        if boxes
        else [-180.0, -90.0, 180.0, 90.0]
    )
    times = sorted(
        t
        for d in items
        for t in (
            d["properties"].get("datetime"),
            d["properties"].get("start_datetime"),
            d["properties"].get("end_datetime"),
        )
        if t
    )
    collection = pystac.Collection(
        id=collection_id,
        description=f"The {len(items)} moraine raster and point-cloud pyramid(s) of the catalog, one Item each "
        "(in the static catalog they sit under the root Catalog).",
        extent=pystac.Extent(
            pystac.SpatialExtent([bbox]),
            pystac.TemporalExtent([[pystac.utils.str_to_datetime(times[0]), pystac.utils.str_to_datetime(times[-1])]])
            if times
            else pystac.TemporalExtent([None, None]),
        ),
        title="moraine pyramids",
        license="other",
        keywords=["moraine", "pyramid", "zarr"],
    )
    doc = collection.to_dict(include_self_link=False, transform_hrefs=False)
    doc["links"] = []
    doc[CATALOG_FIELD] = catalog_key
    return doc


def write_ndjson(
    catalog: pystac.Catalog | None, folder: str | Path, catalog_key: str, documents: ApiDocuments | None = None
) -> list[Path]:
    """Write ``{folder}/pgstac/collections.ndjson`` and ``items.ndjson`` (see the module docstring).

    ``documents``: the catalog's :func:`~..stac.geoparquet.api_documents`, when the caller has them.
    """
    collections, items = pgstac_documents(catalog, catalog_key, documents)
    folder = Path(folder)
    (folder / PGSTAC_DIR).mkdir(parents=True, exist_ok=True)
    paths = []
    for name, docs in ((COLLECTIONS_NDJSON, collections), (ITEMS_NDJSON, items)):
        path = folder / name
        path.write_text("".join(ndjson_line(d) for d in docs))
        paths.append(path)
    return paths


def ndjson_line(doc: dict) -> str:
    """One document as a line of the pgstac ndjson (compact JSON)."""
    return json.dumps(doc, separators=(",", ":")) + "\n"


def _read_ndjson(writer: Writer, name: str) -> list[dict]:
    """The documents of one ndjson file at ``writer``; raises (naming the file) when it is absent or not ndjson."""
    where = f"{writer.location}/{name}"
    payload = writer.get(name)
    if payload is None:
        raise NotFoundError(
            f"{where}: no such file; nothing published (build the catalog there with this version first: "
            "moczarr-catalog build or update)"
        )
    docs = []
    try:
        lines = payload.decode().splitlines()
    except UnicodeDecodeError as exc:
        raise ContentError(f"{where}: not ndjson ({exc}); nothing published: rebuild the catalog") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise ContentError(
                f"{where}: line {number} is not JSON ({exc}; a truncated file?); nothing published: rebuild the catalog"
            ) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            raise ContentError(f"{where}: line {number} is not a STAC document with an id; nothing published")
        docs.append(doc)
    return docs


@dataclass
class PublishResult:
    """What :func:`upsert_catalog` did, by id.

    ``collections``: the Collections upserted (every Collection of the
    catalog, in the files' order); ``items``: the Items upserted, per
    Collection; ``collections_deleted``: this catalog's Collections deleted
    (gone from the files); ``items_deleted``: the Items deleted, per
    Collection (those of deleted Collections too), ids sorted.
    """

    collections: list[str] = field(default_factory=list)
    items: dict[str, list[str]] = field(default_factory=dict)
    collections_deleted: list[str] = field(default_factory=list)
    items_deleted: dict[str, list[str]] = field(default_factory=dict)

    @property
    def item_count(self) -> int:
        """The number of Items upserted."""
        return sum(map(len, self.items.values()))

    @property
    def items_deleted_count(self) -> int:
        """The number of Items deleted."""
        return sum(map(len, self.items_deleted.values()))


def catalog_key_of(out: str, catalog_url: str | None = None) -> str:
    """The key (:data:`CATALOG_FIELD`) a catalog built into ``out`` marks its Collections with: where it is
    published, ``catalog_url`` when it was built with one, else ``out`` (a local folder resolved)."""
    if catalog_url:
        return catalog_url
    return normalize_location(out) if is_remote(out) else str(Path(out).resolve())


def _same_key(a: str, b: str) -> bool:
    def spelled(key: str) -> str:
        return normalize_location(key) if is_remote(key) else str(Path(key).resolve())

    return a == b or spelled(a) == spelled(b)


def upsert_catalog(
    out: str, dsn: str, *, storage_options: dict | None = None, catalog_key: str | None = None
) -> PublishResult:
    """Upsert the catalog at ``out`` into the pgstac database at ``dsn``; delete what it says is gone.

    Returns the :class:`PublishResult` report. Before the database is touched the
    files are checked (see the module docstring: what publish refuses, and
    the errors it raises then). ``catalog_key``: the key the catalog at
    ``out`` carries (:func:`catalog_key_of` of its build record's options); files
    naming another are refused. Raises :class:`~moczarr.errors.StorageError`
    when the database cannot be reached or refuses a document; no message
    spells the DSN's password (:func:`redact`).
    """
    writer = Writer(out, storage_options)
    collections = _read_ndjson(writer, COLLECTIONS_NDJSON)
    items = _read_ndjson(writer, ITEMS_NDJSON)
    key = check_publishable(writer.location, collections, items, catalog_key)
    try:
        with _redacting_logs(dsn):
            return _publish(dsn, collections, items, key)
    except Exception as exc:  # psycopg and pgstac failures: typed, naming the database, never its password
        raise StorageError(f"pgstac at {safe_dsn(dsn)}: {type(exc).__name__}: {redact(str(exc), dsn)}") from None


def check_publishable(where: str, collections: list[dict], items: list[dict], catalog_key: str | None = None) -> str:
    """The catalog key of the pgstac documents of the catalog at ``where``, once they are whole and servable.

    Raises :class:`~moczarr.errors.ContentError` naming the file for documents
    that are not whole (see the module docstring) or of another catalog than
    ``catalog_key`` (when given), and :class:`~moczarr.errors.ArgumentError`
    when they name paths of the building machine.
    """
    c_file, i_file = f"{where}/{COLLECTIONS_NDJSON}", f"{where}/{ITEMS_NDJSON}"
    rebuild = "nothing published: rebuild the catalog (moczarr-catalog update or build)"
    if not collections:
        raise ContentError(f"{c_file}: no Collection (an emptied or truncated file?); {rebuild}")
    ids = Counter(c["id"] for c in collections)
    twice = [i for i, n in ids.items() if n > 1]
    if twice or any(c.get("type") != "Collection" for c in collections):
        what = f"Collection {twice[0]!r} twice" if twice else "a line that is not a Collection"
        raise ContentError(f"{c_file}: {what}; {rebuild}")
    keys = sorted({str(c.get(CATALOG_FIELD)) for c in collections})
    if len(keys) > 1 or any(not isinstance(c.get(CATALOG_FIELD), str) for c in collections):
        raise ContentError(f"{c_file}: Collections of several catalogs or of none ({CATALOG_FIELD}: {keys}); {rebuild}")
    key = keys[0]
    if catalog_key is not None and not _same_key(key, catalog_key):
        raise ContentError(
            f"{c_file}: its Collections are those of the catalog {key}, not of this one ({catalog_key}): files of "
            f"another catalog, or a catalog moved since they were written; {rebuild}"
        )
    if any(i.get("type") != "Feature" or not isinstance(i.get("collection"), str) for i in items):
        raise ContentError(f"{i_file}: a line that is not an Item of a Collection; {rebuild}")
    pairs = Counter((i["collection"], i["id"]) for i in items)
    twice_items = [pair for pair, n in pairs.items() if n > 1]
    if twice_items:
        raise ContentError(f"{i_file}: Item {twice_items[0][1]!r} of {twice_items[0][0]!r} twice; {rebuild}")
    counts = Counter(i["collection"] for i in items)
    orphans = sorted(counts.keys() - ids.keys())
    if orphans:
        raise ContentError(
            f"{i_file}: Items of Collection {orphans[0]!r}, which {COLLECTIONS_NDJSON} does not hold; {rebuild}"
        )
    for c in collections:
        said = c.get(ITEM_COUNT_FIELD)
        if not isinstance(said, int) or isinstance(said, bool):
            raise ContentError(
                f"{c_file}: Collection {c['id']!r} does not say how many Items it has ({ITEM_COUNT_FIELD}: "
                f"written by an older moczarr); {rebuild}"
            )
        if counts.get(c["id"], 0) != said:
            raise ContentError(
                f"{i_file}: {counts.get(c['id'], 0)} Item(s) of Collection {c['id']!r} where {COLLECTIONS_NDJSON} "
                f"says {said} (a truncated or damaged file?); {rebuild}"
            )
    try:
        local = document_machine_paths(collections + items)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ContentError(f"{where}/{PGSTAC_DIR}: a document without its href ({exc!r}); {rebuild}") from None
    if local:
        raise ArgumentError(
            f"{where}: its documents name {len(local)} path(s) of the building machine (e.g. {local[0]}), which a "
            "portal cannot serve; nothing published: rebuild the catalog with --href-base URL (and --stores-root "
            "DIR; --catalog-url URL when it has thumbnails)"
        )
    return key


#: a URL DSN's userinfo (``scheme://user:password@``), up to the last ``@`` before the path
_URL_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/?#@\s]*):(?P<pw>[^/?#\s]*)@")
#: ``password=...`` in a key=value DSN (quoted or bare) or a URL DSN's query
_KEYWORD = re.compile(r"(?P<head>password\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'?|[^\s&#]*)", re.IGNORECASE)


def _secrets(dsn: str) -> list[str]:
    """Every spelling of the password ``dsn`` holds (raw, percent-decoded, unquoted), longest first."""
    found = set()
    for match in _URL_USERINFO.finditer(dsn):
        found |= {match["pw"], unquote(match["pw"])}
    for match in _KEYWORD.finditer(dsn):
        raw = match["pw"]
        found |= {raw, unquote(raw), raw.strip("'"), re.sub(r"\\(.)", r"\1", raw.strip("'"))}
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(dsn).get("password")
        if password:
            found.add(str(password))
    except Exception:  # a malformed DSN: the patterns above found what it spells
        pass
    return sorted((s for s in found if s), key=len, reverse=True)


def redact(text: str, dsn: str) -> str:
    """``text`` with every spelling of ``dsn``'s password replaced by ``***`` (a URL's userinfo, ``password=``)."""
    text = _URL_USERINFO.sub(lambda m: f"{m['head']}{m['user']}:***@", text)
    text = _KEYWORD.sub(lambda m: f"{m['head']}***", text)
    for secret in _secrets(dsn):
        text = text.replace(secret, "***")
    return text


def safe_dsn(dsn: str) -> str:
    """How messages name the database: ``host:port/dbname``, or the DSN with its password ``***`` when malformed."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(dsn)
    except Exception:
        return redact(dsn, dsn)
    return f"{parts.get('host', '')}:{parts.get('port', '')}/{parts.get('dbname', '')}"


class _Redacting(logging.Filter):
    """A handler filter spelling every record without the DSN's password (psycopg and pypgstac log connections)."""

    def __init__(self, dsn: str):
        super().__init__()
        self.dsn = dsn

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info:  # the traceback's text could hold it too: its last line, redacted, instead
            message += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
            record.exc_info, record.exc_text = None, None
        record.msg, record.args = redact(message, self.dsn), None
        return True


@contextmanager
def _redacting_logs(dsn: str) -> Iterator[None]:
    """While publishing, every log line this process prints (the root logger's handlers, logging's last
    resort) is redacted."""
    handlers = [*logging.getLogger().handlers, logging.lastResort]
    redacting = _Redacting(dsn)
    for handler in handlers:
        if handler is not None:
            handler.addFilter(redacting)
    try:
        yield
    finally:
        for handler in handlers:
            if handler is not None:
                handler.removeFilter(redacting)


#: seconds a connection attempt may take before the database counts as unreachable
CONNECT_TIMEOUT_S = 10


def _publish(dsn: str, collections: list[dict], items: list[dict], key: str) -> PublishResult:
    import psycopg
    from pypgstac.db import PgstacDB
    from pypgstac.load import Loader, Methods

    # pypgstac's pool would keep retrying an unreachable database for its 30 s timeout; one direct attempt
    # first makes a refused or unknown host fail at once (and a silent one within CONNECT_TIMEOUT_S)
    psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S).close()
    report = PublishResult(collections=[c["id"] for c in collections])
    for doc in items:
        report.items.setdefault(doc["collection"], []).append(doc["id"])
    with PgstacDB(dsn=dsn) as db:
        loader = Loader(db=db)
        loader.load_collections(iter(collections), insert_mode=Methods.upsert)
        if items:
            loader.load_items(iter(items), insert_mode=Methods.upsert)
        ours = set(report.collections)
        kept = {(i["collection"], i["id"]) for i in items}
        conn = db.connect()
        with conn.cursor() as cur:
            cur.execute("SELECT collection, id FROM pgstac.items WHERE collection = ANY(%s)", (sorted(ours),))
            stale = sorted(row for row in map(tuple, cur.fetchall()) if row not in kept)
            cur.execute("SELECT id FROM pgstac.collections WHERE content->>%s = %s", (CATALOG_FIELD, key))
            report.collections_deleted = sorted(row[0] for row in cur.fetchall() if row[0] not in ours)
            for collection, item in stale:
                cur.execute("SELECT pgstac.delete_item(%s, %s)", (item, collection))
                report.items_deleted.setdefault(collection, []).append(item)
            for collection in report.collections_deleted:
                cur.execute("DELETE FROM pgstac.items WHERE collection = %s RETURNING id", (collection,))
                if ids := sorted(row[0] for row in cur.fetchall()):
                    report.items_deleted[collection] = ids
                cur.execute("SELECT pgstac.delete_collection(%s)", (collection,))
        conn.commit()
    return report
