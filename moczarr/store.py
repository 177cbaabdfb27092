"""``moczarr.store``: the leaf addressing rule under the import path the reader's contract names.

The contract (docs/concepts.md, the versioned leaves) names
``moczarr.store.leaf_data_prefix`` as the one place the pointer rule lives:
open a leaf's root; if its stamp names ``current`` the arrays are under
``{leaf}/{current}/``, else under ``{leaf}/``. The functions are defined in
:mod:`moczarr.format.stamps`; this module is their public, stable address
(also reachable as ``moczarr.leaf_data_prefix`` and ``moczarr.read_commits``).
"""

from __future__ import annotations

from .format.stamps import leaf_data_prefix, read_commits

__all__ = ["leaf_data_prefix", "read_commits"]
