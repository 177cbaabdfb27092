"""Intake YAML for stores: the ``version: 1`` driver form and the ``version: 2`` reader form.

Both are written from one :class:`~moczarr_intake.model.entries.CatalogEntries`
(names unique across every root, as the STAC ids are), with one
:class:`~moczarr_intake.model.hrefs.HrefPolicy` for store addresses and the same
storage options (their public part only, none for a store at an ``http(s)://``
href: :func:`moczarr_intake.model.access.href_storage_options`), so an entry of
either flavour reads exactly what ``moczarr.open_level`` / ``open_store`` read
on its own root. Writing a catalog reads no data.
"""

from __future__ import annotations

from pathlib import Path

from moczarr.metadata import ProductSummary, StoreSummary

from ..drivers import entry_arguments, level_args, level_parameters, tree_entry_args
from ..model.access import href_storage_options, is_http
from ..model.entries import CatalogEntries, ProductEntry, catalog_entries
from ..model.hrefs import HrefPolicy
from ..model.templates import AOI_HELP
from ..moraine_catalog import moraine_sources
from . import block as block_yaml

V1_DIR = "{{ CATALOG_DIR }}"
V2_DIR = "{CATALOG_DIR}"
#: user-parameter classes of intake 2 (``version: 2`` documents name them)
SIMPLE_PARAMETER = "intake.readers.user_parameters:SimpleUserParameter"


def _param_dict(product: ProductSummary) -> dict:
    out = {}
    for p in level_parameters(product):
        entry: dict = {"description": p.description, "type": p.type}
        if p.default is not None:
            entry["default"] = p.default
        if p.allowed is not None:
            entry["allowed"] = p.allowed
        out[p.name] = entry
    return out


def _entries(summaries, moraine) -> CatalogEntries:
    return summaries if isinstance(summaries, CatalogEntries) else catalog_entries(list(summaries), list(moraine))


def _title(product: ProductSummary) -> str:
    return product.dataset.get("short_name") or product.name


def v1_catalog(
    summaries: list[StoreSummary] | CatalogEntries,
    out_dir: Path,
    *,
    stac_hrefs: dict | None = None,
    storage_options=None,
    moraine=(),
    policy: HrefPolicy | None = None,
) -> dict:
    """The ``version: 1`` YAML document: per product a level source and a tree source, per pyramid its sources.

    ``summaries``: store summaries (or entries already named by :func:`catalog_entries`,
    which then also carry the pyramids); ``stac_hrefs`` maps product roots and
    pyramid paths to the written STAC documents. Of ``storage_options`` only
    the public part is written (:func:`moczarr_intake.model.access.href_storage_options`: none for a store at an
    ``http(s)://`` href), in each entry's arguments and metadata.
    """
    entries = _entries(summaries, moraine)
    policy = policy or HrefPolicy(out_dir)
    stac_hrefs = stac_hrefs or {}
    sources = {}
    for e in entries.products:
        sources[e.name] = _v1_level_source(e, policy, storage_options, stac_hrefs.get(e.product.root))
        sources[f"{e.name}_tree"] = _v1_tree_source(e, policy, storage_options)
    for m in entries.moraine:
        published = None if is_http(policy.yaml_location(m.info.path, V1_DIR)) else storage_options
        sources.update(
            moraine_sources(m.info, out_dir, stac_hrefs, storage_options=published, name=m.name, policy=policy)
        )
    return {"metadata": {"version": 1, "generator": "moczarr-catalog"}, "sources": sources}


def _v1_level_source(e: ProductEntry, policy: HrefPolicy, storage_options, stac_href: str | None) -> dict:
    """The ``morton_level`` source of one product (driver ``morton_level``)."""
    product = e.product
    root = policy.yaml_location(product.root, V1_DIR)
    options = href_storage_options(root, storage_options)
    metadata = product.metadata()
    metadata["store_root"] = root
    metadata["stac_collection"] = e.collection_id
    if stac_href:
        metadata["stac_href"] = stac_href
    metadata["arguments"] = entry_arguments(product)
    if options:
        metadata["storage_options"] = options
    windows = f"; windows {', '.join(product.windows)}" if product.windowed else ""
    return {
        "description": f"{_title(product)} v{product.dataset.get('version')} ({product.spec}), "
        f"product {product.name} of {e.collection_id}; cell orders {product.orders}{windows}",
        "driver": "morton_level",
        "args": level_args(product, root, options),
        "parameters": _param_dict(product),
        "metadata": metadata,
    }


def _v1_tree_source(e: ProductEntry, policy: HrefPolicy, storage_options) -> dict:
    """The ``morton_store`` source of one product: every stored order as a DataTree."""
    product = e.product
    root = policy.yaml_location(e.store.root, V1_DIR)
    options = href_storage_options(root, storage_options)
    args = tree_entry_args(product, root, [product.name] if e.multi else None)
    if options:
        args["storage_options"] = options
    metadata: dict = {"product": product.name, "store_root": args["store_root"]}
    if product.windowed:
        metadata["windows"] = list(product.windows)
    if options:
        metadata["storage_options"] = options
    return {
        "description": f"{_title(product)} ({e.collection_id}): every stored order as a DataTree",
        "driver": "morton_store",
        "args": args,
        "metadata": metadata,
    }


def _v2_level_entry(e: ProductEntry, key: str, lv, window: str | None, all_time: bool) -> dict:
    kwargs: dict = {"args": [f"{{data({key})}}"], "cell_order": lv.cell_order, "aoi": "{aoi}"}
    if window:
        kwargs["window"] = window
    if all_time:
        kwargs["all_time"] = True
    return {
        "kwargs": kwargs,
        "metadata": {
            "product": e.product.name,
            "stac_collection": e.collection_id,
            "cell_order": lv.cell_order,
            "artifact": lv.artifact,
            "window": window or ("all" if all_time else None),
            "variables": list(lv.variables),
        },
        "output_instance": "xarray:Dataset",
        "reader": "moczarr_intake.readers:MortonLevelReader",
        "user_parameters": {"aoi": {"cls": SIMPLE_PARAMETER, "dtype": "str", "default": "", "description": AOI_HELP}},
    }


def v2_catalog(
    summaries: list[StoreSummary] | CatalogEntries,
    out_dir: Path,
    *,
    storage_options=None,
    policy: HrefPolicy | None = None,
) -> dict:
    """The ``version: 2`` YAML document (intake readers).

    Per product a data entry ``store_{name}`` (a :class:`MortonHive` with the
    public part of the build's ``storage_options``: no credential, none at an
    ``http(s)://`` href), a level entry ``{name}_o{r}`` per level (and
    ``_{window}`` per window; ``_all`` for declared all-time folds) with an ``aoi``
    user parameter, and ``{name}_tree`` (the product's DataTree, per window on
    windowed products). Every entry has an alias, so ``list(cat)`` lists them.
    """
    entries = _entries(summaries, ())
    policy = policy or HrefPolicy(out_dir)
    data, readers = {}, {}
    for e in entries.products:
        product = e.product
        key = f"store_{e.name}"
        url = policy.yaml_location(product.root, V2_DIR)
        data[key] = {
            "datatype": "moczarr_intake.readers:MortonHive",
            "kwargs": {"url": url, "storage_options": href_storage_options(url, storage_options)},
            "metadata": {"product": product.name, "stac_collection": e.collection_id},
            "user_parameters": {},
        }
        decl = product.declaration
        for lv in product.levels:
            targets: list[tuple[str | None, bool]] = (
                [(w, False) for w in product.windows] if product.windowed else [(None, False)]
            )
            if product.windowed and lv.artifact == "overview" and decl and decl.all_time:
                targets.append((None, True))
            for window, all_time in targets:
                suffix = f"_{window}" if window else ("_all" if all_time else "")
                readers[f"{e.name}_o{lv.cell_order}{suffix}"] = _v2_level_entry(e, key, lv, window, all_time)
        tree_key = f"tree_{e.name}"
        tree_url = policy.yaml_location(e.store.root, V2_DIR)
        data[tree_key] = {
            "datatype": "moczarr_intake.readers:MortonHiveTree",
            "kwargs": {"url": tree_url, "storage_options": href_storage_options(tree_url, storage_options)},
            "metadata": {"store": e.store.root.rstrip("/").rsplit("/", 1)[-1]},
            "user_parameters": {},
        }
        for window in product.windows if product.windowed else [None]:
            kwargs: dict = {"args": [f"{{data({tree_key})}}"]}
            if e.multi:
                kwargs["products"] = [product.name]
            if window:
                kwargs["window"] = window
            readers[f"{e.name}_tree" + (f"_{window}" if window else "")] = {
                "kwargs": kwargs,
                "metadata": {"product": product.name, "stac_collection": e.collection_id, "window": window},
                "output_instance": "xarray:DataTree",
                "reader": "moczarr_intake.readers:MortonStoreReader",
                "user_parameters": {},
            }
    return {
        "aliases": {name: name for name in readers},
        "data": data,
        "entries": readers,
        "metadata": {"generator": "moczarr-catalog"},
        "user_parameters": {},
        "version": 2,
    }


def write_yaml(doc: dict, path: Path) -> Path:
    """``doc`` as block-style YAML at ``path`` (:func:`moczarr_intake.intake_yaml.block.dump`); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block_yaml.dump(doc), encoding="utf-8")
    return path
