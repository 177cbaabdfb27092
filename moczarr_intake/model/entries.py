"""The one entry model of a catalog build: every product and moraine pyramid, named once.

Both Intake flavours (:mod:`..intake_yaml.catalog`) and the STAC builder
(:mod:`..stac.build`) walk the same :class:`CatalogEntries`, so names are
unique across all roots, a YAML entry and its STAC Collection describe the
same product, and no two entries point at different stores under one name.

Names once published stay: a build given the :class:`RootIdentity` of each
root a previous build recorded keeps the ids and entry names of the products
that are still there (read in the same layout), and names the new ones so
that they collide with none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from moczarr.metadata import ProductSummary, StoreSummary, normalize_location

from .naming import identifier, product_ids, slug

if TYPE_CHECKING:
    from moczarr.moraine import MorainePyramid


#: how a folder was read: a bare store, a multi-product root, a moraine pyramid
LAYOUTS = ("bare", "multi", "pyramid")


@dataclass(frozen=True)
class Names:
    """What a product or pyramid is published as: its STAC id (Collection or Item) and its Intake entry name."""

    id: str
    entry: str


@dataclass(frozen=True)
class RootIdentity:
    """One root as a build read and named it: what an update keeps (the build record's ``identity``).

    ``layout``: one of :data:`LAYOUTS`; ``products``: a hive root's product
    names -> their :class:`Names`; ``catalog``: a multi-product root's
    sub-catalog id; ``item``: a moraine pyramid's Item id and entry name.
    """

    layout: str
    products: Mapping[str, Names] = field(default_factory=dict)
    catalog: str | None = None
    item: Names | None = None

    @property
    def ids(self) -> list[str]:
        """The Collection (or Item) ids of the root, in its products' order."""
        return [n.id for n in self.products.values()] + ([self.item.id] if self.item is not None else [])


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

    def identities(self) -> dict[str, RootIdentity]:
        """Every root's :class:`RootIdentity`, by its normalized location (what the build record keeps)."""
        out: dict[str, RootIdentity] = {}
        for i, (store, group) in enumerate(zip(self.stores, self.by_store(), strict=True)):
            products = {e.product.name: Names(e.collection_id, e.name) for e in group}
            out[normalize_location(store.root)] = RootIdentity(store.layout, products, self.sub_catalog_ids.get(i))
        for m in self.moraine:
            out[normalize_location(m.info.path)] = RootIdentity("pyramid", item=Names(m.item_id, m.name))
        return out


def _free(name: str, taken: set[str], suffixes=("", "_tree")) -> str:
    candidate, n = name, 1
    while any(candidate + s in taken for s in suffixes):
        n += 1
        candidate = f"{name}_{n}"
    taken.update(candidate + s for s in suffixes)
    return candidate


def catalog_entries(
    stores: list[StoreSummary], moraine=(), identity: Mapping[str, RootIdentity] | None = None
) -> CatalogEntries:
    """Name every product of ``stores`` and every pyramid of ``moraine`` (see :func:`.naming.product_ids`).

    ``identity``: the :class:`RootIdentity` of roots an earlier build named,
    by location. A product of such a root read in the recorded layout keeps
    its recorded Collection id and entry name (a bare store's one product
    keeps them whatever its manifest now calls it) (a multi-product root its
    sub-catalog id, a pyramid its Item id and entry name); every other one is
    named by the naming rule, then suffixed (``-2``, ``_2``) where that would
    take a name already kept. Without ``identity`` this is the full build's naming.
    """
    known = {normalize_location(k): v for k, v in (identity or {}).items()}
    ids: set[str] = set()
    taken: set[str] = set()  # entry names (with their ``_tree`` / ``_points`` companions)
    pinned_sub: dict[int, str] = {}
    pinned: dict[tuple[int, str], Names] = {}
    pinned_moraine: dict[int, Names] = {}
    for i, store in enumerate(stores):
        ident = known.get(normalize_location(store.root))
        if ident is None or ident.layout != store.layout:
            continue
        if store.layout == "multi" and ident.catalog and ident.catalog not in ids:
            pinned_sub[i] = ident.catalog
            ids.add(ident.catalog)
        for p in store.products:
            names = ident.products.get(p.name)
            if names is None and store.layout == "bare" and len(ident.products) == 1:
                (names,) = ident.products.values()  # the folder's one product, though its manifest renamed it
            if names is not None and _pin(names, ids, taken, ("", "_tree")):
                pinned[(i, p.name)] = names
    for j, info in enumerate(moraine):
        ident = known.get(normalize_location(info.path))
        item = ident.item if ident is not None and ident.layout == "pyramid" else None
        if item is not None and _pin(item, ids, taken, ("", "_points")):
            pinned_moraine[j] = item
    sub_ids, collection_ids = product_ids(stores)
    sub_ids = {i: pinned_sub.get(i) or _new_id(sub_ids[i], ids) for i in sub_ids}
    out = CatalogEntries(list(stores), sub_ids)
    for i, store in enumerate(stores):
        for p in store.products:
            names = pinned.get((i, p.name))
            if names is None:
                cid = _new_id(collection_ids[(i, p.name)], ids)
                names = Names(cid, _free(identifier(cid), taken))
            out.products.append(ProductEntry(names.entry, names.id, store, p))
    for j, info in enumerate(moraine):
        names = pinned_moraine.get(j)
        if names is None:
            item_id = _new_id(slug(info.path.rstrip("/").rsplit("/", 1)[-1] or "moraine"), ids)
            names = Names(item_id, _free(identifier(item_id, "moraine_"), taken, ("", "_points")))
        out.moraine.append(MoraineEntry(names.entry, names.id, info))
    return out


def _pin(names: Names, ids: set[str], taken: set[str], suffixes: tuple[str, ...]) -> bool:
    """Reserve a recorded id and entry name; False (nothing reserved) when another kept one holds either."""
    entries = {names.entry + s for s in suffixes}
    if names.id in ids or entries & taken:
        return False
    ids.add(names.id)
    taken.update(entries)
    return True


def _new_id(wanted: str, ids: set[str]) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3`` ... : the first not in ``ids`` (then reserved)."""
    candidate, n = wanted, 2
    while candidate in ids:
        candidate, n = f"{wanted}-{n}", n + 1
    ids.add(candidate)
    return candidate
