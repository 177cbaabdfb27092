"""Which object-store client serves a root, and that both read the same values.

obstore serves ``s3://`` roots by default when every storage option maps onto
it (anonymous, or key/secret, with an endpoint and region); s3fs serves the
rest, and ``storage_options={"moczarr_backend": "s3fs"}`` chooses it. Both talk
HTTP to a real moto server on 127.0.0.1 (``tests/s3server.py``). ``gs://`` and
``az://`` cannot be served here: only their option mapping is checked.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import moczarr
from moczarr.storage import RetryPolicy, count_requests, describe_key, make_store, obstore_options

from .conftest import fixture_path

STORE = "zagg/single_8/store"


@pytest.fixture(scope="module")
def s3(s3_server, store_layer):
    for bucket, public in (("pub", True), ("priv", False)):
        s3_server.bucket(bucket, public=public)
        s3_server.upload_tree(fixture_path(STORE), bucket, "single_8")
    return s3_server


def backend(options: dict | None, url: str = "s3://pub/single_8") -> str:
    return type(make_store(url, options)._store).__name__


OBSTORE = {"moczarr_backend": "obstore"}
S3FS = {"moczarr_backend": "s3fs"}


def test_obstore_is_the_default_when_the_options_map(s3):
    anon = s3.storage_options(anon=True)
    signed = s3.storage_options(anon=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the choice is silent either way
        assert backend(anon) == backend(signed) == "VerifiedObjectStore"
        assert backend({**anon, **OBSTORE}) == "VerifiedObjectStore"
        assert backend({**anon, **S3FS}) == backend({**signed, **S3FS}) == "FsspecStore"
        # an option obstore does not take keeps s3fs, unless obstore was asked for by name
        assert backend({**anon, "default_block_size": 2**20}) == "FsspecStore"
        assert backend({**anon, "config_kwargs": {"signature_version": "s3v4"}}) == "FsspecStore"
    with pytest.raises(moczarr.errors.ArgumentError, match="default_block_size"):
        backend({**anon, "default_block_size": 2**20, **OBSTORE})
    with pytest.raises(moczarr.errors.ArgumentError, match="moczarr_backend"):
        backend({**anon, "moczarr_backend": "boto"})


def test_ambient_credentials_and_unknown_aws_regions_stay_on_s3fs(monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    policy = RetryPolicy()
    assert "ambient credentials" in obstore_options("s3://b/p", {}, policy, 8)
    assert "region" in obstore_options("s3://b/p", {"anon": True}, policy, 8)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert obstore_options("s3://b/p", {"anon": True}, policy, 8)["kwargs"]["region"] == "eu-west-1"
    assert "chained" in obstore_options("simplecache::s3://b/p", {"anon": True}, policy, 8)


def test_https_roots_stay_on_fsspec():
    store = make_store("https://example.invalid/store")._store
    assert type(store).__name__ == "FsspecStore"
    with pytest.raises(moczarr.errors.ArgumentError, match="fsspec"):
        make_store("https://example.invalid/store", OBSTORE)


def test_s3_option_mapping():
    mapped = obstore_options(
        "s3://bucket/a/b",
        {
            "key": "K",
            "secret": "S",
            "token": "T",
            "endpoint_url": "https://s3.example.invalid",
            "requester_pays": True,
            "config_kwargs": {"connect_timeout": 2},
        },
        RetryPolicy(deadline=12.0),
        16,
    )
    kw = mapped["kwargs"]
    assert (mapped["store"], mapped["bucket"], kw["prefix"]) == ("S3Store", "bucket", "a/b")
    assert (kw["access_key_id"], kw["secret_access_key"], kw["session_token"]) == ("K", "S", "T")
    assert kw["endpoint"] == "https://s3.example.invalid" and kw["request_payer"] is True
    assert kw["client_options"]["allow_http"] is False
    assert kw["client_options"]["connect_timeout"].total_seconds() == 2
    assert kw["client_options"]["timeout"].total_seconds() == 12.0  # never cut shorter than the budget
    assert kw["retry_config"]["max_retries"] == 0


def test_gcs_option_mapping():
    policy = RetryPolicy()
    anon = obstore_options("gs://bkt/x/y", {"token": "anon"}, policy, 8)
    assert (anon["store"], anon["bucket"], anon["kwargs"]["prefix"]) == ("GCSStore", "bkt", "x/y")
    assert anon["kwargs"]["skip_signature"] is True
    keyfile = obstore_options("gs://bkt", {"token": "/path/sa.json", "project": "p"}, policy, 8)
    assert keyfile["kwargs"]["service_account_path"] == "/path/sa.json" and keyfile["kwargs"]["prefix"] is None
    assert (
        "service_account_path" not in obstore_options("gs://bkt", None, policy, 8)["kwargs"]
    )  # ambient: obstore's chain
    assert "token" in obstore_options("gs://bkt", {"token": "browser"}, policy, 8)
    assert "requester_pays" in obstore_options("gs://bkt", {"requester_pays": True}, policy, 8)
    store = make_store("gs://bkt/x/y", {"token": "anon"})._store  # builds without a request
    assert describe_key(store, "zarr.json") == "gs://bkt/x/y/zarr.json"


def test_azure_option_mapping():
    policy = RetryPolicy()
    sas = obstore_options("az://cont/p", {"account_name": "acct", "sas_token": "sv=1"}, policy, 8)
    assert (sas["store"], sas["bucket"]) == ("AzureStore", "cont")
    assert sas["kwargs"]["account_name"] == "acct" and sas["kwargs"]["sas_key"] == "sv=1"
    key = obstore_options("abfs://cont", {"account_name": "acct", "account_key": "k"}, policy, 8)
    assert key["kwargs"]["account_key"] == "k"
    assert "account_name" in obstore_options("az://cont", {"anon": True}, policy, 8)
    assert "ambient" in obstore_options("az://cont", {"account_name": "acct"}, policy, 8)
    assert "connection_string" in obstore_options(
        "az://cont", {"account_name": "a", "anon": True, "connection_string": "x"}, policy, 8
    )
    store = make_store("az://cont/p", {"account_name": "acct", "anon": True})._store
    assert describe_key(store, "zarr.json") == "az://cont/p/zarr.json"


@pytest.mark.parametrize("extra", [OBSTORE, S3FS], ids=["obstore", "s3fs"])
def test_both_backends_read_what_the_local_store_holds(s3, extra):
    local = moczarr.open_hive(fixture_path(STORE)).load()
    options = {**s3.storage_options(anon=True), **extra}
    with s3.count_http() as http, count_requests() as counter:
        remote = moczarr.open_hive("s3://pub/single_8", storage_options=options)
        n_vars = sum(1 for v in remote.data_vars.values() if v.chunks is not None)
        remote.load()
    xr.testing.assert_identical(remote, local)
    np.testing.assert_array_equal(remote["count"].values, local["count"].values)
    assert counter.kind("chunk:data") == n_vars * remote.attrs["morton_hive"]["n_leaves"], counter.summary()
    assert (http.heads, http.object_gets) == (0, counter.gets), dict(http)  # one HTTP GET per counted GET


@pytest.mark.parametrize("extra", [OBSTORE, S3FS], ids=["obstore", "s3fs"])
def test_refusal_is_a_permission_error_not_absence(s3, extra):
    anon = s3.storage_options(anon=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(moczarr.errors.StoragePermissionError):
            moczarr.open_hive("s3://priv/single_8", storage_options={**anon, **extra})


@pytest.mark.parametrize("extra", [OBSTORE, S3FS], ids=["obstore", "s3fs"])
def test_a_missing_bucket_is_a_missing_root(s3, extra):
    options = {**s3.storage_options(anon=True), **extra}
    with pytest.raises(FileNotFoundError):
        moczarr.open_hive("s3://no-such-bucket/single_8", storage_options=options)
