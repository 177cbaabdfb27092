"""Hypothesis strategies the tests share: rank-space domains built from real mortie ids, biased toward seams and
overlaps (the range and index tests draw them)."""

from __future__ import annotations

import mortie
import numpy as np
from hypothesis import strategies as st

U64 = np.uint64


def order_of(s: str) -> int:
    return len(s) - (2 if s.startswith("-") else 1)


def reference(ancestors, order) -> np.ndarray:
    """Sorted unique words at ``order`` under each ancestor, via generate_morton_children."""
    parts = [np.zeros(0, dtype=U64)]
    for a in ancestors:
        word = mortie.decimal_to_word(a)
        if order_of(a) == order:
            parts.append(np.array([word], dtype=U64))
        else:
            parts.append(np.asarray(mortie.generate_morton_children(word, order), dtype=U64))
    return np.unique(np.concatenate(parts))


BASES = ["4", "-3", "6", "-1", "1", "-6"]  # 6 | -1 is the north/south seam (bit 63 flips)


@st.composite
def ancestor(draw, order):
    k = draw(st.integers(max(0, order - 3), order))
    base = draw(st.sampled_from(BASES))
    style = draw(st.sampled_from(["random", "low", "high"]))
    if style == "low":
        digits = "1" * k
    elif style == "high":
        digits = "4" * k
    else:
        digits = draw(st.text(alphabet="1234", min_size=k, max_size=k))
    return base + digits


@st.composite
def domain(draw, order=None, max_ancestors=6):
    c = draw(st.integers(1, 6)) if order is None else order
    anc = draw(st.lists(ancestor(c), max_size=max_ancestors))
    return c, anc


@st.composite
def two_domains(draw):
    c = draw(st.integers(1, 5))
    return c, draw(st.lists(ancestor(c), max_size=5)), draw(st.lists(ancestor(c), max_size=5))
