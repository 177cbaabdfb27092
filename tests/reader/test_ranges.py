"""MortonRanges against materialized numpy word arrays built from real mortie words."""

from __future__ import annotations

import copy
import pickle

import mortie
import numpy as np
import pytest
from dask.base import tokenize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moczarr.errors import (
    AOIError,
    AOITypeError,
    ArgumentError,
    MixedOrderError,
    MoczarrError,
    SelectionError,
)
from moczarr.ids import to_words
from moczarr.indexes.ranges import MortonRanges, packing
from tests.strategies import domain, order_of, reference, two_domains

#: the strategies build whole domains (mortie children of drawn ancestors) while drawing: slow generation is the
#: strategy's nature, not a problem. Examples and deadline: the profile (tests/conftest.py).
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])
U64 = np.uint64


def w(s):
    """One decimal string -> packed word (Python int)."""
    return int(mortie.decimal_to_word(s))


# --- packing ------------------------------------------------------------------------------------


def test_packing_matches_format_for_every_rank_order():
    for c in range(28):
        assert packing(c) == (60 - 2 * c, c)


@pytest.mark.parametrize("bad", [28, 29, -1, 30, 2.5, "8"])
def test_packing_refuses_orders_outside_rank_space(bad):
    with pytest.raises(ArgumentError):
        packing(bad)


def test_packing_probe_fails_loudly_when_mortie_disagrees(monkeypatch):
    real = mortie.decimal_to_word

    def shifted(s, *a, **k):  # a packing with the suffix moved up one bit
        return real(s, *a, **k) << U64(1)

    packing.cache_clear()
    monkeypatch.setattr(mortie, "decimal_to_word", shifted)
    try:
        with pytest.raises(MoczarrError, match="probe failed"):
            packing(8)
    finally:
        monkeypatch.undo()
        packing.cache_clear()
    assert packing(8) == (44, 8)


def test_worked_example_from_format():
    # FORMAT.md §1.1: shard 11213 = 0x1120000000000004, its first order-6 cell 1121311.
    r = MortonRanges.from_subtrees(["11213"], 6)
    assert len(r) == 16 and r.n_intervals == 1
    assert int(r.words()[0]) == 0x1120000000000006 == w("1121311")


# --- construction ---------------------------------------------------------------------------------


@SETTINGS
@given(domain())
def test_from_subtrees_matches_generate_morton_children(dom):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    ref = reference(anc, c)
    assert len(r) == ref.size
    np.testing.assert_array_equal(r.words(), ref)
    assert r.words().dtype == U64
    # canonical: sorted, disjoint, not adjacent
    assert np.all(r.lo <= r.hi)
    assert np.all(r.lo[1:] > r.hi[:-1] + U64(1))
    assert MortonRanges.from_words(ref, order=c) == r


def test_subtree_rank_interval_formula():
    for a, c in [("4331421", 8), ("-31123", 9), ("-6", 3), ("1", 2), ("6444", 6)]:
        k = order_of(a)
        ka = w(a) >> (60 - 2 * k)
        r = MortonRanges.from_subtrees([a], c)
        assert (int(r.lo[0]), int(r.hi[0])) == (ka << 2 * (c - k), ((ka + 1) << 2 * (c - k)) - 1)
        kids = np.asarray(mortie.generate_morton_children(w(a), c), dtype=U64) >> U64(60 - 2 * c)
        np.testing.assert_array_equal(kids, np.arange(int(r.lo[0]), int(r.hi[0]) + 1, dtype=U64))


def test_southern_words_set_bit_63_and_sort_last():
    r = MortonRanges.from_subtrees(["-31123", "4331421"], 8)
    words = r.words()
    assert np.all(words[-16:] >= U64(1 << 63))
    assert np.all(np.diff(words.astype(object)) > 0)


def test_seam_between_hemispheres_is_one_interval():
    r = MortonRanges.from_subtrees(["64444", "-11111"], 4)
    assert r.n_intervals == 1 and len(r) == 2


def test_from_words_infers_order_and_ignores_order_and_duplicates():
    ref = reference(["4331421"], 8)
    shuffled = np.concatenate([ref[::-1], ref[:3]])
    r = MortonRanges.from_words(shuffled)
    assert r.order == 8 and len(r) == 16
    np.testing.assert_array_equal(r.words(), ref)


def test_from_words_accepts_decimal_strings():
    r = MortonRanges.from_words(["433142111", "433142112", "-311231111"])
    assert r.order == 8 and len(r) == 3 and r.n_intervals == 2


def test_mixed_orders_are_refused():
    with pytest.raises(MixedOrderError):
        MortonRanges.from_words([w("433142111"), w("43314211")])
    with pytest.raises(MixedOrderError):
        MortonRanges.from_words(["433142111"], order=7)
    with pytest.raises(MixedOrderError):
        MortonRanges.from_words(["433142111"]).union(MortonRanges.from_words(["43314211"]))


def test_orders_28_and_29_are_refused():
    with pytest.raises(ArgumentError):
        MortonRanges.from_words(["4" + "1" * 28])
    with pytest.raises(ArgumentError):
        MortonRanges.empty(28)
    with pytest.raises(ArgumentError):
        MortonRanges.from_subtrees(["4"], 29)


def test_order_0_and_27_extremes():
    r0 = MortonRanges.from_subtrees(["1", "-6"], 0)
    assert len(r0) == 2 and r0.n_intervals == 2
    last = "-6" + "4" * 27
    r27 = MortonRanges.from_words([last])
    assert int(r27.hi[0]) == 13 * 4**27 - 1
    assert r27.position_of([last]).tolist() == [0]
    full = MortonRanges.from_subtrees(["1", "2", "3", "4", "5", "6", "-1", "-2", "-3", "-4", "-5", "-6"], 27)
    assert len(full) == 12 * 4**27 and full.n_intervals == 1
    assert int(full.word_at(-1)) == w(last)


def test_bad_inputs():
    with pytest.raises(ArgumentError):
        MortonRanges.from_words([])  # no order to infer
    assert len(MortonRanges.from_words([], order=5)) == 0
    with pytest.raises(ArgumentError):
        MortonRanges.from_words([0], order=5)
    with pytest.raises(AOIError):
        MortonRanges.from_words(["4331427"])  # digit 7
    with pytest.raises(ArgumentError):
        MortonRanges.from_subtrees(["433142111"], 7)  # ancestor finer than the order
    with pytest.raises(ArgumentError):
        MortonRanges.from_rank_intervals([10], [5], 1)  # lo > hi
    with pytest.raises(ArgumentError):
        MortonRanges.from_rank_intervals([1], [5], 1)  # below 4**order: no base prefix
    with pytest.raises(ArgumentError):
        MortonRanges.from_rank_intervals([4], [13 * 4], 1)  # past the last cell


def test_from_rank_intervals_normalizes():
    r = MortonRanges.from_rank_intervals([140, 110, 112, 121, 130], [145, 120, 115, 125, 130], 2)
    assert r.lo.tolist() == [110, 130, 140] and r.hi.tolist() == [125, 130, 145]
    assert len(r) == 16 + 1 + 6
    assert r.lo.dtype == U64 and r.hi.dtype == U64


def as_words(words):
    """Words as the rank space reads them: any shape, values unchecked against the packing."""
    return to_words(words, keep_shape=True, validate=False)


def test_to_words_as_rank_space_reads_them():
    big = w("-311231111")
    assert big > 2**63
    out = as_words(["433142111", big, np.uint64(5)])
    assert out.dtype == U64 and out.tolist() == [w("433142111"), big, 5]
    assert as_words(["433", 5]).tolist() == [w("433"), 5]  # 5 stays an int, never the id "5"
    assert as_words("4").shape == ()
    with pytest.raises(AOIError):
        as_words([-1])
    with pytest.raises(AOIError):
        as_words(np.array([-3]))
    with pytest.raises(AOITypeError):
        as_words([1.5])
    with pytest.raises(AOITypeError):
        as_words(np.array([1.0]))


# --- positions and words ---------------------------------------------------------------------------


@SETTINGS
@given(domain(), st.data())
def test_position_word_round_trip(dom, data):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    ref = reference(anc, c)
    n = ref.size
    if n:
        pos = np.asarray(data.draw(st.lists(st.integers(-n, n - 1), max_size=30)), dtype=np.int64)
        np.testing.assert_array_equal(r.word_at(pos), ref[pos])
        np.testing.assert_array_equal(r.position_of(ref[pos]), np.where(pos < 0, pos + n, pos))
    with pytest.raises(IndexError):
        r.word_at([n])
    probes = np.concatenate([ref, reference(["-3", "4", "5"], c)])  # some absent
    found = r.find(probes)
    expect = np.array([np.searchsorted(ref, p) if p in set(ref.tolist()) else -1 for p in probes.tolist()])
    np.testing.assert_array_equal(found, expect.astype(np.int64))
    np.testing.assert_array_equal(r.contains(probes), expect >= 0)


def test_position_of_names_the_missing_word():
    r = MortonRanges.from_subtrees(["4331421"], 8)
    with pytest.raises(SelectionError, match="433142211"):
        r.position_of(["433142111", "433142211"])
    assert r.find(["43314211"]).tolist() == [-1]  # other order: absent, not mis-ranked


def test_find_keeps_shape():
    r = MortonRanges.from_subtrees(["4331421"], 8)
    words = r.words().reshape(4, 4)
    np.testing.assert_array_equal(r.find(words), np.arange(16).reshape(4, 4))
    np.testing.assert_array_equal(r.word_at(np.arange(16).reshape(2, 8)), words.reshape(2, 8))


@SETTINGS
@given(domain(), st.lists(st.integers(0, 2**64 - 1), max_size=20), st.sampled_from(["left", "right"]))
def test_searchsorted_matches_numpy(dom, raw, side):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    ref = reference(anc, c)
    probes = np.concatenate(
        [np.asarray(raw, dtype=U64), ref[:5], ref[-5:], ref[:3] + U64(1), reference(["4", "-3"], max(c - 1, 0))]
    ).astype(U64)
    np.testing.assert_array_equal(r.searchsorted(probes, side), np.searchsorted(ref, probes, side))


# --- set algebra -------------------------------------------------------------------------------------


@SETTINGS
@given(two_domains())
def test_set_algebra_matches_numpy(doms):
    c, a, b = doms
    ra, rb = MortonRanges.from_subtrees(a, c), MortonRanges.from_subtrees(b, c)
    wa, wb = reference(a, c), reference(b, c)
    np.testing.assert_array_equal(ra.intersection(rb).words(), np.intersect1d(wa, wb))
    np.testing.assert_array_equal(ra.union(rb).words(), np.union1d(wa, wb))
    np.testing.assert_array_equal(ra.difference(rb).words(), np.setdiff1d(wa, wb))
    assert (ra & rb) == MortonRanges.from_words(np.intersect1d(wa, wb), order=c)
    assert (ra | rb) == MortonRanges.from_words(np.union1d(wa, wb), order=c)
    assert (ra - rb) == MortonRanges.from_words(np.setdiff1d(wa, wb), order=c)
    assert ra.intersection(rb).issubset(ra)
    np.testing.assert_array_equal(ra.locate(rb), ra.find(wb))
    np.testing.assert_array_equal(rb.locate(ra), rb.find(wa))
    comp = ra.complement()
    assert len(comp) + len(ra) == 12 * 4**c and len(comp & ra) == 0
    assert comp.complement() == ra


# --- positional selection -----------------------------------------------------------------------------


@SETTINGS
@given(
    domain(), st.integers(-80, 80) | st.none(), st.integers(-80, 80) | st.none(), st.sampled_from([None, 1, 2, 3, 7])
)
def test_isel_slices_match_numpy(dom, start, stop, step):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    ref = reference(anc, c)
    key = slice(start, stop, step)
    got = r.isel(key)
    np.testing.assert_array_equal(got.words(), ref[key])
    assert len(got) == ref[key].size


def test_isel_refuses_negative_steps():
    r = MortonRanges.from_subtrees(["4331421"], 8)
    with pytest.raises(ArgumentError):
        r.isel(slice(None, None, -1))


@SETTINGS
@given(domain(), st.data())
def test_take_ascending_positions(dom, data):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    ref = reference(anc, c)
    if ref.size == 0:
        return
    pos = sorted(data.draw(st.sets(st.integers(0, ref.size - 1), max_size=40)))
    np.testing.assert_array_equal(r.take(np.asarray(pos, dtype=np.int64)).words(), ref[pos])
    if len(pos) >= 2:
        with pytest.raises(ArgumentError):
            r.take(pos[::-1])
        with pytest.raises(ArgumentError):
            r.take([pos[0], pos[0]])


@SETTINGS
@given(domain(), st.integers(1, 50))
def test_iter_words_in_blocks(dom, block):
    c, anc = dom
    r = MortonRanges.from_subtrees(anc, c)
    blocks = list(r.iter_words(block))
    assert all(0 < b.size <= block for b in blocks)
    joined = np.concatenate(blocks) if blocks else np.zeros(0, dtype=U64)
    np.testing.assert_array_equal(joined, reference(anc, c))


def test_iter_words_rejects_bad_block():
    with pytest.raises(ArgumentError):
        list(MortonRanges.empty(3).iter_words(0))


# --- concat -------------------------------------------------------------------------------------------


def test_concat_of_ascending_disjoint_domains():
    parts = [MortonRanges.from_subtrees([a], 8) for a in ["4331421", "4331422", "4331441", "-31123"]]
    joined = MortonRanges.concat(parts)
    np.testing.assert_array_equal(joined.words(), np.concatenate([p.words() for p in parts]))
    assert joined.n_intervals == 3  # 4331421 and 4331422 touch
    assert MortonRanges.concat([MortonRanges.empty(8), parts[0]]) == parts[0]


@pytest.mark.parametrize(
    "a, b",
    [(["4331421"], ["43314"]), (["-31123"], ["4331421"]), (["4331421", "4331441"], ["4331431"])],
    ids=["overlapping", "reversed", "interleaved"],
)
def test_concat_refuses_non_ascending(a, b):
    with pytest.raises(ArgumentError):
        MortonRanges.concat([MortonRanges.from_subtrees(a, 8), MortonRanges.from_subtrees(b, 8)])


def test_concat_refuses_mixed_orders():
    with pytest.raises(MixedOrderError):
        MortonRanges.concat([MortonRanges.from_subtrees(["4"], 3), MortonRanges.from_subtrees(["-3"], 4)])


# --- identity ----------------------------------------------------------------------------------------


def test_equality_hash_repr_pickle_copy():
    r = MortonRanges.from_subtrees(["4331421", "-31123"], 8)
    same = MortonRanges.from_words(r.words())
    assert r == same and hash(r) == hash(same)
    assert r != MortonRanges.from_subtrees(["4331421"], 8)
    assert r != MortonRanges.from_rank_intervals(r.lo << U64(2), (r.hi << U64(2)) + U64(3), 9)
    text = repr(r)
    assert "order=8" in text and "intervals=2" in text and "rows=272" in text
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.shift == r.shift and back.marker == r.marker
    assert copy.deepcopy(r) is r
    with pytest.raises(ValueError):
        r.lo[0] = 1  # immutable


def test_dask_token_tells_long_domains_apart():
    """The token names dask arrays built on a domain (cell_ids): two domains differing only deep inside a long
    interval list must not share one, equal domains must."""
    lo = np.arange(4**8, 4**8 + 40_000, 4, dtype=np.int64)  # 10,000 intervals: an array's str elides the middle
    moved = lo.copy()
    moved[5_000] += 1
    a = MortonRanges.from_rank_intervals(lo, lo + 1, 8)
    b = MortonRanges.from_rank_intervals(moved, moved + 1, 8)
    assert a != b
    assert tokenize(a) != tokenize(b)
    assert tokenize(a) == tokenize(MortonRanges.from_words(a.words()))


def test_small_footprint_for_a_huge_domain():
    shards = reference(["4", "-3"], 5)  # 2048 shards ...
    r = MortonRanges.from_subtrees(shards, 13)  # ... of 4**8 cells: 134M rows
    assert len(r) == 2048 * 4**8
    assert r.n_intervals == 2 and r.nbytes < 100
    assert int(r.word_at(-1)) == w("-3" + "4" * 13)
