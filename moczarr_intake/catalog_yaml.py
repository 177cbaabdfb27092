"""Intake YAML for stores: the ``version: 1`` driver form and the ``version: 2`` reader form.

Both are written from :class:`~moczarr_intake.summary.StoreSummary` records, so
writing a catalog reads no data. Local store paths under the catalog's folder
are written relative to ``{{ CATALOG_DIR }}`` so the catalog folder and the stores in it can move together.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from moczarr.metadata import ProductSummary, StoreSummary

from .drivers import level_parameters
from .hrefs import catalog_location
from .moraine_catalog import moraine_sources


def _param_dict(product: ProductSummary) -> dict:
    out = {}
    for p in level_parameters(product):
        entry = {"description": p.description, "type": p.type, "default": p.default}
        if p.allowed is not None:
            entry["allowed"] = p.allowed
        out[p.name] = entry
    return out


def _unique(name: str, taken) -> str:
    """``name``, or ``name_2``, ``name_3`` ... when an entry of that name (or its tree entry) exists."""
    candidate, n = name, 1
    while candidate in taken or f"{candidate}_tree" in taken:
        n += 1
        candidate = f"{name}_{n}"
    return candidate


def entry_name(summary: StoreSummary, product: ProductSummary, prefix: bool) -> str:
    base = product.name
    if prefix:
        base = f"{Path(summary.root.rstrip('/')).name}_{base}"
    return base.replace("-", "_").replace(".", "_")


def v1_catalog(summaries: list[StoreSummary], out_dir: Path, *, stac_hrefs: dict | None = None, storage_options=None, moraine=()) -> dict:
    """The ``version: 1`` YAML document: per product a level source and a tree source."""
    stac_hrefs = stac_hrefs or {}
    sources = {}
    prefix = len(summaries) > 1
    for summary in summaries:
        for product in summary.products:
            name = _unique(entry_name(summary, product, prefix), sources)
            root = catalog_location(product.root, out_dir, "{{ CATALOG_DIR }}")
            metadata = product.metadata()
            metadata["store_root"] = root
            href = stac_hrefs.get(product.root)
            if href:
                metadata["stac_href"] = href
            args = {"store_root": root, "order": "{{ order }}", "aoi": "{{ aoi }}"}
            if product.windowed:
                args["window"] = "{{ window }}"
            if storage_options:
                args["storage_options"] = storage_options
            title = product.dataset.get("short_name") or product.name
            sources[name] = {
                "description": f"{title} v{product.dataset.get('version')} ({product.spec}); cell orders {product.orders}",
                "driver": "morton_level",
                "args": args,
                "parameters": _param_dict(product),
                "metadata": metadata,
            }
            tree_args = {"store_root": catalog_location(summary.root, out_dir, "{{ CATALOG_DIR }}")}
            if summary.layout == "multi":
                tree_args["products"] = [product.name]
            tree_params = {}
            if product.windowed:
                tree_args["window"] = "{{ window }}"
                tree_params["window"] = _param_dict(product)["window"]
            if storage_options:
                tree_args["storage_options"] = storage_options
            sources[f"{name}_tree"] = {
                "description": f"{title}: every stored order as a DataTree",
                "driver": "morton_store",
                "args": tree_args,
                **({"parameters": tree_params} if tree_params else {}),
                "metadata": {"product": product.name, "store_root": tree_args["store_root"]},
            }
    for info in moraine:
        for name, entry in moraine_sources(info, out_dir, stac_hrefs, storage_options=storage_options).items():
            sources[_unique(name, sources)] = entry
    return {"metadata": {"version": 1, "generator": "moczarr-catalog"}, "sources": sources}


def v2_catalog(summaries: list[StoreSummary], out_dir: Path) -> dict:
    """The ``version: 2`` YAML document (intake readers): one entry per product and level."""
    data, entries = {}, {}
    prefix = len(summaries) > 1
    for summary in summaries:
        for product in summary.products:
            name = entry_name(summary, product, prefix)
            key = f"store_{name}"
            data[key] = {
                "datatype": "moczarr_intake.readers:MortonHive",
                "kwargs": {"url": catalog_location(product.root, out_dir, "{CATALOG_DIR}"), "storage_options": None},
                "metadata": {"product": product.name},
                "user_parameters": {},
            }
            for lv in product.levels:
                windows = product.windows or [None]
                for window in windows:
                    ename = f"{name}_o{lv.cell_order}" + (f"_{window}" if window else "")
                    kwargs = {"args": [f"{{data({key})}}"], "cell_order": lv.cell_order}
                    if window:
                        kwargs["window"] = window
                    entries[ename] = {
                        "kwargs": kwargs,
                        "metadata": {"product": product.name, "artifact": lv.artifact, "variables": lv.variables},
                        "output_instance": "xarray:Dataset",
                        "reader": "moczarr_intake.readers:MortonLevelReader",
                        "user_parameters": {},
                    }
    return {"aliases": {}, "data": data, "entries": entries, "metadata": {"generator": "moczarr-catalog"}, "user_parameters": {}, "version": 2}


def write_yaml(doc: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
    return path
