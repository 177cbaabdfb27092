"""The storage options a catalog document may carry, and how a reader's own options join them.

A published catalog tells a reader where and how to reach the data: anonymous
access, the endpoint, the region, requester-pays. It never carries a
credential: a key, a secret, a token, a profile or any other option is left
out of every document (Intake entries of both versions, STAC hints), and a
reader brings its own at open time, where :func:`merge_storage_options` lays
them over the entry's.
"""

from __future__ import annotations

#: top-level fsspec / obstore options that describe where and how to reach the data (nothing secret)
PUBLIC_OPTIONS = ("anon", "endpoint_url", "requester_pays", "region_name", "region")
#: ``client_kwargs`` (s3fs / botocore) entries of the same kind
PUBLIC_CLIENT_OPTIONS = ("endpoint_url", "region_name")


def public_storage_options(storage_options: dict | None) -> dict | None:
    """The part of ``storage_options`` a published document may carry (:data:`PUBLIC_OPTIONS`), or None."""
    opts = storage_options or {}
    out = {k: opts[k] for k in PUBLIC_OPTIONS if k in opts}
    client = {k: v for k, v in (opts.get("client_kwargs") or {}).items() if k in PUBLIC_CLIENT_OPTIONS}
    if client:
        out["client_kwargs"] = client
    return out or None


def withheld_options(storage_options: dict | None) -> list[str]:
    """The names of the options :func:`public_storage_options` leaves out (``client_kwargs.x`` for nested ones)."""
    opts = storage_options or {}
    names = [k for k in opts if k not in PUBLIC_OPTIONS and k != "client_kwargs"]
    client = opts.get("client_kwargs") or {}
    names += [f"client_kwargs.{k}" for k in client if k not in PUBLIC_CLIENT_OPTIONS]
    return names


def merge_storage_options(published: dict | None, given: dict | None) -> dict | None:
    """``given`` laid over ``published`` (``client_kwargs`` merged key by key): an entry's options and a reader's."""
    if not given:
        return dict(published) if published else None
    if not published:
        return dict(given)
    out = {**published, **given}
    client = {**(published.get("client_kwargs") or {}), **(given.get("client_kwargs") or {})}
    if client:
        out["client_kwargs"] = client
    return out
