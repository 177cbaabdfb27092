"""Chunk decoding: one array schema's chunk grid, key encoding and codec chain, parsed once.

Arrays whose codecs are exactly ``bytes`` or ``bytes`` + ``zstd`` are decoded
with numpy (and ``zstandard``) directly; any other chain goes through zarr's
own synchronous codec chain, parsed once (or its async chain, run on zarr's
loop, for a codec without a synchronous decode).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ArrayContractError, ChunkError, MoczarrError

if TYPE_CHECKING:
    from .._zarr import ArraySpec, ChunkTransform


class ChunkDecoder:
    """One array schema's chunk grid, key encoding and codec chain, parsed once.

    ``shortcuts=False`` decodes every chain through zarr's codecs (the reference
    the numpy path is checked against). Raises :class:`ArrayContractError` naming ``where`` for metadata zarr
    cannot parse or a chunk grid that is not regular.
    """

    def __init__(self, metadata: dict, where: str, *, shortcuts: bool = True):
        from .._zarr import ArrayV3Metadata, RegularChunkGridMetadata

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
        self._chunk_keys: dict[tuple[int, ...], str] = {}
        self._raw_dtype, self._zstd = self._fast_path(metadata.get("codecs") or []) if shortcuts else (None, False)
        self._transform: ChunkTransform | _AsyncChain | None = None
        self._spec: ArraySpec | None = None
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
        from .._zarr import ArrayConfig, ArraySpec, ChunkTransform, default_buffer_prototype

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

    @functools.cached_property
    def single_chunk(self) -> bool:
        """One chunk holds the whole array (zagg's leaves)."""
        return all(c >= s for c, s in zip(self.chunk_shape, self.shape, strict=True))

    @functools.cached_property
    def content_nbytes(self) -> int | None:
        """The size of a chunk whose bytes are the whole array's C-order little-endian values, else None.

        A plain ``bytes(endian=little)`` chunk covering exactly the array: its
        payload is hashed as it is, without a decode.
        """
        raw = self._raw_dtype
        if raw is None or self._zstd or self.chunk_shape != self.shape or raw.byteorder == ">":
            return None
        return int(np.prod(self.shape)) * raw.itemsize

    def chunk_key(self, coords: tuple[int, ...]) -> str:
        key = self._chunk_keys.get(coords)
        if key is None:
            key = self._chunk_keys[coords] = self.meta.encode_chunk_key(coords)
        return key

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
        from .._zarr import default_buffer_prototype

        assert self._transform is not None and self._spec is not None  # no numpy path: _zarr_chain set them
        try:
            out = self._transform.decode_chunk(default_buffer_prototype().buffer.from_bytes(payload), self._spec)
        except MoczarrError:
            raise
        except Exception as exc:  # zarr and numcodecs codecs, buffer reshapes: a damaged chunk
            raise ChunkError(f"{where or self.where}: chunk does not decode ({type(exc).__name__}: {exc})") from exc
        return np.asarray(out.as_numpy_array()).reshape(self.chunk_shape)


class _AsyncChain:
    def __init__(self, codecs):
        from .._zarr import AsyncChunkTransform

        self._chain = AsyncChunkTransform(codecs=codecs)

    def decode_chunk(self, payload, spec):
        from .._zarr import sync

        return sync(self._chain.decode_chunk(payload, spec))


def _zstd_decompress(payload: bytes, nbytes: int, where: str) -> bytes:
    import zstandard

    try:
        return zstandard.ZstdDecompressor().decompress(payload, max_output_size=nbytes)
    except zstandard.ZstdError as exc:
        raise ChunkError(f"{where}: zstd chunk does not decompress ({exc})") from None
