"""One product under check: what every pass reads from and reports to, and the leaf records they share.

A product's checks are split by pass (the shallow pass, the pyramid levels,
the lost-stamp evidence, the deep pass and its sidecars); each is a class over
:class:`ProductState`, which holds the product's storage, manifest and scope,
what the walk and the level checks learned for the later passes, and the one
way a finding is added (keyed relative to the root the report is about).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import ids
from ..format.manifest import Manifest
from ..format.stamps import LeafRef
from ..storage import Storage
from ._findings import VerifyReport


@dataclass
class StampedLeaf:
    """A walked leaf with a root stamp: the stamp, where its arrays are, and whether its data is served."""

    ref: LeafRef
    stamp: dict
    prefix: str  # where its arrays are
    live: bool = True  # False when the version it points at is missing or unstamped


class ProductState:
    """One product being checked (a complete morton-hive store): its scope, what the passes learned, its findings."""

    def __init__(
        self,
        report: VerifyReport,
        storage: Storage,
        prefix: str,
        manifest: Manifest,
        window: str | None,
        deep: bool,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.report, self.storage, self.prefix, self.m = report, storage, prefix, manifest
        # window= scopes windowed products and leaves unwindowed ones whole, as open_store does
        self.window = window if manifest.windowed else None
        self.deep, self.progress = deep, progress
        self.windows: set[str] = set()  # the windows the walk found leaves of (every window, before scoping)
        self.group = str(manifest.cell_order)
        self.stamped: list[LeafRef] = []  # every leaf with a root stamp, damaged or not
        self.unstamped: list[LeafRef] = []  # leaf prefixes without a root stamp: debris, or a lost stamp
        self.all_refs: list[LeafRef] = []  # every readable leaf prefix of the walk, in every window
        self.overview_paths: dict[str, tuple[int, int]] = {}  # admitted overview -> (node order, cell order)
        self.overview_counts: dict[str, np.ndarray | None] = {}  # an overview's decoded count array, once read

    def add(self, kind: str, severity: str, rel: str, message: str) -> None:
        self.report.add(kind, severity, self.prefix + rel, message)

    def tick(self, checked: int, found: int) -> None:
        if self.progress:
            self.progress(checked, found)

    def count(self, key: str, n: int = 1) -> None:
        self.report.counts[key] += n


def object_of(message: str, storage: Storage) -> str:
    """The store-relative key a reader message starts with (``{location}/{key}: ...``), else ``""``."""
    head = message.split(": ", 1)[0]
    base = storage.location.rstrip("/") + "/"
    return head[len(base) :] if head.startswith(base) else ""


def word_of(ref: LeafRef) -> int:
    """A walked leaf's packed word (the walk records it; computed for a ref made elsewhere)."""
    return int(ids.to_words(ref.decimal)[0]) if ref.word is None else int(ref.word)


def sidecar_keys(ref: LeafRef) -> tuple[str, str]:
    """The D20 stats record and the granule-id list of a leaf: siblings of its stable root."""
    node = ref.path.rpartition("/")[0]
    suffix = "" if ref.window is None else f"_{ref.window}"
    return f"{node}/stats{suffix}.json", f"{node}/granules{suffix}.json"
