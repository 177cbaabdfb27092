"""Multi-product roots and the DataTree view (FORMAT.md §3, §7.10; the seed's "The DataTree view:
open_store" and "Resolution nodes"): list_products, open_store, product nodes with resolution
children, and the structural answers source_orders / overview_orders / finest_source_at."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import xarray as xr

import moczarr
from moczarr import finest_source_at, list_products, open_store, overview_orders, source_orders
from moczarr.errors import (
    EmptySelectionWarning,
    LevelOmittedWarning,
    ManifestError,
    ObjectDroppedWarning,
    WindowError,
)
from moczarr.storage.keys import is_product_name
from tests.helpers import fixture_path, load_json, set_attrs, write_json
from tests.helpers import quiet as _Quiet


def product_dirs(root) -> list[str]:
    """Children of a root holding their own manifest: the roster as the files say it."""
    return sorted(p.name for p in root.iterdir() if (p / "morton_hive.json").is_file())


def level_totals(ds):
    count = ds["count"].values
    occ = count > 0
    return {
        "n_cells": int(occ.sum()),
        "count_sum": int(count.sum()),
        "h_min_min": float(ds["h_min"].values[occ].min()),
        "h_max_max": float(ds["h_max"].values[occ].max()),
        "h_min_sum": float(ds["h_min"].values[occ].astype("f8").sum()),
        "h_max_sum": float(ds["h_max"].values[occ].astype("f8").sum()),
    }


def check_level(ds, want, rtol, label):
    got = level_totals(ds)
    assert (got["n_cells"], got["count_sum"]) == (want["n_cells"], want["count_sum"]), label
    for key in ("h_min_min", "h_max_max", "h_min_sum", "h_max_sum"):
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, err_msg=f"{label} {key}")


def assert_empty_node(node: xr.DataTree):
    assert not node.ds.data_vars and not node.ds.coords and not node.ds.dims


# -- list_products --------------------------------------------------------------------------------------
@pytest.mark.layers
def test_list_products_multiproduct_hive_skips_scratch():
    root = fixture_path("multiproduct_hive")
    roster = list_products(root)
    assert roster == ["atl06", "atl06_pg3", "atl06_ragged", "atl06_windows"]
    assert roster == product_dirs(root)
    assert "scratch" not in roster and (root / "scratch").is_dir()


@pytest.mark.layers
def test_a_roster_given_the_roots_listing_reads_only_the_products_manifests():
    """A caller that has just listed the root (a catalog's walk) gets the same roster without a GET of the root's
    manifest or a second LIST; a child without a manifest (``scratch``) is still no product."""
    from moczarr.format.roster import read_roster
    from moczarr.storage import Storage, count_requests

    root = fixture_path("multiproduct_hive")
    listed = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert "scratch" in listed
    with count_requests() as plain:
        expected = read_roster(Storage.open(root))
    with count_requests() as given:
        roster = read_roster(Storage.open(root), listed=listed)
    assert roster == expected
    assert sorted(roster[1]) == product_dirs(root)
    assert plain.summary() == {"GET manifest": len(listed) + 1, "LIST prefix": 1}  # the root's and each child's
    assert given.summary() == {"GET manifest": len(listed)}


@pytest.mark.layers
@pytest.mark.parametrize("name", ["overview_hive", "zagg/multi/store"])
def test_list_products_matches_writer_goldens(name):
    root = fixture_path(name)
    golden_name = "overview_hive.golden.json" if name == "overview_hive" else "zagg/multi/golden.json"
    assert list_products(root) == sorted(load_json(fixture_path(golden_name))["products"])


@pytest.mark.layers
@pytest.mark.parametrize("name", ["serc_hive", "zagg/pyramid/store", "spec/minimal"])
def test_list_products_bare_store_is_empty(name):
    assert list_products(fixture_path(name)) == []


def test_product_name_grammar():
    for good in ("atl06", "a", "x-1_2", "7", "-7", "0", "a" * 192):
        assert is_product_name(good), good
    for bad in ("ATL06", "1", "-6", "", "a" * 193, "with space", "dot.name", "all.zarr"):
        assert not is_product_name(bad), bad


@pytest.mark.layers
def test_roster_ignores_non_grammar_children_and_raises_on_malformed_manifest(tmp_path, copy_fixture):
    root = copy_fixture("multiproduct_hive")
    (root / "Upper").mkdir()
    write_json(root / "Upper/morton_hive.json", load_json(root / "atl06/morton_hive.json"))
    (root / "notes").mkdir()  # no manifest: not a product
    assert list_products(root) == ["atl06", "atl06_pg3", "atl06_ragged", "atl06_windows"]
    (root / "atl06_ragged/morton_hive.json").write_text("{broken")
    with pytest.raises(ManifestError):
        list_products(root)
    write_json(root / "atl06_ragged/morton_hive.json", {"spec": "not-a-hive"})
    with pytest.raises(ManifestError, match="atl06_ragged"):
        list_products(root)


@pytest.mark.layers
def test_scratch_is_not_openable_as_a_product():
    with pytest.raises(ValueError, match="scratch"):
        open_store(fixture_path("multiproduct_hive"), products=["scratch"], window="2019")


# -- open_store: multi-product roots -----------------------------------------------------------------------
@pytest.mark.layers
def test_open_store_overview_hive_tree_shape():
    root = fixture_path("overview_hive")
    golden = load_json(fixture_path("overview_hive.golden.json"))["products"]
    with _Quiet():
        tree = open_store(root, window="2019")
    assert_empty_node(tree)
    assert tree.attrs["morton_hive_store"] == {"store_root": str(root), "products": ["atl06", "atl06_windows"]}
    assert list(tree.children) == ["atl06", "atl06_windows"]
    for name in ("atl06", "atl06_windows"):
        product = tree[name]
        manifest = load_json(root / name / "morton_hive.json")
        assert_empty_node(product)  # an empty intermediate carrying the identity attrs
        assert product.attrs["semantic_hash"] == manifest["semantic_hash"]
        assert product.attrs["morton_hive"]["cell_order"] == manifest["cell_order"]
        assert product.attrs["zagg_pyramid"]["spec"] == "zagg-pyramid/1"
        assert product.attrs["zagg_pyramid"]["orders"] == golden[name]["pyramid_orders"]
        # /1: children named by the bare integer cell order, finest first
        want = [str(golden[name]["cell_order"]), *golden[name]["overviews"]]
        assert list(product.children) == want
    key = {"atl06": "all", "atl06_windows": "2019"}
    for name, per in golden.items():
        src = tree[f"{name}/{per['cell_order']}"].ds
        assert src.sizes["cells"] == per["source"][key[name]]["n_cells"]
        assert sorted(src.data_vars) == per["source"][key[name]]["variables"]
        assert src.attrs["zagg_objects"] == per["source"][key[name]]["objects"]
        for r, by_window in per["overviews"].items():
            ds = tree[f"{name}/{r}"].ds
            want = by_window[key[name]]
            assert sorted(ds.data_vars) == want["variables"]
            assert int(ds["count"].sum()) == want["count_total"]
            assert ds.attrs["zagg_objects"] == want["objects"]


@pytest.mark.layers
def test_source_child_is_exactly_the_open_hive_dataset():
    root = fixture_path("overview_hive")
    with _Quiet():
        tree = open_store(root, window="2020")
        hive = moczarr.open_hive(root / "atl06_windows", window="2020")
    node = tree["atl06_windows/8"].ds
    xr.testing.assert_identical(node.drop_attrs().compute(), hive.drop_attrs().compute())
    assert node.attrs["morton_hive"] == hive.attrs["morton_hive"]
    assert type(node.xindexes["morton"]) is type(hive.xindexes["morton"])


@pytest.mark.layers
def test_flat_node_is_exactly_the_open_hive_dataset():
    root = fixture_path("zagg/multi/store")
    with _Quiet():
        tree = open_store(root, window="2019")
        for name, window in (("atl06", None), ("atl06_windows", "2019"), ("atl06_versioned", None)):
            hive = moczarr.open_hive(root / name, window=window)
            node = tree[name].ds
            xr.testing.assert_identical(node.drop_attrs().compute(), hive.drop_attrs().compute())
            assert node.attrs["morton_hive"] == hive.attrs["morton_hive"], name
            assert set(node.attrs) == set(hive.attrs) | {"semantic_hash"}
            assert node.attrs["semantic_hash"] == load_json(root / name / "morton_hive.json")["semantic_hash"]


@pytest.mark.layers
def test_open_store_zagg_multi_every_product_matches_golden():
    """Five products: declared-off (flat), windowed flat, /1 (bare integers), /2 (o{r}), versioned flat."""
    root = fixture_path("zagg/multi/store")
    golden = load_json(fixture_path("zagg/multi/golden.json"))["products"]
    for window in ("2019", "2021"):
        with _Quiet():
            tree = open_store(root, window=window)
        assert list(tree.children) == sorted(golden)
        for name, product in golden.items():
            node = tree[name]
            rtol = product["float_rtol"]
            levels = product["by_window"][window]["levels"] if product["windowed"] else product["levels"]
            if not product["pyramid"]["declared"]:
                assert not node.children, name  # flat: the product node holds the data
                check_level(node.ds, levels["8"], rtol, f"{name} {window}")
                assert source_orders(node) == (8,) and overview_orders(node) == ()
                continue
            assert_empty_node(node)
            spec = product["pyramid"]["spec"]
            prefix = "o" if spec == "zagg-pyramid/2" else ""
            orders = [8] + product["pyramid"].get("column_cell_orders", []) + product["pyramid"]["overview_cell_orders"]
            assert list(node.children) == [f"{prefix}{r}" for r in sorted(orders, reverse=True)], name
            for r in orders:
                check_level(node[f"{prefix}{r}"].ds, levels[str(r)], rtol, f"{name} o{r}")
            assert node.attrs["zagg_pyramid"]["spec"] == spec
            assert source_orders(node) == (8,)
            assert overview_orders(node) == tuple(sorted(product["pyramid"]["overview_cell_orders"], reverse=True))


@pytest.mark.layers
def test_window_scopes_windowed_products_only():
    root = fixture_path("zagg/multi/store")
    with _Quiet():
        a = open_store(root, window="2019")
        b = open_store(root, window="2020")
    xr.testing.assert_identical(a["atl06"].ds.compute(), b["atl06"].ds.compute())
    assert a["atl06_windows"].ds.attrs["morton_hive"]["window"] == "2019"
    assert b["atl06_windows"].ds.attrs["morton_hive"]["window"] == "2020"
    assert a["atl06"].ds.attrs["morton_hive"]["window"] is None


@pytest.mark.layers
def test_window_all_is_refused_and_names_the_gap():
    for root in (fixture_path("overview_hive"), fixture_path("zagg/pyramid_windows/store")):
        with pytest.raises(WindowError) as info:
            open_store(root, window="all")
        message = str(info.value)
        assert "'all'" in message
        assert "all-time" in message and "source" in message and "all_time=True" in message


@pytest.mark.layers
def test_windowed_product_needs_a_window():
    with pytest.raises(WindowError, match="2019"):
        open_store(fixture_path("overview_hive"))
    with pytest.raises(WindowError, match="2019"):
        open_store(fixture_path("overview_hive"), products="atl06_windows")
    with _Quiet():
        tree = open_store(fixture_path("overview_hive"), products="atl06")
    assert list(tree.children) == ["atl06"]


@pytest.mark.layers
def test_products_filter_keeps_the_published_roster():
    root = fixture_path("multiproduct_hive")
    with _Quiet():
        tree = open_store(root, products=["atl06_ragged", "atl06"])
    assert sorted(tree.children) == ["atl06", "atl06_ragged"]
    assert tree.attrs["morton_hive_store"]["products"] == list_products(root)
    with pytest.raises(ValueError, match="atl06_pg3"):  # the error lists the roster
        open_store(root, products=["nope"])


@pytest.mark.layers
def test_multiproduct_hive_flat_nodes():
    root = fixture_path("multiproduct_hive")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        tree = open_store(root, window="2019")
    assert list(tree.children) == ["atl06", "atl06_pg3", "atl06_ragged", "atl06_windows"]
    for name, node in tree.children.items():
        manifest = load_json(root / name / "morton_hive.json")
        assert not node.children
        assert source_orders(node) == (manifest["cell_order"],)
        assert overview_orders(node) == ()
        assert node.ds.attrs.get("semantic_hash") == manifest.get("semantic_hash")
    ragged = tree["atl06_ragged"].ds
    assert ragged["h_li_tdigest"].dtype == object and "ragged" in ragged["h_li_tdigest"].attrs


# -- open_store: bare stores -----------------------------------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize(
    "name, node",
    [("zagg/pyramid/store", "atl06"), ("serc_hive", "atl06"), ("spec/minimal", "spec_fixture")],
)
def test_bare_store_is_a_one_child_tree(name, node):
    root = fixture_path(name)
    manifest = load_json(root / "morton_hive.json")
    assert node == manifest["dataset"]["short_name"].lower()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        tree = open_store(root)
    assert_empty_node(tree)
    assert tree.attrs["morton_hive_store"] == {"store_root": str(root), "products": [], "bare": True, "node": node}
    assert list(tree.children) == [node]
    assert tree[node].attrs["semantic_hash"] == manifest["semantic_hash"]
    with pytest.raises(ValueError, match="bare"):
        open_store(root, products=[node])
    with pytest.raises(ValueError, match="bare"):
        open_store(root, products=node)


@pytest.mark.layers
def test_bare_pyramid_store_grows_resolution_children():
    with _Quiet():
        tree = open_store(fixture_path("zagg/pyramid/store"))
        col = open_store(fixture_path("zagg/column/store"))
    assert list(tree["atl06"].children) == ["8", "6", "4"]
    assert list(col["atl06"].children) == ["o8", "o7", "o6", "o5", "o4", "o3", "o2", "o1"]
    assert col["atl06"].attrs["zagg_pyramid"]["spec"] == "zagg-pyramid/2"
    assert col["atl06"].attrs["zagg_pyramid"]["leaf_cells"] == [7]


@pytest.mark.layers
@pytest.mark.parametrize("short_name", ["ATL 06", "3", None, "-2"])
def test_bare_node_name_falls_back_to_product(copy_fixture, short_name):
    root = copy_fixture("zagg/pyramid/store")
    manifest = load_json(root / "morton_hive.json")
    manifest["dataset"]["short_name"] = short_name
    write_json(root / "morton_hive.json", manifest)
    with _Quiet():
        tree = open_store(root)
    assert list(tree.children) == ["product"]
    assert tree.attrs["morton_hive_store"]["node"] == "product"


@pytest.mark.layers
def test_bare_windowed_store_window_rules():
    root = fixture_path("zagg/pyramid_windows/store")
    with pytest.raises(WindowError):
        open_store(root)
    with _Quiet():
        tree = open_store(root, window="2021")
    assert list(tree["atl06"].children) == ["8", "6", "4"]
    assert {o["window"] for o in tree["atl06/6"].ds.attrs["zagg_objects"]} == {"2021"}


# -- AOI: rows, never shape ----------------------------------------------------------------------------------------
@pytest.mark.layers
def test_out_of_coverage_aoi_empties_every_node_schema_correct():
    root = fixture_path("overview_hive")
    with _Quiet():
        full = open_store(root, window="2019")
    with pytest.warns(EmptySelectionWarning):
        tree = open_store(root, window="2019", aoi=["1"])
    assert [n.path for n in tree.subtree] == [n.path for n in full.subtree]
    for node in full.subtree:
        if not node.ds.data_vars:
            continue
        empty = tree[node.path].ds
        assert empty.sizes["cells"] == 0, node.path
        assert sorted(empty.data_vars) == sorted(node.ds.data_vars)
        for var in empty.data_vars:
            assert empty[var].dtype == node.ds[var].dtype
        assert empty["morton"].dtype == np.uint64
    for name in ("atl06", "atl06_windows"):
        assert source_orders(tree[name]) == source_orders(full[name]) == (8,)
        assert overview_orders(tree[name]) == overview_orders(full[name])
    assert overview_orders(tree["atl06"]) == (6, 4)


@pytest.mark.layers
def test_aoi_scopes_rows_in_every_node():
    root = fixture_path("overview_hive")
    with _Quiet():
        tree = open_store(root, window="2019", aoi=["4332311"])
    assert tree["atl06/8"].ds.sizes["cells"] == 16
    assert tree["atl06/6"].ds.sizes["cells"] == 1
    assert tree["atl06/4"].ds.sizes["cells"] == 1
    assert tree["atl06_windows/6"].ds.sizes["cells"] == 1
    assert int(tree["atl06/6"].ds["count"].sum()) == int(tree["atl06/8"].ds["count"].sum())


# -- structural answers -------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_source_and_overview_orders_unaffected_by_aoi_and_window():
    root = fixture_path("zagg/pyramid_windows/store")
    answers = set()
    for window in ("2019", "2020", "2021"):
        for aoi in (None, ["1111144"], ["2"]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EmptySelectionWarning)
                node = open_store(root, window=window, aoi=aoi)["atl06"]
            answers.add(
                (source_orders(node), overview_orders(node), finest_source_at(node, 8), finest_source_at(node, 7))
            )
    assert answers == {((8,), (6, 4), 8, None)}


@pytest.mark.layers
def test_finest_source_at_is_at_or_coarser():
    with _Quiet():
        node = open_store(fixture_path("zagg/pyramid/store"))["atl06"]
    assert finest_source_at(node, 8) == 8
    assert finest_source_at(node, 12) == 8
    assert finest_source_at(node, 7) is None
    with _Quiet():
        flat = open_store(fixture_path("serc_hive"))["atl06"]
    assert source_orders(flat) == (8,) and overview_orders(flat) == ()
    assert finest_source_at(flat, 8) == 8 and finest_source_at(flat, 29) == 8 and finest_source_at(flat, 6) is None


@pytest.mark.layers
def test_roles_are_per_object_source_at_an_overview_order(copy_fixture):
    """An unroled stamped object at an overview node is coarse source: the order carries both roles."""
    root = copy_fixture("overview_hive")
    set_attrs(root / "atl06/4/3/3/1/2/all.zarr/zarr.json", lambda a: a.pop("role"))
    with _Quiet():
        node = open_store(root, products="atl06")["atl06"]
    roles = [o["role"] for o in node["6"].ds.attrs["zagg_objects"]]
    assert roles == ["source", "overview", "overview", "overview"]
    assert source_orders(node) == (8, 6)
    assert overview_orders(node) == (6, 4)
    assert finest_source_at(node, 7) == 6
    assert finest_source_at(node, 5) is None


@pytest.mark.layers
def test_structural_answers_survive_a_dropped_object(copy_fixture):
    root = copy_fixture("overview_hive")
    set_attrs(root / "atl06/4/3/3/all.zarr/zarr.json", lambda a: a.__setitem__("role", "mixed"))
    with pytest.warns(LevelOmittedWarning, match="cell order 4"), pytest.warns(ObjectDroppedWarning):
        node = open_store(root, products="atl06")["atl06"]
    assert list(node.children) == ["8", "6"]
    assert overview_orders(node) == (6,)


@pytest.mark.layers
def test_no_root_moc_product_keeps_its_source_child(copy_fixture):
    root = copy_fixture("overview_hive")
    os.remove(root / "atl06/coverage.moc")
    with pytest.warns(LevelOmittedWarning):
        tree = open_store(root, products="atl06")
    assert list(tree["atl06"].children) == ["8"]
    assert tree["atl06/8"].ds.sizes["cells"] == 112
    assert source_orders(tree["atl06"]) == (8,)


@pytest.mark.layers
def test_path_grouping_product_keeps_source_one_warning_per_level(copy_fixture):
    root = copy_fixture("multiproduct_hive")
    manifest = load_json(root / "atl06_pg3/morton_hive.json")
    manifest["pyramid"] = {
        "spec": "zagg-pyramid/1",
        "overview": {"orders": [3, 1], "spacing": 2, "all_time": False, "fields": {"count": {"class": "exact"}}},
    }
    write_json(root / "atl06_pg3/morton_hive.json", manifest)
    with pytest.warns(LevelOmittedWarning, match="path_grouping") as record:
        tree = open_store(root, products="atl06_pg3")
    omitted = [w for w in record if issubclass(w.category, LevelOmittedWarning)]
    assert len(omitted) == 2  # one per omitted overview level, nothing else
    assert list(tree["atl06_pg3"].children) == ["6"]


@pytest.mark.layers
def test_unknown_pyramid_spec_in_one_product_raises(copy_fixture):
    root = copy_fixture("overview_hive")
    manifest = load_json(root / "atl06/morton_hive.json")
    manifest["pyramid"] = {"spec": "zagg-pyramid/4"}
    write_json(root / "atl06/morton_hive.json", manifest)
    with pytest.raises(moczarr.errors.PyramidError, match="zagg-pyramid/4"):
        open_store(root, window="2019")


@pytest.mark.layers
def test_overview_orders_independent_of_a_window_missing_a_level(copy_fixture):
    root = copy_fixture("zagg/pyramid_windows/store")
    for path in root.rglob("2021.zarr"):
        if path.parent.relative_to(root).parts.__len__() == 3:  # order-2 ancestor nodes: cell order 4
            set_attrs(path / "zarr.json", lambda a: a.pop("morton_hive_commit"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LevelOmittedWarning)
        a = open_store(root, window="2019")["atl06"]
        b = open_store(root, window="2021")["atl06"]
    assert overview_orders(a) == overview_orders(b)


@pytest.mark.layers
@pytest.mark.xfail(
    strict=True, reason="contract gap: the source roster is query-scoped (FORMAT.md §7.10 says structural)"
)
def test_source_roster_is_structural_under_an_aoi():
    root = fixture_path("overview_hive/atl06")
    with _Quiet():
        full = moczarr.openers.pyramid.open_level(root, 8)
        scoped = moczarr.openers.pyramid.open_level(root, 8, aoi=["4331421"])
    assert scoped.attrs["zagg_objects"] == full.attrs["zagg_objects"]
