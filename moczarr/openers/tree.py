"""A store root as an ``xarray.DataTree``: products, then resolutions (the seed's ``open_store``).

The root node is empty (store attrs only); one child per product holds the
product's Dataset, or, when the product declares a pyramid, one child per
stored cell order. Which orders hold source or overview objects is read off
each object's own role (:func:`source_orders`, :func:`overview_orders`).
"""

from __future__ import annotations

import warnings

import xarray as xr

from ..dataplane.assemble import check_verify_chunks
from ..errors import NotAHiveStoreError, ProductError, WindowError
from ..format.declaration import pyramid_declaration, pyramid_levels
from ..format.manifest import parse_manifest
from ..format.roster import is_product_name, read_roster
from ..ids import ALL_TOKEN
from ..places import as_place
from ..storage import DEFAULT_CONCURRENCY, Storage
from .hive import list_windows, open_source, root_shards
from .pyramid import open_level_or_omit, overview_objects, structural_orders
from .times import window_or_time


def _bare_node_name(manifest) -> str:
    name = (manifest.short_name or "").lower()
    return name if is_product_name(name) else "product"


def open_store(
    store_root,
    products: list[str] | str | None = None,
    aoi=None,
    window: str | None = None,
    time=None,
    *,
    index_kind: str = "moc",
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    verify_chunks: bool = False,
):
    """A store root as an ``xarray.DataTree``: an empty root, one child per product.

    Each product child holds exactly the :func:`moczarr.open_hive` Dataset of
    that product (``semantic_hash`` on its attrs). A product declaring a
    pyramid becomes an empty intermediate with one child per materialized
    cell order: bare integers (``atl06/8``, ``atl06/6``) for ``zagg-pyramid/1``,
    ``o{r}`` for ``zagg-pyramid/2``. A bare store is the one-child form (child
    named from the dataset short name; ``products=`` raises there).

    ``window=`` scopes windowed products and leaves unwindowed ones whole;
    ``"all"`` raises. ``aoi=`` scopes rows in every node, never the tree's
    shape (any place :mod:`moczarr.places` accepts, met at each node's cell
    order). ``time=(start, end)`` replaces ``window=`` on windowed products
    (the overlapping windows, stacked on ``window``). Raises
    :class:`~moczarr.errors.WindowError` when a windowed product is opened
    without a window or time, and :class:`~moczarr.errors.AOIError` for an
    ``aoi=`` that is no place (before any read). With ``verify_chunks=True``
    reads are checked against each object's recorded ``content_hashes`` (see
    :func:`moczarr.open_hive`).
    """
    aoi = as_place(aoi)
    window = window_or_time(window, time)
    verify_chunks = check_verify_chunks(verify_chunks)
    storage = Storage.open(store_root, storage_options, concurrency)
    if window == ALL_TOKEN:
        raise WindowError(
            f"{storage.describe()}: window='all' is refused: all-time folds exist only as overviews and the source "
            "axis has no all-time leaf to pair them with; open them with open_pyramid(..., all_time=True)"
        )
    root_doc, manifests = read_roster(storage)
    roster = sorted(manifests)
    if root_doc is not None:
        manifest = parse_manifest(root_doc, storage.describe())
        if products is not None:
            raise ProductError(f"{storage.describe()} is a bare store: there are no products to filter with products=")
        name = _bare_node_name(manifest)
        store_attrs = {"store_root": storage.location, "products": [], "bare": True, "node": name}
        targets = [(name, storage, manifest)]
    else:
        if not roster:
            raise NotAHiveStoreError(f"{storage.describe()} holds neither a morton-hive manifest nor products")
        wanted = roster if products is None else ([products] if isinstance(products, str) else products)
        if not isinstance(wanted, (list, tuple)) or not all(isinstance(p, str) for p in wanted):
            raise ProductError(f"products= must be a product name or a list of names, got {products!r}")
        missing = [p for p in wanted if p not in roster]
        if missing:
            raise ProductError(f"{storage.describe()}: no product named {missing}; products: {', '.join(roster)}")
        store_attrs = {"store_root": storage.location, "products": roster}
        targets = []
        for p in wanted:
            child = storage.child(p)
            targets.append((p, child, parse_manifest(manifests[p], child.describe())))
    children = {}
    for name, pstore, manifest in targets:
        pwindow = window if manifest.windowed else None
        if manifest.windowed and window is None:
            raise WindowError(
                f"{pstore.describe()}: product {name!r} is time-windowed; pass window= one of "
                f"{', '.join(list_windows(pstore)) or '(none found)'}"
            )
        children[name] = product_node(
            pstore, manifest, aoi, pwindow, index_kind=index_kind, verify_chunks=verify_chunks
        )
    return xr.DataTree(xr.Dataset(attrs={"morton_hive_store": store_attrs}), children=children)


def product_node(storage: Storage, manifest, aoi, window, *, index_kind: str = "moc", verify_chunks: bool = False):
    """One product: its flat Dataset, or (pyramid declared) an empty node with one child per stored order."""
    identity = {"morton_hive": manifest.summary()}
    if manifest.semantic_hash:
        identity["semantic_hash"] = manifest.semantic_hash
    decl = pyramid_declaration(manifest)
    if decl is None:
        # the flat node is exactly open_hive's Dataset (its own morton_hive summary), plus the hash
        extra = {"semantic_hash": manifest.semantic_hash} if manifest.semantic_hash else None
        return xr.DataTree(
            open_source(
                storage, manifest, aoi, window, index_kind=index_kind, extra_attrs=extra, verify_chunks=verify_chunks
            )
        )
    v2 = decl.spec == "zagg-pyramid/2"
    children = {}
    for level in pyramid_levels(manifest):
        # each level warns for itself when it cannot be opened (path_grouping > 1 omits overview levels only)
        ds = open_level_or_omit(
            storage,
            manifest,
            level.cell_order,
            window,
            aoi,
            index_kind=index_kind,
            named=False,
            verify_chunks=verify_chunks,
        )
        if ds is not None:
            children[f"o{level.cell_order}" if v2 else str(level.cell_order)] = xr.DataTree(ds)
    orders = structural_orders(children)
    if manifest.windowed:
        orders["overview"] = sorted(
            set(orders["overview"]) | other_window_overview_orders(storage, manifest, window, orders["overview"]),
            reverse=True,
        )
    attrs = {**identity, "zagg_pyramid": decl.to_attrs(), "moczarr_orders": orders}
    return xr.DataTree(xr.Dataset(attrs=attrs), children=children)


def other_window_overview_orders(storage: Storage, manifest, window: str | None, found: list[int]) -> set[int]:
    """Overview orders stamped in another window (or the all-time folds) though not in ``window``.

    ``overview_orders`` answers about the store, not the query: a level missing
    from the opened window still counts when any other window holds it. Only
    levels missing here are probed (one batched stamp read per window tried).
    """
    missing = [lv for lv in pyramid_levels(manifest) if lv.artifact == "overview" and lv.cell_order not in found]
    shards = root_shards(storage, manifest)
    if not missing or shards is None or manifest.path_grouping > 1:
        return set()
    stems = [w for w in list_windows(storage) if w != window] + ["all"]
    extra: set[int] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the opened levels already reported their objects
        for level in missing:
            for stem in stems:
                objects = overview_objects(storage, manifest, level, shards, stem)
                if any(o.entry["role"] == "overview" for o in objects):
                    extra.add(level.cell_order)
                    break
    return extra


def source_orders(node) -> tuple[int, ...]:
    """Every stored cell order of a product node carrying at least one source object (finest first)."""
    return (
        tuple(node.attrs["moczarr_orders"]["source"])
        if "moczarr_orders" in node.attrs
        else _orders_from(node, "source")
    )


def overview_orders(node) -> tuple[int, ...]:
    """Every stored cell order of a product node carrying at least one overview object (finest first)."""
    return (
        tuple(node.attrs["moczarr_orders"]["overview"])
        if "moczarr_orders" in node.attrs
        else _orders_from(node, "overview")
    )


def finest_source_at(node, k: int) -> int | None:
    """The finest source order at or above (coarser than or equal to) order ``k``, or None."""
    candidates = [r for r in source_orders(node) if r <= k]
    return max(candidates) if candidates else None


def _orders_from(node, role: str) -> tuple[int, ...]:
    children = dict(getattr(node, "children", {}) or {})
    if not children and "morton_hive" in node.attrs:
        # a flat (declared-off) product node holds the data itself: its own order is its source order
        return (int(node.attrs["morton_hive"]["cell_order"]),) if role == "source" else ()
    return tuple(structural_orders(children)[role])


__all__ = ["finest_source_at", "open_store", "overview_orders", "source_orders"]
