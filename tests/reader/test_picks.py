"""Scattered picks read only the objects that hold the picked cells, and equal a full load indexed alike.

dask answers an integer-array index with a shuffle whose tasks take whole
batches; :func:`moczarr.pick_cells` rebuilds the open's variables
over just the picked rows, and :func:`~moczarr.dataplane.picks.pick_values`
reads one variable's picked values now, without dask. Counts are GETs of
``chunk:data`` objects.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import dask
import numpy as np
import pytest

import moczarr
from moczarr import pick_cells
from moczarr.dataplane.picks import pick_values
from moczarr.storage import count_requests
from tests.helpers import fixture_path

pytestmark = pytest.mark.layers

STORE = "zagg/single_8/store"


def _open(**kwargs):
    ds = moczarr.open_hive(fixture_path(STORE), **kwargs)
    n_leaves = ds.attrs["morton_hive"]["n_leaves"]
    assert n_leaves >= 4 and ds.sizes["cells"] % n_leaves == 0, "the fixture's leaves hold equal cell counts"
    assert len(ds["count"].chunks[0]) < n_leaves, "a batch holds several leaves (else any pick reads only its leaves)"
    return ds, ds.sizes["cells"] // n_leaves


def _n_vars(ds) -> int:
    return sum(1 for v in ds.data_vars.values() if v.chunks is not None)


@pytest.fixture(autouse=True)
def local_scheduler():
    """Counts are taken in this process: compute on threads even once the module's cluster client exists."""
    with dask.config.set(scheduler="threads"):
        yield


@contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", moczarr.errors.MoczarrWarning
        )  # a non-monotonic pick drops the MOC index, by design
        yield


@pytest.mark.parametrize(
    "pick",
    [
        lambda n: np.array([n - 1, 3, 3, n // 2, 0, -1]),  # unsorted, repeats, negative
        lambda n: np.array([1, 2, n // 3]),  # sorted
        lambda n: np.isin(np.arange(n), [7, n - 5]),  # a boolean mask
        lambda n: [],
    ],
    ids=["unsorted", "sorted", "mask", "empty"],
)
def test_pick_reads_only_the_objects_holding_the_picks(pick):
    ds, per_leaf = _open()
    full = ds.compute()
    positions = pick(ds.sizes["cells"])
    rows = (
        np.flatnonzero(positions)
        if np.asarray(positions).dtype == bool
        else np.asarray(positions, dtype=np.int64) % ds.sizes["cells"]
    )
    touched = np.unique(rows // per_leaf).size
    with _quiet(), count_requests() as counter:
        got = pick_cells(ds, positions).compute()
    with _quiet():
        expected = full.isel(cells=positions)
    assert counter.kind("chunk:data") == touched * _n_vars(ds), counter.summary()
    assert got.sizes["cells"] == rows.size
    for name in full.variables:
        np.testing.assert_array_equal(got[name].values, expected[name].values, err_msg=name)


def test_pick_by_cell_id_reads_only_their_objects():
    ds, per_leaf = _open()
    full = ds.compute()
    at = np.array([5 * per_leaf // 2, 1])
    words = full["morton"].values[at]
    with _quiet(), count_requests() as counter:
        got = pick_cells(ds, morton=words).compute()
    assert counter.kind("chunk:data") == 2 * _n_vars(ds), counter.summary()
    np.testing.assert_array_equal(got["morton"].values, words)
    np.testing.assert_array_equal(got["count"].values, full["count"].values[at])


def test_pick_stays_lazy_and_its_slices_read_only_their_objects():
    ds, per_leaf = _open()
    with count_requests() as counter:
        picked = pick_cells(ds, np.arange(0, ds.sizes["cells"], per_leaf // 2))  # two cells of every leaf
    assert counter.gets == 0, "picking reads nothing"
    assert picked["count"].chunks is not None
    with count_requests() as counter:
        head = picked["count"].isel(cells=slice(0, 4)).values  # the first two leaves' picks
    assert counter.kind("chunk:data") == 2, counter.summary()
    np.testing.assert_array_equal(head, ds["count"].values[np.arange(0, 4) * (per_leaf // 2)])


def test_pick_of_persisted_values_reads_nothing():
    ds, _ = _open()
    held = ds.persist()
    with _quiet(), count_requests() as counter:
        got = pick_cells(held, [9, 1]).compute()
    assert counter.gets == 0, counter.summary()
    np.testing.assert_array_equal(got["count"].values, ds["count"].values[[9, 1]])


def test_pick_of_an_aoi_open_keeps_the_aoi_rows():
    full_ds, _ = _open()
    leaves = full_ds.attrs["morton_hive"]["leaves"]
    ds = moczarr.open_hive(fixture_path(STORE), aoi=[leaves[1], leaves[3], leaves[5]])
    whole = ds.compute()
    positions = np.array([ds.sizes["cells"] - 1, 0, -2])  # the first and the last AOI leaf
    with _quiet(), count_requests() as counter:
        got = pick_cells(ds, positions).compute()
    assert counter.kind("chunk:data") == 2 * _n_vars(ds), counter.summary()
    np.testing.assert_array_equal(got["h_mean"].values, whole["h_mean"].values[positions])


def test_pick_refuses_bad_arguments():
    ds, _ = _open()
    with pytest.raises(moczarr.errors.ArgumentError, match="exactly one"):
        pick_cells(ds)
    with pytest.raises(moczarr.errors.ArgumentError, match="1-D integer"):
        pick_cells(ds, np.array([[1, 2]]))
    with pytest.raises(IndexError, match="out of bounds"):
        pick_cells(ds, [ds.sizes["cells"]])
    with pytest.raises(IndexError, match="boolean index"):
        pick_cells(ds, np.ones(3, dtype=bool))
    with pytest.raises(moczarr.errors.ArgumentError, match="verify_chunks must be None, True or False"):
        pick_cells(ds, [1], verify_chunks="yes")


@pytest.mark.slow
def test_pick_computes_on_a_process_cluster(client):
    ds, per_leaf = _open()
    positions = np.array([3 * per_leaf + 1, 2, 2])
    with _quiet():
        picked = pick_cells(ds, positions)
    remote = client.compute(picked["h_mean"].data).result()
    np.testing.assert_array_equal(remote, ds["h_mean"].values[positions])


# -- pick_values: one variable's picked values, read now without dask -------------------------------------------
PICKS = [
    lambda n: np.array([n - 1, 3, 3, n // 2, 0, -1]),  # unsorted, repeats, negative
    lambda n: np.arange(0, n, 7),  # sorted, across every leaf
    lambda n: np.isin(np.arange(n), [7, n - 5]),  # a boolean mask
    lambda n: np.array([], dtype=np.int64),
]
PICK_IDS = ["unsorted", "sorted", "mask", "empty"]


@pytest.mark.parametrize("pick", PICKS, ids=PICK_IDS)
@pytest.mark.parametrize("name", ["count", "h_mean"])
def test_pick_values_are_pick_cells_values_read_from_only_the_objects_holding_them(pick, name):
    ds, per_leaf = _open()
    positions = pick(ds.sizes["cells"])
    rows = (
        np.flatnonzero(positions)
        if np.asarray(positions).dtype == bool
        else np.asarray(positions, dtype=np.int64) % ds.sizes["cells"]
    )
    with _quiet():
        expected = pick_cells(ds, positions)[name].compute().values
    with count_requests() as counter:
        got = pick_values(ds[name], positions)
    assert isinstance(got, np.ndarray) and got.dtype == ds[name].dtype
    np.testing.assert_array_equal(got, expected)
    assert counter.kind("chunk:data") == np.unique(rows // per_leaf).size, counter.summary()


@pytest.mark.parametrize("pick", PICKS[:2], ids=PICK_IDS[:2])
def test_pick_values_of_a_variable_stacked_on_windows_are_pick_cells_values(pick):
    ds = moczarr.open_level(fixture_path("zagg/windowed/store"), 8, time=("2019-01-01", "2021-01-01"))
    assert ds["count"].dims == ("window", "cells") and ds.sizes["window"] > 1
    positions = pick(ds.sizes["cells"])
    with _quiet():
        expected = pick_cells(ds, positions)["count"].compute().values
    got = pick_values(ds["count"], positions)
    assert got.shape == (ds.sizes["window"], positions.size)
    np.testing.assert_array_equal(got, expected)


def test_pick_values_of_one_window_read_only_their_objects():
    ds = moczarr.open_level(fixture_path("zagg/windowed/store"), 8, window="2020")
    leaves = ds.attrs["morton_hive"]["leaves"]
    per_leaf = ds.sizes["cells"] // len(leaves)
    positions = np.array([-1, 2, 1])  # the last leaf and the first
    with count_requests() as counter:
        got = pick_values(ds["count"], positions)
    assert counter.kind("chunk:data") == 2, counter.summary()
    np.testing.assert_array_equal(got, ds["count"].values[positions])
    assert per_leaf > 2


def test_pick_values_of_persisted_values_read_nothing():
    ds, _ = _open()
    held = ds.persist()
    with count_requests() as counter:
        got = pick_values(held["count"], [9, 1, -1])
    assert counter.gets == 0, counter.summary()
    np.testing.assert_array_equal(got, ds["count"].values[[9, 1, -1]])


def test_pick_values_parse_the_codec_chain_once_per_variable(monkeypatch):
    from moczarr.dataplane import reads

    ds, per_leaf = _open()
    made = []
    real = reads.ChunkDecoder

    def counted(*args, **kwargs):
        made.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(reads, "ChunkDecoder", counted)
    first = pick_values(ds["count"], [0, per_leaf])
    second = pick_values(ds["count"], [2 * per_leaf, 1])
    assert len(made) == 1, made  # the open's source parses it; its picks share it
    np.testing.assert_array_equal(np.concatenate([first, second]), ds["count"].values[[0, per_leaf, 2 * per_leaf, 1]])


def test_pick_values_refuse_bad_arguments():
    ds, _ = _open()
    with pytest.raises(moczarr.errors.ArgumentError, match="1-D integer"):
        pick_values(ds["count"], np.array([[1, 2]]))
    with pytest.raises(IndexError, match="out of bounds"):
        pick_values(ds["count"], [ds.sizes["cells"]])
    with pytest.raises(moczarr.errors.ArgumentError, match="verify_chunks"):
        pick_values(ds["count"], [1], verify_chunks="yes")
    with pytest.raises(moczarr.errors.ArgumentError, match="verify_chunks=True"):
        pick_values(ds["count"], [1], verify_chunks=True)  # opened without verify_chunks: no digests kept
