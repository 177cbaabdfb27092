"""The data plane: values of many objects read in batches, decoded by one parsed codec chain.

A variable of an open is the concatenation, on the ``cells`` axis, of the
same array in many zarr objects (leaves, overview or column objects), all
under one schema. :class:`CellsSource` is that concatenation as an indexable
array: ``source[key]`` works out which objects the key touches, fetches all
their chunks in one batched read of :class:`~moczarr.storage.Storage`
(plain file reads for local roots, ``concurrency`` requests in flight
otherwise) and decodes them with a :class:`ChunkDecoder` built once per
array schema. The dask graph (built in :mod:`moczarr.assemble`) has one task
per batch of objects and variable; dask fuses a later slice into the task's
key, so a ``sel``/``isel`` reads only the objects it touches.

Arrays whose codecs are exactly ``bytes`` or ``bytes`` + ``zstd`` are decoded
with numpy (and ``zstandard``) directly; any other chain goes through zarr's
own synchronous codec chain, parsed once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import ArrayContractError, ChunkError, MoczarrError, StampError
from .storage import Storage

DEFAULT_BATCH_BYTES = 4 * 2**20
_OBJECT_ROW_BYTES = 64  # nominal decoded size of one variable-length element, for batch sizing only


class ChunkDecoder:
    """One array schema's chunk grid, key encoding and codec chain, parsed once.

    ``shortcuts=False`` decodes every chain through zarr's codecs (the reference
    the numpy path is checked against). Raises :class:`ArrayContractError` naming ``where`` for metadata zarr
    cannot parse or a chunk grid that is not regular.
    """

    def __init__(self, metadata: dict, where: str, *, shortcuts: bool = True):
        from zarr.core.metadata.v3 import ArrayV3Metadata, RegularChunkGridMetadata

        try:
            meta = ArrayV3Metadata.from_dict(dict(metadata))
        except (ValueError, TypeError, KeyError) as exc:
            raise ArrayContractError(f"{where}: unreadable array metadata ({exc})") from None
        if not isinstance(meta.chunk_grid, RegularChunkGridMetadata):
            raise ArrayContractError(f"{where}: only regular chunk grids are supported")
        self.where = where
        self.meta = meta
        self.shape = tuple(int(s) for s in meta.shape)
        self.chunk_shape = tuple(int(c) for c in meta.chunk_grid.chunk_shape)
        self.dtype = np.dtype(meta.dtype.to_native_dtype())
        self.fill_value = meta.fill_value
        self._raw_dtype, self._zstd = self._fast_path(metadata.get("codecs") or []) if shortcuts else (None, False)
        self._transform = self._spec = None
        if self._raw_dtype is None:
            self._zarr_chain()

    def _fast_path(self, codecs: list) -> tuple[np.dtype | None, bool]:
        """The stored dtype when the chain is exactly ``bytes`` (+ ``zstd``) on a fixed-size type."""
        names = [c.get("name") if isinstance(c, dict) else c for c in codecs]
        if self.dtype.kind in "OUSTV" or names not in (["bytes"], ["bytes", "zstd"]):
            return None, False
        config = codecs[0].get("configuration") or {} if isinstance(codecs[0], dict) else {}
        endian = config.get("endian", "little")
        raw = self.dtype.newbyteorder("<" if endian == "little" else ">") if self.dtype.itemsize > 1 else self.dtype
        return raw, names[-1] == "zstd"

    def _zarr_chain(self) -> None:
        from zarr.core.array_spec import ArrayConfig, ArraySpec
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.chunk_utils import ChunkTransform

        try:
            self._transform = ChunkTransform(codecs=tuple(self.meta.codecs))
        except TypeError:  # a codec without a synchronous decode: zarr's async chain, run on zarr's loop
            self._transform = _AsyncChain(tuple(self.meta.codecs))
        self._spec = ArraySpec(
            shape=self.chunk_shape,
            dtype=self.meta.dtype,
            fill_value=self.fill_value,
            config=ArrayConfig.from_dict({}),
            prototype=default_buffer_prototype(),
        )

    @property
    def numpy_path(self) -> bool:
        """Chunks decode with numpy (and ``zstandard``), not through zarr's codec chain."""
        return self._raw_dtype is not None

    @property
    def single_chunk(self) -> bool:
        """One chunk holds the whole array (zagg's leaves)."""
        return all(c >= s for c, s in zip(self.chunk_shape, self.shape))

    def chunk_key(self, coords: tuple[int, ...]) -> str:
        return self.meta.encode_chunk_key(coords)

    def fill(self, shape: tuple[int, ...]) -> np.ndarray:
        if self.dtype.kind == "O":
            out = np.empty(shape, dtype=object)
            out[...] = self.fill_value
            return out
        return np.full(shape, self.fill_value, dtype=self.dtype)

    def decode(self, payload: bytes | None, where: str = "") -> np.ndarray:
        """One chunk's values (``chunk_shape``); the fill value for a missing chunk.

        Raises :class:`~moczarr.errors.ChunkError` when the bytes do not decode to the chunk.
        """
        if payload is None:
            return self.fill(self.chunk_shape)
        if self._raw_dtype is not None:
            nbytes = int(np.prod(self.chunk_shape)) * self._raw_dtype.itemsize
            if self._zstd:
                payload = _zstd_decompress(payload, nbytes, where or self.where)
            if len(payload) != nbytes:
                raise ChunkError(
                    f"{where or self.where}: chunk holds {len(payload)} bytes, its shape needs {nbytes} (corrupt chunk)"
                )
            values = np.frombuffer(payload, dtype=self._raw_dtype).reshape(self.chunk_shape)
            return values if values.dtype == self.dtype else values.astype(self.dtype)
        from zarr.core.buffer import default_buffer_prototype

        try:
            out = self._transform.decode_chunk(default_buffer_prototype().buffer.from_bytes(payload), self._spec)
        except MoczarrError:
            raise
        except Exception as exc:  # zarr and numcodecs codecs, buffer reshapes: a damaged chunk
            raise ChunkError(f"{where or self.where}: chunk does not decode ({type(exc).__name__}: {exc})") from exc
        return np.asarray(out.as_numpy_array()).reshape(self.chunk_shape)


class _AsyncChain:
    def __init__(self, codecs):
        from zarr.core.codec_pipeline import AsyncChunkTransform

        self._chain = AsyncChunkTransform(codecs=codecs)

    def decode_chunk(self, payload, spec):
        from zarr.core.sync import sync

        return sync(self._chain.decode_chunk(payload, spec))


def _zstd_decompress(payload: bytes, nbytes: int, where: str) -> bytes:
    import zstandard

    try:
        return zstandard.ZstdDecompressor().decompress(payload, max_output_size=nbytes)
    except zstandard.ZstdError as exc:
        raise ChunkError(f"{where}: zstd chunk does not decompress ({exc})") from None


def batch_row_chunks(n_rows: Sequence[int], row_bytes: int, batch_bytes: int = DEFAULT_BATCH_BYTES) -> tuple[int, ...]:
    """Rows per batch: consecutive objects grouped until a batch holds ``batch_bytes`` of decoded data.

    Batches end at object boundaries; an object larger than ``batch_bytes`` is
    a batch of its own. Objects with no rows are skipped.
    """
    if batch_bytes <= 0:
        raise ValueError(f"batch_bytes must be positive, got {batch_bytes!r}")
    per_batch = max(1, batch_bytes // max(1, row_bytes))
    out, current = [], 0
    for n in n_rows:
        if not n:
            continue
        if current and current + n > per_batch:
            out.append(current)
            current = 0
        current += n
    if current:
        out.append(current)
    return tuple(out)


def row_bytes(dtype: np.dtype, shape: tuple[int, ...], cells_axis: int) -> int:
    """Decoded bytes of one row (one cell across the other axes) of an array."""
    per = _OBJECT_ROW_BYTES if dtype.kind == "O" else dtype.itemsize
    return per * int(np.prod([s for i, s in enumerate(shape) if i != cells_axis], dtype=np.int64))


class CellsSource:
    """One variable over many objects, concatenated on the cells axis, as a lazily indexed array.

    ``groups[i]`` is object i's data group (store-relative), ``sels[i]`` its
    kept local cell positions (None = all ``n_cells``). Indexing with slices,
    integers or integer arrays reads only the objects the key touches, every
    chunk of them in one batched read. ``source[...]`` of a whole batch is what a
    dask task computes.
    """

    def __init__(
        self,
        storage: Storage,
        name: str,
        metadata: dict,
        cells_axis: int,
        groups: Sequence[str],
        sels: Sequence[np.ndarray | None],
        n_cells: Sequence[int],
        token: str = "",
    ):
        self.storage, self.name, self.metadata, self.axis = storage, name, metadata, cells_axis
        self.groups = list(groups)
        self.sels = list(sels)
        counts = np.array([n if s is None else s.size for n, s in zip(n_cells, self.sels)], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.token = token
        self._decoder: ChunkDecoder | None = None
        meta_shape = tuple(int(s) for s in metadata["shape"])
        self._leaf_shape = meta_shape
        shape = list(meta_shape)
        shape[cells_axis] = int(self.offsets[-1])
        self.shape = tuple(shape)
        self.ndim = len(shape)

    @property
    def decoder(self) -> ChunkDecoder:
        if self._decoder is None:
            self._decoder = ChunkDecoder(self.metadata, self.storage.describe(self.groups[0] + "/" + self.name) if self.groups else self.name)
        return self._decoder

    @property
    def dtype(self) -> np.dtype:
        return self.decoder.dtype

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_decoder": None}

    def __dask_tokenize__(self):
        return ("moczarr.CellsSource", self.token)

    def __getitem__(self, key) -> np.ndarray:
        key = _normalize_key(key, self.ndim)
        rows, scalar = _rows_of(key[self.axis], self.shape[self.axis])
        values = self.read_rows(rows)
        if scalar:
            values = np.take(values, 0, axis=self.axis)
        # the other axes: each indexer applied on its own axis, last axis first so positions stay put
        axes = [i for i in range(self.ndim) if i != self.axis]
        for i in reversed(axes):
            pos = i - (1 if scalar and i > self.axis else 0)
            idx = key[i]
            if isinstance(idx, slice):
                if idx != slice(None):
                    values = values[(slice(None),) * pos + (idx,)]
            else:
                values = np.take(values, idx, axis=pos)
        return values

    def read_rows(self, rows: np.ndarray) -> np.ndarray:
        """Values of the given rows of the concatenation (any order, repeats allowed), cells axis kept."""
        axis = self.axis
        if rows.size == 0:
            shape = list(self.shape)
            shape[axis] = 0
            return np.empty(shape, dtype=self.dtype)
        ordered = rows.size == 1 or bool(np.all(rows[1:] > rows[:-1]))
        uniq, inverse = (rows, None) if ordered else np.unique(rows, return_inverse=True)
        part = np.searchsorted(self.offsets, uniq, side="right") - 1
        bounds = np.flatnonzero(np.diff(part)) + 1
        starts = np.concatenate([[0], bounds])
        stops = np.concatenate([bounds, [uniq.size]])
        touched = [int(part[s]) for s in starts]
        wanted = []
        for p, s, e in zip(touched, starts, stops):
            local = uniq[s:e] - self.offsets[p]
            sel = self.sels[p]
            wanted.append(local if sel is None else sel[local])
        values = self._read_whole_objects(touched, wanted)
        if values is None:
            blocks = self.read_objects(touched, wanted)
            values = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=axis)
        if inverse is not None:
            values = np.take(values, inverse, axis=axis)
        return values if values.flags.writeable else values.copy()

    def _read_whole_objects(self, objects: list[int], positions: list[np.ndarray]) -> np.ndarray | None:
        """Whole single-chunk objects of a plain ``bytes`` array: their chunks joined and viewed once.

        None when the shortcut does not apply (any sub-selection, another
        codec chain, a missing or odd-sized chunk); :meth:`read_objects` then
        decodes chunk by chunk. Tiny chunks are the norm (zagg leaves), so one
        array over the joined bytes saves an array object per chunk.
        """
        dec = self.decoder
        n = self._leaf_shape[self.axis]
        if dec._raw_dtype is None or dec._zstd or dec.chunk_shape != self._leaf_shape:
            return None
        if any(p.size != n or (n and (p[0] != 0 or p[-1] != n - 1)) for p in positions):
            return None
        keys = [f"{self.groups[o]}/{self.name}/{dec.chunk_key((0,) * len(self._leaf_shape))}" for o in objects]
        payloads = self.storage.get_many(keys)
        self._require_groups([o for o, p in zip(objects, payloads) if p is None])
        nbytes = int(np.prod(self._leaf_shape)) * dec._raw_dtype.itemsize
        if any(p is None or len(p) != nbytes for p in payloads):
            blocks = [
                dec.decode(p, self.storage.describe(k)) for p, k in zip(payloads, keys)
            ]  # fills missing chunks, raises on a corrupt one
            return np.concatenate(blocks, axis=self.axis)
        joined = np.frombuffer(bytearray().join(payloads), dtype=dec._raw_dtype)
        stacked = joined.reshape((len(objects), *self._leaf_shape))
        values = np.moveaxis(stacked, 0, self.axis)
        shape = list(self._leaf_shape)
        shape[self.axis] = n * len(objects)
        values = values.reshape(shape)
        return values if values.dtype == dec.dtype else values.astype(dec.dtype)

    def _require_groups(self, objects: Sequence[int]) -> None:
        """Objects none of whose chunks exist: their data group must (else fill would be a silent wrong answer).

        zarr leaves an all-fill chunk unwritten, so missing chunks alone prove
        nothing; a missing data *group* under a committed stamp does (a removed
        or nulled ``current``). One GET per group, memoized per open, and only
        for objects whose chunks are all absent. Raises :class:`StampError`.
        """
        for obj in objects:
            group = self.groups[obj]
            memo_key = ("group_exists", group)
            if memo_key not in self.storage.memo:
                self.storage.memo[memo_key] = self.storage.get_bytes(f"{group}/zarr.json") is not None
            if not self.storage.memo[memo_key]:
                raise StampError(
                    f"{self.storage.describe(group)}: the data group of a committed object is missing (its stamp "
                    "says committed; a removed or nulled 'current' pointer?); refusing to read its rows as fill"
                )

    def read_objects(self, objects: Sequence[int], positions: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Per object, the values at its local cell ``positions``: all their chunks in one batched read."""
        dec = self.decoder
        axis, cshape, lshape = self.axis, dec.chunk_shape, self._leaf_shape
        grids = [range(-(-s // c)) for s, c in zip(lshape, cshape)]
        plans = []  # per object: the chunk coordinates it needs
        keys = []
        for obj, pos in zip(objects, positions):
            if dec.single_chunk:
                coords_list = [(0,) * len(lshape)]
            else:
                along = np.unique(np.asarray(pos, dtype=np.int64) // cshape[axis]).tolist()
                coords_list = [()]
                for i, grid in enumerate(grids):
                    choices = along if i == axis else list(grid)
                    coords_list = [c + (int(x),) for c in coords_list for x in choices]
            plans.append(coords_list)
            prefix = f"{self.groups[obj]}/{self.name}/"
            keys.extend(prefix + dec.chunk_key(c) for c in coords_list)
        payloads = self.storage.get_many(keys)
        k, gone = 0, []
        for obj, coords_list in zip(objects, plans):
            if all(p is None for p in payloads[k : k + len(coords_list)]):
                gone.append(obj)
            k += len(coords_list)
        self._require_groups(gone)
        out, k = [], 0
        for obj, pos, coords_list in zip(objects, positions, plans):
            where = self.storage.describe(f"{self.groups[obj]}/{self.name}")
            if dec.single_chunk:
                chunk = dec.decode(payloads[k], where)
                k += 1
                leaf = chunk[tuple(slice(0, s) for s in lshape)]
            else:
                leaf = dec.fill(lshape)
                for coords in coords_list:
                    chunk = dec.decode(payloads[k], where)
                    k += 1
                    region = tuple(slice(c * cs, min((c + 1) * cs, s)) for c, cs, s in zip(coords, cshape, lshape))
                    leaf[region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
            pos = np.asarray(pos, dtype=np.int64)
            whole = pos.size == lshape[axis] and (pos.size == 0 or (pos[0] == 0 and pos[-1] == pos.size - 1))
            out.append(leaf if whole else np.take(leaf, pos, axis=axis))
        return out


def read_whole(storage: Storage, name: str, metadata: dict, group: str) -> np.ndarray:
    """One object's whole array (arrays without a cells axis), through the same decoder and batched read."""
    where = storage.describe(f"{group}/{name}")
    shape = tuple(int(x) for x in metadata["shape"])
    if len(shape) == 0 or ChunkDecoder(metadata, where).single_chunk:
        dec = ChunkDecoder(metadata, where)
        chunk = dec.decode(storage.get_bytes(f"{group}/{name}/{dec.chunk_key((0,) * len(shape))}"), where)
        values = chunk[tuple(slice(0, s) for s in shape)] if shape else chunk.reshape(())
    else:
        source = CellsSource(storage, name, metadata, 0, [group], [None], [shape[0]])
        values = source.read_objects([0], [np.arange(shape[0])])[0]
    return values if values.flags.writeable else values.copy()


def _normalize_key(key, ndim: int) -> tuple:
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - len(key) + 1) + key[i + 1 :]
    if any(k is None for k in key):
        raise IndexError("moczarr arrays do not take new axes in a read key")
    return tuple(key) + (slice(None),) * (ndim - len(key))


def _rows_of(idx, n: int) -> tuple[np.ndarray, bool]:
    """The cells-axis indexer as row positions (and whether it drops the axis)."""
    if isinstance(idx, slice):
        return np.arange(*idx.indices(n), dtype=np.int64), False
    if isinstance(idx, (int, np.integer)):
        i = int(idx) + (n if idx < 0 else 0)
        if not 0 <= i < n:
            raise IndexError(f"index {idx} is out of bounds for a cells axis of {n}")
        return np.array([i], dtype=np.int64), True
    arr = np.asarray(idx)
    if arr.dtype == bool:
        return np.flatnonzero(arr).astype(np.int64), False
    arr = arr.astype(np.int64).ravel()
    arr = np.where(arr < 0, arr + n, arr)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise IndexError(f"indices out of bounds for a cells axis of {n}")
    return arr, False


__all__ = ["DEFAULT_BATCH_BYTES", "CellsSource", "ChunkDecoder", "batch_row_chunks", "read_whole", "row_bytes"]
