"""The catalog files' YAML writer: whatever it writes, a YAML loader reads back as the same document."""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from moczarr_intake.intake_yaml import block as block_yaml

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
documents = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=25
)


@given(st.dictionaries(st.text(), documents, max_size=6))
def test_any_document_reads_back_as_itself(doc):
    assert yaml.safe_load(block_yaml.dump(doc)) == doc


LOOKALIKES = ["no", "Yes", "on", "OFF", "null", "~", "1.0", "1e-05", "0x1f", "", "a: b", "- x", "#"]


@pytest.mark.parametrize("word", LOOKALIKES)
def test_strings_that_look_like_other_types_stay_strings(word):
    back = yaml.safe_load(block_yaml.dump({word: word, "list": [word]}))
    assert back == {word: word, "list": [word]}
    assert all(isinstance(k, str) for k in back)


def test_floats_keep_their_type_and_value():
    values = [1e-05, 1e20, -0.0, 0.1, float("inf"), float("-inf"), 123456789.125]
    back = yaml.safe_load(block_yaml.dump({"v": values}))["v"]
    assert back == values and all(type(v) is float for v in back)
    assert math.isnan(yaml.safe_load(block_yaml.dump({"v": float("nan")}))["v"])


def test_tuples_are_sequences_and_keys_keep_their_order():
    text = block_yaml.dump({"z": (1, 2), "a": {"y": 1, "b": 2}})
    assert yaml.safe_load(text) == {"z": [1, 2], "a": {"y": 1, "b": 2}}
    assert text.index("z:") < text.index("a:") and text.index("y") < text.index("b:")


@pytest.mark.parametrize(
    ("bad", "named"), [({"when": object()}, "object"), ({1: "x"}, "not 1"), (["not a mapping"], "not list")]
)
def test_anything_else_is_a_type_error_naming_it(bad, named):
    with pytest.raises(TypeError, match=named):
        block_yaml.dump(bad)
