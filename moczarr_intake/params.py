"""Entry arguments as templated catalogs render them (no intake import: both plugin generations use these)."""

from __future__ import annotations

import ast
from typing import Any


def parse_aoi(aoi: Any):
    """``aoi`` as a reader accepts it: None for empty; a list of ids from a list or a comma-separated string."""
    if aoi is None or (hasattr(aoi, "__len__") and len(aoi) == 0):
        return None
    if isinstance(aoi, str):
        text = aoi.strip()
        if text.startswith("["):
            return parse_aoi(ast.literal_eval(text))
        return [part.strip().strip("'\"") for part in text.split(",") if part.strip()]
    return list(aoi) if isinstance(aoi, (list, tuple)) else aoi


def none_if_blank(value):
    """None for the blanks a templated catalog renders (``''``, ``'None'``), else ``value``."""
    return None if value in (None, "", "None", "none") else value
