"""Real morton-hive stores written by zagg's own writer, from seeded synthetic points.

Every byte of a store comes from the installed zagg (pinned in the ``test``
extra): the local dispatcher ``zagg.agg(config, catalog=..., store=...,
backend="local")`` with its end-of-run sweeps (``/1`` overviews and all-time
folds, the ``/2`` column ladder), leaf versions on a second run, zagg's
pyramid retrofit (``declare_pyramid``), and zagg's own leaf-template emitter
for an unstamped debris leaf. The one seam is HDF5 input:
``zagg.processing.h5coro`` is pointed at :class:`MemoryGranule`, which serves
the synthetic points of this module as ATL06 land-ice-segment datasets (plus
per-surface signal confidences for a stratified product, waveform sample
counts for a flux one). Afterwards a
store may lose its root MOC or everything but its manifest, as zagg's
conformance stores do, and the bare ``composition`` array is a copy of one a
leaf holds.

Beside each store, a golden records what it must hold, computed from the input
points with numpy/pandas and mortie only (never with zagg's or a reader's
output): products, orders, leaf rosters, per-variable totals and exact-field
truth per cell order; for the ``spec/*`` stores, per-cell counts, the digests
of cells of at most ``delta`` points (loss-free, so one centroid per point)
and composition words by the FORMAT.md §9.4 law. The exceptions are the
provenance blocks of the overview objects in ``overview_hive.golden.json`` and
of the leaf column in ``spec/*.expected.json`` (content hashes, generation
timestamps), which only the writer can know; they are read as raw JSON from
the object's ``zarr.json`` next to input-computed rosters and values.

The generated tree mirrors the names of ``../shared/fixtures`` (see
:data:`STORES`), so a test names a store the same way in either layer; the
one store of its own is ``arctic_hive`` (data from 65°N to the North pole,
which no shared store holds), read from :func:`tests.helpers.generated_dir`.
:func:`write_all` writes them all into one folder; the cache in
:mod:`tests.stores.cache` calls it once per zagg version and generator source.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import types
import warnings
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import mortie
import numpy as np
import pandas as pd
from mortie.morton_index import MortonIndexArray

BEAMS = ("gt1l", "gt1r", "gt2l", "gt2r", "gt3l", "gt3r")
SEGMENT = "/{group}/land_ice_segments/{name}"
ATLAS_EPOCH = datetime(2018, 1, 1, tzinfo=UTC)
FLOAT_VARS = ("h_min", "h_max", "h_mean", "h_sigma", "h_variance", "h_q25", "h_q50", "h_q75")
QUANTILES = {"h_q25": 0.25, "h_q50": 0.50, "h_q75": 0.75}
#: The composability class (D24) zagg gives each field of the default atl06 aggregation.
FIELD_CLASSES = {
    "count": "exact",
    "h_min": "exact",
    "h_max": "exact",
    **dict.fromkeys(("h_mean", "h_sigma", "h_variance", "h_q25", "h_q50", "h_q75"), "none"),
}
FLOAT_RTOL = 1e-5  # zagg reduces float32 inputs; the goldens reduce in float64

#: Shard rosters (order 6). ``ONES`` sits in base cell 1; ``SERC`` is the
#: Smithsonian (SERC) area the real serc_hive covers, in base cell 4.
ONES = ("1111111", "1111112", "1111114", "1111121", "1111122", "1111123", "1111124", "1111144")
SERC = ("4331244", "4331421", "4331422", "4331424", "4332133", "4332311")
SERC_DEBRIS = "4332313"

#: The located t-digest ragged field (zagg-ragged/1 payload of (mean, weight)
#: float32 centroids plus a ``h_tdigest_locations`` sibling).
TDIGEST = {
    "kind": "ragged",
    "function": "zagg.stats.tdigest.build_tdigest",
    "source": "h_li",
    "location": "leaf_id",
    "inner_shape": [2],
    "params": {"delta": 16},
    "overview_delta": 16,
    "dtype": "float32",
    "fill_value": 0,
}
#: The dense per-cell toc envelope of a temporal product (0 = unobserved).
OBSERVED = {
    "function": "zagg.stats.toc.cell_envelope",
    "source": "toc_word",
    "dtype": "uint64",
    "fill_value": 0,
    "temporal": "per-cell",
}


#: The signal/noise strata and the composition word of a stratified product (zagg's ATL03 strata template, on
#: the five per-surface signal confidences each synthetic point carries).
SURFACES = ("land", "ocean", "sea_ice", "land_ice", "inland_water")
SIGNAL_THRESHOLD = 2
SIGNAL = " | ".join(f"(signal_conf_{s} >= {SIGNAL_THRESHOLD})" for s in SURFACES)
STRATA = {
    "h_tdigest_signal": {"where": SIGNAL, "stratum": "signal"},
    "h_tdigest_noise": {"where": f"~({SIGNAL})", "stratum": "noise"},
}
COMPOSITION = {
    "function": "zagg.stats.composition.pack_composition",
    "source": "h_li",
    "dtype": "uint64",
    "fill_value": 0,
    "params": {**{f"conf_{s}": f"signal_conf_{s}" for s in SURFACES}, "threshold": SIGNAL_THRESHOLD},
    "attrs": {
        "composition": {
            "spec": "zagg-composition/1",
            "lanes": [*SURFACES, "low", "med", "high"],
            "of": "h_tdigest_signal",
            "threshold": SIGNAL_THRESHOLD,
        }
    },
}

#: The flux digest: zagg's waveform reducer over per-point sample counts of one photoelectron each on no noise,
#: so every observation weighs the gain and the digest has the centroids of the count digest (FORMAT.md §9.2).
FLUX_GAIN = 1.37
FLUX_GAIN_ATTRS = {"name": "synthetic-gain", "version": "1"}
FLUX_COLUMNS = {"counts": "wf_counts", "noise_mean": "wf_noise_mean", "noise_stddev": "wf_noise_stddev"}


@dataclass(frozen=True)
class Product:
    """One product to write: its leaves, windows, pyramid and extra fields.

    ``cells`` fixes the occupied cells of chosen ``(shard, window)`` leaves
    (decimal cell ids); every other leaf follows the full/one/quarter/sixty
    occupancy cycle. ``absent`` removes ``(shard, window)`` leaves. ``append``
    writes a second run adding points to every third shard (new leaf versions).
    ``path_grouping`` > 1 re-lays zagg's leaves into grouped paths afterwards
    (zagg writes only 1; FORMAT.md §1.5, §14 #3). ``sweep`` overrides the
    end-of-run sweep (``True``: families only, so a ``/2`` store keeps its leaf
    columns but no overviews). ``redeclare`` re-declares the pyramid after the
    run with zagg's retrofit and runs again; ``manifest_only`` then keeps only
    the manifest. ``flux`` makes the digest a ``weights: "flux"`` field
    (zagg's waveform reducer, calibrated by :data:`FLUX_GAIN`). ``strata`` adds
    located signal/noise digests and the composition word (:data:`STRATA`).
    """

    shards: tuple[str, ...]
    windows: tuple[str, ...] = ()
    schedule: str = "yearly"
    pyramid: dict | bool = False
    leaf_versions: bool = False
    append: bool = False
    chunk_inner: int | None = None
    ragged: bool = False
    ragged_name: str = "h_tdigest"
    located: bool = True
    short_name: str = "ATL06"
    root_moc: bool = True
    temporal: bool = False
    debris: tuple[str, ...] = ()
    cells: dict = field(default_factory=dict)
    absent: frozenset = frozenset()
    seed: int = 0
    shard_order: int = 6
    cell_order: int = 8
    path_grouping: int = 1
    sweep: str | bool | None = None
    redeclare: dict | None = None
    manifest_only: bool = False
    flux: bool = False
    strata: bool = False


def _v1(orders, all_time=False):
    return {"orders": list(orders), **({"all_time": True} if all_time else {})}


YEARS = ("2019", "2020", "2021")
#: the pre-#376 exact-from-leaves overview fold (what the shared overview_hive was swept with)
LEAVES_FOLD = {"fold_source": "leaves"}
#: 4331421's five cells sit in {43314212, 43314214}: an AOI on 43314211 misses its box
SERC_CELLS = {
    ("4331421", None): ("433142121", "433142124", "433142132", "433142141", "433142143"),
    ("4331422", None): ("433142224",),
}


def _north_of(shards: tuple[str, ...], order: int, lat: float, seed: int) -> dict:
    """The fixed cells of ``shards``: each order-``order`` child whose centre lies at or north of ``lat``, but a
    seeded tenth left empty (holes a map tile's mask must show)."""
    rng = np.random.default_rng(seed)
    cells = {}
    for shard in shards:
        (word,) = np.asarray(mortie.decimal_to_word(np.asarray([shard])), dtype=np.uint64).reshape(-1)
        kids = np.sort(np.asarray(mortie.generate_morton_children(word, order), dtype=np.uint64))
        centre_lat = np.asarray(mortie.mort2geo(kids)[0], dtype=np.float64)
        kept = kids[(centre_lat >= lat) & (rng.random(kids.size) >= 0.1)]
        assert kept.size, f"shard {shard} has no cell north of {lat}"
        cells[(shard, None)] = tuple(MortonIndexArray.from_words(kept).decimal_repr())
    return cells


#: The Arctic: the order-2 cells of the four northern polar base cells' pole quarters (each base cell's
#: ``4`` child touches the pole; base cells 2 and 3 meet at the antimeridian), occupied from 65°N to the pole.
ARCTIC = tuple(f"{base}4{child}" for base in "1234" for child in "1234")
#: One leaf 11213 (shard order 4, cell order 6) in chunks of order 5 with four occupied cells, an unlocated
#: digest, a /2 column at order 5, no root MOC: the shape of zagg's conformance stores spec/minimal, spec/versioned.
SPEC_LIKE = {
    "shard_order": 4,
    "cell_order": 6,
    "chunk_inner": 5,
    "ragged": True,
    "located": False,
    "short_name": "SPEC_FIXTURE",
    "pyramid": {"overviews": [5]},
    "root_moc": False,
    "seed": 51,
    "cells": {("11213", None): ("1121311", "1121313", "1121322", "1121344")},
}
#: The twins of zagg's other one-feature conformance stores: ``spec/column`` swept families-only (its leaf
#: column and no overview), ``spec/temporal`` with located, per-centroid timed digests, per-cell toc envelopes
#: and a root MOC, ``spec/flux`` with a ``weights: "flux"`` digest, ``spec/pyramid`` the manifest of a ``/1``
#: store re-declared ``/2`` (leaf entry [5, 4] at shard order 3, the ``/1`` ``materialized`` kept),
#: ``spec/kitchen_sink`` with located signal/noise strata and the composition word.
#: name -> {product path ("" = bare store): Product}; names follow ../shared/fixtures.
STORES: dict[str, dict[str, Product]] = {
    "zagg/single_8": {"": Product(ONES, seed=1)},
    "zagg/windowed": {"": Product(ONES, windows=YEARS, seed=2)},
    "zagg/versioned": {"": Product(ONES, leaf_versions=True, append=True, seed=3)},
    "zagg/pyramid": {"": Product(ONES, pyramid=_v1([4, 2]), seed=4)},
    "zagg/pyramid_windows": {"": Product(ONES, windows=YEARS, schedule="explicit", pyramid=_v1([4, 2], True), seed=5)},
    "zagg/column": {"": Product(ONES[:6], pyramid={"overviews": [7]}, chunk_inner=7, seed=6)},
    "zagg/single_ragged": {"": Product(ONES, ragged=True, debris=("1111113",), seed=7)},
    "zagg/pyramid_temporal": {
        "": Product(ONES[:6], windows=YEARS, pyramid=_v1([4, 2], True), ragged=True, temporal=True, seed=8)
    },
    "zagg/multi": {
        "atl06": Product(ONES[:6], seed=11),
        "atl06_windows": Product(ONES[:6], windows=YEARS, seed=12),
        "atl06_pyramid": Product(ONES[:6], pyramid=_v1([4, 2]), seed=13),
        "atl06_column": Product(ONES[:4], pyramid={"overviews": [7]}, seed=14),
        "atl06_versioned": Product(ONES[:4], leaf_versions=True, append=True, seed=15),
    },
    "spec/minimal": {"": Product(("11213",), **SPEC_LIKE)},
    "spec/versioned": {"": Product(("11213",), leaf_versions=True, **{**SPEC_LIKE, "seed": 52})},
    "spec/column": {"": Product(("11213",), sweep=True, **{**SPEC_LIKE, "seed": 53})},
    "spec/temporal": {
        "": Product(("11213",), temporal=True, **{**SPEC_LIKE, "located": True, "root_moc": True, "seed": 54})
    },
    "spec/flux": {"": Product(("11213",), flux=True, **{**SPEC_LIKE, "ragged_name": "rx_flux", "seed": 55})},
    "spec/kitchen_sink": {"": Product(("11213",), strata=True, **{**SPEC_LIKE, "ragged": False, "seed": 57})},
    "spec/pyramid": {
        "": Product(
            ("1121",),
            shard_order=3,
            cell_order=6,
            chunk_inner=5,
            ragged=True,
            located=False,
            short_name="SPEC_FIXTURE",
            pyramid=_v1([1, 0]),
            redeclare={"overviews": [5, 4], "fold_source": "cascade", "exact_levels": 1},
            manifest_only=True,
            seed=56,
        )
    },
    "serc_hive": {"": Product(SERC, debris=(SERC_DEBRIS,), cells=SERC_CELLS, seed=21)},
    "arctic_hive": {
        "": Product(
            ARCTIC, shard_order=2, cell_order=7, pyramid=_v1([1, 0]), cells=_north_of(ARCTIC, 7, 65.0, 62), seed=61
        )
    },
    "serc_hive_pg3": {
        "": Product(("433142241", "433142242", "-433412214"), shard_order=8, cell_order=10, path_grouping=3, seed=22)
    },
    "multiproduct_hive": {
        "atl06": Product(("4111", "4112"), shard_order=3, cell_order=5, seed=31),
        "atl06_pg3": Product(("411121",), shard_order=5, cell_order=6, path_grouping=3, seed=32),
        "atl06_ragged": Product(
            ("4111",), shard_order=3, cell_order=5, ragged=True, ragged_name="h_li_tdigest", seed=33
        ),
        "atl06_windows": Product(
            ("-5111", "-5112"),
            windows=YEARS[:2],
            shard_order=3,
            cell_order=5,
            absent=frozenset({("-5112", "2020")}),
            seed=34,
        ),
    },
    "overview_hive": {
        "atl06": Product((*SERC, SERC_DEBRIS), pyramid={**_v1([4, 2]), **LEAVES_FOLD}, seed=41),
        "atl06_windows": Product(
            (*SERC, SERC_DEBRIS),
            windows=YEARS[:2],
            schedule="explicit",
            pyramid={**_v1([4], True), **LEAVES_FOLD},
            absent=frozenset({(SERC_DEBRIS, "2020")}),
            seed=42,
        ),
    },
}


# -- the HDF5 seam ------------------------------------------------------------------------------------
#: ``bucket/key`` of a synthetic granule -> {dataset path: array}
GRANULES: dict[str, dict[str, np.ndarray]] = {}


class MemoryGranule:
    """The part of ``h5coro.H5Coro`` zagg's reader calls: ``readDatasets`` (whole or row slab) and ``close``."""

    def __init__(self, resource, driver=None, credentials=None, errorChecking=True, verbose=False):
        key = resource.split("://", 1)[-1]
        if key not in GRANULES:
            raise FileNotFoundError(f"no synthetic granule {resource!r}")
        self.datasets = GRANULES[key]

    def readDatasets(self, datasets):
        out = {}
        for d in datasets:
            path, slab = (d, None) if isinstance(d, str) else (d["dataset"], d.get("hyperslice"))
            arr = self.datasets[path]
            out[path] = arr[slab[0][0] : slab[0][1]] if slab else arr
        return out

    def close(self):
        pass


def install_seam() -> None:
    """Serve HDF5 reads from :data:`GRANULES` and register a credential provider needing nothing."""
    os.environ.setdefault("ICECHUNK_LOG", "error")  # zagg's column ladder warns about local icechunk commits
    import zagg.processing
    from zagg import registry

    zagg.processing.h5coro = types.SimpleNamespace(H5Coro=MemoryGranule)
    registry.register_credential_provider("synthetic", dict, replace=True)
    for name in ("zagg", "zagg.config", "zagg.pyramid"):
        logging.getLogger(name).setLevel(logging.ERROR)


# -- synthetic points -----------------------------------------------------------------------------------
def words(decimals) -> np.ndarray:
    return np.asarray(mortie.decimal_to_word(np.asarray(list(decimals))), dtype=np.uint64).reshape(-1)


def decimals(ws) -> list[str]:
    ws = np.asarray(ws, dtype=np.uint64)
    return list(MortonIndexArray.from_words(ws).decimal_repr()) if ws.size else []


def children(shard: str, order: int) -> np.ndarray:
    return np.sort(np.asarray(mortie.generate_morton_children(words([shard])[0], order), dtype=np.uint64))


def _occupied(rng, cells: np.ndarray, step: int) -> np.ndarray:
    """The occupancy cycle: full leaf, one cell, a quarter, three fifths."""
    n = cells.size
    k = {0: n, 1: 1, 2: max(1, n // 4), 3: max(1, 3 * n // 5)}[step % 4]
    return cells if k == n else np.sort(rng.choice(cells, size=k, replace=False))


def _points_in(rng, cells: np.ndarray, per_cell: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points jittered around cell centres, each kept inside its cell (checked with mortie)."""
    rep = np.repeat(cells, per_cell)
    lat, lon = (np.asarray(a, dtype=np.float64) for a in mortie.mort2geo(rep))
    span = 0.1 * math.degrees(math.sqrt(4 * math.pi / (12 * 4**order)))
    jl = lat + rng.uniform(-span, span, rep.size)
    jo = lon + rng.uniform(-span, span, rep.size)
    inside = np.asarray(mortie.geo2mort(jl, jo, order=order), dtype=np.uint64) == rep
    return np.where(inside, jl, lat), np.where(inside, jo, lon), rep


def _window_start(label: str | None) -> datetime:
    return datetime(int(label) if label else 2019, 3, 1, tzinfo=UTC)


def synthetic_points(p: Product) -> pd.DataFrame:
    """Every input point of a product: position, cell, window, run, granule, and the ATL06 fields."""
    rng = np.random.default_rng(p.seed)
    labels = p.windows or (None,)
    frames = []
    for i, shard in enumerate(p.shards):
        cells = children(shard, p.cell_order)
        for w, label in enumerate(labels):
            if (shard, label) in p.absent or (w > 0 and (i + w) % 4 == 3):
                continue
            fixed = p.cells.get((shard, label))
            occ = np.sort(words(fixed)) if fixed else _occupied(rng, cells, i + w)
            frames.append(_frame(rng, p, occ, rng.integers(1, 6, occ.size), shard=shard, window=w, run=1, block=i // 4))
    if p.append:  # run 2: new points in half the cells of every third shard
        for i, shard in enumerate(p.shards[::3]):
            cells = children(shard, p.cell_order)
            occ = np.sort(rng.choice(cells, size=max(1, cells.size // 2), replace=False))
            frames.append(_frame(rng, p, occ, rng.integers(1, 4, occ.size), shard=shard, window=0, run=2, block=i))
    pts = pd.concat(frames, ignore_index=True)
    n = len(pts)
    pts["h_li"] = (1500.0 + 300.0 * np.sin(np.radians(pts["lat"])) + rng.normal(0, 25, n)).astype(np.float32)
    pts["h_li_sigma"] = rng.uniform(0.02, 0.5, n).astype(np.float32)
    bad = rng.random(n) < 0.1
    bad[pts["first"].to_numpy()] = False  # every occupied cell keeps a good point
    pts["quality"] = bad.astype(np.int8)
    pts["beam"] = rng.integers(0, len(BEAMS), n)
    starts = np.array(
        [
            _granule_start(lab, b, r).timestamp()
            for lab, b, r in zip(pts["label"], pts["block"], pts["run"], strict=True)
        ]
    )
    pts["delta_time"] = starts - ATLAS_EPOCH.timestamp() + rng.uniform(0, 2900, n)
    pts["granule"] = [
        _granule_name(lab, b, r) for lab, b, r in zip(pts["label"], pts["block"], pts["run"], strict=True)
    ]
    if p.flux:  # one photoelectron per sample, on no noise
        pts[FLUX_COLUMNS["counts"]] = np.ones(n, np.float32)
        pts[FLUX_COLUMNS["noise_mean"]] = np.zeros(n, np.float32)
        pts[FLUX_COLUMNS["noise_stddev"]] = np.zeros(n, np.float32)
    if p.strata:  # ATL03-like per-surface confidences, -1 .. 4, a third of the points noise on every surface
        levels = rng.choice(np.arange(-1, 5), size=(len(SURFACES), n), p=[0.3, 0.25, 0.25, 0.1, 0.05, 0.05])
        for surface, conf in zip(SURFACES, levels, strict=True):
            pts[f"signal_conf_{surface}"] = conf.astype(np.int8)
    return pts


def _frame(rng, p: Product, occ, per_cell, *, shard, window, run, block) -> pd.DataFrame:
    lat, lon, rep = _points_in(rng, occ, per_cell, p.cell_order)
    first = np.zeros(rep.size, dtype=bool)
    first[np.concatenate([[0], np.cumsum(per_cell)[:-1]])] = True
    labels = p.windows or (None,)
    return pd.DataFrame(
        {
            "lat": lat,
            "lon": lon,
            "cell": rep,
            "shard": shard,
            "label": labels[window],
            "run": run,
            "block": block,
            "first": first,
        }
    )


def _granule_start(label, block: int, run: int) -> datetime:
    s = _window_start(label)
    return s.replace(month=s.month + (block % 6) + (3 if run == 2 else 0), day=1 + 3 * block % 25, hour=run)


def _granule_name(label, block: int, run: int) -> str:
    return f"ATL06_{_granule_start(label, block, run):%Y%m%d%H%M%S}_{block:05d}{run:02d}_006_01.h5"


def register(pts: pd.DataFrame) -> None:
    """Put each granule's per-beam datasets where :class:`MemoryGranule` serves them."""
    for name, g in pts.groupby("granule"):
        data = {}
        for b, beam in enumerate(BEAMS):
            sel = g[g["beam"] == b]
            for var, col, dtype in (
                ("latitude", "lat", np.float64),
                ("longitude", "lon", np.float64),
                ("h_li", "h_li", np.float32),
                ("h_li_sigma", "h_li_sigma", np.float32),
                ("atl06_quality_summary", "quality", np.int8),
                ("delta_time", "delta_time", np.float64),
            ):
                data[SEGMENT.format(group=beam, name=var)] = sel[col].to_numpy(dtype)
            for col in (c for c in sel.columns if c.startswith(("signal_conf_", "wf_"))):
                data[SEGMENT.format(group=beam, name=col)] = sel[col].to_numpy()
        GRANULES[f"synthetic-atl06/{name}"] = data


# -- zagg ------------------------------------------------------------------------------------------------
def zagg_config(p: Product, product_path: str):
    from zagg.config import default_config

    cfg = default_config("atl06")
    source = {**cfg.data_source, "index": {"backend": "hierarchical"}, "credentials_provider": "synthetic"}
    source["variables"] = {**source["variables"], "delta_time": SEGMENT.replace("{name}", "delta_time")}
    agg = {**cfg.aggregation, "variables": dict(cfg.aggregation["variables"])}
    if p.ragged:
        digest = {k: v for k, v in TDIGEST.items() if p.located or k != "location"}
        if p.flux:
            digest.update(
                function="zagg.stats.waveform.build_waveform_digest",
                weights="flux",
                params={**TDIGEST["params"], **FLUX_COLUMNS, "gain": FLUX_GAIN},
                attrs={"gain": FLUX_GAIN_ATTRS},
            )
            source["variables"].update({col: SEGMENT.replace("{name}", col) for col in FLUX_COLUMNS.values()})
        agg["variables"][p.ragged_name] = {**digest, **({"temporal": "per-centroid"} if p.temporal else {})}
    if p.temporal:
        agg["variables"]["observed"] = dict(OBSERVED)
    if p.strata:
        source["variables"].update(
            {f"signal_conf_{s}": SEGMENT.replace("{name}", f"signal_conf_{s}") for s in SURFACES}
        )
        for name, stratum in STRATA.items():
            agg["variables"][name] = {
                **{k: v for k, v in TDIGEST.items() if k != "params"},
                "function": "zagg.stats.tdigest.build_tdigest_where",
                "params": {**TDIGEST["params"], "where": stratum["where"]},
                "attrs": {"stratum": stratum["stratum"], "signal_threshold": SIGNAL_THRESHOLD},
            }
        agg["variables"]["composition"] = json.loads(json.dumps(COMPOSITION))
    column = isinstance(p.pyramid, dict) and "overviews" in p.pyramid
    grid = {**cfg.output["grid"], "parent_order": p.shard_order, "child_order": p.cell_order}
    if p.chunk_inner is not None:
        grid["chunk_inner"] = p.chunk_inner
    out = {
        **cfg.output,
        "store_layout": "hive",
        "grid": grid,
        "icechunk": False,
        "leaf_versions": p.leaf_versions,
        "sweep": ("stages" if column else True) if p.sweep is None else p.sweep,
        "pyramid": p.pyramid,
    }
    if product_path:
        out["product_name"] = product_path
    clock = {"time_field": "delta_time", "epoch": "2018-01-01T00:00:00Z", "scale": "gps", "units": "seconds"}
    if p.windows:
        out["windowing"] = {"schedule": p.schedule, **clock}
        if p.schedule == "explicit":
            out["windowing"]["windows"] = [
                {"label": y, "start": f"{y}-01-01T00:00:00Z", "end": f"{int(y) + 1}-01-01T00:00:00Z"} for y in p.windows
            ]
    elif p.temporal:
        out["time_source"] = {"field": "delta_time", **{k: v for k, v in clock.items() if k != "time_field"}}
    return replace(cfg, data_source=source, aggregation=agg, output=out)


def _catalog(pts: pd.DataFrame, p: Product, grid, path: Path, run: int) -> Path:
    from zagg.windows import iso_utc

    pts = pts[pts["run"] <= run]
    keys, lists = [], []
    for shard in p.shards:
        names = sorted(pts.loc[pts["shard"] == shard, "granule"].unique())
        recs = []
        for nm in names:
            g = pts[pts["granule"] == nm]
            t0 = datetime.fromtimestamp(ATLAS_EPOCH.timestamp() + float(g["delta_time"].min()) - 10, UTC)
            t1 = datetime.fromtimestamp(ATLAS_EPOCH.timestamp() + float(g["delta_time"].max()) + 10, UTC)
            recs.append(
                {
                    "id": nm,
                    "s3": f"s3://synthetic-atl06/{nm}",
                    "https": f"https://synthetic.invalid/{nm}",
                    "time_start": iso_utc(t0),
                    "time_end": iso_utc(t1),
                }
            )
        keys.append(int(words([shard])[0]))
        lists.append(recs)
    doc = {
        "grid_signature": grid.spatial_signature(),
        "shard_keys": keys,
        "granules": lists,
        "metadata": {"short_name": p.short_name, "version": "006"},
    }
    path.write_text(json.dumps(doc))
    return path


def write_product(p: Product, store: Path, product_path: str, work: Path) -> pd.DataFrame:
    """Write one product with zagg (one run, or two for ``append``) and return its input points."""
    from zagg.grids import HealpixGrid
    from zagg.hive import shard_leaf_path
    from zagg.store import open_store

    pts = synthetic_points(p)
    register(pts)
    cfg = zagg_config(p, product_path)
    grid = HealpixGrid(parent_order=p.shard_order, child_order=p.cell_order, config=cfg, chunk_inner=p.chunk_inner)
    tag = product_path or "bare"
    root = store / product_path if product_path else store
    for run in (1, 2) if p.append else (1,):
        cat = _catalog(pts, p, grid, work / f"{tag}.run{run}.catalog.json", run)
        _agg(cfg, cat, store, product_path)
    if (
        p.redeclare is not None
    ):  # zagg's retrofit keeps the earlier sweep's `materialized`; a rerun walks the new ladder
        from zagg.sweep_overview import declare_pyramid

        cfg = replace(cfg, output={**cfg.output, "pyramid": p.redeclare, "sweep": "stages"})
        declare_pyramid(str(root), cfg)
        _agg(cfg, cat, store, product_path)
    for shard in p.debris:  # an unstamped leaf template, the shape a torn worker leaves
        grid.emit_shard_template(open_store(shard_leaf_path(str(root), int(words([shard])[0]))), overwrite=True)
    if p.path_grouping > 1:
        regroup(root, p.path_grouping)
    if not p.root_moc:  # a store the reader must walk (zagg's conformance stores have no root MOC)
        (root / "coverage.moc").unlink()
    if p.manifest_only:  # the declaration alone: nothing to open, everything to parse
        for child in root.iterdir():
            if child.name != "morton_hive.json":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    return pts


def _agg(cfg, catalog: Path, store: Path, product_path: str) -> None:
    import zagg

    summary = zagg.agg(cfg, catalog=str(catalog), store=str(store), backend="local", max_workers=2)
    if summary.get("cells_error"):
        raise RuntimeError(f"zagg reported cell errors writing {store}/{product_path}: {summary}")


def grouped_dirs(leaf: str, grouping: int) -> list[str]:
    """The folders of ``leaf`` under ``path_grouping``: ``{sign+base}``, the digit tail in groups, remainder last."""
    base = leaf[:2] if leaf.startswith("-") else leaf[:1]
    tail = leaf[len(base) :]
    return [base, *(tail[i : i + grouping] for i in range(0, len(tail), grouping))]


def regroup(root: Path, grouping: int) -> None:
    """Move every leaf zagg wrote (one digit per folder) to its grouped path and record ``path_grouping``.

    zagg's per-node sweep artifacts (stats rollups) follow the one-digit tree and
    are dropped with it; the root coverage and the leaves themselves are untouched.
    """
    tmp = root.parent / f".{root.name}.leaves"
    tmp.mkdir()
    for leaf in sorted(root.rglob("*.zarr")):
        if leaf.parent != root and not any(p.suffix == ".zarr" for p in leaf.parents):
            leaf.rename(tmp / leaf.name)
    for child in root.iterdir():
        if child.is_dir():
            shutil.rmtree(child)
    for leaf in sorted(tmp.iterdir()):
        name = leaf.name[: -len(".zarr")].split("_")[0]
        dest = root.joinpath(*grouped_dirs(name, grouping)) / leaf.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        leaf.rename(dest)
    tmp.rmdir()
    manifest = root / "morton_hive.json"
    doc = json.loads(manifest.read_text())
    doc["path_grouping"] = grouping
    doc.pop("semantic_hash", None)  # zagg's hash covers a one-digit layout
    manifest.write_text(json.dumps(doc, indent=1) + "\n")


# -- goldens (from the input points only) ---------------------------------------------------------------
def cell_table(good: pd.DataFrame) -> pd.DataFrame:
    """Per-cell values of the default atl06 aggregation, in float64."""
    g = good.assign(wt=1.0 / good["h_li_sigma"].astype(np.float64) ** 2, h=good["h_li"].astype(np.float64))
    g["hw"] = g["h"] * g["wt"]
    grp = g.groupby("cell", sort=True)
    t = pd.DataFrame(
        {
            "count": grp.size(),
            "h_min": grp["h"].min(),
            "h_max": grp["h"].max(),
            "h_mean": grp["hw"].sum() / grp["wt"].sum(),
            "h_sigma": 1.0 / np.sqrt(grp["wt"].sum()),
            "h_variance": grp["h"].var(ddof=0),
        }
    )
    for name, q in QUANTILES.items():
        t[name] = grp["h"].quantile(q, interpolation="linear")
    return t


def totals(t: pd.DataFrame) -> dict:
    out = {"count_sum": int(t["count"].sum()), "n_occupied_cells": len(t)}
    if len(t):
        out["h_min_min"] = float(t["h_min"].min())
        out["h_max_max"] = float(t["h_max"].max())
        out.update({f"{v}_sum": float(t[v].sum()) for v in FLOAT_VARS})
    return out


def levels(good: pd.DataFrame, cell_order: int) -> dict:
    """Exact-field truth (count/h_min/h_max) at every cell order from ``cell_order`` down to 0."""
    per = good.groupby("cell").agg(count=("h_li", "size"), h_min=("h_li", "min"), h_max=("h_li", "max"))
    ws = per.index.to_numpy(np.uint64)
    out = {}
    for k in range(cell_order, -1, -1):
        anc = np.asarray(mortie.clip2order(k, ws), dtype=np.uint64) if k < cell_order else ws
        a = per.groupby(anc).agg(count=("count", "sum"), h_min=("h_min", "min"), h_max=("h_max", "max"))
        out[str(k)] = {
            "n_cells": len(a),
            "count_sum": int(a["count"].sum()),
            "h_min_min": float(a["h_min"].min()),
            "h_max_max": float(a["h_max"].max()),
            "h_min_sum": float(a["h_min"].astype(np.float64).sum()),
            "h_max_sum": float(a["h_max"].astype(np.float64).sum()),
        }
    return out


def pyramid_golden(p: Product) -> dict:
    if p.pyramid is False:
        return {"declared": False, "swept": True}
    if "overviews" in p.pyramid:
        col = sorted((c for c in p.pyramid["overviews"]), reverse=True)
        ladder = [{"node": p.shard_order - d, "cells": [c - d]} for d in range(p.shard_order + 1) for c in col]
        return {
            "declared": True,
            "spec": "zagg-pyramid/2",
            "ladder": ladder,
            "column_cell_orders": col,
            "overview_cell_orders": sorted({e["cells"][0] for e in ladder if e["node"] < p.shard_order}, reverse=True),
            "all_time": bool(p.windows),
            "swept": True,
        }
    orders = sorted(p.pyramid["orders"], reverse=True)
    return {
        "declared": True,
        "spec": "zagg-pyramid/1",
        "overview_orders": orders,
        "overview_cell_orders": [p.cell_order - (p.shard_order - k) for k in orders],
        "all_time": bool(p.windows) or bool(p.pyramid.get("all_time")),
        "swept": True,
    }


def product_golden(p: Product, pts: pd.DataFrame, product_path: str) -> dict:
    """The writer-side golden of one product, in the shape of ``../shared/fixtures/zagg/*/golden.json``."""
    good = pts[pts["quality"] == 0].copy()
    cells = np.asarray(
        mortie.geo2mort(good["lat"].to_numpy(), good["lon"].to_numpy(), order=p.cell_order), dtype=np.uint64
    )
    assert (cells == good["cell"].to_numpy(np.uint64)).all(), "a point left its intended cell"
    cpl = 4 ** (p.cell_order - p.shard_order)
    g = {
        "path": product_path,
        "spec": "morton-hive/2" if p.windows else "morton-hive/1",
        "cell_order": p.cell_order,
        "shard_order": p.shard_order,
        "path_grouping": 1,
        "cells_per_leaf": cpl,
        "windowed": bool(p.windows),
        "windows": list(p.windows),
        "schedule": p.schedule if p.windows else "none",
        "leaf_versions": p.leaf_versions,
        "sharded_leaf": p.chunk_inner is not None and p.chunk_inner > p.shard_order,
        "chunk_inner": p.chunk_inner,
        "float_rtol": FLOAT_RTOL,
        "input": {"n_points": len(pts), "n_points_good": len(good), "n_granules": int(pts["granule"].nunique())},
        "ragged": {"field": p.ragged_name, "locations": f"{p.ragged_name}_locations"} if p.ragged else None,
        "temporal": {"per_centroid": "h_tdigest_times", "per_cell": "observed"} if p.temporal else None,
        "debris_leaves": list(p.debris),
        "pyramid": pyramid_golden(p),
    }
    appended = sorted(set(pts.loc[pts["run"] == 2, "shard"]))
    leaves, by_window = {}, {}
    for label in p.windows or (None,):
        gw = good[good["label"].isna()] if label is None else good[good["label"] == label]
        t = cell_table(gw)
        shard_of = decimals(mortie.clip2order(p.shard_order, t.index.to_numpy(np.uint64)))
        tl = t.assign(shard=shard_of)
        shards = sorted(set(shard_of), key=lambda d: int(words([d])[0]))
        for shard, sub in tl.groupby("shard"):
            key = shard + (f"_{label}" if label else "")
            leaves[key] = {
                "shard": shard,
                "window": label,
                "occupied": len(sub),
                "count": int(sub["count"].sum()),
                "full": len(sub) == cpl,
            }
            if p.append:
                leaves[key]["expected_versions"] = 2 if shard in appended else 1
        by_window[label or "all"] = {
            "n_leaves": len(shards),
            "n_rows": len(shards) * cpl,
            "shards": shards,
            "totals": totals(t),
            "levels": levels(gw, p.cell_order),
        }
    g["leaves"] = leaves
    if not p.windows:
        g["_cells"] = t
    g["n_leaves"] = sum(e["n_leaves"] for e in by_window.values())
    g["n_shards"] = len({lv["shard"] for lv in leaves.values()})
    if p.windows:
        g["by_window"] = by_window
        g["all_time"] = {"levels": levels(good, p.cell_order), "pooled_cell_totals": totals(cell_table(good))}
    else:
        g.update({k: by_window["all"][k] for k in ("n_rows", "shards", "totals", "levels")})
    if p.append:
        g["appended_shards"] = appended
    return g


def lossless_digest(values: np.ndarray, delta: int, weight: float = 1.0) -> list[list[float]]:
    """The t-digest of at most ``delta`` observations: one centroid per value, in value order, each of ``weight``.

    A k1 digest is loss-free while its observation count stays at or below
    ``delta`` (``zagg.stats.tdigest``'s documented bound), so its centroids
    follow from the input values alone; a cell beyond the bound has no golden.
    """
    values = np.sort(np.asarray(values, dtype=np.float32))
    if values.size > delta:
        raise ValueError(f"{values.size} observations exceed delta {delta}: the digest golden needs a loss-free cell")
    return [[float(v), float(np.float32(weight))] for v in values]


def spec_expected(p: Product, golden: dict, pts: pd.DataFrame, root: Path) -> dict:
    """The ``spec/<name>.expected.json`` shape of a one-leaf store: its orders and, per occupied cell, the row
    index, the morton word (decimal string of the uint64), the count of good points and the digest of their
    heights; for a store with a leaf column, the column's groups (every cell of each order, empty ones too).

    Everything comes from the input points except the column's ``zagg_column`` provenance block, which only
    the writer knows; it is read raw from the column's ``zarr.json``.
    """
    (shard,) = p.shards
    rows = children(shard, p.cell_order)
    good = pts[pts["quality"] == 0]
    heights = good.groupby("cell")["h_li"]
    delta = TDIGEST["params"]["delta"]
    weight = FLUX_GAIN if p.flux else 1.0
    cells = []
    for w, n in zip(golden["_cells"].index.to_numpy(np.uint64), golden["_cells"]["count"], strict=True):
        cell = {"index": int(np.searchsorted(rows, w)), "morton": str(int(w)), "count": int(n)}
        if p.ragged:
            cell[p.ragged_name] = lossless_digest(heights.get_group(w).to_numpy(), delta, weight)
        if p.strata:
            cell.update(strata_expected(good[good["cell"] == w], delta))
        cells.append(cell)
    per_chunk = 4 ** (p.cell_order - p.chunk_inner)
    doc = {
        "shard": shard,
        "group": str(p.cell_order),
        "shard_order": p.shard_order,
        "chunk_order": p.chunk_inner,
        "cell_order": p.cell_order,
        "cells_per_chunk": per_chunk,
        "chunks_per_shard": rows.size // per_chunk,
        "delta": delta,
        "cells": cells,
    }
    if p.ragged:
        doc["digest"] = {
            "field": p.ragged_name,
            "weights": "flux" if p.flux else "counts",
            **({"gain": FLUX_GAIN_ATTRS} if p.flux else {}),
        }
    if isinstance(p.pyramid, dict) and "overviews" in p.pyramid:
        doc["column"] = column_expected(p, good, root.joinpath(*grouped_dirs(shard, 1)) / "all.pyramid.zarr")
    return doc


def strata_expected(points: pd.DataFrame, delta: int) -> dict:
    """One cell's signal and noise digests and its composition word (FORMAT.md §9.4), from its good points.

    A point is signal when any surface confidence reaches :data:`SIGNAL_THRESHOLD`; lanes 0-4 count the signal
    points clearing it per surface, lanes 5-7 those whose strongest confidence is 2, 3, 4; each lane is
    ``round(255 * count / n_signal)`` (half to even), at least 1 when the count is not 0, LSB lane first.
    """
    conf = points[[f"signal_conf_{s}" for s in SURFACES]].to_numpy(np.int64)
    signal = (conf >= SIGNAL_THRESHOLD).any(axis=1)
    heights = points["h_li"].to_numpy()
    n = int(signal.sum())
    strongest = conf[signal].max(axis=1)
    counts = [*(conf[signal] >= SIGNAL_THRESHOLD).sum(axis=0), *((strongest == k).sum() for k in (2, 3, 4))]
    word = 0
    for i, c in enumerate(counts):
        lane = 0 if c == 0 else max(1, int(np.rint(255 * c / n)))
        word |= lane << (8 * i)
    return {
        "h_tdigest_signal": lossless_digest(heights[signal], delta),
        "h_tdigest_noise": lossless_digest(heights[~signal], delta),
        "composition": str(word),
        "n_signal": n,
    }


def column_expected(p: Product, good: pd.DataFrame, column: Path) -> dict:
    """Per group of the leaf column (its declared cell orders and the node's own order): every cell's word,
    good-point count and, where every cell of the group has at most ``delta`` points, loss-free digest, from
    the input points."""
    (shard,) = p.shards
    delta = TDIGEST["params"]["delta"]
    groups = {}
    for r in sorted({*p.pyramid["overviews"], p.shard_order}, reverse=True):
        cells = children(shard, r)
        anc = np.asarray(mortie.clip2order(r, good["cell"].to_numpy(np.uint64)), dtype=np.uint64)
        group = {"morton": [str(int(w)) for w in cells], "count": [int((anc == w).sum()) for w in cells]}
        if p.ragged and max(group["count"]) <= delta:  # a coarser group may hold lossy digests: no golden
            weight = FLUX_GAIN if p.flux else 1.0
            group[p.ragged_name] = [lossless_digest(good["h_li"].to_numpy()[anc == w], delta, weight) for w in cells]
        groups[str(r)] = group
    attrs = json.loads((column / "zarr.json").read_text())["attributes"]
    return {"object": column.name, "role": attrs["role"], "zagg_column": attrs["zagg_column"], "groups": groups}


def pyramid_expected(p: Product) -> dict:
    """The ``spec/pyramid.expected.json`` shape: the ``/2`` ladder the re-declaration names, its slab lengths,
    the fold knobs and field classes the config declares, and the ``/1`` orders swept before it."""
    cols = sorted(p.redeclare["overviews"], reverse=True)
    ladder = [{"node": p.shard_order, "cells": cols}]
    ladder += [{"node": n, "cells": [cols[-1] - (p.shard_order - n)]} for n in range(p.shard_order - 1, -1, -1)]
    return {
        "shard_order": p.shard_order,
        "chunk_order": p.chunk_inner,
        "cell_order": p.cell_order,
        "declared": {"overviews": cols},
        "overviews": ladder,
        "slabs": [[4 ** (c - e["node"]) for c in e["cells"]] for e in ladder],
        "fold_source": p.redeclare["fold_source"],
        "exact_levels": p.redeclare["exact_levels"],
        "materialized": {
            "orders": sorted(p.pyramid["orders"]),
            "fold_sources": {
                str(max(p.pyramid["orders"])): "leaves",
                **{str(o): "cascade" for o in sorted(p.pyramid["orders"])[:-1]},
            },
        },
        "fields": FIELD_CLASSES | ({p.ragged_name: "approximate"} if p.ragged else {}),
    }


def cell_ids_golden(p: Product, golden: dict) -> np.ndarray:
    """NESTED HEALPix ids of every row (leaf roster order, cells in morton order), as a dual-writing store has them."""
    rows = np.concatenate([children(s, p.cell_order) for s in golden["shards"]])
    return np.asarray(mortie.mort2healpix(rows)[0], dtype=np.uint64)


def _public(golden: dict) -> dict:
    return {k: v for k, v in golden.items() if not k.startswith("_")}


def overview_golden(store: Path, products: dict[str, Product], goldens: dict[str, dict]) -> dict:
    """The ``overview_hive.golden.json`` shape: per product, the source level and every overview level per window.

    Node rosters, cell counts and totals come from the input points; each object's
    provenance block is the writer's, read raw from its ``zarr.json``.
    """
    out = {}
    variables = sorted(["count", *FLOAT_VARS])
    for path, p in products.items():
        g = goldens[path]
        orders = sorted(p.pyramid["orders"], reverse=True)
        entry = {"spec": g["spec"], "pyramid_orders": orders, "cell_order": p.cell_order, "shard_order": p.shard_order}
        if p.windows:
            entry["windows"] = list(p.windows)
        views = dict(g["by_window"]) if p.windows else {"all": g}
        entry["source"] = {
            key: {
                "cell_order": p.cell_order,
                "n_cells": v["n_rows"],
                "variables": variables,
                "count_total": v["totals"]["count_sum"],
                "objects": [
                    {"node": s, "window": None if key == "all" else key, "role": "source"} for s in v["shards"]
                ],
            }
            for key, v in views.items()
        }
        if p.windows:
            views["all"] = {
                "shards": sorted({s for v in views.values() for s in v["shards"]}, key=lambda d: int(words([d])[0])),
                "levels": g["all_time"]["levels"],
            }
        entry["overviews"] = {}
        for order in orders:
            r = p.cell_order - (p.shard_order - order)
            per = {}
            for key, v in views.items():
                nodes = sorted(
                    {s[: order + 1 if not s.startswith("-") else order + 2] for s in v["shards"]},
                    key=lambda d: int(words([d])[0]),
                )
                lv = v["levels"][str(r)]
                per[key] = {
                    "cell_order": r,
                    "n_cells": len(nodes) * 4 ** (r - order),
                    "variables": ["count", "h_max", "h_min"],
                    "count_total": lv["count_sum"],
                    "h_min_min": lv["h_min_min"],
                    "objects": [_overview_object(store / path, n, key, bool(p.windows)) for n in nodes],
                }
            entry["overviews"][str(r)] = per
        out[path] = entry
    return {"products": out}


def _overview_object(product_root: Path, node: str, window: str, windowed: bool) -> dict:
    digits = [node[:2], *node[2:]] if node.startswith("-") else list(node)
    doc = json.loads((product_root.joinpath(*digits) / f"{window}.zarr" / "zarr.json").read_text())["attributes"]
    return {
        "node": node,
        "window": window if windowed else None,
        "role": "overview",
        "zagg_overview": doc["zagg_overview"],
    }


# -- the whole tree --------------------------------------------------------------------------------------
def write_store(name: str, out: Path) -> None:
    """Write store ``name`` of :data:`STORES` (and its goldens) under ``out``, mirroring ../shared/fixtures."""
    products = STORES[name]
    work = out / ".inputs" / name.replace("/", "__")
    work.mkdir(parents=True, exist_ok=True)
    zagg_kind = name.startswith("zagg/")
    store = out / name / "store" if zagg_kind else out / name
    store.mkdir(parents=True)
    goldens = {}
    for path, p in products.items():
        pts = write_product(p, store, path, work)
        goldens[path] = product_golden(p, pts, path)
    if zagg_kind:
        doc = {
            "generator": "tests/stores/zagg_stores.py",
            "layout": "bare" if "" in products else "multi-product",
            "products": {(path or "."): _public(g) for path, g in goldens.items()},
        }
        (out / name / "golden.json").write_text(json.dumps(doc, indent=1) + "\n")
    if name.startswith("spec/"):
        p = products[""]
        doc = pyramid_expected(p) if p.manifest_only else spec_expected(p, goldens[""], pts, store)
        (out / f"{name}.expected.json").write_text(json.dumps(doc, indent=1) + "\n")
    if name == "serc_hive":
        np.save(out / "serc_cell_ids_golden.npy", cell_ids_golden(products[""], goldens[""]))
    if name == "multiproduct_hive":  # a child folder without a manifest is not a product
        (store / "scratch").mkdir()
        (store / "scratch" / "notes.json").write_text('{"note": "not a product"}\n')
    if name == "overview_hive":
        doc = overview_golden(store, products, goldens)
        (out / "overview_hive.golden.json").write_text(json.dumps(doc, indent=1) + "\n")


#: Bare arrays of the tree: name -> (store of :data:`STORES`, the array inside it zagg wrote).
BARE_ARRAYS = {"composition": ("spec/kitchen_sink", "1/1/2/1/3/11213.zarr/6/composition")}


def write_all(out: Path) -> None:
    """Write every store of :data:`STORES` under ``out`` (which must not hold them yet), then the bare arrays of
    :data:`BARE_ARRAYS` (copies of a leaf's array, the shape of ``../shared/fixtures/composition``)."""
    install_seam()
    with warnings.catch_warnings():  # zagg's own deprecation chatter is not the tests' business
        warnings.simplefilter("ignore")
        for name in STORES:
            write_store(name, out)
    for name, (store, array) in BARE_ARRAYS.items():
        shutil.copytree(out / store / array, out / name)
