"""Datasets from ``open_hive`` pickle, and compute on a multi-process ``dask.distributed`` cluster.

Each dask task carries the open call's store handle (a ``CountingStore`` over
a ``LocalStore``); a worker process must rebuild it from the pickle and read
the chunks itself.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import xarray as xr

import moczarr
from tests.helpers import fixture_path, load_json

pytestmark = [pytest.mark.layers, pytest.mark.slow]  # a process cluster: two worker interpreters start

STORE = "zagg/single_8/store"


@pytest.mark.parametrize("index_kind", ["pandas", "moc"])
def test_dataset_pickles(index_kind):
    ds = moczarr.open_hive(fixture_path(STORE), index_kind=index_kind)
    back = pickle.loads(pickle.dumps(ds))
    assert back["count"].chunks == ds["count"].chunks, "still lazy after the round trip"
    assert back.attrs == ds.attrs
    xr.testing.assert_identical(back.load(), ds.load())
    np.testing.assert_array_equal(back["morton"].values, ds["morton"].values)


def test_count_sum_on_a_process_cluster(client):
    golden = load_json(fixture_path("zagg/single_8/golden.json"))["products"]["."]["totals"]
    ds = moczarr.open_hive(fixture_path(STORE))
    total = client.compute(ds["count"].sum()).result()
    assert int(total) == golden["count_sum"]
    # the whole Dataset too: every variable computed on the workers equals the local compute
    remote = client.compute(ds).result()
    xr.testing.assert_identical(remote, ds.compute(scheduler="synchronous"))
    assert set(client.run(lambda: True)) == set(client.scheduler_info()["workers"])


def test_the_workers_did_the_reading(client):
    """The chunk reads happen in the worker processes (their own store handles), not in the client."""
    from moczarr.storage import count_requests

    ds = moczarr.open_hive(fixture_path(STORE))
    with count_requests() as here:
        total = int(client.compute(ds["count"].sum()).result())
    assert total == load_json(fixture_path("zagg/single_8/golden.json"))["products"]["."]["totals"]["count_sum"]
    assert here.kind("chunk:data") == 0, here.summary()
