"""Statements of the reader's contract (the seed, docs/concepts.md), each checked by a test that quotes it.

Statements already checked elsewhere are named there (tests/reader/test_hive_contract.py: the versioned leaves'
pointer rule, debris, the deliberate gap; tests/reader/test_pyramid.py: the all-time openers); this module holds
the ones about import paths and a cheap check of each versioned-leaf rule, on the shared fixtures.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import moczarr
from moczarr.storage import count_requests
from tests.helpers import fixture_path, load_json

VERSIONED = "zagg/versioned/store"
LEAF = "1/1/1/1/1/4/4/1111144.zarr"


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
