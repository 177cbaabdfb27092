"""A one-leaf raster morton-hive store with a toc time coordinate, written to the format without zagg.

:func:`write_raster_toc_store` lays out what zagg's raster writer produces for
gridded imagery (FORMAT.md §10.2): one leaf whose data group holds a ``time``
coordinate of ``mortie-toc/1`` words (one per acquisition group, a TIMESTAMP
for a single instant, a RANGE for a group spanning several granules), band
arrays ``(time, cells)`` chunked ``(1, cells per inner chunk)``, unsharded,
``[bytes, zstd]``, fill 0 (no data), and the dense ``morton`` coordinate; a
``zagg-pyramid/1`` declaration without fields (a raster product folds
nothing); no root MOC. Every cell holds data in some acquisition, and the leaf
still records its coverage as a bitmap sidecar.

The band values and acquisition times come from a seeded numpy RNG; the
returned expectations (the ``spec/raster_toc.expected.json`` shape) are
computed from those inputs with mortie, never read back. Timestamps of the
store itself are fixed, so the output is reproducible for a seed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import mortie
import numpy as np
import zarr
from zarr.codecs import ZstdCodec

from .hive import bitmap_sidecar, content_hashes, coverage_box, dggs_attrs, leaf_path

__all__ = ["ACQUISITIONS", "BANDS", "SHARD", "write_raster_toc_store"]

SHARD = "11213"
SHARD_ORDER = 4
CHUNK_ORDER = 5
CELL_ORDER = 6
WRITTEN_AT = "2025-06-22T00:00:00+00:00"
DATASET = {"short_name": "MOCZARR_RASTER_SAMPLE", "version": "1"}
#: (group key, granule acquisition instants, UTC); a group of several granules is one RANGE word
ACQUISITIONS = (
    ("dt-1", ("2025-06-15T15:06:38.118", "2025-06-15T15:06:51.003")),
    ("dt-2", ("2025-06-18T15:06:37.500", "2025-06-18T15:06:44.250", "2025-06-18T15:06:49.750")),
    ("dt-3", ("2025-06-21T15:06:40",)),
)
#: band -> (dtype, attrs, value range of a valid sample); 0 is no data
BANDS = {
    "red": ("uint16", {"scale_factor": 0.0001, "add_offset": -0.1}, (1000, 4000)),
    "scl": ("uint8", {}, (4, 7)),
}
TOC_COORDINATE = {"temporal": {"spec": "zagg-toc/1", "shape": "coordinate", "grammar": "mortie-toc/1"}}
PYRAMID = {
    "spec": "zagg-pyramid/1",
    "overview": {
        "spacing": 2,
        "orders": [2, 0],
        "all_time": False,
        "fold_source": "cascade",
        "exact_levels": 1,
        "fields": {},
    },
}


def time_word(instants) -> int:
    """The toc word of one acquisition group: the TIMESTAMP of its one instant, or the RANGE of its first to
    last (FORMAT.md §10.3), from UTC ISO strings."""
    ns = mortie.from_datetime64(np.asarray(instants, dtype="datetime64[ns]"))
    lo, hi = int(np.min(ns)), int(np.max(ns))
    return int(mortie.time2toc(lo) if lo == hi else mortie.span2toc(lo, hi))


def synthetic_bands(seed: int, n_times: int, n_cells: int) -> dict[str, np.ndarray]:
    """Band samples ``(time, cells)``: each cell lacks data in at most one acquisition, so every cell has some."""
    rng = np.random.default_rng(seed)
    missing = rng.integers(-1, n_times, n_cells)  # the acquisition a cell lacks (-1: none)
    out = {}
    for name, (dtype, _, (lo, hi)) in BANDS.items():
        values = rng.integers(lo, hi, (n_times, n_cells)).astype(dtype)
        values[missing[None, :] == np.arange(n_times)[:, None]] = 0
        out[name] = values
    return out


def _semantic_hash() -> str:
    core = {
        "bands": {k: v[0] for k, v in BANDS.items()},
        "grid": {"name": "morton", "latitude": "authalic-wgs84"},
        "pipeline": {"type": "raster"},
        "time": TOC_COORDINATE,
    }
    canonical = json.dumps(core, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _array(group: zarr.Group, name: str, data: np.ndarray, chunks, dims, attrs) -> None:
    arr = group.create_array(
        name,
        shape=data.shape,
        chunks=chunks,
        dtype=data.dtype,
        fill_value=0,
        compressors=ZstdCodec(level=3, checksum=False),
        filters=None,
        dimension_names=dims,
        attributes=attrs,
    )
    arr[...] = data


def _manifest() -> dict:
    """The store's manifest: its cell and shard orders and the declared overview pyramid (written first)."""
    return {
        "spec": "morton-hive/1",
        "dataset": dict(DATASET),
        "semantic_hash": _semantic_hash(),
        "cell_order": CELL_ORDER,
        "shard_order": SHARD_ORDER,
        "split_schedule": [1] * SHARD_ORDER,
        "path_grouping": 1,
        "pyramid": json.loads(json.dumps(PYRAMID)),
        "generated_at": WRITTEN_AT,
    }


def write_raster_toc_store(path, *, seed: int = 0, overwrite: bool = False) -> dict:
    """Write the store at ``path`` and return what it must hold, computed from the inputs.

    Raises ``FileExistsError`` when ``path`` exists and ``overwrite`` is false.
    """
    root = Path(path)
    if root.exists():
        if not overwrite:
            raise FileExistsError(f"{root} exists (pass overwrite=True to replace it)")
        shutil.rmtree(root)
    shard = np.asarray(mortie.decimal_to_word(np.asarray([SHARD])), dtype=np.uint64).reshape(-1)[0]
    cells = np.asarray(mortie.generate_morton_children(shard, CELL_ORDER), dtype=np.uint64).ravel()
    times = np.asarray([time_word(instants) for _, instants in ACQUISITIONS], dtype=np.uint64)
    bands = synthetic_bands(seed, times.size, cells.size)
    occupied = np.flatnonzero(np.any([(b != 0).any(axis=0) for b in bands.values()], axis=0))
    per_chunk = 4 ** (CELL_ORDER - CHUNK_ORDER)

    root.mkdir(parents=True)
    (root / "morton_hive.json").write_text(json.dumps(_manifest(), indent=1) + "\n")

    leaf = root / leaf_path(shard, None)
    top = zarr.open_group(str(leaf), mode="w", zarr_format=3)  # write order (FORMAT.md §4.4): metadata first
    group = top.create_group(str(CELL_ORDER), attributes=dggs_attrs(CELL_ORDER))
    arrays = {"morton": cells, "time": times, **bands}
    _array(group, "morton", cells, (per_chunk,), ["cells"], {})
    _array(group, "time", times, times.shape, ["time"], TOC_COORDINATE)
    for name, data in bands.items():
        _array(group, name, data, (1, per_chunk), ["time", "cells"], BANDS[name][1])
    payload, raw_nbytes = bitmap_sidecar(occupied, CELL_ORDER - SHARD_ORDER)
    (leaf / "coverage.moc").write_bytes(payload)
    granules = [f"{key}-{chr(97 + i)}" for key, instants in ACQUISITIONS for i in range(len(instants))]
    stamp = {
        "spec": "morton-hive/1",
        "complete": True,
        "cells_with_data": int(occupied.size),
        "granule_count": len(granules),
        "written_at": WRITTEN_AT,
        "coverage": {
            "spec": "morton-moc/1",
            "box": coverage_box(cells[occupied]),
            "cell_order": CELL_ORDER,
            "source": "builder",
            "encoding": "bitmap",
            "sidecar": "coverage.moc",
            "nbytes": len(payload),
            "raw_nbytes": raw_nbytes,
        },
        "content_hashes": content_hashes(str(CELL_ORDER), arrays),
    }
    top.update_attributes({"morton_hive_commit": stamp})  # the stamp, last

    bounds = [mortie.toc2time(int(w)) for w in times]
    return {
        "shard": SHARD,
        "leaf": leaf_path(shard, None),
        "group": str(CELL_ORDER),
        "shard_order": SHARD_ORDER,
        "chunk_order": CHUNK_ORDER,
        "cell_order": CELL_ORDER,
        "cells_per_chunk": per_chunk,
        "cells_per_shard": int(cells.size),
        "time_encoding": "toc",
        "time_attrs": TOC_COORDINATE,
        "time_words": [str(int(w)) for w in times],
        "time_bounds_ns": [[str(int(lo)), str(int(hi))] for lo, hi in bounds],
        "acquisitions": [{"key": key, "start": min(inst), "end": max(inst)} for key, inst in ACQUISITIONS],
        "granule_ids": granules,
        "morton": [str(int(w)) for w in cells],
        "bands": {name: data.tolist() for name, data in bands.items()},
    }
