"""Which products a store root holds, and the manifest of one store (FORMAT.md §2.2, §3).

A multi-product root is a directory of complete stores, one per product name,
with no manifest of its own. A child without a manifest (``scratch/``) is not
a product.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ManifestError, NotAHiveStoreError, StampError
from ..storage import DEFAULT_CONCURRENCY, Storage, join_location, parse_json
from ..storage.keys import PRODUCT_RE, is_product_name
from .manifest import MANIFEST_NAME, SUPPORTED_SPECS, Manifest, parse_manifest


def read_roster(
    storage: Storage, damaged: dict[str, ManifestError] | None = None, listed: Sequence[str] | None = None
) -> tuple[dict | None, dict[str, dict]]:
    """``(root manifest, {product: manifest})`` of a store root, each parsed once.

    A bare store gives its manifest and ``{}`` (one GET). Otherwise one LIST of
    the root plus one manifest GET per grammar-conforming child; children
    without a manifest are not products. ``listed``: the root's child folders
    as a listing of it just showed them, with no manifest at the root (a
    catalog's walk): the root's manifest is not asked for and the root is not
    listed again. A malformed manifest raises
    :class:`ManifestError`, unless ``damaged`` is given: a product's malformed
    manifest is then recorded there (``{product: error}``) and the product left
    out (a malformed root manifest still raises). A well-formed manifest of an
    unsupported ``morton-hive/N`` is still listed.
    """

    def parse(payload: bytes, rel: str) -> dict:
        try:
            doc = parse_json(payload, storage.describe(rel))
        except StampError as exc:
            raise ManifestError(str(exc)) from None
        if (
            not isinstance(doc, dict)
            or not isinstance(doc.get("spec"), str)
            or not doc["spec"].startswith("morton-hive/")
        ):
            raise ManifestError(f"{storage.describe(rel)}: not a morton-hive manifest")
        return doc

    if listed is None:
        root = storage.get_bytes(MANIFEST_NAME)
        if root is not None:
            return parse(root, MANIFEST_NAME), {}
        listed = storage.list_dir("")
    names = [n for n in listed if is_product_name(n)]
    docs = storage.get_many([f"{n}/{MANIFEST_NAME}" for n in names])
    products = {}
    for name, doc in zip(names, docs, strict=True):
        if doc is None:
            continue
        try:
            products[name] = parse(doc, f"{name}/{MANIFEST_NAME}")
        except ManifestError as exc:
            if damaged is None:
                raise
            damaged[name] = exc
    return None, products


def list_products(
    store_root, *, storage_options: dict | None = None, concurrency: int = DEFAULT_CONCURRENCY
) -> list[str]:
    """Names of the products of a multi-product root, sorted; ``[]`` for a bare store (see :func:`read_roster`)."""
    return sorted(read_roster(Storage.open(store_root, storage_options, concurrency))[1])


def read_manifest(storage, storage_options: dict | None = None) -> Manifest:
    """GET and validate ``{root}/morton_hive.json`` (``storage``: a store root, URL or open Storage).

    Raises :class:`NotAHiveStoreError` when the object is absent (naming the
    products when the root is a multi-product root) and :class:`ManifestError`
    when it is malformed.
    """
    storage = Storage.open(storage, storage_options)
    return manifest_of(storage.get_bytes(MANIFEST_NAME), storage)


def manifest_of(payload: bytes | None, storage: Storage) -> Manifest:
    """The manifest in ``payload``, the bytes of ``storage``'s ``morton_hive.json`` (None: absent) read by the caller.

    Raises as :func:`read_manifest`.
    """
    where = storage.describe()
    try:
        obj = parse_json(payload, storage.describe(MANIFEST_NAME))
    except StampError as exc:
        raise ManifestError(str(exc)) from None
    if obj is None:
        products = sorted(read_roster(storage)[1])
        if products:
            raise NotAHiveStoreError(
                f"{where} is a multi-product root (products: {', '.join(products)}); open one product at its "
                f"own root, e.g. open_hive({join_location(where, products[0])!r}), or all of them as one tree "
                f"with open_store({where!r}) (products=[...] picks some)"
            )
        raise NotAHiveStoreError(f"{where} is not a morton-hive store: no {MANIFEST_NAME}")
    return parse_manifest(obj, where)


__all__ = [
    "PRODUCT_RE",
    "SUPPORTED_SPECS",
    "is_product_name",
    "list_products",
    "manifest_of",
    "read_manifest",
    "read_roster",
]
