"""A build to object storage: staged in a temporary local folder under the catalog's lock, then written in the
order of :mod:`~moczarr_intake.living.outstore` (a step of the build, after the local write)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from moczarr.metadata import Writer, normalize_location

from ..living.lock import catalog_lock, staging_prefix
from ..living.outstore import previous_record, write_tree
from ..model.options import BuildOptions
from .local import build_into
from .results import BuildResult

if TYPE_CHECKING:
    from ..living.record import BuildRecord
    from ..roots.scan import Reading


def upload(
    roots,
    out: str,
    options: BuildOptions,
    *,
    progress: bool,
    reading: Reading | None = None,
    previous: BuildRecord | None = None,
) -> BuildResult:
    """The build staged locally (:func:`~.local.build_into`) then written to ``out``
    (:func:`~..living.outstore.write_tree`); returns the build's result with URLs and what was uploaded.

    ``options.catalog_url`` defaults to ``out`` itself: the STAC root's self
    link is the URL it is written to, and every href below it is relative to
    it. ``previous`` (an update's) is the record at ``out``; else it is read
    there. The whole run holds the catalog's lock at ``out``.
    """
    out = normalize_location(out)
    options = dataclasses.replace(options, catalog_url=options.catalog_url or out).checked()
    writer = Writer(out, options.storage_options)
    with catalog_lock(out, options.storage_options, "build") as lock:
        if lock.journal or lock.unsettled:  # keys a killed run left unknown: every document is staged and compared
            previous = None
        before = previous or previous_record(writer)
        with tempfile.TemporaryDirectory(prefix=staging_prefix(lock.token)) as tmp:
            staged = Path(tmp) / "out"
            written = build_into(
                roots, staged, options, progress=progress, reading=reading, previous=previous, out_location=out
            )
            uploaded = write_tree(staged, writer, before, lock)
    return dataclasses.replace(_as_urls(written, staged, out), uploaded=uploaded)


def _as_urls(written: BuildResult, staged: Path, out: str) -> BuildResult:
    """The build's result with the staged paths spelled as the output URL."""

    def url(value: Path | str) -> Path | str:
        if isinstance(value, Path) and value.is_relative_to(staged):
            return f"{out}/{value.relative_to(staged).as_posix()}"
        return value

    return dataclasses.replace(
        written,
        intake=url(written.intake),
        intake_v2=url(written.intake_v2),
        stac=url(written.stac),
        api_items=[url(v) for v in written.api_items],
        api_collections=[url(v) for v in written.api_collections],
    )
