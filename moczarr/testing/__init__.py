"""moczarr.testing: writers of small, deterministic stores for the demo, docs and tests.

They write the on-disk formats the readers read, from synthetic input points,
and record what the stores must hold computed from those points (never from a
reader). The readers never import this package.
"""

from .hive import EXPECTATIONS_NAME, write_sample_store

__all__ = ["EXPECTATIONS_NAME", "write_sample_store"]
