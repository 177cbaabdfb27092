"""The one id converter (``moczarr.ids.to_words``): every spelling, and typed errors for everything else."""

from __future__ import annotations

import mortie
import numpy as np
import pytest

import moczarr
from moczarr import ids
from tests.helpers import REPO


def test_every_spelling_gives_the_same_words():
    word = int(mortie.decimal_to_word("4331421"))
    for spelling in ("4331421", b"4331421", word, np.uint64(word), ["4331421"], np.array([word], dtype=np.uint64)):
        assert ids.to_words(spelling).tolist() == [word], spelling
    assert ids.to_words(["433", 5], validate=False).tolist() == [int(mortie.decimal_to_word("433")), 5]
    assert ids.to_words("4", keep_shape=True).shape == ()


@pytest.mark.parametrize(
    "bad, typed",
    [
        ("4331425", moczarr.errors.AOIError),  # digit 5
        ([-1], moczarr.errors.AOIError),
        ([2**70], moczarr.errors.AOIError),
        (b"\xff", moczarr.errors.AOIError),
        (["1" * 5000], moczarr.errors.AOIError),
        ([1.5], moczarr.errors.AOITypeError),
        (np.array([1.0]), moczarr.errors.AOITypeError),
        ([True], moczarr.errors.AOITypeError),
        ([["11111"], []], moczarr.errors.AOIError),
        ("4331421\n", moczarr.errors.AOIError),  # a line break after a well-formed id
        (["43314", "433\n14"], moczarr.errors.AOIError),  # one inside: two ids' worth of lines, one string
    ],
)
def test_bad_ids_raise_typed_errors_naming_them(bad, typed):
    with pytest.raises(typed) as info:
        ids.to_words(bad)
    assert isinstance(info.value, moczarr.errors.MoczarrError)


def test_sel_with_a_bad_label_raises_a_moczarr_error():
    ds = moczarr.open_hive(REPO / "catalogs" / "sample" / "elevation")
    with pytest.raises(moczarr.errors.AOIError, match="4331425"):
        ds.sel(morton=["4331425"])


def test_a_decimal_id_is_the_whole_string():
    assert ids.is_decimal_id("4331421") and ids.is_area_decimal("4331421")
    assert not ids.is_decimal_id("4331421\n") and not ids.is_area_decimal("4331421\n")
    assert ids.is_decimal_id("4" + "1" * 30) and not ids.is_area_decimal("4" + "1" * 30)  # order 30: no cell
    assert not ids.is_area_decimal("4" + "1" * 29 + "p")  # a point, not an area


def _canonical(word: int) -> bool:
    """FORMAT.md §1.1 per word: base prefix 1..12; suffix 0..27 with no body bit below the order, or 28..63."""
    prefix, suffix = word >> 60, word & 63
    return 1 <= prefix <= 12 and (suffix > 27 or (word >> 6) & ((1 << (54 - 2 * suffix)) - 1) == 0)


def test_canonical_words_is_the_format_rule():
    rng = np.random.default_rng(41)
    cells = [
        "-" * int(rng.integers(2)) + str(rng.integers(1, 7)) + "".join(map(str, rng.integers(1, 5, o)))
        for o in range(30)
    ]
    good = ids.to_words([*cells, cells[-1] + "p"])
    flipped = np.concatenate([good ^ (np.uint64(1) << np.uint64(b)) for b in range(64)])  # every one-bit damage
    words = np.concatenate(
        [good, flipped, rng.integers(0, 2**64, 2000, dtype=np.uint64), np.array([0, 2**64 - 1], np.uint64)]
    )
    assert ids.canonical_words(words).tolist() == [_canonical(int(w)) for w in words]
    assert ids.canonical_words(good).all()
