"""The same opens over ``s3://`` (moto's S3 server on 127.0.0.1, real HTTP) as over local paths.

The session's server (``s3_server``, tests/conftest.py) holds two buckets of this module's:

- ``moczarr-public``: every fixture store used here, with a bucket policy
  allowing anonymous ``GetObject``/``ListBucket``; read with
  ``storage_options={"anon": True, "client_kwargs": {"endpoint_url": ...}}``
  (unsigned requests).
- ``moczarr-private``: a few of them, no policy; read with ``key``/``secret``.
  Moto refuses anonymous object reads there (403), which the tests check; it
  does not verify the secret itself (see ``tests/s3server.py`` for exactly
  what moto enforces).

Datasets opened over S3 must equal the local opens (values, ``morton``,
coordinates, attrs), and the request counter must see the same requests, each
one exactly one HTTP request on the wire. These options map onto obstore, the
default client; the request-count tests run on s3fs too
(``moczarr_backend="s3fs"``), and ``tests/reader/test_s3_backends.py`` compares the two.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import xarray as xr

import moczarr
from moczarr import ids
from moczarr.storage import count_requests
from tests.helpers import fixture_path, has_fixture, load_json, local_cluster
from tests.s3server import S3Server

pytestmark = [pytest.mark.layers, pytest.mark.s3]

PUBLIC = "moczarr-public"
PRIVATE = "moczarr-private"
PUBLIC_STORES = [
    "serc_hive",
    "zagg/single_8/store",
    "zagg/windowed/store",
    "zagg/versioned/store",
    "multiproduct_hive",
    "spec/versioned",
]
# the signed path differs from the anonymous one only in how requests are signed: a few stores suffice
PRIVATE_STORES = ["spec/versioned", "multiproduct_hive"]

ACCESS = {"anon": (PUBLIC, True), "credentials": (PRIVATE, False)}


@pytest.fixture(scope="module")
def s3(s3_server, store_layer):
    local = {name: fixture_path(name) for name in PUBLIC_STORES if has_fixture(name)}
    for bucket, public, names in ((PUBLIC, True, PUBLIC_STORES), (PRIVATE, False, PRIVATE_STORES)):
        s3_server.bucket(bucket, public=public)  # empty: the other layer's run of this module filled it
        for name in names:
            if name in local:
                s3_server.upload_tree(local[name], bucket, name)
    return s3_server


class Remote:
    """Where a fixture lives on the server, and how to read it."""

    def __init__(self, server: S3Server, access: str):
        self.server = server
        self.bucket, self.anon = ACCESS[access]
        self.options = server.storage_options(anon=self.anon)

    def url(self, name: str) -> str:
        return f"s3://{self.bucket}/{name}"

    def kw(self) -> dict:
        return {"storage_options": self.options}

    def on(self, backend: str) -> Remote:
        """The same remote read through ``backend`` (``obstore`` or ``s3fs``)."""
        self.options = {**self.options, "moczarr_backend": backend}
        return self


BACKENDS = pytest.mark.parametrize("backend", ["obstore", "s3fs"])


@pytest.fixture
def public(s3) -> Remote:
    return Remote(s3, "anon")


@pytest.fixture
def private(s3) -> Remote:
    return Remote(s3, "credentials")


def opened(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and the warning categories it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    return result, sorted({w.category.__name__ for w in caught})


def assert_same_dataset(remote: xr.Dataset, local: xr.Dataset) -> None:
    assert all(v.chunks is not None for v in remote.data_vars.values()), "the S3 open is lazy"
    remote, local = remote.load(), local.load()
    xr.testing.assert_identical(remote, local)
    assert remote.attrs == local.attrs
    np.testing.assert_array_equal(remote["morton"].values, local["morton"].values)
    assert remote["morton"].dtype == np.uint64
    for name in local.variables:
        assert remote[name].attrs == local[name].attrs, name
        np.testing.assert_array_equal(remote[name].values, local[name].values, err_msg=name)


# -- open_hive --------------------------------------------------------------------------------------
BARE = [
    "serc_hive",
    "zagg/single_8/store",
    "zagg/versioned/store",
    "spec/versioned",  # no root MOC: the discovery walk LISTs over S3
    "multiproduct_hive/atl06",
    "multiproduct_hive/atl06_pg3",
    "multiproduct_hive/atl06_ragged",
]


@pytest.mark.parametrize("name", BARE)
def test_open_hive_anonymous_equals_local(public, name):
    local, local_warnings = opened(moczarr.open_hive, fixture_path(name))
    remote, remote_warnings = opened(moczarr.open_hive, public.url(name), **public.kw())
    assert remote_warnings == local_warnings
    assert_same_dataset(remote, local)


@pytest.mark.parametrize("name", ["multiproduct_hive/atl06", "multiproduct_hive/atl06_ragged", "spec/versioned"])
def test_open_hive_with_credentials_equals_local(private, name):
    local, _ = opened(moczarr.open_hive, fixture_path(name))
    remote, _ = opened(moczarr.open_hive, private.url(name), **private.kw())
    assert_same_dataset(remote, local)


def test_anonymous_read_of_private_bucket_is_refused_not_absent(s3):
    """A 403 is an error, never "no manifest here" (absence is only trusted from a clean miss)."""
    anon = s3.storage_options(anon=True)
    with pytest.raises(PermissionError):
        moczarr.open_hive(f"s3://{PRIVATE}/multiproduct_hive/atl06", storage_options=anon)
    with pytest.raises(PermissionError):
        moczarr.list_products(f"s3://{PRIVATE}/multiproduct_hive", storage_options=anon)


def test_windowed_store_per_window(public):
    name = "zagg/windowed/store"
    golden = load_json(fixture_path("zagg/windowed/golden.json"))["products"]["."]
    for window, expect in golden["by_window"].items():
        local = moczarr.open_hive(fixture_path(name), window=window)
        remote = moczarr.open_hive(public.url(name), window=window, **public.kw())
        assert remote.attrs["morton_hive"]["window"] == window
        assert remote.attrs["morton_hive"]["leaves"] == expect["shards"]
        assert remote.sizes["cells"] == expect["n_rows"]
        assert_same_dataset(remote, local)
        assert int(remote["count"].sum()) == expect["totals"]["count_sum"]
    with pytest.raises(moczarr.errors.WindowError, match="2019"):
        moczarr.open_hive(public.url(name), **public.kw())


def test_multiproduct_windows_product(public):
    name = "multiproduct_hive/atl06_windows"
    with pytest.raises(moczarr.errors.WindowError, match="2019"):
        moczarr.open_hive(public.url(name), **public.kw())
    for window in ("2019", "2020"):
        local = moczarr.open_hive(fixture_path(name), window=window)
        assert_same_dataset(moczarr.open_hive(public.url(name), window=window, **public.kw()), local)


def test_versioned_store_matches_golden(public):
    name = "zagg/versioned/store"
    golden = load_json(fixture_path("zagg/versioned/golden.json"))["products"]["."]
    ds = moczarr.open_hive(public.url(name), **public.kw())
    assert ds.attrs["morton_hive"]["n_versioned"] > 0
    assert ds.sizes["cells"] == golden["n_rows"]
    assert int(ds["count"].sum()) == golden["totals"]["count_sum"]


def test_aoi_open_equals_local(public):
    name = "serc_hive"
    aoi = ["4331421", "43314223"]
    local = moczarr.open_hive(fixture_path(name), aoi=aoi)
    remote = moczarr.open_hive(public.url(name), aoi=aoi, **public.kw())
    assert 0 < remote.sizes["cells"] < moczarr.open_hive(public.url(name), **public.kw()).sizes["cells"]
    assert_same_dataset(remote, local)


def test_s3_dataset_pickles(public):
    ds = moczarr.open_hive(public.url("zagg/single_8/store"), **public.kw())
    back = pickle.loads(pickle.dumps(ds))
    assert back["count"].chunks == ds["count"].chunks
    xr.testing.assert_identical(back.load(), ds.load())


@pytest.mark.slow
def test_s3_dataset_computes_on_a_process_cluster(public):
    """Worker processes rebuild the store handle from the pickle and read over HTTP themselves."""
    golden = load_json(fixture_path("zagg/single_8/golden.json"))["products"]["."]["totals"]
    ds = moczarr.open_hive(public.url("zagg/single_8/store"), **public.kw())
    with local_cluster() as client, public.server.count_http() as http, count_requests() as here:
        total = int(client.compute(ds["count"].sum()).result())
    assert total == golden["count_sum"]
    assert here.gets == 0, "the client process read nothing"
    assert (http.heads, http.lists, http.object_gets) == (0, 0, ds.attrs["morton_hive"]["n_leaves"]), dict(http)


@pytest.mark.conformance("pins spec/versioned's run id")
# -- open_leaf, read_coverage_bitmap, read_commits --------------------------------------------------
@pytest.mark.parametrize("access", ["anon", "credentials"])
def test_open_leaf_follows_version_pointer(s3, access):
    remote = Remote(s3, access)
    name, leaf, path = "spec/versioned", "11213", "1/1/2/1/3/11213.zarr"
    local = moczarr.open_leaf(fixture_path(name), leaf)
    assert_same_dataset(moczarr.open_leaf(remote.url(name), leaf, **remote.kw()), local)
    stamps = moczarr.read_commits(remote.url(name), [path], **remote.kw())
    assert stamps[path]["current"] == "run-specfixture-153bc66a"
    with count_requests() as counter:
        threaded = moczarr.open_leaf(remote.url(name), leaf, stamp=stamps[path], **remote.kw())
    assert counter.kind("stamp") == 0, "a threaded stamp saves the root-stamp GET over S3 too"
    assert_same_dataset(threaded, local)


@pytest.mark.parametrize("leaf", ["4331421", "4331422"])
def test_open_leaf_serc(public, leaf):
    local = moczarr.open_leaf(fixture_path("serc_hive"), leaf)
    assert_same_dataset(moczarr.open_leaf(public.url("serc_hive"), leaf, **public.kw()), local)


def test_open_leaf_of_debris_is_uncommitted(public):
    with pytest.raises(moczarr.errors.UncommittedError):
        moczarr.open_leaf(public.url("serc_hive"), "4332313", **public.kw())


@pytest.mark.parametrize(
    "name,leaf",
    [
        ("spec/versioned", "11213"),  # the sidecar lives under the version
        ("serc_hive", "4331422"),
        ("serc_hive", "4331244"),
        ("zagg/versioned/store", "1111112"),
        ("zagg/windowed/store", "1111114_2019"),
    ],
)
def test_read_coverage_bitmap(public, name, leaf):
    local = moczarr.read_coverage_bitmap(fixture_path(name), leaf)
    remote = moczarr.read_coverage_bitmap(public.url(name), leaf, **public.kw())
    assert remote is not None and remote.dtype == np.uint64 and remote.size > 0
    np.testing.assert_array_equal(remote, local)


def test_read_coverage_bitmap_of_an_absent_leaf_is_no_answer(public):
    """1111114 has no 2020 leaf: a clean 404 on the stamp reads as "no answer", as locally."""
    name = "zagg/windowed/store"
    assert moczarr.read_coverage_bitmap(fixture_path(name), "1111114_2020") is None
    assert moczarr.read_coverage_bitmap(public.url(name), "1111114_2020", **public.kw()) is None


def test_read_coverage_bitmap_with_credentials(private):
    local = moczarr.read_coverage_bitmap(fixture_path("spec/versioned"), "11213")
    remote = moczarr.read_coverage_bitmap(private.url("spec/versioned"), "11213", **private.kw())
    assert ids.to_decimals(remote) == ["1121311", "1121313", "1121322", "1121344"]
    np.testing.assert_array_equal(remote, local)


# -- list_products ----------------------------------------------------------------------------------
@pytest.mark.parametrize("access", ["anon", "credentials"])
def test_list_products(s3, access):
    remote = Remote(s3, access)
    local = moczarr.list_products(fixture_path("multiproduct_hive"))
    assert local == ["atl06", "atl06_pg3", "atl06_ragged", "atl06_windows"]  # scratch has no manifest
    assert moczarr.list_products(remote.url("multiproduct_hive"), **remote.kw()) == local
    assert moczarr.list_products(remote.url("spec/versioned"), **remote.kw()) == []


def test_list_products_sees_a_product_added_since_the_last_listing(public):
    """fsspec shares one filesystem per option set across opens: its listings must not go stale."""
    root = "fresh/products"
    manifest = fixture_path("zagg/single_8/store/morton_hive.json").read_bytes()
    public.server.put_bytes(PUBLIC, f"{root}/alpha/morton_hive.json", manifest)
    assert moczarr.list_products(public.url(root), **public.kw()) == ["alpha"]
    public.server.put_bytes(PUBLIC, f"{root}/beta/morton_hive.json", manifest)
    assert moczarr.list_products(public.url(root), **public.kw()) == ["alpha", "beta"]
    public.server.delete_prefix(PUBLIC, f"{root}/")


# -- requests over the wire -------------------------------------------------------------------------
@BACKENDS
@pytest.mark.parametrize("index_kind", ["pandas", "moc"])
def test_request_counts_over_s3_equal_local_and_one_http_request_each(public, index_kind, backend):
    """The counter sees the same kinds and numbers over S3, and each counted GET is one HTTP GET."""
    name = "zagg/single_8/store"
    public.on(backend)
    with count_requests() as local_open:
        local = moczarr.open_hive(fixture_path(name), index_kind=index_kind)
    with count_requests() as local_compute:
        local.load()
    with public.server.count_http() as http_open, count_requests() as remote_open:
        remote = moczarr.open_hive(public.url(name), index_kind=index_kind, **public.kw())
    with public.server.count_http() as http_compute, count_requests() as remote_compute:
        remote.load()

    assert remote_open == local_open, (remote_open.summary(), local_open.summary())
    assert remote_compute == local_compute, (remote_compute.summary(), local_compute.summary())
    assert remote_open.lists == 0 and remote_open.kind("chunk:data") == remote_open.kind("chunk:morton") == 0
    assert remote_compute.kind("chunk:morton") == remote_compute.kind("chunk:cell_ids") == 0
    # on the wire: no HEAD before a GET, no LIST, one HTTP GET per counted GET
    assert (http_open.heads, http_open.lists, http_open.object_gets) == (0, 0, remote_open.gets), dict(http_open)
    assert (http_compute.heads, http_compute.lists, http_compute.object_gets) == (0, 0, remote_compute.gets)
    assert http_open.total == remote_open.gets and http_compute.total == remote_compute.gets
    # the figures (see test_requests.py): 8 stamps + manifest + root MOC + group + 10 arrays; 9 vars x 8 leaves
    assert remote_open.summary() == {"GET manifest": 1, "GET metadata": 11, "GET root_moc": 1, "GET stamp": 8}
    assert remote_compute.summary() == {"GET chunk:data": 72}


@BACKENDS
def test_walk_and_roster_request_counts_over_s3(public, backend):
    """LISTs appear only where the algorithm lists: the walk (no root MOC) and the product roster."""
    name = "spec/versioned"
    public.on(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.CoverageFallbackWarning)
        with count_requests() as local:
            moczarr.open_hive(fixture_path(name))
        with public.server.count_http() as http, count_requests() as remote:
            moczarr.open_hive(public.url(name), **public.kw())
    assert remote == local and remote.lists > 0
    assert (http.heads, http.lists, http.object_gets) == (0, remote.lists, remote.gets), dict(http)

    with public.server.count_http() as http, count_requests() as roster:
        products = moczarr.list_products(public.url("multiproduct_hive"), **public.kw())
    # root manifest probe + one LIST + one manifest GET per grammar-conforming child (scratch included)
    assert roster.lists == 1 and roster.kind("manifest") == 1 + len(products) + 1
    assert (http.heads, http.lists, http.object_gets) == (0, 1, roster.gets), dict(http)


@pytest.mark.slow
def test_catalog_cli_end_to_end_over_s3(public, tmp_path):
    """moczarr-catalog build on s3:// roots: the YAML and STAC open back to the same data over S3."""
    import intake

    from moczarr_intake import build
    from moczarr_intake.stac import open_stac, validate_offline

    roots = [public.url("multiproduct_hive"), public.url("zagg/windowed/store")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        written = build(roots, tmp_path, storage_options=public.options, progress=False)
        validate_offline(written.stac)
        cat = intake.open_catalog(str(written.intake))
        entry = cat["multiproduct_hive_atl06"]
        assert entry.describe()["args"]["store_root"] == public.url("multiproduct_hive/atl06")
        assert_same_dataset(entry.to_dask(), moczarr.open_level(fixture_path("multiproduct_hive/atl06"), 5))
        windowed = cat["store_atl06"](window="2020").to_dask()
        assert_same_dataset(windowed, moczarr.open_level(fixture_path("zagg/windowed/store"), 8, window="2020"))
        items = {
            item.id: item
            for item in __import__("pystac").Catalog.from_file(str(written.stac)).get_items(recursive=True)
        }
        item = next(i for k, i in items.items() if k.endswith("o8-2020"))
        assert item.assets["data"].href == public.url("zagg/windowed/store")
        assert_same_dataset(open_stac(item, storage_options=public.options), windowed)
