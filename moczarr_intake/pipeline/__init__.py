"""The catalog as a library: :func:`build`, :func:`update` and :func:`publish`, their options and results."""

from ..errors import DegradedBuildError
from ..model.options import BuildOptions
from .building import build
from .publishing import publish
from .results import BuildResult, ById, PublishResult, Refresh, Renamed, UpdateResult, Uploaded
from .updating import update

__all__ = [
    "BuildOptions",
    "BuildResult",
    "ById",
    "DegradedBuildError",
    "PublishResult",
    "Refresh",
    "Renamed",
    "UpdateResult",
    "Uploaded",
    "build",
    "publish",
    "update",
]
