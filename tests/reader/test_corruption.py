"""Damaged copies of real stores: object kind x damage x API, never a silent difference.

Each case damages one object of a fresh copy of a fixture store and runs
one API end to end (open, then compute). The outcome must be exactly the
one the table names:

- ``Raises(E)``: a typed error (a ``MoczarrError`` subclass) naming the object;
- ``Degrades(W, check)``: the warning ``W``, and a result that ``check``
  proves sound (for caches: the source data equal to the undamaged golden);
- ``Golden()``: the same result as the undamaged store, without a warning
  (the damaged object is one the API never reads).

A missing or replaced data chunk that still decodes is caught by the read's
check against the stamp's ``content_hashes`` (the hive store here records
them); tests/reader/test_verify_on_read.py covers that check under every opener.

Damages: ``missing``, ``empty``, ``truncated``, ``invalid_json`` (for
binary objects: garbage bytes), ``wrong_type`` (a JSON list, or a value of
the wrong type), ``unknown_spec`` and ``out_of_range`` (object-specific).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zstandard

import moczarr
import moczarr.moraine
from moczarr.errors import (
    ChunkError,
    ContentHashError,
    CoverageError,
    CoverageFallbackWarning,
    DebrisWarning,
    ManifestError,
    MissingLeafWarning,
    MoczarrError,
    MoczarrWarning,
    NotAHiveStoreError,
    ObjectDroppedWarning,
    PyramidError,
    SchemaError,
    StampError,
    VersionPointerError,
)
from tests.helpers import fixture_path

pytestmark = pytest.mark.layers

DAMAGES = ("missing", "empty", "truncated", "invalid_json", "wrong_type", "unknown_spec", "out_of_range")


@pytest.fixture
def store(copy_fixture):
    """A damageable copy of a store of the running test's layer."""
    return copy_fixture


# -- outcomes ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Raises:
    error: type
    match: str | None = None


@dataclass(frozen=True)
class Degrades:
    warning: type
    check: Callable


@dataclass(frozen=True)
class Golden:
    pass


# -- damage -----------------------------------------------------------------------------------------------
def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def damage(path: Path, kind: str, mutate: dict) -> None:
    """Apply ``kind`` to the object at ``path``; ``mutate`` holds the object-specific damages."""
    if kind in mutate:
        mutate[kind](path)
    elif kind == "missing":
        path.unlink()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: max(1, len(data) // 2)])
    elif kind == "invalid_json":
        path.write_bytes(b"{not json \x00\xff")
    elif kind == "wrong_type":
        path.write_bytes(b"[1, 2, 3]")
    else:
        raise AssertionError(f"no {kind} damage for {path}")


def set_field(*keys, value=None, delete=False):
    def change(path: Path):
        def edit(doc):
            node = doc
            for k in keys[:-1]:
                node = node[k]
            if delete:
                del node[keys[-1]]
            else:
                node[keys[-1]] = value

        edit_json(path, edit)

    return change


STAMP = ("attributes", "morton_hive_commit")


# -- the hive matrix ----------------------------------------------------------------------------------------
HIVE = "zagg/single_8/store"
SCHEMA_LEAF = "1/1/1/1/1/1/1/1111111.zarr"  # the first admitted leaf: the schema is read from it
OTHER_LEAF = "1/1/1/1/1/4/4/1111144.zarr"
OTHER_DECIMAL = "1111144"


def open_hive_loaded(root: Path) -> xr.Dataset:
    return moczarr.open_hive(root).load()


def open_hive_checked(root: Path) -> xr.Dataset:
    """A load checked against the stamps' content hashes: how a replaced or deleted data chunk is caught."""
    return moczarr.open_hive(root, verify_chunks=True).load()


#: damage only the content-hash check sees (by default the stored values, or fill, are read)
CHECKED_KINDS = {"data_chunk"}


def without_leaf(decimal: str):
    def check(result: xr.Dataset, golden: xr.Dataset):
        assert decimal not in result.attrs["morton_hive"]["leaves"]
        assert result.attrs["morton_hive"]["n_leaves"] == golden.attrs["morton_hive"]["n_leaves"] - 1
        words = golden["morton"].values
        positions = np.searchsorted(words, result["morton"].values)
        np.testing.assert_array_equal(words[positions], result["morton"].values)
        kept = golden.isel(cells=positions)
        for name in golden.data_vars:
            np.testing.assert_array_equal(result[name].values, kept[name].values)

    return check


def equal_to_golden(result, golden):
    xr.testing.assert_identical(result, golden)


def replace_with_other_chunk(leaf_rel: str, other_rel: str):
    """Overwrite the chunk with the same chunk of another leaf: a valid chunk, the wrong values."""

    def change(path: Path):
        root = Path(path.as_posix().split(leaf_rel)[0])
        path.write_bytes((root / other_rel).read_bytes())

    return change


def reversed_moc(path: Path):
    edit_json(
        path,
        lambda d: d.update(
            ranges=[[r[1], r[0]] for r in d["ranges"]]
            if d["ranges"][0][0] != d["ranges"][0][1]
            else [["1111144", "1111111"]]
        ),
    )


HIVE_OBJECTS = {
    "manifest": (
        "morton_hive.json",
        {
            "unknown_spec": set_field("spec", value="morton-hive/9"),
            "out_of_range": set_field("cell_order", value=40),
        },
        {
            "missing": Raises(NotAHiveStoreError),
            "empty": Raises(ManifestError),
            "truncated": Raises(ManifestError),
            "invalid_json": Raises(ManifestError),
            "wrong_type": Raises(ManifestError),
            "unknown_spec": Raises(ManifestError, "morton-hive/9"),
            "out_of_range": Raises(ManifestError, "cell_order"),
        },
    ),
    "root_moc": (
        "coverage.moc",
        {
            "unknown_spec": set_field("spec", value="morton-moc/9"),
            "out_of_range": reversed_moc,
        },
        {
            **{d: Degrades(CoverageFallbackWarning, equal_to_golden) for d in DAMAGES[:-1]},
            "out_of_range": Raises(CoverageError, "backwards"),
        },
    ),
    "leaf_stamp": (
        f"{OTHER_LEAF}/zarr.json",
        {
            "unknown_spec": set_field(*STAMP, "spec", value="morton-hive/9"),
            "out_of_range": set_field(*STAMP, "cells_with_data", value=-3),
        },
        {
            "missing": Degrades(MissingLeafWarning, without_leaf(OTHER_DECIMAL)),
            "empty": Raises(StampError),
            "truncated": Raises(StampError),
            "invalid_json": Raises(StampError),
            "wrong_type": Raises(StampError, "list"),
            "unknown_spec": Raises(StampError, "morton-hive/9"),
            "out_of_range": Raises(StampError, "cells_with_data"),
        },
    ),
    "stamp_field_type": (
        f"{OTHER_LEAF}/zarr.json",
        {
            "wrong_type": set_field(*STAMP, "cells_with_data", value="many"),
            "out_of_range": set_field(*STAMP, "written_at", value=["2019"]),
            "unknown_spec": set_field(*STAMP, "time_range", value=[3, "x"]),
        },
        {
            "wrong_type": Raises(StampError, "cells_with_data"),
            "out_of_range": Raises(StampError, "written_at"),
            "unknown_spec": Raises(StampError, "time_range"),
        },
    ),
    "schema_group": (
        f"{SCHEMA_LEAF}/8/zarr.json",
        {
            "unknown_spec": set_field("zarr_format", value=9),
            "out_of_range": set_field("node_type", value="array"),
        },
        {d: Raises(StampError) for d in DAMAGES},
    ),
    "schema_array": (
        f"{SCHEMA_LEAF}/8/count/zarr.json",
        {
            "unknown_spec": set_field("zarr_format", value=4),
            "out_of_range": set_field("shape", value=[-5]),
        },
        {
            "missing": Raises(SchemaError, "count"),
            "empty": Raises(StampError),
            "truncated": Raises(StampError),
            "invalid_json": Raises(StampError),
            "wrong_type": Raises(SchemaError, "count"),
            "unknown_spec": Raises(SchemaError, "zarr_format"),
            "out_of_range": Raises(SchemaError, "shape"),
        },
    ),
    "schema_array_extent": (
        f"{SCHEMA_LEAF}/8/count/zarr.json",
        {
            "out_of_range": set_field("shape", value=[3]),
            "wrong_type": set_field("data_type", value="float99"),
            "unknown_spec": set_field("dimension_names", value=["cells", "extra"]),
        },
        {
            "out_of_range": Raises(SchemaError, "cells axis"),
            "wrong_type": Raises(SchemaError, "float99"),
            "unknown_spec": Raises(SchemaError, "dimension_names"),
        },
    ),
    "other_array": (
        f"{OTHER_LEAF}/8/count/zarr.json",
        {},
        {d: Golden() for d in ("missing", "empty", "truncated", "invalid_json", "wrong_type")},
    ),
    "other_group": (f"{OTHER_LEAF}/8/zarr.json", {}, {d: Golden() for d in ("missing", "invalid_json")}),
    "data_chunk": (
        f"{OTHER_LEAF}/8/count/c/0",
        {
            "wrong_type": replace_with_other_chunk(OTHER_LEAF, f"{SCHEMA_LEAF}/8/count/c/0"),
        },
        {
            "missing": Raises(ContentHashError, "count/c/0"),
            "empty": Raises(ChunkError, "count"),
            "truncated": Raises(ChunkError, "count"),
            "invalid_json": Raises(ChunkError, "c/0"),
            "wrong_type": Raises(ContentHashError, "count/c/0"),
        },
    ),
}

HIVE_CASES = [(kind, d) for kind, (_, _, table) in HIVE_OBJECTS.items() for d in table]


def golden_of(name: str, api):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MoczarrWarning)
        return api(fixture_path(name))


def run_case(root: Path, api, expect, golden) -> None:
    if isinstance(expect, Raises):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MoczarrWarning)  # only the error is asserted here
            with pytest.raises(expect.error, match=expect.match) as info:
                api(root)
        assert isinstance(info.value, MoczarrError)
        assert str(root) in str(info.value) or "1111" in str(info.value) or root.name in str(info.value)
    elif isinstance(expect, Degrades):
        with pytest.warns(expect.warning):
            result = api(root)
        expect.check(result, golden)
    else:
        assert isinstance(expect, Golden)
        with warnings.catch_warnings():
            warnings.simplefilter("error", MoczarrWarning)
            result = api(root)
        equal_to_golden(result, golden)


@pytest.fixture(scope="module")
def hive_golden(store_layer):
    return golden_of(HIVE, open_hive_loaded)


@pytest.mark.parametrize("kind,dmg", HIVE_CASES, ids=[f"{k}-{d}" for k, d in HIVE_CASES])
def test_hive_store(store, hive_golden, kind, dmg):
    rel, mutate, table = HIVE_OBJECTS[kind]
    root = store(HIVE)
    damage(root / rel, dmg, mutate)
    run_case(root, open_hive_checked if kind in CHECKED_KINDS else open_hive_loaded, table[dmg], hive_golden)


# -- version pointers ---------------------------------------------------------------------------------------
VERSIONED = "zagg/versioned/store"
V_LEAF = "1/1/1/1/1/4/4/1111144.zarr"  # a versioned leaf with one version and no legacy data at its root

POINTER_CASES = {
    "missing": ({"delete": True}, Raises(StampError, "data group")),
    "null": ({"value": None}, Raises(StampError, "data group")),
    "empty": ({"value": ""}, Raises(VersionPointerError)),
    "truncated": ({"value": "ru"}, Raises(VersionPointerError)),
    "wrong_type": ({"value": 7}, Raises(VersionPointerError)),
    "unknown_spec": ({"value": "v1"}, Raises(VersionPointerError)),
    "out_of_range": ({"value": "run-gone-00000000"}, Degrades(DebrisWarning, without_leaf("1111144"))),
}


@pytest.fixture(scope="module")
def versioned_golden(store_layer):
    return golden_of(VERSIONED, open_hive_loaded)


@pytest.mark.parametrize("dmg", list(POINTER_CASES))
def test_version_pointer(store, versioned_golden, dmg):
    kwargs, expect = POINTER_CASES[dmg]
    root = store(VERSIONED)
    set_field(*STAMP, "current", **kwargs)(root / V_LEAF / "zarr.json")
    run_case(root, open_hive_loaded, expect, versioned_golden)


def test_removed_pointer_on_the_schema_leaf_raises_at_open(store):
    root = store(VERSIONED)
    set_field(*STAMP, "current", delete=True)(root / "1/1/1/1/1/1/1/1111111.zarr/zarr.json")
    with pytest.raises(StampError, match="1111111"):
        moczarr.open_hive(root)  # not even a lazy Dataset: the schema's group is gone


# -- the bitmap sidecar --------------------------------------------------------------------------------------
SERC = "serc_hive"
SERC_LEAF = "4/3/3/1/2/4/4/4331244.zarr"


def bitmap(root: Path):
    return moczarr.read_coverage_bitmap(root, SERC_LEAF)


def wrong_size_frame(path: Path):
    path.write_bytes(zstandard.ZstdCompressor().compress(b"\xff" * 7))


BITMAP_CASES = {
    "missing": None,
    "empty": Raises(CoverageError),
    "truncated": Raises(CoverageError),
    "invalid_json": Raises(CoverageError, "zstd"),
    "wrong_type": Raises(CoverageError),
    "out_of_range": Raises(CoverageError, "bytes"),
}


@pytest.mark.parametrize("dmg", list(BITMAP_CASES))
def test_bitmap_sidecar(store, dmg):
    root = store(SERC)
    damage(root / SERC_LEAF / "coverage.moc", dmg, {"out_of_range": wrong_size_frame})
    expect = BITMAP_CASES[dmg]
    if expect is None:
        assert bitmap(root) is None  # no answer: the caller uses the box (documented)
    else:
        run_case(root, bitmap, expect, None)


def test_bitmap_sidecar_golden(store):
    root = store(SERC)
    np.testing.assert_array_equal(bitmap(root), bitmap(fixture_path(SERC)))
    assert bitmap(root).size > 0


# -- overview caches ----------------------------------------------------------------------------------------
OVERVIEW = "overview_hive/atl06"


def pyramid_loaded(root: Path) -> xr.DataTree:
    return moczarr.open_pyramid(root).load()


def overview_path(node: str) -> str:
    # an overview at node d1..dk lives at d1/.../dk/all.zarr
    return "/".join(node) + "/all.zarr"


def source_stands(result: xr.DataTree, golden: xr.DataTree):
    xr.testing.assert_identical(result["o8"].ds, golden["o8"].ds)
    assert "o6" in result.children  # the damaged level keeps its other objects
    assert len(result["o6"].ds.attrs["zagg_objects"]) == len(golden["o6"].ds.attrs["zagg_objects"]) - 1


@pytest.fixture(scope="module")
def overview_golden(store_layer):
    return golden_of(OVERVIEW, pyramid_loaded)


@pytest.fixture(scope="module")
def schema_overview(store_layer, overview_golden):
    return overview_path(overview_golden["o6"].ds.attrs["zagg_objects"][0]["node"])


OVERVIEW_ROOT_CASES = {
    "missing": "absent",
    **{
        d: Degrades(ObjectDroppedWarning, source_stands)
        for d in ("empty", "truncated", "invalid_json", "wrong_type", "unknown_spec")
    },
    "out_of_range": Raises(PyramidError, "cell_order"),
}
OVERVIEW_ARRAY_CASES = {d: Degrades(ObjectDroppedWarning, source_stands) for d in DAMAGES}


@pytest.mark.parametrize("dmg", list(OVERVIEW_ROOT_CASES))
def test_overview_root(store, overview_golden, schema_overview, dmg):
    root = store(OVERVIEW)
    target = root / schema_overview / "zarr.json"
    damage(
        target,
        dmg,
        {
            "unknown_spec": lambda p: edit_json(
                p, lambda d: d["attributes"]["zagg_overview"].update(spec="zagg-overview/9")
            ),
            "out_of_range": lambda p: edit_json(p, lambda d: d["attributes"]["zagg_overview"].update(cell_order=5)),
        },
    )
    expect = OVERVIEW_ROOT_CASES[dmg]
    if expect == "absent":  # a missing cache object is trustworthy absence: the level shrinks, quietly
        with warnings.catch_warnings():
            warnings.simplefilter("error", MoczarrWarning)
            source_stands(pyramid_loaded(root), overview_golden)
    else:
        run_case(root, pyramid_loaded, expect, overview_golden)


@pytest.mark.parametrize("dmg", DAMAGES)
def test_overview_array(store, overview_golden, schema_overview, dmg):
    root = store(OVERVIEW)
    target = root / schema_overview / "6/count/zarr.json"
    damage(
        target,
        dmg,
        {
            "unknown_spec": set_field("zarr_format", value=4),
            "out_of_range": set_field("shape", value=[-1]),
        },
    )
    run_case(root, pyramid_loaded, OVERVIEW_ARRAY_CASES[dmg], overview_golden)


def test_overview_damage_does_not_take_open_store_down(store, schema_overview):
    root = store("overview_hive")
    (root / "atl06" / schema_overview / "zarr.json").write_bytes(b"{not json")
    with pytest.warns(ObjectDroppedWarning, match="all.zarr"):
        tree = moczarr.open_store(root, window="2019")
    assert "atl06" in tree.children and tree["atl06"].children  # the product and its source order stand


# -- moraine pyramids -----------------------------------------------------------------------------------------
PC = "moraine/pc_first_v1"
RAS = "moraine/ras_mean_v1"


def moraine_loaded(root: Path):
    info = moczarr.moraine.read_moraine_info(root)
    tree = moczarr.moraine.open_moraine_pyramid(root).load()
    return info, tree


def info_without_stats(result, golden):
    info, tree = result
    ginfo, gtree = golden
    assert info.channel_stats is None and ginfo.channel_stats is not None
    assert info.shapes == ginfo.shapes and info.stats == ginfo.stats
    xr.testing.assert_identical(tree["l0"].ds, gtree["l0"].ds)


def toml(text: str):
    return lambda p: p.write_text(text)


BOUNDS_CASES = {d: Raises(PyramidError, "bounds") for d in DAMAGES}
BOUNDS_MUTATE = {
    "invalid_json": toml("bounds = [1, 2,"),
    "wrong_type": toml('bounds = "x"'),
    "unknown_spec": toml("bounds = [1.0, 2.0, 3.0]"),
    "out_of_range": toml("bounds = [1001976.3, 5002976.0, 999996.3, 4999996.0]"),
}


@pytest.mark.parametrize("dmg", DAMAGES)
def test_moraine_bounds(store, dmg):
    root = store(PC)
    damage(root / "bounds.toml", dmg, BOUNDS_MUTATE)
    run_case(root, moraine_loaded, BOUNDS_CASES[dmg], None)


@pytest.fixture(scope="module")
def raster_golden(store_layer):
    return golden_of(RAS, moraine_loaded)


STATS_CASES = {
    "missing": "absent",
    **{d: Degrades(ObjectDroppedWarning, info_without_stats) for d in DAMAGES[1:]},
}


@pytest.mark.parametrize("dmg", DAMAGES)
def test_moraine_stats(store, raster_golden, dmg):
    root = store(RAS)
    damage(
        root / "stats.zarr/zarr.json",
        dmg,
        {
            "unknown_spec": set_field("zarr_format", value=9),
            "out_of_range": set_field("shape", value=[3]),
        },
    )
    expect = STATS_CASES[dmg]
    if expect == "absent":
        with warnings.catch_warnings():
            warnings.simplefilter("error", MoczarrWarning)
            info, _ = moraine_loaded(root)
        assert info.channel_stats is None
    else:
        run_case(root, moraine_loaded, expect, raster_golden)


def test_moraine_stats_chunk(store, raster_golden):
    root = store(RAS)
    for chunk in (root / "stats.zarr/c").rglob("*"):
        if chunk.is_file():
            chunk.write_bytes(b"\x00garbage")
    run_case(root, moraine_loaded, Degrades(ObjectDroppedWarning, info_without_stats), raster_golden)


@pytest.mark.parametrize("dmg", DAMAGES)
def test_moraine_level(store, dmg):
    root = store(RAS)
    damage(
        root / "1.zarr/zarr.json",
        dmg,
        {
            "unknown_spec": set_field("zarr_format", value=9),
            "out_of_range": set_field("shape", value=[7, 7]),
        },
    )
    run_case(root, moraine_loaded, Raises(PyramidError, "1.zarr"), None)


@pytest.mark.parametrize("dmg", ["empty", "truncated", "invalid_json"])
def test_moraine_chunk(store, dmg):
    root = store(RAS)
    damage(root / "0.zarr/c/0/0", dmg, {})
    run_case(root, moraine_loaded, Raises(ChunkError, "0.zarr"), None)
