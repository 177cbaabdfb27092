"""The pyramid declaration and the resolution table it implies (FORMAT.md §7.2, §7.6).

Pure records from the manifest, no I/O beyond reading a manifest when handed
a store root: which levels exist is what the manifest's ``pyramid`` block
says (never a listing, never ``multiscales``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..errors import PyramidError
from .manifest import Manifest
from .roster import read_manifest

OVERVIEW_SPECS = ("zagg-overview/1", "zagg-overview/2")
COLUMN_SPECS = ("zagg-column/1",)


def _as_manifest(manifest) -> Manifest:
    """A :class:`Manifest` as given, or the manifest of a store root (path, URL or Storage)."""
    if isinstance(manifest, Manifest):
        return manifest
    return read_manifest(manifest)


@dataclass(frozen=True)
class PyramidDeclaration:
    """A validated ``pyramid`` block, one shape for both grammars (FORMAT.md §7.2, §7.6).

    ``cell_orders`` maps each declared ancestor node order to the cell orders
    its artifacts hold (``/1``: one, at constant depth; ``/2``: the ladder);
    ``leaf_cells`` are the ``/2`` column resolutions carried by the leaves.
    Item access (``decl["spec"]``) is kept for one release for code written
    against the former dict record.
    """

    spec: str
    orders: list[int]
    cell_orders: dict[int, list[int]]
    leaf_cells: list[int] | None
    spacing: Any
    overviews: list | None
    all_time: bool
    fold_source: str
    exact_levels: Any
    fields: dict
    materialized: Any

    def __getitem__(self, key: str):
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def __eq__(self, other) -> bool:
        if isinstance(other, dict):
            return self.as_dict() == other
        return isinstance(other, PyramidDeclaration) and self.as_dict() == other.as_dict()

    def as_dict(self) -> dict:
        """The record as a plain dict (integer ``cell_orders`` keys)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_attrs(self) -> dict:
        """The record as JSON-safe attrs (string ``cell_orders`` keys, so it survives a JSON round trip)."""
        out = self.as_dict()
        out["cell_orders"] = {str(k): v for k, v in self.cell_orders.items()}
        return out


def pyramid_declaration(manifest: Manifest) -> PyramidDeclaration | None:
    """The normalized ``pyramid`` record of a manifest (FORMAT.md §7.2), or None when declared off.

    ``manifest`` is a :class:`~moczarr.format.manifest.Manifest` or a store root.

    Raises :class:`PyramidError` for an unknown ``spec``, a ``/1`` block with
    orders but without ``spacing``/``all_time``/``fields`` (or without its
    spec), an ancestor order outside ``0..shard_order-1``, or a malformed ``/2``
    ladder.
    """
    manifest = _as_manifest(manifest)
    block = manifest.pyramid
    where = f"{manifest.location}: pyramid"
    if not isinstance(block, dict):
        return None
    spec = block.get("spec")
    s, c = manifest.shard_order, manifest.cell_order
    if spec == "zagg-pyramid/2":
        return _declaration_v2(block, s, c, where)
    if spec is not None and spec != "zagg-pyramid/1":
        raise PyramidError(f"{where}: unknown spec {spec!r} (this reader knows zagg-pyramid/1 and /2)")
    overview = block.get("overview")
    if not isinstance(overview, dict) or not overview.get("orders"):
        return None
    if spec != "zagg-pyramid/1":
        raise PyramidError(f"{where}: a block declaring orders must carry spec 'zagg-pyramid/1'")
    for key in ("spacing", "all_time", "fields"):
        if key not in overview:
            raise PyramidError(f"{where}: overview block lacks {key!r}")
    orders = overview["orders"]
    if not isinstance(orders, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in orders):
        raise PyramidError(f"{where}: overview.orders must be a list of integers, got {orders!r}")
    for k in orders:
        if not 0 <= k < s:
            raise PyramidError(f"{where}: overview order {k} is outside 0..{s - 1} (shard order {s})")
    orders = sorted(set(orders), reverse=True)
    return PyramidDeclaration(
        spec="zagg-pyramid/1",
        orders=orders,
        cell_orders={k: [c - (s - k)] for k in orders},
        leaf_cells=None,
        spacing=overview["spacing"],
        overviews=None,
        all_time=bool(overview["all_time"]),
        fold_source=overview.get("fold_source", "leaves"),
        exact_levels=overview.get("exact_levels"),
        fields=overview["fields"],
        materialized=overview.get("materialized"),
    )


def _declaration_v2(block: dict, s: int, c: int, where: str) -> PyramidDeclaration:
    entries = block.get("overviews")
    family = block.get("overview")
    if not isinstance(entries, list) or not entries:
        raise PyramidError(f"{where}: zagg-pyramid/2 needs a non-empty 'overviews' list")
    if not isinstance(family, dict) or "all_time" not in family or "fields" not in family:
        raise PyramidError(f"{where}: zagg-pyramid/2 needs an 'overview' block with 'all_time' and 'fields'")
    cell_orders: dict[int, list[int]] = {}
    leaf_cells = None
    for entry in entries:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("node"), int)
            or not isinstance(entry.get("cells"), list)
        ):
            raise PyramidError(f"{where}: ladder entry {entry!r} needs an integer 'node' and a 'cells' list")
        k, cells = entry["node"], entry["cells"]
        if not 0 <= k <= s:
            raise PyramidError(f"{where}: ladder node {k} is outside 0..{s}")
        if k in cell_orders or (k == s and leaf_cells is not None):
            raise PyramidError(f"{where}: ladder node {k} appears twice")
        for r in cells:
            if not isinstance(r, int) or not k < r < c:
                raise PyramidError(f"{where}: ladder node {k} member {r!r} must satisfy {k} < r < {c}")
        if k == s:
            if cells != sorted(cells, reverse=True) or len(set(cells)) != len(cells):
                raise PyramidError(f"{where}: leaf entry cells {cells} must be strictly descending")
            leaf_cells = list(cells)
        else:
            cell_orders[k] = list(cells)
    return PyramidDeclaration(
        spec="zagg-pyramid/2",
        orders=sorted(cell_orders, reverse=True),
        cell_orders=cell_orders,
        leaf_cells=leaf_cells,
        spacing=None,
        overviews=entries,
        all_time=bool(family["all_time"]),
        fold_source=family.get("fold_source", "leaves"),
        exact_levels=family.get("exact_levels"),
        fields=family["fields"],
        materialized=family.get("materialized"),
    )


@dataclass(frozen=True)
class Level:
    """One addressable resolution: its cell order, the node order of its artifacts, and their kind."""

    cell_order: int
    node_order: int
    artifact: str  # "source" | "column" | "overview"

    def record(self) -> dict:
        return {"cell_order": self.cell_order, "order": self.node_order, "artifact": self.artifact}


def pyramid_levels(manifest: Manifest) -> list[Level]:
    """The resolution table (FORMAT.md §7.6): one level per addressable cell order, finest first.

    ``manifest`` is a :class:`~moczarr.format.manifest.Manifest` or a store root.
    Raises :class:`PyramidError` when one resolution is declared at two levels.
    """
    manifest = _as_manifest(manifest)
    levels = {manifest.cell_order: Level(manifest.cell_order, manifest.shard_order, "source")}
    decl = pyramid_declaration(manifest)
    if decl:
        for r in decl.leaf_cells or []:
            levels[r] = Level(r, manifest.shard_order, "column")
        for k, cells in decl.cell_orders.items():
            for r in cells:
                if r in levels:
                    raise PyramidError(f"{manifest.location}: cell order {r} is declared at two levels")
                levels[r] = Level(r, k, "overview")
    return [levels[r] for r in sorted(levels, reverse=True)]


__all__ = ["COLUMN_SPECS", "OVERVIEW_SPECS", "Level", "PyramidDeclaration", "pyramid_declaration", "pyramid_levels"]
