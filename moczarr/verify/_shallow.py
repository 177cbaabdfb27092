"""The shallow pass over one product's leaves: what an open reads, and the listings that show what it cannot.

The root MOC, the discovery walk (misplaced leaves, window mismatches),
every leaf's stamp and version pointer, each versioned leaf's listing and
version stamp, the MOC against the stamped leaves, each stamp's box against
its shard, and the schema an open takes from its first leaf. No array is read.
"""

from __future__ import annotations

import warnings

import mortie
import numpy as np

from .. import ids
from ..dataplane.assemble import read_schema
from ..errors import ArrayContractError, CoverageError, StampError, VersionPointerError, WindowError
from ..format.coverage import ROOT_MOC_NAME, aoi_mask, box_words, parse_root_moc, stamp_coverage
from ..format.manifest import check_window
from ..format.stamps import LeafRef, leaf_data_prefix, stamp_of, stamped_array_names, version_of, walk_leaves
from ..storage import parse_json
from ._product import ProductState, StampedLeaf, object_of, word_of


class ShallowPass(ProductState):
    """The shallow checks of one product's leaves, in the order :meth:`run` calls them."""

    # -- root MOC --------------------------------------------------------------------------------------
    def _root_moc(self) -> tuple[np.ndarray | None, bool]:
        payload = self.storage.get_bytes(ROOT_MOC_NAME)
        if payload is None:
            self.add("root-moc-absent", "info", ROOT_MOC_NAME, "no root coverage.moc: every open walks the tree")
            return None, False
        try:
            shards = parse_root_moc(payload, self.m.shard_order, self.storage.describe())
        except CoverageError as exc:
            self.add("root-moc-malformed", "error", ROOT_MOC_NAME, str(exc))
            return None, False
        if shards is None:
            self.add(
                "root-moc-unusable",
                "warning",
                ROOT_MOC_NAME,
                f"not a morton-moc/1 ranges envelope at shard order {self.m.shard_order}: readers ignore it and walk",
            )
            return None, False
        return shards, True

    # -- the walk ------------------------------------------------------------------------------------
    def _walk(self) -> list[LeafRef]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            refs = walk_leaves(self.storage, self.m.shard_order, self.m.path_grouping)
        for w in caught:
            msg = str(w.message)
            self.add("leaf-misplaced", "warning", object_of(msg, self.storage), msg)
        keep = []
        for ref in refs:
            if self.m.windowed != (ref.window is not None):
                self.add(
                    "leaf-window-mismatch",
                    "warning",
                    ref.path,
                    f"a {'windowed' if ref.window else 'bare'} leaf in a {self.m.spec} store: readers never open it",
                )
                continue
            if ref.window is not None:
                try:
                    check_window(self.m, ref.window, list)
                except WindowError as exc:
                    self.add("window-invalid", "warning", ref.path, f"readers refuse this leaf's window: {exc}")
                    continue
                self.windows.add(ref.window)
            self.all_refs.append(ref)
            if self.window is None or ref.window == self.window:
                keep.append(ref)
        return keep

    # -- stamps and version pointers -----------------------------------------------------------------
    def _stamps(self, refs: list[LeafRef]) -> list[StampedLeaf]:
        docs = self.storage.get_many([f"{r.path}/zarr.json" for r in refs])
        leaves = []
        for ref, payload in zip(refs, docs, strict=True):
            try:
                stamp = stamp_of(parse_json(payload, self.storage.describe(f"{ref.path}/zarr.json")))
            except StampError as exc:
                self.add("stamp-unparsable", "error", f"{ref.path}/zarr.json", str(exc))
                continue
            if stamp is None:  # debris, unless something vouches for it (_unstamped_prefixes tells)
                self.unstamped.append(ref)
                continue
            self.stamped.append(ref)
            if "window" in stamp and stamp["window"] != ref.window:
                self.add(
                    "stamp-window-mismatch",
                    "warning",
                    ref.path,
                    f"the stamp says window {stamp['window']!r}, the leaf's name {ref.window!r}: "
                    "readers go by the name",
                )
            try:
                prefix = leaf_data_prefix(ref.path, stamp, where=self.storage.describe(ref.path))
            except VersionPointerError as exc:
                self.add("bad-pointer", "error", ref.path, str(exc))
                continue
            leaves.append(StampedLeaf(ref, stamp, prefix))
        self.tick(len(refs), 0)
        return leaves

    def _versions(self, leaves: list[StampedLeaf]) -> None:
        """Versioned leaves: the named version present and stamped, superseded versions, legacy leftovers."""
        versioned = [lf for lf in leaves if lf.prefix != lf.ref.path]
        self.count("versioned", len(versioned))
        if not versioned:
            return
        listings = self.storage.list_many([lf.ref.path for lf in versioned])
        docs = self.storage.get_many([f"{lf.prefix}/zarr.json" for lf in versioned])
        groups = self.storage.get_many([f"{lf.prefix}/{self.group}/zarr.json" for lf in versioned])
        for lf, names, payload, group in zip(versioned, listings, docs, groups, strict=True):
            current = version_of(lf.stamp)
            self._leftovers(lf, names, current)
            if current not in names:
                lf.live = False
                self.add(
                    "version-missing",
                    "error",
                    lf.ref.path,
                    f"the stamp points at {current}, which is missing: committed data removed out of band; "
                    "readers skip the leaf with a warning, no arrays",
                )
                continue
            self._named_version(lf, payload, group)

    def _leftovers(self, lf: StampedLeaf, names: list[str], current: str | None) -> None:
        """What beside a version pointer is never read: superseded versions, a converted leaf's legacy arrays."""
        for name in names:
            if name.startswith("run-") and name != current:
                self.count("superseded")
                self.add(
                    "superseded-version",
                    "info",
                    f"{lf.ref.path}/{name}",
                    f"not the current version ({current}): never read; reclaimable",
                )
            elif name == self.group or name == "coverage.moc":
                self.add(
                    "legacy-arrays",
                    "info",
                    f"{lf.ref.path}/{name}",
                    "legacy arrays beside a version pointer (a converted leaf): never read; reclaimable",
                )

    def _named_version(self, lf: StampedLeaf, payload: bytes | None, group: bytes | None) -> None:
        """The version a pointer names: stamped, holding its data group, its stamp the root's minus ``current``.

        ``payload`` and ``group`` are its root and data-group ``zarr.json``
        (None when absent); a version that fails either leaves the leaf not live.
        """
        try:
            vstamp = stamp_of(parse_json(payload, self.storage.describe(f"{lf.prefix}/zarr.json")))
        except StampError as exc:
            vstamp = None
            self.add("stamp-unparsable", "error", f"{lf.prefix}/zarr.json", str(exc))
        if vstamp is None:
            lf.live = False
            served = (
                "its arrays are intact, so open_hive still serves it" if group is not None else "it holds no arrays"
            )
            self.add(
                "version-unstamped",
                "error",
                lf.prefix,
                f"the version the pointer names has no stamp of its own ({served}); debris by the verifier's rule",
            )
            return
        if group is None:
            lf.live = False
            self.add(
                "data-group-missing",
                "error",
                f"{lf.prefix}/{self.group}",
                "a stamped version without its data group: opening the store raises (malformed leaf)",
            )
            return
        mirror = {k: v for k, v in lf.stamp.items() if k != "current"}
        if vstamp != mirror:
            differ = sorted(k for k in set(mirror) | set(vstamp) if mirror.get(k) != vstamp.get(k))
            self.add(
                "version-stamp-differs",
                "warning",
                lf.prefix,
                f"the root stamp is not the version's stamp plus 'current' (differ: {', '.join(differ)}); "
                "readers use the root's",
            )

    # -- coverage ------------------------------------------------------------------------------------
    def _moc_agreement(self, shards, usable: bool) -> None:
        if not usable:
            return
        named = {int(w) for w in shards}
        stamped = self.stamped
        words = ids.to_words([r.decimal for r in stamped]) if stamped else np.empty(0, np.uint64)
        held = set()
        for ref, w in zip(stamped, words, strict=True):
            held.add(int(w))
            if int(w) not in named:
                self.add(
                    "root-moc-stale",
                    "warning",
                    ref.path,
                    "a stamped leaf the root coverage.moc does not name: readers never see it; rebuild the MOC",
                )
        if self.window is not None:
            return  # a shard may hold leaves in other windows only
        pg = self.m.path_grouping
        lost = {word_of(r) for r in self.unstamped}  # reported as stamp-lost instead
        for w in sorted(named - held - lost):
            d = ids.to_decimal(w)
            where = ids.leaf_path(d, None, pg) if not self.m.windowed else ids.hive_node(d, pg)
            self.add(
                "moc-shard-without-leaf",
                "warning",
                where,
                "the root coverage.moc names this shard but it holds no stamped leaf: every open pays a stamp miss",
            )

    def _boxes(self, leaves: list[StampedLeaf]) -> None:
        """Box members inside the shard; a ``full`` leaf's box covering the whole shard (no read needed)."""
        for lf in leaves:
            cov = stamp_coverage(lf.stamp)
            box = box_words(lf.stamp)
            if cov is None or box is None:
                self.count("box-absent")
                continue
            shard = ids.to_words(lf.ref.decimal)
            outside = ~aoi_mask(box, shard)
            if outside.any():
                self.add(
                    "box-outside-shard",
                    "error",
                    lf.ref.path,
                    f"box members {ids.to_decimals(box[outside])} lie outside shard {lf.ref.decimal}",
                )
            if cov.get("encoding") == "full":
                cells = np.asarray(
                    mortie.generate_morton_children(shard[0], self.m.cell_order), dtype=np.uint64
                ).ravel()
                self._box_covers(lf, box, cells, "the full subtree")

    def _box_covers(self, lf: StampedLeaf, box: np.ndarray, cells: np.ndarray, what: str) -> None:
        missed = ~aoi_mask(cells, box)
        if missed.any():
            self.add(
                "box-misses-cells",
                "error",
                lf.ref.path,
                f"the tier-0 box does not contain {int(missed.sum())} cells of {what} "
                f"(e.g. {ids.to_decimal(cells[missed][0])}): AOI opens there drop real data",
            )

    def _schema(self, leaves: list[StampedLeaf]) -> None:
        """The schema an open takes from its first leaf, through the reader's array contract."""
        live = [lf for lf in leaves if lf.live]
        if not live:
            return
        lf = live[0]
        try:
            read_schema(self.storage, f"{lf.prefix}/{self.group}", stamped_array_names(lf.stamp, self.group))
        except (ArrayContractError, StampError) as exc:
            self.add("schema-invalid", "error", f"{lf.prefix}/{self.group}", str(exc))
