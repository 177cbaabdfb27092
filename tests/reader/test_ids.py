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
