"""Cross-resolution arithmetic on opened Datasets: no I/O, prefix = ancestor (FORMAT.md §1.4).

``parent_cells`` gives each fine row its ancestor at a coarser order (the key
of a fine -> coarse groupby); ``join_coarse`` broadcasts a coarse level onto a
fine one's rows. Both work on any Dataset with a ``morton`` coordinate on
``cells`` (source, overview or column levels alike).
"""

from __future__ import annotations

import mortie
import numpy as np
import xarray as xr

from ..dataplane.assemble import CELLS, COORD
from ..errors import ArgumentError, MixedOrderError


def _order_of(ds: xr.Dataset) -> int:
    info = ds.attrs.get("morton_hive") or {}
    if "cell_order" in info:
        return int(info["cell_order"])
    words = np.asarray(ds[COORD].values, dtype=np.uint64)
    try:
        return int(mortie.infer_order_from_morton(words))
    except ValueError as exc:
        raise MixedOrderError(f"the morton coordinate mixes orders: {exc}") from None


def parent_cells(ds: xr.Dataset, order: int) -> xr.DataArray:
    """Each row's ancestor word at ``order`` (``order`` <= the Dataset's cell order), named ``parent``.

    Use it as a groupby key: ``ds.groupby(parent_cells(ds, 6)).sum()``.
    Raises ``ValueError`` when ``order`` is finer than the Dataset's cells.
    """
    own = _order_of(ds)
    if order > own:
        raise ArgumentError(f"order {order} is finer than the Dataset's cell order {own}")
    words = np.asarray(ds[COORD].values, dtype=np.uint64)
    parents = np.asarray(mortie.clip2order(order, words), dtype=np.uint64) if words.size else words
    return xr.DataArray(parents, dims=(CELLS,), name="parent", attrs={"order": order})


def join_coarse(fine: xr.Dataset, coarse: xr.Dataset, *, suffix: str = "") -> xr.Dataset:
    """``fine`` with every ``cells`` variable of ``coarse`` broadcast onto its rows.

    Each fine row takes the values of the coarse cell containing it; rows
    whose ancestor is not in ``coarse`` get NaN (or the dtype's missing
    value). Variables are renamed ``{name}{suffix}`` (pass a suffix when names
    collide). Lazy variables stay lazy.
    """
    co = _order_of(coarse)
    parents = parent_cells(fine, co).values
    have = np.asarray(coarse[COORD].values, dtype=np.uint64)
    pos = np.searchsorted(have, parents)
    clipped = np.minimum(pos, max(have.size - 1, 0))
    found = (pos < have.size) & (have[clipped] == parents) if have.size else np.zeros(parents.size, bool)
    out = fine.copy()
    picker = xr.DataArray(clipped, dims=(CELLS,))
    mask = xr.DataArray(found, dims=(CELLS,))
    for name, var in coarse.data_vars.items():
        if CELLS not in var.dims:
            continue
        target = f"{name}{suffix}"
        if target in out:
            raise ArgumentError(f"variable {target!r} exists in the fine Dataset; pass suffix=")
        if have.size:
            taken = var.variable.isel({CELLS: picker.values})
            joined = xr.DataArray(taken, dims=var.dims)
            if not found.all():
                joined = joined.where(mask)
        else:  # nothing to take from: every row is missing, the schema stays
            shape = tuple(parents.size if d == CELLS else n for d, n in zip(var.dims, var.shape, strict=True))
            joined = xr.DataArray(np.zeros(shape, dtype=var.dtype), dims=var.dims).where(False)
        out[target] = joined.assign_attrs(var.attrs)
    return out


#: exact-class fold laws (FORMAT.md §7.1): the reduction that folds four children into their parent
FOLD_LAWS = {
    "sum": "sum",
    "count": "sum",
    "len": "sum",
    "nansum": "sum",
    "min": "min",
    "nanmin": "min",
    "max": "max",
    "nanmax": "max",
}


def compose(levels, cell_order: int, *, methods: dict[str, str] | None = None) -> xr.Dataset:
    """The seamless order-``cell_order`` view of a product: coarsen where finer, pass through where equal.

    ``levels``: a product node of :func:`moczarr.open_store` (a DataTree whose
    children are level Datasets) or an iterable of level Datasets. Every
    **source** level at or finer than ``cell_order`` contributes; finer ones are
    folded with each field's exact law (from the declared ``fields``, or
    ``methods={"count": "sum", ...}``); fields without a law are left out. The
    result is computed (a materialized ``morton`` index), never stored, never a
    tree node. Raises ``ValueError`` when no source level is at or finer than
    ``cell_order``.
    """
    datasets = [c.ds for c in levels.children.values()] if isinstance(levels, xr.DataTree) else list(levels)
    if isinstance(levels, xr.DataTree) and not datasets and levels.ds.data_vars:
        datasets = [levels.ds]  # a flat product node holds its source level itself
    sources = [
        ds
        for ds in datasets
        if (ds.attrs.get("zagg_level") or {}).get("artifact", "source") == "source" and _order_of(ds) >= cell_order
    ]
    if not sources:
        raise ArgumentError(f"no source level at or finer than cell order {cell_order}")
    laws = dict(methods or {})
    for ds in sources:
        for name, spec in ((ds.attrs.get("zagg_level") or {}).get("fields") or {}).items():
            if isinstance(spec, dict) and spec.get("class") == "exact" and spec.get("method") in FOLD_LAWS:
                laws.setdefault(name, FOLD_LAWS[spec["method"]])
    parts = []
    for ds in sources:
        if _order_of(ds) == cell_order:
            parts.append(_plain(ds))
            continue
        keep = [v for v in ds.data_vars if v in laws and CELLS in ds[v].dims]
        key = parent_cells(ds, cell_order).values
        folded = {}
        parents, inverse = np.unique(key, return_inverse=True)
        for name in keep:
            values = np.asarray(ds[name].values)
            folded[name] = (CELLS, _fold(values, inverse, parents.size, laws[name]))
        parts.append(xr.Dataset(folded, coords={COORD: (CELLS, parents)}))
    out = xr.concat(parts, dim=CELLS, join="outer") if len(parts) > 1 else parts[0]
    order = np.argsort(out[COORD].values, kind="stable")
    out = out.isel({CELLS: order})
    out.attrs = {
        "moczarr_composed": {
            "cell_order": cell_order,
            "from_orders": sorted({_order_of(d) for d in sources}, reverse=True),
        }
    }
    return out


def _plain(ds: xr.Dataset) -> xr.Dataset:
    """A level's variables on a plain (materialized) morton coordinate."""
    words = np.asarray(ds[COORD].values, dtype=np.uint64)
    out = xr.Dataset(
        {v: (ds[v].dims, ds[v].values) for v in ds.data_vars if CELLS in ds[v].dims}, coords={COORD: (CELLS, words)}
    )
    return out


def _fold(values: np.ndarray, inverse: np.ndarray, n: int, law: str) -> np.ndarray:
    """Reduce ``values`` into ``n`` groups; missing (NaN) members are skipped, all-missing groups stay missing."""
    if law == "sum":
        out = np.zeros(n, dtype=values.dtype)
        np.add.at(out, inverse, np.where(np.isnan(values), 0, values) if values.dtype.kind == "f" else values)
        return out
    ufunc = np.fmin if law == "min" else np.fmax
    start = np.full(
        n,
        np.nan
        if values.dtype.kind == "f"
        else (np.iinfo(values.dtype).max if law == "min" else np.iinfo(values.dtype).min),
        dtype=values.dtype,
    )
    ufunc.at(start, inverse, values)
    return start
