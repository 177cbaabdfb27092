"""The batched data plane reads exactly what zarr reads, leaf by leaf, and only what a selection touches.

Every fixture kind (and the bundled sample catalog) is opened, every cells
variable computed through the batched tasks, and compared with each object's
array opened directly by zarr and cut to the object's rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore

import moczarr
from moczarr.dataplane.reads import CellsSource, ChunkDecoder, Segments, batch_row_chunks
from moczarr.storage import count_requests, local_root
from tests.helpers import REPO, fixture_path

KINDS = [
    "column",
    "multi",
    "pyramid",
    "pyramid_temporal",
    "pyramid_windows",
    "single_8",
    "single_ragged",
    "versioned",
    "windowed",
]
SAMPLES = ["elevation", "elevation_yearly"]


def _root(kind: str):
    if kind.startswith("sample/"):
        return REPO / "catalogs" / kind
    return fixture_path(f"zagg/{kind}/store")


def _open_all(root):
    """Every dataset of a root: all products, every materialized level, the first window where windowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        try:
            tree = moczarr.open_store(root)
        except moczarr.errors.WindowError:
            tree = None
        if tree is None:
            windows = moczarr.list_windows(root) if not moczarr.list_products(root) else []
            tree = moczarr.open_store(root, window=windows[0] if windows else "2019")
        return [(node.path, node.to_dataset()) for node in tree.subtree if node.has_data]


def sources_of(arr) -> list[CellsSource]:
    """The batched sources behind a dask array (one per variable)."""
    graph = arr.__dask_graph__()
    found = [v for layer in graph.layers.values() for v in layer.values() if isinstance(v, CellsSource)]
    if not found:  # a bare DataNode wrapper
        found = [getattr(v, "value", None) for layer in graph.layers.values() for v in layer.values()]
        found = [v for v in found if isinstance(v, CellsSource)]
    return found


def leaf_by_leaf(source: CellsSource) -> np.ndarray:
    """The variable read the plain way: zarr opens each object's array and the object's rows are kept."""
    store = LocalStore(local_root(source.storage.store), read_only=True)
    blocks = []
    for group, sel in zip(source.groups, source.sels, strict=True):
        arr = zarr.open_array(store, path=source.storage.key(f"{group}/{source.name}"), mode="r")
        values = arr[...]
        blocks.append(values if sel is None else np.take(values, sel, axis=source.axis))
    return np.concatenate(blocks, axis=source.axis)


@pytest.mark.layers
@pytest.mark.parametrize("kind", KINDS + [f"sample/{s}" for s in SAMPLES])
def test_batched_load_equals_leaf_by_leaf_zarr_reads(kind):
    datasets = _open_all(_root(kind))
    assert datasets, f"{kind}: nothing opened"
    compared = 0
    for path, ds in datasets:
        loaded = ds.compute()
        for name, var in ds.variables.items():
            if var.chunks is None:
                continue
            found = sources_of(var.data)
            if not found:
                continue
            (source,) = found
            expected = leaf_by_leaf(source)
            got = loaded[name].values
            assert got.dtype == expected.dtype, (kind, path, name)
            np.testing.assert_array_equal(got, expected, err_msg=f"{kind}{path}:{name}")
            compared += 1
    assert compared >= len(datasets), f"{kind}: compared only {compared} variables"


@pytest.mark.layers
def test_ragged_variable_comes_through_zarrs_codec_chain():
    ((_, ds),) = _open_all(_root("single_ragged"))
    ragged = [n for n, v in ds.data_vars.items() if v.dtype == object]
    assert ragged, "the ragged fixture has a vlen-bytes variable"
    (source,) = sources_of(ds[ragged[0]].data)
    assert not source.decoder.numpy_path, "vlen-bytes + zstd goes through zarr's codecs"
    values = ds[ragged[0]].values
    assert any(isinstance(v, bytes) and len(v) > 0 for v in values)
    np.testing.assert_array_equal(values, leaf_by_leaf(source))


@pytest.mark.layers
@pytest.mark.parametrize("batch_bytes", [1, 700, 10**9])
def test_batch_size_changes_tasks_not_values(batch_bytes):
    root = _root("single_8")
    whole = moczarr.open_hive(root).compute()
    ds = moczarr.open_hive(root, batch_bytes=batch_bytes)
    chunks = ds["count"].chunks[0]
    if batch_bytes == 1:
        assert len(chunks) == ds.attrs["morton_hive"]["n_leaves"], "one object per batch at the smallest size"
    if batch_bytes == 10**9:
        assert len(chunks) == 1
    assert sum(chunks) == ds.sizes["cells"]
    # the whole graph: one task per batch and variable plus the shared sources, never one per leaf x variable
    n_vars = sum(1 for v in ds.variables.values() if v.chunks is not None)
    tasks = sum(len(v.data.__dask_graph__()) for v in ds.variables.values() if v.chunks is not None)
    assert tasks <= n_vars * (len(chunks) + 1)
    batched = ds.compute()
    for name in whole.variables:
        np.testing.assert_array_equal(batched[name].values, whole[name].values)


@pytest.mark.layers
def test_slices_read_only_the_leaves_they_touch():
    root = _root("single_8")
    ds = moczarr.open_hive(root)
    cells_per_leaf = ds.attrs["morton_hive"]["n_leaves"] and ds.sizes["cells"] // ds.attrs["morton_hive"]["n_leaves"]
    n_vars = sum(1 for v in ds.data_vars.values() if v.chunks is not None)
    with count_requests() as counter:
        part = ds.isel(cells=slice(cells_per_leaf - 2, cells_per_leaf + 3)).compute()
    assert counter.kind("chunk:data") == 2 * n_vars, counter.summary()  # the two leaves the slice straddles
    np.testing.assert_array_equal(part["count"].values, ds["count"].values[cells_per_leaf - 2 : cells_per_leaf + 3])
    with count_requests() as counter:
        one = ds["count"].isel(cells=5).values
    assert counter.kind("chunk:data") == 1, counter.summary()
    assert one == ds["count"].values[5]
    words = ds["morton"].values
    with count_requests() as counter:
        by_label = ds["count"].sel(morton=slice(int(words[0]), int(words[cells_per_leaf - 1]))).values
    assert counter.kind("chunk:data") == 1, counter.summary()
    np.testing.assert_array_equal(by_label, ds["count"].values[:cells_per_leaf])


@pytest.mark.layers
def test_aoi_open_reads_only_the_aoi_leaves():
    root = _root("single_8")
    full = moczarr.open_hive(root)
    leaf = full.attrs["morton_hive"]["leaves"][3]
    ds = moczarr.open_hive(root, aoi=[leaf])
    n_vars = sum(1 for v in ds.data_vars.values() if v.chunks is not None)
    with count_requests() as counter:
        ds.load()
    assert counter.kind("chunk:data") == n_vars, counter.summary()


@pytest.mark.layers
@pytest.mark.parametrize(
    "key", [slice(None), slice(3, 50), slice(7, 120, 5), np.array([100, 2, 2, 64, 0]), np.array([], dtype=int), 77, -1]
)
def test_source_indexing_matches_numpy(key):
    ds = moczarr.open_hive(_root("single_8"))
    (source,) = sources_of(ds["h_mean"].data)
    whole = leaf_by_leaf(source)
    np.testing.assert_array_equal(source[key], whole[key])


@pytest.mark.layers
def test_source_refuses_out_of_range_rows():
    ds = moczarr.open_hive(_root("single_8"))
    (source,) = sources_of(ds["count"].data)
    with pytest.raises(IndexError, match="out of bounds"):
        source[np.array([source.shape[0]])]


def test_decoder_fast_path_equals_zarrs_chain_for_bytes_and_zstd():
    """The numpy/zstandard shortcut decodes exactly what zarr's own chain decodes."""
    import zstandard

    values = np.linspace(-3, 7, 48, dtype=np.float32).reshape(48)
    for codecs, payload in [
        ([{"name": "bytes", "configuration": {"endian": "little"}}], values.astype("<f4").tobytes()),
        ([{"name": "bytes", "configuration": {"endian": "big"}}], values.astype(">f4").tobytes()),
        (
            [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "zstd", "configuration": {"level": 3, "checksum": False}},
            ],
            zstandard.ZstdCompressor().compress(values.astype("<f4").tobytes()),
        ),
    ]:
        meta = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": [48],
            "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [48]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": "NaN",
            "codecs": codecs,
        }
        fast = ChunkDecoder(meta, "test")
        assert fast.numpy_path
        slow = ChunkDecoder(meta, "test", shortcuts=False)
        assert not slow.numpy_path
        np.testing.assert_array_equal(fast.decode(payload), values)
        np.testing.assert_array_equal(slow.decode(payload), values)
        assert fast.decode(payload).dtype == slow.decode(payload).dtype == np.float32


def test_truncated_chunk_raises_naming_it():
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [16],
        "data_type": "int64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    with pytest.raises(moczarr.errors.ArrayContractError, match=r"leaf/count.*corrupt chunk"):
        ChunkDecoder(meta, "x").decode(b"\0" * 40, "leaf/count")


def test_batches_end_at_object_boundaries():
    assert batch_row_chunks([16, 16, 16, 16], row_bytes=4, batch_bytes=128) == (32, 32)
    assert batch_row_chunks([16, 0, 40, 16], row_bytes=4, batch_bytes=128) == (16, 40, 16)
    assert batch_row_chunks([5, 5, 5], row_bytes=1, batch_bytes=10**6) == (15,)
    with pytest.raises(moczarr.errors.ArgumentError, match="batch_bytes"):
        batch_row_chunks([1], 1, 0)


@pytest.mark.parametrize(
    "layout",
    [
        {"chunks": (4,)},
        {"chunks": (4,), "shards": (16,)},
        {"chunks": (16,), "compressors": "zstd"},
        {"chunks": (3, 5), "shape2": 3},
        {"chunks": (3, 16), "shape2": 3},
        {"chunks": (16,)},
    ],
    ids=["chunked", "sharded", "zstd", "2d-cells-last", "2d-one-chunk", "one-chunk"],
)
def test_source_over_chunked_objects_equals_zarr(tmp_path, layout):
    """Objects split into several chunks (or shards, or zstd) assemble exactly as zarr reads them."""
    from moczarr.storage import Storage

    rng = np.random.default_rng(7)
    extra = layout.get("shape2")
    shape = (extra, 16) if extra else (16,)
    kwargs = {k: v for k, v in layout.items() if k != "shape2"}
    if "compressors" in kwargs:
        from zarr.codecs import ZstdCodec

        kwargs["compressors"] = [ZstdCodec(level=1)]
    groups, arrays = [], []
    for i in range(5):
        group = f"obj{i}.zarr/8"
        values = rng.normal(size=shape).astype(np.float32)
        arr = zarr.create_array(
            LocalStore(tmp_path), name=f"{group}/v", shape=shape, dtype="float32", fill_value=np.nan, **kwargs
        )
        if i != 2:  # object 2 stays unwritten: every chunk is missing and reads as fill
            arr[...] = values
        else:
            values = np.full(shape, np.nan, dtype=np.float32)
        groups.append(group)
        arrays.append(values)
    meta = zarr.open_array(LocalStore(tmp_path), path=f"{groups[0]}/v", mode="r").metadata.to_dict()
    axis = 1 if extra else 0
    sels = [None, np.array([1, 5, 6, 15]), None, np.arange(4, 12), None]
    storage = Storage.open(tmp_path)
    source = CellsSource(storage, "v", meta, axis, Segments(groups, sels, [16] * 5), token="t")
    expected = np.concatenate(
        [a if s is None else np.take(a, s, axis=axis) for a, s in zip(arrays, sels, strict=True)], axis=axis
    )
    assert source.shape == expected.shape
    np.testing.assert_array_equal(source[...], expected)
    key = (slice(None), np.array([30, 2, 17])) if extra else np.array([30, 2, 17])
    np.testing.assert_array_equal(source[key], expected[key])
    with count_requests() as counter:
        rows = source[(slice(None), slice(16, 20)) if extra else slice(16, 20)]
    np.testing.assert_array_equal(rows, expected[..., 16:20])
    assert 0 < counter.kind("chunk:data") < 5 * 16 // (kwargs["chunks"][-1]), counter.summary()
    # a pick is a source of its own: unsorted, repeated, across objects (and into a partial one)
    picks = np.array([30, 2, 17, 2, source.shape[axis] - 1, 16])
    picked = source.pick(picks)
    np.testing.assert_array_equal(picked[...], np.take(expected, picks, axis=axis))
    np.testing.assert_array_equal(
        picked[(slice(None), slice(1, 4)) if extra else slice(1, 4)], np.take(expected, picks[1:4], axis=axis)
    )


def _tiny_objects(root, n: int) -> tuple[dict, list[str], np.ndarray]:
    """``n`` single-chunk objects of 16 float32 cells written as raw chunk files (zagg's leaf layout)."""
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [16],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    values = np.arange(16 * n, dtype=np.float32).reshape(n, 16)
    groups = [f"o{i}.zarr/8" for i in range(n)]
    for group, row in zip(groups, values, strict=True):
        (root / group / "v" / "c").mkdir(parents=True)
        (root / group / "v" / "c" / "0").write_bytes(row.astype("<f4").tobytes())
    return meta, groups, values.ravel()


@pytest.mark.slow
def test_a_batch_is_read_in_bounded_sub_batches_straight_into_its_result(tmp_path, monkeypatch):
    """A task over thousands of tiny objects holds its result plus a bounded number of payloads, not one per object."""
    import tracemalloc

    from moczarr.dataplane.reads import SUB_BATCH_KEYS
    from moczarr.storage import Storage

    n = 6 * SUB_BATCH_KEYS + 5
    meta, groups, expected = _tiny_objects(tmp_path, n)
    storage = Storage.open(tmp_path)
    calls = []
    plain = storage.get_many
    monkeypatch.setattr(storage, "get_many", lambda rels: calls.append(len(rels)) or plain(rels))
    source = CellsSource(storage, "v", meta, 0, Segments(groups, [None] * n, [16] * n), token="t")
    source[:16]  # parse the codecs, warm the imports
    calls.clear()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    values = source[...]
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    np.testing.assert_array_equal(values, expected)
    assert sum(calls) == n and max(calls) <= SUB_BATCH_KEYS, calls
    # what the read held beyond what it kept (the result, the storage's own record): ~0.8 MB for one
    # sub-batch's keys, payloads and bookkeeping; the same read holding all of them at once peaks at ~3.6 MB
    transient = peak - after
    assert transient < 1_500_000, f"{transient} bytes held at the peak beyond the result (base {base})"
    assert values.flags.writeable and values.base is None, "the result is one array written in place"


def test_local_reads_take_turns_across_threads(tmp_path):
    """Reading and decoding small local files is work for the GIL: dask's threads take turns at it.

    Two threads doing it at once hand the GIL to each other around every file open and read (twice
    the CPU for the same load), so every local handle of the process shares one turn; object stores
    wait on the network with the GIL released and take none.
    """
    import contextlib
    import threading

    from moczarr.storage import Storage

    meta, groups, expected = _tiny_objects(tmp_path, 64)
    storage, other = Storage.open(tmp_path), Storage.open(tmp_path)
    assert storage.turn() is other.turn()
    source = CellsSource(storage, "v", meta, 0, Segments(groups, [None] * 64, [16] * 64), token="t")
    read: list = []
    with other.turn():  # another reader's turn: this read waits for it
        reader = threading.Thread(target=lambda: read.append(source[...]))
        reader.start()
        reader.join(0.5)
        assert reader.is_alive() and not read
    reader.join(10)
    np.testing.assert_array_equal(read[0], expected)
    remote = Storage.open(
        "s3://b/p", {"anon": True, "client_kwargs": {"endpoint_url": "http://127.0.0.1:9", "region_name": "r"}}
    )
    assert isinstance(remote.turn(), contextlib.nullcontext)


@pytest.mark.parametrize(
    "shape,chunks", [((), ()), ((6,), (6,)), ((6,), (4,))], ids=["scalar", "one-chunk", "two-chunks"]
)
def test_whole_array_read_equals_zarr(tmp_path, shape, chunks):
    """Arrays without a cells axis are read whole, through the same decoder."""
    from moczarr.dataplane.reads import read_whole
    from moczarr.storage import Storage

    values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) + 3
    arr = zarr.create_array(
        LocalStore(tmp_path), name="obj.zarr/8/t", shape=shape, chunks=chunks or "auto", dtype="int64", fill_value=0
    )
    arr[...] = values
    meta = arr.metadata.to_dict()
    got = read_whole(Storage.open(tmp_path), "t", meta, "obj.zarr/8")
    np.testing.assert_array_equal(got, values)
    assert got.flags.writeable
