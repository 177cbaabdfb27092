"""The data plane: values of many objects read in batches, decoded by one parsed codec chain.

A variable of an open is the concatenation, on the ``cells`` axis, of the
same array in many zarr objects (leaves, overview or column objects), all
under one schema. :class:`CellsSource` is that concatenation as an indexable
array: ``source[key]`` works out which objects the key touches, fetches all
their chunks in one batched read of :class:`~moczarr.storage.Storage`
(plain file reads for local roots, ``concurrency`` requests in flight
otherwise) and decodes them with a :class:`ChunkDecoder` built once per
array schema (:mod:`moczarr.dataplane.decode`). The dask graph (built in
:mod:`moczarr.dataplane.assemble`) has one task per batch of objects and
variable; dask fuses a later slice into the task's key, so a ``sel``/``isel``
reads only the objects it touches.

Where an object's stamp records ``content_hashes`` (FORMAT.md §8.6) and the
open verifies chunks (the default), each object's values are hashed as its
payloads arrive and compared with the stamp's digest before they are used
(:meth:`CellsSource.check_content`, :mod:`moczarr.dataplane.checks`): a replaced, altered or deleted chunk
raises :class:`~moczarr.errors.ContentHashError` naming its key instead of
reading as other values or as fill.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np

from ..errors import ContentHashError
from ..format.content import content_digest
from ..storage import Storage
from .checks import ReadChecks, mismatch_message
from .decode import ChunkDecoder
from .segments import DEFAULT_BATCH_BYTES, SegmentDigests, Segments, batch_row_chunks, row_bytes

#: chunks whose payloads one read holds at once (a task reads its batch in sub-batches of this many)
SUB_BATCH_KEYS = 1024


class CellsSource(ReadChecks):
    """One variable over many objects, concatenated on the cells axis, as a lazily indexed array.

    The concatenation is made of :class:`Segments`. An open's source has one
    segment per object; :meth:`pick` makes sources whose segments may repeat
    objects and positions. ``digests[i]`` is the O11 digest segment i's
    object's stamp records for this array (None: nothing recorded); with
    ``digests`` given every object read is checked against it
    (:meth:`check_content`), and an object with a digest is always read
    whole. Indexing with slices, integers or integer arrays reads only the
    objects the key touches, each once, in sub-batches of at most
    :data:`SUB_BATCH_KEYS` chunks whose values are copied straight into the
    result, so a read holds the result plus a bounded number of payloads.
    ``source[...]`` of a whole batch is what a dask task computes. Every chunk
    payload arrives through :meth:`_payloads`. ``dtype``, when given, spares
    parsing the codec chain until the first read.
    """

    def __init__(
        self,
        storage: Storage,
        name: str,
        metadata: dict,
        cells_axis: int,
        segments: Segments,
        token: str = "",
        dtype: np.dtype | None = None,
        digests: Sequence[str | None] | None = None,
    ):
        self.storage, self.name, self.metadata, self.axis = storage, name, metadata, cells_axis
        self.segments = segments
        self.digests = digests
        self.token = token
        self._decoder: ChunkDecoder | None = None
        self._dtype = dtype
        meta_shape = tuple(int(s) for s in metadata["shape"])
        self._leaf_shape = meta_shape
        self._origin = [(0,) * len(meta_shape)]  # the one chunk of a single-chunk object
        shape = list(meta_shape)
        shape[cells_axis] = int(segments.offsets[-1])
        self.shape = tuple(shape)
        self.ndim = len(shape)

    @property
    def groups(self) -> list[str]:
        return self.segments.groups

    @property
    def sels(self) -> list[np.ndarray | None]:
        return self.segments.sels

    @property
    def offsets(self) -> np.ndarray:
        return self.segments.offsets

    @property
    def decoder(self) -> ChunkDecoder:
        if self._decoder is None:
            self._decoder = ChunkDecoder(
                self.metadata, self.storage.describe(self.groups[0] + "/" + self.name) if self.groups else self.name
            )
        return self._decoder

    @property
    def dtype(self) -> np.dtype:
        if self._dtype is None:
            self._dtype = self.decoder.dtype
        return self._dtype

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_decoder": None}

    def __dask_tokenize__(self):
        return ("moczarr.CellsSource", self.token)

    @property
    def verified(self) -> bool:
        """Reads are checked against recorded content hashes (the open's ``verify_chunks``)."""
        return self.digests is not None

    def pick(self, rows: np.ndarray, token: str = "", *, verify: bool = True) -> CellsSource:
        """The rows at ``rows`` (valid positions, any order, repeats allowed) as a source of their own.

        Consecutive rows of one segment become one segment; nothing is read.
        ``verify=False`` drops the content check (kept otherwise, when this source has it).
        """
        rows = np.asarray(rows, dtype=np.int64)
        seg = np.searchsorted(self.offsets, rows, side="right") - 1
        local = rows - self.offsets[seg]
        cuts = np.flatnonzero(np.diff(seg)) + 1
        kept = self.digests if verify else None
        groups, sels, n_cells, digests = [], [], [], []
        for a, b in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [rows.size]]), strict=True):
            if a == b:
                continue
            p = int(seg[a])
            sel = self.sels[p]
            groups.append(self.groups[p])
            sels.append(local[a:b] if sel is None else sel[local[a:b]])
            n_cells.append(self.segments.n_cells[p])
            if kept is not None:
                digests.append(kept[p])
        segments = Segments(groups, sels, n_cells)
        picked = CellsSource(
            self.storage,
            self.name,
            self.metadata,
            self.axis,
            segments,
            token,
            self._dtype,
            digests=None if kept is None else digests,
        )
        picked._decoder = self.decoder  # parsed once, here, and shared by every pick of this source
        return picked

    def __getitem__(self, key) -> np.ndarray:
        key = _normalize_key(key, self.ndim)
        n = self.shape[self.axis]
        idx = key[self.axis]
        scalar = False
        if isinstance(idx, slice) and idx.indices(n)[2] == 1:
            start, stop, _ = idx.indices(n)
            values = self.read_range(start, max(start, stop))
        else:
            rows, scalar = cells_rows(idx, n)
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

    def read_range(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` of the concatenation, cells axis kept (no per-row index arrays are built)."""
        first = max(int(np.searchsorted(self.offsets, start, side="right")) - 1, 0)
        last = min(int(np.searchsorted(self.offsets, stop, side="left")), len(self.groups))
        if (
            self.segments.whole
            and self.decoder.single_chunk
            and self.offsets[first] == start
            and self.offsets[last] == stop
        ):
            return self._read_objects(first, last)

        def pieces():
            bounds = self.offsets[first : last + 1].tolist()
            for p, (a, b) in enumerate(itertools.pairwise(bounds), start=first):
                lo, hi = max(start, a), min(stop, b)
                if lo < hi:
                    yield p, slice(lo - a, hi - a), lo - start

        return self._fill(pieces(), stop - start)

    def _read_objects(self, first: int, last: int) -> np.ndarray:
        """Whole single-chunk objects ``first:last``: what a dask task of an open reads (no per-piece planning).

        The objects are read in sub-batches of :data:`SUB_BATCH_KEYS`, each
        read and decoded in the storage's turn (:meth:`~moczarr.storage.Storage.turn`).
        """
        n = self._leaf_shape[self.axis]
        shape = list(self.shape)
        shape[self.axis] = int(self.offsets[last] - self.offsets[first])
        out = np.empty(shape, dtype=self.dtype)
        suffix = f"/{self.name}/{self.decoder.chunk_key(self._origin[0])}"
        for a in range(first, last, SUB_BATCH_KEYS):
            groups = self.groups[a : min(last, a + SUB_BATCH_KEYS)]
            with self.storage.turn():
                payloads = self._payloads([group + suffix for group in groups])
                debris = self._require_groups([g for g, p in zip(groups, payloads, strict=True) if p is None])
                decoded = self._check_whole(a, groups, payloads, debris) if self.digests is not None else {}
                at = (a - first) * n
                if decoded or not self._copy_joined(out, at, payloads):
                    for i, (group, payload) in enumerate(zip(groups, payloads, strict=True)):
                        leaf = decoded.pop(group, None)
                        if leaf is None:
                            leaf = self._decode_object(group, self._origin, [payload])
                        out[(slice(None),) * self.axis + (slice(at + i * n, at + (i + 1) * n),)] = leaf
        return out

    def _payloads(self, keys: list[str]) -> list[bytes | None]:
        """The bytes of the chunks at ``keys`` (None for a missing one): the one place chunk payloads arrive."""
        return self.storage.get_many(keys)

    def read_rows(self, rows: np.ndarray) -> np.ndarray:
        """Values of the given rows of the concatenation (any order, repeats allowed), cells axis kept."""
        if rows.size == 0:
            return self._fill((), 0)
        ordered = rows.size == 1 or bool(np.all(rows[1:] > rows[:-1]))
        uniq, inverse = (rows, None) if ordered else np.unique(rows, return_inverse=True)
        seg = np.searchsorted(self.offsets, uniq, side="right") - 1
        cuts = np.flatnonzero(np.diff(seg)) + 1
        pieces = (
            (int(seg[a]), uniq[a:b] - self.offsets[seg[a]], int(a))
            for a, b in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [uniq.size]]), strict=True)
        )
        values = self._fill(pieces, uniq.size)
        return values if inverse is None else np.take(values, inverse, axis=self.axis)

    def _fill(self, pieces: Iterable, n_rows: int) -> np.ndarray:
        """The result of ``n_rows`` rows, each piece's rows decoded into place.

        A piece is ``(segment, rows of the segment as a slice or positions,
        first output row)``. Pieces are taken in sub-batches of objects
        holding at most about :data:`SUB_BATCH_KEYS` chunks; each object of a
        sub-batch is read once, and its payloads are dropped once copied.
        """
        shape = list(self.shape)
        shape[self.axis] = n_rows
        out = np.empty(shape, dtype=self.dtype)
        dec = self.decoder
        per_object = (
            1
            if dec.single_chunk
            else int(np.prod([-(-s // c) for s, c in zip(self._leaf_shape, dec.chunk_shape, strict=True)]))
        )
        batch: dict[str, list] = {}
        for piece in pieces:
            group = self.groups[piece[0]]
            if group not in batch and len(batch) * per_object >= SUB_BATCH_KEYS:
                with self.storage.turn():
                    self._fill_batch(out, batch)
                batch = {}
            batch.setdefault(group, []).append(piece)
        if batch:
            with self.storage.turn():
                self._fill_batch(out, batch)
        return out

    def _chunks_of(self, pieces: list) -> list[tuple[int, ...]]:
        """Coordinates of the chunks of one object the pieces need."""
        dec = self.decoder
        if dec.single_chunk:
            return self._origin
        if self.digests is not None and self.digests[pieces[0][0]] is not None:
            return self._all_chunks()  # a recorded digest covers the whole array
        step = dec.chunk_shape[self.axis]
        wanted: set[int] = set()
        for seg, rows, _ in pieces:
            pos = self._object_positions(seg, rows)
            if isinstance(pos, slice):
                wanted.update(range(pos.start // step, -(-pos.stop // step)))
            else:
                wanted.update(np.unique(pos // step).tolist())
        along = sorted(wanted)
        cshape, axis = dec.chunk_shape, self.axis
        coords_list: list[tuple[int, ...]] = [()]
        for i, (s, c) in enumerate(zip(self._leaf_shape, cshape, strict=True)):
            choices = along if i == axis else range(-(-s // c))
            coords_list = [(*cc, int(x)) for cc in coords_list for x in choices]
        return coords_list

    def _all_chunks(self) -> list[tuple[int, ...]]:
        """Coordinates of every chunk of one object."""
        grid = (range(-(-s // c)) for s, c in zip(self._leaf_shape, self.decoder.chunk_shape, strict=True))
        return list(itertools.product(*grid))

    def _object_positions(self, seg: int, rows) -> np.ndarray | slice:
        """The object's local cell positions of a piece's segment rows (a slice when they are contiguous)."""
        sel = self.sels[seg]
        if sel is None:
            return rows
        return sel[rows]

    def _fill_batch(self, out: np.ndarray, batch: dict[str, list]) -> None:
        """Read one sub-batch (``{object: its pieces}``) and copy its values into ``out``."""
        dec = self.decoder
        plans = [(group, self._chunks_of(pieces), pieces) for group, pieces in batch.items()]
        if dec.single_chunk:
            suffix = f"/{self.name}/{dec.chunk_key((0,) * len(self._leaf_shape))}"
            payloads = self._payloads([group + suffix for group in batch])
            gone = [group for group, p in zip(batch, payloads, strict=True) if p is None]
        else:
            keys = [f"{group}/{self.name}/{dec.chunk_key(c)}" for group, coords_list, _ in plans for c in coords_list]
            payloads = self._payloads(keys)
            del keys
            k, gone = 0, []
            for group, coords_list, _ in plans:
                if all(p is None for p in payloads[k : k + len(coords_list)]):
                    gone.append(group)
                k += len(coords_list)
        debris = self._require_groups(gone)
        decoded = (
            self.check_content([(group, pieces[0][0], coords) for group, coords, pieces in plans], payloads, debris)
            if self.digests is not None
            else {}
        )
        if not decoded and self._fill_joined(out, plans, payloads):
            return
        k = 0
        for group, coords_list, pieces in plans:
            leaf = decoded.pop(group, None)
            if leaf is None:
                leaf = self._decode_object(group, coords_list, payloads[k : k + len(coords_list)])
            payloads[k : k + len(coords_list)] = [None] * len(coords_list)
            k += len(coords_list)
            for seg, rows, at in pieces:
                pos = self._object_positions(seg, rows)
                n = pos.stop - pos.start if isinstance(pos, slice) else pos.size
                target = (slice(None),) * self.axis + (slice(at, at + n),)
                out[target] = (
                    leaf[(slice(None),) * self.axis + (pos,)]
                    if isinstance(pos, slice)
                    else np.take(leaf, pos, axis=self.axis)
                )

    def _fill_joined(self, out: np.ndarray, plans: list, payloads: list) -> bool:
        """:meth:`_copy_joined` of a sub-batch whose pieces are whole objects landing on consecutive rows.

        False (nothing written) when they are not: a sub-selection, an object read for several pieces.
        """
        n = self._leaf_shape[self.axis]
        at = plans[0][2][0][2]
        expect = at
        for _, _, pieces in plans:
            if len(pieces) != 1:
                return False
            seg, rows, first = pieces[0]
            if (
                first != expect
                or self.sels[seg] is not None
                or not isinstance(rows, slice)
                or (rows.start, rows.stop) != (0, n)
            ):
                return False
            expect += n
        return self._copy_joined(out, at, payloads)

    def _copy_joined(self, out: np.ndarray, at: int, payloads: list) -> bool:
        """Whole single-chunk objects of a plain ``bytes`` array into rows ``at:``: one copy of their joined bytes.

        False (nothing written) when the shortcut does not apply: another codec
        chain, chunks not the object's shape, a missing or odd-sized chunk. Tiny
        chunks are the norm (zagg leaves), so one array over the joined bytes
        saves an array per chunk. ``payloads`` is emptied once copied.
        """
        dec = self.decoder
        if dec._raw_dtype is None or dec._zstd or dec.chunk_shape != self._leaf_shape:
            return False
        nbytes = int(np.prod(self._leaf_shape)) * dec._raw_dtype.itemsize
        if any(p is None or len(p) != nbytes for p in payloads):
            return False
        count = len(payloads)
        stacked = np.frombuffer(b"".join(payloads), dtype=dec._raw_dtype).reshape((count, *self._leaf_shape))
        payloads.clear()
        n = self._leaf_shape[self.axis]
        shape = list(self._leaf_shape)
        shape[self.axis] = n * count
        rows = (slice(None),) * self.axis + (slice(at, at + n * count),)
        out[rows] = np.moveaxis(stacked, 0, self.axis).reshape(shape)
        return True

    def _decode_object(self, group: str, coords_list: list, payloads: list) -> np.ndarray:
        """One object's leaf array from the payloads of its chunks at ``coords_list`` (fill elsewhere)."""
        dec = self.decoder
        lshape, cshape = self._leaf_shape, dec.chunk_shape

        def where(coords) -> str:  # a damaged chunk is named by its own key
            return self.storage.describe(f"{group}/{self.name}/{dec.chunk_key(coords)}")

        if dec.single_chunk:
            return dec.decode(payloads[0], where(coords_list[0]))[tuple(slice(0, s) for s in lshape)]
        leaf = dec.fill(lshape)
        for coords, payload in zip(coords_list, payloads, strict=True):
            chunk = dec.decode(payload, where(coords))
            region = tuple(slice(c * cs, min((c + 1) * cs, s)) for c, cs, s in zip(coords, cshape, lshape, strict=True))
            leaf[region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
        return leaf


def read_whole(storage: Storage, name: str, metadata: dict, group: str, digest: str | None = None) -> np.ndarray:
    """One object's whole array (arrays without a cells axis), through the same decoder and batched read.

    ``digest`` is the O11 digest the object's stamp records for the array,
    checked as a :class:`CellsSource` read checks it (raises
    :class:`~moczarr.errors.ContentHashError`).
    """
    shape = tuple(int(x) for x in metadata["shape"])
    if shape:
        digests = None if digest is None else [digest]
        values = CellsSource(storage, name, metadata, 0, Segments([group], [None], [shape[0]]), digests=digests)[...]
        return values if values.flags.writeable else values.copy()
    dec = ChunkDecoder(metadata, storage.describe(f"{group}/{name}"))
    key = f"{group}/{name}/{dec.chunk_key(())}"
    payload = storage.get_bytes(key)
    values = np.array(dec.decode(payload, storage.describe(key)).reshape(()))
    if digest is not None and (got := content_digest(values)) != digest:
        raise ContentHashError(mismatch_message(storage.describe(key), got, digest, missing=int(payload is None)))
    return values


def _normalize_key(key, ndim: int) -> tuple:
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - len(key) + 1) + key[i + 1 :]
    if any(k is None for k in key):
        raise IndexError("moczarr arrays do not take new axes in a read key")
    return tuple(key) + (slice(None),) * (ndim - len(key))


def cells_rows(idx, n: int) -> tuple[np.ndarray, bool]:
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
        if arr.shape != (n,):
            raise IndexError(f"a boolean index of shape {arr.shape} does not match a cells axis of {n}")
        return np.flatnonzero(arr).astype(np.int64), False
    arr = arr.astype(np.int64).ravel()
    arr = np.where(arr < 0, arr + n, arr)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise IndexError(f"indices out of bounds for a cells axis of {n}")
    return arr, False


__all__ = [
    "DEFAULT_BATCH_BYTES",
    "SUB_BATCH_KEYS",
    "CellsSource",
    "ChunkDecoder",
    "SegmentDigests",
    "Segments",
    "batch_row_chunks",
    "cells_rows",
    "read_whole",
    "row_bytes",
]
