"""Find the store roots below a folder or a bucket prefix: morton-hive stores and moraine pyramids.

The walk lists folders level by level (each level's folders in one concurrent
batch of delimiter-LISTs through one :class:`~moczarr.metadata.Scanner`) and
stops descending where a root is recognised by what its listing shows:

- a folder holding ``morton_hive.json`` is a bare store root;
- a folder without one is a multi-product root (FORMAT.md §3: a directory of
  stores) when two or more of its child folders are products (product-named,
  holding a manifest) and its other child folders hold no folders (notes, like
  the format's ``scratch/``). One product alone is not told apart from a
  folder holding one store: it is found as that bare store (given as a root,
  such a folder is read as the reader reads it, as a multi-product root);
- a folder holding ``0.zarr`` is a moraine pyramid (recognised by content when it is read);
- a folder holding base-cell folders (``-?[1-6]``) and no manifest is a store
  whose manifest has not landed yet: skipped, and its digit tree is never entered;
- a folder holding ``zarr.json`` (or ``.zgroup``/``.zarray``) is some other
  zarr hierarchy: skipped, never entered.

So the LISTs are bounded by the folders above and at the roots (one per
folder, plus one per product of a multi-product root, plus one of each
pyramid's ``0.zarr``), never by the leaves. Each root's listings are kept:
they hold the version tags (ETags) of its manifest and root MOC, what a later
``update`` compares (:mod:`.record`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from tqdm import tqdm

from moczarr.metadata import MANIFEST_NAME, Entries, Scanner, is_base_cell, is_product_name, normalize_location

HIVE, MORAINE = "morton-hive", "moraine"
#: folders below the prefix the walk descends at most (a bound on the LISTs of a bucket holding other data)
MAX_DEPTH = 8
#: objects that mark a zarr hierarchy (a group or an array): never a store root, never entered
ZARR_MARKERS = ("zarr.json", ".zgroup", ".zarray")
PYRAMID_BASE = "0.zarr"


@dataclass
class Found:
    """One store root: its location, its kind, and the listings that identify its state.

    ``listings``: ``""`` -> the root's own entries; for a multi-product root
    also each product's (by name); for a moraine pyramid ``"0.zarr"``'s.
    """

    root: str
    kind: str
    listings: dict[str, Entries] = field(default_factory=dict)
    discovered: bool = True  #: found below a prefix (False: a root given as such)

    @property
    def layout(self) -> str:
        """``"bare"``, ``"multi"`` (hive roots) or ``"pyramid"``."""
        if self.kind == MORAINE:
            return "pyramid"
        return "bare" if MANIFEST_NAME in self.listings[""].objects else "multi"


@dataclass
class Discovery:
    """What a walk found below ``prefix``: roots (sorted by location), what it skipped and why, its LIST count."""

    prefix: str
    found: list[Found]
    skipped: list[tuple[str, str]]
    lists: int

    def summary(self) -> str:
        """One line: the roots found by kind and layout, the LISTs, and what was skipped (by reason)."""
        hive = [f for f in self.found if f.kind == HIVE]
        multi = sum(f.layout == "multi" for f in hive)
        moraine = len(self.found) - len(hive)
        parts = [f"{len(hive)} morton-hive store root(s)" + (f" ({multi} multi-product)" if multi else "")]
        parts.append(f"{moraine} moraine pyramid(s)")
        line = f"discovered {', '.join(parts)} below {self.prefix} in {self.lists} LIST(s)"
        if self.skipped:
            reasons: dict[str, int] = {}
            for _, why in self.skipped:
                reasons[why] = reasons.get(why, 0) + 1
            line += f"; skipped {len(self.skipped)}: " + ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
        return line


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def _stop(entries: Entries) -> str | None:
    """Why the walk stops at a folder that is no root (None: walk on)."""
    if any(m in entries.objects or m in entries.folders for m in ZARR_MARKERS):
        return "zarr hierarchies (not stores)"
    if any(is_base_cell(name) for name in entries.folders):
        return "digit trees without a manifest (a store still being written?)"
    return None


def discover(
    scanner: Scanner,
    rel: str = "",
    *,
    exclude: Iterable[str] = (),
    max_depth: int = MAX_DEPTH,
    progress: bool = False,
) -> Discovery:
    """Every store root below ``scanner``'s ``rel`` (see the module docstring); ``exclude``: locations not walked.

    ``exclude`` keeps the walk out of the catalog's own output folder when it
    lies below the prefix. Folders deeper than ``max_depth`` below the prefix
    are not listed (each is reported as skipped). Raises the storage layer's
    errors when a listing fails.
    """
    excluded = {normalize_location(e) for e in exclude}
    walk = _Walk(scanner, excluded)
    with tqdm(desc="discover", unit="folder", disable=not progress, file=sys.stderr) as bar:
        level = list(zip([rel], walk.list_entries([rel]), strict=True))
        depth = 0
        while level:
            bar.update(len(level))
            folders = walk.classify(level)
            if folders and depth >= max_depth:
                walk.skipped += [(scanner.url(f), f"folders deeper than {max_depth} levels") for f in folders]
                folders = []
            level = walk.fold_multi(folders)
            depth += 1
            bar.set_postfix_str(f"{len(walk.found)} found")
        walk.list_pyramid_bases()
    walk.found.sort(key=lambda f: f.root)
    return Discovery(scanner.url(rel), walk.found, walk.skipped, walk.lists)


class _Walk:
    """The state of one discovery walk: what was found and skipped, and the LISTs made."""

    def __init__(self, scanner: Scanner, excluded: set[str]):
        self.scanner, self.excluded = scanner, excluded
        self.found: list[Found] = []
        self.skipped: list[tuple[str, str]] = []
        self.lists = 0
        self.pyramids: list[tuple[Found, str]] = []
        self.pending: dict[str, Entries] = {}  # walked folders: multi-product roots once their children are listed

    def list_entries(self, rels: list[str]) -> list[Entries]:
        self.lists += len(rels)
        return self.scanner.list_entries(rels)

    def classify(self, level: list[tuple[str, Entries]]) -> list[str]:
        """Record the roots of a listed level; return the child folders to list next."""
        folders: list[str] = []
        for rel, entries in level:
            location = self.scanner.url(rel)
            if MANIFEST_NAME in entries.objects:
                self.found.append(Found(location, HIVE, {"": entries}))
            elif PYRAMID_BASE in entries.folders:
                self.found.append(Found(location, MORAINE, {"": entries}))
                self.pyramids.append((self.found[-1], _join(rel, PYRAMID_BASE)))
            elif why := _stop(entries):
                self.skipped.append((location, why))
            else:
                self.pending[rel] = entries
                folders += [
                    _join(rel, name)
                    for name in entries.folders
                    if self.scanner.url(_join(rel, name)) not in self.excluded
                ]
        return folders

    def fold_multi(self, folders: list[str]) -> list[tuple[str, Entries]]:
        """List ``folders``; a parent whose product-named children hold manifests becomes a multi-product root.

        Returns the rest of the listed folders, to be classified as the next level.
        """
        listed = dict(zip(folders, self.list_entries(folders), strict=True))
        by_parent: dict[str, list[str]] = {}
        for rel in folders:
            parent, _, name = rel.rpartition("/")
            by_parent.setdefault(parent, []).append(name)
        rest: list[tuple[str, Entries]] = []
        for parent, names in by_parent.items():
            products = [n for n in names if is_product_name(n) and MANIFEST_NAME in listed[_join(parent, n)].objects]
            others = [n for n in names if n not in products]
            if len(products) >= 2 and not any(listed[_join(parent, n)].folders for n in others):
                listings = {"": self.pending[parent], **{n: listed[_join(parent, n)] for n in products}}
                self.found.append(Found(self.scanner.url(parent), HIVE, listings))
            else:  # the stores among them are bare store roots; the other folders are walked on
                rest += [(_join(parent, n), listed[_join(parent, n)]) for n in names]
        return rest

    def list_pyramid_bases(self) -> None:
        """List each pyramid's ``0.zarr``: the marker lives in its metadata, so its version tag is part of the state."""
        if self.pyramids:
            for (found, _), entries in zip(
                self.pyramids, self.list_entries([r for _, r in self.pyramids]), strict=True
            ):
                found.listings[PYRAMID_BASE] = entries


def probe(scanner: Scanner, rel: str = "") -> Found | None:
    """The root at ``rel`` as its listings show it (the roots given on the command line), or None.

    One LIST of the root; a moraine pyramid adds one of its ``0.zarr``, a
    root without a manifest one per product-named child (a multi-product
    root). None when the listings show no root: the reader, given it,
    then names what is missing.
    """
    walk = _Walk(scanner, set())
    entries = walk.list_entries([rel])[0]
    if MANIFEST_NAME in entries.objects:
        return Found(scanner.url(rel), HIVE, {"": entries}, discovered=False)
    if PYRAMID_BASE in entries.folders:
        found = Found(scanner.url(rel), MORAINE, {"": entries}, discovered=False)
        found.listings[PYRAMID_BASE] = walk.list_entries([_join(rel, PYRAMID_BASE)])[0]
        return found
    names = [n for n in entries.folders if is_product_name(n)]
    listed = zip(names, walk.list_entries([_join(rel, n) for n in names]), strict=True)
    products = {n: e for n, e in listed if MANIFEST_NAME in e.objects}
    return Found(scanner.url(rel), HIVE, {"": entries, **products}, discovered=False) if products else None
