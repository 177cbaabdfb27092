"""``verify_store``: check a morton-hive store the way its operator needs, not the way a reader sees it.

The reader deliberately cannot see some damage: a missing or replaced chunk
reads as fill, a superseded version's leftovers are never addressed, a stale
root MOC hides committed leaves, an unstamped version with its arrays intact
is still served. The verifier reads what an open reads plus the objects that
reveal those states, and reports each as a :class:`Finding`:

- **shallow** (the default): the manifest and product roster, the root MOC,
  the discovery walk (LISTs, for debris and stale-MOC checks), every leaf's
  stamp, each versioned leaf's root listing and version stamp, one schema,
  every declared pyramid level through the reader's own level opener, and for
  an unstamped prefix what tells a lost stamp from debris (the root MOC, the
  overview counts above it, its D20 record, its versions' stamps);
- **deep**: additionally every object of every stamped leaf, overview and
  column once (batched, bounded concurrency), recomputing the O11
  ``content_hashes`` (FORMAT.md §8.6) and checking box, bitmap and ``count``
  against one another, and each leaf's D20 sidecars (its stats record and
  granule-id list, FORMAT.md §8.1-8.2) against the leaf.

Nothing is ever written. Every rule about what the reader accepts is the
reader's own function, imported below; this module only classifies.
See ``docs/verify.md`` for every finding kind.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import mortie
import numpy as np

from .. import ids
from ..dataplane.assemble import read_schema
from ..errors import (
    ArrayContractError,
    CoverageError,
    ManifestError,
    NotAHiveStoreError,
    StampError,
    VersionPointerError,
    WindowError,
)
from ..format.content import combined_digest, content_digest
from ..format.coverage import (
    ROOT_MOC_NAME,
    aoi_mask,
    box_words,
    parse_root_moc,
    stamp_coverage,
)
from ..format.manifest import MANIFEST_NAME, check_window, parse_manifest
from ..format.roster import is_product_name, read_roster
from ..format.stamps import (
    LeafRef,
    leaf_data_prefix,
    stamp_of,
    stamped_array_names,
    version_of,
    walk_leaves,
)
from ..ids import ALL_TOKEN
from ..openers.hive import list_windows
from ..storage import DEFAULT_CONCURRENCY, Storage, parse_json
from ._deep import DeepPass
from ._findings import VerifyReport
from ._lost import LostStampEvidence
from ._product import StampedLeaf, object_of, word_of
from ._pyramid import PyramidChecks


def verify_store(
    store_root,
    *,
    window: str | None = None,
    deep: bool = False,
    storage_options: dict | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Verify a bare or multi-product store root: every product, every window (or only ``window``).

    ``deep=True`` also reads every object of every stamped leaf, overview and
    column and recomputes their recorded ``content_hashes``. ``progress`` is
    called as ``progress(checked, found)`` with the number of objects (leaves,
    then in a deep verify also overviews and columns) just checked and just
    found to check, both increments, so a caller can drive one bar over every
    product. Never writes.

    Returns a :class:`VerifyReport`; damage is reported, not raised. Raises
    :class:`~moczarr.errors.WindowError` for ``window="all"``, a label no
    windowed product's schedule allows, a window no windowed product holds a
    leaf of (naming the windows present), and any window on a root without a
    windowed product; and
    :class:`~moczarr.errors.NotAHiveStoreError` for a local root that does not exist or is a file.
    """
    storage = Storage.open(store_root, storage_options, concurrency)
    report = VerifyReport(storage.location, deep)
    if window == ALL_TOKEN:
        raise WindowError(f"{storage.describe()}: 'all' is the reserved all-time token, never a window label")
    try:
        products = _products(storage, report)
    except NotAHiveStoreError:  # a file given as the root: the reader's own message
        raise
    except FileNotFoundError:  # a local store root opens lazily: its first read finds it missing
        raise NotAHiveStoreError(f"{storage.describe()}: no such store root (the folder does not exist)") from None
    checks = []
    for prefix, pstorage, doc in products:
        try:
            manifest = parse_manifest(doc, pstorage.describe())
        except ManifestError as exc:
            report.add("manifest-invalid", "error", prefix + MANIFEST_NAME, str(exc))
            continue
        report.counts["products"] += 1
        checks.append(_ProductCheck(report, pstorage, prefix, manifest, window, deep, progress))
        checks[-1].run()
    if window is not None and checks:
        _check_window_held(storage, window, checks)
    return report


def _check_window_held(storage: Storage, window: str, checks: list[_ProductCheck]) -> None:
    """Refuse a ``window`` that no windowed product of the root holds a leaf of (the report would be empty)."""
    windowed = [c for c in checks if c.m.windowed]
    if not windowed:
        raise WindowError(f"{storage.describe()}: window {window!r} given but no product of this root is time-windowed")
    present = sorted(set().union(*(c.windows for c in windowed)))
    if window not in present:
        raise WindowError(
            f"{storage.describe()}: window {window!r} holds no leaf in this store; "
            f"windows present: {', '.join(present) or '(none)'}"
        )


# -- the roster --------------------------------------------------------------------------------------
def _products(storage: Storage, report: VerifyReport) -> list[tuple[str, Storage, dict]]:
    """``(key prefix, storage, manifest document)`` of every product (one, with prefix ``""``, for a bare store).

    Each damage is one finding: a product whose manifest is reported
    ``manifest-invalid`` is not reported again as a child without one.
    """
    invalid: set[str] = set()  # products whose manifest is present but malformed (already reported)
    try:
        root_doc, manifests = read_roster(storage)
    except ManifestError as exc:
        if storage.get_bytes(MANIFEST_NAME) is not None:
            report.add("manifest-invalid", "error", MANIFEST_NAME, str(exc))
            return []
        # one product's manifest is malformed: read the roster product by product, reporting each bad one
        root_doc, manifests = None, {}
        for name in [n for n in storage.list_dir("") if is_product_name(n)]:
            child = storage.child(name)
            payload = child.get_bytes(MANIFEST_NAME)
            if payload is None:
                continue
            try:
                doc = read_roster(child)[0]
            except ManifestError as bad:
                report.add("manifest-invalid", "error", f"{name}/{MANIFEST_NAME}", str(bad))
                invalid.add(name)
                continue
            if doc is not None:  # None only if the manifest just read went away
                manifests[name] = doc
    if root_doc is not None:
        return [("", storage, root_doc)]
    names = storage.list_dir("")
    if not manifests:
        if any(ids.DECIMAL_RE.match(n) and ids.decimal_order(n) == 0 for n in names):
            report.add(
                "manifest-missing",
                "error",
                MANIFEST_NAME,
                "a digit tree without morton_hive.json: no reader can open it",
            )
        elif not report.findings:
            report.add("not-a-store", "error", "", "neither a morton-hive manifest nor any product with one")
        return []
    others = [n for n in names if not is_product_name(n) and not ids.DECIMAL_RE.match(n)]
    for name, payload in zip(others, storage.get_many([f"{n}/{MANIFEST_NAME}" for n in others]), strict=True):
        if payload is not None:
            report.add(
                "product-name-invalid",
                "warning",
                name + "/",
                "a store whose name breaks the product grammar [a-z0-9_-]{1,192}: readers never list it",
            )
    for name in names:
        if is_product_name(name) and name not in manifests and name not in invalid:
            report.add(
                "not-a-product",
                "info",
                name + "/",
                "a product-shaped child without morton_hive.json; readers ignore it",
            )
    return [(f"{n}/", storage.child(n), manifests[n]) for n in sorted(manifests)]


class _ProductCheck(PyramidChecks, LostStampEvidence, DeepPass):
    """The checks of one product (a complete morton-hive store)."""

    def run(self) -> None:
        if self.m.windowed and self.window is not None:
            check_window(self.m, self.window, lambda: list_windows(self.storage))
        levels = self._levels()
        shards, moc_usable = self._root_moc()
        refs = self._walk()
        self.tick(0, len(refs))
        leaves = self._stamps(refs)
        self._versions(leaves)
        self._moc_agreement(shards, moc_usable)
        self._boxes(leaves)
        self._schema(leaves)
        derived = self._pyramid(levels, moc_usable, refs) if levels else []
        self._unstamped_prefixes(shards, moc_usable)
        if self.deep:
            self._deep([lf for lf in leaves if lf.live], derived)
        n = sum(1 for lf in leaves if lf.live)
        self.count("leaves_stamped", n)
        self.add("leaves-stamped", "info", "", f"{n} stamped leaves")

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

    # -- stamps and debris ---------------------------------------------------------------------------
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
                continue
            if group is None:
                lf.live = False
                self.add(
                    "data-group-missing",
                    "error",
                    f"{lf.prefix}/{self.group}",
                    "a stamped version without its data group: opening the store raises (malformed leaf)",
                )
                continue
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


__all__ = ["combined_digest", "content_digest", "verify_store"]
