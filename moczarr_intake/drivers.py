"""Intake drivers (the ``intake.drivers`` plugin generation).

- ``morton_hive``: a catalog over a store root. One entry per product (a bare
  store is one product), a level source with parameters ``order``, ``window``
  (windowed products) and ``aoi``; plus ``{product}_tree``, the product's DataTree.
- ``morton_level``: a level source, ``read()``/``to_dask()`` -> :func:`moczarr.open_level`.
- ``morton_store``: a tree source, ``read()``/``to_dask()`` -> :func:`moczarr.open_store`.

Entry metadata comes from :func:`moczarr.metadata.summarize_store`, so listing a catalog
reads no data.
"""

from __future__ import annotations

import xarray as xr
from intake.catalog.base import Catalog
from intake.catalog.local import LocalCatalogEntry, UserParameter
from intake.source.base import DataSource, Schema

import moczarr
from moczarr import resolve_cell_order
from moczarr.errors import LevelOmittedError
from moczarr.metadata import ProductSummary, summarize_store

from .params import AOI_HELP, none_if_blank, parse_aoi


class LazyXarraySource(DataSource):
    """A source whose object is an xarray object opened lazily once: ``to_dask()`` lazy, ``read()`` loaded.

    Subclasses implement :meth:`_open_object`; ``read()`` returns a loaded copy so
    the cached lazy object stays lazy.
    """

    container = "xarray"
    version = moczarr.__version__
    partition_access = False
    _object = None

    def _open_object(self):
        raise NotImplementedError

    def _open(self):
        if self._object is None:
            self._object = self._open_object()
        return self._object

    def _get_schema(self):
        obj = self._open()
        sizes = dict(obj.sizes) if hasattr(obj, "sizes") else {}
        names = (
            list(getattr(obj, "data_vars", {})) if not isinstance(obj, xr.DataTree) else [n.path for n in obj.subtree]
        )
        return Schema(
            datashape=None, dtype=None, shape=None, npartitions=1, extra_metadata={"dims": sizes, "variables": names}
        )

    def to_dask(self):
        """The lazy xarray object (dask-backed variables)."""
        return self._open()

    def read(self):
        """The object with every variable loaded into memory."""
        return self._open().compute()

    def _close(self):
        self._object = None


class MortonLevelSource(LazyXarraySource):
    """One resolution of a morton-hive product as a lazy ``xarray.Dataset``."""

    name = "morton_level"

    def __init__(
        self,
        store_root: str,
        order: int | None = None,
        window: str | None = None,
        aoi=None,
        all_time: bool = False,
        storage_options: dict | None = None,
        metadata: dict | None = None,
        *,
        cell_order: int | None = None,
        zoom: int | None = None,
        level: int | None = None,
    ):
        self.store_root = store_root
        # the aliases, when given, override the entry's templated ``order`` parameter
        alias = resolve_cell_order(none_if_blank(cell_order), zoom=none_if_blank(zoom), level=none_if_blank(level))
        self.order = alias if alias is not None else resolve_cell_order(none_if_blank(order))
        self.window = none_if_blank(window)
        self.aoi = parse_aoi(aoi)
        self.all_time = bool(all_time)
        super().__init__(storage_options=storage_options, metadata=metadata)

    def _open_object(self):
        ds = moczarr.open_level(
            self.store_root, self.order, self.window, self.aoi, self.all_time, storage_options=self.storage_options
        )
        if ds is None:
            level = "the native level" if self.order is None else f"level o{self.order}"
            raise LevelOmittedError(
                f"{self.store_root}: {level} has no materialized objects (see the LevelOmittedWarning)"
            )
        return ds


class MortonStoreSource(LazyXarraySource):
    """A morton-hive store (or some of its products) as an ``xarray.DataTree``."""

    name = "morton_store"

    def __init__(
        self,
        store_root: str,
        products=None,
        window: str | None = None,
        aoi=None,
        storage_options: dict | None = None,
        metadata: dict | None = None,
    ):
        self.store_root = store_root
        self.products = [products] if isinstance(products, str) and products else (list(products) if products else None)
        self.window = none_if_blank(window)
        self.aoi = parse_aoi(aoi)
        super().__init__(storage_options=storage_options, metadata=metadata)

    def _open_object(self):
        return moczarr.open_store(
            self.store_root, self.products, self.aoi, self.window, storage_options=self.storage_options
        )


def level_parameters(product: ProductSummary) -> list[UserParameter]:
    """The user parameters of a product's level entry: ``order``, ``window`` (windowed only), ``aoi``."""
    params = [
        UserParameter(
            "order",
            description="cell order (resolution) to open; levels: "
            + ", ".join(f"{lv.cell_order} ({lv.artifact})" for lv in product.levels),
            type="int",
            default=product.native_order,
            allowed=product.orders,
        )
    ]
    if product.windowed:
        params.append(
            UserParameter(
                "window",
                description="time window label",
                type="str",
                default=product.windows[0] if product.windows else "",
                allowed=product.windows or None,
            )
        )
    params.append(UserParameter("aoi", description=AOI_HELP, type="str", default=""))
    return params


def level_args(product: ProductSummary, root: str, storage_options: dict | None) -> dict:
    args: dict[str, object] = {"store_root": root, "order": "{{ order }}", "aoi": "{{ aoi }}"}
    if product.windowed:
        args["window"] = "{{ window }}"
    if storage_options:
        args["storage_options"] = storage_options
    return args


def product_entries(
    product: ProductSummary,
    root: str,
    *,
    storage_options=None,
    catalog=None,
    stac_href=None,
    store_root=None,
    product_name=None,
) -> dict[str, LocalCatalogEntry]:
    """The level entry and the tree entry of one product."""
    metadata = product.metadata()
    if stac_href:
        metadata["stac_href"] = stac_href
    title = product.dataset.get("short_name") or product.name
    level = LocalCatalogEntry(
        product.name,
        f"{title} v{product.dataset.get('version')} ({product.spec}), cell orders {product.orders}",
        MortonLevelSource,
        args=level_args(product, root, storage_options),
        parameters=level_parameters(product),
        metadata=metadata,
        catalog=catalog,
    )
    tree_args = {"store_root": store_root or root}
    if product_name:
        tree_args["products"] = [product_name]
    if product.windowed:
        tree_args["window"] = "{{ window }}"
    if storage_options:
        tree_args["storage_options"] = storage_options
    tree = LocalCatalogEntry(
        f"{product.name}_tree",
        f"{title}: every stored order as a DataTree",
        MortonStoreSource,
        args=tree_args,
        parameters=[p for p in level_parameters(product) if p.name == "window"],
        metadata=metadata,
        catalog=catalog,
    )
    return {level.name: level, tree.name: tree}


class MortonHiveCatalog(Catalog):
    """A catalog over one morton-hive store root (bare or multi-product)."""

    name = "morton_hive"
    version = moczarr.__version__
    metadata: dict  # set by intake's Catalog.__init__

    def __init__(self, store_root: str, storage_options: dict | None = None, stac_hrefs: dict | None = None, **kwargs):
        self.store_root = str(store_root)
        self.stac_hrefs = stac_hrefs or {}
        super().__init__(storage_options=storage_options, **kwargs)

    def _load(self):
        summary = summarize_store(self.store_root, self.storage_options)
        self._entries = {}
        for product in summary.products:
            multi = summary.layout == "multi"
            self._entries.update(
                product_entries(
                    product,
                    product.root,
                    storage_options=self.storage_options,
                    catalog=self,
                    stac_href=self.stac_hrefs.get(product.name),
                    store_root=self.store_root,
                    product_name=product.name if multi else None,
                )
            )
        self.metadata = {**(self.metadata or {}), "store_root": self.store_root, "layout": summary.layout}
