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
reader's own function; this package only classifies. This module reads the
root's product roster and runs each product's passes, one module each:
``_shallow`` (the leaves), ``_pyramid`` (the declared levels), ``_lost``
(debris or a lost stamp), ``_deep`` with ``_sidecars`` and ``_objects`` (the
deep pass), all over the per-product state of ``_product``.
See ``docs/verify.md`` for every finding kind.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ids
from ..errors import ManifestError, NotAHiveStoreError, WindowError
from ..format.content import combined_digest, content_digest
from ..format.manifest import MANIFEST_NAME, check_window, parse_manifest
from ..format.roster import is_product_name, read_roster
from ..ids import ALL_TOKEN
from ..openers.hive import list_windows
from ..storage import DEFAULT_CONCURRENCY, Storage
from ._deep import DeepPass
from ._findings import VerifyReport
from ._lost import LostStampEvidence
from ._pyramid import PyramidChecks
from ._shallow import ShallowPass


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


class _ProductCheck(ShallowPass, PyramidChecks, LostStampEvidence, DeepPass):
    """The checks of one product (a complete morton-hive store): every pass over one shared state."""

    def run(self) -> None:
        """Every pass in the order their evidence needs: the walk and stamps, the levels, the unstamped, the deep."""
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


__all__ = ["combined_digest", "content_digest", "verify_store"]
