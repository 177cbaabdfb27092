"""One client for everything a catalog build reads below a location: listings and store summaries.

A catalog over hundreds of stores in one bucket reads them through one
:class:`Scanner` per bucket (or local folder): one store client, one
connection pool and one in-flight limit shared by every listing and every
summary, however many threads read at once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..storage import DEFAULT_CONCURRENCY, Entries, Storage, is_remote, join_location, normalize_location
from ._summary import ProductSummary, StoreSummary, summarize_products, summarize_store


def split_location(location: str | os.PathLike) -> tuple[str, str]:
    """``(base, rel)``: the bucket (``s3://bucket``, ``https://host``) and the key below it.

    A local path is its own base (``rel`` is ``""``).
    """
    text = normalize_location(location)
    if not is_remote(text):
        return text, ""
    scheme, _, rest = text.partition("://")
    bucket, _, key = rest.partition("/")
    return f"{scheme}://{bucket}", key.strip("/")


class Scanner:
    """Listings and store summaries below ``location``, through one store handle.

    Keys (``rel``) are relative to ``location``; ``""`` is the location
    itself. Every method may be called from many threads at once: their
    requests share the handle's ``concurrency`` in-flight limit, and over
    obstore each is a blocking call in the thread that asks
    (:class:`~moczarr.storage.Storage`'s ``blocking=True``), with no hop to an
    event loop. Raises the
    storage layer's errors (:class:`~moczarr.errors.StorageError` and
    subclasses), and :class:`~moczarr.errors.KeyContainmentError` for a key
    leaving the location.
    """

    def __init__(
        self, location: str | os.PathLike, storage_options: dict | None = None, concurrency: int = DEFAULT_CONCURRENCY
    ):
        self.location = normalize_location(location)
        self.storage_options = storage_options
        self._storage = Storage.open(self.location, storage_options, concurrency, blocking=True)

    def __repr__(self) -> str:
        return f"Scanner({self.location!r})"

    def url(self, rel: str = "") -> str:
        """The location of ``rel`` as a root a reader opens."""
        return join_location(self.location, rel) if rel else self.location

    def list_entries(self, rels: list[str]) -> list[Entries]:
        """The :class:`~moczarr.storage.Entries` of each prefix (child folders, versioned objects), concurrently."""
        return self._storage.list_entries(rels)

    def summarize(
        self,
        rel: str = "",
        *,
        workers: int = 1,
        skip_damaged: bool = False,
        prefetch: Sequence[str] = (),
        listed: Sequence[str] | None = None,
    ) -> StoreSummary:
        """:func:`summarize_store` of the store root at ``rel``, through this scanner's handle.

        ``workers``: products of a multi-product root summarized at once (under
        the same limit); ``skip_damaged`` as :func:`summarize_store`;
        ``prefetch``: objects of the root (relative to it) the caller knows the
        summary reads, fetched first in one batch (a bare root's
        :data:`MANIFEST_NAME` and :data:`ROOT_MOC_NAME` when its listing
        shows both; a multi-product root's products' as ``{product}/...``):
        the same requests, fewer round trips. ``listed``: a multi-product
        root's child folders as a listing just showed them, with no manifest
        at the root: neither the root's manifest nor its listing is read again.
        """
        storage = self._storage.below(rel)
        storage.prefetch(prefetch)
        return summarize_store(storage, workers=workers, skip_damaged=skip_damaged, listed=listed)

    def summarize_products(self, rel: str, names: list[str], *, workers: int = 1) -> list[ProductSummary]:
        """Summaries of the named products of the multi-product root at ``rel`` (as :meth:`summarize` gives them)."""
        return summarize_products(self._storage.below(rel), names, workers=workers)


__all__ = ["Entries", "Scanner", "split_location"]
