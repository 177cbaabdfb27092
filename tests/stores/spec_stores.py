"""The stores of the generated layer that zagg's point pipeline cannot write, written by :mod:`moczarr.testing`.

``spec/raster_toc`` (FORMAT.md §10.2-§10.3: a raster leaf with a toc time
coordinate and ``(time, cells)`` bands) comes from
:func:`moczarr.testing.raster.write_raster_toc_store`; its
``spec/raster_toc.expected.json`` is what that writer computes from its inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

from moczarr.testing.raster import write_raster_toc_store

#: The names this module writes, as ``../shared/fixtures`` names them.
STORES = ("spec/raster_toc",)


def write_all(out: Path) -> None:
    """Write every store of :data:`STORES` (and its expected values) under ``out``."""
    expected = write_raster_toc_store(out / "spec" / "raster_toc", seed=7)
    (out / "spec" / "raster_toc.expected.json").write_text(json.dumps(expected, indent=1) + "\n")
