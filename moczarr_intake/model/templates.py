"""Entry arguments as templated catalogs render them (no intake import: both plugin generations use these)."""

from __future__ import annotations

import ast
import json
from typing import Any

#: the ``aoi`` user parameter of every level entry (both Intake flavours)
AOI_HELP = (
    "area of interest: morton ids (a list, or comma-separated), WKT or GeoJSON text; "
    "'' (the default) = everywhere, [] = nowhere (as in moczarr's openers)"
)


def parse_aoi(aoi: Any):
    """``aoi`` as the readers take it, with the openers' meaning of ``[]`` (no rows).

    None or a blank string (the parameter's unset default) is no AOI; a list
    stays a list (``[]`` selects nothing); text is a Python list literal, a
    GeoJSON object (parsed to the mapping), WKT (passed on as text, which the
    reader parses), or comma-separated ids. Anything else (a ``moczarr.BBox``, a geometry) passes
    through unchanged.
    """
    if aoi is None:
        return None
    if isinstance(aoi, str):
        text = aoi.strip()
        if text in ("", "None", "none"):
            return None
        if text.startswith("["):
            return list(ast.literal_eval(text))
        if text.startswith("{"):
            return json.loads(text)  # a GeoJSON object: moczarr.places takes the mapping
        if text[:1].isalpha():
            return text  # WKT: moczarr.places parses it
        return [part.strip().strip("'\"") for part in text.split(",") if part.strip()]
    return list(aoi) if isinstance(aoi, (list, tuple)) else aoi


def none_if_blank(value):
    """None for the blanks a templated catalog renders (``''``, ``'None'``), else ``value``."""
    return None if value in (None, "", "None", "none") else value
