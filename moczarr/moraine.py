"""Deprecated import path: moraine pyramids moved to :mod:`moczarr_moraine`.

Kept as a thin re-export for one release; import from ``moczarr_moraine``.
The hive reader itself never imports this module.
"""

from moczarr_moraine import *  # noqa: F401,F403
from moczarr_moraine import __all__  # noqa: F401
