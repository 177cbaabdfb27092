"""Publish: a built catalog loaded into a pgstac database, under the catalog's lock."""

from __future__ import annotations

import importlib.util
import warnings

from moczarr.errors import MissingExtraError

from ..living.lock import catalog_lock
from ..living.refresh import load_record
from ..pgstac.publish import PublishResult, catalog_key_of, redact, upsert_catalog


def publish(out: str, dsn: str, *, storage_options: dict | None = None) -> PublishResult:
    """Upsert the catalog at ``out`` (a folder or URL a build wrote) into the pgstac database at ``dsn`` and delete
    what it no longer holds (:mod:`moczarr_intake.pgstac.publish` says what, and when it refuses).

    Holds the catalog's lock, and refuses
    (:class:`~moczarr_intake.living.lock.UnsettledCatalogError`) a catalog a
    killed run left unsettled until an update has written it whole. The
    catalog's key is that its build record keeps (``catalog_url``, else
    ``out``). Raises :class:`~moczarr.errors.NotFoundError` when ``out`` has
    no build record, :class:`~moczarr.errors.MissingExtraError` (before anything
    is read) on an install without the ``pgstac`` extra, the pgstac module's
    errors otherwise. Warnings met while loading are raised again with the
    DSN's password hidden.
    """
    if missing := [m for m in ("psycopg", "pypgstac") if importlib.util.find_spec(m) is None]:
        raise MissingExtraError.of("publish", "pgstac", " and ".join(missing))
    with catalog_lock(out, storage_options, "publish", settled=True):
        record = load_record(out, storage_options)
        key = catalog_key_of(out, record.options.get("catalog_url"))
        with warnings.catch_warnings(record=True) as caught:  # recorded under the filters in force, shown redacted
            report = upsert_catalog(out, dsn, storage_options=storage_options, catalog_key=key)
    for w in caught:
        warnings.warn_explicit(redact(str(w.message), dsn), w.category, w.filename, w.lineno)
    return report
