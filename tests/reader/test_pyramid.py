"""Pyramids (FORMAT.md §7; the seed's "Resolution nodes" to the end): the declaration, the
resolution table, open_level / open_overview_order / open_pyramid, the all-time view, per-object
validation severities and demotions, against the writer fixtures and damaged copies of them."""

from __future__ import annotations

import os
import re
import warnings

import mortie
import numpy as np
import pytest
import xarray as xr

import moczarr
from moczarr import ids, read_manifest
from moczarr.errors import (
    EmptySelectionWarning,
    LevelError,
    LevelOmittedError,
    LevelOmittedWarning,
    ObjectDroppedWarning,
    PyramidError,
    WindowError,
)
from moczarr.format.manifest import parse_manifest
from moczarr.indexes.moc_index import MortonMocIndex
from moczarr.openers.pyramid import (
    level_demotions,
    open_level,
    open_overview_order,
    open_pyramid,
    overview_candidates,
    pyramid_declaration,
    pyramid_levels,
)
from moczarr.storage import Storage
from tests.helpers import fixture_path, load_json, set_attrs, write_json
from tests.helpers import quiet as _Quiet

ATL06 = "overview_hive/atl06"
ATL06_W = "overview_hive/atl06_windows"
OV_NODE = "4/3/3/1/2/all.zarr"  # an order-4 ancestor node of overview_hive/atl06 (cell order 6)


def manifest_of(name: str):
    return read_manifest(Storage.open(fixture_path(name)))


def manifest_with(pyramid, *, shard_order=6, cell_order=8, **extra):
    obj = {
        "spec": "morton-hive/1",
        "dataset": {"short_name": "T"},
        "cell_order": cell_order,
        "shard_order": shard_order,
        "path_grouping": 1,
        **extra,
    }
    if pyramid is not ...:
        obj["pyramid"] = pyramid
    return parse_manifest(obj, "test-store")


def level_table(manifest):
    return [(lv.cell_order, lv.node_order, lv.artifact) for lv in pyramid_levels(manifest)]


def level_totals(ds: xr.Dataset) -> dict:
    """The golden `levels` statistics of a level Dataset: occupied cells only."""
    count = ds["count"].values
    occ = count > 0
    h_min = ds["h_min"].values[occ].astype("f8")
    h_max = ds["h_max"].values[occ].astype("f8")
    return {
        "n_cells": int(occ.sum()),
        "count_sum": int(count.sum()),
        "h_min_min": float(h_min.min()),
        "h_max_max": float(h_max.max()),
        "h_min_sum": float(h_min.sum()),
        "h_max_sum": float(h_max.sum()),
    }


def check_level(ds: xr.Dataset, want: dict, rtol: float, label: str):
    got = level_totals(ds)
    assert got["n_cells"] == want["n_cells"], label
    assert got["count_sum"] == want["count_sum"], label
    for key in ("h_min_min", "h_max_max", "h_min_sum", "h_max_sum"):
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, err_msg=f"{label} {key}")


def check_level_shape(ds: xr.Dataset, cell_order: int):
    """The one shape of every level (FORMAT.md §7.10)."""
    assert tuple(ds.dims) == ("cells",)
    words = ds["morton"].values
    assert words.dtype == np.uint64
    assert np.all(np.diff(words.astype(object)) > 0), "cells must be ascending in packed-word order"
    if words.size:
        assert set(np.asarray(mortie.orders_of(words)).tolist()) == {cell_order}
        nested, _orders = mortie.mort2healpix(words)
        np.testing.assert_array_equal(ds["cell_ids"].values, np.asarray(nested, dtype=np.uint64))
    assert ds.attrs["morton_hive"]["cell_order"] == cell_order
    assert ds.attrs["zagg_level"]["cell_order"] == cell_order
    assert isinstance(ds.attrs["zagg_objects"], list)


# -- the declaration (FORMAT.md §7.2) ---------------------------------------------------------------
FIELDS = {"count": {"class": "exact", "method": "sum", "nan_policy": "skip"}}


@pytest.mark.parametrize(
    "block",
    [
        ...,  # no pyramid block at all (pre-pyramid manifests)
        None,
        "zagg-pyramid/1",
        {"orders": [], "aggregation": {}},  # the legacy spec-less placeholder
        {"spec": "zagg-pyramid/1", "overview": {"orders": []}},  # the canonical declared-off form
        {"spec": "zagg-pyramid/1"},
        {"spec": "zagg-pyramid/1", "overview": None},
        {"overview": {"orders": []}},
    ],
)
def test_declared_off_forms(block):
    manifest = manifest_with(block)
    assert pyramid_declaration(manifest) is None
    assert level_table(manifest) == [(8, 6, "source")]


@pytest.mark.conformance("multiproduct_hive/atl06 carries the legacy pyramid placeholder zagg no longer writes")
def test_placeholder_fixture_is_declared_off_and_opens_flat():
    manifest = manifest_of("multiproduct_hive/atl06")
    assert manifest.pyramid == {"orders": [], "aggregation": {}}
    assert pyramid_declaration(manifest) is None
    with _Quiet():
        tree = open_pyramid(fixture_path("multiproduct_hive/atl06"))
    assert list(tree.children) == ["o5"]
    assert tree.attrs["zagg_pyramid"] is None
    assert tree["o5"].ds.attrs["zagg_level"]["artifact"] == "source"


@pytest.mark.parametrize(
    "block, match",
    [
        ({"spec": "zagg-pyramid/9", "overview": {"orders": [4]}}, "zagg-pyramid/9"),
        ({"spec": "zagg-pyramid/3"}, "zagg-pyramid/3"),  # raised before looking for /1 keys
        ({"spec": 7, "overview": {"orders": []}}, "unknown spec"),
        ({"overview": {"orders": [4], "spacing": 2, "all_time": False, "fields": FIELDS}}, "spec"),
        ({"spec": "zagg-pyramid/1", "overview": {"orders": [4], "all_time": False, "fields": FIELDS}}, "spacing"),
        ({"spec": "zagg-pyramid/1", "overview": {"orders": [4], "spacing": 2, "fields": FIELDS}}, "all_time"),
        ({"spec": "zagg-pyramid/1", "overview": {"orders": [4], "spacing": 2, "all_time": False}}, "fields"),
        (
            {"spec": "zagg-pyramid/1", "overview": {"orders": [6], "spacing": 2, "all_time": False, "fields": FIELDS}},
            "outside",
        ),
        (
            {"spec": "zagg-pyramid/1", "overview": {"orders": [-1], "spacing": 2, "all_time": False, "fields": FIELDS}},
            "outside",
        ),
        (
            {
                "spec": "zagg-pyramid/1",
                "overview": {"orders": ["4"], "spacing": 2, "all_time": False, "fields": FIELDS},
            },
            "integers",
        ),
    ],
)
def test_bad_v1_declarations_raise(block, match):
    with pytest.raises(PyramidError, match=match):
        pyramid_declaration(manifest_with(block))
    with pytest.raises(PyramidError):
        pyramid_levels(manifest_with(block))


def v2(overviews, **family):
    return {
        "spec": "zagg-pyramid/2",
        "overviews": overviews,
        "overview": {"all_time": False, "fields": FIELDS, **family},
    }


@pytest.mark.parametrize(
    "block, match",
    [
        (v2([]), "non-empty"),
        ({"spec": "zagg-pyramid/2", "overviews": [{"node": 3, "cells": [4]}]}, "all_time"),
        (
            {"spec": "zagg-pyramid/2", "overviews": [{"node": 3, "cells": [4]}], "overview": {"fields": FIELDS}},
            "all_time",
        ),
        (
            {"spec": "zagg-pyramid/2", "overviews": [{"node": 3, "cells": [4]}], "overview": {"all_time": False}},
            "fields",
        ),
        (v2([{"node": 3}]), "cells"),
        (v2([[3, [4]]]), "node"),
        (v2([{"node": 7, "cells": [7]}]), "outside"),
        (v2([{"node": 3, "cells": [3]}]), "3 < r"),  # r == node
        (v2([{"node": 3, "cells": [8]}]), "3 < r"),  # r == cell order
        (v2([{"node": 3, "cells": [5]}, {"node": 3, "cells": [4]}]), "twice"),
        (v2([{"node": 6, "cells": [6]}]), "6 < r"),
        (v2([{"node": 6, "cells": [7, 7]}]), "descending"),
        (v2([{"node": 6, "cells": [6, 7]}]), "6 < r"),
    ],
)
def test_bad_v2_declarations_raise(block, match):
    with pytest.raises(PyramidError, match=match):
        pyramid_declaration(manifest_with(block))


def test_v2_one_resolution_at_two_levels_raises():
    manifest = manifest_with(v2([{"node": 6, "cells": [7]}, {"node": 5, "cells": [7]}]))
    with pytest.raises(PyramidError, match="two levels"):
        pyramid_levels(manifest)


@pytest.mark.layers
def test_v1_normalized_record_overview_hive():
    manifest = manifest_of(ATL06)
    overview = manifest.raw["pyramid"]["overview"]
    decl = pyramid_declaration(manifest)
    assert decl.as_dict() == {
        "spec": "zagg-pyramid/1",
        "orders": [4, 2],
        "cell_orders": {4: [6], 2: [4]},
        "leaf_cells": None,
        "spacing": overview["spacing"],
        "overviews": None,
        "all_time": False,
        "fold_source": "leaves",  # absent on the fixture: leaves
        "exact_levels": None,
        "fields": overview["fields"],
        "materialized": overview["materialized"],
    }


def test_v1_orders_given_ascending_are_normalized_descending():
    block = {
        "spec": "zagg-pyramid/1",
        "overview": {
            "orders": [2, 4],
            "spacing": 2,
            "all_time": True,
            "fields": FIELDS,
            "fold_source": "cascade",
            "exact_levels": 1,
            "summarize": {"x": 1},
        },
    }
    decl = pyramid_declaration(manifest_with(block))
    assert decl.orders == [4, 2]
    assert decl.cell_orders == {4: [6], 2: [4]}
    assert decl.fold_source == "cascade" and decl.exact_levels == 1 and decl.all_time is True


@pytest.mark.layers
def test_v2_normalized_record_spec_pyramid():
    """spec/pyramid (manifest only): leaf entry [5, 4] at shard order 3, full ladder, /1-era materialized."""
    manifest = manifest_of("spec/pyramid")
    expected = load_json(fixture_path("spec/pyramid.expected.json"))
    block = manifest.raw["pyramid"]
    decl = pyramid_declaration(manifest)
    assert decl.spec == "zagg-pyramid/2"
    assert decl.overviews == block["overviews"]  # verbatim, actuals included
    assert [{"node": e["node"], "cells": e["cells"]} for e in decl.overviews] == expected["overviews"]
    assert decl.leaf_cells == expected["declared"]["overviews"] == [5, 4]
    assert decl.cell_orders == {2: [3], 1: [2], 0: [1]}
    assert decl.orders == [2, 1, 0]
    assert decl.spacing is None
    assert decl.fold_source == expected["fold_source"]
    assert decl.exact_levels == expected["exact_levels"]
    assert decl.materialized == block["overview"]["materialized"]
    assert {k: v["class"] for k, v in decl.fields.items()} == expected["fields"]
    assert decl.all_time is False
    table = pyramid_levels(manifest)
    assert level_table(manifest) == [
        (6, 3, "source"),
        (5, 3, "column"),
        (4, 3, "column"),
        (3, 2, "overview"),
        (2, 1, "overview"),
        (1, 0, "overview"),
    ]
    # slab lengths 4**(cells - node) per ladder entry, as the writer lists them
    by_node: dict[int, list[int]] = {}
    for lv in table[1:]:
        by_node.setdefault(lv.node_order, []).append(4 ** (lv.cell_order - lv.node_order))
    assert [by_node[e["node"]] for e in expected["overviews"]] == expected["slabs"]


@pytest.mark.layers
@pytest.mark.parametrize(
    "name, table",
    [
        (ATL06, [(8, 6, "source"), (6, 4, "overview"), (4, 2, "overview")]),
        (ATL06_W, [(8, 6, "source"), (6, 4, "overview")]),
        (
            "spec/minimal",
            [
                (6, 4, "source"),
                (5, 4, "column"),
                (4, 3, "overview"),
                (3, 2, "overview"),
                (2, 1, "overview"),
                (1, 0, "overview"),
            ],
        ),
        (
            "spec/versioned",
            [
                (6, 4, "source"),
                (5, 4, "column"),
                (4, 3, "overview"),
                (3, 2, "overview"),
                (2, 1, "overview"),
                (1, 0, "overview"),
            ],
        ),
        (
            "spec/column",
            [
                (6, 4, "source"),
                (5, 4, "column"),
                (4, 3, "overview"),
                (3, 2, "overview"),
                (2, 1, "overview"),
                (1, 0, "overview"),
            ],
        ),
        ("serc_hive", [(8, 6, "source")]),
        ("multiproduct_hive/atl06", [(5, 3, "source")]),
    ],
)
def test_resolution_tables(name, table):
    assert level_table(manifest_of(name)) == table


@pytest.mark.layers
def test_resolution_tables_zagg_goldens():
    """Every level the writer's golden records is named by the table with the writer's artifact kind."""
    for name in ("pyramid", "pyramid_windows", "pyramid_temporal", "column"):
        pyr = load_json(fixture_path(f"zagg/{name}/golden.json"))["products"]["."]["pyramid"]
        table = {lv.cell_order: lv.artifact for lv in pyramid_levels(manifest_of(f"zagg/{name}/store"))}
        want = {8: "source"}
        want.update(dict.fromkeys(pyr["overview_cell_orders"], "overview"))
        want.update(dict.fromkeys(pyr.get("column_cell_orders") or [], "column"))
        assert table == want, name


# -- open_level on the overview_hive golden -----------------------------------------------------------
def _golden_ov():
    return load_json(fixture_path("overview_hive.golden.json"))["products"]


@pytest.mark.layers
@pytest.mark.parametrize("product, window", [("atl06", None), ("atl06_windows", "2019"), ("atl06_windows", "2020")])
def test_overview_hive_levels_match_golden(product, window):
    golden = _golden_ov()[product]
    key = window or "all"
    root = fixture_path(f"overview_hive/{product}")
    entries = [(golden["cell_order"], golden["source"][key])]
    entries += [(int(r), per_window[key]) for r, per_window in golden["overviews"].items()]
    for cell_order, want in entries:
        with _Quiet():
            ds = open_level(root, cell_order, window=window)
        check_level_shape(ds, cell_order)
        assert ds.sizes["cells"] == want["n_cells"]
        assert sorted(ds.data_vars) == want["variables"]
        assert int(ds["count"].sum()) == want["count_total"]
        if "h_min_min" in want:
            assert float(ds["h_min"].min()) == pytest.approx(want["h_min_min"], rel=1e-6)
        assert ds.attrs["zagg_objects"] == want["objects"]  # role and provenance blocks verbatim
        level = ds.attrs["zagg_level"]
        assert level["artifact"] == ("source" if cell_order == golden["cell_order"] else "overview")
        assert level["spec"] == "zagg-pyramid/1"
        assert level["fields"] == read_manifest(Storage.open(root)).raw["pyramid"]["overview"]["fields"]
        assert level["fold_source"] == "leaves"
        assert isinstance(ds.xindexes["morton"], MortonMocIndex)


@pytest.mark.layers
def test_overview_hive_all_time_folds_match_golden():
    want = _golden_ov()["atl06_windows"]["overviews"]["6"]["all"]
    with _Quiet():
        ds = open_level(fixture_path(ATL06_W), 6, all_time=True)
        via_overview = open_overview_order(fixture_path(ATL06_W), 6, all_time=True)
    assert ds.sizes["cells"] == want["n_cells"]
    assert int(ds["count"].sum()) == want["count_total"]
    assert float(ds["h_min"].min()) == pytest.approx(want["h_min_min"], rel=1e-6)
    assert ds.attrs["zagg_objects"] == want["objects"]
    assert all(o["window"] == "all" and o["zagg_overview"]["window"] == "all" for o in ds.attrs["zagg_objects"])
    assert ds.attrs["morton_hive"]["window"] == "all"
    xr.testing.assert_identical(ds.compute(), via_overview.compute())
    per_window = [open_level(fixture_path(ATL06_W), 6, window=w)["count"].values for w in ("2019", "2020")]
    np.testing.assert_array_equal(ds["count"].values, per_window[0] + per_window[1])


@pytest.mark.layers
def test_overview_objects_are_named_by_window(copy_fixture):
    """{window}.zarr per window, all.zarr for the all-time folds: removing one file removes only that view."""
    root = copy_fixture(ATL06_W)
    set_attrs(root / "4/3/3/1/2/2019.zarr/zarr.json", lambda a: a.pop("morton_hive_commit"))
    with _Quiet():
        w19 = open_level(root, 6, window="2019")
        w20 = open_level(root, 6, window="2020")
        all_ = open_level(root, 6, all_time=True)
    assert [o["node"] for o in w19.attrs["zagg_objects"]] == ["43314", "43321", "43323"]
    assert [o["node"] for o in w20.attrs["zagg_objects"]] == ["43312", "43314", "43321", "43323"]
    assert [o["node"] for o in all_.attrs["zagg_objects"]] == ["43312", "43314", "43321", "43323"]
    assert w19.sizes["cells"] == 48 and w20.sizes["cells"] == 64


@pytest.mark.layers
def test_open_overview_order_refuses_other_kinds():
    with pytest.raises(LevelError, match="source level"):
        open_overview_order(fixture_path(ATL06), 8)
    with _Quiet():
        ds = open_overview_order(fixture_path(ATL06), 4)
    assert ds.attrs["zagg_level"]["artifact"] == "overview" and ds.sizes["cells"] == 16


@pytest.mark.layers
def test_open_level_undeclared_order_raises_listing_levels():
    with pytest.raises(LevelError) as info:
        open_level(fixture_path(ATL06), 7)
    message = str(info.value)
    assert "7" in message
    for r in ("8", "6", "4"):
        assert r in message
    with pytest.raises(LevelError, match="5"):
        open_level(fixture_path("zagg/column/store"), 0)


# -- open_level on the zagg writer goldens (levels = truth computed from the input points) -------------
@pytest.mark.layers
@pytest.mark.parametrize("name", ["pyramid", "column"])
def test_zagg_unwindowed_levels_match_golden(name):
    product = load_json(fixture_path(f"zagg/{name}/golden.json"))["products"]["."]
    root = fixture_path(f"zagg/{name}/store")
    table = pyramid_levels(manifest_of(f"zagg/{name}/store"))
    for lv in table:
        with _Quiet():
            ds = open_level(root, lv.cell_order)
        check_level_shape(ds, lv.cell_order)
        check_level(ds, product["levels"][str(lv.cell_order)], product["float_rtol"], f"{name} o{lv.cell_order}")
        assert ds.attrs["zagg_level"]["artifact"] == lv.artifact
        roles = {o["role"] for o in ds.attrs["zagg_objects"]}
        assert roles == {lv.artifact}


@pytest.mark.layers
@pytest.mark.parametrize("name", ["pyramid_windows", "pyramid_temporal"])
def test_zagg_windowed_levels_match_golden(name):
    product = load_json(fixture_path(f"zagg/{name}/golden.json"))["products"]["."]
    root = fixture_path(f"zagg/{name}/store")
    for window in product["windows"]:
        want = product["by_window"][window]["levels"]
        with _Quiet():
            tree = open_pyramid(root, window=window)
        assert list(tree.children) == ["o8", "o6", "o4"]
        for child in tree.children.values():
            r = child.ds.attrs["morton_hive"]["cell_order"]
            check_level_shape(child.ds, r)
            check_level(child.ds, want[str(r)], product["float_rtol"], f"{name} {window} o{r}")
            assert {o["window"] for o in child.ds.attrs["zagg_objects"]} == {window}


@pytest.mark.layers
@pytest.mark.parametrize("name", ["pyramid_windows", "pyramid_temporal"])
def test_zagg_all_time_view_matches_golden(name):
    product = load_json(fixture_path(f"zagg/{name}/golden.json"))["products"]["."]
    root = fixture_path(f"zagg/{name}/store")
    with _Quiet():
        tree = open_pyramid(root, all_time=True)
    assert list(tree.children) == ["o6", "o4"]  # overviews only: no all-time source or column
    for child in tree.children.values():
        r = child.ds.attrs["morton_hive"]["cell_order"]
        check_level(child.ds, product["all_time"]["levels"][str(r)], product["float_rtol"], f"{name} all o{r}")
        assert {o["window"] for o in child.ds.attrs["zagg_objects"]} == {"all"}
    assert tree.attrs["zagg_pyramid"]["all_time"] is True


@pytest.mark.layers
def test_zagg_ragged_fields_at_every_level_keep_their_siblings():
    """pyramid_temporal: h_tdigest (located, per-centroid times) at source and overview levels."""
    root = fixture_path("zagg/pyramid_temporal/store")
    from moczarr.analysis.ragged import decode_cell, parse_ragged_attrs

    for r in (8, 6, 4):
        with _Quiet():
            ds = open_level(root, r, window="2019")
        var = ds["h_tdigest"]
        assert var.dtype == object
        assert var.attrs["ragged"]["element"] == {"dtype": "float32", "shape": [-1, 2]}
        spec = parse_ragged_attrs(var.attrs, "h_tdigest")
        # siblings are bound through the payload's attrs and must be on the same axis
        assert spec.locations in ds and spec.times in ds, f"o{r} lacks {spec.locations}/{spec.times}"
        counts = ds["count"].values
        payloads = var.values
        locs = ds[spec.locations].values
        loc_spec = parse_ragged_attrs(ds[spec.locations].attrs, spec.locations)
        words = ds["morton"].values
        for i in np.flatnonzero(counts > 0):
            cent = decode_cell(payloads[i], spec)
            assert cent[:, 1].sum() == pytest.approx(counts[i])
            assert cent[:, 0].min() >= ds["h_min"].values[i] - 1e-3
            assert cent[:, 0].max() <= ds["h_max"].values[i] + 1e-3
            where = decode_cell(locs[i], loc_spec)
            assert where.shape == (cent.shape[0],)
            inside = mortie.clip2order(r, where[np.asarray(mortie.orders_of(where)) >= r])
            assert np.all(np.asarray(inside, dtype=np.uint64) == words[i])
        for i in np.flatnonzero(counts == 0):
            assert decode_cell(payloads[i], spec).shape == (0, 2)


@pytest.mark.layers
def test_column_level_objects_and_groups():
    root = fixture_path("zagg/column/store")
    with _Quiet():
        ds = open_level(root, 7)
    golden = load_json(fixture_path("zagg/column/golden.json"))["products"]["."]
    entries = ds.attrs["zagg_objects"]
    assert [e["node"] for e in entries] == golden["shards"]
    for entry in entries:
        assert entry["role"] == "column" and entry["window"] is None
        block = entry["zagg_column"]
        assert block["spec"] == "zagg-column/1" and block["node"] == entry["node"] and block["order"] == 6
        assert "7" in block["groups"]
    assert ds.attrs["morton_hive"]["shard_order"] == 6
    assert ds.sizes["cells"] == 4 * len(entries)


# -- open_pyramid --------------------------------------------------------------------------------------
@pytest.mark.layers
def test_open_pyramid_root_attrs_and_children():
    root = fixture_path("zagg/column/store")
    manifest = manifest_of("zagg/column/store")
    with _Quiet():
        tree = open_pyramid(root)
    assert list(tree.children) == ["o8", "o7", "o6", "o5", "o4", "o3", "o2", "o1"]  # finest first
    assert not tree.ds.data_vars and not tree.ds.coords
    assert set(tree.attrs) == {"morton_hive", "semantic_hash", "zagg_pyramid", "multiscales"}
    assert tree.attrs["semantic_hash"] == manifest.raw["semantic_hash"]
    assert tree.attrs["multiscales"] == manifest.raw["multiscales"]  # verbatim
    assert tree.attrs["morton_hive"]["cell_order"] == 8 and tree.attrs["morton_hive"]["shard_order"] == 6
    zp = tree.attrs["zagg_pyramid"]
    assert zp["spec"] == "zagg-pyramid/2"
    assert zp["overviews"] == manifest.raw["pyramid"]["overviews"]
    assert zp["leaf_cells"] == [7]
    assert {int(k): v for k, v in zp["cell_orders"].items()} == {k: [k + 1] for k in range(6)}
    for name, child in tree.children.items():
        assert child.ds.attrs["morton_hive"]["cell_order"] == int(name[1:])


@pytest.mark.layers
def test_open_pyramid_levels_subset_and_unknown():
    root = fixture_path(ATL06)
    with _Quiet():
        tree = open_pyramid(root, levels=[4, 8])
    assert list(tree.children) == ["o8", "o4"]
    with pytest.raises(LevelError, match="not levels"):
        open_pyramid(root, levels=[5])


@pytest.mark.layers
def test_open_pyramid_v1_multiscales_absent_and_semantic_hash():
    with _Quiet():
        tree = open_pyramid(fixture_path(ATL06))
    assert "multiscales" not in tree.attrs
    assert list(tree.children) == ["o8", "o6", "o4"]
    assert tree.attrs["zagg_pyramid"]["cell_orders"] == {"4": [6], "2": [4]}


@pytest.mark.layers
def test_open_pyramid_spec_versioned_multiscales_verbatim_and_omissions():
    """No root MOC: column and overview levels omitted with a warning, o6 stands (FORMAT.md §7.7)."""
    root = fixture_path("spec/versioned")
    with pytest.warns(LevelOmittedWarning) as record:
        tree = open_pyramid(root)
    assert list(tree.children) == ["o6"]
    assert tree.attrs["multiscales"] == manifest_of("spec/versioned").raw["multiscales"]
    omitted = [str(w.message) for w in record if issubclass(w.category, LevelOmittedWarning)]
    for r in (5, 4, 3, 2, 1):
        assert any(f"o{r}" in m for m in omitted), r
    ds = tree["o6"].ds
    expected = load_json(fixture_path("spec/versioned.expected.json"))
    counts = dict(zip(ds["morton"].values.tolist(), ds["count"].values.tolist(), strict=True))
    for cell in expected["cells"]:
        assert counts[int(cell["morton"])] == cell["count"]


@pytest.mark.layers
def test_open_pyramid_spec_column_omits_unenumerable_levels():
    with pytest.warns(LevelOmittedWarning):
        tree = open_pyramid(fixture_path("spec/column"))
    assert list(tree.children) == ["o6"]


@pytest.mark.layers
def test_column_level_of_spec_column_with_a_root_moc(copy_fixture):
    """spec/column plus a root MOC naming its shard: the o5 column level decodes to the writer's values."""
    root = copy_fixture("spec/column")
    expected = load_json(fixture_path("spec/column.expected.json"))
    write_json(
        root / "coverage.moc",
        {"spec": "morton-moc/1", "encoding": "ranges", "order": 4, "ranges": [[expected["shard"], expected["shard"]]]},
    )
    with pytest.warns(LevelOmittedWarning):  # no overview was swept
        tree = open_pyramid(root)
    assert list(tree.children) == ["o6", "o5"]
    ds = tree["o5"].ds
    group = expected["column"]["groups"]["5"]
    assert ds["morton"].values.tolist() == [int(w) for w in group["morton"]]
    assert ds["count"].values.tolist() == group["count"]
    assert ds.attrs["zagg_objects"] == [
        {"node": expected["shard"], "window": None, "role": "column", "zagg_column": expected["column"]["zagg_column"]}
    ]
    from moczarr.analysis.ragged import decode_variable

    for got, want in zip(decode_variable(ds["h_tdigest"]), group["h_tdigest"], strict=True):
        np.testing.assert_allclose(got, np.asarray(want, dtype="f4").reshape(-1, 2))


# -- window / all_time -----------------------------------------------------------------------------------
@pytest.mark.layers
def test_all_time_is_exclusive_with_window():
    root = fixture_path(ATL06_W)
    for opener in (
        lambda: open_pyramid(root, window="2019", all_time=True),
        lambda: open_level(root, 6, window="2019", all_time=True),
        lambda: open_overview_order(root, 6, window="2019", all_time=True),
    ):
        with pytest.raises(WindowError, match="exclusive"):
            opener()


@pytest.mark.layers
def test_all_time_refused_on_unwindowed_store():
    root = fixture_path(ATL06)
    for opener in (
        lambda: open_pyramid(root, all_time=True),
        lambda: open_level(root, 6, all_time=True),
        lambda: open_overview_order(root, 4, all_time=True),
    ):
        with pytest.raises(WindowError, match="windowed"):
            opener()


@pytest.mark.layers
def test_all_time_view_has_no_source_level():
    with pytest.raises(WindowError, match="overview levels only"):
        open_level(fixture_path(ATL06_W), 8, all_time=True)


@pytest.mark.layers
def test_open_pyramid_refuses_all_time_when_declaration_has_none(copy_fixture):
    root = copy_fixture("zagg/pyramid_windows/store")
    manifest = load_json(root / "morton_hive.json")
    manifest["pyramid"]["overview"]["all_time"] = False
    write_json(root / "morton_hive.json", manifest)
    with pytest.raises(WindowError, match="all_time"):
        open_pyramid(root, all_time=True)
    # the resolution openers keep the ordinary posture: whatever all.zarr folds are stamped are read
    golden = load_json(fixture_path("zagg/pyramid_windows/golden.json"))["products"]["."]
    with _Quiet():
        ds = open_level(root, 6, all_time=True)
    check_level(ds, golden["all_time"]["levels"]["6"], golden["float_rtol"], "all o6")


@pytest.mark.layers
def test_all_time_without_stamped_folds_is_omitted(copy_fixture):
    """Seed: "open_overview_order / open_level read whatever all.zarr folds are stamped, and degrade to their
    usual warned None when none are"; open_pyramid omits the level with its warning (the xarray engine, which
    must return a Dataset, raises)."""
    root = copy_fixture(ATL06_W)
    for node in ("4/3/3/1/2", "4/3/3/1/4", "4/3/3/2/1", "4/3/3/2/3"):
        set_attrs(root / node / "all.zarr/zarr.json", lambda a: a.pop("morton_hive_commit"))
    with pytest.warns(
        LevelOmittedWarning, match=rf"^{re.escape(str(root))}: no stamped overview object at cell order 6"
    ):
        assert open_level(root, 6, all_time=True) is None
    with pytest.warns(LevelOmittedWarning, match="no stamped overview object at cell order 6"):
        assert open_overview_order(root, 6, all_time=True) is None
    with pytest.warns(LevelOmittedWarning), pytest.raises(LevelOmittedError, match="all-time fold"):
        xr.open_dataset(root, engine="moczarr", cell_order=6, all_time=True)
    with pytest.warns(LevelOmittedWarning):
        tree = open_pyramid(root, all_time=True)
    assert list(tree.children) == []


@pytest.mark.layers
def test_window_validation_on_derived_levels():
    root = fixture_path(ATL06_W)
    with pytest.raises(WindowError, match="reserved"):
        open_level(root, 6, window="all")
    with pytest.raises(WindowError, match="2019"):
        open_level(root, 6)  # windowed store, no window
    with pytest.raises(WindowError):
        open_level(root, 6, window="2018")  # not a declared explicit label
    with pytest.raises(WindowError, match="unwindowed"):
        open_level(fixture_path(ATL06), 6, window="2019")


# -- derived-object validation severities (FORMAT.md §7.8) ----------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda a: a.__setitem__("role", "mixed"), "role"),
        (lambda a: a.pop("zagg_overview"), "zagg_overview"),
        (lambda a: a.__setitem__("zagg_overview", "not a block"), "zagg_overview"),
        (lambda a: a["zagg_overview"].__setitem__("spec", "zagg-overview/7"), "zagg_overview"),
        (lambda a: a["zagg_overview"].pop("spec"), "zagg_overview"),
        (lambda a: a["zagg_overview"].pop("cell_order"), "zagg_overview"),
    ],
)
def test_uninterpretable_overview_is_dropped_node_keeps_the_rest(copy_fixture, damage, match):
    root = copy_fixture(ATL06)
    set_attrs(root / OV_NODE / "zarr.json", damage)
    with pytest.warns(ObjectDroppedWarning, match=match) as record:
        ds = open_level(root, 6)
    assert issubclass(ObjectDroppedWarning, UserWarning)
    assert any(OV_NODE in str(w.message) for w in record)
    assert [o["node"] for o in ds.attrs["zagg_objects"]] == ["43314", "43321", "43323"]
    assert ds.sizes["cells"] == 48
    dropped = ids.to_words("43312")[0]
    parents = mortie.clip2order(4, ds["morton"].values)
    assert not np.any(np.asarray(parents, dtype=np.uint64) == dropped)
    want = _golden_ov()["atl06"]["overviews"]["6"]["all"]["objects"][1:]
    assert ds.attrs["zagg_objects"] == want
    # the same object is dropped in the product tree too, and the product's other nodes stand
    with pytest.warns(ObjectDroppedWarning):
        tree = moczarr.open_store(root)
    assert list(tree["atl06"].children) == ["8", "6", "4"]
    assert tree["atl06/6"].ds.sizes["cells"] == 48


@pytest.mark.layers
def test_dropped_object_warns_even_when_the_aoi_misses_it(copy_fixture):
    root = copy_fixture(ATL06)
    set_attrs(root / OV_NODE / "zarr.json", lambda a: a.__setitem__("role", "mixed"))
    with pytest.warns(ObjectDroppedWarning):
        ds = open_level(root, 6, aoi=["4332313"])
    assert [o["node"] for o in ds.attrs["zagg_objects"]] == ["43314", "43321", "43323"]  # structural roster
    assert ds.sizes["cells"] == 1


@pytest.mark.layers
def test_unstamped_overview_is_debris_and_skipped_silently(copy_fixture):
    root = copy_fixture(ATL06)
    set_attrs(root / OV_NODE / "zarr.json", lambda a: a.pop("morton_hive_commit"))
    with _Quiet():
        ds = open_level(root, 6)
    assert [o["node"] for o in ds.attrs["zagg_objects"]] == ["43314", "43321", "43323"]


@pytest.mark.layers
def test_object_without_role_at_an_overview_node_is_recorded_as_source(copy_fixture):
    root = copy_fixture(ATL06)
    set_attrs(root / OV_NODE / "zarr.json", lambda a: a.pop("role"))
    with _Quiet():
        ds = open_level(root, 6)
    entries = ds.attrs["zagg_objects"]
    assert entries[0] == {"node": "43312", "window": None, "role": "source"}
    assert [e["role"] for e in entries[1:]] == ["overview"] * 3
    assert ds.sizes["cells"] == 64


@pytest.mark.layers
@pytest.mark.parametrize("aoi", [None, ["4332313"], ["1"]])
def test_wrong_cell_order_raises_before_aoi_scoping(copy_fixture, aoi):
    root = copy_fixture(ATL06)
    set_attrs(root / OV_NODE / "zarr.json", lambda a: a["zagg_overview"].__setitem__("cell_order", 5))
    with pytest.raises(PyramidError, match="cell_order 5"):
        open_level(root, 6, aoi=aoi)
    with pytest.raises(PyramidError, match="cell_order 5"):
        open_pyramid(root, aoi=aoi)
    with pytest.raises(PyramidError, match="cell_order 5"):
        moczarr.open_store(root, aoi=aoi)


COLUMN = "1/1/1/1/1/1/1/all.pyramid.zarr/zarr.json"


@pytest.mark.layers
@pytest.mark.parametrize(
    "damage",
    [
        lambda a: a.__setitem__("role", "overview"),
        lambda a: a.pop("zagg_column"),
        lambda a: a["zagg_column"].__setitem__("spec", "zagg-column/9"),
    ],
)
def test_uninterpretable_column_is_dropped(copy_fixture, damage):
    root = copy_fixture("zagg/column/store")
    set_attrs(root / COLUMN, damage)
    with pytest.warns(ObjectDroppedWarning, match="column"):
        ds = open_level(root, 7)
    nodes = [o["node"] for o in ds.attrs["zagg_objects"]]
    assert "1111111" not in nodes and len(nodes) == 5
    assert ds.sizes["cells"] == 20


@pytest.mark.layers
@pytest.mark.parametrize("key, value", [("node", "1111113"), ("order", 5), ("window", "2019")])
def test_column_disagreeing_with_its_address_raises(copy_fixture, key, value):
    root = copy_fixture("zagg/column/store")
    set_attrs(root / COLUMN, lambda a: a["zagg_column"].__setitem__(key, value))
    with pytest.raises(PyramidError, match="disagree"):
        open_level(root, 7)


@pytest.mark.layers
def test_column_lacking_the_group_contributes_nothing(copy_fixture):
    root = copy_fixture("zagg/column/store")
    set_attrs(root / COLUMN, lambda a: a["zagg_column"].__setitem__("groups", {}))
    with _Quiet():
        ds = open_level(root, 7)
    assert "1111111" not in [o["node"] for o in ds.attrs["zagg_objects"]]


# -- omissions (FORMAT.md §7.7) ---------------------------------------------------------------------------
@pytest.mark.layers
def test_no_usable_root_moc_omits_derived_levels_source_stands(copy_fixture):
    root = copy_fixture(ATL06)
    os.remove(root / "coverage.moc")
    with pytest.warns(LevelOmittedWarning, match="coverage.moc") as record:
        tree = open_pyramid(root)
    assert list(tree.children) == ["o8"]
    assert sum(issubclass(w.category, LevelOmittedWarning) for w in record) == 2
    assert tree["o8"].ds.sizes["cells"] == 112  # the walk skips the all.zarr overview basenames
    with warnings.catch_warnings():
        warnings.simplefilter("error", LevelOmittedWarning)  # the named level raises instead of warning
        with pytest.raises(LevelOmittedError, match=rf"^{re.escape(str(root))}: no usable root coverage.moc, .* o6"):
            open_level(root, 6)


@pytest.mark.layers
def test_declared_order_without_stamped_object_is_omitted(copy_fixture):
    root = copy_fixture(ATL06)
    set_attrs(root / "4/3/3/all.zarr/zarr.json", lambda a: a.pop("morton_hive_commit"))
    with pytest.warns(LevelOmittedWarning, match="cell order 4") as record:
        tree = open_pyramid(root)
    assert list(tree.children) == ["o8", "o6"]
    assert sum(issubclass(w.category, LevelOmittedWarning) for w in record) == 1


@pytest.mark.layers
def test_path_grouping_above_one_omits_overview_levels(copy_fixture):
    root = copy_fixture("multiproduct_hive/atl06_pg3")
    manifest = load_json(root / "morton_hive.json")
    manifest["pyramid"] = {
        "spec": "zagg-pyramid/1",
        "overview": {"orders": [3], "spacing": 2, "all_time": False, "fields": FIELDS},
    }
    write_json(root / "morton_hive.json", manifest)
    with pytest.warns(LevelOmittedWarning, match="path_grouping"):
        tree = open_pyramid(root)
    assert list(tree.children) == ["o6"]
    assert tree["o6"].ds.sizes["cells"] == 4
    with pytest.raises(LevelOmittedError, match=r"path_grouping 3 > 1 .* level o4 omitted"):
        open_level(root, 4)


@pytest.mark.layers
def test_unknown_pyramid_spec_raises_on_every_opener(copy_fixture):
    root = copy_fixture(ATL06)
    manifest = load_json(root / "morton_hive.json")
    manifest["pyramid"]["spec"] = "zagg-pyramid/3"
    write_json(root / "morton_hive.json", manifest)
    for opener in (lambda: open_pyramid(root), lambda: open_level(root, 8), lambda: moczarr.open_store(root)):
        with pytest.raises(PyramidError, match="zagg-pyramid/3"):
            opener()


# -- AOI on levels ----------------------------------------------------------------------------------------
@pytest.mark.layers
def test_aoi_scopes_rows_of_every_level():
    root = fixture_path(ATL06)
    with _Quiet():
        ds8 = open_level(root, 8, aoi=["4331421"])
        ds6 = open_level(root, 6, aoi=["4331421"])
        ds4 = open_level(root, 4, aoi=["4331421"])
    assert ds8.sizes["cells"] == 16
    assert ds6["morton"].values.tolist() == ids.to_words(["4331421"]).tolist()
    assert ds4["morton"].values.tolist() == ids.to_words(["43314"]).tolist()
    full6 = open_level(root, 6)
    at = int(np.searchsorted(full6["morton"].values, ids.to_words("4331421")[0]))
    assert int(ds6["count"].sum()) == int(full6["count"].values[at])
    assert int(ds6["count"].sum()) == int(ds8["count"].sum())
    # structural roster: every stamped object, whatever the AOI
    assert [o["node"] for o in ds6.attrs["zagg_objects"]] == ["43312", "43314", "43321", "43323"]


@pytest.mark.layers
def test_out_of_coverage_aoi_empties_levels_schema_correct():
    root = fixture_path(ATL06)
    full = open_level(root, 6)
    with pytest.warns(EmptySelectionWarning):
        ds = open_level(root, 6, aoi=["1"])
    assert ds.sizes["cells"] == 0
    assert sorted(ds.data_vars) == sorted(full.data_vars)
    for name in ds.data_vars:
        assert ds[name].dtype == full[name].dtype
    assert ds["morton"].dtype == np.uint64 and ds["cell_ids"].values.size == 0
    assert len(ds.attrs["zagg_objects"]) == 4


# -- demotions ----------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_level_demotions_flattens_stamped_records(copy_fixture):
    root = copy_fixture(ATL06)
    records = [
        {
            "field": "composition",
            "class": "packed",
            "reason": "divisor-missing",
            "contributors": 1,
            "of": "h_tdigest",
            "cells": 4,
        },
        {"field": "h_mean", "reason": "something-new", "extra": [1, 2]},
    ]
    set_attrs(root / OV_NODE / "zarr.json", lambda a: a["zagg_overview"].__setitem__("demotions", records))
    with _Quiet():
        ds = open_level(root, 6)
        tree = open_pyramid(root)
    assert ds.attrs["zagg_objects"][0]["zagg_overview"]["demotions"] == records  # verbatim
    flat = level_demotions(ds)
    assert len(flat) == 2
    for got, want in zip(flat, records, strict=True):
        assert got["node"] == "43312" and got["cell_order"] == 6
        assert {k: got[k] for k in want} == want
    assert level_demotions(tree) == flat
    with _Quiet():
        assert level_demotions(open_level(fixture_path(ATL06), 6)) == []  # absence proves nothing


# -- arithmetic naming ---------------------------------------------------------------------------------------
def test_overview_candidates_are_word_ordered_across_signs():
    shards = ids.to_words(["-51112", "-51113", "41112", "41211", "11111"])
    cands = overview_candidates(shards, 2, "2019")
    assert [n for n, _ in cands] == ["111", "411", "412", "-511"]
    assert cands[-1][1] == "-5/1/1/2019.zarr"
    assert cands[0][1] == "1/1/1/2019.zarr"
    words = ids.to_words([n for n, _ in cands])
    assert np.all(np.diff(words.astype(object)) > 0)


@pytest.mark.layers
def test_disjoint_aoi_keeps_every_level_of_the_tree_empty():
    """aoi= scopes rows, never the set of levels: column levels (query-scoped roster) open empty too."""
    root = fixture_path("zagg/column/store")
    with _Quiet():
        full = open_pyramid(root)
    with pytest.warns(EmptySelectionWarning):
        tree = open_pyramid(root, aoi=["2"])
    assert list(tree.children) == list(full.children)
    for name, child in tree.children.items():
        assert child.ds.sizes["cells"] == 0, name
        assert sorted(child.ds.data_vars) == sorted(full[name].ds.data_vars)
        for var in child.ds.data_vars:
            assert child.ds[var].dtype == full[name].ds[var].dtype
    assert tree["o7"].ds.attrs["zagg_objects"] == []  # query-scoped on column levels
    assert len(tree["o6"].ds.attrs["zagg_objects"]) == len(full["o6"].ds.attrs["zagg_objects"])  # structural


def _stage_overview(root, node_path: str, cell_order: int):
    def damage(attrs):
        block = attrs["zagg_overview"]
        block["spec"] = "zagg-overview/2"
        block["cell_order"] = cell_order

    set_attrs(root / node_path / "zarr.json", damage)


@pytest.mark.layers
def test_v2_object_off_the_v1_derived_order_is_dropped_by_the_tree_openers(copy_fixture):
    """FORMAT.md §7.8 exception: a level the reader derived (not the caller) -> drop a /2 object with a warning."""
    root = copy_fixture(ATL06)
    _stage_overview(root, OV_NODE, 5)
    with pytest.warns(ObjectDroppedWarning, match="zagg-overview/2"):
        tree = open_pyramid(root)
    assert [o["node"] for o in tree["o6"].ds.attrs["zagg_objects"]] == ["43314", "43321", "43323"]
    with pytest.warns(ObjectDroppedWarning, match="zagg-overview/2"):
        store = moczarr.open_store(root)
    assert store["atl06/6"].ds.sizes["cells"] == 48
    # the caller named the level: a wrong answer, raised
    with pytest.raises(PyramidError, match="cell_order 5"):
        open_level(root, 6)
    with pytest.raises(PyramidError, match="cell_order 5"):
        open_pyramid(root, levels=[8, 6])
    # a /1 object at the wrong order always raises
    root = copy_fixture(ATL06_W)
    set_attrs(root / "4/3/3/1/2/2019.zarr/zarr.json", lambda a: a["zagg_overview"].__setitem__("cell_order", 5))
    with pytest.raises(PyramidError, match="cell_order 5"):
        open_pyramid(root, window="2019")


@pytest.mark.layers
def test_declaration_and_levels_accept_a_store_root():
    root = fixture_path("spec/pyramid")
    assert pyramid_declaration(root) == pyramid_declaration(manifest_of("spec/pyramid"))
    assert pyramid_levels(str(root)) == pyramid_levels(manifest_of("spec/pyramid"))
    assert pyramid_levels(Storage.open(root)) == pyramid_levels(manifest_of("spec/pyramid"))


@pytest.mark.layers
@pytest.mark.parametrize("order", [8, 6])  # the source level and an overview level
def test_open_level_in_builds_only_the_named_variables_and_every_coordinate(order):
    from moczarr.openers.pyramid import open_level_in

    storage = Storage.open(fixture_path("zagg/pyramid/store"))
    manifest = read_manifest(storage)
    full = open_level_in(storage, manifest, order)
    one = open_level_in(storage, manifest, order, variables=["count", "h_nope"])
    assert len(full.data_vars) > 1
    assert list(one.data_vars) == ["count"]  # a name the level lacks builds nothing
    assert set(one.coords) == set(full.coords)
    xr.testing.assert_identical(one.compute(), full[["count"]].compute())
