"""Hostile names: no key taken from store content or arguments leads a read outside the store root.

Every test plants a hostile name in a copy of a real store, plus a canary
file exactly where the composed key would land outside the copy. An audit
hook (``sys.addaudithook``, installed once for the process) records every
path opened or listed while a test's :func:`watch` block is active; the
test then asserts that none of them lies under the test's temporary folder
but outside the store copy, and that the canary was never opened. The hostile
name must meet a typed error (:class:`~moczarr.errors.KeyContainmentError`,
its :class:`~moczarr.errors.VersionPointerError` subclass, a
:class:`~moczarr.errors.WindowError` / ``ArgumentError`` for arguments) or,
on a derived cache object, be dropped with an ``ObjectDroppedWarning`` while
the source data stands.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

import moczarr
from moczarr import ids
from moczarr.errors import (
    ArgumentError,
    KeyContainmentError,
    ObjectDroppedWarning,
    VersionPointerError,
    WindowError,
)
from moczarr.storage import Storage, keys
from tests.helpers import load_json, set_attrs, write_json

_ACTIVE: list[list[str]] = []
_GUARD = threading.Lock()
_EVENTS = {"open", "os.listdir", "os.scandir", "os.stat", "os.lstat"}


def _audit(event: str, args) -> None:
    if _ACTIVE and event in _EVENTS and args:
        path = args[0]
        if isinstance(path, (str, bytes, os.PathLike)):
            try:
                text = os.fsdecode(path)
            except (TypeError, ValueError):
                return
            with _GUARD:
                for log in _ACTIVE:
                    log.append(text)


sys.addaudithook(_audit)  # process-wide and permanent: it only records while a watch() block is open


@contextmanager
def watch():
    log: list[str] = []
    with _GUARD:
        _ACTIVE.append(log)
    try:
        yield log
    finally:
        with _GUARD:
            _ACTIVE.remove(log)


def assert_contained(log: list[str], root: Path, sandbox: Path) -> None:
    """No path in ``log`` under ``sandbox`` (the test's tmp folder) lies outside ``root``."""
    root_s, sandbox_s = os.path.realpath(root), os.path.realpath(sandbox)
    escaped = []
    for path in log:
        real = os.path.realpath(os.path.abspath(path)) if "\x00" not in path else path
        if real.startswith(sandbox_s + os.sep) and not (real == root_s or real.startswith(root_s + os.sep)):
            escaped.append(path)
    assert not escaped, f"reads outside the store: {escaped[:5]}"


def canary(root: Path, composed_rel: str) -> Path:
    """Plant a canary where ``root/composed_rel`` resolves, which must be outside ``root``."""
    target = Path(os.path.normpath(root / composed_rel))
    assert not str(target).startswith(str(root) + os.sep), target
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b'{"zarr_format": 3, "node_type": "array", "shape": [1]}')
    return target


@pytest.fixture
def store(copy_fixture):
    """The one place this file finds its stores (the lead may switch it to generated stores)."""
    return copy_fixture


def escape(depth: int, tail: str) -> str:
    return "../" * depth + tail


def first_stamp(root: Path, pattern: str = "*.zarr") -> Path:
    return sorted(
        p
        for p in root.rglob(pattern)
        if (p / "zarr.json").exists() and "morton_hive_commit" in load_json(p / "zarr.json").get("attributes", {})
    )[0]


# -- the grammars themselves ---------------------------------------------------------------------------
HOSTILE = ["", ".", "..", "../x", "a/b", "a\\b", "a\x00b", "x" * 300, "/abs", "\n", 7, None, ["a"]]


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
@pytest.mark.parametrize("validator", [keys.array_name, keys.sidecar_name, keys.product_name])
def test_every_grammar_refuses_hostile_components(validator, value):
    with pytest.raises(KeyContainmentError, match="obj"):
        validator(value, "obj")


@pytest.mark.parametrize(
    "value", [v for v in HOSTILE if isinstance(v, str)] + ["4331421_../x", "4331421_a/b", "9111"], ids=repr
)
def test_listed_names_that_are_not_leaf_names_are_no_leaves(value):
    assert ids.parse_leaf_name(f"{value}.zarr") is None


@pytest.mark.parametrize("value", [*HOSTILE, "run-", "run-a/b", "run-..x/..", "v1", "8"], ids=repr)
def test_version_names_refuse_hostile_pointers(value):
    with pytest.raises(VersionPointerError, match="leaf"):
        keys.version_name(value, "leaf")


@pytest.mark.parametrize(
    "good,validator",
    [
        ("h_tdigest_locations", keys.array_name),
        ("coverage.moc", keys.sidecar_name),
        ("atl06_pg3", keys.product_name),
        ("run-specfixture-153bc66a", keys.version_name),
    ],
)
def test_grammars_accept_real_names(good, validator):
    assert validator(good, "obj") == good


@pytest.mark.parametrize("rel", ["../outside", "a/../../b", "a//b", "a/./b", "a\x00", "a\\..\\b"])
def test_the_storage_layer_refuses_keys_leaving_the_root(tmp_path, rel):
    storage = Storage.open(tmp_path)
    with watch() as log, pytest.raises(KeyContainmentError, match=str(tmp_path)):
        storage.get_bytes(rel)
    assert not log


# -- hostile stores ---------------------------------------------------------------------------------------
@pytest.mark.layers
def test_bitmap_sidecar_outside_the_leaf(store, tmp_path):
    root = store("serc_hive")
    leaf = first_stamp(root)
    rel_leaf = leaf.relative_to(root).as_posix()
    depth = rel_leaf.count("/") + 2
    hostile = escape(depth, "outside/coverage.moc")
    bird = canary(root, f"{rel_leaf}/{hostile}")
    set_attrs(
        leaf / "zarr.json", lambda a: a["morton_hive_commit"]["coverage"].update(sidecar=hostile, encoding="bitmap")
    )
    with watch() as log, pytest.raises(KeyContainmentError, match="sidecar name"):
        moczarr.read_coverage_bitmap(root, rel_leaf)
    assert_contained(log, root, tmp_path)
    assert str(bird) not in log


@pytest.mark.layers
@pytest.mark.parametrize(
    "current",
    [
        "../../../../outside",
        "run-a/../../../../outside",
        "run-\x00x",
        "run-" + "a" * 300,
        "run-a\\..\\..",
    ],
)
def test_version_pointer_outside_the_leaf(store, tmp_path, current):
    root = store("zagg/versioned/store")
    leaf = first_stamp(root)
    set_attrs(leaf / "zarr.json", lambda a: a["morton_hive_commit"].update(current=current))
    with watch() as log, pytest.raises(VersionPointerError):
        moczarr.open_hive(root)
    assert_contained(log, root, tmp_path)


@pytest.mark.layers
@pytest.mark.parametrize("opener", ["open_level", "open_pyramid", "open_store"])
def test_overview_field_outside_the_object(store, tmp_path, opener):
    root = store("overview_hive") / "atl06"
    obj = root / "4/3/3/2/3/all.zarr"
    group_rel = obj.relative_to(root).as_posix() + "/6"
    hostile = escape(group_rel.count("/") + 2, "outside/arr")
    bird = canary(root, f"{group_rel}/{hostile}/zarr.json")
    set_attrs(obj / "zarr.json", lambda a: a["zagg_overview"]["fields"].update({hostile: {"class": "exact"}}))
    args = (root, 6) if opener == "open_level" else (root,)
    with watch() as log, pytest.warns(ObjectDroppedWarning, match="outside"):
        opened = getattr(moczarr, opener)(*args)
    if opener == "open_level":
        assert opened is not None and "43323" not in [o["node"] for o in opened.attrs["zagg_objects"]]
    elif opener == "open_pyramid":
        assert "o8" in opened.children and opened["o8"].ds.sizes["cells"] > 0  # the source stands
    else:
        assert opened.children  # the product (and its source order) stands
    assert_contained(log, root, tmp_path)
    assert str(bird) not in log
    assert not any("outside" in p and "/../" in p for p in log)


@pytest.mark.layers
def test_column_field_outside_the_object(store, tmp_path):
    root = store("zagg/column/store")
    obj = root / "1/1/1/1/1/2/2/all.pyramid.zarr"
    group_rel = obj.relative_to(root).as_posix() + "/7"
    hostile = escape(group_rel.count("/") + 2, "outside/arr")
    bird = canary(root, f"{group_rel}/{hostile}/zarr.json")
    set_attrs(obj / "zarr.json", lambda a: a["zagg_column"]["fields"].update({hostile: {"class": "exact"}}))
    with watch() as log, pytest.warns(ObjectDroppedWarning, match="zagg_column"):
        ds = moczarr.open_level(root, 7)
    assert "1111122" not in [o["node"] for o in ds.attrs["zagg_objects"]]
    assert_contained(log, root, tmp_path)
    assert str(bird) not in log


@pytest.mark.layers
def test_ragged_locations_outside_the_object(store, tmp_path):
    root = store("zagg/pyramid_temporal/store")
    obj = root / "1/1/1/2019.zarr"
    group_rel = obj.relative_to(root).as_posix() + "/4"
    hostile = escape(group_rel.count("/") + 2, "outside/arr")
    bird = canary(root, f"{group_rel}/{hostile}/zarr.json")
    meta = obj / "4/h_tdigest/zarr.json"
    set_attrs(meta, lambda a: a["ragged"].update(locations=hostile))
    # its only object is dropped, so the level has nothing left to open
    with (
        watch() as log,
        pytest.warns(ObjectDroppedWarning, match="array name"),
        pytest.raises(moczarr.errors.LevelOmittedError, match="overview object at cell order 4 is readable"),
    ):
        moczarr.open_level(root, 4, window="2019")
    assert_contained(log, root, tmp_path)
    assert str(bird) not in log


@pytest.mark.layers
def test_content_hashes_name_outside_the_group(store, tmp_path):
    root = store("zagg/single_8/store")
    leaf = first_stamp(root)
    set_attrs(
        leaf / "zarr.json", lambda a: a["morton_hive_commit"]["content_hashes"]["arrays"].update({"8/..": "0" * 64})
    )
    with watch() as log, pytest.raises(KeyContainmentError, match=r"'\.\.'"):
        moczarr.open_hive(root)
    assert_contained(log, root, tmp_path)


# -- hostile arguments ---------------------------------------------------------------------------------
@pytest.mark.layers
def test_hostile_product_names_are_not_opened(store, tmp_path):
    root = store("multiproduct_hive")
    (tmp_path / "outside").mkdir()
    write_json(tmp_path / "outside" / "morton_hive.json", load_json(root / "atl06" / "morton_hive.json"))
    with watch() as log, pytest.raises(ArgumentError, match="no product"):
        moczarr.open_store(root, products=["../outside"])
    assert_contained(log, root, tmp_path)


@pytest.mark.layers
@pytest.mark.parametrize("window", ["../../outside", "2019/../../x", "a\x00", "x" * 40])
def test_hostile_windows_are_refused(store, tmp_path, window):
    root = store("zagg/windowed/store")
    with watch() as log:
        with pytest.raises(WindowError):
            moczarr.open_hive(root, window=window)
        with pytest.raises(WindowError):
            moczarr.open_level(root, 8, window=window)
    assert_contained(log, root, tmp_path)


@pytest.mark.layers
@pytest.mark.parametrize("leaf", ["../../outside/1111111.zarr", "1111111.zarr/../../x", "..", "1111111\x00"])
def test_hostile_leaf_arguments_stay_inside(store, tmp_path, leaf):
    root = store("zagg/single_8/store")
    # refused, or opened the leaf the id names inside the store: both are fine
    with watch() as log, contextlib.suppress(moczarr.errors.MoczarrError):
        moczarr.open_leaf(root, leaf)
    assert_contained(log, root, tmp_path)


def test_the_audit_hook_sees_an_escape(tmp_path):
    """The harness can fail: a raw zarr store composing ``../`` does read outside, and the hook sees it."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync
    from zarr.storage import LocalStore

    root = tmp_path / "store"
    root.mkdir()
    bird = canary(root, "../outside/x")
    with watch() as log:
        assert sync(LocalStore(root, read_only=True).get("../outside/x", default_buffer_prototype())) is not None
    assert any(os.path.realpath(p) == str(bird) for p in log)
    with pytest.raises(AssertionError, match="reads outside the store"):
        assert_contained(log, root, tmp_path)
