"""Statements of the reader's contract (the seed, docs/concepts.md), each checked by a test that quotes it.

Statements already checked elsewhere are named there (tests/reader/test_hive_contract.py: the versioned leaves'
pointer rule, debris, the deliberate gap; tests/reader/test_pyramid.py: the all-time openers); this module holds
the ones about import paths and a cheap check of each versioned-leaf rule, and a small direct check of every
other statement, mostly on the generated sample store.
"""

from __future__ import annotations

import importlib
import re
import shutil
import warnings
from pathlib import Path

import mortie
import numpy as np
import pytest
import xarray as xr
import zarr

import moczarr
from moczarr.indexes.moc_index import IndexKindMismatchError
from moczarr.storage import count_requests
from tests.helpers import fixture_path, load_json, quiet, set_attrs, write_json

VERSIONED = "zagg/versioned/store"
LEAF = "1/1/1/1/1/4/4/1111144.zarr"
WINDOWED_PYRAMID = "overview_hive/atl06_windows"  # windowed, overviews at cell order 6 with all-time folds


@pytest.mark.parametrize("path, name", [("moczarr.store", "leaf_data_prefix"), ("moczarr.coverage", "aoi_mask")])
def test_the_import_paths_the_seed_names_resolve_without_warning(path, name):
    """Seed: "moczarr.store.leaf_data_prefix is the one place that applies it"; "coverage.aoi_mask resolves each
    cell at its own order": public paths, the same functions as the top-level names, not deprecated."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = importlib.import_module(path)
    assert getattr(module, name) is getattr(moczarr, name)
    assert name in module.__all__


@pytest.mark.layers
def test_leaf_data_prefix_applies_the_pointer_rule():
    """Seed: "open the root; if its stamp names current the arrays are under {leaf}/{current}/, else under
    {leaf}/"."""
    from moczarr.store import leaf_data_prefix

    stamp = load_json(fixture_path(VERSIONED) / LEAF / "zarr.json")["attributes"]["morton_hive_commit"]
    assert leaf_data_prefix(LEAF, stamp) == f"{LEAF}/{stamp['current']}"
    legacy = {k: v for k, v in stamp.items() if k != "current"}
    assert leaf_data_prefix(LEAF, legacy) == LEAF


def test_aoi_mask_resolves_mixed_orders():
    """Seed: "coverage.aoi_mask resolves each cell at its own order, so an undecoded mixed-order dataset masks
    correctly"."""
    from moczarr.coverage import aoi_mask

    words = moczarr.ids.to_words(["4331421", "43314211", "4331422", "433142111"])
    np.testing.assert_array_equal(aoi_mask(words, ["4331421"]), [True, True, False, True])


@pytest.mark.layers
def test_following_the_pointer_costs_no_stamp_request():
    """Seed: "On open_hive ... the stamp is the object the open reads anyway, so following the pointer costs no
    request" (one root stamp per leaf; the versions' own stamps never read)."""
    with count_requests() as counter:
        ds = moczarr.open_hive(fixture_path(VERSIONED))
    assert counter.kind("stamp") == ds.attrs["morton_hive"]["n_leaves"] == ds.attrs["morton_hive"]["n_versioned"]


# --- The statements checked on the generated sample store (``moczarr.testing.write_sample_store``): written once per
# module, copied where a test damages it. ``elevation`` is a swept /1 pyramid (source order 8, overviews 6 and 4);
# ``elevation_yearly`` is windowed (2019, 2020) with no all-time folds.

DECIMAL_ID = re.compile(r"[+-]?[1-6][1-4]*")


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    from moczarr.testing import write_sample_store

    return write_sample_store(tmp_path_factory.mktemp("seed") / "sample")


@pytest.fixture(scope="module")
def expected(sample) -> dict:
    return load_json(sample / "sample.json")["products"]


@pytest.fixture
def damaged(sample, tmp_path):
    """A private copy of one product of the sample store, to damage."""

    def copy(product: str) -> Path:
        return Path(shutil.copytree(sample / product, tmp_path / product))

    return copy


def values_of(ds: xr.Dataset) -> dict:
    return {name: ds[name].values for name in [*ds.data_vars, "morton", "cell_ids"]}


def version_leaf(leaf: Path, current: str) -> None:
    """Turn a legacy leaf into a pointer: its arrays and a copy of its stamp move into version ``current``."""
    version = leaf / current
    version.mkdir()
    for item in list(leaf.iterdir()):
        if item != version and item.name != "zarr.json":
            item.rename(version / item.name)
    shutil.copy(leaf / "zarr.json", version / "zarr.json")
    set_attrs(leaf / "zarr.json", lambda a: a["morton_hive_commit"].update(current=current))


def test_below_the_root_a_node_holds_only_digit_children_and_zarr_objects(sample):
    """Seed: "Below the root, a node holds only digit children and *.zarr objects (the node invariant); the
    manifest and the root coverage.moc are the two root-only exceptions"."""
    product = sample / "elevation"
    assert {"morton_hive.json", "coverage.moc"} <= {p.name for p in product.iterdir()}
    nodes = [d for d in product.rglob("*") if d.is_dir() and ".zarr" not in str(d.relative_to(product))]
    assert nodes
    for node in nodes:
        for child in node.iterdir():
            assert child.is_dir(), child
            assert re.fullmatch(r"[1-6]", child.name) or child.name.endswith(".zarr"), child


def test_ids_are_decimal_strings_whose_prefix_is_the_ancestor(sample, expected):
    """Seed: "Ids are morton decimal strings: a sign, a base digit (1..6), then one digit 1..4 per order. A string
    prefix is a spatial ancestor"."""
    ds = moczarr.open_hive(sample / "elevation")
    cells = moczarr.ids.to_decimals(ds["morton"].values)
    assert all(DECIMAL_ID.fullmatch(c) for c in cells)
    for shard in expected["elevation"]["shards"]:
        inside = [c for c in cells if c.startswith(shard)]
        assert len(inside) == expected["elevation"]["cells_per_leaf"]
        # the shard's path is its own digits: the prefix is the ancestor node
        assert expected["elevation"]["leaves"][shard]["path"] == "/".join(shard) + f"/{shard}.zarr"
    sub = moczarr.open_hive(sample / "elevation", aoi=[expected["elevation"]["shards"][0]])
    assert sub.sizes["cells"] == expected["elevation"]["cells_per_leaf"]


def test_an_unstamped_leaf_prefix_is_debris_the_reader_skips(sample, damaged, expected):
    """Seed: "an unstamped .zarr/ prefix is debris a torn worker left behind, and the reader skips it"."""
    product = damaged("elevation")
    shard = expected["elevation"]["shards"][0]
    set_attrs(product / expected["elevation"]["leaves"][shard]["path"] / "zarr.json", lambda a: a.clear())
    ds = moczarr.open_hive(product)
    assert shard not in ds.attrs["morton_hive"]["leaves"]
    assert ds.attrs["morton_hive"]["n_leaves"] == len(expected["elevation"]["shards"]) - 1
    cells = moczarr.ids.to_decimals(ds["morton"].values)
    assert not any(c.startswith(shard) for c in cells)


def test_a_stamp_naming_current_puts_the_arrays_under_the_version(sample, damaged, expected):
    """Seed: "The root stamp then carries one more key, current, naming a version subgroup that holds the arrays"
    (a legacy leaf turned into a pointer reads the same values)."""
    product = damaged("elevation")
    version_leaf(product / expected["elevation"]["leaves"][expected["elevation"]["shards"][0]]["path"], "run-7-1")
    with quiet():
        ds = moczarr.open_hive(product).compute()
    assert ds.attrs["morton_hive"]["n_versioned"] == 1
    reference = moczarr.open_hive(sample / "elevation").compute()
    for name, values in values_of(reference).items():
        np.testing.assert_array_equal(ds[name].values, values, err_msg=name)


def test_a_current_that_is_not_a_version_name_raises(sample, damaged, expected):
    """Seed: "A current that is not a version name (one path component beginning run-) raises"."""
    product = damaged("elevation")
    leaf = product / expected["elevation"]["leaves"][expected["elevation"]["shards"][0]]["path"]
    set_attrs(leaf / "zarr.json", lambda a: a["morton_hive_commit"].update(current="../elsewhere"))
    with pytest.raises(moczarr.errors.VersionPointerError, match="current"):
        moczarr.open_hive(product)


@pytest.mark.parametrize("damage", ["absent", "unusable"])
def test_a_root_moc_absent_or_unusable_degrades_to_the_walk_never_to_a_wrong_answer(sample, damaged, damage):
    """Seed: "It is a cache tier: absent or unusable, the reader degrades to the discovery walk — never to a wrong
    answer"."""
    product = damaged("elevation")
    if damage == "absent":
        (product / "coverage.moc").unlink()
    else:
        (product / "coverage.moc").write_bytes(b"not a moc")
    with pytest.warns(moczarr.errors.CoverageFallbackWarning):
        ds = moczarr.open_hive(product).compute()
    reference = moczarr.open_hive(sample / "elevation").compute()
    for name, values in values_of(reference).items():
        np.testing.assert_array_equal(ds[name].values, values, err_msg=name)


def test_a_present_but_corrupt_bitmap_raises(sample, damaged, expected):
    """Seed: "A present-but-corrupt bitmap raises rather than degrading"."""
    product = damaged("elevation")
    shard = next(s for s, leaf in expected["elevation"]["leaves"].items() if leaf["occupied"] < 16)
    leaf = product / expected["elevation"]["leaves"][shard]["path"]
    assert len(moczarr.read_coverage_bitmap(product, shard)) == expected["elevation"]["leaves"][shard]["occupied"]
    (leaf / "coverage.moc").write_bytes(b"\x00corrupt")
    with pytest.raises(moczarr.errors.CoverageError):
        moczarr.read_coverage_bitmap(product, shard)


def test_every_cell_of_a_selected_subtree_is_a_row(sample, expected):
    """Seed: "the domain is pure arithmetic — every cell of a selected subtree is a row, occupied or not"."""
    ds = moczarr.open_hive(sample / "elevation")
    elevation = expected["elevation"]
    assert ds.sizes["cells"] == len(elevation["shards"]) * elevation["cells_per_leaf"]
    occupied = int((ds["count"] > 0).sum())
    assert occupied == sum(leaf["occupied"] for leaf in elevation["leaves"].values()) < ds.sizes["cells"]
    assert ds.where((ds["count"] > 0).compute(), drop=True).sizes["cells"] == occupied


def test_the_moc_index_is_value_identical_to_the_pandas_index(sample):
    """Seed: "the result is value-identical to the materialized index_kind="pandas" path"."""
    lazy = moczarr.open_hive(sample / "elevation")
    eager = moczarr.open_hive(sample / "elevation", index_kind="pandas")
    assert isinstance(lazy.xindexes["morton"], moczarr.MortonMocIndex)
    assert isinstance(eager.xindexes["morton"], xr.indexes.PandasIndex)
    for name, values in values_of(eager.compute()).items():
        np.testing.assert_array_equal(lazy[name].values, values, err_msg=name)


def test_sel_accepts_words_decimal_strings_and_lists_of_either(sample):
    """Seed: "sel accepts packed uint64 words, decimal strings, or lists of either"."""
    ds = moczarr.open_hive(sample / "elevation")
    words = ds["morton"].values[[3, 17, 40]]
    decimals = moczarr.ids.to_decimals(words)
    by_words = ds.sel(morton=list(words))
    by_decimals = ds.sel(morton=decimals)
    np.testing.assert_array_equal(by_words["morton"].values, words)
    np.testing.assert_array_equal(by_decimals["morton"].values, words)
    np.testing.assert_array_equal(by_decimals["h_mean"].values, ds["h_mean"].values[[3, 17, 40]])
    with pytest.warns(moczarr.errors.IndexDegradedWarning):  # a scalar collapses the dimension
        assert ds.sel(morton=decimals[1])["morton"].item() == words[1]


@pytest.mark.parametrize("pick", ["scalar", "non-monotonic"])
def test_an_unrepresentable_selection_degrades_with_a_warning(sample, pick):
    """Seed: "Selections an interval set cannot represent (scalar collapse, non-monotonic picks) degrade by dropping
    the lazy index with a warning — never by wrong answers"."""
    ds = moczarr.open_hive(sample / "elevation")
    positions = 5 if pick == "scalar" else [40, 3, 17]
    words = ds["morton"].values[positions]
    with pytest.warns(moczarr.errors.IndexDegradedWarning):
        picked = ds.sel(morton=words)
    assert not isinstance(picked.xindexes.get("morton"), moczarr.MortonMocIndex)
    np.testing.assert_array_equal(picked["morton"].values, words)
    np.testing.assert_array_equal(picked["h_mean"].values, ds["h_mean"].values[positions])


def test_mixing_moc_and_pandas_indexes_in_one_alignment_raises(sample):
    """Seed: "Mixing moc- and pandas-indexed datasets in one alignment raises pointedly: reopen both with the same
    index_kind"."""
    lazy = moczarr.open_hive(sample / "elevation")
    eager = moczarr.open_hive(sample / "elevation", index_kind="pandas")
    with pytest.raises(IndexKindMismatchError, match="index_kind"):
        xr.align(lazy, eager)


def test_concat_works_on_disjoint_ascending_domains_and_refuses_overlap(sample):
    """Seed: "xr.concat of moc-indexed datasets works when their domains are disjoint and in ascending word order
    ...; overlapping, interleaved, or reversed domains raise NotImplementedError pointing to index_kind="pandas""."""
    ds = moczarr.open_hive(sample / "elevation")
    low, high = ds.isel(cells=slice(0, 64)), ds.isel(cells=slice(64, None))
    joined = xr.concat([low, high], dim="cells")
    assert isinstance(joined.xindexes["morton"], moczarr.MortonMocIndex)
    np.testing.assert_array_equal(joined["morton"].values, ds["morton"].values)
    with pytest.raises(NotImplementedError, match="pandas"):
        xr.concat([low, ds.isel(cells=slice(32, 96))], dim="cells")
    with pytest.raises(NotImplementedError, match="pandas"):
        xr.concat([high, low], dim="cells")


def test_fabricated_nested_ids_are_mort2healpix_of_the_words(sample, expected):
    """Seed: "the HEALPix NESTED cell_ids view is derived exactly from the words via mortie's vectorized
    mort2healpix"."""
    ds = moczarr.open_hive(sample / "elevation")
    leaf = sample / "elevation" / next(iter(expected["elevation"]["leaves"].values()))["path"]
    assert (leaf / "8" / "morton").is_dir() and not (leaf / "8" / "cell_ids").exists()  # a morton-only store
    nested, order = mortie.mort2healpix(ds["morton"].values)
    assert order == ds.attrs["morton_hive"]["cell_order"]
    np.testing.assert_array_equal(ds["cell_ids"].values, nested)


def test_open_store_root_is_empty_with_one_child_per_product(sample):
    """Seed: "The root node is empty — no variables, no coordinates, only store-level attrs"; "One child node per
    product, named by its product name, each holding exactly the lazy Dataset open_hive returns"."""
    tree = moczarr.open_store(sample, window="2019")
    assert not tree.ds.variables and not tree.ds.coords
    roster = tree.attrs["morton_hive_store"]["products"]
    assert sorted(tree.children) == sorted(roster) == moczarr.list_products(sample)
    node = tree["elevation_yearly"].to_dataset()
    alone = moczarr.open_hive(sample / "elevation_yearly", window="2019")
    np.testing.assert_array_equal(node["morton"].values, alone["morton"].values)
    np.testing.assert_array_equal(node["h_mean"].values, alone["h_mean"].values)


def test_a_bare_store_is_a_one_child_tree_and_products_raises(sample):
    """Seed: "A bare single-product store is the valid degenerate form: a one-child tree ... the store attrs carry
    bare: True + node: <derived name> — so products= has nothing to filter on there and raises"."""
    tree = moczarr.open_store(sample / "elevation_yearly", window="2020")
    store = tree.attrs["morton_hive_store"]
    assert store["bare"] is True and store["products"] == moczarr.list_products(sample / "elevation_yearly") == []
    assert list(tree.children) == [store["node"]]
    with pytest.raises(moczarr.errors.ProductError):
        moczarr.open_store(sample / "elevation_yearly", products=store["node"], window="2020")


def test_the_all_time_token_is_refused_as_a_window(sample):
    """Seed: "open_store(..., window="all") raises and names the gap"."""
    with pytest.raises(moczarr.errors.WindowError, match="all"):
        moczarr.open_store(sample, window="all")


def test_order_nodes_are_named_by_cell_order_and_carry_per_object_roles(sample, expected):
    """Seed: "Order nodes are named by the integer cell order they store"; "every order node's dataset carries
    attrs["zagg_objects"] — one entry per stamped object ... with the object's own role"."""
    product = moczarr.open_store(sample, window="2019")["elevation"]
    elevation = expected["elevation"]
    overview_cell_orders = [
        elevation["cell_order"] - (elevation["shard_order"] - k) for k in elevation["overview_orders"]
    ]
    assert sorted(product.children, key=int) == sorted(str(o) for o in [elevation["cell_order"], *overview_cell_orders])
    assert not product.ds.data_vars
    for name, node in product.children.items():
        assert node.ds.attrs["morton_hive"]["cell_order"] == int(name)
        roles = {obj["role"] for obj in node.ds.attrs["zagg_objects"]}
        assert roles == ({"source"} if int(name) == elevation["cell_order"] else {"overview"})
        for obj in node.ds.attrs["zagg_objects"]:
            if obj["role"] == "overview":
                assert obj["zagg_overview"]["cell_order"] == int(name)


def test_source_and_overview_orders_are_unaffected_by_aoi_and_window(sample, expected):
    """Seed: "These answer about the store, not about the query: they are unaffected by the aoi/window the tree was
    opened with"."""
    wide = moczarr.open_store(sample, window="2019")["elevation"]
    far = expected["elevation"]["shards"][0][:-1] + ("1" if expected["elevation"]["shards"][0][-1] != "1" else "2")
    far = "1" + far[1:]  # another base cell: outside every shard
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        narrow = moczarr.open_store(sample, aoi=[far], window="2020")["elevation"]
    assert narrow["8"].ds.sizes["cells"] == 0
    assert moczarr.source_orders(narrow) == moczarr.source_orders(wide) == (expected["elevation"]["cell_order"],)
    assert moczarr.overview_orders(narrow) == moczarr.overview_orders(wide) != ()


def test_open_level_has_one_dataset_shape_at_every_level(sample):
    """Seed: "whichever kind owns the level the caller gets the same Dataset shape: the 1-D cells dim ...; the
    morton coordinate ... with the lazy MortonMocIndex ...; attrs["morton_hive"] ..., attrs["zagg_objects"] ...,
    and attrs["zagg_level"]"."""
    for level in moczarr.pyramid_levels(sample / "elevation"):
        ds = moczarr.open_level(sample / "elevation", level.cell_order)
        assert set(ds.dims) == {"cells"}
        assert ds["morton"].dtype == np.uint64 and isinstance(ds.xindexes["morton"], moczarr.MortonMocIndex)
        assert np.all(np.diff(ds["morton"].values.astype(np.int64)) > 0)
        assert {"morton_hive", "zagg_objects", "zagg_level"} <= set(ds.attrs)
        assert ds.attrs["zagg_level"]["cell_order"] == ds.attrs["morton_hive"]["cell_order"] == level.cell_order


def test_open_pyramid_has_one_o_child_per_level_finest_first(sample):
    """Seed: "one child group per materialized resolution, finest first, named o{cell_order}"; "levels= bounds the
    assembly"."""
    tree = moczarr.open_pyramid(sample / "elevation")
    orders = sorted((level.cell_order for level in moczarr.pyramid_levels(sample / "elevation")), reverse=True)
    assert list(tree.children) == [f"o{o}" for o in orders]
    assert not tree.ds.variables and "zagg_pyramid" in tree.attrs
    assert tree[f"o{orders[-1]}"].ds.attrs["morton_hive"]["cell_order"] == orders[-1]
    bounded = moczarr.open_pyramid(sample / "elevation", levels=[orders[-1]])
    assert list(bounded.children) == [f"o{orders[-1]}"]


@pytest.mark.layers
def test_all_time_open_level_without_stamped_folds_is_a_warned_none(copy_fixture):
    """Seed: "open_overview_order / open_level read whatever all.zarr folds are stamped, and degrade to their usual
    warned None when none are"."""
    root = copy_fixture(WINDOWED_PYRAMID)
    assert moczarr.open_level(root, 6, all_time=True).sizes["cells"] > 0
    folds = list(root.rglob("all.zarr"))
    assert folds
    for fold in folds:
        set_attrs(fold / "zarr.json", lambda a: a.pop("morton_hive_commit"))
    with pytest.warns(moczarr.errors.LevelOmittedWarning):
        assert moczarr.open_level(root, 6, all_time=True) is None


@pytest.mark.layers
def test_all_time_is_refused_with_a_window():
    """Seed: "all_time=True ... mutually exclusive with window=" ."""
    root = fixture_path(WINDOWED_PYRAMID)
    assert moczarr.open_level(root, 6, window="2019").sizes["cells"] > 0
    with pytest.raises(moczarr.errors.ArgumentError, match="window"):
        moczarr.open_level(root, 6, window="2019", all_time=True)


# --- Resolution nodes of open_store: the order-node severities and omissions, on damaged copies of ``elevation``
# (opened bare: a one-child tree whose product node holds the order nodes 8, 6 and 4).
OVERVIEW_NODE = "4/3/3/1/2/all.zarr"  # one of the four objects of order node 6


def order_nodes(store: Path) -> xr.DataTree:
    """The product node of a bare store's tree."""
    tree = moczarr.open_store(store)
    return tree[tree.attrs["morton_hive_store"]["node"]]


def test_an_uninterpretable_cache_object_is_dropped_and_the_node_keeps_the_rest(sample, damaged):
    """Seed: "Uninterpretable cache object — a third role value, ...: the object is dropped with a UserWarning and
    the node keeps its remaining objects"."""
    whole = order_nodes(sample / "elevation")
    product = damaged("elevation")
    set_attrs(product / OVERVIEW_NODE / "zarr.json", lambda a: a.__setitem__("role", "mixed"))
    with pytest.warns(moczarr.errors.ObjectDroppedWarning, match="role") as record:
        node = order_nodes(product)
    assert all(issubclass(w.category, UserWarning) for w in record)
    assert sorted(node.children, key=int) == ["4", "6", "8"]
    kept = [obj["node"] for obj in node["6"].ds.attrs["zagg_objects"]]
    assert kept == [obj["node"] for obj in whole["6"].ds.attrs["zagg_objects"] if obj["node"] != "43312"]
    assert node["6"].ds.sizes["cells"] == whole["6"].ds.sizes["cells"] - 16 > 0
    assert node["8"].ds.sizes["cells"] == whole["8"].ds.sizes["cells"]


def test_a_provenance_block_declaring_another_cell_order_raises(sample, damaged):
    """Seed: "Interpretable but wrong — a provenance block positively declaring a cell_order other than the node's:
    this raises"."""
    product = damaged("elevation")
    assert order_nodes(product)["6"].ds.sizes["cells"] > 0
    set_attrs(product / OVERVIEW_NODE / "zarr.json", lambda a: a["zagg_overview"].__setitem__("cell_order", 5))
    with pytest.raises(moczarr.errors.PyramidError, match="cell_order 5"):
        moczarr.open_store(product)


def test_without_a_usable_root_moc_the_order_nodes_are_omitted_and_the_source_walks(sample, damaged, expected):
    """Seed: "without a usable root MOC the order nodes are omitted with a warning (... the source child still opens
    via the discovery walk ...)"."""
    product = damaged("elevation")
    (product / "coverage.moc").unlink()
    with (
        pytest.warns(moczarr.errors.LevelOmittedWarning, match="coverage.moc"),
        pytest.warns(moczarr.errors.CoverageFallbackWarning),
    ):
        node = order_nodes(product)
    assert list(node.children) == [str(expected["elevation"]["cell_order"])]
    reference = moczarr.open_hive(sample / "elevation").compute()
    np.testing.assert_array_equal(node["8"].ds["morton"].values, reference["morton"].values)
    np.testing.assert_array_equal(node["8"].ds["h_mean"].values, reference["h_mean"].values)


def test_a_declared_order_with_no_stamped_object_is_omitted_loudly(damaged, expected):
    """Seed: "a declared order with no stamped object anywhere (not yet swept, or deleted) is likewise omitted
    loudly rather than fabricated empty"."""
    product = damaged("elevation")
    (only,) = expected["elevation"]["levels"]["4"]["nodes"].values()
    set_attrs(product / only["path"] / "zarr.json", lambda a: a.pop("morton_hive_commit"))
    with pytest.warns(moczarr.errors.LevelOmittedWarning, match="cell order 4"):
        node = order_nodes(product)
    assert sorted(node.children, key=int) == ["6", "8"]


@pytest.mark.layers
def test_a_store_declaring_path_grouping_above_one_omits_the_order_nodes(copy_fixture):
    """Seed: "a store declaring path_grouping > 1 (D21) ... the order nodes are omitted with a warning and the
    source node stands"."""
    root = copy_fixture("multiproduct_hive/atl06_pg3")
    manifest = load_json(root / "morton_hive.json")
    assert manifest["path_grouping"] > 1
    flat = order_nodes(root)
    assert not flat.children and flat.ds.sizes["cells"] > 0
    fields = {"count": {"class": "exact", "method": "sum", "nan_policy": "skip"}}
    manifest["pyramid"] = {
        "spec": "zagg-pyramid/1",
        "overview": {"orders": [3], "spacing": 2, "all_time": False, "fields": fields},
    }
    write_json(root / "morton_hive.json", manifest)
    with pytest.warns(moczarr.errors.LevelOmittedWarning, match="path_grouping"):
        node = order_nodes(root)
    assert list(node.children) == [str(manifest["cell_order"])]
    source = node[str(manifest["cell_order"])].ds
    np.testing.assert_array_equal(source["morton"].values, flat.ds["morton"].values)


def test_sibling_order_nodes_have_their_own_variable_sets(sample):
    """Seed: "tree[product]["18"].ds having a variable tree[product]["20"].ds lacks is the expected case, not
    corruption" (h_mean is a none-class field: it exists only at the source order)."""
    with quiet():
        product = moczarr.open_store(sample, window="2019")["elevation"]
    variables = {name: set(node.ds.data_vars) for name, node in product.children.items()}
    assert "h_mean" in variables["8"]
    assert "h_mean" not in variables["6"] and "h_mean" not in variables["4"]
    assert {"count", "h_min", "h_max"} <= variables["6"] == variables["4"]


def test_one_store_may_hold_legacy_and_versioned_leaves(sample, damaged, expected):
    """Seed: "A stamp without current is a legacy leaf ..., so nothing needs migrating and one store may hold both
    kinds"."""
    product = damaged("elevation")
    shards = expected["elevation"]["shards"]
    version_leaf(product / expected["elevation"]["leaves"][shards[0]]["path"], "run-3-1")
    with quiet():
        ds = moczarr.open_hive(product).compute()
    summary = ds.attrs["morton_hive"]
    assert summary["n_leaves"] == len(shards) and summary["n_versioned"] == 1
    reference = moczarr.open_hive(sample / "elevation").compute()
    for name, values in values_of(reference).items():
        np.testing.assert_array_equal(ds[name].values, values, err_msg=name)


def test_an_out_of_coverage_aoi_empties_every_node_schema_correct(sample, expected):
    """Seed: "an out-of-coverage AOI empties each node schema-correct (issue #4) while source_orders /
    overview_orders keep reporting what the store holds"."""
    wide = moczarr.open_store(sample, window="2019")
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        empty = moczarr.open_store(sample, aoi=["1111"], window="2019")
    assert sorted(empty.children) == sorted(wide.children)
    for path, node in wide.subtree_with_keys:
        if node.is_root or node.children:
            continue
        emptied = empty[path].ds
        assert emptied.sizes["cells"] == 0 < node.ds.sizes["cells"], path
        assert set(emptied.data_vars) == set(node.ds.data_vars), path
        for name in [*node.ds.data_vars, "morton"]:
            assert emptied[name].dtype == node.ds[name].dtype, (path, name)
    for name in expected:
        assert moczarr.source_orders(empty[name]) == moczarr.source_orders(wide[name])
        assert moczarr.overview_orders(empty[name]) == moczarr.overview_orders(wide[name])
    assert moczarr.overview_orders(empty["elevation"]) != ()


def write_one_leaf_store(root: Path, manifest: dict, cell_order: int) -> np.ndarray:
    """A one-leaf ``morton-hive/1`` store at ``cell_order`` (shard one order above, every cell a row, a ``count``
    field, pyramid declared off) laid out as zagg writes it; returns the leaf's packed words."""
    from moczarr.testing.records import children, content_hashes, coverage_box, dggs_attrs, leaf_path, root_ranges

    shard_order = cell_order - 1
    shard = moczarr.ids.to_words(["4331421" + "1" * (shard_order - 6)])[0]
    root.mkdir(parents=True)
    write_json(
        root / "morton_hive.json",
        {
            **manifest,
            "cell_order": cell_order,
            "shard_order": shard_order,
            "split_schedule": [1] * shard_order,
            "pyramid": {"spec": "zagg-pyramid/1", "overview": {"orders": []}},
        },
    )
    write_json(
        root / "coverage.moc",
        {"spec": "morton-moc/1", "encoding": "ranges", "order": shard_order, "ranges": root_ranges([shard])},
    )
    words = children(shard, cell_order)
    arrays = {"morton": words, "count": np.arange(1, words.size + 1, dtype=np.int32)}
    leaf = zarr.open_group(str(root / leaf_path(shard, None)), mode="w", zarr_format=3)
    group = leaf.create_group(str(cell_order), attributes=dggs_attrs(cell_order))
    for name, data in arrays.items():
        group.create_array(
            name, shape=data.shape, dtype=data.dtype, fill_value=0, compressors=None, dimension_names=["cells"]
        )[:] = data
    stamp = {
        "spec": "morton-hive/1",
        "complete": True,
        "cells_with_data": int(words.size),
        "coverage": {"spec": "morton-moc/1", "box": coverage_box(words), "cell_order": cell_order, "encoding": "full"},
        "content_hashes": content_hashes(str(cell_order), arrays),
    }
    leaf.update_attributes({"morton_hive_commit": stamp})
    return words


@pytest.mark.parametrize("cell_order", [24, 25])
def test_fabrication_above_order_24_warns(sample, tmp_path, cell_order):
    """Seed: "NESTED ids above order 24 exceed the float64-exact integer range (2**53) ... Fabrication above order
    24 currently warns" (order 24 itself is exact and quiet)."""
    manifest = load_json(sample / "elevation" / "morton_hive.json")
    words = write_one_leaf_store(tmp_path / "deep", manifest, cell_order)
    if cell_order > 24:
        with pytest.warns(moczarr.errors.PrecisionWarning, match="2\\*\\*53"):
            ds = moczarr.open_hive(tmp_path / "deep")
    else:
        with quiet():
            ds = moczarr.open_hive(tmp_path / "deep")
    assert ds.attrs["morton_hive"]["cell_order"] == cell_order
    np.testing.assert_array_equal(ds["morton"].values, words)
    np.testing.assert_array_equal(ds["cell_ids"].values, mortie.mort2healpix(words)[0])
