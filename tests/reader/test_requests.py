"""The request-count contract of an open (FORMAT.md §5.3, §11, §12), on local fixture stores.

With a usable root MOC and stamps that carry ``content_hashes`` (the zagg
stores), ``open_hive`` must:

- make no LIST at all (the MOC names the candidates, the stamp names the arrays);
- GET exactly one stamp per candidate leaf (every shard the root MOC names);
- GET no ``morton``, ``cell_ids`` or data chunk;
- GET at most ``candidates + C`` objects in total, where the constant is
  ``C = 3 + A``: the manifest, the root MOC, the schema leaf's data group
  ``zarr.json``, and one ``zarr.json`` per array of that group (``A``, the
  arrays the stamp's ``content_hashes`` lists; 10 for ``zagg/single_8``).

Computing the data afterwards GETs every data chunk of the admitted leaves
exactly once and still no ``morton`` chunk (the coordinate is arithmetic) and
no ``cell_ids`` chunk (zagg leaves store none: the ids are fabricated).

The counter sits on the zarr store, so it counts the same way for a local
path and for ``s3://``; ``test_s3.py`` checks the S3 figures equal these and
that each counted GET is exactly one HTTP request.
"""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path

import pytest
import xarray as xr

import moczarr
from moczarr.storage import count_requests
from tests.helpers import fixture_path, load_json

pytestmark = pytest.mark.layers

INDEX_KINDS = ["pandas", "moc"]

#: (store, open kwargs): zagg stores with a root MOC and stamps carrying content_hashes
ZAGG_OPENS = [
    ("zagg/single_8/store", {}),
    ("zagg/single_ragged/store", {}),
    ("zagg/windowed/store", {"window": "2019"}),
    ("zagg/windowed/store", {"window": "2021"}),  # a window some MOC shards lack: clean stamp misses
]


def _rank(decimal: str) -> tuple[str, int]:
    """(sign+base, position among same-order siblings): digits 1-4 read as base-4 digits 0-3."""
    head = decimal[:2] if decimal.startswith("-") else decimal[:1]
    pos = 0
    for d in decimal[len(head) :]:
        pos = pos * 4 + int(d) - 1
    return head, pos


def moc_candidates(store: Path) -> int:
    """Shards the root ``coverage.moc`` names, counted from the file (independently of the reader)."""
    env = json.loads((store / "coverage.moc").read_text())
    assert env["spec"] == "morton-moc/1" and env["encoding"] == "ranges"
    total = 0
    for first, last in env["ranges"]:
        (h1, r1), (h2, r2) = _rank(first), _rank(last)
        assert h1 == h2 and not h1.startswith("-"), "ranges counted here stay inside one positive base cell"
        total += r2 - r1 + 1
    return total


def schema_arrays(store: Path, leaf_decimal: str) -> int:
    """Arrays of the first admitted leaf's data group, as its stamp's content_hashes lists them."""
    manifest = load_json(store / "morton_hive.json")
    group = str(manifest["cell_order"])
    stamp_doc = next(store.rglob(f"{leaf_decimal}*.zarr/zarr.json"))
    hashes = load_json(stamp_doc)["attributes"]["morton_hive_commit"]["content_hashes"]["arrays"]
    return sum(1 for k in hashes if k.startswith(f"{group}/") and k.count("/") == 1)


def data_chunk_count(store: Path, ds) -> int:
    """Chunks of every data variable over the admitted leaves, from the arrays' own zarr.json files."""
    manifest = load_json(store / "morton_hive.json")
    group = str(manifest["cell_order"])
    total = 0
    for decimal in ds.attrs["morton_hive"]["leaves"]:
        window = ds.attrs["morton_hive"]["window"]
        name = f"{decimal}_{window}.zarr" if window else f"{decimal}.zarr"
        leaf = next(store.rglob(name))
        stamp = load_json(leaf / "zarr.json")["attributes"]["morton_hive_commit"]
        data = leaf / stamp["current"] if stamp.get("current") else leaf
        for var in ds.data_vars:
            meta = load_json(data / group / var / "zarr.json")
            assert not any(c["name"] == "sharding_indexed" for c in meta["codecs"]), "count assumes unsharded arrays"
            chunk = meta["chunk_grid"]["configuration"]["chunk_shape"]
            total += math.prod(math.ceil(s / c) for s, c in zip(meta["shape"], chunk, strict=True))
    return total


def open_counted(root: Path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.errors.MoczarrWarning)  # a usable MOC: no fallback walk
        with count_requests() as counter:
            ds = moczarr.open_hive(root, **kwargs)
    return ds, counter


@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize(
    "name,kwargs", ZAGG_OPENS, ids=[f"{n.split('/')[1]}{'-' + k['window'] if k else ''}" for n, k in ZAGG_OPENS]
)
def test_open_with_root_moc_reads_stamps_and_one_schema_only(name, kwargs, index_kind):
    root = fixture_path(name)
    ds, counter = open_counted(root, index_kind=index_kind, **kwargs)
    candidates = moc_candidates(root)
    arrays = schema_arrays(root, ds.attrs["morton_hive"]["leaves"][0])
    constant = 3 + arrays  # manifest + root MOC + schema group + schema arrays

    assert counter.lists == 0, counter.summary()
    assert counter.kind("chunk:morton") == 0 and counter.kind("chunk:cell_ids") == 0, counter.summary()
    assert counter.kind("chunk:data") == 0, counter.summary()
    assert counter.kind("stamp") == candidates, counter.summary()
    assert counter.kind("manifest") == 1 and counter.kind("root_moc") == 1, counter.summary()
    assert counter.kind("metadata") == 1 + arrays, counter.summary()
    assert counter.gets <= candidates + constant, counter.summary()
    assert set(counter) <= {("GET", k) for k in ("manifest", "root_moc", "stamp", "metadata")}, counter.summary()


@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("name,kwargs", ZAGG_OPENS[:3], ids=["single_8", "single_ragged", "windowed-2019"])
def test_compute_reads_each_data_chunk_once_and_no_coordinate_chunk(name, kwargs, index_kind):
    root = fixture_path(name)
    ds, _ = open_counted(root, index_kind=index_kind, **kwargs)
    assert "cell_ids" in ds.coords and ds["cell_ids"].attrs == {
        "grid_name": "healpix",
        "level": 8,
        "indexing_scheme": "nested",
        "ellipsoid": "WGS84",
    }
    with count_requests() as counter:
        loaded = ds.load()
        morton = loaded["morton"].values
        cell_ids = loaded["cell_ids"].values
    assert morton.size == cell_ids.size == ds.sizes["cells"]
    assert counter.lists == 0, counter.summary()
    assert counter.kind("chunk:morton") == 0 and counter.kind("chunk:cell_ids") == 0, counter.summary()
    assert counter.kind("chunk:data") == data_chunk_count(root, ds) > 0, counter.summary()
    assert counter.gets == counter.kind("chunk:data"), counter.summary()


def test_index_kinds_make_identical_requests():
    root = fixture_path("zagg/single_8/store")
    _, pandas_counter = open_counted(root, index_kind="pandas")
    _, moc_counter = open_counted(root, index_kind="moc")
    assert moc_counter == pandas_counter


def test_single_8_figures():
    """The measured figures for ``zagg/single_8`` (8 candidates, 10 arrays): 21 GETs, no LIST."""
    ds, counter = open_counted(fixture_path("zagg/single_8/store"))
    assert counter.summary() == {"GET manifest": 1, "GET metadata": 11, "GET root_moc": 1, "GET stamp": 8}
    with count_requests() as compute:
        ds.load()
    assert compute.summary() == {"GET chunk:data": 72}  # 9 data variables x 8 leaves x 1 chunk


def legacy_twin(versioned: Path) -> Path:
    """Rewrite a copy of a versioned store in place into its legacy twin: each current version's objects moved up
    to the leaf root (superseded versions stay, as the reader ignores them), ``current`` dropped from the stamp."""
    for stamp_doc in versioned.rglob("*.zarr/zarr.json"):
        doc = load_json(stamp_doc)
        stamp = doc["attributes"]["morton_hive_commit"]
        leaf = stamp_doc.parent
        version = leaf / stamp.pop("current")
        for child in version.iterdir():
            if child.name != "zarr.json":
                shutil.move(child, leaf / child.name)
        shutil.rmtree(version)
        stamp_doc.write_text(json.dumps(doc))
    return versioned


def test_a_versioned_store_opens_with_its_legacy_twins_request_set_plus_one_group_per_version(copy_fixture):
    """FORMAT.md §5.3: following a pointer is free and the schema is read once; §5.5: a gone version is skipped
    at open, told by its data group (one batched read per versioned leaf, never the version's own stamp).

    The twin holds the same leaves and bytes with every version's objects at the leaf root: the open makes the
    twin's requests plus one data-group read per versioned leaf, and the load the same requests kind by kind.
    """
    versioned = fixture_path("zagg/versioned/store")
    twin = legacy_twin(copy_fixture("zagg/versioned/store"))
    ds, counter = open_counted(versioned)
    legacy, legacy_counter = open_counted(twin)
    n = ds.attrs["morton_hive"]["n_leaves"]
    assert ds.attrs["morton_hive"]["n_versioned"] == n > 1 and legacy.attrs["morton_hive"]["n_versioned"] == 0
    schema = 1 + schema_arrays(versioned, ds.attrs["morton_hive"]["leaves"][0])  # one schema
    assert legacy_counter.summary() == {
        "GET manifest": 1,
        "GET root_moc": 1,
        "GET stamp": moc_candidates(versioned),
        "GET metadata": schema,
    }
    assert counter.summary() == {**legacy_counter.summary(), "GET metadata": schema + n}
    with count_requests() as compute:
        values = ds.load()
    with count_requests() as twin_compute:
        twin_values = legacy.load()
    assert compute == twin_compute and compute.kind("chunk:data") == data_chunk_count(versioned, ds) > 0
    xr.testing.assert_identical(values.drop_attrs(), twin_values.drop_attrs())


def test_versioned_store_compute_reads_no_coordinate_chunk():
    root = fixture_path("zagg/versioned/store")
    ds, counter = open_counted(root)
    assert counter.lists == 0 and counter.kind("chunk:morton") == counter.kind("chunk:data") == 0
    with count_requests() as compute:
        ds.load()
    assert compute.kind("chunk:morton") == compute.kind("chunk:cell_ids") == 0
    assert compute.kind("chunk:data") == data_chunk_count(root, ds) > 0


def test_open_store_reads_each_manifest_once():
    with count_requests() as bare:
        moczarr.open_store(fixture_path("zagg/single_8/store"))
    assert bare.kind("manifest") == 1
    root = fixture_path("overview_hive")
    with count_requests() as multi:
        tree = moczarr.open_store(root, window="2019")
    assert multi.kind("manifest") == 1 + len(tree.children)  # the root probe, then one per product
