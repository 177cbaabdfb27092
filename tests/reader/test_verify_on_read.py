"""Verify on read: a chunk that is not the one its stamp's ``content_hashes`` record never reads as data.

Each case damages one data chunk of a copy of a store whose stamps record
content hashes (zagg's newest writer: a legacy, a versioned and a windowed
store), by replacing it with random bytes of the same length or deleting it,
then reads it through every opener as a user would. With ``verify_chunks=True``
every opener raises :class:`ContentHashError` naming the chunk's key; by
default (``verify_chunks=False``: the check costs about 20% of a full load,
``benchmarks/bench_load.py``) it returns the stored values (the random bytes,
or fill). Older leaves (no hashes) and moraine levels are
unaffected: what stays undetectable there is docs/reliability.md's list.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import moczarr
import moczarr.moraine
from moczarr.dataplane.picks import pick_values
from moczarr.errors import (
    ArgumentError,
    ArgumentTypeError,
    ContentHashError,
    CoverageFallbackWarning,
    MoczarrWarning,
)
from moczarr.format.content import content_digest
from moczarr.testing.raster import write_raster_toc_store
from tests.helpers import fixture_path, load_json, write_json

#: stores whose stamps record content hashes, in both layers: name -> window to open with
STORES = {"zagg/single_8/store": None, "zagg/versioned/store": None, "zagg/windowed/store": "2019"}
DAMAGES = ("replaced", "deleted")
VAR = "count"
ROWS = 16  # cells per leaf of these stores (cell order 8, shard order 6)


def leaf_dir(root: Path, decimal: str, window: str | None) -> Path:
    name = f"{decimal}_{window}.zarr" if window else f"{decimal}.zarr"
    (found,) = root.rglob(name)
    return found


def chunk_of(root: Path, decimal: str, window: str | None, var: str = VAR) -> Path:
    """The data chunk of ``var`` in a leaf, under its current version when the stamp names one."""
    leaf = leaf_dir(root, decimal, window)
    current = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"].get("current")
    data = leaf / current if current else leaf
    return data / "8" / var / "c" / "0"


def damage(chunk: Path, how: str) -> bytes | None:
    """Damage the chunk; return the bytes it now holds (None when deleted)."""
    if how == "deleted":
        chunk.unlink()
        return None
    original = chunk.read_bytes()
    rng = np.random.default_rng(20)
    payload = rng.bytes(len(original))
    assert payload != original
    chunk.write_bytes(payload)
    return payload


@pytest.fixture(scope="module")
def goldens(store_layer):
    """The undamaged stores' ``count`` and leaf order, through open_hive (no warning on a clean store)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", MoczarrWarning)
        for name, window in STORES.items():
            ds = moczarr.open_hive(fixture_path(name), window=window).load()
            out[name] = (ds[VAR].values, ds.attrs["morton_hive"]["leaves"])
    return out


@pytest.fixture(scope="module")
def damaged(store_layer, goldens, tmp_path_factory):
    """``make(store, how)``: a copy with the ``count`` chunk of the store's last leaf damaged (one per module;
    the tests only read it)."""
    made: dict = {}

    def make(name: str, how: str):
        if (name, how) not in made:
            root = tmp_path_factory.mktemp("damaged") / name.replace("/", "__")
            shutil.copytree(fixture_path(name), root)
            for p in [root, *root.rglob("*")]:  # the originals are read-only
                p.chmod(0o755 if p.is_dir() else 0o644)
            window = STORES[name]
            values, leaves = goldens[name]
            index = len(leaves) - 1
            stored = damage(chunk_of(root, leaves[index], window), how)
            made[name, how] = (root, window, leaves[index], index, values, stored)
        return made[name, how]

    return make


def _tree_values(tree: xr.DataTree) -> np.ndarray:
    (product,) = tree.children.values()
    return product[VAR].values


# every opener a user reads a store through: (root, window, damaged leaf name, its index) -> count values
OPENERS = {
    "open_hive": lambda root, w, leaf, i, **kw: moczarr.open_hive(root, window=w, **kw)[VAR].values,
    "open_leaf": lambda root, w, leaf, i, **kw: moczarr.open_leaf(root, f"{leaf}_{w}" if w else leaf, **kw)[VAR].values,
    "open_store": lambda root, w, leaf, i, **kw: _tree_values(moczarr.open_store(root, window=w, **kw)),
    "open_level": lambda root, w, leaf, i, **kw: moczarr.open_level(root, window=w, **kw)[VAR].values,
    "open_pyramid": lambda root, w, leaf, i, **kw: moczarr.open_pyramid(root, window=w, **kw)["o8"][VAR].values,
    "pick_cells": lambda root, w, leaf, i, **kw: moczarr.pick_cells(
        moczarr.open_hive(root, window=w, index_kind="pandas", **kw), cells=np.arange(ROWS * (i + 1))[::-1]
    )[VAR].values[::-1],
    "xr.open_dataset": lambda root, w, leaf, i, **kw: (
        xr.open_dataset(root, engine="moczarr", window=w, **kw)[VAR].values
    ),
    "xr.open_datatree": lambda root, w, leaf, i, **kw: _tree_values(xr.open_datatree(root, window=w, **kw)),
}
CASES = [(s, d, o) for s in STORES for d in DAMAGES for o in OPENERS]
IDS = [f"{s.split('/')[1]}-{d}-{o}" for s, d, o in CASES]


@pytest.mark.layers
@pytest.mark.parametrize("name,how,opener", CASES, ids=IDS)
def test_a_damaged_chunk_raises_under_every_opener(damaged, name, how, opener):
    root, window, leaf, index, _, _ = damaged(name, how)
    with pytest.raises(ContentHashError, match=rf"{leaf}.*/8/{VAR}/c/0: ") as info:
        OPENERS[opener](root, window, leaf, index, verify_chunks=True)
    assert str(root) in str(info.value)
    assert ("missing" in str(info.value)) == (how == "deleted")


@pytest.mark.layers
@pytest.mark.parametrize("given", [{"verify_chunks": False}, {}], ids=["False", "default"])
@pytest.mark.parametrize("name,how,opener", CASES, ids=IDS)
def test_unchecked_reads_return_the_stored_values(damaged, name, how, opener, given):
    """``verify_chunks=False``, which is the default, reads what is stored."""
    root, window, leaf, index, golden, stored = damaged(name, how)
    values = OPENERS[opener](root, window, leaf, index, **given)
    raw = np.zeros(ROWS, golden.dtype) if stored is None else np.frombuffer(stored, "<i8").astype(golden.dtype)
    rows = slice(index * ROWS, (index + 1) * ROWS)
    if opener == "open_leaf":
        np.testing.assert_array_equal(values, raw)
        return
    np.testing.assert_array_equal(values[rows], raw)
    np.testing.assert_array_equal(values[: index * ROWS], golden[: index * ROWS])


@pytest.mark.layers
@pytest.mark.parametrize("name", list(STORES))
def test_undamaged_stores_read_the_same_checked_or_not(name):
    window = STORES[name]
    root = fixture_path(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MoczarrWarning)
        checked = moczarr.open_hive(root, window=window, verify_chunks=True).load()
    xr.testing.assert_identical(checked, moczarr.open_hive(root, window=window).load())


@pytest.mark.layers
def test_pick_cells_keeps_drops_or_refuses_the_check(damaged):
    root, _, _, index, golden, _ = damaged("zagg/single_8/store", "replaced")
    picks = [0, index * ROWS + 3]
    checked = moczarr.open_hive(root, verify_chunks=True)
    with pytest.raises(ContentHashError):
        moczarr.pick_cells(checked, cells=picks)[VAR].load()
    unchecked = moczarr.pick_cells(checked, cells=picks, verify_chunks=False)[VAR].values
    assert unchecked[0] == golden[0]
    with pytest.raises(ArgumentError, match="verify_chunks=False"):
        moczarr.pick_cells(moczarr.open_hive(root), cells=picks, verify_chunks=True)


@pytest.mark.layers
@pytest.mark.parametrize("name", list(STORES))
def test_pick_values_keep_drops_or_refuse_the_check(damaged, name):
    root, window, _, index, golden, stored = damaged(name, "replaced")
    checked = moczarr.open_hive(root, window=window, verify_chunks=True)
    with pytest.raises(ContentHashError, match=rf"/8/{VAR}/c/0: "):
        pick_values(checked[VAR], [0, index * ROWS + 3])
    clean = [0, (index - 1) * ROWS + 3, 1]  # the damaged leaf not among them: its chunk is not read
    np.testing.assert_array_equal(pick_values(checked[VAR], clean), golden[clean])
    unchecked = pick_values(checked[VAR], [index * ROWS + 3], verify_chunks=False)
    assert stored is not None
    expected = np.frombuffer(stored, dtype=unchecked.dtype)[3]  # a plain-bytes chunk: the random bytes, read as is
    assert unchecked[0] == expected or (np.isnan(unchecked[0]) and np.isnan(expected))
    with pytest.raises(ArgumentError, match="verify_chunks=False"):
        pick_values(moczarr.open_hive(root, window=window)[VAR], [0], verify_chunks=True)


@pytest.mark.layers
@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_verify_chunks_takes_a_boolean_only(bad):
    root = fixture_path("zagg/single_8/store")
    for opener in (moczarr.open_hive, moczarr.open_level, moczarr.open_store, moczarr.open_pyramid):
        with pytest.raises(ArgumentTypeError, match="verify_chunks"):
            opener(root, verify_chunks=bad)


@pytest.mark.layers
def test_a_missing_chunk_that_is_all_fill_is_what_the_stamp_recorded(copy_fixture):
    """zarr leaves an all-fill chunk unwritten: a missing chunk whose recorded digest is the fill's reads as fill."""
    root = copy_fixture("zagg/single_8/store")
    (decimal, *_) = moczarr.open_hive(root).attrs["morton_hive"]["leaves"]
    chunk = chunk_of(root, decimal, None, "h_max")
    chunk.unlink()
    stamp_doc = leaf_dir(root, decimal, None) / "zarr.json"
    doc = load_json(stamp_doc)
    fill = np.full(ROWS, np.nan, dtype=np.float32)
    doc["attributes"]["morton_hive_commit"]["content_hashes"]["arrays"]["8/h_max"] = content_digest(fill)
    write_json(stamp_doc, doc)
    values = moczarr.open_hive(root, verify_chunks=True)["h_max"].values
    assert np.isnan(values[:ROWS]).all()


# -- overviews, columns, ragged arrays, multi-chunk leaves ------------------------------------------------
@pytest.mark.layers
def test_a_damaged_overview_chunk_raises(copy_fixture):
    root = copy_fixture("zagg/pyramid/store")
    chunk = sorted(root.glob(f"**/all.zarr/*/{VAR}/c/0"))[0]
    order = int(chunk.parent.parent.parent.name)
    damage(chunk, "replaced")
    with pytest.raises(ContentHashError, match=rf"all\.zarr/{order}/{VAR}/c/0"):
        moczarr.open_level(root, order, verify_chunks=True)[VAR].load()
    with pytest.raises(ContentHashError, match=r"all\.zarr"):
        moczarr.open_pyramid(root, verify_chunks=True).load()
    assert moczarr.open_level(root, order)[VAR].values.size


@pytest.mark.layers
def test_a_deleted_column_chunk_raises(copy_fixture):
    root = copy_fixture("zagg/column/store")
    levels = moczarr.pyramid_levels(moczarr.read_manifest(root))
    order = next(lv.cell_order for lv in levels if lv.artifact == "column")
    chunk = sorted(root.glob(f"**/all.pyramid.zarr/{order}/{VAR}/c/0"))[0]
    damage(chunk, "deleted")
    with pytest.raises(ContentHashError, match=rf"all\.pyramid\.zarr/{order}/{VAR}/c/0: the chunk is missing"):
        moczarr.open_level(root, order, verify_chunks=True)[VAR].load()


@pytest.mark.layers
def test_a_deleted_ragged_chunk_raises(copy_fixture):
    root = copy_fixture("zagg/single_ragged/store")
    (decimal, *_) = moczarr.open_hive(root).attrs["morton_hive"]["leaves"]
    damage(chunk_of(root, decimal, None, "h_tdigest"), "deleted")
    with pytest.raises(ContentHashError, match="h_tdigest/c/0"):
        moczarr.open_hive(root, verify_chunks=True)["h_tdigest"].load()
    assert (moczarr.open_hive(root)["h_tdigest"].values[:ROWS] == b"").all()


def test_a_leaf_of_many_chunks_is_checked_whole(tmp_path):
    """A raster leaf holds its bands in several chunks: a slice of one chunk still checks the whole array."""
    root = tmp_path / "raster"
    write_raster_toc_store(root, seed=7)
    (chunk,) = [p for p in root.glob("**/red/c/2/3") if p.is_file()]
    chunk.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoverageFallbackWarning)  # the writer writes no root MOC
        ds = moczarr.open_hive(root, verify_chunks=True)
        unchecked = moczarr.open_hive(root)
    with pytest.raises(ContentHashError, match="red: its values"):
        ds["red"].isel(cells=slice(0, 2)).load()
    assert unchecked["red"].isel(cells=slice(0, 2)).values.size


# -- what the format records no hash for -------------------------------------------------------------------
def strip_content_hashes(root: Path) -> int:
    """Make every stamp of a copy an older writer's: no ``content_hashes``. Returns how many were stripped."""
    n = 0
    for doc_path in root.rglob("zarr.json"):
        doc = json.loads(doc_path.read_text())
        stamp = (doc.get("attributes") or {}).get("morton_hive_commit")
        if isinstance(stamp, dict) and stamp.pop("content_hashes", None) is not None:
            write_json(doc_path, doc)
            n += 1
    return n


@pytest.mark.layers
def test_older_leaves_without_hashes_read_as_before(copy_fixture, goldens):
    """No hash, no check: a deleted chunk of an older leaf reads as fill (the documented gap), without a word."""
    root = copy_fixture("zagg/single_8/store")
    assert strip_content_hashes(root) > 0
    golden, leaves = goldens["zagg/single_8/store"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MoczarrWarning)
        np.testing.assert_array_equal(moczarr.open_hive(root, verify_chunks=True)[VAR].values, golden)
        damage(chunk_of(root, leaves[-1], None), "deleted")
        values = moczarr.open_hive(root, verify_chunks=True)[VAR].values
    assert (values[-ROWS:] == 0).all()
    np.testing.assert_array_equal(values[:-ROWS], golden[:-ROWS])


@pytest.mark.layers
def test_moraine_levels_record_no_hash_to_check(copy_fixture):
    """A moraine chunk swapped for another valid chunk of its level reads as the other chunk's values."""
    root = copy_fixture("moraine/ras_mean_v1")
    chunks = sorted(p for p in (root / "0.zarr" / "c").rglob("*") if p.is_file())
    golden = moczarr.moraine.open_moraine_level(root, 0).load()
    a, b = chunks[0], next(c for c in chunks[1:] if c.read_bytes() != chunks[0].read_bytes())
    a.write_bytes(b.read_bytes())
    damaged = moczarr.moraine.open_moraine_level(root, 0).load()
    assert not damaged.identical(golden)
