"""The leaves of an open: candidates, their stamps read in one batch, the committed ones admitted, the schema.

The root coverage MOC's shard words (or, without a usable one, the discovery
walk's finds) meeting the AOI name the candidate leaves; their stamps are
read in one batch; the committed leaves whose box meets the AOI are admitted
as :class:`Leaf` records, version pointers followed; the first leaf whose
data group is there gives the schema (FORMAT.md §5, §12).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal, NamedTuple, overload

import numpy as np

from .. import ids
from ..dataplane.assemble import Schema, read_schema
from ..errors import (
    CoverageFallbackWarning,
    DebrisWarning,
    MissingLeafWarning,
    MoczarrError,
    NoCoverageError,
    StaleCoverageError,
    warn,
)
from ..format.content import recorded_hashes
from ..format.coverage import ROOT_MOC_NAME, box_members, meets, parse_root_moc
from ..format.integrity import check_cells_extent, leaf_stamp_fields
from ..format.manifest import Manifest
from ..format.stamps import (
    LeafRef,
    check_missing_version,
    leaf_data_prefix,
    parse_root,
    read_stamp,
    stamp_of,
    stamped_array_names,
    walk_leaves,
)
from ..places import BBox, Place, aoi_cover
from ..storage import Storage


class Leaf(NamedTuple):
    """A committed leaf admitted to an open: where it is, where its arrays are, and what its stamp says.

    An open holds one per leaf while it runs, so a leaf keeps its stamp's
    fields as plain values and the stamp itself as the bytes it was read as
    (``source``, parsed again on demand: only the leaf giving the schema needs
    it), or as the stamp a caller handed over. Thousands of parsed stamps kept
    alive would be tens of thousands of containers for the cyclic garbage
    collector to scan again and again while the open allocates. ``hashes`` is
    the stamp's ``content_hashes`` map (:func:`~moczarr.format.content.recorded_hashes`;
    a root stamp mirrors its version's, FORMAT.md §5.3), what every read of the
    leaf is checked against. A named tuple: the cheapest record to make, one per leaf.
    """

    ref: LeafRef
    prefix: str
    written_at: str | None
    time_range: tuple[str, str] | None
    cells_with_data: int
    granule_count: int
    hashes: Mapping | None
    source: bytes | dict

    @classmethod
    def admit(cls, ref: LeafRef, stamp: dict, where: str, source: bytes | dict) -> Leaf:
        """The leaf of a committed stamp, its fields checked.

        Raises :class:`StampError` naming the leaf for an unknown spec or a
        mistyped field, :class:`~moczarr.errors.VersionPointerError` for a bad ``current``.
        """
        return cls(
            ref,
            leaf_data_prefix(ref.path, stamp, where=where),
            *leaf_stamp_fields(stamp, where, ref.path),
            recorded_hashes(stamp),
            source,
        )

    @property
    def stamp(self) -> dict:
        """The commit stamp (parsed again from ``source`` when that is the document's bytes)."""
        if isinstance(self.source, dict):
            return self.source
        stamp = stamp_of(json.loads(self.source))
        assert stamp is not None  # source is the bytes a committed stamp was read from (admit_leaves)
        return stamp

    @property
    def versioned(self) -> bool:
        return self.prefix != self.ref.path

    @property
    def word(self) -> int:
        return self.ref.word if self.ref.word is not None else int(ids.to_words(self.ref.decimal)[0])


def root_shards(storage: Storage, manifest: Manifest, payload: bytes | None = None) -> np.ndarray | None:
    """Shard words from the root ranges MOC (one GET per open), or None when the cache is unusable.

    ``payload``: the root MOC's bytes, when the caller read them already (with
    the manifest, in one round trip); kept for the rest of the open like a read.
    """
    key = ("root_shards", manifest.shard_order)
    if key not in storage.memo:
        if payload is None:
            payload = storage.get_bytes(ROOT_MOC_NAME)
        storage.memo[key] = parse_root_moc(payload, manifest.shard_order, storage.describe())
    return storage.memo[key]


def candidate_leaves(
    storage: Storage, manifest: Manifest, shards: np.ndarray | None, window: str | None, cover: np.ndarray | None
) -> list[LeafRef]:
    """Leaves worth a stamp read: root MOC shards (or the walk's finds) meeting the AOI, for the window."""
    pg = manifest.path_grouping
    if shards is None:
        if not storage.memo.get("walk_warned"):  # once per open, however many windows it walks for
            storage.memo["walk_warned"] = True
            warn(
                f"{storage.describe()}: no usable root coverage.moc; falling back to the discovery walk",
                CoverageFallbackWarning,
            )
        refs = [r for r in walk_leaves(storage, manifest.shard_order, pg) if r.window == window]
        if cover is not None and refs:
            keep = meets(ids.to_words([r.decimal for r in refs]), cover)
            refs = [r for r, k in zip(refs, keep, strict=True) if k]
        return refs
    if cover is not None and shards.size:
        shards = shards[meets(shards, cover)]
    return [
        LeafRef(d, window, ids.leaf_path(d, window, pg), w)
        for d, w in zip(ids.to_decimals(shards), shards.tolist(), strict=True)
    ]


def admit_leaves(
    storage: Storage,
    manifest: Manifest,
    candidates: list[LeafRef],
    cover: np.ndarray | None,
    *,
    named_by_moc: bool = False,
) -> list[Leaf]:
    """Read the candidates' stamps (one batch) and keep the committed leaves worth opening.

    Unstamped prefixes are debris and skipped silently. A stamped box that
    misses the AOI is rejected; an absent or unusable one
    (:func:`~moczarr.format.coverage.box_members`) keeps its leaf. A stamp
    that fails its checks raises only when its leaf is kept. A version
    pointer is followed at no cost: the version's objects are not read here
    (a version that is gone shows when its leaf is read: :func:`first_schema`,
    and at compute the data plane). A shard
    the root MOC names (``named_by_moc``) of an unwindowed store whose leaf is
    missing entirely (no ``zarr.json``) is left out with a :class:`MissingLeafWarning`.
    """
    payloads = storage.get_many([f"{c.path}/zarr.json" for c in candidates])
    missing = [ref.path for ref, payload in zip(candidates, payloads, strict=True) if payload is None]
    if named_by_moc and missing and not manifest.windowed:
        warn(
            f"{storage.describe()}: the root coverage.moc names {len(missing)} shard(s) with no leaf at all "
            f"(e.g. {missing[0]}): removed out of band, or a stale MOC; left out",
            MissingLeafWarning,
        )
    # each document parsed, admitted and dropped in turn (see Leaf), its box kept as its few decimals;
    # a bad stamp raises only if its box is kept
    admitted: list[Leaf | MoczarrError] = []
    boxes: list[list[str] | None] = []
    for ref, payload in zip(candidates, payloads, strict=True):
        if payload is None:
            continue  # no leaf at all (in ``missing`` above)
        stamp = stamp_of(parse_root(payload, storage.describe(f"{ref.path}/zarr.json")))
        if stamp is None:
            continue
        boxes.append(box_members(stamp) if cover is not None else None)
        try:
            admitted.append(Leaf.admit(ref, stamp, storage.describe(ref.path), payload))
        except MoczarrError as exc:
            admitted.append(exc)
    leaves: list[Leaf] = []
    for leaf, keep in zip(admitted, _boxes_meet(boxes, cover), strict=True):
        if not keep:
            continue
        if isinstance(leaf, MoczarrError):
            raise leaf
        leaves.append(leaf)
    return leaves


def _boxes_meet(boxes: list[list[str] | None], cover: np.ndarray | None) -> np.ndarray:
    """Per box (its decimal members, :func:`box_members`): does it meet ``cover``?

    A box that is None (absent or unusable) and no cover keep their leaf.
    Every box's members are converted in one :func:`~moczarr.ids.to_words`
    call and tested in one mortie call.
    """
    keep = np.ones(len(boxes), dtype=bool)
    if cover is None:
        return keep
    flat = [m for box in boxes if box is not None for m in box]
    if not flat:
        return keep
    hit = meets(ids.to_words(flat), cover)
    sizes = np.fromiter((0 if box is None else len(box) for box in boxes), dtype=np.int64, count=len(boxes))
    boxed = sizes > 0
    starts = np.cumsum(sizes) - sizes
    keep[boxed] = np.logical_or.reduceat(hit, starts[boxed])
    return keep


def first_schema(
    storage: Storage, manifest: Manifest, leaves: list[Leaf]
) -> tuple[Schema | None, list[Leaf], set[str]]:
    """The schema of the first leaf whose data group is there, the leaves without those skipped before it, and
    the paths of the skipped ones.

    The array schemas are read once, from one leaf, whatever kind the leaves
    are (FORMAT.md §5.3: a versioned store opens with the legacy request set).
    A versioned leaf whose data group is missing is told apart by its version's
    stamp (one GET, on that path only; FORMAT.md §5.5): a version that is gone
    is debris, skipped with a :class:`DebrisWarning` and the next leaf gives the
    schema; a stamped one raises :class:`StampError`, as does a legacy leaf's
    missing group. ``(None, [], paths)`` when every leaf's version is gone.
    """
    group = str(manifest.cell_order)
    corrupted: set[str] = set()
    for i, lf in enumerate(leaves):
        schema = leaf_schema(storage, manifest, lf, missing_ok=lf.versioned)
        if schema is None:
            check_missing_version(storage, lf.prefix, group)
            warn(
                f"{storage.describe(lf.ref.path)}: stamp points at version {lf.stamp['current']!r}, which is missing "
                "or unstamped (committed data removed out of band); leaf skipped",
                DebrisWarning,
            )
            corrupted.add(lf.ref.path)
            continue
        return schema, [lf, *leaves[i + 1 :]], corrupted
    return None, [], corrupted


def drop_gone_versions(storage: Storage, manifest: Manifest, leaves: list[Leaf]) -> tuple[list[Leaf], set[str]]:
    """The leaves without those whose stamp points at a version that is gone, and the paths of the dropped ones.

    FORMAT.md §5.5: a version that is missing or unstamped (without arrays) is
    a corrupted leaf, read as debris: skipped with a :class:`DebrisWarning`
    naming it. What an open can tell without reading the version's own stamp is
    whether the version's data group is there: one batched read of each
    versioned leaf's ``{version}/{cell_order}/zarr.json`` (legacy leaves cost
    nothing). A version whose stamp alone is gone, arrays intact, is still
    served (the seed's deliberate gap). A data group missing under a stamped
    version is a malformed leaf: :class:`StampError` (one GET of that version's
    stamp, on that path only).
    """
    group = str(manifest.cell_order)
    versioned = [lf for lf in leaves if lf.versioned]
    if not versioned:
        return leaves, set()
    payloads = storage.get_many([f"{lf.prefix}/{group}/zarr.json" for lf in versioned])
    gone: set[str] = set()
    for lf, payload in zip(versioned, payloads, strict=True):
        storage.memo["group_exists", f"{lf.prefix}/{group}"] = payload is not None
        if payload is not None:
            continue
        check_missing_version(storage, lf.prefix, group)
        warn(
            f"{storage.describe(lf.ref.path)}: stamp points at version {lf.stamp['current']!r}, which is missing "
            "or unstamped (committed data removed out of band); leaf skipped",
            DebrisWarning,
        )
        gone.add(lf.ref.path)
    return [lf for lf in leaves if lf.ref.path not in gone], gone


@overload
def leaf_schema(storage: Storage, manifest: Manifest, lf: Leaf, *, missing_ok: Literal[False] = False) -> Schema: ...
@overload
def leaf_schema(storage: Storage, manifest: Manifest, lf: Leaf, *, missing_ok: bool) -> Schema | None: ...
def leaf_schema(storage: Storage, manifest: Manifest, lf: Leaf, *, missing_ok: bool = False) -> Schema | None:
    """The data group schema of one leaf, its ``cells`` extents checked against the manifest.

    None for a missing group when ``missing_ok``. Raises :class:`StampError`
    when the group is missing (else) or malformed and
    :class:`~moczarr.errors.SchemaError` for unusable array metadata.
    """
    group = str(manifest.cell_order)
    where = f"{lf.prefix}/{group}"
    schema = read_schema(storage, where, stamped_array_names(lf.stamp, group), missing_ok=missing_ok)
    if schema is not None:
        check_cells_extent(schema.arrays, lambda a: a.cells_axis, manifest.cells_per_leaf, storage.describe(where))
    return schema


def empty_selection_schema(storage: Storage, manifest: Manifest, corrupted: set[str], *, scoped: bool) -> Schema:
    """The schema of a committed leaf when a selection is empty (FORMAT.md §12): the walk's first live leaf.

    Leaves at ``corrupted`` (paths whose version :func:`first_schema` found gone) are passed over unread.

    Raises :class:`NoCoverageError` when the store has no stamped leaf at all,
    and :class:`StaleCoverageError` when an unscoped open found none through the
    root MOC although committed leaves exist.
    """
    for ref in walk_leaves(storage, manifest.shard_order, manifest.path_grouping):
        if ref.path in corrupted:
            continue
        stamp = read_stamp(storage, ref.path)
        if stamp is None:
            continue
        leaf = Leaf.admit(ref, stamp, storage.describe(ref.path), stamp)
        schema, live, _ = first_schema(storage, manifest, [leaf])
        if not live:
            continue
        assert schema is not None  # first_schema gives a schema with every non-empty list of leaves
        if not scoped:
            raise StaleCoverageError(
                f"{storage.describe()}: committed leaves exist (e.g. {ref.path}) but the root coverage.moc "
                "names none of them; the MOC is stale: rebuild it"
            )
        return schema
    raise NoCoverageError(f"{storage.describe()}: the store holds no committed (stamped) leaf")


def swapped_box_hint(shards: np.ndarray | None, place: Place | None, cell_order: int) -> str:
    """What to say when a ``BBox`` meets no data but its lon/lat swapped would meet the root coverage, else "".

    A box typed in lat/lon order is still a valid lon/lat box (elsewhere on the
    globe), so it selects nothing without an error; the root MOC's shards (no
    request: read by the open already) tell whether the swapped box would meet
    the store. Without a usable root MOC nothing is said.
    """
    box = getattr(place, "geometry", None)  # an empty selection passes no Place
    swapped = box.swapped() if isinstance(box, BBox) else None
    if swapped is None or shards is None or not shards.size:
        return ""
    cover = aoi_cover(swapped, cell_order)
    if cover is None or not meets(shards, cover).any():
        return ""
    return f"; {swapped}, its lon/lat swapped, would: BBox takes (west, south, east, north)"


def leaf_summary(leaves: list[Leaf]) -> dict:
    """What the admitted leaves' stamps say (checked when they were admitted), summarized for ``attrs``."""
    written = sorted(lf.written_at for lf in leaves if lf.written_at is not None)
    ranges = [lf.time_range for lf in leaves if lf.time_range is not None]
    out = {
        "n_leaves": len(leaves),
        "leaves": [lf.ref.decimal for lf in leaves],
        "n_versioned": sum(1 for lf in leaves if lf.versioned),
        "cells_with_data": sum(lf.cells_with_data for lf in leaves),
        "granule_count": sum(lf.granule_count for lf in leaves),
    }
    if written:
        out["written_at"] = [written[0], written[-1]]
    if ranges:
        out["time_range"] = [min(r[0] for r in ranges), max(r[1] for r in ranges)]
    return out
