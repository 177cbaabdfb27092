"""Commit stamps, debris, versioned leaves and the discovery walk (FORMAT.md §4.3-§4.4, §5, §12).

Presence requires the stamp: a ``.zarr`` prefix whose root ``zarr.json`` has
no ``morton_hive_commit`` mapping is debris. :func:`leaf_data_prefix` is the
one place the versioned-leaf rule (``current``) is applied.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from .. import ids
from ..errors import CoverageFallbackWarning, StampError, warn
from ..storage import Storage, keys, parse_json

STAMP_KEY = "morton_hive_commit"


def stamp_of(zarr_json: dict | None) -> dict | None:
    """The commit stamp inside a root ``zarr.json`` document, or None (not committed)."""
    if not isinstance(zarr_json, dict):
        return None
    attrs = zarr_json.get("attributes")
    stamp = attrs.get(STAMP_KEY) if isinstance(attrs, dict) else None
    return stamp if isinstance(stamp, dict) else None


def stamped_array_names(stamp: dict, group: str) -> list[str] | None:
    """Array names of ``group`` from the stamp's ``content_hashes`` (newest writers), else None."""
    hashes = (
        (stamp.get("content_hashes") or {}).get("arrays") if isinstance(stamp.get("content_hashes"), dict) else None
    )
    if not isinstance(hashes, dict):
        return None
    names = sorted(k.split("/", 1)[1] for k in hashes if k.startswith(f"{group}/") and "/" not in k.split("/", 1)[1])
    return names or None


def read_stamp(storage: Storage, path: str) -> dict | None:
    """The stamp of the zarr object at ``path`` (one GET); None when missing or unstamped."""
    return stamp_of(storage.get_json(f"{path}/zarr.json"))


def parse_root(payload: bytes | None, where: str) -> dict | None:
    """A root ``zarr.json`` document from its bytes (None stays None).

    Raises :class:`StampError` naming ``where`` for bytes that are not JSON or not a JSON object.
    """
    doc = parse_json(payload, where)
    if doc is not None and not isinstance(doc, dict):
        raise StampError(f"{where}: a {type(doc).__name__}, not a zarr.json object")
    return doc


def read_roots(storage: Storage, paths: Sequence[str]) -> list[dict | None]:
    """The root ``zarr.json`` documents of many objects in one batched, concurrent read.

    None for a missing object. Raises :class:`StampError` for a present
    document that cannot be parsed or is not a JSON object.
    """
    payloads = storage.get_many([f"{p}/zarr.json" for p in paths])
    return [parse_root(b, storage.describe(f"{p}/zarr.json")) for p, b in zip(paths, payloads, strict=True)]


def read_cache_roots(storage: Storage, paths: Sequence[str]) -> list[dict | None]:
    """:func:`read_roots` for derived (cache) objects: an unparsable document is dropped, not raised.

    Each document that cannot be parsed is reported with an
    :class:`~moczarr.errors.ObjectDroppedWarning` naming it and read as None
    (like a missing object), so one damaged cache object never takes the
    open down (FORMAT.md §4.1: caches are never load-bearing).
    """
    from ..errors import ObjectDroppedWarning, StampError
    from ..storage import parse_json

    out = []
    for path, payload in zip(paths, storage.get_many([f"{p}/zarr.json" for p in paths]), strict=True):
        try:
            doc = parse_json(payload, storage.describe(f"{path}/zarr.json"))
        except StampError as exc:
            warn(f"{exc}; derived object dropped", ObjectDroppedWarning)
            doc = None
        if doc is not None and not isinstance(doc, dict):
            warn(
                f"{storage.describe(path + '/zarr.json')}: not a JSON object; derived object dropped",
                ObjectDroppedWarning,
            )
            doc = None
        out.append(doc)
    return out


def read_commits(
    store_root, leaves: Sequence[str], *, storage_options: dict | None = None, concurrency: int = 32
) -> dict[str, dict | None]:
    """Stamps of many leaves (stable leaf paths relative to the store root) in one batched read.

    Returns ``{path: stamp or None}``; the stamps can be threaded into
    :func:`moczarr.open_leaf` / :func:`moczarr.read_coverage_bitmap` with ``stamp=``.
    """
    storage = Storage.open(store_root, storage_options, concurrency)
    docs = read_roots(storage, list(leaves))
    return {p: stamp_of(d) for p, d in zip(leaves, docs, strict=True)}


def version_of(stamp: dict | None, where: str = "") -> str | None:
    """The validated ``current`` version name of a root stamp (None for legacy leaves).

    Raises :class:`~moczarr.errors.VersionPointerError` unless ``current`` is
    absent, null, or a string forming exactly one path component that begins
    ``run-`` (:func:`moczarr.storage.keys.version_name`).
    """
    if not stamp or stamp.get("current") is None:
        return None
    return keys.version_name(stamp["current"], where)


def leaf_data_prefix(leaf: str, stamp: dict | None, *, where: str | None = None) -> str:
    """Where a leaf's arrays and bitmap live: ``{leaf}/{current}`` when the stamp names a version, else ``leaf``.

    The one reader rule of FORMAT.md §5.3. Raises :class:`VersionPointerError`
    for a ``current`` that is not a version name.
    """
    version = version_of(stamp, where or leaf)
    return f"{leaf.rstrip('/')}/{version}" if version else leaf.rstrip("/")


def version_prefix_of(data_group: str) -> str | None:
    """The version prefix ``{leaf}.zarr/run-...`` holding a data group, or None (a legacy leaf, a derived object).

    Names beginning ``run-`` never collide with data groups (FORMAT.md §5.2), so
    the path alone tells a versioned leaf's data group from any other.
    """
    parent = data_group.rstrip("/").rpartition("/")[0]
    above, _, name = parent.rpartition("/")
    return parent if name.startswith("run-") and above.endswith(".zarr") else None


def check_missing_version(storage: Storage, version_prefix: str, group: str) -> None:
    """A versioned leaf's data group is missing: return when its version is gone, raise when it is stamped.

    FORMAT.md §5.5: a version that is missing or unstamped is a corrupted leaf
    (committed data removed out of band: debris, for the caller to warn about);
    a stamped version without its ``group`` data group is a malformed leaf and
    raises :class:`~moczarr.errors.StampError`. One GET (the version's stamp).
    """
    from ..errors import StampError

    if read_stamp(storage, version_prefix) is not None:
        raise StampError(
            f"{storage.describe(version_prefix)}: stamped version has no {group}/ data group (malformed leaf)"
        )


class LeafRef(NamedTuple):
    """A candidate source leaf: its id, window and stable path, and its packed word when already known.

    A named tuple: an open makes one per candidate leaf, and a tuple is the cheapest record to make.
    """

    decimal: str
    window: str | None
    path: str
    word: int | None = None


def walk_leaves(storage: Storage, shard_order: int, path_grouping: int = 1) -> list[LeafRef]:
    """Every source-leaf prefix under the store (the discovery walk; LISTs, level by level).

    Recurses only into digit-shaped children (``-?[1-6]`` at the root, up to
    ``path_grouping`` digits ``1-4`` below), classifies ``*.zarr`` children
    whose stem parses as a morton id at ``shard_order`` (``_window`` allowed),
    and skips everything else: columns, overviews, sidecars, and leaves whose
    id disagrees with their node path (the node invariant). Stamps are not
    checked here. The result is sorted by packed word, then window.
    """
    root_digit = re.compile(r"^-?[1-6]$")
    tail_digit = re.compile(rf"^[1-4]{{1,{path_grouping}}}$")
    found: list[LeafRef] = []
    frontier = [name for name in storage.list_dir("") if root_digit.match(name)]
    while frontier:
        listings = storage.list_many(frontier)
        nxt = []
        for node, names in zip(frontier, listings, strict=True):
            for name in names:
                if tail_digit.match(name):
                    nxt.append(f"{node}/{name}")
                    continue
                parsed = ids.parse_leaf_name(name)
                if parsed is None:
                    continue
                decimal, window = parsed
                if ids.decimal_order(decimal) != shard_order:
                    continue
                if ids.hive_node(decimal, path_grouping) != node:
                    warn(
                        f"{storage.describe(node + '/' + name)}: leaf id disagrees with its node path; skipped",
                        CoverageFallbackWarning,
                    )
                    continue
                found.append(LeafRef(decimal, window, f"{node}/{name}"))
        frontier = nxt
    if not found:
        return []
    words = ids.to_words([f.decimal for f in found]).tolist()
    order = sorted(range(len(found)), key=lambda i: (words[i], found[i].window or ""))
    return [LeafRef(found[i].decimal, found[i].window, found[i].path, words[i]) for i in order]


def windows_present(storage: Storage, shard_decimals: Sequence[str], path_grouping: int) -> list[str]:
    """Window labels of the leaves at the given shards' nodes (one LIST per node; error paths only)."""
    nodes = sorted({ids.hive_node(d, path_grouping) for d in shard_decimals})
    labels = set()
    for names in storage.list_many(nodes):
        for name in names:
            parsed = ids.parse_leaf_name(name)
            if parsed and parsed[1]:
                labels.add(parsed[1])
    return sorted(labels)
