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

from .assemble import CELLS, COORD
from .errors import MixedOrderError


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
        raise ValueError(f"order {order} is finer than the Dataset's cell order {own}")
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
        if name + suffix in out:
            raise ValueError(f"variable {name + suffix!r} exists in the fine Dataset; pass suffix=")
        if have.size:
            taken = var.variable.isel({CELLS: picker.values})
            joined = xr.DataArray(taken, dims=var.dims)
            if not found.all():
                joined = joined.where(mask)
        else:  # nothing to take from: every row is missing, the schema stays
            shape = tuple(parents.size if d == CELLS else n for d, n in zip(var.dims, var.shape))
            joined = xr.DataArray(np.zeros(shape, dtype=var.dtype), dims=var.dims).where(False)
        out[name + suffix] = joined.assign_attrs(var.attrs)
    return out
