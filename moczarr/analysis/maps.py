"""Maps: cell centres as lon/lat coordinates and a quick plot of a level on its cell polygons.

Both work on any opened Dataset with a ``morton`` coordinate on ``cells``
(source, overview or column levels) and take every position from mortie
(``mort2geo``, ``mort2polygon``), in WGS84 geodetic degrees, longitudes in
``[-180, 180]``. Plotting needs matplotlib (the ``plot`` extra:
``pip install "moczarr[plot]"``).
"""

from __future__ import annotations

import mortie
import numpy as np
import xarray as xr

from ..dataplane.assemble import CELLS, COORD
from ..errors import MapError

PLOT_EXTRA = "plot"


def _words(ds: xr.Dataset) -> np.ndarray:
    if COORD not in ds.coords or ds[COORD].dims != (CELLS,):
        raise MapError(f"the Dataset has no {COORD!r} coordinate on {CELLS!r}; open it with a moczarr opener")
    return np.asarray(ds[COORD].values, dtype=np.uint64)


def _wrap(lon: np.ndarray) -> np.ndarray:
    out = (np.asarray(lon, dtype=np.float64) + 180.0) % 360.0 - 180.0
    out[(out == -180.0) & (np.asarray(lon) > 0)] = 180.0
    return out


def cell_centers(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with ``lon`` and ``lat`` coordinates on ``cells``: each cell's centre (mortie ``mort2geo``).

    Computes from the ``morton`` index (no data read). Raises
    :class:`~moczarr.errors.MapError` without a ``morton`` coordinate.
    """
    words = _words(ds)
    if words.size:
        lat, lon = mortie.mort2geo(words)
        lat, lon = np.atleast_1d(np.asarray(lat, dtype=np.float64)), _wrap(np.atleast_1d(lon))
    else:
        lat = lon = np.empty(0, dtype=np.float64)
    return ds.assign_coords(
        lon=(CELLS, lon, {"standard_name": "longitude", "units": "degrees_east"}),
        lat=(CELLS, lat, {"standard_name": "latitude", "units": "degrees_north"}),
    )


def cell_polygons(ds: xr.Dataset, step: int = 4) -> list[np.ndarray]:
    """Each cell's boundary, an ``(n, 2)`` array of ``[lon, lat]`` (mortie ``mort2polygon``, ``step`` points a side)."""
    words = _words(ds)
    if words.size == 0:
        return []
    rings = mortie.mort2polygon(words, step=step)
    if words.size == 1 and np.asarray(rings).ndim == 2:
        rings = [rings]
    out = []
    for ring in rings:
        ring = np.asarray(ring, dtype=np.float64)
        lon = ring[:, 1]
        if lon.max() - lon.min() > 180:  # a cell on the antimeridian: draw it on one side
            lon = np.where(lon < 0, lon + 360, lon)
        out.append(np.column_stack([_wrap(lon) if lon.max() <= 180 else lon, ring[:, 0]]))
    return out


def plot_cells(ds: xr.Dataset, var: str, ax=None, *, step: int = 4, cmap=None, colorbar: bool = True, **kwargs):
    """Draw ``ds[var]`` on the level's cell polygons in lon/lat with matplotlib; returns the Axes.

    ``var`` must be a 1-D variable on ``cells`` (select a window first on a
    ``time=`` open). NaN cells are left transparent. Extra keyword arguments
    go to ``matplotlib.collections.PolyCollection``. Raises ``ImportError``
    naming the ``plot`` extra when matplotlib is missing, and
    :class:`~moczarr.errors.MapError` for an unknown or non-1-D variable.
    """
    try:
        import matplotlib.pyplot as plt
        from matplotlib.collections import PolyCollection
    except ImportError:
        raise ImportError(
            f"moczarr.plot_cells needs matplotlib: install the '{PLOT_EXTRA}' extra "
            f'(pip install "moczarr[{PLOT_EXTRA}]")'
        ) from None
    if var not in ds.variables:
        raise MapError(f"no variable {var!r} in the Dataset (have: {', '.join(map(str, ds.data_vars))})")
    if ds[var].dims != (CELLS,):
        raise MapError(
            f"plot_cells draws one value per cell; {var!r} has dims {ds[var].dims} (select down to ({CELLS!r},))"
        )
    values = np.asarray(ds[var].values)
    if values.dtype.kind not in "iufb":
        raise MapError(f"{var!r} has dtype {values.dtype}; plot_cells draws numbers (decode ragged fields first)")
    polygons = cell_polygons(ds, step=step)
    if ax is None:
        _, ax = plt.subplots()
    coll = PolyCollection(polygons, array=np.ma.masked_invalid(values.astype(np.float64)), cmap=cmap, **kwargs)
    ax.add_collection(coll)
    if polygons:
        pts = np.concatenate(polygons)
        ax.set_xlim(pts[:, 0].min(), pts[:, 0].max())
        ax.set_ylim(pts[:, 1].min(), pts[:, 1].max())
    ax.set_xlabel("longitude (degrees)")
    ax.set_ylabel("latitude (degrees)")
    ax.set_aspect("equal", adjustable="box")
    if colorbar and polygons:
        ax.figure.colorbar(coll, ax=ax, label=var)
    return ax


__all__ = ["cell_centers", "cell_polygons", "plot_cells"]
