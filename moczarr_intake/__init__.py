"""moczarr_intake: Intake catalogs and STAC documents for morton-hive stores and moraine pyramids.

- the catalog as a library a provider's pipeline calls (docs/api.md): :func:`build`, :func:`update`,
  :func:`publish`, with :class:`BuildOptions` and the results :class:`BuildResult`,
  :class:`UpdateResult`, :class:`PublishResult` (:mod:`moczarr_intake.pipeline`);
- ``intake.open_catalog("catalog.yaml")`` with the ``morton_level`` / ``morton_store`` /
  ``morton_hive`` / ``moraine_level`` / ``moraine_points`` drivers (registered entry points);
- the intake readers layer (``MortonHive`` datatype, ``MortonLevelReader``, ``MortonStoreReader``);
- :func:`build_stac` / :func:`open_stac` / :func:`validate_offline` for static STAC, whose level
  Items carry xarray-assets hints for the ``moczarr`` xarray engine (:mod:`moczarr.backend`);
- the ``moczarr-catalog`` command (:mod:`moczarr_intake.cli`), a thin layer over the library.

Names are imported on first use.
"""

#: the library's names, from :mod:`moczarr_intake.pipeline`
PIPELINE = [
    "BuildOptions",
    "BuildResult",
    "DegradedBuildError",
    "PublishResult",
    "UpdateResult",
    "build",
    "publish",
    "update",
]
__all__ = [*PIPELINE, "build_stac", "open_stac", "summarize_store", "validate_offline"]


def __getattr__(name: str):
    # intake imports this package at ``import intake`` (its ``intake.imports`` entry point), so the
    # STAC layer and the reader, with zarr, dask and mortie behind them, load on first use only
    if name == "summarize_store":
        from moczarr.metadata import summarize_store

        return summarize_store
    if name in PIPELINE:
        from . import pipeline

        return getattr(pipeline, name)
    if name in __all__:
        from . import stac

        return getattr(stac, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
