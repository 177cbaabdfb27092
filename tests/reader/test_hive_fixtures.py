"""open_hive / open_leaf against the real fixture stores and their writer-side goldens."""

from __future__ import annotations

import warnings

import mortie
import numpy as np
import pytest

import moczarr
from moczarr import ids
from moczarr.storage import count_requests
from tests.helpers import fixture_path, load_json

ZAGG_BARE = ["single_8", "versioned", "single_ragged"]


def _decode(payload: bytes, dtype="<f4", inner=2):
    return np.frombuffer(payload, dtype=dtype).reshape(-1, inner) if inner else np.frombuffer(payload, dtype=dtype)


def check_totals(ds, totals: dict, rtol: float):
    """Compare a Dataset with the golden per-variable totals computed from the input points."""
    count = ds["count"].values
    assert int(count.sum()) == totals["count_sum"]
    assert int((count > 0).sum()) == totals["n_occupied_cells"]
    for key, want in totals.items():
        if key in ("count_sum", "n_occupied_cells"):
            continue
        var, _, how = key.rpartition("_")
        if var not in ds:
            continue
        values = ds[var].values.astype("f8")
        got = {"min": np.nanmin, "max": np.nanmax, "sum": np.nansum}[how](values)
        np.testing.assert_allclose(got, want, rtol=rtol, err_msg=key)


@pytest.mark.layers
@pytest.mark.parametrize("name", ZAGG_BARE)
def test_zagg_bare_stores_match_golden(name):
    golden = load_json(fixture_path(f"zagg/{name}/golden.json"))
    product = golden["products"]["."]
    root = fixture_path(f"zagg/{name}/store")
    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.errors.MoczarrWarning)
        ds = moczarr.open_hive(root)
    assert ds.sizes["cells"] == product["n_rows"]
    assert ds.attrs["morton_hive"]["leaves"] == product["shards"]
    for debris in product.get("debris_leaves") or []:
        assert debris not in ds.attrs["morton_hive"]["leaves"]
    words = ds["morton"].values
    assert words.dtype == np.uint64 and np.all(np.diff(words.astype(object)) > 0)
    check_totals(ds, product["totals"], product["float_rtol"])
    if product["leaf_versions"]:
        assert ds.attrs["morton_hive"]["n_versioned"] > 0


@pytest.mark.layers
def test_zagg_windowed_store_per_window():
    golden = load_json(fixture_path("zagg/windowed/golden.json"))["products"]["."]
    root = fixture_path("zagg/windowed/store")
    for window, expect in golden["by_window"].items():
        ds = moczarr.open_hive(root, window=window)
        assert ds.sizes["cells"] == expect["n_rows"]
        assert ds.attrs["morton_hive"]["leaves"] == expect["shards"]
        assert ds.attrs["morton_hive"]["window"] == window
        check_totals(ds, expect["totals"], golden["float_rtol"])


@pytest.mark.layers
def test_zagg_multi_products_open_one_by_one():
    golden = load_json(fixture_path("zagg/multi/golden.json"))
    root = fixture_path("zagg/multi/store")
    assert moczarr.list_products(root) == sorted(p["path"] for p in golden["products"].values())
    for product in golden["products"].values():
        if product["windowed"]:
            for window, expect in product["by_window"].items():
                ds = moczarr.open_hive(root / product["path"], window=window)
                check_totals(ds, expect["totals"], product["float_rtol"])
        else:
            ds = moczarr.open_hive(root / product["path"])
            assert ds.sizes["cells"] == product["n_rows"]
            check_totals(ds, product["totals"], product["float_rtol"])


@pytest.mark.layers
def test_ragged_digest_bytes_decode_to_counts():
    golden = load_json(fixture_path("zagg/single_ragged/golden.json"))["products"]["."]
    ds = moczarr.open_hive(fixture_path("zagg/single_ragged/store"))
    ragged = [v for v in ds.data_vars if "ragged" in ds[v].attrs]
    assert ragged, "the ragged store exposes its digests as vlen-bytes variables"
    var = ds[ragged[0]]
    element = var.attrs["ragged"]["element"]
    payloads = var.values
    assert payloads.dtype == object
    counts = ds["count"].values
    for payload, count in zip(payloads, counts, strict=True):
        arr = np.frombuffer(payload, dtype=np.dtype(element["dtype"]).newbyteorder("<"))
        if count == 0:
            assert arr.size == 0
        else:
            assert arr.size > 0
    assert golden["debris_leaves"], "the fixture has a debris leaf"
    assert not set(golden["debris_leaves"]) & set(ds.attrs["morton_hive"]["leaves"])


SPEC_STORES = ["minimal", "versioned", "flux", "kitchen_sink", "temporal", "column"]


@pytest.mark.layers
@pytest.mark.parametrize("name", SPEC_STORES)
def test_spec_stores_decode_expected_values(name):
    expected = load_json(fixture_path(f"spec/{name}.expected.json"))
    root = fixture_path(f"spec/{name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.CoverageFallbackWarning)  # most spec stores have no root MOC
        ds = moczarr.open_hive(root)
    assert ds.sizes["cells"] == 4 ** (expected["cell_order"] - expected["shard_order"])
    shard = ids.to_words(expected["shard"])[0]
    children = np.asarray(mortie.generate_morton_children(shard, expected["cell_order"]), dtype=np.uint64)
    np.testing.assert_array_equal(ds["morton"].values, children)
    count = ds["count"].values
    want = np.zeros_like(count)
    for cell in expected["cells"]:
        i = cell["index"]
        assert ds["morton"].values[i] == np.uint64(int(cell["morton"]))
        want[i] = cell["count"]
        digest_name = "h_tdigest" if "h_tdigest" in cell else None
        if digest_name:
            got = _decode(ds[digest_name].values[i])
            np.testing.assert_allclose(got, np.asarray(cell[digest_name], dtype="f4"), rtol=1e-6)
    np.testing.assert_array_equal(count, want)


@pytest.mark.layers
def test_raster_toc_time_and_bands():
    expected = load_json(fixture_path("spec/raster_toc.expected.json"))
    ds = moczarr.open_hive(fixture_path("spec/raster_toc"))
    assert ds["red"].dims == ("time", "cells")
    np.testing.assert_array_equal(ds["red"].values, np.asarray(expected["bands"]["red"]))
    np.testing.assert_array_equal(
        ds["time"].values, np.asarray([int(w) for w in expected["time_words"]], dtype=np.uint64)
    )


@pytest.mark.layers
def test_serc_hive_skips_debris_and_matches_nested_golden():
    root = fixture_path("serc_hive")
    ds = moczarr.open_hive(root)
    assert "4332313" not in ds.attrs["morton_hive"]["leaves"]
    assert ds.attrs["morton_hive"]["leaves"] == ["4331244", "4331421", "4331422", "4331424", "4332133", "4332311"]
    golden = np.load(fixture_path("serc_cell_ids_golden.npy"))
    cell_ids = ds["cell_ids"].values
    assert cell_ids.dtype == np.uint64
    np.testing.assert_array_equal(np.sort(cell_ids), np.sort(golden.astype(np.uint64)))
    np.testing.assert_array_equal(cell_ids, golden.astype(np.uint64))


@pytest.mark.layers
def test_serc_pg3_grouped_paths():
    ds = moczarr.open_hive(fixture_path("serc_hive_pg3"))
    assert ds.sizes["cells"] > 0
    assert any(leaf.startswith("-") for leaf in ds.attrs["morton_hive"]["leaves"])
    assert int((ds["count"].values > 0).sum()) == ds.attrs["morton_hive"]["cells_with_data"]


@pytest.mark.layers
@pytest.mark.parametrize("product", ["atl06", "atl06_pg3", "atl06_ragged"])
def test_multiproduct_hive_products(product):
    ds = moczarr.open_hive(fixture_path(f"multiproduct_hive/{product}"))
    assert ds.sizes["cells"] == ds.attrs["morton_hive"]["n_leaves"] * 4 ** (
        ds.attrs["morton_hive"]["cell_order"] - ds.attrs["morton_hive"]["shard_order"]
    )
    if "count" in ds:
        assert int((ds["count"].values > 0).sum()) == ds.attrs["morton_hive"]["cells_with_data"]
    else:  # digest-only (hand-built) product: payloads exist, never more than the stamp claims
        occupied = int(sum(len(p) > 0 for p in ds["h_li_tdigest"].values))
        assert 0 < occupied <= ds.attrs["morton_hive"]["cells_with_data"]
        assert ds["h_li_tdigest_locations"].values.shape == ds["h_li_tdigest"].values.shape


@pytest.mark.layers
def test_multiproduct_windows_product_requires_window():
    root = fixture_path("multiproduct_hive/atl06_windows")
    with pytest.raises(moczarr.errors.WindowError, match="2019"):
        moczarr.open_hive(root)
    ds = moczarr.open_hive(root, window="2019")
    assert ds.attrs["morton_hive"]["window"] == "2019"


@pytest.mark.layers
def test_open_leaf_matches_open_hive_rows():
    root = fixture_path("serc_hive")
    whole = moczarr.open_hive(root)
    leaf = moczarr.open_leaf(root, "4331421")
    assert leaf.sizes["cells"] == 16
    sel = whole.sel(cells=np.isin(whole["morton"].values, leaf["morton"].values))
    np.testing.assert_array_equal(sel["count"].values, leaf["count"].values)


@pytest.mark.conformance("pins spec/versioned's run id and its writer-side counts")
def test_open_leaf_follows_version_pointer_with_threaded_stamp():
    root = fixture_path("spec/versioned")
    stamps = moczarr.read_commits(root, ["1/1/2/1/3/11213.zarr"])
    stamp = stamps["1/1/2/1/3/11213.zarr"]
    assert stamp["current"] == "run-specfixture-153bc66a"
    with count_requests() as counter:
        ds = moczarr.open_leaf(root, "11213", stamp=stamp)
    assert counter.kind("stamp") == 0, "a threaded stamp saves the root-stamp GET"
    expected = load_json(fixture_path("spec/versioned.expected.json"))
    want = {c["index"]: c["count"] for c in expected["cells"]}
    got = ds["count"].values
    assert {i: int(got[i]) for i in np.flatnonzero(got)} == want


def test_leaf_data_prefix_rule():
    assert moczarr.leaf_data_prefix("a/1.zarr", {"current": "run-x-1"}) == "a/1.zarr/run-x-1"
    assert moczarr.leaf_data_prefix("a/1.zarr", {"current": None}) == "a/1.zarr"
    assert moczarr.leaf_data_prefix("a/1.zarr", {}) == "a/1.zarr"
    for bad in ["v1", "8", "run-a/8", "../run-a", "", 3, ["run-a"]]:
        with pytest.raises(moczarr.errors.VersionPointerError):
            moczarr.leaf_data_prefix("a/1.zarr", {"current": bad})


@pytest.mark.layers
def test_bitmaps_decode_exactly():
    root = fixture_path("spec/minimal")
    words = moczarr.read_coverage_bitmap(root, "11213")
    assert ids.to_decimals(words) == ["1121311", "1121313", "1121322", "1121344"]
    serc = moczarr.read_coverage_bitmap(fixture_path("serc_hive"), "4331422")
    assert ids.to_decimals(serc) == ["433142224"]
    # versioned leaf: the sidecar lives under the version
    ver = moczarr.read_coverage_bitmap(fixture_path("spec/versioned"), "11213")
    np.testing.assert_array_equal(ver, words)
    full = moczarr.read_coverage_bitmap(
        fixture_path("multiproduct_hive/atl06_windows"),
        ids.to_decimal(
            moczarr.open_hive(fixture_path("multiproduct_hive/atl06_windows"), window="2019")["morton"].values[0]
        )[:-2]
        + "_2019",
    )
    assert full.size == 16


@pytest.mark.layers
def test_manifest_only_spec_store_has_no_coverage():
    """spec/pyramid is the writer's manifest-only fixture: there is nothing to open, and the reader says so."""
    with (
        pytest.warns(moczarr.errors.CoverageFallbackWarning),
        pytest.raises(moczarr.errors.NoCoverageError, match="spec/pyramid"),
    ):
        moczarr.open_hive(fixture_path("spec/pyramid"))
    assert moczarr.read_manifest(fixture_path("spec/pyramid")).pyramid["spec"] == "zagg-pyramid/2"
