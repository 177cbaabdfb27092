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

``publish(OUT, dsn)`` reads those two files from ``OUT`` (a folder or an
object-store URL), upserts the Collections and Items through pypgstac's
loader, and deletes from the database the Items of this catalog's
Collections that the files no longer hold and the Collections of this
catalog that are gone (removed products).
"""

from __future__ import annotations

import json
from pathlib import Path

import pystac

from moczarr.errors import ArgumentError, MoczarrWarning, NotFoundError, StorageError
from moczarr.metadata import Writer, warn

from .stac.geoparquet import ApiDocuments, api_documents

PGSTAC_DIR = "pgstac"
COLLECTIONS_NDJSON = f"{PGSTAC_DIR}/collections.ndjson"
ITEMS_NDJSON = f"{PGSTAC_DIR}/items.ndjson"
#: the field naming the catalog a Collection belongs to (its published location)
CATALOG_FIELD = "moczarr:catalog"
#: the Collection of the moraine pyramid Items in pgstac (the static catalog has none)
MORAINE_COLLECTION = "moraine-pyramids"


def pgstac_documents(
    catalog: pystac.Catalog, catalog_key: str, documents: ApiDocuments | None = None
) -> tuple[list[dict], list[dict]]:
    """``(collections, items)``: the catalog's documents as pgstac loads them (see the module docstring).

    ``documents``: the catalog's :func:`~.stac.geoparquet.api_documents`, when
    the caller has them (they are not changed: what differs is a copy).
    """
    documents = documents if documents is not None else api_documents(catalog)
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
    catalog: pystac.Catalog, folder: str | Path, catalog_key: str, documents: ApiDocuments | None = None
) -> list[Path]:
    """Write ``{folder}/pgstac/collections.ndjson`` and ``items.ndjson`` (see the module docstring).

    ``documents``: the catalog's :func:`~.stac.geoparquet.api_documents`, when the caller has them.
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
    payload = writer.get(name)
    if payload is None:
        raise NotFoundError(f"{writer.location}: no {name} (build the catalog with this version first)")
    try:
        return [json.loads(line) for line in payload.decode().splitlines() if line.strip()]
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArgumentError(f"{writer.location}/{name}: not ndjson ({exc})") from None


def publish(out: str, dsn: str, *, storage_options: dict | None = None) -> dict[str, int]:
    """Upsert the catalog at ``out`` into the pgstac database at ``dsn``; delete what it no longer holds.

    Returns the counts ``collections``, ``items`` (upserted), ``items_deleted``
    and ``collections_deleted``. Raises :class:`~moczarr.errors.NotFoundError`
    when ``out`` holds no ndjson, :class:`~moczarr.errors.StorageError` when the
    database cannot be reached or refuses a document.
    """
    writer = Writer(out, storage_options)
    collections = _read_ndjson(writer, COLLECTIONS_NDJSON)
    items = _read_ndjson(writer, ITEMS_NDJSON)
    keys = {c.get(CATALOG_FIELD) for c in collections}
    if len(keys) > 1:
        raise ArgumentError(f"{out}: Collections of several catalogs in one build: {sorted(map(str, keys))}")
    try:
        return _publish(dsn, collections, items, keys.pop() if keys else None)
    except (ArgumentError, NotFoundError):
        raise
    except Exception as exc:  # psycopg and pgstac failures: typed, naming the database, never its password
        text = str(exc)
        password = _password(dsn)
        if password:
            text = text.replace(password, "***")
        raise StorageError(f"pgstac at {_safe_dsn(dsn)}: {type(exc).__name__}: {text}") from None


def _password(dsn: str) -> str | None:
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = conninfo_to_dict(dsn).get("password")
        return None if password is None else str(password)
    except Exception:
        return None


def _safe_dsn(dsn: str) -> str:
    """The DSN without its password (messages never carry a credential)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(dsn)
    except Exception:
        return "the database"
    return f"{parts.get('host', '')}:{parts.get('port', '')}/{parts.get('dbname', '')}"


#: seconds a connection attempt may take before the database counts as unreachable
CONNECT_TIMEOUT_S = 10


def _publish(dsn: str, collections: list[dict], items: list[dict], key: str | None) -> dict[str, int]:
    import psycopg
    from pypgstac.db import PgstacDB
    from pypgstac.load import Loader, Methods

    # pypgstac's pool would keep retrying an unreachable database for its 30 s timeout; one direct attempt
    # first makes a refused or unknown host fail at once (and a silent one within CONNECT_TIMEOUT_S)
    psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S).close()
    with PgstacDB(dsn=dsn) as db:
        loader = Loader(db=db)
        if collections:
            loader.load_collections(iter(collections), insert_mode=Methods.upsert)
        if items:
            loader.load_items(iter(items), insert_mode=Methods.upsert)
        ours = sorted({c["id"] for c in collections})
        kept = {(i["collection"], i["id"]) for i in items}
        conn = db.connect()
        with conn.cursor() as cur:
            cur.execute("SELECT collection, id FROM pgstac.items WHERE collection = ANY(%s)", (ours,))
            stale = [row for row in cur.fetchall() if tuple(row) not in kept]
            gone: list[str] = []
            if key is not None:
                cur.execute("SELECT id FROM pgstac.collections WHERE content->>%s = %s", (CATALOG_FIELD, key))
                gone = sorted(row[0] for row in cur.fetchall() if row[0] not in ours)
            for collection, item in stale:
                cur.execute("SELECT pgstac.delete_item(%s, %s)", (item, collection))
            deleted = len(stale)
            for collection in gone:
                cur.execute("DELETE FROM pgstac.items WHERE collection = %s", (collection,))
                deleted += max(cur.rowcount, 0)
                cur.execute("SELECT pgstac.delete_collection(%s)", (collection,))
        conn.commit()
    return {
        "collections": len(collections),
        "items": len(items),
        "items_deleted": deleted,
        "collections_deleted": len(gone),
    }
