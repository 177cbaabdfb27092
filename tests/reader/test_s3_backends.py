"""Which object-store client serves a root, and that both read the same values.

obstore serves ``s3://`` roots by default when every storage option maps onto
it (anonymous, or key/secret, with an endpoint and region); s3fs serves the
rest, and ``storage_options={"moczarr_backend": "s3fs"}`` chooses it. Both talk
HTTP to a real moto server on 127.0.0.1 (``tests/s3server.py``). ``gs://`` and
``az://`` cannot be served here: only their option mapping is checked.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import socket
import sys
import warnings
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import xarray as xr
from zarr.core.buffer import default_buffer_prototype

import moczarr
from moczarr.errors import ObstoreUnsupportedError
from moczarr.storage import (
    AwsCredentialChain,
    RetryPolicy,
    Storage,
    bucket_region,
    count_requests,
    describe_key,
    make_store,
    obstore_options,
)
from tests.helpers import fixture_path
from tests.s3server import ACCESS_KEY, SECRET_KEY

STORE = "zagg/single_8/store"


@pytest.fixture(scope="module")
def s3(s3_server, store_layer):
    # one eu bucket a layer: the process caches a bucket's region, and each layer's run counts its one HEAD
    eu = s3_server.eu_bucket = f"pub-eu-{store_layer}"
    for bucket, public, region in (("pub", True, None), ("priv", False, None), (eu, True, "eu-west-2")):
        s3_server.bucket(bucket, public=public, region=region)
        s3_server.upload_tree(fixture_path(STORE), bucket, "single_8")
    return s3_server


def backend(options: dict | None, url: str = "s3://pub/single_8") -> str:
    return type(make_store(url, options)._store).__name__


OBSTORE = {"moczarr_backend": "obstore"}
S3FS = {"moczarr_backend": "s3fs"}


@pytest.mark.layers
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


def test_what_obstore_cannot_express_is_a_typed_refusal(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    policy = RetryPolicy()
    with pytest.raises(ObstoreUnsupportedError, match="chained"):
        obstore_options("simplecache::s3://b/p", {"anon": True}, policy, 8)
    with pytest.raises(ObstoreUnsupportedError, match="default_block_size"):
        obstore_options("s3://b/p", {"anon": True, "default_block_size": 2**20}, policy, 8)
    with pytest.raises(ObstoreUnsupportedError, match="secret"):
        obstore_options("s3://b/p", {"key": "K"}, policy, 8)
    with pytest.raises(ObstoreUnsupportedError, match="fsspec"):
        obstore_options("https://example.invalid/p", None, policy, 8)
    assert issubclass(ObstoreUnsupportedError, moczarr.errors.ArgumentError)


def test_anon_alone_and_ambient_credentials_map_leaving_region_and_credentials_to_the_open(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    policy = RetryPolicy()
    anon = obstore_options("s3://b/p", {"anon": True}, policy, 8)
    assert (anon.store, anon.bucket, anon.ambient) == ("S3Store", "b", False)
    assert anon.kwargs["skip_signature"] is True and "region" not in anon.kwargs  # found from the bucket at open
    assert "endpoint" not in anon.kwargs
    ambient = obstore_options("s3://b/p", {}, policy, 8)
    assert ambient.ambient and ambient.profile is None and "access_key_id" not in ambient.kwargs
    assert obstore_options("s3://b/p", {"profile": "research"}, policy, 8).profile == "research"
    named = obstore_options("s3://b/p", {"anon": True, "client_kwargs": {"region_name": "eu-west-1"}}, policy, 8)
    assert named.kwargs["region"] == "eu-west-1"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # read from the environment, as the AWS clients do
    from_env = obstore_options("s3://b/p", {"anon": True}, policy, 8)
    assert from_env.kwargs["endpoint"] == "http://127.0.0.1:9" and from_env.kwargs["client_options"]["allow_http"]
    assert "secret" not in repr(obstore_options("s3://b/p", {"key": "K", "secret": "secret"}, policy, 8))


@pytest.fixture
def aws_env(monkeypatch, tmp_path, s3):
    """An AWS environment holding only the server's endpoint: no keys, no profile, no region, no instance metadata."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint_url)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.fspath(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", os.fspath(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


def read_equal(url: str, options: dict | None, client: str = "obstore") -> Storage:
    """Open ``url`` with ``options``, check its client and that it reads what the local store holds."""
    storage = Storage.open(url, options)
    assert storage.client == client, storage
    local = moczarr.open_hive(fixture_path(STORE)).load()
    xr.testing.assert_identical(moczarr.open_hive(storage).load(), local)
    return storage


@pytest.mark.layers
def test_anon_alone_is_served_by_obstore_in_the_buckets_region(s3, aws_env):
    """``{"anon": True}`` and nothing else: obstore, in the region the bucket names (one HEAD, once a process)."""
    with s3.count_http() as http, count_requests() as counter:
        storage = read_equal(f"s3://{s3.eu_bucket}/single_8", {"anon": True})
    assert storage.store._store.store.config["region"] == "eu-west-2"
    assert counter["HEAD", "bucket"] == http.heads == 1
    with s3.count_http() as again:
        assert Storage.open(f"s3://{s3.eu_bucket}/single_8", {"anon": True}).client == "obstore"
    assert again.total == 0  # the region is cached for the process
    assert bucket_region(s3.eu_bucket, s3.endpoint_url) == "eu-west-2"


@pytest.mark.layers
def test_ambient_environment_credentials_use_obstore(s3, aws_env, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    read_equal("s3://priv/single_8", None)  # the bucket refuses anonymous reads: these were signed


@pytest.mark.layers
def test_a_profile_of_the_shared_files_uses_obstore(s3, aws_env, monkeypatch):
    (aws_env / "credentials").write_text(
        f"[reader]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    )
    read_equal("s3://priv/single_8", {"profile": "reader"})
    monkeypatch.setenv("AWS_PROFILE", "reader")
    read_equal("s3://priv/single_8", None)


@pytest.mark.layers
def test_refreshing_credentials_are_a_picklable_provider(s3, aws_env):
    """``credential_process`` with an expiry: botocore refreshes; obstore asks a provider that pickles as a profile."""
    document = {
        "Version": 1,
        "AccessKeyId": ACCESS_KEY,
        "SecretAccessKey": SECRET_KEY,
        "Expiration": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
    }
    script = aws_env / "process.py"
    script.write_text(f"print({json.dumps(json.dumps(document))})\n")
    (aws_env / "config").write_text(f"[profile rotating]\ncredential_process = {sys.executable} {script}\n")
    storage = read_equal("s3://priv/single_8", {"profile": "rotating"})
    provider = storage.store._store.store.credential_provider
    assert isinstance(provider, AwsCredentialChain) and provider()["access_key_id"] == ACCESS_KEY
    clone = pickle.loads(pickle.dumps(storage.store))
    assert clone._store.store.credential_provider.profile == "rotating"
    assert clone._store.store.credential_provider()["secret_access_key"] == SECRET_KEY


@pytest.mark.layers
def test_no_credentials_anywhere_stays_on_s3fs(s3, aws_env):
    assert backend(None, "s3://priv/single_8") == "FsspecStore"
    with pytest.raises(ObstoreUnsupportedError, match="no credentials"):
        backend(OBSTORE, "s3://priv/single_8")


def test_a_server_naming_no_region_gets_the_default(monkeypatch):
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert bucket_region("b", endpoint, timeout=1) is None
    store = make_store("s3://b/p", {"anon": True, "endpoint_url": endpoint})._store
    assert store.store.config["region"] == "us-east-1"


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
    kw = mapped.kwargs
    assert (mapped.store, mapped.bucket, kw["prefix"]) == ("S3Store", "bucket", "a/b")
    assert (kw["access_key_id"], kw["secret_access_key"], kw["session_token"]) == ("K", "S", "T")
    assert kw["endpoint"] == "https://s3.example.invalid" and kw["request_payer"] is True
    assert kw["client_options"]["allow_http"] is False
    assert kw["client_options"]["connect_timeout"].total_seconds() == 2
    assert kw["client_options"]["timeout"].total_seconds() == 12.0  # never cut shorter than the budget
    assert kw["retry_config"]["max_retries"] == 0


def test_gcs_option_mapping():
    policy = RetryPolicy()
    anon = obstore_options("gs://bkt/x/y", {"token": "anon"}, policy, 8)
    assert (anon.store, anon.bucket, anon.kwargs["prefix"]) == ("GCSStore", "bkt", "x/y")
    assert anon.kwargs["skip_signature"] is True
    keyfile = obstore_options("gs://bkt", {"token": "/path/sa.json", "project": "p"}, policy, 8)
    assert keyfile.kwargs["service_account_path"] == "/path/sa.json" and keyfile.kwargs["prefix"] is None
    assert "service_account_path" not in obstore_options("gs://bkt", None, policy, 8).kwargs  # ambient: obstore's chain
    with pytest.raises(ObstoreUnsupportedError, match="token"):
        obstore_options("gs://bkt", {"token": "browser"}, policy, 8)
    with pytest.raises(ObstoreUnsupportedError, match="requester_pays"):
        obstore_options("gs://bkt", {"requester_pays": True}, policy, 8)
    store = make_store("gs://bkt/x/y", {"token": "anon"})._store  # builds without a request
    assert describe_key(store, "zarr.json") == "gs://bkt/x/y/zarr.json"


def test_azure_option_mapping():
    policy = RetryPolicy()
    sas = obstore_options("az://cont/p", {"account_name": "acct", "sas_token": "sv=1"}, policy, 8)
    assert (sas.store, sas.bucket) == ("AzureStore", "cont")
    assert sas.kwargs["account_name"] == "acct" and sas.kwargs["sas_key"] == "sv=1"
    key = obstore_options("abfs://cont", {"account_name": "acct", "account_key": "k"}, policy, 8)
    assert key.kwargs["account_key"] == "k"
    with pytest.raises(ObstoreUnsupportedError, match="account_name"):
        obstore_options("az://cont", {"anon": True}, policy, 8)
    with pytest.raises(ObstoreUnsupportedError, match="ambient"):
        obstore_options("az://cont", {"account_name": "acct"}, policy, 8)
    with pytest.raises(ObstoreUnsupportedError, match="connection_string"):
        obstore_options("az://cont", {"account_name": "a", "anon": True, "connection_string": "x"}, policy, 8)
    store = make_store("az://cont/p", {"account_name": "acct", "anon": True})._store
    assert describe_key(store, "zarr.json") == "az://cont/p/zarr.json"


@pytest.mark.layers
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


@pytest.mark.layers
@pytest.mark.parametrize("extra", [OBSTORE, S3FS], ids=["obstore", "s3fs"])
def test_refusal_is_a_permission_error_not_absence(s3, extra):
    anon = s3.storage_options(anon=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(moczarr.errors.StoragePermissionError):
            moczarr.open_hive("s3://priv/single_8", storage_options={**anon, **extra})


@pytest.mark.layers
@pytest.mark.parametrize("extra", [OBSTORE, S3FS], ids=["obstore", "s3fs"])
def test_a_missing_bucket_is_a_missing_root(s3, extra):
    options = {**s3.storage_options(anon=True), **extra}
    with pytest.raises(FileNotFoundError):
        moczarr.open_hive("s3://no-such-bucket/single_8", storage_options=options)


@pytest.mark.layers
def test_roots_of_one_bucket_share_one_client_each_below_its_own_prefix(s3):
    """One obstore store (one connection pool) per bucket and options; every read, listing and address stays
    below the root's own prefix."""
    s3.upload_tree(fixture_path(STORE), "pub", "shared/a")
    s3.client().put_object(Bucket="pub", Key="shared/b/only-b.json", Body=b'{"b": 1}')
    options = {**s3.storage_options(anon=True), **OBSTORE}
    a = Storage.open("s3://pub/shared/a", options)
    b = Storage.open("s3://pub/shared/b", options)
    inner_a, inner_b = a.store._store, b.store._store
    assert inner_a.store is inner_b.store  # the one client
    assert (inner_a.prefix, inner_b.prefix) == ("shared/a", "shared/b") and inner_a != inner_b
    assert Storage.open("s3://pub/shared/a", s3.storage_options(anon=False)).store._store.store is not inner_a.store

    assert json.loads(b.get_bytes("only-b.json")) == {"b": 1}
    assert a.get_bytes("only-b.json") is None
    assert a.get_bytes("morton_hive.json") == (fixture_path(STORE) / "morton_hive.json").read_bytes()
    assert b.describe("only-b.json") == "s3://pub/shared/b/only-b.json"
    [entries] = a.list_entries([""])
    assert "morton_hive.json" in entries.objects and "only-b.json" not in entries.objects

    async def listed():
        names = [k async for k in inner_b.list()]
        children = [k async for k in inner_a.list_dir("")]
        return names, children, await inner_b.exists("only-b.json"), await inner_a.exists("only-b.json")

    names, children, b_has, a_has = asyncio.run(listed())
    assert names == ["only-b.json"] and b_has and not a_has
    assert "morton_hive.json" in children and "only-b.json" not in children
    clone = pickle.loads(pickle.dumps(inner_b))
    assert clone.prefix == "shared/b" and clone == inner_b


@pytest.mark.layers
def test_a_key_cannot_climb_out_of_its_root(s3):
    s3.client().put_object(Bucket="pub", Key="outside.json", Body=b"{}")
    storage = Storage.open("s3://pub/single_8", {**s3.storage_options(anon=True), **OBSTORE})
    with count_requests() as counter, pytest.raises(moczarr.errors.KeyContainmentError, match=r"\.\./outside"):
        storage.get_bytes("../outside.json")
    assert counter.gets == 0  # refused before any request
    inner = storage.store._store  # and below moczarr's check, obstore refuses the segment itself
    with pytest.raises(ValueError, match="illegal"):
        asyncio.run(inner.get("../outside.json", default_buffer_prototype()))
