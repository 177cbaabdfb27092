"""MortonMocIndex against a pandas-indexed Dataset holding the same words.

Every sel / isel / align / concat either gives the pandas answer value for value
(with the moc index kept) or takes the documented path: IndexDegradedWarning and
the index dropped, NotImplementedError, or IndexKindMismatchError.
"""

from __future__ import annotations

import copy
import pickle
import tracemalloc
import warnings
from itertools import pairwise

import dask.array as da
import mortie
import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xarray.indexes import PandasIndex

from moczarr.errors import ArgumentError, IndexDegradedWarning, MixedOrderError, SelectionError
from moczarr.indexes.moc_index import IndexKindMismatchError, MortonMocIndex
from moczarr.indexes.ranges import MortonRanges
from tests.strategies import domain, reference, two_domains

#: the strategies build whole domains (mortie children of drawn ancestors) while drawing: slow generation is the
#: strategy's nature, not a problem. Examples and deadline: the profile (tests/conftest.py).
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])
U64 = np.uint64
SHARDS = ["4331421", "4331422", "4331441", "-31123"]  # order 6 and 4, north and south


def values_of(words: np.ndarray) -> np.ndarray:
    """Data that is a function of the word, so any misalignment shows."""
    return (words % U64(100003)).astype(np.float64)


def moc_ds(r: MortonRanges) -> xr.Dataset:
    coords = xr.Coordinates.from_xindex(MortonMocIndex.from_ranges(r))
    return xr.Dataset({"v": ("cells", values_of(r.words()))}, coords=coords)


def pandas_ds(r: MortonRanges) -> xr.Dataset:
    words = r.words()
    ds = xr.Dataset({"v": ("cells", values_of(words))}, coords={"morton": ("cells", words)})
    return ds.set_xindex("morton")


def pair(anc, order):
    r = MortonRanges.from_subtrees(anc, order)
    return moc_ds(r), pandas_ds(r)


def assert_same(m: xr.Dataset, p: xr.Dataset, *, moc_kept: bool = True) -> None:
    """Value-identical to the pandas result, and the moc index kept (or dropped)."""
    xr.testing.assert_equal(m, p)
    assert m["morton"].dtype == U64
    if moc_kept:
        assert isinstance(p.xindexes["morton"], PandasIndex)  # the oracle really is pandas
        assert isinstance(m.xindexes["morton"], MortonMocIndex)
        np.testing.assert_array_equal(m.xindexes["morton"].ranges.words(), p["morton"].values)
    elif p["morton"].ndim:
        assert "morton" not in m.xindexes


class no_degrade(warnings.catch_warnings):
    """Fail on any IndexDegradedWarning inside the block."""

    def __enter__(self):
        out = super().__enter__()
        warnings.simplefilter("error", IndexDegradedWarning)
        return out


@pytest.fixture
def dsp():
    return pair(SHARDS, 8)


# --- construction and identity ------------------------------------------------------------------


def test_fabricated_coordinate_matches_words(dsp):
    m, p = dsp
    assert_same(m, p)
    assert m["morton"].dims == ("cells",)
    assert m.indexes["morton"].equals(p.indexes["morton"])  # to_pandas_index materializes
    r = m.xindexes["morton"].ranges
    assert len(r) == 16 * 3 + 256 and r.n_intervals == 3


def test_repr_names_order_intervals_rows(dsp):
    m, _ = dsp
    text = repr(m)
    assert "MortonMocIndex (order=8, intervals=3, rows=304)" in text
    assert "order=8" in repr(m.xindexes["morton"])


def test_pickle_round_trip(dsp):
    m, p = dsp
    back = pickle.loads(pickle.dumps(m))
    assert_same(back, p)
    assert back.xindexes["morton"].equals(m.xindexes["morton"])


def test_copy_and_deepcopy_keep_the_index(dsp):
    m, p = dsp
    for c in (m.copy(deep=False), m.copy(deep=True), copy.deepcopy(m)):
        assert_same(c, p)


def test_set_xindex_round_trip(dsp):
    m, p = dsp
    plain = m.drop_indexes("morton")
    assert "morton" not in plain.xindexes
    back = plain.set_xindex("morton", MortonMocIndex)
    assert back.xindexes["morton"].equals(m.xindexes["morton"])
    assert_same(back, p)
    # and from a plain pandas-built coordinate
    assert_same(p.drop_indexes("morton").set_xindex("morton", MortonMocIndex), p)


def test_set_xindex_refuses_what_it_cannot_hold(dsp):
    _, p = dsp
    shuffled = p.isel(cells=np.r_[5, 0:5, 6:20]).drop_indexes("morton")
    with pytest.raises(ArgumentError, match="ascending"):
        shuffled.set_xindex("morton", MortonMocIndex)
    mixed = xr.Dataset(coords={"morton": ("cells", mortie.decimal_to_word(np.array(["43314211", "433142111"])))})
    with pytest.raises(MixedOrderError):
        mixed.set_xindex("morton", MortonMocIndex)
    empty = xr.Dataset(coords={"morton": ("cells", np.zeros(0, dtype=U64))})
    with pytest.raises(ArgumentError, match="order"):
        empty.set_xindex("morton", MortonMocIndex)
    assert len(empty.set_xindex("morton", MortonMocIndex, order=8).xindexes["morton"].ranges) == 0


def test_rename_follows_names(dsp):
    m, p = dsp
    rn = m.rename(morton="mw", cells="c")
    idx = rn.xindexes["mw"]
    assert isinstance(idx, MortonMocIndex) and idx.dim == "c" and idx.coord_name == "mw"
    np.testing.assert_array_equal(rn["mw"].values, p["morton"].values)
    assert rn.sel(mw=p["morton"].values[:3]).sizes["c"] == 3


# --- sel -------------------------------------------------------------------------------------------


def test_sel_words_strings_and_mixed_lists(dsp):
    m, p = dsp
    words = p["morton"].values
    picks = [words[2], words[7], words[-1]]
    decimals = [str(s) for s in mortie.MortonIndexArray.from_words(np.asarray(picks)).decimal_repr()]
    with no_degrade():
        for label in (
            np.asarray(picks),
            picks,
            [int(x) for x in picks],
            decimals,
            [decimals[0], int(picks[1]), decimals[2]],
        ):
            assert_same(m.sel(morton=label), p.sel(morton=np.asarray(picks)))


def test_sel_dataarray_label_keeps_its_dim(dsp):
    m, p = dsp
    label = xr.DataArray(p["morton"].values[[1, 3, 4]], dims="cells")
    with no_degrade():
        assert_same(m.sel(morton=label), p.sel(morton=label))


def test_sel_pointwise_onto_new_dim_degrades(dsp):
    m, p = dsp
    label = xr.DataArray(p["morton"].values[[1, 3]], dims="pts")
    with pytest.warns(IndexDegradedWarning):
        got = m.sel(morton=label)
    assert_same(got, p.sel(morton=label), moc_kept=False)


def test_sel_scalar_collapses_with_warning(dsp):
    m, p = dsp
    word = p["morton"].values[9]
    for label in (word, int(word), str(mortie.MortonIndexArray.from_words(np.array([word])).decimal_repr()[0])):
        with pytest.warns(IndexDegradedWarning, match="scalar"):
            got = m.sel(morton=label)
        assert_same(got, p.sel(morton=word), moc_kept=False)


def test_sel_non_monotonic_degrades_but_stays_right(dsp):
    m, p = dsp
    words = p["morton"].values[[8, 2, 30, 30]]
    with pytest.warns(IndexDegradedWarning):
        got = m.sel(morton=words)
    assert_same(got, p.sel(morton=words), moc_kept=False)


def test_sel_missing_word_raises_keyerror(dsp):
    m, p = dsp
    with pytest.raises(SelectionError, match="433143111"):
        m.sel(morton=["433143111"])
    with pytest.raises(KeyError):
        p.sel(morton=[mortie.decimal_to_word("433143111")])
    with pytest.raises(SelectionError):
        m.sel(morton="43314211")  # right cell, other order


def test_sel_boolean_mask(dsp):
    m, p = dsp
    mask = (p["v"].values % 2) == 0
    with no_degrade():
        assert_same(m.sel(morton=mask), p.sel(morton=mask))


def test_sel_refuses_inexact_methods(dsp):
    m, p = dsp
    with pytest.raises(NotImplementedError, match="pandas"):
        m.sel(morton=p["morton"].values[:2], method="nearest")


@SETTINGS
@given(domain(), st.data())
def test_label_slices_match_pandas(dom, data):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    m, p = moc_ds(r), pandas_ds(r)
    words = reference(anc, c)
    pool = np.concatenate([words, reference(["4", "-3", "-6"], c), np.array([0, 2**64 - 1], dtype=U64)])
    bound = st.none() | st.sampled_from(pool.tolist())
    lo, hi = data.draw(bound), data.draw(bound)
    lo_, hi_ = (None if b is None else U64(b) for b in (lo, hi))
    if lo_ is not None and hi_ is not None and lo_ > hi_:
        lo_, hi_ = hi_, lo_
    with no_degrade():
        assert_same(m.sel(morton=slice(lo_, hi_)), p.sel(morton=slice(lo_, hi_)))


def test_label_slice_with_decimal_bounds(dsp):
    m, p = dsp
    a, b = mortie.decimal_to_word(np.array(["433142121", "433144114"]))
    assert_same(m.sel(morton=slice("433142121", "433144114")), p.sel(morton=slice(a, b)))


@SETTINGS
@given(domain(), st.data())
def test_sel_sorted_word_sets_match_pandas(dom, data):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    words = reference(anc, c)
    if words.size == 0:
        return
    picks = np.unique(
        np.asarray(data.draw(st.lists(st.sampled_from(words.tolist()), min_size=1, max_size=25)), dtype=U64)
    )
    with no_degrade():
        assert_same(moc_ds(r).sel(morton=picks), pandas_ds(r).sel(morton=picks))


# --- isel -------------------------------------------------------------------------------------------


@SETTINGS
@given(
    domain(),
    st.integers(-60, 60) | st.none(),
    st.integers(-60, 60) | st.none(),
    st.sampled_from([None, 1, 2, 5, -1, -3]),
)
def test_isel_slices_match_pandas(dom, start, stop, step):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    m, p = moc_ds(r), pandas_ds(r)
    key = slice(start, stop, step)
    if step is not None and step < 0:
        with pytest.warns(IndexDegradedWarning, match="reversed"):
            got = m.isel(cells=key)
        assert_same(got, p.isel(cells=key), moc_kept=False)
    else:
        with no_degrade():
            assert_same(m.isel(cells=key), p.isel(cells=key))


@SETTINGS
@given(domain(), st.data())
def test_isel_integer_arrays(dom, data):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    n = len(r)
    if n == 0:
        return
    m, p = moc_ds(r), pandas_ds(r)
    picks = data.draw(st.lists(st.integers(-n, n - 1), max_size=20))
    normal = [x % n for x in picks]
    ascending = len(picks) > 0 and all(b > a for a, b in pairwise(normal))
    if ascending or not picks:
        with no_degrade():
            assert_same(m.isel(cells=picks), p.isel(cells=picks))
    else:
        with pytest.warns(IndexDegradedWarning, match="non-monotonic"):
            got = m.isel(cells=picks)
        assert_same(got, p.isel(cells=picks), moc_kept=False)


def test_isel_scalar_and_roll_degrade(dsp):
    m, p = dsp
    with pytest.warns(IndexDegradedWarning, match="scalar"):
        got = m.isel(cells=-1)
    assert_same(got, p.isel(cells=-1), moc_kept=False)
    with pytest.warns(IndexDegradedWarning, match="roll"):
        got = m.roll(cells=3, roll_coords=True)
    assert_same(got, p.roll(cells=3, roll_coords=True), moc_kept=False)
    with no_degrade():
        assert_same(m.roll(cells=len(m["morton"]), roll_coords=True), p)


def test_data_plane_filter_keeps_the_index(dsp):
    m, p = dsp
    with no_degrade():
        assert_same(m.where(m["v"] > 50000, drop=True), p.where(p["v"] > 50000, drop=True))


# --- alignment ----------------------------------------------------------------------------------------


@SETTINGS
@given(two_domains(), st.sampled_from(["inner", "outer", "left", "right"]))
def test_align_matches_pandas(doms, join):
    c, a, b = doms
    ra, rb = MortonRanges.from_subtrees(a, c), MortonRanges.from_subtrees(b, c)
    with no_degrade():
        ma, mb = xr.align(moc_ds(ra), moc_ds(rb), join=join)
    pa, pb = xr.align(pandas_ds(ra), pandas_ds(rb), join=join)
    assert_same(ma, pa)
    assert_same(mb, pb)


@SETTINGS
@given(two_domains())
def test_arithmetic_matches_pandas(doms):
    c, a, b = doms
    ra, rb = MortonRanges.from_subtrees(a, c), MortonRanges.from_subtrees(b, c)
    with no_degrade():
        got = moc_ds(ra) * 2 - moc_ds(rb)
    assert_same(got, pandas_ds(ra) * 2 - pandas_ds(rb))
    with xr.set_options(arithmetic_join="outer"):
        assert_same(moc_ds(ra) + moc_ds(rb), pandas_ds(ra) + pandas_ds(rb))


def test_exact_join():
    ra = MortonRanges.from_subtrees(SHARDS, 8)
    rb = MortonRanges.from_subtrees(SHARDS[:2], 8)
    a, b = xr.align(moc_ds(ra), moc_ds(ra), join="exact")
    assert a.xindexes["morton"].equals(b.xindexes["morton"])
    with pytest.raises(xr.AlignmentError):
        xr.align(moc_ds(ra), moc_ds(rb), join="exact")
    with pytest.raises(xr.AlignmentError):
        xr.align(pandas_ds(ra), pandas_ds(rb), join="exact")


@pytest.mark.parametrize("join", ["inner", "outer", "left", "exact"])
@pytest.mark.parametrize("same_domain", [True, False])
@pytest.mark.parametrize("moc_first", [True, False])
def test_mixing_with_a_pandas_index_raises_pointedly(join, same_domain, moc_first):
    ra = MortonRanges.from_subtrees(SHARDS, 8)
    rb = ra if same_domain else MortonRanges.from_subtrees(SHARDS[1:], 8)
    objs = (moc_ds(ra), pandas_ds(rb)) if moc_first else (pandas_ds(ra), moc_ds(rb))
    with pytest.raises(IndexKindMismatchError, match="same index_kind"):
        xr.align(*objs, join=join)
    with pytest.raises(IndexKindMismatchError, match="index_kind"):
        objs[0] + objs[1]
    with pytest.raises(xr.AlignmentError):  # also catchable as xarray's own error
        xr.align(*objs, join=join)


def test_value_comparison_across_kinds_still_works(dsp):
    m, p = dsp
    assert m.equals(p) and p.equals(m)  # equality is not alignment


def test_mixed_orders_do_not_align():
    a = moc_ds(MortonRanges.from_subtrees(["4331421"], 8))
    b = moc_ds(MortonRanges.from_subtrees(["4331421"], 9))
    with pytest.raises(MixedOrderError):
        xr.align(a, b, join="inner")


# --- concat ---------------------------------------------------------------------------------------------


@SETTINGS
@given(domain(max_ancestors=8), st.data())
def test_concat_of_ascending_pieces_matches_pandas(dom, data):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    n = len(r)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    bounds = [0, *cuts, n]
    pieces = [slice(a, b) for a, b in pairwise(bounds)]
    m, p = moc_ds(r), pandas_ds(r)
    with no_degrade():
        got = xr.concat([m.isel(cells=s) for s in pieces], dim="cells")
    assert_same(got, xr.concat([p.isel(cells=s) for s in pieces], dim="cells"))
    assert got.xindexes["morton"].equals(m.xindexes["morton"])


@pytest.mark.parametrize(
    "first, second",
    [(["4331421"], ["43314"]), (["-31123"], ["4331421"]), (["4331421", "4331441"], ["4331431"])],
    ids=["overlapping", "reversed", "interleaved"],
)
def test_concat_refuses_what_it_cannot_hold(first, second):
    a, b = (moc_ds(MortonRanges.from_subtrees(x, 8)) for x in (first, second))
    with pytest.raises(NotImplementedError, match='index_kind="pandas"'):
        xr.concat([a, b], dim="cells")
    pa, pb = (pandas_ds(MortonRanges.from_subtrees(x, 8)) for x in (first, second))
    assert xr.concat([pa, pb], dim="cells").sizes["cells"] == a.sizes["cells"] + b.sizes["cells"]


def test_concat_refuses_mixed_orders_and_kinds():
    a = moc_ds(MortonRanges.from_subtrees(["4331421"], 8))
    b = moc_ds(MortonRanges.from_subtrees(["4331422"], 9))
    with pytest.raises(MixedOrderError):
        xr.concat([a, b], dim="cells")
    pb = pandas_ds(MortonRanges.from_subtrees(["4331422"], 8))
    with pytest.raises(IndexKindMismatchError, match="index_kind"):
        xr.concat([a, pb], dim="cells")


# --- laziness --------------------------------------------------------------------------------------------


def test_large_domain_is_never_materialized(monkeypatch):
    shards = reference(["4", "-3"], 5)  # 2048 shards
    r = MortonRanges.from_subtrees(shards, 13)  # x 4**8 cells = 134M rows (1 GB of words)
    n = len(r)
    probe = r.word_at(np.arange(0, n, n // 1000))

    real_words = MortonRanges.words

    def guarded(self):  # small fabrications are fine, the whole domain is not
        assert len(self) < 10**6, f"materialized {len(self)} words"
        return real_words(self)

    tracemalloc.start()
    try:
        monkeypatch.setattr(MortonRanges, "words", guarded)
        ds = xr.Dataset(
            {"v": ("cells", da.zeros(n, chunks=n // 8, dtype=np.float32))},
            coords=xr.Coordinates.from_xindex(MortonMocIndex.from_ranges(r)),
        )
        repr(ds)
        with no_degrade():
            picked = ds.sel(morton=probe)
            sliced = ds.isel(cells=slice(1000, n - 1000))
            head = ds.sel(morton=slice(None, probe[10]))
            joined = ds.xindexes["morton"].join(sliced.xindexes["morton"], how="inner")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # xr.concat itself allocates a one-byte-per-row mask, so only the words guard applies
    halves = xr.concat([ds.isel(cells=slice(0, n // 2)), ds.isel(cells=slice(n // 2, None))], "cells")
    assert picked.sizes["cells"] == probe.size
    np.testing.assert_array_equal(picked["morton"].values, probe)  # small fabrication only
    assert sliced.sizes["cells"] == n - 2000 and head.sizes["cells"] == 10 * (n // 1000) + 1
    assert halves.xindexes["morton"].equals(ds.xindexes["morton"])
    assert len(joined.ranges) == n - 2000
    assert peak < 50 * 2**20, f"peak {peak / 2**20:.1f} MiB"


# --- the real fixture stores ---------------------------------------------------------------------------


@pytest.mark.layers
@pytest.mark.parametrize("name", ["zagg/single_8/store", "serc_hive", "serc_hive_pg3", "zagg/versioned/store"])
def test_open_hive_moc_equals_pandas_on_fixtures(name):
    import moczarr
    from moczarr.storage import count_requests
    from tests.helpers import fixture_path

    root = fixture_path(name)
    with count_requests() as counter:
        m = moczarr.open_hive(root, index_kind="moc").load()
        words = m["morton"].values
    assert counter.kind("chunk:morton") == 0, counter.summary()
    p = moczarr.open_hive(root, index_kind="pandas").load()
    assert isinstance(m.xindexes["morton"], MortonMocIndex)
    assert isinstance(p.xindexes["morton"], PandasIndex)
    xr.testing.assert_equal(m, p)
    np.testing.assert_array_equal(words, p["morton"].values)
    with no_degrade():
        xr.testing.assert_equal(m.isel(cells=slice(3, -3)), p.isel(cells=slice(3, -3)))
        a, b = xr.align(m, m.isel(cells=slice(0, words.size // 2)), join="outer")
    pa, pb = xr.align(p, p.isel(cells=slice(0, words.size // 2)), join="outer")
    xr.testing.assert_equal(a, pa)
    xr.testing.assert_equal(b, pb)
    picks = words[::5]
    with no_degrade():
        got = m.sel(morton=picks)
    xr.testing.assert_equal(got, p.sel(morton=picks))
