"""Multi-product store roots (FORMAT.md §3): the product roster.

A multi-product root is a directory of complete stores, one per product name,
with no manifest of its own. A child without a manifest (``scratch/``) is not
a product.
"""

from __future__ import annotations

import re

from .errors import ManifestError, StampError
from .manifest import MANIFEST_NAME, SUPPORTED_SPECS
from .storage import DEFAULT_CONCURRENCY, Storage

#: product-name grammar: lowercase names, never a base-cell digit component
PRODUCT_RE = re.compile(r"^[a-z0-9_-]{1,192}$")
_BASE_RE = re.compile(r"^-?[1-6]$")


def is_product_name(name: str) -> bool:
    """True for a name the product grammar allows (``[a-z0-9_-]{1,192}``, not ``-?[1-6]``)."""
    return bool(PRODUCT_RE.match(name)) and not _BASE_RE.match(name)


def list_products(store_root, *, storage_options: dict | None = None, concurrency: int = DEFAULT_CONCURRENCY) -> list[str]:
    """Names of the products of a multi-product root, sorted; ``[]`` for a bare store.

    One LIST of the root plus one manifest GET per grammar-conforming child.
    A child whose manifest is malformed raises :class:`ManifestError`; a
    well-formed manifest of an unsupported ``morton-hive/N`` is still listed.
    """
    storage = Storage.open(store_root, storage_options, concurrency)
    if storage.get_bytes(MANIFEST_NAME) is not None:
        return []
    names = [n for n in storage.list_dir("") if is_product_name(n)]
    docs = storage.get_many([f"{n}/{MANIFEST_NAME}" for n in names])
    products = []
    for name, payload in zip(names, docs):
        if payload is None:
            continue
        try:
            from .storage import parse_json

            doc = parse_json(payload, storage.describe(f"{name}/{MANIFEST_NAME}"))
        except StampError as exc:
            raise ManifestError(str(exc)) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("spec"), str) or not doc["spec"].startswith("morton-hive/"):
            raise ManifestError(f"{storage.describe(f'{name}/{MANIFEST_NAME}')}: not a morton-hive manifest")
        products.append(name)
    return products


__all__ = ["SUPPORTED_SPECS", "is_product_name", "list_products"]
