"""The bundled sample store (moczarr.testing.hive): deterministic, readable, and folded correctly.

Expectations come from the writer's ``sample.json`` (computed from the input
points); stored values are read back either through ``moczarr.open_hive`` or
directly with zarr, and overview folds are recomputed here with numpy.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import mortie
import numpy as np
import pytest
import zarr

import moczarr
from moczarr import ids
from moczarr.format.coverage import decode_bitmap, expand_ranges
from moczarr.testing.hive import (
    CELL_ORDER,
    EXPECTATIONS_NAME,
    SHARD_ORDER,
    content_hashes,
    coverage_box,
    write_sample_store,
)
from tests.helpers import REPO, layer_dir

DEPTH = CELL_ORDER - SHARD_ORDER
FIELDS = ("count", "h_min", "h_max", "h_mean")
EXACT = ("count", "h_min", "h_max")


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> tuple[Path, dict]:
    root = write_sample_store(tmp_path_factory.mktemp("sample") / "store")
    return root, json.loads((root / EXPECTATIONS_NAME).read_text())


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _children(word, order) -> np.ndarray:
    return np.asarray(mortie.generate_morton_children(np.uint64(word), order), dtype=np.uint64).ravel()


def _leaf_arrays(leaf: Path) -> dict[str, np.ndarray]:
    group = zarr.open_group(str(leaf / str(CELL_ORDER)), mode="r")
    return {name: group[name][:] for name in ("morton", *FIELDS)}


# -- determinism ----------------------------------------------------------------------------------------
def test_writer_is_deterministic(tmp_path):
    a = _tree(write_sample_store(tmp_path / "a"))
    b = _tree(write_sample_store(tmp_path / "b"))
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    assert len(a) < 500 and sum(map(len, a.values())) < 1_000_000  # small enough to commit


def test_seed_changes_the_points_and_overwrite_is_guarded(tmp_path):
    root = write_sample_store(tmp_path / "s", seed=0)
    with pytest.raises(FileExistsError):
        write_sample_store(root)
    write_sample_store(root, seed=1, overwrite=True)
    assert json.loads((root / EXPECTATIONS_NAME).read_text())["seed"] == 1
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("not a sample store")
    with pytest.raises(FileExistsError):
        write_sample_store(other, overwrite=True)
    assert (other / "keep.txt").exists()


def test_committed_sample_matches_the_writer(tmp_path):
    committed = REPO / "catalogs" / "sample"
    assert (committed / EXPECTATIONS_NAME).exists(), "catalogs/sample not generated (python scripts/make_sample.py)"
    fresh = _tree(write_sample_store(tmp_path / "fresh"))
    stored = _tree(committed)
    assert stored.keys() == fresh.keys(), "catalogs/sample is stale: re-run scripts/make_sample.py"
    assert [k for k in fresh if fresh[k] != stored[k]] == [], "catalogs/sample is stale: re-run scripts/make_sample.py"


# -- roster and source leaves -----------------------------------------------------------------------------
def test_products_and_root_layout(sample):
    root, expect = sample
    assert moczarr.list_products(root) == ["elevation", "elevation_yearly"]
    assert not (root / "morton_hive.json").exists()  # a multi-product root has no manifest
    for name in ("elevation", "elevation_yearly"):
        manifest = json.loads((root / name / "morton_hive.json").read_text())
        assert manifest["spec"] == expect["products"][name]["spec"]
        assert (manifest["cell_order"], manifest["shard_order"]) == (CELL_ORDER, SHARD_ORDER)
        assert len(manifest["semantic_hash"]) == 64
        env = json.loads((root / name / "coverage.moc").read_text())
        shards = ids.to_decimals(expand_ranges(env["ranges"], env["order"], name))
        assert shards == expect["products"][name]["shards"]
        assert all(isinstance(x, str) for pair in env["ranges"] for x in pair)
    yearly = json.loads((root / "elevation_yearly" / "morton_hive.json").read_text())
    assert yearly["temporal"]["schedule"] == "yearly"
    assert yearly["pyramid"] == {"spec": "zagg-pyramid/1", "overview": {"orders": []}}
    env = json.loads((root / "elevation_yearly" / "coverage.moc").read_text())
    assert env["time_range"] == expect["products"]["elevation_yearly"]["time_range"]


def _no_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kwargs)


def _check_open(ds, leaves: dict, totals: dict):
    roster = ds.attrs["morton_hive"]["leaves"]
    expected = sorted((v["shard"] for v in leaves.values()), key=lambda d: int(ids.to_words(d)[0]))
    assert roster == expected
    count = ds["count"].values
    assert int(count.sum()) == totals["count_sum"]
    assert int((count > 0).sum()) == totals["n_occupied_cells"]
    assert float(np.nanmin(ds["h_min"].values)) == totals["h_min_min"]
    assert float(np.nanmax(ds["h_max"].values)) == totals["h_max_max"]
    shard = np.asarray(mortie.clip2order(SHARD_ORDER, ds["morton"].values), dtype=np.uint64)
    per_leaf = {d: int(count[shard == w].sum()) for d, w in zip(expected, ids.to_words(expected), strict=True)}
    assert per_leaf == {v["shard"]: v["count"] for v in leaves.values()}
    assert int(ds.attrs["morton_hive"]["granule_count"]) == sum(v["granule_count"] for v in leaves.values())


def test_open_elevation(sample):
    root, expect = sample
    prod = expect["products"]["elevation"]
    ds = _no_warnings(moczarr.open_hive, root / "elevation")
    assert ds.sizes["cells"] == len(prod["leaves"]) * 4**DEPTH
    assert prod["totals"]["count_sum"] == expect["input"]["n_points"]
    _check_open(ds, prod["leaves"], prod["totals"])


@pytest.mark.parametrize("window", ["2019", "2020"])
def test_open_elevation_yearly(sample, window):
    root, expect = sample
    win = expect["products"]["elevation_yearly"]["windows"][window]
    ds = _no_warnings(moczarr.open_hive, root / "elevation_yearly", window=window)
    _check_open(ds, win["leaves"], win["totals"])
    assert win["totals"]["count_sum"] == expect["input"]["points_per_window"][window]
    assert ds.attrs["morton_hive"]["time_range"] == win["time_range"]


def test_windows_partition_the_points(sample):
    _, expect = sample
    per_window = expect["input"]["points_per_window"]
    assert sum(per_window.values()) == expect["input"]["n_points"]
    with pytest.raises(moczarr.errors.WindowError):
        moczarr.open_hive(Path(sample[0]) / "elevation_yearly")


def _all_leaves(expect):
    yield "elevation", expect["products"]["elevation"]["leaves"]
    for win in expect["products"]["elevation_yearly"]["windows"].values():
        yield "elevation_yearly", win["leaves"]


def test_leaf_stamps_bitmaps_and_hashes(sample):
    root, expect = sample
    for product, leaves in _all_leaves(expect):
        for entry in leaves.values():
            leaf = root / product / entry["path"]
            doc = json.loads((leaf / "zarr.json").read_text())
            assert list(doc["attributes"]) == ["morton_hive_commit"]
            stamp = doc["attributes"]["morton_hive_commit"]
            arrays = _leaf_arrays(leaf)
            assert np.array_equal(arrays["morton"], _children(ids.to_words(entry["shard"])[0], CELL_ORDER))
            occupied = arrays["morton"][arrays["count"] > 0]
            assert stamp["cells_with_data"] == occupied.size == entry["occupied"]
            assert int(arrays["count"].sum()) == entry["count"]
            assert stamp["granule_count"] == entry["granule_count"]
            assert stamp.get("window") == entry["window"]
            assert stamp["spec"] == ("morton-hive/1" if entry["window"] is None else "morton-hive/2")
            cov = stamp["coverage"]
            assert len(cov["box"]) == 4 and cov["box"][0] is not None
            assert cov["box"] == coverage_box(occupied) == entry["box"]
            members = ids.to_words([m for m in cov["box"] if m])
            inside = mortie.moc_intersects(members, occupied, offsets=np.arange(occupied.size + 1))
            assert np.all(inside)  # the box is a superset of the occupancy
            payload = (leaf / "coverage.moc").read_bytes()
            assert cov["encoding"] == "bitmap" and cov["nbytes"] == len(payload) and cov["raw_nbytes"] == 2
            ranks = decode_bitmap(payload, DEPTH, str(leaf))
            assert np.array_equal(arrays["morton"][ranks], occupied)
            assert stamp["content_hashes"] == content_hashes(str(CELL_ORDER), arrays)
            group = json.loads((leaf / str(CELL_ORDER) / "zarr.json").read_text())["attributes"]
            assert group["dggs"]["refinement_level"] == CELL_ORDER
            assert group["zarr_conventions"][1]["uuid"] == "3e22156d-ea9e-4e01-95fe-e3809a4b41e7"
            if entry["window"] is not None:
                assert stamp["time_range"] == entry["time_range"]


# -- overviews ---------------------------------------------------------------------------------------------
def _fold(slab: dict[str, np.ndarray], group: int) -> dict[str, np.ndarray]:
    out = {"count": slab["count"].reshape(-1, group).sum(axis=1)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN groups stay NaN (the fill)
        out["h_min"] = np.nanmin(slab["h_min"].reshape(-1, group), axis=1)
        out["h_max"] = np.nanmax(slab["h_max"].reshape(-1, group), axis=1)
    return out


def test_overviews_fold_the_leaves(sample):
    root, expect = sample
    prod = expect["products"]["elevation"]
    elev = root / "elevation"
    manifest = json.loads((elev / "morton_hive.json").read_text())
    pyramid = manifest["pyramid"]
    assert pyramid["spec"] == "zagg-pyramid/1"
    assert pyramid["overview"]["orders"] == [4, 2] and pyramid["overview"]["spacing"] == 2
    assert pyramid["overview"]["all_time"] is False
    assert pyramid["overview"]["fields"]["h_mean"] == {"class": "none"}
    on_disk = sorted(p.parent.relative_to(elev).as_posix() for p in elev.rglob("all.zarr/zarr.json"))
    declared = sorted(node["path"] for lvl in prod["levels"].values() for node in lvl["nodes"].values())
    assert on_disk == declared

    leaf_words = ids.to_words([v["shard"] for v in prod["leaves"].values()])
    leaf_paths = [elev / v["path"] for v in prod["leaves"].values()]
    for r_str, level in prod["levels"].items():
        r, k = int(r_str), level["node_order"]
        assert r == CELL_ORDER - (SHARD_ORDER - k)
        covered = np.unique(np.asarray(mortie.clip2order(k, leaf_words), dtype=np.uint64))
        assert ids.to_decimals(covered) == list(level["nodes"])  # every covered ancestor, ascending word
        level_count = 0
        level_cells = 0
        for node_dec, node in level["nodes"].items():
            word = ids.to_words(node_dec)[0]
            # the node's subtree at order 8 from the leaves read with zarr, missing leaves at fill
            fine = _children(word, CELL_ORDER)
            slab = {
                "count": np.zeros(fine.size, np.int32),
                "h_min": np.full(fine.size, np.nan, np.float32),
                "h_max": np.full(fine.size, np.nan, np.float32),
            }
            n_leaves = 0
            for lw, lp in zip(leaf_words, leaf_paths, strict=True):
                if int(mortie.clip2order(k, np.asarray([lw], np.uint64))[0]) != int(word):
                    continue
                n_leaves += 1
                arrays = _leaf_arrays(lp)
                at = int(np.searchsorted(fine, arrays["morton"][0]))
                for f in EXACT:
                    slab[f][at : at + arrays["morton"].size] = arrays[f]
            want = _fold(slab, 4 ** (SHARD_ORDER - k))

            obj = elev / node["path"]
            doc = json.loads((obj / "zarr.json").read_text())["attributes"]
            assert list(doc) == ["role", "zagg_overview", "morton_hive_commit"]
            assert doc["role"] == "overview"
            zo = doc["zagg_overview"]
            assert zo["spec"] == "zagg-overview/1" and zo["window"] == "all"
            assert (zo["node"], zo["order"], zo["cell_order"]) == (node_dec, k, r)
            assert (zo["source_shard_order"], zo["source_cell_order"]) == (SHARD_ORDER, CELL_ORDER)
            assert set(zo["fields"]) == set(EXACT)
            assert zo["generation"]["n_leaves"] == n_leaves == node["n_leaves"]
            group = zarr.open_group(str(obj / str(r)), mode="r")
            assert sorted(group.array_keys()) == ["count", "h_max", "h_min", "morton"]
            assert np.array_equal(group["morton"][:], _children(word, r))
            for f in EXACT:
                got = group[f][:]
                assert got.dtype == slab[f].dtype
                np.testing.assert_array_equal(got, want[f].astype(got.dtype), err_msg=f"{node_dec} {f}")
            stamp = doc["morton_hive_commit"]
            assert stamp["cells_with_data"] == int((want["count"] > 0).sum())
            assert int(group["count"][:].sum()) == node["count"]
            level_count += node["count"]
            level_cells += stamp["cells_with_data"]
        assert level_count == level["count_sum"] == expect["input"]["n_points"]
        assert level_cells == level["n_cells_with_data"]


# -- the box rule against writer-produced fixtures ----------------------------------------------------------
@pytest.mark.layers
def test_coverage_box_matches_fixture_stamps():
    root = layer_dir()
    checked = 0
    for name in ("serc_hive", "overview_hive", "zagg/pyramid", "zagg/windowed", "spec/minimal"):
        for stamp_path in sorted((root / name).rglob("*.zarr/zarr.json")):
            stamp = json.loads(stamp_path.read_text()).get("attributes", {}).get("morton_hive_commit")
            cov = (stamp or {}).get("coverage")
            sidecar = stamp_path.parent / "coverage.moc"
            if not isinstance(cov, dict) or cov.get("encoding") != "bitmap" or not sidecar.exists():
                continue
            decimal = stamp_path.parent.name[: -len(".zarr")].split("_")[0]
            order = ids.decimal_order(decimal)
            ranks = decode_bitmap(sidecar.read_bytes(), cov["cell_order"] - order, str(sidecar)).astype(np.uint64)
            if ranks.size == 0:
                continue
            lo, _ = ids.subtree_rank_bounds(ids.to_words(decimal), order, cov["cell_order"])
            occupied = ids.words_from_ranks(lo[0] + ranks, cov["cell_order"])
            assert coverage_box(occupied) == cov["box"], stamp_path
            checked += 1
    assert checked > 20
