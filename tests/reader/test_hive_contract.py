"""Every error and warning of the core reader, provoked on damaged copies of real stores."""

from __future__ import annotations

import json
import shutil
import warnings

import mortie
import numpy as np
import pytest
import xarray as xr
import zarr

import moczarr
from moczarr import ids
from moczarr.storage import count_requests
from tests.helpers import fixture_path, load_json, set_attrs, write_json

VERSIONED_LEAF = "1/1/1/1/1/1/1/1111111.zarr"  # the first leaf: it gives the schema
LAST_VERSIONED_LEAF = "1/1/1/1/1/4/4/1111144.zarr"


def _open_quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.errors.MoczarrWarning)
        return moczarr.open_hive(*args, **kwargs)


# -- manifest ---------------------------------------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize(
    "damage, field",
    [
        (lambda m: m.update(spec="morton-hive/3"), "spec"),
        (lambda m: m.pop("cell_order"), "cell_order"),
        (lambda m: m.update(shard_order="6"), "shard_order"),
        (lambda m: m.update(path_grouping=True), "path_grouping"),
        (lambda m: m.update(cell_order=4), "cell_order 4 is below shard_order"),
        (lambda m: m.update(temporal={"schedule": "yearly"}), "temporal"),
    ],
)
def test_bad_manifest_raises_naming_store_and_field(copy_fixture, damage, field):
    root = copy_fixture("serc_hive")
    manifest = load_json(root / "morton_hive.json")
    damage(manifest)
    write_json(root / "morton_hive.json", manifest)
    with pytest.raises(moczarr.errors.ManifestError, match=field) as info:
        moczarr.open_hive(root)
    assert str(root) in str(info.value)


@pytest.mark.layers
def test_unparsable_manifest_and_missing_manifest(copy_fixture, tmp_path):
    root = copy_fixture("serc_hive")
    (root / "morton_hive.json").write_text("{not json")
    with pytest.raises(moczarr.errors.ManifestError, match=r"morton_hive\.json"):
        moczarr.open_hive(root)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(moczarr.errors.NotAHiveStoreError, match="not a morton-hive store"):
        moczarr.open_hive(empty)
    with pytest.raises(moczarr.errors.NotAHiveStoreError, match="atl06"):
        moczarr.open_hive(fixture_path("multiproduct_hive"))


# -- root MOC tier ------------------------------------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.unlink(),
        lambda p: p.write_text("garbage"),
        lambda p: p.write_text(json.dumps({"spec": "morton-moc/9", "encoding": "ranges", "order": 6, "ranges": []})),
        lambda p: p.write_text(json.dumps({"spec": "morton-moc/1", "encoding": "bitmap", "order": 6})),
        lambda p: p.write_text(json.dumps({"spec": "morton-moc/1", "encoding": "ranges", "order": 5, "ranges": []})),
    ],
)
def test_unusable_root_moc_walks_with_warning_and_same_answer(copy_fixture, damage):
    expected = moczarr.open_hive(fixture_path("serc_hive"))
    root = copy_fixture("serc_hive")
    damage(root / "coverage.moc")
    with pytest.warns(moczarr.errors.CoverageFallbackWarning, match="walk"):
        got = moczarr.open_hive(root)
    assert got.attrs["morton_hive"]["leaves"] == expected.attrs["morton_hive"]["leaves"]
    np.testing.assert_array_equal(got["morton"].values, expected["morton"].values)
    np.testing.assert_array_equal(got["count"].values, expected["count"].values)


@pytest.mark.layers
@pytest.mark.parametrize(
    "ranges",
    [[["4331244"]], [["4331244", "433124"]], [["4331244", "-331244"]], [["4331422", "4331421"]], [["4331244", 5]]],
)
def test_malformed_range_raises(copy_fixture, ranges):
    root = copy_fixture("serc_hive")
    env = load_json(root / "coverage.moc")
    env["ranges"] = [["4331421", "4331422"], *ranges]
    write_json(root / "coverage.moc", env)
    with pytest.raises(moczarr.errors.CoverageError, match=r"coverage\.moc"):
        moczarr.open_hive(root)


@pytest.mark.layers
def test_stale_root_moc_raises_on_unscoped_open(copy_fixture):
    root = copy_fixture("serc_hive")
    env = load_json(root / "coverage.moc")
    env["ranges"] = [["4111111", "4111111"]]  # names a shard with no leaf
    write_json(root / "coverage.moc", env)
    with pytest.raises(moczarr.errors.StaleCoverageError, match="stale"):
        moczarr.open_hive(root)


@pytest.mark.layers
def test_no_stamped_leaf_raises_no_coverage(copy_fixture):
    root = copy_fixture("serc_hive")
    for stamp in root.rglob("*.zarr/zarr.json"):
        set_attrs(stamp, lambda a: a.pop("morton_hive_commit", None))
    with pytest.raises(moczarr.errors.NoCoverageError, match="no committed"):
        moczarr.open_hive(root)


# -- AOI ------------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_aoi_spellings_agree_and_cut_rows_exactly():
    root = fixture_path("serc_hive")
    whole = moczarr.open_hive(root)
    words = ids.to_words(["4331421", "433142224"])  # a shard and one cell of another (mixed orders)
    results = [
        moczarr.open_hive(root, aoi=words),
        moczarr.open_hive(root, aoi=["4331421", "433142224"]),
        moczarr.open_hive(root, aoi=[words[0], "433142224"]),
        moczarr.open_hive(root, aoi=mortie.Moc(words)),
    ]
    for ds in results:
        assert ds.sizes["cells"] == 17
        assert ds.attrs["morton_hive"]["leaves"] == ["4331421", "4331422"]
        xr.testing.assert_identical(ds.drop_attrs(), results[0].drop_attrs())
    expect = whole.sel(cells=np.isin(whole["morton"].values, results[0]["morton"].values))
    np.testing.assert_array_equal(results[0]["count"].values, expect["count"].values)
    # a cell finer than the store's cells selects the cell containing it
    fine = moczarr.open_hive(root, aoi=["4331422241"])
    assert ids.to_decimals(fine["morton"].values) == ["433142224"]


@pytest.mark.layers
def test_aoi_over_no_coverage_returns_schema_correct_empty(copy_fixture):
    root = fixture_path("serc_hive")
    whole = moczarr.open_hive(root)
    with pytest.warns(moczarr.errors.EmptySelectionWarning, match="serc_hive"):
        empty = moczarr.open_hive(root, aoi=["1111"])
    assert empty.sizes["cells"] == 0
    assert set(empty.data_vars) == set(whole.data_vars)
    for name, var in whole.data_vars.items():
        assert empty[name].dtype == var.dtype
        assert empty[name].attrs == var.attrs
    assert empty["morton"].dtype == np.uint64 and empty["cell_ids"].dtype == np.uint64


@pytest.mark.layers
def test_bad_aoi_raises():
    with pytest.raises(moczarr.errors.AOIError):
        moczarr.open_hive(fixture_path("serc_hive"), aoi=["4331425"])
    with pytest.raises(moczarr.errors.AOIError):
        moczarr.open_hive(fixture_path("serc_hive"), aoi=[-3])


@pytest.mark.layers
def test_box_rejects_leaf_whose_box_misses_the_aoi():
    root = fixture_path("serc_hive")
    # 4331421's box is {43314212, 43314214}: an AOI inside the shard but outside the box rejects the leaf
    with count_requests() as counter, pytest.warns(moczarr.errors.EmptySelectionWarning):
        ds = moczarr.open_hive(root, aoi=["43314211"])
    assert ds.sizes["cells"] == 0
    assert counter.kind("stamp") >= 1


@pytest.mark.layers
@pytest.mark.parametrize("member", ["4331421" + "1" * 24, "43314212\n"], ids=["order-30", "line-break"])
def test_a_malformed_box_among_good_ones_is_no_box_test(copy_fixture, member):
    """FORMAT.md §6: an unusable box gives no answer, so its leaf is kept; the good boxes still reject."""
    root = copy_fixture("serc_hive")
    aoi = ["43314211", "43314221"]  # inside shards 4331421 and 4331422, outside both their boxes
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        assert moczarr.open_hive(root, aoi=aoi).sizes["cells"] == 0
    leaf = root / "4/3/3/1/4/2/1/4331421.zarr/zarr.json"
    set_attrs(leaf, lambda a: a["morton_hive_commit"]["coverage"].update(box=["43314212", member, None, None]))
    ds = _open_quiet(root, aoi=aoi)
    assert ds.attrs["morton_hive"]["leaves"] == ["4331421"]
    cells = ids.to_decimals(ds["morton"].values)
    assert len(cells) == 4 and all(c.startswith("43314211") for c in cells)  # the AOI cell's four at cell_order 8


@pytest.mark.layers
def test_a_bad_stamp_raises_only_when_its_box_is_kept(copy_fixture):
    root = copy_fixture("serc_hive")
    leaf = root / "4/3/3/1/4/2/2/4331422.zarr/zarr.json"  # box ['433142224']
    set_attrs(leaf, lambda a: a["morton_hive_commit"].update(cells_with_data=-3))
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        assert moczarr.open_hive(root, aoi=["43314221"]).sizes["cells"] == 0  # in the shard, outside the box
    with pytest.raises(moczarr.errors.StampError, match=r"4331422\.zarr.*cells_with_data"):
        moczarr.open_hive(root, aoi=["433142224"])


# -- windows ----------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_window_rules():
    windowed = fixture_path("zagg/windowed/store")
    with pytest.raises(moczarr.errors.WindowError, match="2019, 2020, 2021"):
        moczarr.open_hive(windowed)
    with pytest.raises(moczarr.errors.WindowError, match="all"):
        moczarr.open_hive(windowed, window="all")
    with pytest.raises(moczarr.errors.WindowError, match="2019, 2020, 2021"):
        moczarr.open_hive(windowed, window="19")
    with pytest.raises(moczarr.errors.WindowError, match="unwindowed"):
        moczarr.open_hive(fixture_path("serc_hive"), window="2019")
    with pytest.raises(moczarr.errors.WindowError, match="windows present: 2019, 2020, 2021"):
        moczarr.open_hive(windowed, window="2030")  # a label with no leaf anywhere names the ones present
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        empty = moczarr.open_hive(windowed, window="2019", aoi=["-61111"])  # an AOI that misses stays empty
    assert empty.sizes["cells"] == 0 and "count" in empty
    assert moczarr.list_windows(windowed) == ["2019", "2020", "2021"]
    assert moczarr.list_windows(fixture_path("serc_hive")) == []


# -- versioned leaves ---------------------------------------------------------------------------------------
@pytest.mark.layers
def test_versioned_store_follows_pointers_without_extra_stamp_reads():
    root = fixture_path("zagg/versioned/store")
    with count_requests() as counter:
        ds = _open_quiet(root)
    n = ds.attrs["morton_hive"]["n_leaves"]
    assert counter.kind("stamp") == n  # one root stamp per leaf, the versions' own stamps never read
    assert ds.attrs["morton_hive"]["n_versioned"] == n


def _stamp_of(root, leaf):
    return load_json(root / leaf / "zarr.json")["attributes"]["morton_hive_commit"]


@pytest.mark.layers
@pytest.mark.parametrize("bad", ["v1", "8", "run-a/8", "../run-a", 7])
def test_bad_current_raises(copy_fixture, bad):
    root = copy_fixture("zagg/versioned/store")
    set_attrs(root / VERSIONED_LEAF / "zarr.json", lambda a: a["morton_hive_commit"].update(current=bad))
    with pytest.raises(moczarr.errors.VersionPointerError, match="run-"):
        moczarr.open_hive(root)
    with pytest.raises(moczarr.errors.VersionPointerError):
        moczarr.open_leaf(root, "1111111")
    with pytest.raises(moczarr.errors.VersionPointerError):
        moczarr.read_coverage_bitmap(root, "1111111")


@pytest.mark.layers
def test_a_sidecar_naming_a_folder_reads_as_no_sidecar(copy_fixture):
    """A folder is no object (as in S3): a stamp whose sidecar names one of the version's array groups has no
    bitmap to give, so the answer is None (use the box), never an OS error."""
    root = copy_fixture("zagg/versioned/store")
    stamp = _stamp_of(root, LAST_VERSIONED_LEAF)
    group = next(p.name for p in (root / LAST_VERSIONED_LEAF / stamp["current"]).iterdir() if p.is_dir())
    set_attrs(
        root / LAST_VERSIONED_LEAF / "zarr.json",
        lambda a: a["morton_hive_commit"]["coverage"].update(sidecar=group, encoding="bitmap"),
    )
    assert (root / LAST_VERSIONED_LEAF / stamp["current"] / group).is_dir()
    assert moczarr.read_coverage_bitmap(root, LAST_VERSIONED_LEAF) is None


@pytest.mark.layers
def test_pointer_to_missing_version_on_the_schema_leaf_is_skipped_at_open(copy_fixture):
    """The schema leaf is the one leaf an open reads inside: a version gone there is seen and skipped at once."""
    root = copy_fixture("zagg/versioned/store")
    expected = moczarr.open_hive(fixture_path("zagg/versioned/store"))
    current = _stamp_of(root, VERSIONED_LEAF)["current"]
    shutil.rmtree(root / VERSIONED_LEAF / current)
    with pytest.warns(moczarr.errors.DebrisWarning, match="1111111"):
        ds = moczarr.open_hive(root)
    assert ds.attrs["morton_hive"]["leaves"] == [d for d in expected.attrs["morton_hive"]["leaves"] if d != "1111111"]
    assert ds.sizes["cells"] == expected.sizes["cells"] - 16
    assert moczarr.read_coverage_bitmap(root, "1111111") is None


@pytest.mark.layers
def test_pointer_to_missing_version_elsewhere_is_skipped_at_open(copy_fixture):
    """Seed: "a pointer naming a version that is missing or unstamped ... is read as debris: open_hive skips a
    missing version with a warning". Any leaf, not only the schema leaf: its rows are gone, every other row is
    as before, and the open reads no version's own stamp (one data-group read per versioned leaf instead)."""
    healthy = fixture_path("zagg/versioned/store")
    root = copy_fixture("zagg/versioned/store")
    current = _stamp_of(root, LAST_VERSIONED_LEAF)["current"]
    shutil.rmtree(root / LAST_VERSIONED_LEAF / current)
    expected = _open_quiet(healthy)
    with (
        pytest.warns(moczarr.errors.DebrisWarning, match="1111144.*missing or unstamped.*skipped"),
        count_requests() as c,
    ):
        ds = moczarr.open_hive(root)
    assert ds.attrs["morton_hive"]["leaves"] == [d for d in expected.attrs["morton_hive"]["leaves"] if d != "1111144"]
    assert c.kind("stamp") == expected.attrs["morton_hive"]["n_leaves"]  # the root stamps, one each
    words = set(ids.to_decimals(ds["morton"].values))
    assert not any(w.startswith("1111144") for w in words)
    kept = expected.sel(morton=ds["morton"].values)
    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.errors.MoczarrWarning)
        xr.testing.assert_equal(ds.load().drop_indexes("morton"), kept.load().drop_indexes("morton"))


@pytest.mark.layers
def test_unstamped_version_with_arrays_is_served(copy_fixture):
    root = copy_fixture("zagg/versioned/store")
    current = _stamp_of(root, VERSIONED_LEAF)["current"]
    set_attrs(root / VERSIONED_LEAF / current / "zarr.json", lambda a: a.pop("morton_hive_commit"))
    ds = _open_quiet(root)
    assert "1111111" in ds.attrs["morton_hive"]["leaves"]


@pytest.mark.layers
@pytest.mark.parametrize("leaf", [VERSIONED_LEAF, LAST_VERSIONED_LEAF], ids=["schema-leaf", "other-leaf"])
def test_stamped_version_without_data_group_raises(copy_fixture, leaf):
    """A malformed leaf raises where it is read: at open for the schema leaf, at compute for any other."""
    root = copy_fixture("zagg/versioned/store")
    current = _stamp_of(root, leaf)["current"]
    shutil.rmtree(root / leaf / current / "8")
    with pytest.raises(moczarr.errors.StampError, match="malformed"):
        moczarr.open_hive(root).load()


@pytest.mark.layers
def test_legacy_and_versioned_leaves_mix(copy_fixture):
    """Rewrite one serc leaf into a versioned shape; the store reads the same values."""
    expected = moczarr.open_hive(fixture_path("serc_hive"))
    root = copy_fixture("serc_hive")
    leaf = root / "4/3/3/1/4/2/1/4331421.zarr"
    version = leaf / "run-rewrite-0000abcd"
    version.mkdir()
    shutil.move(str(leaf / "8"), version / "8")
    shutil.move(str(leaf / "coverage.moc"), version / "coverage.moc")
    shutil.copy(leaf / "zarr.json", version / "zarr.json")
    set_attrs(leaf / "zarr.json", lambda a: a["morton_hive_commit"].update(current="run-rewrite-0000abcd"))
    ds = _open_quiet(root)
    assert ds.attrs["morton_hive"]["n_versioned"] == 1
    np.testing.assert_array_equal(ds["count"].values, expected["count"].values)
    assert ids.to_decimals(moczarr.read_coverage_bitmap(root, "4331421")) == ids.to_decimals(
        moczarr.read_coverage_bitmap(fixture_path("serc_hive"), "4331421")
    )


# -- bitmap tier -------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_corrupt_bitmap_raises_and_missing_bitmap_is_no_answer(copy_fixture):
    root = copy_fixture("serc_hive")
    sidecar = root / "4/3/3/1/4/2/2/4331422.zarr/coverage.moc"
    import zstandard

    sidecar.write_bytes(zstandard.ZstdCompressor().compress(b"\x01"))  # one byte, depth 2 needs two
    with pytest.raises(moczarr.errors.CoverageError, match="expected 2"):
        moczarr.read_coverage_bitmap(root, "4331422")
    sidecar.write_bytes(b"not zstd")
    with pytest.raises(moczarr.errors.CoverageError, match="zstd"):
        moczarr.read_coverage_bitmap(root, "4331422")
    sidecar.unlink()
    assert moczarr.read_coverage_bitmap(root, "4331422") is None


@pytest.mark.layers
def test_full_encoding_means_whole_subtree():
    root = fixture_path("serc_hive_pg3")
    ds = moczarr.open_hive(root)
    leaf = ds.attrs["morton_hive"]["leaves"][0]
    words = moczarr.read_coverage_bitmap(root, leaf)
    assert words.size == 4 ** (ds.attrs["morton_hive"]["cell_order"] - ds.attrs["morton_hive"]["shard_order"])
    assert all(d.startswith(leaf) for d in ids.to_decimals(words))


@pytest.mark.conformance(
    "serc_hive's stamps list no content_hashes, so an array added to a leaf is part of it; zagg 0.61 stamps list theirs"
)
# -- NESTED ids, occupancy ------------------------------------------------------------------------------------
def test_stored_cell_ids_are_kept_and_fabrication_is_exact(copy_fixture):
    root = copy_fixture("serc_hive")
    fabricated = moczarr.open_hive(root)["cell_ids"].values
    for group in root.rglob("*.zarr/8"):
        words = zarr.open_array(group / "morton", mode="r")[:]
        leaf = group.parent.name[:-5]
        words = np.asarray(mortie.generate_morton_children(ids.to_words(leaf)[0], 8), dtype=np.uint64)
        arr = zarr.create_array(
            group / "cell_ids", shape=(16,), dtype="uint64", fill_value=0, dimension_names=["cells"]
        )
        arr[:] = mortie.mort2healpix(words)[0]
    with count_requests() as counter:
        ds = moczarr.open_hive(root)
        stored = ds["cell_ids"].values
    assert counter.kind("chunk:cell_ids") > 0, "auto keeps the stored array"
    np.testing.assert_array_equal(stored, fabricated)
    with count_requests() as counter:
        forced = moczarr.open_hive(root, fabricate_cell_ids=True)["cell_ids"].values
    assert counter.kind("chunk:cell_ids") == 0
    np.testing.assert_array_equal(forced, fabricated)
    assert "cell_ids" not in moczarr.open_hive(fixture_path("serc_hive"), fabricate_cell_ids=False).coords


def test_nested_above_order_24_warns():
    from moczarr.dataplane.assemble import fabricated_cell_ids
    from moczarr.indexes.ranges import MortonRanges

    domain = MortonRanges.from_subtrees(ids.to_words(["4331421"]), 25)
    with pytest.warns(moczarr.errors.PrecisionWarning, match="2\\*\\*53"):
        fabricated_cell_ids(domain, (len(domain),), "test")


@pytest.mark.layers
def test_occupancy_is_a_data_plane_filter():
    ds = moczarr.open_hive(fixture_path("serc_hive"))
    # the condition is a lazy dask array: compute it (it is small) before a drop=True selection
    occupied = ds.where((ds["count"] > 0).compute(), drop=True)
    assert occupied.sizes["cells"] == ds.attrs["morton_hive"]["cells_with_data"]
    assert (occupied["count"].values > 0).all()


@pytest.mark.layers
def test_nothing_is_written_to_the_store(copy_fixture):
    root = copy_fixture("zagg/versioned/store")
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    ds = moczarr.open_hive(root)
    ds.load()
    moczarr.open_leaf(root, "1111111").load()
    after = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    assert before == after


@pytest.mark.layers
def test_composition_with_nonzero_fill_raises(copy_fixture):
    root = copy_fixture("spec/kitchen_sink")
    meta = root / "1/1/2/1/3/11213.zarr/6/composition/zarr.json"
    doc = load_json(meta)
    doc["fill_value"] = 1
    write_json(meta, doc)
    with pytest.raises(moczarr.errors.ArrayContractError, match="fill 0"):
        moczarr.open_hive(root)


@pytest.mark.layers
def test_unknown_ragged_spec_raises(copy_fixture):
    root = copy_fixture("spec/minimal")
    set_attrs(root / "1/1/2/1/3/11213.zarr/6/h_tdigest/zarr.json", lambda a: a["ragged"].update(spec="zagg-ragged/9"))
    with pytest.raises(moczarr.errors.ArrayContractError, match="ragged"):
        moczarr.open_hive(root)


@pytest.mark.layers
def test_read_manifest_takes_a_path():
    manifest = moczarr.read_manifest(fixture_path("serc_hive"))
    assert (manifest.cell_order, manifest.shard_order) == (8, 6)
