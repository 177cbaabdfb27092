"""Property tests: fuzzed manifests, stamps and opener arguments never raise an untyped exception.

Every example either succeeds or raises a :class:`~moczarr.errors.MoczarrError`
subclass; anything else (``TypeError``, ``KeyError``, ``AttributeError``,
zarr's or numpy's errors) fails the property. How many examples: the Hypothesis
profile (tests/conftest.py: a few while developing, many and reproducible under
CI); a failing example is shrunk and printed by hypothesis.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import moczarr
import moczarr.moraine
from moczarr.errors import AOIError, MoczarrError, MoczarrWarning
from moczarr.format.manifest import parse_manifest
from moczarr.openers.pyramid import pyramid_declaration, pyramid_levels
from tests.helpers import fixture_path, load_json, writable_copy

#: drawing whole manifests and stamps is slow by nature, not a problem (examples and deadline: the profile)
FUZZ = settings(suppress_health_check=[HealthCheck.too_slow])

#: any JSON value, small
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
#: strings a hostile store would try: traversals, separators, NUL, long names, real-looking names
NAMES = st.sampled_from(
    [
        "",
        ".",
        "..",
        "../x",
        "a/b",
        "a\\b",
        "a\x00",
        "x" * 300,
        "run-",
        "run-a",
        "8",
        "count",
        "coverage.moc",
        "all",
        "2019",
        "-5",
        "1111111",
        "__x",
        "zarr.json",
    ]
) | st.text(max_size=20)


def typed(call, *args, **kwargs):
    """Run ``call``; an exception must be a MoczarrError (returns it, or the result)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MoczarrWarning)
        try:
            return call(*args, **kwargs)
        except MoczarrError as exc:
            return exc


@pytest.fixture(scope="module")
def stores(store_layer, tmp_path_factory):
    """The one place this file finds its stores (the lead may switch it to generated stores): private copies."""
    base = tmp_path_factory.mktemp("fuzz")
    out = {}
    for name in ("zagg/single_8/store", "zagg/versioned/store", "overview_hive/atl06", "zagg/windowed/store"):
        out[name] = writable_copy(fixture_path(name), base / name.replace("/", "__"))
    return out


# -- manifests --------------------------------------------------------------------------------------------
MANIFEST_KEYS = [
    "spec",
    "dataset",
    "cell_order",
    "shard_order",
    "path_grouping",
    "semantic_hash",
    "temporal",
    "pyramid",
    "multiscales",
    "generated_at",
]


@st.composite
def manifests(draw):
    doc = copy.deepcopy(load_json(fixture_path("overview_hive/atl06/morton_hive.json")))
    for key in draw(st.lists(st.sampled_from(MANIFEST_KEYS), max_size=3, unique=True)):
        doc[key] = draw(JSON)
    if draw(st.booleans()):
        block = doc.get("pyramid") if isinstance(doc.get("pyramid"), dict) else {}
        overview = block.get("overview") if isinstance(block.get("overview"), dict) else {}
        overview[draw(st.sampled_from(["orders", "spacing", "fields", "all_time"]))] = draw(JSON)
        block["overview"] = overview
        doc["pyramid"] = block
    if draw(st.booleans()):
        doc["spec"] = "morton-hive/2"
        doc["temporal"] = {draw(st.sampled_from(["schedule", "windows"])): draw(JSON)}
    return doc


@FUZZ
@given(doc=manifests())
def test_fuzzed_manifests_parse_or_raise_typed(doc):
    manifest = typed(parse_manifest, doc, "fuzz")
    if not isinstance(manifest, MoczarrError):
        typed(pyramid_declaration, manifest)
        typed(pyramid_levels, manifest)
        typed(lambda: (manifest.schedule, manifest.declared_windows, manifest.summary()))


@pytest.mark.layers
@FUZZ
@given(doc=manifests())
def test_fuzzed_manifest_on_disk_opens_or_raises_typed(stores, doc):
    root = stores["overview_hive/atl06"]
    path = root / "morton_hive.json"
    saved = path.read_bytes()
    try:
        path.write_text(json.dumps(doc))
        typed(lambda: moczarr.open_hive(root).load())
        typed(moczarr.open_pyramid, root)
    finally:
        path.write_bytes(saved)


# -- stamps -----------------------------------------------------------------------------------------------
STAMP_KEYS = [
    "spec",
    "cells_with_data",
    "granule_count",
    "written_at",
    "time_range",
    "coverage",
    "content_hashes",
    "current",
    "window",
    "complete",
]


@st.composite
def stamps(draw, base: dict):
    stamp = copy.deepcopy(base)
    for key in draw(st.lists(st.sampled_from(STAMP_KEYS), min_size=1, max_size=3, unique=True)):
        stamp[key] = draw(JSON | NAMES)
    if draw(st.booleans()) and isinstance(stamp.get("coverage"), dict):
        stamp["coverage"][draw(st.sampled_from(["sidecar", "encoding", "box", "spec"]))] = draw(JSON | NAMES)
    if draw(st.booleans()) and isinstance(stamp.get("content_hashes"), dict):
        stamp["content_hashes"]["arrays"] = {f"8/{draw(NAMES)}": "0" * 64}
    return stamp


VERSIONED_LEAF = "1/1/1/1/1/4/4/1111144.zarr"
SCHEMA_LEAF = "1/1/1/1/1/1/1/1111111.zarr"


def _stamp_doc(root: Path, leaf: str) -> dict:
    return load_json(root / leaf / "zarr.json")


@pytest.mark.layers
@FUZZ
@given(data=st.data(), leaf=st.sampled_from([VERSIONED_LEAF, SCHEMA_LEAF]))
def test_fuzzed_stamps_open_or_raise_typed(stores, data, leaf):
    root = stores["zagg/versioned/store"]
    path = root / leaf / "zarr.json"
    saved = path.read_bytes()
    doc = json.loads(saved)
    doc["attributes"]["morton_hive_commit"] = data.draw(stamps(doc["attributes"]["morton_hive_commit"]))
    try:
        path.write_text(json.dumps(doc))
        typed(lambda: moczarr.open_hive(root).load())
        typed(moczarr.read_coverage_bitmap, root, leaf)
        typed(lambda: moczarr.open_leaf(root, leaf).load())
        typed(moczarr.read_commits, root, [leaf])
    finally:
        path.write_bytes(saved)


@pytest.mark.layers
@FUZZ
@given(
    attrs=st.dictionaries(st.sampled_from(["zagg_overview", "role", "morton_hive_commit"]), JSON, max_size=3),
    field=NAMES,
)
def test_fuzzed_overview_roots_degrade_or_raise_typed(stores, attrs, field):
    root = stores["overview_hive/atl06"]
    path = root / "4/3/3/2/3/all.zarr/zarr.json"
    saved = path.read_bytes()
    doc = json.loads(saved)
    doc["attributes"].update(attrs)
    block = doc["attributes"].get("zagg_overview")
    if isinstance(block, dict):
        block["fields"] = {field: {"class": "exact"}}
    try:
        path.write_text(json.dumps(doc))
        tree = typed(moczarr.open_pyramid, root)
        if not isinstance(tree, MoczarrError):
            assert "o8" in tree.children  # a cache never takes the source level down
    finally:
        path.write_bytes(saved)


# -- opener arguments ---------------------------------------------------------------------------------------
#: morton-id-shaped text of every length: real ids, ids with more digits than order 29 allows, point markers
IDS = st.from_regex(r"-?[0-9][0-9]{0,34}p?", fullmatch=True) | st.sampled_from(
    ["1111111111111111111111111111111", "-61111111111111111111111111111111", "11111111111111111111111111111p"]
)
ARGS = JSON | NAMES | IDS | st.lists(IDS, max_size=3) | st.sampled_from([-1, 0, 2**64, 1.5, b"x", (), object()])


@pytest.mark.layers
@FUZZ
@given(aoi=ARGS, window=ARGS, index_kind=ARGS, fabricate=ARGS, verify=ARGS)
def test_fuzzed_open_hive_arguments(stores, aoi, window, index_kind, fabricate, verify):
    root = stores["zagg/single_8/store"]
    typed(
        moczarr.open_hive,
        root,
        aoi=aoi,
        window=window,
        index_kind=index_kind,
        fabricate_cell_ids=fabricate,
        verify_chunks=verify,
    )


@FUZZ
@given(aoi=IDS | st.lists(IDS, min_size=1, max_size=4))
def test_fuzzed_aoi_ids_are_covered_or_refused_typed(aoi):
    """Every id-shaped ``aoi=``, too fine for order 29 included, is a cover or an AOIError naming it."""
    result = typed(moczarr.aoi_cover, aoi, 8)
    if isinstance(result, MoczarrError):
        assert isinstance(result, AOIError)
        first_bad = aoi if isinstance(aoi, str) else None
        if first_bad is not None:
            assert repr(first_bad)[:30] in str(result)


@pytest.mark.layers
@FUZZ
@given(storage_options=ARGS, concurrency=ARGS, root=ARGS)
def test_fuzzed_store_arguments(stores, storage_options, concurrency, root):
    typed(moczarr.open_hive, root, storage_options=storage_options)
    typed(moczarr.open_hive, stores["zagg/single_8/store"], storage_options=storage_options, concurrency=concurrency)


@pytest.mark.layers
@FUZZ
@given(cell_order=ARGS, levels=ARGS, window=ARGS, all_time=ARGS)
def test_fuzzed_pyramid_arguments(stores, cell_order, levels, window, all_time):
    root = stores["overview_hive/atl06"]
    typed(moczarr.open_level, root, cell_order, window=window, all_time=all_time)
    typed(moczarr.open_pyramid, root, levels=levels, window=window, all_time=all_time)


@pytest.mark.layers
@FUZZ
@given(leaf=ARGS, products=ARGS, window=ARGS)
def test_fuzzed_leaf_and_tree_arguments(stores, leaf, products, window):
    typed(moczarr.open_leaf, stores["zagg/single_8/store"], leaf)
    typed(moczarr.read_coverage_bitmap, stores["zagg/single_8/store"], leaf)
    typed(moczarr.open_store, stores["zagg/windowed/store"], products=products, window=window)


@pytest.mark.layers
@FUZZ
@given(level=ARGS, path=ARGS)
def test_fuzzed_moraine_arguments(level, path):
    root = fixture_path("moraine/ras_mean_v1")
    typed(moczarr.moraine.open_moraine_level, root, level)
    typed(moczarr.moraine.is_moraine_pyramid, path)
    typed(moczarr.moraine.read_moraine_info, path)
