"""Regenerate the screenshots of docs/maps.md (``docs/_static/maps/``) from the real parts.

``stac-browser.png``: STAC Browser (the npm package, no configuration) on an Item of the sample's
catalog built with ``--tiles-url``, its map drawing the data layer from ``moczarr-catalog serve``:
the page ``tests/catalog/test_stac_browser.py`` checks pixel by pixel. It needs what that test
needs: the test extra, Chromium and the STAC Browser build (``python3 -m tests.stac_browser``).
Run from the repository's environment::

    .venv/bin/python docs/screenshots.py

``--qgis`` makes ``qgis-xyz.png`` and ``qgis-wmts.png`` instead: the QGIS desktop (Debian's ``qgis`` and
``python3-qgis``, on a virtual display: ``xvfb``; ImageMagick's ``import`` takes the picture) with a
project that ``tests/qgis_driver.py`` writes: the same Item's ``xyz`` link as an XYZ layer, and a
WMTS layer in the polar grid ``UPSAntarcticWGS84Quad`` (EPSG:5042) of the test stores' Antarctic
product (``tests/stores``, written once into the user's cache). QGIS runs with a fresh profile in a
temporary folder, so a user's QGIS settings are neither read nor changed::

    .venv/bin/python docs/screenshots.py --qgis
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from io import BytesIO
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' helpers: the served sample, STAC Browser in Chromium

from PIL import Image  # noqa: E402

from tests import qgis_driver  # noqa: E402
from tests.loopback import serve_folder  # noqa: E402
from tests.stac_browser import (  # noqa: E402
    bundle_dir,
    headless_chromium,
    mercator,
    missing,
    published_sample,
    show,
    tile_server,
)

OUT = REPO / "docs" / "_static" / "maps"
#: the Item shown: the sample's native level
ITEM = "cat/stac/sample/elevation/elevation-o8/elevation-o8.json"
#: the browser window (CSS pixels): the title, the map and the start of the metadata
WINDOW = (1100, 640)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the folder written (default: {OUT})")
    parser.add_argument("--qgis", action="store_true", help="make the QGIS desktop's pictures (qgis-*.png) instead")
    args = parser.parse_args(argv)
    if args.qgis:
        return qgis_pictures(args.out)
    why = missing()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 1
    with (
        tempfile.TemporaryDirectory() as tmp,
        published_sample(Path(tmp)) as served,
        serve_folder(bundle_dir()) as app,
        headless_chromium() as chromium,
    ):
        _, png = show(chromium, app, f"{served.url}/{ITEM}", size=WINDOW)
    save(png, args.out / "stac-browser.png")
    return 0


def save(png: bytes, path: Path) -> None:
    """Write a screenshot to ``path`` in a palette of 256 colours: the text and the colormap's steps kept, at a
    fraction of the size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.open(BytesIO(png)).convert("RGB").quantize(256, dither=Image.Dither.NONE).save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


# -- QGIS -------------------------------------------------------------------------------------------------
#: the polar product drawn over WMTS: the test stores' Antarctic one (tests/stores), one window
POLAR_STORE, POLAR = "multiproduct_hive", {"product": "atl06_windows", "window": "2019", "variable": "count"}
POLAR_GRID = "UPSAntarcticWGS84Quad"
#: EPSG:5042's metres of the South Pole (UPS's false easting and northing) and the half-width of the view
POLE, POLAR_REACH = (2_000_000.0, 2_000_000.0), 2_600_000.0
#: run by QGIS at start: the window over the whole display (Xvfb has no window manager), the view on the data
STARTUP = """
from qgis.core import QgsRectangle
from qgis.utils import iface
iface.mainWindow().setGeometry(0, 0, {width}, {height})
iface.mapCanvas().setExtent(QgsRectangle(*{extent}))
iface.mapCanvas().refresh()
"""


def qgis_missing() -> str | None:
    """Why the QGIS desktop cannot be pictured here (None when PyQGIS, qgis, Xvfb and import are installed)."""
    for tool, package in (("qgis", "qgis"), ("Xvfb", "xvfb"), ("import", "imagemagick")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {package})"
    return qgis_driver.missing()


def qgis_pictures(out: Path) -> int:
    """Write ``qgis-xyz.png`` and ``qgis-wmts.png`` into ``out``; 1 (and why on stderr) when QGIS is missing."""
    why = qgis_missing()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 1
    from tests.helpers import generated_dir

    with tempfile.TemporaryDirectory() as tmp, published_sample(Path(tmp)) as served:
        item = json.loads((served.base / ITEM).read_text())
        (xyz,) = (link["href"] for link in item["links"] if link["rel"] == "xyz")
        west, south, east, north = item["bbox"]
        (x0, y0), (x1, y1) = mercator(west - 1, south - 0.5), mercator(east + 1, north + 0.5)
        layer = {"name": "elevation h_max (XYZ)", "params": {"type": "xyz", "url": xyz, "zmin": 0, "zmax": 22}}
        save(desktop(Path(tmp), "EPSG:3857", [x0, y0, x1, y1], layer), out / "qgis-xyz.png")

    root = generated_dir() / POLAR_STORE
    with tempfile.TemporaryDirectory() as tmp, tile_server(str(root)) as tiles:
        base = {"url": str(root), **POLAR}
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{tiles}/statistics?{urlencode(base)}", timeout=60) as resp:
            (stats,) = json.load(resp).values()
        query = urlencode({**base, "rescale": f"{stats['min']},{stats['max']}", "colormap_name": "viridis"})
        name = f"{root}_{POLAR_GRID}_default"
        params = {"url": f"{tiles}/WMTSCapabilities.xml?{query}", "layers": name, "styles": name}
        params |= {"tileMatrixSet": POLAR_GRID, "format": "image/png", "crs": "EPSG:5042", "IgnoreAxisOrientation": 1}
        (px, py), r = POLE, POLAR_REACH
        extent = [px - r * WINDOW[0] / WINDOW[1], py - r, px + r * WINDOW[0] / WINDOW[1], py + r]
        layer = {"name": "count (WMTS, UPS South)", "params": params}
        save(desktop(Path(tmp), "EPSG:5042", extent, layer), out / "qgis-wmts.png")
    return 0


def desktop(tmp: Path, crs: str, extent: list[float], layer: dict, timeout: float = 120) -> bytes:
    """A screenshot (PNG) of the QGIS desktop, :data:`WINDOW` pixels, showing ``layer`` over ``extent`` (``crs``).

    The project is written by QGIS's Python (``tests/qgis_driver.py``); the desktop runs on Xvfb with a fresh
    profile under ``tmp`` and is pictured once two screenshots a second apart are alike (the tiles drawn).
    Raises ``RuntimeError`` when the picture does not settle within ``timeout`` seconds.
    """
    project = tmp / "layer.qgs"
    qgis_driver.run({"job": "project", "crs": crs, "extent": extent, "qgs": str(project), "layers": [layer]})
    startup = tmp / "startup.py"
    startup.write_text(STARTUP.format(width=WINDOW[0], height=WINDOW[1], extent=extent))
    read, write = os.pipe()
    screen = f"{WINDOW[0]}x{WINDOW[1]}x24"
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", screen, "-nolisten", "tcp"],
                            pass_fds=[write], stderr=subprocess.DEVNULL)  # fmt: skip
    os.close(write)
    try:
        with os.fdopen(read) as lines:
            display = f":{lines.readline().strip()}"
        env = {**os.environ, "DISPLAY": display, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        command = ["qgis", "--nologo", "--noversioncheck", "--noplugins", "--profiles-path", str(tmp / "profiles")]
        command += ["--project", str(project), "--code", str(startup)]
        qgis = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            return settled(display, timeout)
        finally:
            qgis.kill()
            qgis.wait(30)
    finally:
        xvfb.kill()
        xvfb.wait(30)


def settled(display: str, timeout: float, start: float = 10.0) -> bytes:
    """The screen of ``display`` (PNG) once it has not changed for two seconds, looked at from ``start`` seconds."""
    time.sleep(start)
    shots: list[bytes] = []
    for _ in range(int(timeout - start)):
        shot = subprocess.run(["import", "-display", display, "-window", "root", "png:-"], capture_output=True)
        shots.append(Image.open(BytesIO(shot.stdout)).convert("RGB").tobytes())  # the pixels: the PNG has a date
        if len(shots) >= 3 and shots[-1] == shots[-2] == shots[-3]:
            return shot.stdout
        time.sleep(1)
    raise RuntimeError(f"the QGIS desktop on {display} kept changing for {timeout} s")


if __name__ == "__main__":
    sys.exit(main())
