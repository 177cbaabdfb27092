"""The one naming rule of a catalog: ids and entry names that tell roots apart.

STAC ids (Collections, store Catalogs, moraine Items) and Intake entry names
(both YAML flavours) come from the same functions, so an entry called
``windowed_store_atl06`` describes the product of the STAC Collection
``windowed-store-atl06``.

Every id and entry name comes from store content (folder names, manifest
``short_name``), which a catalog does not control, and becomes a folder and a
file name of the written catalog. So each is safe by construction: only
``[A-Za-z0-9._-]`` (ids) or word characters (entry names), never empty, never
beginning with ``.`` (so never ``.`` or ``..``), at most :data:`MAX_NAME`
characters (a longer one is cut and ends with a hash of the whole text, so
two long names stay distinct and one name always gives the same id), and
never the name of a folder the catalog writes for itself (:data:`RESERVED_IDS`).
Ordinary names (short, plain) pass through unchanged.
"""

from __future__ import annotations

import hashlib
import keyword
import os
import re
from collections import Counter

from moczarr.metadata import is_remote

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: the longest id or entry name made from store content (a STAC Item id adds its level and window to it)
MAX_NAME = 64
#: hex digits of the SHA-256 of the whole text that end a name cut to :data:`MAX_NAME`
HASH_DIGITS = 8
#: ids the top STAC catalog's own folders take (``stac.API_ITEMS``, ``stac.API_COLLECTIONS``): no store gets them
RESERVED_IDS = frozenset({"api-items", "api-collections"})


def name_hash(text: str) -> str:
    """The first :data:`HASH_DIGITS` hex digits of the SHA-256 of ``text`` (stable across runs and machines)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_DIGITS]


def _bounded(name: str, text: str, sep: str) -> str:
    """``name`` (made from ``text``) cut to :data:`MAX_NAME` characters with ``{sep}{hash of text}`` at its end."""
    if len(name) <= MAX_NAME:
        return name
    return f"{name[: MAX_NAME - HASH_DIGITS - 1].rstrip('-_.')}{sep}{name_hash(text)}"


def slug(text: str) -> str:
    """``text`` as an id: runs of characters outside ``[A-Za-z0-9._-]`` become ``-``; never empty, ``.`` or ``..``.

    Leading ``-`` and ``.`` and trailing ``-`` are dropped (``"store"`` when nothing is left); a result
    longer than :data:`MAX_NAME` is cut and ends with ``-`` and :func:`name_hash` of ``text``.
    """
    name = _ID_UNSAFE.sub("-", text).lstrip("-.").rstrip("-") or "store"
    return _bounded(name, text, "-")


def identifier(text: str, digit_prefix: str = "_") -> str:
    """``text`` as a Python identifier (Intake entry names are attribute names too).

    Runs of non-word characters become ``_``; a leading digit gets ``digit_prefix``;
    a keyword gets a trailing ``_``; a result longer than :data:`MAX_NAME` is cut
    and ends with ``_`` and :func:`name_hash` of ``text``.
    """
    name = re.sub(r"\W+", "_", text).strip("_") or "entry"
    if name[0].isdigit():
        name = f"{digit_prefix}{name}"
    name = _bounded(name, text, "_")
    return name + "_" if keyword.iskeyword(name) else name


def dedupe(names: list[str], sep: str = "-", reserved: frozenset[str] = frozenset()) -> list[str]:
    """``names`` with later repeats (and names in ``reserved``) suffixed ``{sep}2``, ``{sep}3`` ... (order kept)."""
    out, used = [], set(reserved)
    for name in names:
        candidate, n = name, 2
        while candidate in used:
            candidate, n = f"{name}{sep}{n}", n + 1
        used.add(candidate)
        out.append(candidate)
    return out


def _path_parts(root: str) -> list[str]:
    text = root.split("://", 1)[1] if is_remote(root) else os.path.abspath(root)
    return [x for x in text.replace("\\", "/").split("/") if x] or ["store"]


def root_labels(roots: list[str]) -> list[str]:
    """The shortest path suffix (slugged, parts joined by ``-``) naming each root uniquely.

    ``["a/x/store", "b/y/store"]`` -> ``["x-store", "y-store"]``; a lone root is its folder name.
    """
    parts = [_path_parts(r) for r in roots]
    depth = [1] * len(roots)
    while True:
        labels = [slug("-".join(ps[-d:])) for ps, d in zip(parts, depth, strict=True)]
        seen: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            seen.setdefault(label, []).append(i)
        clash = [i for group in seen.values() if len(group) > 1 for i in group if depth[i] < len(parts[i])]
        if not clash:
            return dedupe(labels)
        for i in clash:
            depth[i] += 1


def product_ids(stores) -> tuple[dict[int, str], dict[tuple[int, str], str]]:
    """``({store index: sub-catalog id}, {(store index, product name): collection id})``, unique together.

    ``stores``: :class:`~moczarr.metadata.StoreSummary` records. A product
    name found in one root only stays as it is; one found in several roots is
    prefixed with its root's label (:func:`root_labels`). Multi-product roots
    get their label as the id of their sub-catalog. Every id is a :func:`slug`
    (safe as a folder name) and none is in :data:`RESERVED_IDS`.
    """
    labels = root_labels([s.root for s in stores]) if stores else []
    names = Counter(p.name for s in stores for p in s.products)
    keys: list = [i for i, s in enumerate(stores) if s.layout == "multi"]
    wanted = [labels[i] for i in keys]
    for i, s in enumerate(stores):
        for p in s.products:
            keys.append((i, p.name))
            wanted.append(slug(p.name) if names[p.name] == 1 else slug(f"{labels[i]}-{p.name}"))
    unique = dict(zip(keys, dedupe(wanted, reserved=RESERVED_IDS), strict=True))
    return (
        {k: v for k, v in unique.items() if isinstance(k, int)},
        {k: v for k, v in unique.items() if isinstance(k, tuple)},
    )
