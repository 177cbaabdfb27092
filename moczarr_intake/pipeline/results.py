"""What the catalog's library functions return: what was written, read, added, removed, changed, degraded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..living.outstore import Uploaded
from ..living.refresh import ById, Refresh, Renamed
from ..pgstac.publish import PublishResult

if TYPE_CHECKING:
    from moczarr.metadata import StoreSummary
    from moczarr.moraine import MorainePyramid

    from ..model.entries import CatalogEntries

__all__ = ["BuildResult", "ById", "PublishResult", "Refresh", "Renamed", "UpdateResult", "Uploaded"]


@dataclass
class BuildResult:
    """What :func:`~moczarr_intake.build` wrote: where its documents are (paths of a local catalog, URLs of an
    object-store one), what it read, and the notes."""

    #: the Intake catalog (``version: 1`` drivers)
    intake: Path | str
    #: the Intake catalog (``version: 2`` readers)
    intake_v2: Path | str
    #: the STAC root, ``stac/catalog.json``
    stac: Path | str
    #: one line per discovery walk, per product left out or degraded (naming why), per distinct reader warning,
    #: about machine-local hrefs, withheld storage options and STAC API outputs not written
    notes: list[str] = field(default_factory=list)
    #: the stores' summaries and the moraine pyramids read
    summaries: list[StoreSummary] = field(default_factory=list)
    moraine: list[MorainePyramid] = field(default_factory=list)
    #: the products and pyramids as named in the catalog (ids and entry names)
    entries: CatalogEntries | None = None
    #: the STAC API outputs: stac-geoparquet files and Collection documents
    api_items: list[Path | str] = field(default_factory=list)
    api_collections: list[Path | str] = field(default_factory=list)
    #: for an object-store output: documents written, unchanged and deleted (None: a local folder)
    uploaded: Uploaded | None = None

    @property
    def degraded(self) -> list[str]:
        """The notes naming a product left out or degraded (``degraded: WHERE: why``)."""
        return [n for n in self.notes if n.startswith("degraded: ")]


@dataclass
class UpdateResult(BuildResult):
    """What :func:`~moczarr_intake.update` did: the build's result (its documents, when it wrote any), what it read
    again (:class:`Refresh`, by product location) and the report by id (:class:`ById`)."""

    #: False when the catalog was as the stores are and nothing was written (then no STAC API output is listed)
    written: bool = True
    refresh: Refresh = field(default_factory=lambda: Refresh([], [], [], 0))
    by_id: ById = field(default_factory=lambda: ById([], [], [], []))
