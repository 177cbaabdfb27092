"""The storage options a catalog document may carry, and how a reader's own options join them.

A published catalog tells a reader where and how to reach the data: anonymous
access, the endpoint, the region, requester-pays. It never carries a
credential: a key, a secret, a token, a profile or any other option is left
out of every document (Intake entries of both versions, STAC hints), and a
reader brings its own at open time, where :func:`merge_storage_options` lays
them over the entry's. An endpoint is written without any ``user:password@``
it was given with.

What a document gives the reader of one store depends on the store's href
(:func:`href_storage_options`): an object-store URL (``s3://``...) or a path
gets the public options, the endpoint included (an ``s3://`` href names a
bucket of the endpoint the build read it through); an ``http(s)://`` href gets
none, since an HTTP reader takes no S3 option and needs no other address.
"""

from __future__ import annotations

#: top-level fsspec / obstore options that describe where and how to reach the data (nothing secret)
PUBLIC_OPTIONS = ("anon", "endpoint_url", "requester_pays", "region_name", "region")
#: ``client_kwargs`` (s3fs / botocore) entries of the same kind
PUBLIC_CLIENT_OPTIONS = ("endpoint_url", "region_name")


#: href schemes read over HTTP, which no storage option of a catalog applies to
HTTP_SCHEMES = ("http", "https")


def without_userinfo(url):
    """``url`` without what lies between ``://`` and its last ``@`` (a ``user:password@``, even one whose
    password holds a ``/``); anything but such a string is returned as it is."""
    if not isinstance(url, str) or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.rsplit('@', 1)[1]}" if "@" in rest else url


def public_storage_options(storage_options: dict | None) -> dict | None:
    """The part of ``storage_options`` a published document may carry (:data:`PUBLIC_OPTIONS`), or None.

    An ``endpoint_url`` is kept without the ``user:password@`` of its address.
    """
    opts = storage_options or {}
    out = {k: opts[k] for k in PUBLIC_OPTIONS if k in opts}
    client = {k: v for k, v in (opts.get("client_kwargs") or {}).items() if k in PUBLIC_CLIENT_OPTIONS}
    if client:
        out["client_kwargs"] = client
    for holder in (out, client):
        if "endpoint_url" in holder:
            holder["endpoint_url"] = without_userinfo(holder["endpoint_url"])
    return out or None


def is_http(href: str) -> bool:
    """Whether ``href`` is an ``http://`` or ``https://`` URL."""
    return href.split("://", 1)[0].lower() in HTTP_SCHEMES if "://" in href else False


def href_storage_options(href: str, storage_options: dict | None) -> dict | None:
    """The storage options a document gives the reader of the store at ``href`` (see the module docstring).

    None for an ``http(s)://`` href; :func:`public_storage_options` of ``storage_options`` otherwise.
    """
    return None if is_http(href) else public_storage_options(storage_options)


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
