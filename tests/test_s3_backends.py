"""Which object-store client serves an ``s3://`` root, and that both read the same values.

s3fs serves by default; ``storage_options={"moczarr_backend": "obstore"}`` opts
in to obstore, which takes explicit options only (anonymous, or key/secret, with
an endpoint) and refuses others. Both talk HTTP to a real moto server on
127.0.0.1 (``tests/s3server.py``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import moczarr
from moczarr.storage import count_requests, make_store

from .conftest import fixture_path
from .s3server import S3Server

pytest.importorskip("obstore")
STORE = "zagg/single_8/store"


@pytest.fixture(scope="module")
def s3(store_layer):
    with S3Server() as server:
        server.create_bucket("pub", public=True)
        server.create_bucket("priv")
        server.upload_tree(fixture_path(STORE), "pub", "single_8")
        server.upload_tree(fixture_path(STORE), "priv", "single_8")
        yield server


def backend(options: dict) -> str:
    return type(make_store("s3://pub/single_8", options)._store).__name__


OBSTORE = {"moczarr_backend": "obstore"}


def test_obstore_is_opt_in_and_takes_explicit_options_only(s3):
    anon = s3.storage_options(anon=True)
    signed = s3.storage_options(anon=False)
    assert backend(anon) == backend(signed) == "FsspecStore", "s3fs is the default"
    assert backend({**anon, **OBSTORE}) == backend({**signed, **OBSTORE}) == "_ObjectStore"
    with pytest.raises(moczarr.ArgumentError, match="default_block_size"):
        backend({**anon, "default_block_size": 2**20, **OBSTORE})
    with pytest.raises(moczarr.ArgumentError, match="moczarr_backend"):
        backend({**anon, "moczarr_backend": "boto"})


@pytest.mark.parametrize("extra", [{"moczarr_backend": "obstore"}, {}], ids=["obstore", "s3fs"])
def test_both_backends_read_what_the_local_store_holds(s3, extra):
    local = moczarr.open_hive(fixture_path(STORE)).load()
    options = {**s3.storage_options(anon=True), **extra}
    with count_requests() as counter:
        remote = moczarr.open_hive("s3://pub/single_8", storage_options=options)
        n_vars = sum(1 for v in remote.data_vars.values() if v.chunks is not None)
        remote.load()
    xr.testing.assert_identical(remote, local)
    np.testing.assert_array_equal(remote["count"].values, local["count"].values)
    assert counter.kind("chunk:data") == n_vars * remote.attrs["morton_hive"]["n_leaves"], counter.summary()


def test_obstore_refusal_is_a_permission_error_not_absence(s3):
    anon = s3.storage_options(anon=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(PermissionError):
            moczarr.open_hive("s3://priv/single_8", storage_options={**anon, **OBSTORE})
