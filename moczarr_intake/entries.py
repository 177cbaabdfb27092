"""The one entry model of a catalog build: every product and moraine pyramid, named once.

Both Intake flavours (:mod:`.catalog_yaml`) and the STAC builder
(:mod:`.stac.build`) walk the same :class:`CatalogEntries`, so names are
unique across all roots, a YAML entry and its STAC Collection describe the
same product, and no two entries point at different stores under one name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from moczarr.metadata import ProductSummary, StoreSummary

from .naming import identifier, product_ids, slug

if TYPE_CHECKING:
    from moczarr.moraine import MorainePyramid


@dataclass
class ProductEntry:
    """One product of one root: its Intake name, its STAC Collection id and its facts."""

    name: str  # Intake entry name (a Python identifier); the tree entry is f"{name}_tree"
    collection_id: str
    store: StoreSummary
    product: ProductSummary

    @property
    def multi(self) -> bool:
        """True for a product of a multi-product root (its tree opens the root with ``products=[name]``)."""
        return self.store.layout == "multi"


@dataclass
class MoraineEntry:
    """One moraine pyramid: its Intake name and its STAC Item id."""

    name: str
    item_id: str
    info: MorainePyramid


@dataclass
class CatalogEntries:
    stores: list[StoreSummary]
    sub_catalog_ids: dict[int, str]  # store index -> id of the Catalog of a multi-product root
    products: list[ProductEntry] = field(default_factory=list)
    moraine: list[MoraineEntry] = field(default_factory=list)

    def by_store(self) -> list[list[ProductEntry]]:
        """The product entries of each store, in the stores' order (one pass over the products)."""
        groups: dict[int, list[ProductEntry]] = {id(s): [] for s in self.stores}
        for e in self.products:
            groups[id(e.store)].append(e)
        return [groups[id(s)] for s in self.stores]


def _free(name: str, taken: set[str], suffixes=("", "_tree")) -> str:
    candidate, n = name, 1
    while any(candidate + s in taken for s in suffixes):
        n += 1
        candidate = f"{name}_{n}"
    taken.update(candidate + s for s in suffixes)
    return candidate


def catalog_entries(stores: list[StoreSummary], moraine=()) -> CatalogEntries:
    """Name every product of ``stores`` and every pyramid of ``moraine`` (see :func:`.naming.product_ids`)."""
    sub_ids, collection_ids = product_ids(stores)
    out = CatalogEntries(list(stores), sub_ids)
    taken: set[str] = set()
    used_ids = set(sub_ids.values()) | set(collection_ids.values())
    for i, store in enumerate(stores):
        for p in store.products:
            cid = collection_ids[(i, p.name)]
            out.products.append(ProductEntry(_free(identifier(cid), taken), cid, store, p))
    for info in moraine:
        base = slug(info.path.rstrip("/").rsplit("/", 1)[-1] or "moraine")
        item_id, n = base, 2
        while item_id in used_ids:
            item_id, n = f"{base}-{n}", n + 1
        used_ids.add(item_id)
        out.moraine.append(MoraineEntry(_free(identifier(item_id, "moraine_"), taken, ("", "_points")), item_id, info))
    return out
