"""The deep pass: every object of every live leaf, overview and column read once, hashed and cross-checked.

Each object's arrays are decoded from bytes read in batches of
:data:`DEEP_BATCH` data roots, their O11 digests recomputed against the
stamp's ``content_hashes`` (FORMAT.md §8.6), a leaf's box, bitmap and
``count`` checked against one another, and its D20 sidecars against it.
"""

from __future__ import annotations

import numpy as np

from .. import ids
from ..errors import CoverageError, StampError
from ..format.content import combined_digest, content_digest, recorded_digests
from ..format.coverage import aoi_mask, box_words, decode_bitmap, stamp_coverage
from ..format.stamps import stamp_of
from ..storage import parse_json
from ._objects import chunk_presence, decode_arrays, read_objects
from ._product import StampedLeaf
from ._sidecars import SidecarChecks

#: leaves whose objects one deep batch holds in memory at once
DEEP_BATCH = 64


class DeepPass(SidecarChecks):
    """The deep checks of one product: content hashes, occupancy, sidecars."""

    def _deep(self, leaves: list[StampedLeaf], derived: list[str]) -> None:
        """Every object of every live leaf and admitted derived object, read once, hashed and cross-checked."""
        unrecorded = 0
        items: list[tuple[str, StampedLeaf | None]] = [(lf.prefix, lf) for lf in leaves] + [(p, None) for p in derived]
        self.tick(0, len(items))
        for start in range(0, len(items), DEEP_BATCH):
            batch = items[start : start + DEEP_BATCH]
            # a leaf's root document (stamp or version stamp) was read by the shallow pass: not again
            objects = read_objects(self.storage, [data for data, _ in batch], [lf is not None for _, lf in batch])
            decoded = decode_arrays(objects)
            sidecars = self._read_sidecars([lf for _, lf in batch])
            for (data, lf), objs, arrays, records in zip(batch, objects, decoded, sidecars, strict=True):
                stamp: dict | None
                if lf is not None:
                    stamp = lf.stamp
                    if f"{self.group}/zarr.json" not in objs:
                        self.add(
                            "data-group-missing",
                            "error",
                            f"{data}/{self.group}",
                            "a stamped leaf without its data group: reads of it raise (malformed leaf)",
                        )
                        continue
                else:  # a derived object's stamp is its root zarr.json, just read with the rest
                    try:
                        stamp = stamp_of(parse_json(objs.get("zarr.json"), self.storage.describe(f"{data}/zarr.json")))
                    except StampError as exc:
                        self.add("stamp-unparsable", "error", f"{data}/zarr.json", str(exc))
                        continue
                recorded = recorded_digests(stamp)
                values, digests = self._hash_object(data, objs, arrays, stamp, recorded)
                verified_by_record = False
                if lf is not None:
                    self._occupancy(lf, objs, values)
                    verified_by_record = self._check_sidecars(lf, records, digests, recorded)
                if recorded is None and not verified_by_record:
                    unrecorded += 1
            self.tick(len(batch), 0)
        if unrecorded:
            self.add(
                "content-unrecorded",
                "info",
                "",
                f"{unrecorded} objects record no content_hashes: their bytes cannot be verified (not tampered)",
            )

    def _hash_object(
        self, data: str, objs: dict[str, bytes], decoded: dict, stamp: dict | None, recorded: dict | None
    ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """Recompute the O11 digests of the decoded arrays of ``data``; report against ``recorded``.

        Returns the decoded values and their digests, by array path.
        """
        names = sorted(decoded)
        values: dict[str, np.ndarray] = {}
        digests: dict[str, str] = {}
        for name in names:
            result = decoded[name]
            if isinstance(result, Exception):
                self.add(
                    "chunk-unreadable",
                    "error",
                    f"{data}/{name}",
                    f"array does not decode: {type(result).__name__}: {result}",
                )
                continue
            values[name] = result
            digests[name] = content_digest(result)
        self.count("arrays_hashed", len(digests))
        if recorded is None:
            return values, digests
        assert stamp is not None  # recorded hashes are read from the stamp
        combined = stamp["content_hashes"].get("combined")
        if isinstance(combined, str) and combined != combined_digest(list(recorded.values())):
            self.add(
                "content-combined-mismatch",
                "error",
                f"{data}/zarr.json",
                "the recorded combined hash is not the hash of the recorded per-array digests "
                "(a serialization disagreement: the record cannot be trusted)",
            )
        for name in sorted(set(recorded) - set(names)):
            self.add(
                "content-array-missing",
                "error",
                f"{data}/{name}",
                "the stamp records a content hash for this array but it is not on disk",
            )
        for name in sorted(set(digests) - set(recorded)):
            self.add(
                "content-array-unrecorded",
                "warning",
                f"{data}/{name}",
                "an array the stamp's content_hashes do not list",
            )
        for name in sorted(set(digests) & set(recorded)):
            if digests[name] != recorded[name]:
                chunks = chunk_presence(name, objs)
                self.add(
                    "content-mismatch",
                    "error",
                    f"{data}/{name}",
                    f"decoded content hashes to {digests[name][:12]}…, the stamp records {recorded[name][:12]}… "
                    f"({chunks}): a replaced, truncated or missing chunk reads as fill under zarr",
                )
        return values, digests

    def _occupancy(self, lf: StampedLeaf, objs: dict[str, bytes], arrays: dict[str, np.ndarray]) -> None:
        """Box ⊇ bitmap, bitmap == ``count > 0``, ``cells_with_data`` == populated cells (deep only)."""
        cov = stamp_coverage(lf.stamp)
        box = box_words(lf.stamp)
        shard = ids.to_words(lf.ref.decimal)
        depth = self.m.cell_order - self.m.shard_order
        lo, _ = ids.subtree_rank_bounds(shard, self.m.shard_order, self.m.cell_order)
        bitmap = None
        if cov is not None and cov.get("encoding") == "bitmap" and depth > 0:
            sidecar = cov.get("sidecar") or "coverage.moc"
            payload = objs.get(sidecar)
            if payload is None:
                self.add(
                    "bitmap-missing",
                    "warning",
                    f"{lf.prefix}/{sidecar}",
                    "the stamp declares a bitmap sidecar that is not on disk: exact occupancy degrades to the box",
                )
            else:
                try:
                    bitmap = decode_bitmap(payload, depth, self.storage.describe(f"{lf.prefix}/{sidecar}"))
                except CoverageError as exc:
                    self.add("bitmap-corrupt", "error", f"{lf.prefix}/{sidecar}", str(exc))
        elif cov is not None and cov.get("encoding") == "full":
            bitmap = np.arange(4**depth)
        if bitmap is not None and box is not None and bitmap.size:
            cells = ids.words_from_ranks(lo[0] + bitmap.astype(np.uint64), self.m.cell_order)
            missed = ~aoi_mask(cells, box)
            if missed.any():
                self.add(
                    "box-misses-bitmap",
                    "error",
                    lf.ref.path,
                    f"the tier-0 box does not contain {int(missed.sum())} occupied cells of the bitmap "
                    f"(e.g. {ids.to_decimal(cells[missed][0])}): AOI opens there drop real data",
                )
        count = arrays.get(f"{self.group}/count")
        if count is None or count.ndim < 1 or count.shape[0] != 4**depth:
            return
        occupied = np.flatnonzero(np.asarray(count).reshape(count.shape[0], -1).sum(axis=1) > 0)
        if bitmap is not None and not np.array_equal(np.sort(bitmap), occupied):
            only_bits = np.setdiff1d(bitmap, occupied).size
            only_count = np.setdiff1d(occupied, bitmap).size
            self.add(
                "bitmap-count-mismatch",
                "error",
                lf.ref.path,
                f"bitmap and count > 0 disagree: {only_bits} cells set only in the bitmap, {only_count} only in count",
            )
        cwd = lf.stamp.get("cells_with_data")
        if isinstance(cwd, int) and not isinstance(cwd, bool) and cwd != occupied.size:
            self.add(
                "cells-with-data-mismatch",
                "warning",
                lf.ref.path,
                f"the stamp says cells_with_data {cwd}, count > 0 in {occupied.size} cells",
            )
