"""Pictures of a map compared with the tile server's own: its PNGs fetched, their areas away from every edge.

Shared by the tests of the clients that draw the server's layers (STAC Browser, QGIS).
"""

from __future__ import annotations

import urllib.request
from io import BytesIO

import numpy as np
from PIL import Image


def served_png(url: str) -> np.ndarray:
    """The RGBA pixels of a PNG a server answers with."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=60) as resp:
        return np.asarray(Image.open(BytesIO(resp.read())).convert("RGBA"))


def uniform(rgba: np.ndarray, radius: int) -> np.ndarray:
    """Where every pixel within ``radius`` has the same RGBA (away from every edge of colour or of data)."""
    packed = np.pad(rgba.astype(np.uint32) @ (1 << np.arange(24, -1, -8, dtype=np.uint32)), radius, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(packed, (2 * radius + 1, 2 * radius + 1))
    return windows.min(axis=(-2, -1)) == windows.max(axis=(-2, -1))
