"""Ragged decode (FORMAT.md §9) and cross-resolution arithmetic (parent_cells / join_coarse)
against the writer's expected values and the stored overview folds."""

from __future__ import annotations

import warnings

import mortie
import numpy as np
import pytest
import xarray as xr

import moczarr
from moczarr import ids
from moczarr.analysis.cells import join_coarse, parent_cells
from moczarr.analysis.ragged import RaggedError, decode_cell, decode_variable, parse_ragged_attrs, read_ragged
from moczarr.errors import CoverageFallbackWarning
from moczarr.openers.pyramid import open_level
from moczarr.storage import count_requests
from tests.helpers import fixture_path, load_json

DIGEST = {"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float32", "shape": [-1, 2]}}}


# -- parse_ragged_attrs ----------------------------------------------------------------------------------
def test_parse_ragged_attrs_accepts_the_declared_forms():
    spec = parse_ragged_attrs(DIGEST)
    assert spec.dtype == np.dtype("<f4") and spec.inner_shape == (2,)
    assert spec.locations is None and spec.times is None and spec.weights is None
    located = {
        "ragged": {**DIGEST["ragged"], "locations": "h_tdigest_locations"},
        "times": "h_tdigest_times",
        "weights": "flux",
        "gain": {"name": "g", "version": "1"},
        "stratum": "signal",
        "signal_threshold": 2,
        "unknown_key": 1,
    }
    spec = parse_ragged_attrs(located)
    assert (spec.locations, spec.times, spec.weights, spec.gain) == (
        "h_tdigest_locations",
        "h_tdigest_times",
        "flux",
        {"name": "g", "version": "1"},
    )
    words = parse_ragged_attrs(
        {
            "ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "uint64", "shape": [-1]}},
            "located": {"spec": "zagg-located/1", "shape": "per-centroid", "grammar": "mortie-morton/1"},
        }
    )
    assert words.dtype == np.dtype("<u8") and words.inner_shape == ()
    assert parse_ragged_attrs({**DIGEST, "weights": "counts"}).weights == "counts"


@pytest.mark.parametrize(
    "attrs, match",
    [
        ({}, "no 'ragged'"),
        ({"ragged": "zagg-ragged/1"}, "no 'ragged'"),
        ({"ragged": {"spec": "zagg-ragged/2", "element": {"dtype": "float32", "shape": [-1, 2]}}}, "zagg-ragged/2"),
        ({"ragged": {"element": {"dtype": "float32", "shape": [-1, 2]}}}, "None"),
        ({"ragged": {"spec": "zagg-ragged/1"}}, "element"),
        ({"ragged": {"spec": "zagg-ragged/1", "element": {"shape": [-1, 2]}}}, "element"),
        ({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float32"}}}, "element"),
        ({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float32", "shape": [2, -1]}}}, "shape"),
        ({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float32", "shape": []}}}, "shape"),
        ({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float32", "shape": [-1, 0]}}}, "shape"),
        ({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float32", "shape": [-1, -1]}}}, "shape"),
        ({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float32", "shape": "[-1, 2]"}}}, "element"),
        ({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float99", "shape": [-1, 2]}}}, "dtype"),
        ({**DIGEST, "weights": "mass"}, "weights"),
        ({**DIGEST, "weights": "flux"}, "gain"),
        ({**DIGEST, "weights": "flux", "gain": {"name": "g"}}, "gain"),
        (
            {
                "ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "uint64", "shape": [-1]}},
                "located": {"spec": "zagg-located/9"},
            },
            "located",
        ),
    ],
)
def test_parse_ragged_attrs_refuses_bad_declarations(attrs, match):
    with pytest.raises(RaggedError, match=match):
        parse_ragged_attrs(attrs, "field")
    assert issubclass(RaggedError, ValueError)


def test_decode_cell_shapes_and_byte_counts():
    spec = parse_ragged_attrs(DIGEST)
    assert decode_cell(b"", spec).shape == (0, 2)
    assert decode_cell(None, spec).shape == (0, 2)
    payload = np.array([[1.5, 2.0], [3.25, 1.0]], dtype="<f4").tobytes()
    np.testing.assert_array_equal(decode_cell(payload, spec), [[1.5, 2.0], [3.25, 1.0]])
    with pytest.raises(RaggedError, match="whole number"):
        decode_cell(payload[:-4], spec)
    words = parse_ragged_attrs({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "uint64", "shape": [-1]}}})
    assert decode_cell(np.array([7, 9], dtype="<u8").tobytes(), words).tolist() == [7, 9]


# -- decode against the writer's expected values ------------------------------------------------------------
@pytest.mark.layers
def test_read_ragged_decodes_spec_minimal_to_expected():
    root = fixture_path("spec/minimal")
    expected = load_json(fixture_path("spec/minimal.expected.json"))
    words = [int(c["morton"]) for c in expected["cells"]]
    with pytest.warns(CoverageFallbackWarning):
        got = read_ragged(root, "h_tdigest", words)
    assert list(got) == words
    for cell in expected["cells"]:
        digest = got[int(cell["morton"])]
        np.testing.assert_array_equal(digest, np.asarray(cell["h_tdigest"], dtype="<f4"))
        assert digest[:, 1].sum() == cell["count"]  # counts weights: the weight sum is the count
    # decimal ids address the same cells
    with pytest.warns(CoverageFallbackWarning):
        by_decimal = read_ragged(root, "h_tdigest", ids.to_decimals(words[:1]))
    np.testing.assert_array_equal(by_decimal[words[0]], got[words[0]])


@pytest.mark.layers
def test_decode_variable_on_the_leaf_matches_expected_and_empty_cells():
    root = fixture_path("spec/minimal")
    expected = load_json(fixture_path("spec/minimal.expected.json"))
    with pytest.warns(CoverageFallbackWarning):
        ds = moczarr.open_hive(root)
    assert ds["h_tdigest"].attrs == DIGEST  # ragged attrs verbatim
    decoded = decode_variable(ds["h_tdigest"])
    want = {c["index"]: np.asarray(c["h_tdigest"], dtype="<f4") for c in expected["cells"]}
    assert len(decoded) == expected["cells_per_chunk"] * expected["chunks_per_shard"]
    for i, digest in enumerate(decoded):
        if i in want:
            np.testing.assert_array_equal(digest, want[i])
        else:
            assert digest.shape == (0, 2), i  # the empty inner chunk and empty cells decode empty
    assert ds["count"].values.tolist() == [
        next((c["count"] for c in expected["cells"] if c["index"] == i), 0) for i in range(len(decoded))
    ]


@pytest.mark.layers
def test_read_ragged_flux_weights():
    root = fixture_path("spec/flux")
    expected = load_json(fixture_path("spec/flux.expected.json"))
    words = [int(c["morton"]) for c in expected["cells"]]
    with pytest.warns(CoverageFallbackWarning):
        got = read_ragged(root, "rx_flux", words)
    fractional = 0
    for cell in expected["cells"]:
        np.testing.assert_array_equal(got[int(cell["morton"])], np.asarray(cell["rx_flux"], dtype="<f4"))
        weight = float(got[int(cell["morton"])][:, 1].sum())
        fractional += weight != round(weight)
    assert fractional == len(words)  # every flux weight sum is fractional


@pytest.mark.layers
def test_read_ragged_refuses_missing_fields_and_cells():
    root = fixture_path("spec/minimal")
    expected = load_json(fixture_path("spec/minimal.expected.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoverageFallbackWarning)
        with pytest.raises(KeyError, match="nope"):
            read_ragged(root, "nope", [int(expected["cells"][0]["morton"])])
        outside = ids.to_words(["1121411"])  # an order-6 cell in a shard the store does not hold
        with pytest.raises(KeyError, match="1121411"):
            read_ragged(root, "h_tdigest", outside)


@pytest.mark.layers
def test_read_ragged_at_overview_levels_keeps_weight_sums():
    """pyramid_temporal: the k-way merged digests at o6/o4 still weigh exactly the folded counts."""
    root = fixture_path("zagg/pyramid_temporal/store")
    for r in (6, 4):
        level = open_level(root, r, window="2020")
        occupied = level["morton"].values[level["count"].values > 0]
        counts = level["count"].values[level["count"].values > 0]
        got = read_ragged(root, "h_tdigest", occupied, cell_order=r, window="2020")
        assert [got[int(w)][:, 1].sum() for w in occupied] == pytest.approx(counts.tolist())


@pytest.mark.conformance("multiproduct_hive/atl06_ragged is a hand-built old ragged array (no zstd, 1-D element)")
def test_old_ragged_array_one_dimensional_element():
    """multiproduct_hive/atl06_ragged: no zstd, 1-D element [-1]; geometry comes from the metadata."""
    root = fixture_path("multiproduct_hive/atl06_ragged")
    ds = moczarr.open_hive(root)
    spec = parse_ragged_attrs(ds["h_li_tdigest"].attrs, "h_li_tdigest")
    assert spec.inner_shape == () and spec.locations == "h_li_tdigest_locations"
    values = decode_variable(ds["h_li_tdigest"])
    locations = decode_variable(ds["h_li_tdigest_locations"])
    assert len(values) == ds.sizes["cells"]
    assert [v.shape for v in values] == [loc.shape for loc in locations]  # row-aligned siblings


# -- cross-resolution ----------------------------------------------------------------------------------------
def _fold(fine: xr.Dataset, order: int) -> dict[int, tuple[int, float, float]]:
    """count sum, h_min min and h_max max of the fine rows under each order-``order`` parent."""
    parents = parent_cells(fine, order).values
    count = fine["count"].values
    h_min = fine["h_min"].values.astype("f8")
    h_max = fine["h_max"].values.astype("f8")
    out = {}
    for p in np.unique(parents):
        sel = parents == p
        occ = sel & (count > 0)
        if not occ.any():
            continue
        out[int(p)] = (int(count[sel].sum()), float(np.nanmin(h_min[occ])), float(np.nanmax(h_max[occ])))
    return out


def _occupied(level: xr.Dataset) -> dict[int, tuple[int, float, float]]:
    count = level["count"].values
    words = level["morton"].values
    return {
        int(w): (int(c), float(lo), float(hi))
        for w, c, lo, hi in zip(words, count, level["h_min"].values, level["h_max"].values, strict=True)
        if c > 0
    }


@pytest.mark.layers
@pytest.mark.parametrize(
    "store, window, fine, coarse",
    [
        ("overview_hive/atl06", None, 8, 6),
        ("overview_hive/atl06", None, 6, 4),
        ("overview_hive/atl06", None, 8, 4),
        ("overview_hive/atl06_windows", "2019", 8, 6),
        ("zagg/pyramid/store", None, 8, 6),
        ("zagg/pyramid/store", None, 8, 4),
        ("zagg/column/store", None, 8, 7),
        ("zagg/column/store", None, 7, 3),
    ],
)
def test_parent_cells_fold_equals_the_stored_overview(store, window, fine, coarse):
    root = fixture_path(store)
    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.errors.MoczarrWarning)
        fine_ds = open_level(root, fine, window=window)
        coarse_ds = open_level(root, coarse, window=window)
    folded = _fold(fine_ds, coarse)
    stored = _occupied(coarse_ds)
    assert folded.keys() == stored.keys()
    for word, (count, lo, hi) in stored.items():
        assert folded[word][0] == count
        assert folded[word][1] == pytest.approx(lo, rel=1e-6)
        assert folded[word][2] == pytest.approx(hi, rel=1e-6)


@pytest.mark.layers
def test_parent_cells_groupby_matches_golden_at_unstored_orders():
    """Order 7 and 5 are not levels of zagg/pyramid: the computed compose still matches the input truth."""
    golden = load_json(fixture_path("zagg/pyramid/golden.json"))["products"]["."]
    ds = open_level(fixture_path("zagg/pyramid/store"), 8)
    for order in (7, 5, 3):
        folded = _fold(ds, order)
        want = golden["levels"][str(order)]
        assert len(folded) == want["n_cells"]
        assert sum(v[0] for v in folded.values()) == want["count_sum"]
        assert sum(v[1] for v in folded.values()) == pytest.approx(want["h_min_sum"], rel=golden["float_rtol"])
        assert sum(v[2] for v in folded.values()) == pytest.approx(want["h_max_sum"], rel=golden["float_rtol"])
    grouped = ds["count"].groupby(parent_cells(ds, 7)).sum()
    assert int((grouped > 0).sum()) == golden["levels"]["7"]["n_cells"]


@pytest.mark.layers
def test_parent_cells_contract():
    ds = open_level(fixture_path("overview_hive/atl06"), 6)
    same = parent_cells(ds, 6)
    np.testing.assert_array_equal(same.values, ds["morton"].values)
    assert same.name == "parent" and same.dims == ("cells",) and same.attrs["order"] == 6
    coarse = parent_cells(ds, 0)
    assert set(np.asarray(mortie.orders_of(coarse.values)).tolist()) == {0}
    with pytest.raises(ValueError, match="finer"):
        parent_cells(ds, 7)


@pytest.mark.layers
def test_cross_resolution_does_no_io():
    root = fixture_path("overview_hive/atl06")
    fine = open_level(root, 8)
    coarse = open_level(root, 6)
    with count_requests() as counter:
        parent_cells(fine, 6)
        joined = join_coarse(fine, coarse, suffix="_o6")
    assert counter.gets == 0 and counter.lists == 0
    assert joined["count_o6"].chunks is not None  # lazy variables stay lazy


@pytest.mark.layers
def test_join_coarse_broadcasts_parent_values():
    root = fixture_path("overview_hive/atl06")
    fine = open_level(root, 8)
    coarse = open_level(root, 6)
    joined = join_coarse(fine, coarse, suffix="_o6")
    parents = parent_cells(fine, 6).values
    lookup = dict(zip(coarse["morton"].values.tolist(), coarse["count"].values.tolist(), strict=True))
    assert joined["count_o6"].values.tolist() == [lookup[int(p)] for p in parents]
    assert joined["h_min_o6"].attrs == coarse["h_min"].attrs
    np.testing.assert_array_equal(joined["count"].values, fine["count"].values)
    assert joined.attrs == fine.attrs
    with pytest.raises(ValueError, match="suffix"):
        join_coarse(fine, coarse)  # count exists in both


@pytest.mark.layers
def test_join_coarse_missing_parents_are_nan():
    root = fixture_path("overview_hive/atl06")
    fine = open_level(root, 8)
    coarse = open_level(root, 6, aoi=["4331421", "4332313"])
    joined = join_coarse(fine, coarse, suffix="_c")
    parents = parent_cells(fine, 6).values
    have = set(coarse["morton"].values.tolist())
    found = np.array([int(p) in have for p in parents])
    assert found.sum() == 32
    values = joined["count_c"].values
    assert np.all(np.isnan(values[~found]))
    lookup = dict(zip(coarse["morton"].values.tolist(), coarse["count"].values.tolist(), strict=True))
    assert values[found].tolist() == [lookup[int(p)] for p in parents[found]]


@pytest.mark.layers
def test_join_coarse_with_an_empty_coarse_level_keeps_the_schema():
    root = fixture_path("overview_hive/atl06")
    fine = open_level(root, 8)
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        coarse = open_level(root, 6, aoi=["1"])
    joined = join_coarse(fine, coarse, suffix="_c")
    for name in ("count_c", "h_min_c", "h_max_c"):
        assert joined[name].sizes["cells"] == fine.sizes["cells"]
        assert np.all(np.isnan(joined[name].values))
