"""moczarr_intake: Intake catalogs and STAC documents for morton-hive stores and moraine pyramids.

- ``intake.open_catalog("catalog.yaml")`` with the ``morton_level`` / ``morton_store`` /
  ``morton_hive`` / ``moraine_level`` / ``moraine_points`` drivers (registered entry points);
- the intake readers layer (``MortonHive`` datatype, ``MortonLevelReader``, ``MortonStoreReader``);
- :func:`build_stac` / :func:`open_stac` / :func:`validate_offline` for static STAC, whose level
  Items carry xarray-assets hints for the ``moczarr`` xarray engine (:mod:`moczarr.backend`);
- the ``moczarr-catalog`` command (:mod:`moczarr_intake.cli`).
"""

from moczarr.metadata import summarize_store

from .stac import build_stac, open_stac, validate_offline

__all__ = ["build_stac", "open_stac", "summarize_store", "validate_offline"]
