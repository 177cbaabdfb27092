"""The one naming rule of a catalog: ids and entry names that tell roots apart.

STAC ids (Collections, store Catalogs, moraine Items) and Intake entry names
(both YAML flavours) come from the same functions, so an entry called
``windowed_store_atl06`` describes the product of the STAC Collection
``windowed-store-atl06``.
"""

from __future__ import annotations

import keyword
import os
import re
from collections import Counter

from moczarr.metadata import is_remote

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(text: str) -> str:
    """``text`` with every run of characters outside ``[A-Za-z0-9._-]`` replaced by ``-`` (never empty)."""
    return _ID_UNSAFE.sub("-", text).strip("-") or "store"


def identifier(text: str, digit_prefix: str = "_") -> str:
    """``text`` as a Python identifier (Intake entry names are attribute names too).

    Runs of non-word characters become ``_``; a leading digit gets ``digit_prefix``.
    """
    name = re.sub(r"\W+", "_", text).strip("_") or "entry"
    if name[0].isdigit():
        name = f"{digit_prefix}{name}"
    return name + "_" if keyword.iskeyword(name) else name


def dedupe(names: list[str], sep: str = "-") -> list[str]:
    """``names`` with later repeats suffixed ``{sep}2``, ``{sep}3`` ... (order kept)."""
    out, used = [], set()
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
    get their label as the id of their sub-catalog.
    """
    labels = root_labels([s.root for s in stores]) if stores else []
    names = Counter(p.name for s in stores for p in s.products)
    keys: list = [i for i, s in enumerate(stores) if s.layout == "multi"]
    wanted = [labels[i] for i in keys]
    for i, s in enumerate(stores):
        for p in s.products:
            keys.append((i, p.name))
            wanted.append(slug(p.name) if names[p.name] == 1 else slug(f"{labels[i]}-{p.name}"))
    unique = dict(zip(keys, dedupe(wanted), strict=True))
    return (
        {k: v for k, v in unique.items() if isinstance(k, int)},
        {k: v for k, v in unique.items() if isinstance(k, tuple)},
    )
