"""QGIS, the desktop GIS, reading ``moczarr-catalog serve``: its XYZ and WMTS layers rendered by QGIS itself.

Debian's PyQGIS (``apt-get install qgis python3-qgis``) runs on the system Python
(``/usr/bin/python3``, or ``$MOCZARR_QGIS_PYTHON``), not the project's environment, so QGIS is
driven as a subprocess: this file, run by that Python, reads a job (JSON) on stdin and writes its
answer (JSON) on stdout. The test's side (:func:`missing`, :func:`run`) imports only the standard
library. A job names its layers as QGIS's connection dialogs make them: a provider (``wms``
serves both XYZ and WMTS) and the data source's parameters, which QGIS encodes itself
(``QgsDataSourceUri.encodedUri``, what the *XYZ Tiles* and *WMS/WMTS* connections store). Two jobs:

- ``render``: each layer drawn alone by QGIS's map renderer (``QgsMapRendererParallelJob``) over
  ``extent`` (in ``crs``) into a PNG of ``size`` pixels, on a transparent background;
- ``project``: the layers in a QGIS project (``.qgs``) whose view is ``extent`` in ``crs``, for
  the desktop to open (``docs/screenshots.py``).

The answer names, per layer, the URI QGIS was given and whether it is valid (with QGIS's error
when not) and, for ``render``, the rendering's errors and every URL QGIS asked (``requests``); a
job whose layer is invalid or whose rendering failed exits 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: QGIS's Python on Debian (PyQGIS is built for it alone)
DEFAULT_PYTHON = "/usr/bin/python3"


def python() -> str:
    """The Python that imports PyQGIS: ``$MOCZARR_QGIS_PYTHON`` or Debian's ``/usr/bin/python3``."""
    return os.environ.get("MOCZARR_QGIS_PYTHON", DEFAULT_PYTHON)


def missing() -> str | None:
    """Why QGIS cannot be driven here (None when ``python() -c "import qgis.core"`` works)."""
    try:
        done = subprocess.run([python(), "-c", "import qgis.core"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python()} cannot run ({exc}): QGIS's Python is Debian's /usr/bin/python3 (or $MOCZARR_QGIS_PYTHON)"
    if done.returncode != 0:
        return (
            f"PyQGIS is not installed for {python()} (apt-get install qgis python3-qgis): "
            + (done.stderr.strip().splitlines() or ["import qgis.core failed"])[-1]
        )
    return None


def run(job: dict[str, Any], *, timeout: float = 300) -> dict[str, Any]:
    """Run ``job`` (see the module's docstring) in QGIS's Python, offscreen; returns its answer.

    Raises ``RuntimeError`` with QGIS's answer and output when the job fails.
    """
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "NO_PROXY": "127.0.0.1,localhost"}
    env["no_proxy"] = env["NO_PROXY"]
    env.pop("PYTHONPATH", None)  # the project's environment is not QGIS's
    done = subprocess.run(
        [python(), str(Path(__file__).resolve())],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"QGIS's {job['job']} job failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    return json.loads(lines[-1])


# -- QGIS's side: runs in QGIS's Python ---------------------------------------------------------------------
def _layer(spec: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from qgis.core import QgsDataSourceUri, QgsRasterLayer

    uri = QgsDataSourceUri()
    for key, value in spec["params"].items():
        uri.setParam(key, str(value))
    encoded = bytes(uri.encodedUri()).decode()
    layer = QgsRasterLayer(encoded, spec["name"], spec.get("provider", "wms"))
    state = {"name": spec["name"], "uri": encoded, "valid": layer.isValid()}
    if not layer.isValid():
        state["error"] = layer.error().summary() or layer.dataProvider().error().summary()
    return layer, state


def _settings(layers: list[Any], job: dict[str, Any]) -> Any:
    from qgis.core import QgsCoordinateReferenceSystem, QgsMapSettings, QgsRectangle
    from qgis.PyQt.QtCore import QSize
    from qgis.PyQt.QtGui import QColor

    settings = QgsMapSettings()
    settings.setLayers(layers)
    settings.setDestinationCrs(QgsCoordinateReferenceSystem(job["crs"]))
    settings.setOutputSize(QSize(*job["size"]))
    settings.setOutputDpi(96)
    settings.setExtent(QgsRectangle(*job["extent"]))
    settings.setBackgroundColor(QColor(0, 0, 0, 0))
    return settings


def _render(job: dict[str, Any]) -> dict[str, Any]:
    from qgis.core import (
        QgsApplication,
        QgsMapRendererParallelJob,
        QgsNetworkAccessManager,
        QgsNetworkRequestParameters,
    )

    answer: dict[str, Any] = {"layers": [], "requests": []}
    QgsNetworkAccessManager.instance().requestAboutToBeCreated[QgsNetworkRequestParameters].connect(
        lambda request: answer["requests"].append(request.request().url().toString())
    )
    for spec in job["layers"]:
        layer, state = _layer(spec)
        answer["layers"].append(state)
        if not layer.isValid():
            continue
        settings = _settings([layer], job)
        rendering = QgsMapRendererParallelJob(settings)
        rendering.start()
        rendering.waitForFinished()
        QgsApplication.processEvents()  # the requests' signals, queued from the rendering's threads
        state["errors"] = [f"{e.layerID}: {e.message}" for e in rendering.errors()]
        state["extent"] = settings.visibleExtent().toRectF().getCoords()
        rendering.renderedImage().save(spec["png"], "PNG")
    return answer


def _project(job: dict[str, Any]) -> dict[str, Any]:
    from qgis.core import QgsCoordinateReferenceSystem, QgsProject, QgsRectangle, QgsReferencedRectangle

    project = QgsProject.instance()
    crs = QgsCoordinateReferenceSystem(job["crs"])
    project.setCrs(crs)
    answer: dict[str, Any] = {"layers": []}
    for spec in job["layers"]:
        layer, state = _layer(spec)
        answer["layers"].append(state)
        if layer.isValid():
            project.addMapLayer(layer)
    project.viewSettings().setDefaultViewExtent(QgsReferencedRectangle(QgsRectangle(*job["extent"]), crs))
    answer["written"] = project.write(job["qgs"])
    return answer


def _main() -> int:
    from qgis.core import QgsApplication

    job = json.load(sys.stdin)
    QgsApplication.setPrefixPath("/usr", True)
    app = QgsApplication([], False)
    app.initQgis()
    answer = {"render": _render, "project": _project}[job["job"]](job)
    print(json.dumps(answer), flush=True)
    app.exitQgis()
    failed = [s for s in answer["layers"] if not s["valid"] or s.get("errors")]
    return 1 if failed or answer.get("written") is False else 0


if __name__ == "__main__":
    sys.exit(_main())
