"""STAC Browser, the npm package, in headless Chromium: what a portal's user sees on an Item's map.

STAC Browser ships as sources only; :func:`install` builds the pinned release once into a
cache folder (``npm pack``, ``npm install``, ``npm run build`` in hash history mode, so a plain
static server serves it; about three minutes), ``$MOCZARR_STAC_BROWSER`` or
``~/.cache/moczarr-stac-browser/<version>``. ``python3 -m tests.stac_browser`` builds it and
prints the folder (``.ci/run`` does, and exports it). Chromium is Debian's ``chromium`` (or
``$MOCZARR_CHROMIUM``), driven by Playwright; the page reaches nothing but 127.0.0.1 (the
basemap's tiles are refused), so a map shows only what the catalog and its servers draw.
:func:`show` opens a STAC document's page and screenshots its map once drawn (a :class:`MapShot`:
the pixels and the view's extent, to place a lon/lat on them); :func:`published_sample` serves
what a page shows: the sample's stores, its catalog built with ``--tiles-url`` and the tile
server (:func:`tile_server`, the real ``moczarr-catalog serve``).

:func:`missing` says which piece is absent: the tests skip on it locally and fail on it under
``CI=true`` or when ``$MOCZARR_STAC_BROWSER`` names the bundle (:func:`required`). This module
imports only the standard library at the top, so the system Python can run the install.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

#: the STAC Browser release the tests open
STAC_BROWSER_VERSION = "4.0.1"
#: its ``ol-stac``, pinned: the release's ``^1.1.0`` now resolves to an ol-stac that needs a newer OpenLayers
#: than the release's ``ol ~10.6`` (the build fails on ``ol/source/ogcTileUtil.js``)
OL_STAC_VERSION = "1.1.0"
#: headless flags that keep Chromium off the network (its background connections are refused on a closed machine)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EARTH_RADIUS = 6378137.0  # EPSG:3857's sphere


def bundle_dir() -> Path:
    """The built STAC Browser (its ``index.html`` inside): ``$MOCZARR_STAC_BROWSER`` or the user's cache."""
    named = os.environ.get("MOCZARR_STAC_BROWSER")
    if named:
        return Path(named)
    return Path.home() / ".cache" / "moczarr-stac-browser" / STAC_BROWSER_VERSION


def chromium() -> str | None:
    """The Chromium executable (``$MOCZARR_CHROMIUM`` or ``chromium`` on the PATH), or None."""
    return os.environ.get("MOCZARR_CHROMIUM") or shutil.which("chromium")


def required() -> bool:
    """Whether a missing piece fails the tests (``CI=true``, or the bundle named by ``$MOCZARR_STAC_BROWSER``)."""
    return os.environ.get("CI", "").lower() == "true" or bool(os.environ.get("MOCZARR_STAC_BROWSER"))


def missing() -> str | None:
    """Why STAC Browser cannot be shown here (None when every piece is installed)."""
    if chromium() is None:
        return "Chromium is not installed (apt-get install chromium, or set MOCZARR_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    if not (bundle_dir() / "index.html").is_file():
        return (
            f"STAC Browser {STAC_BROWSER_VERSION} is not built at {bundle_dir()} "
            "(python3 -m tests.stac_browser builds it with npm, a few minutes)"
        )
    return None


def install(dest: Path) -> Path:
    """Build STAC Browser :data:`STAC_BROWSER_VERSION` into ``dest`` (kept when already built); return ``dest``.

    Built in a temporary sibling and renamed into place, so ``dest`` is complete or absent.
    Raises ``RuntimeError`` without npm, ``subprocess.CalledProcessError`` when npm fails.
    """
    if (dest / "index.html").is_file():
        return dest
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed: STAC Browser is built from its npm package")
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        quiet = {"check": True, "stdout": subprocess.DEVNULL}
        subprocess.run(
            [npm, "pack", "--loglevel=error", f"@radiantearth/stac-browser@{STAC_BROWSER_VERSION}"], cwd=work, **quiet
        )
        (tarball,) = work.glob("*.tgz")
        with tarfile.open(tarball) as tar:
            tar.extractall(work, filter="data")
        package = work / "package"
        meta = json.loads((package / "package.json").read_text())
        meta["dependencies"]["ol-stac"] = OL_STAC_VERSION
        (package / "package.json").write_text(json.dumps(meta, indent=2))
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=package, **quiet)
        env = {**os.environ, "SB_historyMode": "hash", "SB_noSourceMaps": "true"}
        subprocess.run([npm, "run", "build"], cwd=package, env=env, **quiet)
        try:
            (package / "dist").rename(dest)
        except OSError:
            if not (dest / "index.html").is_file():  # not another process's build that finished first
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


@contextmanager
def tile_server(allow: str) -> Iterator[str]:
    """``moczarr-catalog serve --port 0 --allow ALLOW`` running; yields the URL its first line names.

    Its later lines are read on (a full pipe would stop the server) and kept in the failure's message.
    """
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    command = [sys.executable, "-m", "moczarr_intake.cli", "serve", "--port", "0", "--allow", allow]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = [proc.stderr.readline()]
    drain = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    drain.start()
    try:
        found = re.match(r"serving (http://127\.0\.0\.1:\d+) ", lines[0])
        assert found, "moczarr-catalog serve did not start: " + "".join(lines)
        yield found[1]
    finally:
        proc.kill()
        proc.wait(30)
        drain.join(5)


@contextmanager
def published_sample(base: Path) -> Iterator[SimpleNamespace]:
    """The sample's catalog built with ``--tiles-url``, its stores and its tile server, all served on 127.0.0.1.

    The sample (``moczarr.testing``) is written into ``base/stores`` and catalogued into
    ``base/cat`` (``--thumbnails``, whose reads give the renders their rescale); ``base`` is
    served with CORS, as a portal's bucket is, and the build gets ``--href-base`` and
    ``--catalog-url`` pointing there and ``--tiles-url`` at ``moczarr-catalog serve``.
    Yields ``base``, ``url`` (``base``'s) and ``tiles`` (the tile server's).
    """
    from moczarr.testing import write_sample_store
    from moczarr_intake import cli
    from tests.loopback import serve_folder

    stores = base / "stores"
    write_sample_store(stores / "sample")
    with serve_folder(base, cors=True) as url, tile_server(f"{url}/stores") as tiles:
        args = ["build", str(stores / "sample"), "--out", str(base / "cat"), "--thumbnails", "--tiles-url", tiles]
        args += ["--href-base", f"{url}/stores", "--stores-root", str(stores), "--catalog-url", f"{url}/cat"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the sample's reader warnings, each tested elsewhere
            built = cli.main(args)
        if built != 0:
            raise AssertionError(f"moczarr-catalog {' '.join(args)} failed")
        yield SimpleNamespace(base=base, url=url, tiles=tiles)


# -- the map ----------------------------------------------------------------------------------------------
def mercator(lon: float, lat: float) -> tuple[float, float]:
    """EPSG:3857 metres of a lon/lat in degrees."""
    lat = max(min(lat, 85.0511287798), -85.0511287798)
    return (
        EARTH_RADIUS * math.radians(lon),
        EARTH_RADIUS * math.log(math.tan(math.pi / 4 + math.radians(lat) / 2)),
    )


def lonlat(x: float, y: float) -> tuple[float, float]:
    """The lon/lat in degrees of EPSG:3857 metres."""
    return math.degrees(x / EARTH_RADIUS), math.degrees(2 * math.atan(math.exp(y / EARTH_RADIUS)) - math.pi / 2)


@dataclass(frozen=True)
class MapShot:
    """What the map of a STAC Browser page showed.

    ``pixels``: the map's screenshot, rows x columns x RGB (uint8), one pixel per map pixel;
    ``extent``: the EPSG:3857 box (minx, miny, maxx, maxy) the map covered (the view is never rotated).
    """

    pixels: Any
    extent: tuple[float, float, float, float]

    @property
    def resolution(self) -> float:
        """Metres (EPSG:3857) per pixel."""
        return (self.extent[2] - self.extent[0]) / self.pixels.shape[1]

    def pixel_of(self, lon: float, lat: float) -> tuple[float, float]:
        """The (column, row) of a lon/lat on the map, in pixels from the map's top left corner."""
        x, y = mercator(lon, lat)
        return (x - self.extent[0]) / self.resolution, (self.extent[3] - y) / self.resolution

    def lonlat_of(self, column: float, row: float) -> tuple[float, float]:
        """The lon/lat at a (column, row) of the map (pixel centres are at +0.5)."""
        return lonlat(self.extent[0] + column * self.resolution, self.extent[3] - row * self.resolution)


#: the OpenLayers map of the page's STAC map (Vue 2 keeps each component on its element), its view and place
_VIEW_JS = """() => {
  const el = document.querySelector('.map-container');
  const map = el && el.__vue__ && el.__vue__.map;
  if (!map || !map.getSize()) { return null; }
  const view = map.getView();
  const box = map.getViewport().getBoundingClientRect();
  return {crs: view.getProjection().getCode(), size: map.getSize(), extent: view.calculateExtent(map.getSize()),
          rotation: view.getRotation(), left: box.left, top: box.top, ratio: window.devicePixelRatio};
}"""
#: resolves once the map has drawn with every tile loaded (OpenLayers' rendercomplete)
_RENDERED_JS = """() => new Promise(resolve => {
  const map = document.querySelector('.map-container').__vue__.map;
  map.once('rendercomplete', () => resolve(true));
  map.render();
})"""


@contextmanager
def headless_chromium() -> Iterator[Any]:
    """A Playwright browser: headless Chromium with a fresh profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _loopback_only(route: Any) -> None:
    if urlsplit(route.request.url).hostname in ("127.0.0.1", "localhost"):
        route.continue_()
    else:
        route.abort()


def browser_url(app: str, document: str) -> str:
    """The STAC Browser page (served at ``app``) of the STAC document at URL ``document`` (its external route)."""
    parts = urlsplit(document)
    return f"{app}/#/external/{parts.scheme}:/{parts.netloc}{parts.path}"


def show(
    browser: Any, app: str, document: str, *, size: tuple[int, int] = (1200, 900), timeout: float = 20.0
) -> tuple[MapShot, bytes]:
    """Open ``document`` in the STAC Browser at ``app`` in a new page of ``size`` and screenshot its map once drawn.

    Drawn: the network quiet, OpenLayers' ``rendercomplete`` (every tile of every layer
    loaded), and two screenshots alike. Returns the map and the page's screenshot (PNG).
    The page reaches 127.0.0.1 only. Raises ``AssertionError`` when the page shows no map in
    EPSG:3857 or it does not settle within ``timeout`` seconds.
    """
    page = browser.new_page(viewport={"width": size[0], "height": size[1]}, device_scale_factor=1)
    try:
        page.route("**/*", _loopback_only)
        return _drawn(page, app, document, timeout)
    finally:
        page.close()


def _drawn(page: Any, app: str, document: str, timeout: float) -> tuple[MapShot, bytes]:
    import numpy as np
    from PIL import Image

    ms = timeout * 1000
    page.goto(browser_url(app, document), wait_until="networkidle", timeout=ms)
    page.wait_for_selector(".ol-viewport canvas", timeout=ms)
    page.wait_for_load_state("networkidle", timeout=ms)
    page.wait_for_function("() => document.querySelector('.map-container').__vue__.map", timeout=ms)
    page.evaluate(_RENDERED_JS)
    view = page.evaluate(_VIEW_JS)
    assert view is not None and view["crs"] == "EPSG:3857" and view["rotation"] == 0 and view["ratio"] == 1, view
    width, height = view["size"]
    clip = {"x": round(view["left"]), "y": round(view["top"]), "width": width, "height": height}
    shots = [page.screenshot(clip=clip)]
    for _ in range(int(timeout / 0.25)):
        page.wait_for_timeout(250)
        shots.append(page.screenshot(clip=clip))
        if shots[-1] == shots[-2]:
            break
    else:
        raise AssertionError(f"the map of {document} kept changing for {timeout} s")
    pixels = np.asarray(Image.open(BytesIO(shots[-1])).convert("RGB"))
    return MapShot(pixels=pixels, extent=tuple(view["extent"])), page.screenshot()


if __name__ == "__main__":
    print(install(Path(sys.argv[1]) if len(sys.argv) > 1 else bundle_dir()))
