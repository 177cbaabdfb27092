"""Unstamped leaf prefixes: a lost stamp (committed data readers no longer see) or debris (safe to delete).

Only a prefix nothing vouches for is debris. The evidence is the store's own:
the root MOC naming the shard with no stamped leaf there, an admitted overview
counting observations in its cells, its D20 stats record (written only after a
stamp). A vouched-for prefix is reported with what it hides and how to repair it.
"""

from __future__ import annotations

import numpy as np

from .. import ids
from ..errors import StampError
from ..format.stamps import LeafRef, stamp_of
from ..ids import ALL_TOKEN
from ..storage import parse_json
from ._objects import decode_arrays, read_objects
from ._product import ProductState, sidecar_keys, word_of


class LostStampEvidence(ProductState):
    """Tells each unstamped prefix of the walk a lost stamp or debris, from what the store records about it."""

    def _unstamped_prefixes(self, shards, moc_usable: bool) -> None:
        """Report each unstamped leaf prefix as ``stamp-lost`` when the store vouches for it, else as ``debris``.

        Something vouches for a prefix when the root MOC (built from the
        writer's completion list) names its shard and no stamped leaf of that
        shard exists in any window, when an admitted overview counts
        observations in the shard's cells, or when its own D20 stats record
        (written only after a stamp) is beside it. Such a prefix held
        committed data: readers skip it, so an open hides its rows, and
        deleting it would destroy what a repair restores. Reads only the
        unstamped prefixes' listings, version stamps, D20 records and
        ``morton`` metadata, and the count arrays of their overviews.
        """
        refs = self.unstamped
        if not refs:
            return
        named = {int(w) for w in shards} if moc_usable else set()
        held = self._stamped_shards({word_of(r) for r in refs})
        listings = self.storage.list_many([r.path for r in refs])
        versions = [sorted(n for n in names if n.startswith("run-")) for names in listings]
        vkeys = [f"{r.path}/{v}/zarr.json" for r, vs in zip(refs, versions, strict=True) for v in vs]
        vdocs = iter(self.storage.get_many(vkeys))
        records = self.storage.get_many([sidecar_keys(r)[0] for r in refs])
        for ref, names, record in zip(refs, versions, records, strict=True):
            stamped = {v: st for v in names if (st := self._quiet_stamp(next(vdocs), f"{ref.path}/{v}")) is not None}
            word = word_of(ref)
            why = []
            if word in named and word not in held:
                why.append(f"the root coverage.moc names shard {ref.decimal} and no stamped leaf holds it")
            counted = self._overview_vouch(ref)
            if counted:
                why.append(counted)
            own = self._own_record(ref, word, record)
            if own is not None:
                why.append(f"its D20 stats record {sidecar_keys(ref)[0]} (written only after a stamp) is there")
            if not why:
                self.count("debris")
                self.add(
                    "debris",
                    "warning",
                    ref.path,
                    "unstamped .zarr prefix (a torn or failed write) that nothing vouches for "
                    "(not named by the root MOC, counted by no overview, no D20 record): "
                    "readers skip it; safe to delete",
                )
                continue
            self.count("stamp_lost")
            self.add("stamp-lost", "error", ref.path, self._lost_message(ref, why, stamped, own))

    def _lost_message(self, ref: LeafRef, why: list[str], versions: dict[str, dict], record: dict | None) -> str:
        """What a vouched-for unstamped prefix hides and how it is repaired."""
        current = max(versions, key=lambda v: (str(versions[v].get("written_at")), v)) if versions else None
        data = f"{ref.path}/{current}" if current else ref.path
        try:
            meta = parse_json(self.storage.get_bytes(f"{data}/{self.group}/morton/zarr.json"), data)
        except StampError:
            meta = None
        shape = meta.get("shape") if isinstance(meta, dict) else None
        if isinstance(shape, list) and shape and isinstance(shape[0], int):
            rows = f"its {shape[0]} rows ({self.group}/morton holds {shape[0]} cells)"
        else:
            depth = self.m.cell_order - self.m.shard_order
            rows = f"up to {4**depth} rows (its {self.group}/morton array is missing: the arrays are torn too)"
        stamp = versions.get(current) if current else None
        cwd = (stamp or record or {}).get("cells_with_data")
        if isinstance(cwd, int) and not isinstance(cwd, bool):
            rows += f", {cwd} of them with data"
        shard = f"shard {ref.decimal}" + (f", window {ref.window}" if ref.window else "")
        if current:
            repair = (
                f"restore {ref.path}/zarr.json from its stamped version {current} "
                f'(the version\'s morton_hive_commit plus "current": "{current}"), '
                f"or re-run the writer for {shard}"
            )
        else:
            repair = f"re-run the writer for {shard}, which rewrites the leaf and its stamp"
        return (
            f"unstamped .zarr prefix the store vouches for ({'; '.join(why)}): a lost stamp or a torn write. "
            f"Readers skip it, so every open hides {rows}. Do not delete it: {repair}"
        )

    def _stamped_shards(self, words: set[int]) -> set[int]:
        """The shards among the walked ones holding a stamped leaf in any window (reads other windows' stamps)."""
        held = {word_of(r) for r in self.stamped}
        if self.window is None:
            return held
        others = [r for r in self.all_refs if r.window != self.window and word_of(r) in words]
        docs = self.storage.get_many([f"{r.path}/zarr.json" for r in others])
        held |= {word_of(r) for r, d in zip(others, docs, strict=True) if self._quiet_stamp(d, r.path) is not None}
        return held

    def _quiet_stamp(self, payload: bytes | None, path: str) -> dict | None:
        """The stamp in a root document's bytes; None when absent or unparsable (reported where it is checked)."""
        try:
            return stamp_of(parse_json(payload, self.storage.describe(f"{path}/zarr.json")))
        except StampError:
            return None

    def _own_record(self, ref: LeafRef, word: int, payload: bytes | None) -> dict | None:
        """The prefix's D20 stats record, when it is one of this shard and window (else None)."""
        try:
            record = parse_json(payload, self.storage.describe(sidecar_keys(ref)[0]))
        except StampError:
            return None
        if isinstance(record, dict) and record.get("shard_key") == word and record.get("window") == ref.window:
            return record
        return None

    def _overview_vouch(self, ref: LeafRef) -> str | None:
        """What the finest admitted overview of the shard's window counts in its cells; None when none counts any.

        Only overviews whose cells are as fine as the shard or finer are asked:
        their cells inside the shard count its rows alone (a coarser cell also
        counts its siblings'). The finest one decides; a zero there is no evidence.
        """
        s, head = self.m.shard_order, (2 if ref.decimal.startswith("-") else 1)
        stem = ref.window or ALL_TOKEN
        for k, r in sorted({kr for kr in self.overview_paths.values() if kr[1] >= s}, key=lambda kr: -kr[1]):
            node = ref.decimal[: head + k]
            path = f"{ids.ancestor_node(node)}/{stem}.zarr"
            counts = self._overview_count(path, r) if self.overview_paths.get(path) == (k, r) else None
            if counts is None:
                continue
            first = int(ids.subtree_rank_bounds(ids.to_words(node), k, r)[0][0])
            lo, hi = (int(b[0]) - first for b in ids.subtree_rank_bounds(ids.to_words(ref.decimal), s, r))
            n = int(np.asarray(counts[lo : hi + 1]).sum())
            return f"the o{r} overview {path} counts {n} observations in it" if n > 0 else None
        return None

    def _overview_count(self, path: str, cell_order: int) -> np.ndarray | None:
        """The decoded ``count`` array of an admitted overview (read once), or None when it has none."""
        if path not in self.overview_counts:
            base = f"{path}/{cell_order}/count"
            objs = read_objects(self.storage, [base], [False])[0]
            got = decode_arrays([{f"count/{k}": v for k, v in objs.items()}])[0].get("count")
            self.overview_counts[path] = None if got is None or isinstance(got, Exception) else np.asarray(got)
        return self.overview_counts[path]
