"""One variable's values at picked cells, read at once in the calling thread, without dask.

:func:`~moczarr.dataplane.assemble.pick_cells` answers a pick with a lazy
Dataset; computing it builds, optimizes and runs a dask graph, which for a
few objects' reads (a map tile's) costs more than the reads. :func:`pick_values`
reads the same values through the variable's source directly.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from dask.base import compute

from ..errors import ArgumentError
from .assemble import CELLS, check_verifiable, picked_rows, source_of


def pick_values(arr: xr.DataArray, cells, *, verify_chunks: bool | None = None) -> np.ndarray:
    """The values of ``arr.isel(cells=cells)`` as a numpy array, read now, in the calling thread, without dask.

    ``arr`` is one variable of a Dataset with a ``cells`` dimension;
    ``cells`` and ``verify_chunks`` are as :func:`~moczarr.pick_cells` takes them, and
    the values are what ``pick_cells(...)[name].values`` gives (the dims in
    ``arr``'s order). A variable still exactly as opened reads only the
    objects holding the picked cells, through its source, checked against
    their recorded content hashes as :func:`~moczarr.pick_cells` checks them; any
    other (persisted, derived, stacked on ``window``) is ``isel``'s, computed
    with dask's synchronous scheduler. Raises as :func:`~moczarr.pick_cells` does.
    """
    if CELLS not in arr.dims:
        raise ArgumentError(f"pick_values: {arr.name!r} has no {CELLS!r} dimension (dims {arr.dims})")
    rows = picked_rows("pick_values", cells, arr.sizes[CELLS])
    source = source_of(arr.data) if arr.chunks else None
    check_verifiable("pick_values", verify_chunks, [] if source is None else [source])
    if source is None:
        (values,) = compute(arr.variable.isel({CELLS: rows}).data, scheduler="synchronous")
        return np.asarray(values)
    if not rows.size:
        shape = list(source.shape)
        shape[source.axis] = 0
        return np.empty(shape, dtype=source.dtype)
    return source.pick(rows, verify=verify_chunks is not False)[...]


__all__ = ["pick_values"]
