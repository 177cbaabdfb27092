"""Deprecated import path, kept as a thin re-export for one release.

The product roster moved to :mod:`moczarr.roster` and the DataTree view to
:mod:`moczarr.tree`; the public names are on the top-level ``moczarr`` package.
"""

from .roster import (
    PRODUCT_RE,
    SUPPORTED_SPECS,
    is_product_name,
    list_products,
    read_roster,
)
from .tree import (
    finest_source_at,
    open_store,
    overview_orders,
    product_node,
    source_orders,
)

__all__ = [
    "PRODUCT_RE",
    "SUPPORTED_SPECS",
    "finest_source_at",
    "is_product_name",
    "list_products",
    "open_store",
    "overview_orders",
    "product_node",
    "read_roster",
    "source_orders",
]
