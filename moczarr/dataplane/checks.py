"""What a read checks before it uses an object's payloads: that the object is there, and its content hash.

zarr leaves an all-fill chunk unwritten, so an object none of whose chunks
exist must still have its data group (else fill would be a silent wrong
answer), unless it is a gone version's debris (FORMAT.md §5.5). Where an
object's stamp records ``content_hashes`` (FORMAT.md §8.6), its values are
hashed as its payloads arrive and compared with the recorded digest: a
replaced, altered or deleted chunk raises
:class:`~moczarr.errors.ContentHashError` naming its key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ChunkError, ContentHashError, DebrisWarning, StampError, warn
from ..format.content import bytes_digest, content_digest
from ..format.stamps import check_missing_version, version_prefix_of
from ..storage import Storage

if TYPE_CHECKING:
    from .decode import ChunkDecoder


class ReadChecks:
    """The checks of :class:`~moczarr.dataplane.reads.CellsSource`, which supplies the attributes declared here.

    ``digests[i]`` is the digest segment i's object's stamp records for this
    array (None: nothing recorded); ``digests`` None: the source does not verify.
    """

    storage: Storage
    name: str
    digests: Sequence[str | None] | None
    _origin: list[tuple[int, ...]]

    if TYPE_CHECKING:

        @property
        def decoder(self) -> ChunkDecoder: ...

        def _decode_object(self, group: str, coords_list: list, payloads: list) -> np.ndarray: ...

    def _check_whole(
        self, first: int, groups: list[str], payloads: list, debris: Collection[str]
    ) -> dict[str, np.ndarray]:
        """:meth:`check_content` of the whole single-chunk objects of segments ``first:first + len(groups)``.

        A plain ``bytes`` chunk of the array's size is hashed in one tight loop
        (the :func:`~moczarr.format.content.bytes_digest` rule, inlined: at
        zagg's 64-byte chunks a call per chunk is a sizeable part of the check);
        every other object, and any whose hash differs, goes through
        :meth:`check_content`, which decodes, hashes and raises.
        """
        digests = self.digests
        assert digests is not None  # called only on a source that verifies
        nbytes = self.decoder.content_nbytes
        sha256 = hashlib.sha256
        rest = []
        for i, (payload, digest) in enumerate(zip(payloads, digests[first : first + len(groups)], strict=True)):
            if type(digest) is not str:
                continue
            if nbytes is None or payload is None or len(payload) != nbytes or sha256(payload).hexdigest() != digest:
                rest.append(i)
        if not rest:
            return {}
        objects = [(groups[i], first + i, self._origin) for i in rest]
        return self.check_content(objects, [payloads[i] for i in rest], debris)

    def check_content(
        self, objects: list, payloads: list, debris: Collection[str] = frozenset()
    ) -> dict[str, np.ndarray]:
        """Check each object of a sub-batch whose stamp records this array's digest; return what it had to decode.

        ``objects`` are ``(object, a segment of it, chunk coordinates)`` and
        ``payloads`` their chunks in order, as read. A plain little-endian ``bytes`` chunk
        is hashed as it is; any other object is decoded and hashed
        (:func:`~moczarr.format.content.content_digest`), and its values are
        returned by object so the caller does not decode them again. Raises
        :class:`~moczarr.errors.ContentHashError` naming the chunk when the
        values are not the recorded ones, a missing chunk (read as fill) included.
        Objects in ``debris`` (a gone version, already warned about by
        :meth:`_require_groups`) are not checked: their rows are fill by the format's rule.
        """
        digests = self.digests
        assert digests is not None  # callers check content only of a verified source
        dec = self.decoder
        nbytes = dec.content_nbytes
        decoded: dict[str, np.ndarray] = {}
        k = 0
        for group, seg, coords_list in objects:
            chunks = payloads[k : k + len(coords_list)]
            k += len(coords_list)
            expected = digests[seg]
            if not isinstance(expected, str) or group in debris:
                continue
            if nbytes is not None and chunks[0] is not None and len(chunks[0]) == nbytes:
                got = bytes_digest(chunks[0])
            else:
                decoded[group] = values = self._decode_object(group, coords_list, chunks)
                try:
                    got = content_digest(values)
                except TypeError as exc:
                    raise ChunkError(f"{self.storage.describe(f'{group}/{self.name}')}: {exc}") from None
            if got != expected:
                raise ContentHashError(self._mismatch(group, coords_list, chunks, got, expected))
        return decoded

    def _mismatch(self, group: str, coords_list: list, chunks: list, got: str, expected: str) -> str:
        """The message of a failed content check, naming the chunk (or the array, for a multi-chunk object)."""
        missing = sum(1 for p in chunks if p is None)
        if len(coords_list) == 1:
            where = self.storage.describe(f"{group}/{self.name}/{self.decoder.chunk_key(coords_list[0])}")
        else:
            where = self.storage.describe(f"{group}/{self.name}")
        return mismatch_message(where, got, expected, missing=missing, n_chunks=len(coords_list))

    def _require_groups(self, groups: Sequence[str]) -> set[str]:
        """Objects none of whose chunks exist: their data group must (else fill would be a silent wrong answer).

        zarr leaves an all-fill chunk unwritten, so missing chunks alone prove
        nothing; a missing data *group* under a committed stamp does. One GET per
        group, memoized per open, and only for objects whose chunks are all
        absent. A versioned leaf's missing group is told apart by its version's
        stamp (one more GET, once per version; FORMAT.md §5.5): a version that is
        gone is debris, warned about with :class:`~moczarr.errors.DebrisWarning`,
        and its rows read as fill; a stamped one is a malformed leaf. Raises
        :class:`StampError` for that and for a legacy object's missing group (a
        removed or nulled ``current``). Returns the objects of gone versions
        (their rows are fill, and no recorded content hash applies to them).
        """
        memo, debris = self.storage.memo, set()
        for group in groups:
            if ("group_exists", group) not in memo:
                memo["group_exists", group] = self.storage.get_bytes(f"{group}/zarr.json") is not None
            if memo["group_exists", group]:
                continue
            version = version_prefix_of(group)
            if version is None:
                raise StampError(
                    f"{self.storage.describe(group)}: the data group of a committed object is missing (its stamp "
                    "says committed; a removed or nulled 'current' pointer?); refusing to read its rows as fill"
                )
            if ("version_gone", version) not in memo:
                check_missing_version(self.storage, version, group.rpartition("/")[2])
                memo["version_gone", version] = True
                leaf, _, name = version.rpartition("/")
                warn(
                    f"{self.storage.describe(leaf)}: stamp points at version {name!r}, which is missing or unstamped "
                    "(committed data removed out of band); its rows read as fill",
                    DebrisWarning,
                )
            debris.add(group)
        return debris


def mismatch_message(where: str, got: str, expected: str, *, missing: int = 0, n_chunks: int = 1) -> str:
    """What a :class:`~moczarr.errors.ContentHashError` says: the chunk (or array) ``where``, and what differs.

    ``missing`` of the object's ``n_chunks`` chunks were not there (read as fill).
    """
    if n_chunks == 1 and missing:
        what = "the chunk is missing, so it would read as fill, and fill is not what the stamp's content_hashes record"
    else:
        what = f"its values hash to {got[:12]}…, the stamp's content_hashes record {expected[:12]}…"
        if missing:
            what += f" ({missing} of its {n_chunks} chunks are missing and read as fill)"
    return f"{where}: {what} (a replaced, altered or deleted chunk); open without verify_chunks=True to read it anyway"
