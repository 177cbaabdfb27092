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
``update`` compares (:mod:`..living.record`).

Unreachable is never absent. Only a listing that succeeded says what is (or
is not) at a location: an object store's answer, or the operating system's
(``FileNotFoundError``, ``NotADirectoryError``: nothing there, or a file).
A listing that fails (denied, timed out, 5xx after the retries, any other
``OSError`` of a local folder) raises the storage layer's
:class:`~moczarr.errors.StorageError` naming the location, and a bucket that
does not exist a :class:`~moczarr.errors.StoreNotFoundError` naming the
bucket: neither is ever read as "no store here". A prefix below which the
walk finds no root is an error naming it and what is there
(:func:`discover`): no such folder, a file, an empty folder, a prefix that
holds nothing, or one that holds no store (what was skipped, and why).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from tqdm import tqdm

from moczarr.errors import ContentError, NotFoundError, StoreNotFoundError
from moczarr.metadata import (
    MANIFEST_NAME,
    Entries,
    Scanner,
    is_base_cell,
    is_product_name,
    is_remote,
    normalize_location,
    split_location,
)

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
    #: why no root was found (what is there), when the walk found none and was allowed to (``allow_empty``)
    nothing: str | None = None

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
    allow_empty: bool = False,
) -> Discovery:
    """Every store root below ``scanner``'s ``rel`` (see the module docstring); ``exclude``: locations not walked.

    ``exclude`` keeps the walk out of the catalog's own output folder when it
    lies below the prefix (stores only there count as none). Folders deeper
    than ``max_depth`` below the prefix are not listed (each is reported as
    skipped). The :class:`Discovery` holds at least one root, unless
    ``allow_empty`` (an update, which decides what an emptied prefix means):
    then a walk that succeeded and found none returns an empty one whose
    :attr:`Discovery.nothing` says what is there. Raises
    :class:`~moczarr.errors.NotFoundError` when the prefix is no folder, an
    empty one or (object stores) holds nothing, or its bucket does not exist;
    :class:`~moczarr.errors.ContentError` when it holds no store (naming what
    was skipped); the storage layer's errors when a listing fails.
    """
    excluded = {normalize_location(e) for e in exclude}
    walk = _Walk(scanner, excluded)
    with tqdm(desc="discover", unit="folder", disable=not progress, file=sys.stderr) as bar:
        top = walk.list_entries([rel])[0]
        level = [(rel, top)]
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
    found = Discovery(scanner.url(rel), walk.found, walk.skipped, walk.lists)
    if not found.found:
        error = _nothing_below(scanner, rel, top, found, walk.passed)
        if not allow_empty:
            raise error
        found.nothing = str(error)
    return found


def _nothing_below(scanner: Scanner, rel: str, top: Entries, found: Discovery, passed: list[str]) -> Exception:
    """The error of a prefix below which no root was found: what is there, as its listing (``top``) shows it."""
    where = found.prefix
    if top.folders or top.objects:
        return ContentError(f"{where}: holds no store ({_why_none(found, passed)}); nothing to catalog below it")
    remote = is_remote(where)
    walks = f"discovery walks the {'prefix' if remote else 'folder'} holding the stores"
    if not remote:
        if not os.path.lexists(where):
            return NotFoundError(f"{where}: no such folder; {walks} (was it moved?)")
        if not os.path.isdir(where):
            return NotFoundError(f"{where}: a file, not a folder; {walks}")
        return NotFoundError(f"{where}: an empty folder; no store to discover there")
    parent, _, name = rel.strip("/").rpartition("/")
    if name and name in _listed(scanner, [parent])[0].objects:
        return NotFoundError(f"{where}: an object, not a folder; {walks}")
    return NotFoundError(f"{where}: holds nothing (no object below this prefix); {walks} (was it moved?)")


#: locations named per reason of :func:`_why_none` (the rest counted)
EXAMPLES = 2


def _why_none(found: Discovery, passed: list[str]) -> str:
    """What a walk that found no root met: each skip reason with a count and examples, the folders not walked."""
    by_reason: dict[str, list[str]] = {}
    for location, why in found.skipped:
        by_reason.setdefault(why, []).append(location)
    parts = [
        f"{len(locations)} {why}: " + ", ".join(locations[:EXAMPLES]) + (", ..." if len(locations) > EXAMPLES else "")
        for why, locations in sorted(by_reason.items())
    ]
    text = f"skipped {'; '.join(parts)}" if parts else ""
    if passed:
        text += ("; " if text else "") + "not walked (the catalog's own output): " + ", ".join(passed)
    return text or f"{found.lists} folder(s) listed, none a store root or a moraine pyramid"


def _listed(scanner: Scanner, rels: list[str]) -> list[Entries]:
    """``scanner.list_entries(rels)``; a bucket that does not exist is named as such, not as a missing root."""
    try:
        return scanner.list_entries(rels)
    except StoreNotFoundError as exc:
        if not is_remote(scanner.location):
            raise
        bucket = split_location(scanner.location)[0]
        listing = f" (listing {scanner.url(rels[0])})" if len(rels) == 1 else ""
        raise StoreNotFoundError(
            f"{bucket}: no such bucket{listing}; check the bucket's name and the endpoint (--endpoint-url)"
        ) from exc


class _Walk:
    """The state of one discovery walk: what was found and skipped, and the LISTs made."""

    def __init__(self, scanner: Scanner, excluded: set[str]):
        self.scanner, self.excluded = scanner, excluded
        self.found: list[Found] = []
        self.skipped: list[tuple[str, str]] = []
        self.lists = 0
        self.pyramids: list[tuple[Found, str]] = []
        self.pending: dict[str, Entries] = {}  # walked folders: multi-product roots once their children are listed
        self.passed: list[str] = []  # excluded folders met, not walked

    def list_entries(self, rels: list[str]) -> list[Entries]:
        self.lists += len(rels)
        return _listed(self.scanner, rels)

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
                for name in entries.folders:
                    if (url := self.scanner.url(_join(rel, name))) in self.excluded:
                        self.passed.append(url)
                    else:
                        folders.append(_join(rel, name))
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
    root). None only when listings that succeeded show no root (nothing
    there, a file, a folder holding no store): the reader, given it, then
    names what is missing. A listing that fails raises (module docstring).
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
