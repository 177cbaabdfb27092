"""Intake drivers (the ``intake.drivers`` plugin generation).

- ``morton_hive``: a catalog over a store root. One entry per product (a bare
  store is one product), a level source with the parameter ``order`` and the
  keywords ``window`` (windowed products), ``aoi`` and the cell-order aliases;
  plus ``{product}_tree``, the product's DataTree.
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
from moczarr.metadata import ProductSummary, summarize_store

from .model.access import merge_storage_options
from .model.templates import AOI_HELP, none_if_blank, parse_aoi


class LazyXarraySource(DataSource):
    """A source whose object is an xarray object opened lazily once: ``to_dask()`` lazy, ``read()`` loaded.

    Subclasses implement :meth:`_open_object`; ``read()`` returns a loaded copy so
    the cached lazy object stays lazy.
    """

    container = "xarray"
    version = moczarr.__version__
    partition_access = False
    _object = None

    @property
    def open_options(self) -> dict | None:
        """The storage options an open uses: the caller's laid over the entry's published ones.

        A catalog entry records only where and how to reach the data
        (``metadata["storage_options"]``: anonymous access, endpoint, region);
        ``entry(storage_options={"key": ..., "secret": ...})`` adds credentials.
        """
        published = (self.metadata or {}).get("storage_options")
        return merge_storage_options(published if isinstance(published, dict) else None, self.storage_options)

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
    """One resolution of a morton-hive product as a lazy ``xarray.Dataset``.

    ``order``, ``cell_order``, ``zoom`` and ``level`` name the cell order (the
    native one when none is given); two different values raise
    :class:`~moczarr.errors.ArgumentTypeError`. ``order_parameter`` is what a
    catalog entry renders its ``order`` parameter into (see :func:`level_args`).
    """

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
        order_parameter: str | None = None,
    ):
        self.store_root = store_root
        # an entry renders its ``order`` parameter into order_parameter only when the caller gives one (it
        # declares no default), so order and a different alias are refused, as the version-2 readers refuse them
        order = resolve_cell_order(none_if_blank(order_parameter), order=none_if_blank(order))
        self.order = resolve_cell_order(
            none_if_blank(cell_order), order=order, zoom=none_if_blank(zoom), level=none_if_blank(level)
        )
        self.window = none_if_blank(window)
        self.aoi = parse_aoi(aoi)
        self.all_time = bool(all_time)
        super().__init__(storage_options=storage_options, metadata=metadata)

    def _open_object(self):
        return moczarr.open_level(
            self.store_root, self.order, self.window, self.aoi, self.all_time, storage_options=self.open_options
        )


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
            self.store_root, self.products, self.aoi, self.window, storage_options=self.open_options
        )


def level_parameters(product: ProductSummary) -> list[UserParameter]:
    """The declared user parameter of a product's level entry: ``order``, checked against the levels.

    Its type is ``other`` with no default, so intake passes a cell order only
    when the caller gives one (the entry then opens the native level), the
    reader can refuse ``order=`` together with a different ``zoom=``, and intake
    has no string to expand (intake 2.0.9 warns on every string parameter
    value). ``window`` and ``aoi`` are plain keyword arguments of the entry
    (:func:`level_args`, :data:`ENTRY_ARGUMENTS`), checked by the reader.
    """
    levels = ", ".join(f"{lv.cell_order} ({lv.artifact})" for lv in product.levels)
    return [
        UserParameter(
            "order",
            description=f"cell order (resolution) to open, default the native {product.native_order}; "
            f"levels: {levels} (zoom= and level= are aliases)",
            type="other",
            allowed=product.orders,
        )
    ]


#: keyword arguments every level entry takes besides ``order`` (described in its metadata, not declared to intake)
ENTRY_ARGUMENTS = {
    "aoi": AOI_HELP,
    "window": "time window label, one of the product's windows (metadata windows); default the first",
    "zoom": "alias of order",
    "level": "alias of order",
    "cell_order": "alias of order",
}


def entry_arguments(product: ProductSummary) -> dict[str, str]:
    """:data:`ENTRY_ARGUMENTS` that apply to ``product`` (``window`` only on windowed products)."""
    return {k: v for k, v in ENTRY_ARGUMENTS.items() if k != "window" or product.windowed}


def level_args(product: ProductSummary, root: str, storage_options: dict | None) -> dict:
    """The arguments of a level entry: the root, the templated ``order``, the first window, the storage options.

    The ``order`` parameter is rendered into ``order_parameter``, an argument of
    another name: intake would otherwise hand the source the unrendered template
    when the caller gives no order (the parameter has no default).
    """
    args: dict = {"store_root": root, "order_parameter": "{{ order }}"}
    if product.windowed:
        args["window"] = product.windows[0] if product.windows else None
    if storage_options:
        args["storage_options"] = storage_options
    return args


def tree_entry_args(product: ProductSummary, root: str, products: list[str] | None) -> dict:
    """The arguments of a tree entry: the root, the product of a multi-product root, the first window."""
    args: dict = {"store_root": root}
    if products:
        args["products"] = list(products)
    if product.windowed:
        args["window"] = product.windows[0] if product.windows else None
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
    metadata["arguments"] = entry_arguments(product)
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
    tree_args = tree_entry_args(product, store_root or root, [product_name] if product_name else None)
    if storage_options:
        tree_args["storage_options"] = storage_options
    tree = LocalCatalogEntry(
        f"{product.name}_tree",
        f"{title}: every stored order as a DataTree",
        MortonStoreSource,
        args=tree_args,
        parameters=[],
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
