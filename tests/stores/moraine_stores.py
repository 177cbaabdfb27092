"""The moraine pyramids of the generated layer, written by :mod:`moczarr.testing.moraine` from seeded inputs.

The names and what each pyramid is follow ``../shared/fixtures/moraine/README.md``
(kinds, methods, level-0 shapes, dtypes, zarr formats, point counts, the
all-nan image, the legacy merge), so the reader tests hold for either layer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from moczarr.testing.moraine import write_point_cloud_pyramid, write_raster_pyramid

N_POINTS = 3000
GRID = (150, 100)  # (nlines, width) of the point grids


def field(shape: tuple[int, int], rng, phase: float) -> np.ndarray:
    """A smooth float32 surface with noise, values about -1.4 .. 1.3."""
    i, j = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    smooth = np.sin(i / 17.0 + phase) * np.cos(j / 23.0 - phase)
    return (smooth + rng.normal(0, 0.1, shape)).astype(np.float32)


def raster(rng) -> np.ndarray:
    """The (300, 200) raster shared by ras_mean_v1, ras_decimate_v1_zarr2, ras_legacy_090 and image 0 of the stack."""
    r = field((300, 200), rng, 0.3)
    r[rng.random(r.shape) < 0.0367] = np.nan
    return r


def grid_points(rng, origin: tuple[float, float], resolution: float, jitter: bool):
    """``N_POINTS`` points in distinct cells of :data:`GRID`, shuffled; the corner cells are always taken,
    so the grid spans the whole of it and its origin is the (0, 0) point. Only three points sit in the last
    line or column (the ones a legacy grid merges into the previous line or column)."""
    nlines, width = GRID
    inner = (np.arange(1, nlines - 1)[:, None] * width + np.arange(width - 1)[None, :]).ravel()
    edge = [nlines * width - 1, (nlines - 1) * width + 10, 40 * width + width - 1]
    cells = rng.choice(inner, size=N_POINTS - 1 - len(edge), replace=False)
    cells = np.concatenate([[0], edge, cells])
    rng.shuffle(cells)
    i, j = np.divmod(cells, width)
    if not jitter:
        return (origin[0] + j).astype(np.int32), (origin[1] + i).astype(np.int32), i, j
    ux = np.where(cells == 0, 0.0, rng.uniform(0, 0.4, cells.size)) * resolution
    uy = np.where(cells == 0, 0.0, rng.uniform(0, 0.4, cells.size)) * resolution
    return origin[0] + j * resolution + ux, origin[1] + i * resolution + uy, i, j


def write_all(out: Path) -> None:
    """Write the eight pyramids under ``out``."""
    rng = np.random.default_rng(2024)
    r = raster(rng)
    write_raster_pyramid(out / "ras_mean_v1", r, method="mean")
    write_raster_pyramid(out / "ras_decimate_v1_zarr2", r, method="decimate", zarr_format=2)
    write_raster_pyramid(out / "ras_legacy_090", r, legacy=True)
    stack = np.stack([r, field(r.shape, rng, 1.1) + 1.0, np.full(r.shape, np.nan, np.float32)], axis=-1)
    write_raster_pyramid(out / "stack_decimate_v1", stack, method="decimate")

    amplitude = rng.uniform(1.0, 1.2, (120, 80, 2))
    cpx = (amplitude * np.exp(1j * rng.uniform(-np.pi, np.pi, amplitude.shape))).astype(np.complex64)
    cpx[40:48, 30:34, 1] = np.nan
    write_raster_pyramid(out / "cpx_mean_v1", cpx, method="mean")

    x, y, i, _ = grid_points(rng, (999_996.5, 4_999_996.25), 20.0, jitter=True)
    pc = np.stack([np.sin(x / 700.0) * np.cos(y / 900.0), i.astype(np.float64)], axis=-1).astype(np.float32)
    write_point_cloud_pyramid(out / "pc_first_v1", x, y, pc, resolution=20.0, method="first")

    x, y, _, _ = grid_points(rng, (0, 0), 1.0, jitter=False)
    values = rng.integers(0, 7, N_POINTS).astype(np.int16)
    write_point_cloud_pyramid(out / "pc_int_mean_v1", x, y, values, resolution=1.0, method="mean")
    write_point_cloud_pyramid(out / "pc_int_legacy_090", x, y, values, resolution=1.0, rtree=False, legacy=True)
