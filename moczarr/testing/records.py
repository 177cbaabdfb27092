"""The format's small records computed from cells (mortie does the arithmetic): what every writer here shares.

Hive paths of nodes and leaves, the stamp's tier-0 box (FORMAT.md §6), the
root ranges (§2.3), the O11 content hashes (§8.6), the ``dggs`` attributes of
a data group and the bitmap coverage sidecar.
"""

from __future__ import annotations

import hashlib
import json
import os

import mortie
import numpy as np
import zstandard
from mortie.morton_index import MortonIndexArray

DGGS_CONVENTIONS = [
    {
        "schema_url": "https://raw.githubusercontent.com/zarr-conventions/dggs/refs/tags/v1/schema.json",
        "spec_url": "https://github.com/zarr-conventions/dggs/blob/v1/README.md",
        "uuid": "7b255807-140c-42ca-97f6-7a1cfecdbc38",
        "name": "dggs",
        "description": "Discrete Global Grid Systems convention for zarr",
    },
    {
        "schema_url": "https://github.com/espg/mortie/blob/main/docs/specification.md#dggs-attrs",
        "spec_url": "https://github.com/espg/mortie/blob/main/docs/specification.md",
        "uuid": "3e22156d-ea9e-4e01-95fe-e3809a4b41e7",
        "name": "morton-dggs",
        "description": "Packed-u64 morton (HEALPix) DGGS convention",
    },
]


def decimals(words) -> list[str]:
    """The decimal ids of packed ``words``, in order."""
    words = np.asarray(words, dtype=np.uint64).ravel()
    return [] if words.size == 0 else [str(d) for d in MortonIndexArray.from_words(words).decimal_repr()]


def node_path(word) -> str:
    """One-digit-per-component node path of a cell (the directory its hive path puts it in)."""
    path = MortonIndexArray.from_words(np.asarray([word], dtype=np.uint64)).hive_path()[0]
    return os.path.dirname(str(path))


def leaf_path(word, window: str | None) -> str:
    """The hive path of the leaf of shard ``word`` (and ``window``) under ``path_grouping`` 1."""
    decimal = decimals([word])[0]
    name = f"{decimal}.zarr" if window is None else f"{decimal}_{window}.zarr"
    return f"{node_path(word)}/{name}"


def children(word, order: int) -> np.ndarray:
    """All descendants of ``word`` at ``order``, ascending packed word (= digit-tail rank)."""
    return np.asarray(mortie.generate_morton_children(np.uint64(word), order), dtype=np.uint64).ravel()


def _order_of(word) -> int:
    return int(np.asarray(mortie.orders_of(np.asarray([word], dtype=np.uint64))).ravel()[0])


def coverage_box(occupied) -> list[str | None]:
    """The stamp's tier-0 box of a leaf's occupied cells (FORMAT.md §6): exactly four slots.

    ``compress_moc`` of the occupancy; one member is the box. Otherwise split
    at the deepest common ancestor and tighten each intersecting child of it to
    the common ancestor of the occupancy inside that child (2-4 members),
    sorted by packed word, padded with ``None``.
    """
    occupied = np.unique(np.asarray(occupied, dtype=np.uint64))
    if occupied.size == 0:
        raise ValueError("an empty leaf has no box from its occupancy (the writer writes no such leaf)")
    compact = np.asarray(mortie.compress_moc(occupied), dtype=np.uint64).ravel()
    if compact.size == 1:
        members = compact
    else:
        ancestor = np.uint64(mortie.common_ancestor(occupied))
        child_of = np.asarray(mortie.clip2order(_order_of(ancestor) + 1, occupied), dtype=np.uint64)
        members = np.sort(
            np.asarray(
                [np.uint64(mortie.common_ancestor(occupied[child_of == c])) for c in np.unique(child_of)],
                dtype=np.uint64,
            )
        )
    if not 1 <= members.size <= 4:
        raise AssertionError(f"box of {members.size} members")
    return decimals(members) + [None] * (4 - members.size)


def root_ranges(shards) -> list[list[str]]:
    """Maximal inclusive runs of consecutive shard ids within one base cell, ascending (FORMAT.md §2.3)."""
    words = np.unique(np.asarray(shards, dtype=np.uint64))
    if words.size == 0:
        return []
    order = _order_of(words[0])
    if np.any(np.asarray(mortie.orders_of(words)) != order):
        raise ValueError("root ranges need shards of one order")
    base = np.asarray(mortie.clip2order(0, words), dtype=np.uint64)
    # siblings at one order: the digit-tail rank steps by one between neighbours in word space
    step = np.uint64(1) << np.uint64(60 - 2 * order)
    breaks = np.flatnonzero((np.diff(words) != step) | (base[1:] != base[:-1])) + 1
    runs = []
    for run in np.split(words, breaks):
        lo, hi = decimals([run[0], run[-1]])
        runs.append([lo, hi])
    return runs


def content_hashes(group: str, arrays: dict[str, np.ndarray]) -> dict:
    """The O11 record (FORMAT.md §8.6) of fixed-width arrays: sha256 of their decoded LE bytes."""
    per = {}
    for name in sorted(arrays):
        a = np.asarray(arrays[name])
        per[f"{group}/{name}"] = hashlib.sha256(
            np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"))).tobytes()
        ).hexdigest()
    combined = hashlib.sha256("\n".join(sorted(per.values())).encode("ascii")).hexdigest()
    return {"arrays": per, "combined": combined}


def dggs_attrs(order: int) -> dict:
    """The ``dggs`` convention attributes of a data group at cell order ``order``."""
    return {
        "zarr_conventions": json.loads(json.dumps(DGGS_CONVENTIONS)),
        "dggs": {
            "name": "morton",
            "refinement_level": order,
            "spatial_dimension": "cells",
            "ellipsoid": {"name": "WGS84", "semimajor_axis": 6378137.0, "inverse_flattening": 298.257223563},
            "compression": "none",
            "latitude": "authalic-wgs84",
            "coordinate": "morton",
        },
    }


def bitmap_sidecar(ranks: np.ndarray, depth: int) -> tuple[bytes, int]:
    """The zstd sidecar payload of a bitmap with bits ``ranks`` set (MSB-first), and its raw size."""
    bits = np.zeros(4**depth, dtype=bool)
    bits[ranks] = True
    raw = np.packbits(bits).tobytes()
    return zstandard.ZstdCompressor(level=3).compress(raw), len(raw)
