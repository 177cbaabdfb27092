"""The product's declared pyramid levels, each opened through the reader's own level opener.

What an open of a level refuses, drops or never finds is reported per level;
the admitted overviews and columns are returned for the deep pass, and the
overviews kept for the lost-stamp evidence (their ``count`` arrays).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from .. import ids
from ..errors import MoczarrError, ObjectDroppedWarning, PyramidError
from ..format.declaration import Level, pyramid_declaration, pyramid_levels
from ..format.manifest import MANIFEST_NAME
from ..format.stamps import LeafRef
from ..ids import ALL_TOKEN
from ..openers.pyramid import open_level_or_omit
from ._product import ProductState, object_of


class PyramidChecks(ProductState):
    """The declared derived levels (overviews, columns) of one product, as readers open them."""

    def _levels(self) -> list[Level]:
        """The declared derived levels; none when the product declares no pyramid or a malformed one (reported)."""
        try:
            if pyramid_declaration(self.m) is None:
                return []
            return [lv for lv in pyramid_levels(self.m) if lv.artifact != "source"]
        except PyramidError as exc:
            self.add("pyramid-invalid", "error", MANIFEST_NAME, str(exc))
            return []

    def _pyramid(self, levels: list[Level], moc_usable: bool, refs: list[LeafRef]) -> list[str]:
        """Every declared derived level through the reader's level opener; returns the admitted objects' paths."""
        decl = pyramid_declaration(self.m)
        windows: Sequence[str | None]
        if self.m.windowed:
            windows = [self.window] if self.window else sorted({r.window for r in refs if r.window})
        else:
            windows = [None]
        derived: list[str] = []
        for level in levels:
            name = f"o{level.cell_order} ({level.artifact} at node order {level.node_order})"
            if not self._enumerable(level, name, moc_usable):
                continue
            scopes = [(w, False) for w in windows]
            has_folds = decl is not None and decl.all_time
            if level.artifact == "overview" and self.m.windowed and has_folds and self.window is None:
                scopes.append((None, True))
            found = 0
            for w, all_time in scopes:
                found += self._open_scope(level, w, all_time, derived)
            if not found:
                self.add(
                    "level-unswept",
                    "warning",
                    MANIFEST_NAME,
                    f"declared level {name} has no stamped object in any window: "
                    "never swept (or deleted); readers omit it",
                )
        return sorted(set(derived))

    def _enumerable(self, level: Level, name: str, moc_usable: bool) -> bool:
        """Whether readers can name the level's objects at all; a ``level-unenumerable`` warning when not."""
        if not moc_usable:
            self.add(
                "level-unenumerable",
                "warning",
                MANIFEST_NAME,
                f"declared level {name} cannot be enumerated without a usable root coverage.moc; readers omit it",
            )
            return False
        if level.artifact == "overview" and self.m.path_grouping > 1:
            self.add(
                "level-unenumerable",
                "warning",
                MANIFEST_NAME,
                f"declared level {name}: path_grouping {self.m.path_grouping} > 1 leaves overview nodes unnamed",
            )
            return False
        return True

    def _open_scope(self, level: Level, window: str | None, all_time: bool, derived: list[str]) -> int:
        """Open one window of a level (or its all-time folds) as a reader does; report what the open refuses or drops.

        Appends the paths of the objects the open admits to ``derived`` (and
        an overview's to :attr:`overview_paths`); returns how many objects it
        found, admitted, dropped or refused.
        """
        stem = ALL_TOKEN if (all_time or window is None) else window
        found = 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                ds = open_level_or_omit(self.storage, self.m, level.cell_order, window, None, all_time)
            except PyramidError as exc:
                self.add(
                    f"{level.artifact}-refused",
                    "error",
                    object_of(str(exc), self.storage) or MANIFEST_NAME,
                    f"{exc} (readers refuse the whole level)",
                )
                found += 1  # objects exist, they are wrong
                ds = None
            except MoczarrError as exc:  # an unparsable stamp, a broken array contract: the open raises
                self.add(
                    f"{level.artifact}-unreadable",
                    "error",
                    object_of(str(exc), self.storage) or MANIFEST_NAME,
                    f"{exc} (opening the level raises)",
                )
                found += 1
                ds = None
        # the opener's other warnings (level omitted, walk fallback) are what level-unswept reports
        for c in caught:
            if issubclass(c.category, ObjectDroppedWarning):
                msg = str(c.message)
                self.add(f"{level.artifact}-dropped", "warning", object_of(msg, self.storage), msg)
                found += 1
        if ds is None:
            return found
        for entry in ds.attrs.get("zagg_objects") or []:
            found += 1
            node = entry["node"]
            if level.artifact == "overview":
                path = f"{ids.ancestor_node(node)}/{stem}.zarr"
            else:
                path = f"{ids.hive_node(node, self.m.path_grouping)}/{stem}.pyramid.zarr"
            self.count("overviews" if level.artifact == "overview" else "columns")
            derived.append(path)
            if level.artifact == "overview":
                self.overview_paths[path] = (level.node_order, level.cell_order)
        return found
