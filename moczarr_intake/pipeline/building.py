"""The build a caller runs: its options checked, then into a local folder (:mod:`.local`) or, staged, to object
storage (:mod:`.upload`)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.options import BuildOptions
from .local import build_into
from .pacing import fewer_collections
from .results import BuildResult

if TYPE_CHECKING:
    from ..roots.scan import Reading


def build(
    roots: list[str], out: str | os.PathLike, options: BuildOptions | None = None, *, progress: bool = False, **changes
) -> BuildResult:
    """Summarize every root, write STAC and both Intake YAML flavours under ``out``; returns what was written.

    ``out``: a local folder, or an object-store URL (``s3://bucket/cat``): the
    catalog is then staged locally and uploaded (:mod:`.upload`).
    ``options``: :class:`~moczarr_intake.model.options.BuildOptions`;
    ``changes``: fields of it laid over ``options`` (``build(roots, out,
    href_base=URL)``). ``progress``: progress bars on stderr.

    Every option is checked first (:meth:`BuildOptions.checked`), before
    anything is read: ``href_base`` and ``catalog_url`` absolute http(s), s3,
    gs or az URLs, ``license`` an SPDX license identifier or an http(s) URL,
    ``out`` a folder outside every store; each refusal is an
    :class:`~moczarr.errors.ArgumentError` naming the flag. Store addresses
    follow :class:`~moczarr_intake.model.hrefs.HrefPolicy`: with ``href_base``
    every local store is ``href_base`` joined with its path relative to
    ``stores_root`` (default the roots' common parent); without it, stores
    inside ``out`` are relative, URLs as given, others absolute paths of this
    machine (reported in the notes). ``catalog_url``: the URL ``out`` will be
    published at (absolute self links, RELATIVE_PUBLISHED). Of
    ``storage_options`` only where and how to reach the data is written
    (:mod:`moczarr_intake.model.access`): never a credential. The STAC API outputs
    are written only when no document would name a path of this machine.
    Everything is written to a temporary sibling of ``out`` and moved in at the
    end, holding the catalog's lock (:mod:`moczarr_intake.living.lock`), so a
    failed build leaves ``out`` as it was.

    The result's ``notes``: one line per product left out as damaged or
    degraded (naming why), per distinct reader warning, about machine-local
    hrefs, withheld storage options and STAC API outputs not written. With
    ``strict`` any degrade raises
    :class:`~moczarr_intake.errors.DegradedBuildError` before anything is
    written. Products a build record at ``out`` names keep their ids and
    entry names; raises :class:`~moczarr.errors.ContentError` when nothing is
    left to catalog.
    """
    options = dataclasses.replace(options or BuildOptions(), **changes).checked()
    return run_build(roots, out, options, progress=progress)


@fewer_collections()
def run_build(
    roots, out, options: BuildOptions, *, progress: bool, reading: Reading | None = None, previous=None
) -> BuildResult:
    """:func:`build` with checked ``options``; ``reading``: the roots' facts when the caller has them (an update's),
    ``previous``: the build record of the catalog at ``out`` this build replaces (else the one there is read):
    when its roots, products and options are this build's, the products whose facts are unchanged keep their
    documents (:mod:`~moczarr_intake.living.reuse`)."""
    from moczarr.metadata import is_remote  # the reader loads once the arguments are known to be good

    if is_remote(os.fspath(out)):
        from .upload import upload

        return upload(roots, os.fspath(out), options, progress=progress, reading=reading, previous=previous)
    return build_into(roots, Path(out), options, progress=progress, reading=reading, previous=previous)
