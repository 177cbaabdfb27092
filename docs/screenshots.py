"""Regenerate the screenshots of docs/maps.md (``docs/_static/maps/``) from the real parts.

``stac-browser.png``: STAC Browser (the npm package, no configuration) on an Item of the sample's
catalog built with ``--tiles-url``, its map drawing the data layer from ``moczarr-catalog serve``:
the page ``tests/catalog/test_stac_browser.py`` checks pixel by pixel. It needs what that test
needs: the test extra, Chromium and the STAC Browser build (``python3 -m tests.stac_browser``).
Run from the repository's environment::

    .venv/bin/python docs/screenshots.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' helpers: the served sample, STAC Browser in Chromium

from PIL import Image  # noqa: E402

from tests.loopback import serve_folder  # noqa: E402
from tests.stac_browser import bundle_dir, headless_chromium, missing, published_sample, show  # noqa: E402

OUT = REPO / "docs" / "_static" / "maps"
#: the Item shown: the sample's native level
ITEM = "cat/stac/sample/elevation/elevation-o8/elevation-o8.json"
#: the browser window (CSS pixels): the title, the map and the start of the metadata
WINDOW = (1100, 640)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the folder written (default: {OUT})")
    args = parser.parse_args(argv)
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
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "stac-browser.png"
    # a palette of 256 colours keeps the page's text and the colormap's steps, at a fraction of the size
    Image.open(BytesIO(png)).convert("RGB").quantize(256, dither=Image.Dither.NONE).save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
