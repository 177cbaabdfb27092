"""The D20 sidecars of a leaf (FORMAT.md §4.5, §8.1, §8.2): its stats record and granule-id list, read in the deep pass.

Sidecars are written after the stamp and are fail-open: an absent one is
unverifiable, never tampered, so every finding here is a warning. Where the
stamp records no content hashes, the stats record's hashes are the only ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from .. import ids
from ..errors import MoczarrError
from ..format.content import recorded_digests
from ..storage import parse_json
from ._product import ProductState, StampedLeaf, sidecar_keys


class SidecarChecks(ProductState):
    """The checks of a leaf's D20 record and granule-id list against the leaf."""

    def _read_sidecars(self, leaves: Sequence[StampedLeaf | None]) -> list[tuple[bytes | None, bytes | None]]:
        """Both sidecars of every leaf of a deep batch (``(None, None)`` for derived objects), in one batched read."""
        keys = [k for lf in leaves if lf is not None for k in sidecar_keys(lf.ref)]
        payloads = iter(self.storage.get_many(keys))
        return [(None, None) if lf is None else (next(payloads), next(payloads)) for lf in leaves]

    def _sidecar_document(self, key: str, payload: bytes | None) -> dict | None:
        """A sidecar's JSON object, or None when absent (fail-open) or unreadable (a warning)."""
        if payload is None:
            return None
        try:
            doc = parse_json(payload, self.storage.describe(key))
        except MoczarrError as exc:
            self.add("sidecar-unreadable", "warning", key, f"{exc}; it is left out (a sidecar is fail-open)")
            return None
        if not isinstance(doc, dict):
            self.add(
                "sidecar-unreadable", "warning", key, f"a sidecar is a JSON object, this is a {type(doc).__name__}"
            )
            return None
        return doc

    def _check_sidecars(
        self,
        lf: StampedLeaf,
        payloads: tuple[bytes | None, bytes | None],
        digests: dict[str, str],
        stamped: dict | None,
    ) -> bool:
        """Check a leaf's D20 record and granule-id list against the leaf; True when the record verified its content.

        Sidecars are written after the stamp and are fail-open (FORMAT.md §4.4):
        an absent one is unverifiable, never tampered, so every finding here is
        a warning. Where the stamp records no content hashes (older writers),
        the D20 record's are the only ones, and a match verifies the content.
        """
        stats_key, granules_key = sidecar_keys(lf.ref)
        record = self._sidecar_document(stats_key, payloads[0])
        listing = self._sidecar_document(granules_key, payloads[1])
        record = self._record_of_leaf(lf, stats_key, record)
        verified = False
        hashes = recorded_digests(record)
        if hashes is not None and stamped is not None and hashes != stamped:
            self.add(
                "sidecar-stale",
                "warning",
                stats_key,
                "the D20 record's content hashes differ from the stamp's: a record of another run "
                "(the stamp is authoritative)",
            )
        elif hashes is not None and stamped is None:
            bad = sorted(name for name, hexdigest in hashes.items() if digests.get(name) != hexdigest)
            if bad:
                self.add(
                    "sidecar-content-mismatch",
                    "warning",
                    stats_key,
                    f"{len(bad)} arrays (e.g. {bad[0]}) do not hash as the D20 record says and the stamp records "
                    "no hashes to decide: altered content, or a record left by an earlier run",
                )
            else:
                verified = True
                self.count("arrays_verified_by_record", len(hashes))
        if listing is not None:
            self._check_granules(lf, granules_key, listing, record)
        return verified

    def _record_of_leaf(self, lf: StampedLeaf, key: str, record: dict | None) -> dict | None:
        """``record`` when it is a version-1 D20 record of this leaf's shard and window, else None (reported)."""
        if record is None:
            return None
        if record.get("schema_version") != 1:
            self.add(
                "sidecar-unsupported",
                "warning",
                key,
                f"a D20 record of schema_version {record.get('schema_version')!r}; this verifier reads version 1",
            )
            return None
        word = int(ids.to_words(lf.ref.decimal)[0])
        if record.get("shard_key") != word or record.get("window") != lf.ref.window:
            self.add(
                "sidecar-foreign",
                "warning",
                key,
                f"the D20 record is of shard_key {record.get('shard_key')!r}, window {record.get('window')!r}, "
                f"not of this leaf ({word}, {lf.ref.window!r}); it is left out",
            )
            return None
        return record

    def _check_granules(self, lf: StampedLeaf, key: str, listing: dict, record: dict | None) -> None:
        """A granule-id list is trusted only when it hashes to its ``granules_sha256`` and that is the D20 record's."""
        names, claimed = listing.get("granule_ids"), listing.get("granules_sha256")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.add(
                "sidecar-unreadable", "warning", key, "'granule_ids' is not a list of strings; the list is left out"
            )
            return
        own = hashlib.sha256("\n".join(sorted(names)).encode("utf-8")).hexdigest()
        if claimed != own:
            self.add(
                "granules-hash-mismatch",
                "warning",
                key,
                f"the {len(names)} ids do not hash to the list's own granules_sha256: the list is untrusted",
            )
            return
        if record is not None and record.get("granules_sha256") not in (None, claimed):
            self.add(
                "granules-unmatched",
                "warning",
                key,
                "granules_sha256 differs from the D20 record's: "
                "the list is of another run and untrusted (FORMAT.md §8.2)",
            )
            return
        count = lf.stamp.get("granule_count")
        if isinstance(count, int) and not isinstance(count, bool) and count != len(names):
            self.add(
                "granule-count-mismatch",
                "warning",
                lf.ref.path,
                f"the stamp says granule_count {count}, its trusted granule-id list holds {len(names)}",
            )
