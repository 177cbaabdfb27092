"""Catalog moraine pyramids: Intake sources and YAML entries (their STAC Items: :mod:`.stac.moraine`).

- ``moraine_level`` (:class:`MoraineLevelSource`): one level of a pyramid,
  ``to_dask()`` lazy / ``read()`` loaded, via :func:`moczarr.moraine.open_moraine_level`.
- ``moraine_points`` (:class:`MorainePointsSource`): the points of a point-cloud
  pyramid, via :func:`moczarr.moraine.open_moraine_points`.
- :func:`moraine_sources`: the ``version: 1`` YAML ``sources`` entries of one pyramid
  (called by :func:`moczarr_intake.intake_yaml.catalog.v1_catalog`).
- :func:`moraine_stac_item`: one STAC Item per pyramid (an asset per level, raster
  extension statistics, projection extension only where the pyramid is georeferenced).
- :func:`validate_item`: offline JSON-Schema validation against STAC core and every
  declared extension (delegates to :func:`moczarr_intake.stac.validate_document`).

Everything is built from :class:`moczarr.moraine.MorainePyramid` (metadata only), so
writing entries or Items reads no data chunk. See ``docs/moraine.md`` ("Catalogs").
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
from intake.source.base import Schema

from moczarr.errors import ArgumentTypeError
from moczarr.moraine import (
    POINT_CLOUD,
    MorainePyramid,
    open_moraine_level,
    open_moraine_points,
)

from .drivers import LazyXarraySource
from .model.access import public_storage_options
from .model.hrefs import HrefPolicy
from .model.naming import identifier
from .stac import MissingSchemaError
from .stac.moraine import (
    PROJECTION_EXT,
    RASTER_EXT,
    ZARR_MEDIA_TYPE,
    mercator_to_wgs84,
    moraine_crs,
    moraine_stac_item,
    pyramid_name,
    validate_item,
)

__all__ = [
    "PROJECTION_EXT",
    "RASTER_EXT",
    "ZARR_MEDIA_TYPE",
    "MissingSchemaError",
    "MoraineLevelSource",
    "MorainePointsSource",
    "mercator_to_wgs84",
    "moraine_crs",
    "moraine_entry_name",
    "moraine_sources",
    "moraine_stac_item",
    "validate_item",
]


# --------------------------------------------------------------------------- intake sources


def _as_level(level: Any) -> int:
    """``level`` as an int: ints, numpy ints and decimal strings (what YAML templates render)."""
    if isinstance(level, (bool, np.bool_)):
        raise ArgumentTypeError(f"level must be an integer, got {level!r}")
    if isinstance(level, (int, np.integer)):
        return int(level)
    if isinstance(level, str) and re.fullmatch(r"\s*[+-]?\d+\s*", level):
        return int(level)
    raise ArgumentTypeError(f"level must be an integer, got {level!r}")


class MoraineLevelSource(LazyXarraySource):
    """One level of a moraine pyramid as a lazy ``xarray.DataArray`` (dims ``y, x[, channel...]``).

    ``level`` is 0 (full resolution) ... L; a negative level counts back from the coarsest.
    A level the pyramid does not have raises :class:`moczarr.moraine.MoraineLevelError`
    when the data is opened."""

    name = "moraine_level"

    def __init__(self, path: str, level: int = 0, storage_options: dict | None = None, metadata: dict | None = None):
        self.path = os.fspath(path)
        self.level = _as_level(level)
        super().__init__(storage_options=storage_options, metadata=metadata)

    def _open_object(self):
        return open_moraine_level(self.path, self.level, storage_options=self.open_options)

    def _get_schema(self):
        arr = self._open()
        return Schema(
            datashape=None,
            dtype=str(arr.dtype),
            shape=tuple(arr.shape),
            npartitions=1,
            extra_metadata={"dims": list(arr.dims), "level": int(arr.attrs.get("level", self.level))},
        )


class MorainePointsSource(LazyXarraySource):
    """The points of a moraine point-cloud pyramid as a lazy ``xarray.Dataset`` (``x``, ``y``, ``pc``)."""

    name = "moraine_points"

    def __init__(self, path: str, storage_options: dict | None = None, metadata: dict | None = None):
        self.path = os.fspath(path)
        super().__init__(storage_options=storage_options, metadata=metadata)

    def _open_object(self):
        return open_moraine_points(self.path, storage_options=self.open_options)


# --------------------------------------------------------------------------- intake YAML


def moraine_entry_name(info: MorainePyramid) -> str:
    """The catalog entry name of a lone pyramid: its folder name made a safe identifier."""
    return identifier(pyramid_name(info), "moraine_")


def _entry_metadata(info: MorainePyramid, location: str, stac_href: str | None) -> dict:
    attrs = info.to_attrs()
    attrs.pop("source", None)
    crs = moraine_crs(info)
    meta = {"path": location, **attrs, "georeferenced": crs is not None, "crs": crs}
    if stac_href:
        meta["stac_href"] = stac_href
    return meta


def _stac_href(info: MorainePyramid, stac_hrefs: dict | None) -> str | None:
    if not stac_hrefs:
        return None
    for key in (info.path, info.path.rstrip("/"), info.path.rstrip("/") + "/"):
        if key in stac_hrefs:
            return stac_hrefs[key]
    return None


def moraine_sources(
    info: MorainePyramid,
    out_dir: Path,
    stac_hrefs: dict | None = None,
    *,
    storage_options: dict | None = None,
    name: str | None = None,
    policy: HrefPolicy | None = None,
) -> dict[str, dict]:
    """The ``version: 1`` YAML ``sources`` entries of one pyramid.

    ``{name}`` (driver ``moraine_level``, parameter ``level``: int, ``0..L``, default 0) and, for
    point clouds, ``{name}_points`` (driver ``moraine_points``). ``name`` is the folder name made a
    safe identifier (or ``name``, as :func:`moczarr_intake.model.entries.catalog_entries` gives it). The
    path is spelled by ``policy`` (default: relative to ``{{ CATALOG_DIR }}`` inside ``out_dir``,
    other local paths absolute, URLs unchanged). ``stac_hrefs`` maps pyramid paths to STAC hrefs. Of
    ``storage_options`` only the public part is written (:func:`moczarr_intake.model.access.public_storage_options`)."""
    name = name or moraine_entry_name(info)
    location = (policy or HrefPolicy(Path(out_dir))).yaml_location(info.path)
    metadata = _entry_metadata(info, location, _stac_href(info, stac_hrefs))
    options = public_storage_options(storage_options)
    if options:
        metadata["storage_options"] = options
    top = info.n_levels - 1
    args: dict[str, Any] = {"path": location, "level": "{{ level }}"}
    if options:
        args["storage_options"] = options
    shapes = ", ".join(f"{lv}: {tuple(s)}" for lv, s in enumerate(info.shapes))
    origin = "legacy" if info.legacy else f"v{info.version}"
    sources = {
        name: {
            "description": f"moraine {info.kind} pyramid {name} ({origin}, method {info.method}); "
            f"levels 0..{top}, 0 = full resolution",
            "driver": "moraine_level",
            "args": args,
            "parameters": {
                "level": {
                    "description": f"pyramid level, 0 (full resolution) to {top} (coarsest); shapes {shapes}",
                    "type": "int",
                    "default": 0,
                    "min": 0,
                    "max": top,
                    "allowed": list(range(info.n_levels)),
                }
            },
            "metadata": metadata,
        }
    }
    if info.kind == POINT_CLOUD and info.n_points is not None:  # n_points is None when pc.zarr is missing
        pargs: dict[str, Any] = {"path": location}
        if options:
            pargs["storage_options"] = options
        pmeta = {
            k: metadata[k]
            for k in (
                "path",
                "kind",
                "version",
                "legacy",
                "n_points",
                "point_dtype",
                "bounds",
                "resolution",
                "stats",
                "channel_stats",
                "has_rtree",
                "georeferenced",
                "crs",
                "stac_href",
                "storage_options",
            )
            if k in metadata
        }
        sources[f"{name}_points"] = {
            "description": f"the {info.n_points} points of moraine point-cloud pyramid {name} (x, y, pc)",
            "driver": "moraine_points",
            "args": pargs,
            "metadata": pmeta,
        }
    return sources
