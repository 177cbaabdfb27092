"""Store locations: the one place a user-given path or URL is normalised.

A location is either an fsspec URL (``s3://bucket/prefix``, ``https://host/x``)
kept as given minus trailing slashes, or a local path made absolute (a
``file://`` or ``local://`` prefix is stripped). Every reader, writer and
catalog builder spells roots through these functions, so one store never has
two names.
"""

from __future__ import annotations

import os
import posixpath
import re

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
LOCAL_PROTOCOLS = ("file", "local")


def protocol(location: str | os.PathLike) -> str:
    """The fsspec protocol of a location (``"file"`` for local paths; the last of a chained URL)."""
    text = os.fspath(location)
    if not _SCHEME.match(text):
        return "file"
    return text.split("://", 1)[0].split("::")[-1].lower()


def is_remote(location: str | os.PathLike) -> bool:
    """True for a URL of a non-local protocol (``s3://``, ``https://``, ...)."""
    return protocol(location) not in LOCAL_PROTOCOLS


def normalize_location(location: str | os.PathLike) -> str:
    """A remote URL without trailing slashes, or an absolute local path (``file://`` stripped)."""
    text = os.fsdecode(os.fspath(location))
    if is_remote(text):
        head, _, rest = text.partition("://")
        return f"{head}://{rest.rstrip('/')}" if rest.strip("/") else f"{head}://{rest}"
    if _SCHEME.match(text):
        text = text.split("://", 1)[1]
    return os.path.abspath(os.path.expanduser(text))


def join_location(location: str, *names: str) -> str:
    """``location`` joined with relative key ``names`` (``/`` for URLs, the OS separator for paths).

    Parent references are resolved for URLs as for paths, so ``join_location(url, "../x")``
    is the sibling ``x`` (never ``http:/`` collapsed, as ``os.path.normpath`` would do).
    """
    if is_remote(location):
        head, _, rest = location.partition("://")
        joined = posixpath.normpath(posixpath.join("/" + rest.rstrip("/"), *names)).lstrip("/")
        return f"{head}://{joined}"
    return os.path.normpath(os.path.join(location, *names))


__all__ = ["LOCAL_PROTOCOLS", "is_remote", "join_location", "normalize_location", "protocol"]
