"""The catalog build's arguments, checked before anything is read or written.

Each check raises :class:`moczarr.errors.ArgumentError` naming the flag and
what is wrong, so ``moczarr-catalog build`` refuses a flag it cannot honour
instead of writing a catalog that says something else. Nothing heavy is
imported here: the command line checks its flags before it loads the reader.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from moczarr.errors import ArgumentError

#: URL schemes a published store or catalog may be addressed by
URL_SCHEMES = ("http", "https", "s3", "gs", "az")
#: what STAC 1.1 accepts in a Collection's ``license`` (its licensing.json pattern): one identifier
STAC_LICENSE = re.compile(r"^[\w\-.+]+$")
MANIFEST_NAME = "morton_hive.json"  # the file that makes a folder a store (moczarr.metadata.MANIFEST_NAME)


def is_url(text: str) -> bool:
    """Whether ``text`` has a ``scheme://`` prefix (a URL, not a path)."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text) is not None


def redacted(url: str) -> str:
    """``url`` with everything between ``://`` and its last ``@`` shown as ``***`` (what a message may echo).

    Up to the last ``@``, not the first ``/``: a secret may hold a ``/``, which ends a URL's address early.
    """
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://).*@", r"\1***@", url, flags=re.DOTALL)


def check_url(value: str | None, flag: str) -> str | None:
    """``value`` without its trailing ``/`` when it is an absolute http(s), s3, gs or az URL with a host.

    Raises :class:`ArgumentError` naming ``flag`` otherwise (``ftp:/x``, ``not-a-url``, ``https://``), and
    for a URL holding a ``user:password@``: a credential would be written where the URL is, so it is
    refused, and no message echoes it (:func:`redacted`).
    """
    from urllib.parse import urlsplit

    if value is None:
        return None
    parts = urlsplit(value)
    shown = redacted(value)
    if parts.scheme.lower() not in URL_SCHEMES or not parts.netloc or not is_url(value):
        raise ArgumentError(
            f"{flag} {shown!r} is not an absolute URL: give scheme://host/path with a scheme of "
            f"{', '.join(URL_SCHEMES)}"
        )
    if "@" in value.split("://", 1)[1]:  # userinfo, or a secret holding a "/" that cut the address short
        raise ArgumentError(
            f"{flag} {shown!r} holds a user name or password: give the URL without it and pass credentials "
            "through the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or a profile (AWS_PROFILE)"
        )
    if parts.query or parts.fragment:
        raise ArgumentError(f"{flag} {shown!r}: a base URL takes no query or fragment")
    return value.rstrip("/")


#: the characters an SPDX license expression is spelled with (identifiers, ``+``, ``:``, parentheses, spaces)
SPDX_CHARACTERS = re.compile(r"^[A-Za-z0-9.+:() -]+$")


def check_license(value: str | None) -> tuple[str | None, str | None]:
    """``(SPDX id, None)``, ``(None, URL)`` or ``(None, None)`` for the ``--license`` flag.

    An SPDX license identifier is checked against the SPDX license list that
    ``packaging`` ships (``packaging.licenses``) and returned in its canonical
    case; it must be one identifier (``MIT OR Apache-2.0`` is an expression,
    which a STAC ``license`` field cannot hold: give a URL to such terms).
    A URL must be http(s). Raises :class:`ArgumentError` otherwise.
    """
    from urllib.parse import urlsplit

    if value is None:
        return None, None
    if is_url(value):
        if urlsplit(value).scheme.lower() not in ("http", "https") or not urlsplit(value).netloc:
            raise ArgumentError(f"--license {value!r}: a license URL must be an http(s) URL with a host")
        return None, value
    not_a_licence = ArgumentError(
        f"--license {value!r} is neither an SPDX license identifier (https://spdx.org/licenses/) nor an http(s) URL"
    )
    if not SPDX_CHARACTERS.match(value):  # refused without loading the SPDX list (the command stays light)
        raise not_a_licence
    from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression

    try:
        canonical = canonicalize_license_expression(value)
    except InvalidLicenseExpression:
        raise not_a_licence from None
    if not STAC_LICENSE.match(canonical):
        raise ArgumentError(
            f"--license {value!r} is an SPDX expression: a STAC license holds one identifier; "
            "give the URL of the terms instead"
        )
    return canonical, None


def check_out(out: str | os.PathLike, roots: list[str]) -> Path:
    """``out`` resolved, when it may receive the catalog: not a file, not inside any store.

    Refused (:class:`ArgumentError`): an existing file; a folder inside (or
    equal to) a local root given to the build; a folder inside any folder that
    holds a ``morton_hive.json`` (a store or a product). The catalog would
    otherwise be written into a store, which the reader then sees as a foreign
    child.
    """
    path = Path(out).resolve()
    if path.exists() and not path.is_dir():
        raise ArgumentError(f"--out {os.fspath(out)!r} is a file: give a folder for the catalog")
    for root in roots:
        if is_url(root):
            continue
        store = Path(root).resolve()
        if path == store or path.is_relative_to(store):
            raise ArgumentError(
                f"--out {os.fspath(out)!r} is inside the store root {root!r}: the catalog would be written into "
                "the store; give a folder outside it (a store may sit inside --out, not the other way round)"
            )
    for folder in (path, *path.parents):
        if (folder / MANIFEST_NAME).is_file():
            raise ArgumentError(
                f"--out {os.fspath(out)!r} is inside the store {os.fspath(folder)!r} (it holds {MANIFEST_NAME}): "
                "give a folder outside it"
            )
    return path


def check_stores_root(stores_root: str | None, href_base: str | None) -> str | None:
    """``stores_root`` when it can mean something: it names the folder ``--href-base`` stands for."""
    if stores_root is None:
        return None
    if href_base is None:
        raise ArgumentError("--stores-root names the folder --href-base stands for: give --href-base too")
    if is_url(stores_root) or not Path(stores_root).is_dir():
        raise ArgumentError(f"--stores-root {stores_root!r} is not a local folder")
    return stores_root
