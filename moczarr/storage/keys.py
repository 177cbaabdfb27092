"""Containment: the grammar of every key component the reader takes from store content.

A store's own documents name other objects of the store: a stamp names its
version (``current``) and its bitmap sidecar, a provenance block names its
fields, a ragged declaration names its ``locations`` sibling, a listing names
products, windows and leaves. Before any such name becomes part of a key it
is checked here against its grammar as **one path component**, so no
composed key can leave the object it belongs to (and so the store root).
A violation raises :class:`~moczarr.errors.KeyContainmentError` naming the
object (``where``) and the offending value; nothing is read.

One validator per grammar; each returns the name unchanged when it is valid:

- :func:`version_name`: a leaf's ``current`` (FORMAT.md §5.2): ``run-`` and
  the D20 run-id characters.
- :func:`sidecar_name`: an object file inside a data prefix (``coverage.moc``).
- :func:`array_name`: a zarr v3 node name (fields, ragged siblings, arrays a
  stamp's ``content_hashes`` lists).
- :func:`product_name`: the grammar of FORMAT.md §3.
- Leaf names and window labels found in listings are parsed, not composed:
  :func:`moczarr.ids.parse_leaf_name` admits only a decimal id and a window
  label (``[0-9A-Za-z-]{1,32}``), and anything else is not a leaf.
- :func:`relative_key`: the last line of defence in the storage layer: every
  key is relative, and no component is empty, ``.``, ``..``, or holds a NUL
  or a backslash.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import KeyContainmentError, VersionPointerError

#: the longest component any filesystem the reader runs on accepts (ENAMETOOLONG beyond)
MAX_COMPONENT = 255

_VERSION_RE = re.compile(r"^run-[0-9A-Za-z_.-]{1,128}$")
_SIDECAR_RE = re.compile(r"^[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}$")
_FORBIDDEN = re.compile(r"[/\\\x00-\x1f\x7f]")
#: product-name grammar (FORMAT.md §3): lowercase names, never a base-cell digit component
PRODUCT_RE = re.compile(r"^[a-z0-9_-]{1,192}$")
_BASE_RE = re.compile(r"^-?[1-6]$")


def is_product_name(name: str) -> bool:
    """True for a name the product grammar allows (``[a-z0-9_-]{1,192}``, not ``-?[1-6]``)."""
    return bool(PRODUCT_RE.match(name)) and not _BASE_RE.match(name)


def is_base_cell(name: str) -> bool:
    """True for a base-cell component (``-?[1-6]``): the top of a store's digit tree (FORMAT.md §1.5)."""
    return bool(_BASE_RE.match(name))


def _refuse(where: str, what: str, value: Any, rule: str, kind=KeyContainmentError) -> KeyContainmentError:
    shown = value if not isinstance(value, str) or len(value) <= 80 else value[:80] + "..."
    return kind(f"{where}: {what} {shown!r} is not {rule}; refusing to compose a key from it")


def _component(value: Any, where: str, what: str, kind=KeyContainmentError) -> str:
    """The common part of every grammar: a non-empty string forming exactly one safe path component."""
    if not isinstance(value, str):
        raise _refuse(where, what, value, "a string", kind)
    if (
        value in ("", ".", "..")
        or _FORBIDDEN.search(value)
        or len(value.encode("utf-8", "surrogatepass")) > MAX_COMPONENT
    ):
        rule = f"one path component (no '/', '\\', control characters, '.', '..'; at most {MAX_COMPONENT} bytes)"
        raise _refuse(where, what, value, rule, kind)
    return value


def version_name(value: Any, where: str) -> str:
    """A version pointer: one component beginning ``run-`` (run-id characters ``[0-9A-Za-z_.-]``, at most 128)."""
    rule = "a version name: a version pointer must be one path component beginning 'run-'"
    if not isinstance(value, str):
        raise _refuse(where, "stamp 'current'", value, rule, VersionPointerError)
    name = _component(value, where, "stamp 'current' (a version pointer must begin 'run-')", VersionPointerError)
    if not _VERSION_RE.match(name):
        raise _refuse(where, "stamp 'current'", value, rule, VersionPointerError)
    return name


def sidecar_name(value: Any, where: str) -> str:
    """An object file name inside a data prefix (``coverage.moc``): one component of ``[0-9A-Za-z_.-]``."""
    name = _component(value, where, "sidecar name")
    if not _SIDECAR_RE.match(name):
        raise _refuse(where, "sidecar name", value, "an object name of [0-9A-Za-z_.-] inside the leaf")
    return name


def array_name(value: Any, where: str) -> str:
    """A zarr v3 node name: one component, not beginning ``__`` (fields, ragged siblings, listed arrays)."""
    name = _component(value, where, "array name")
    if name.startswith("__"):
        raise _refuse(where, "array name", value, "a zarr node name (names beginning '__' are reserved)")
    return name


def product_name(value: Any, where: str) -> str:
    """A product name (``[a-z0-9_-]{1,192}``, never ``-?[1-6]``)."""
    name = _component(value, where, "product name")
    if not is_product_name(name):
        raise _refuse(where, "product name", value, "a product name ([a-z0-9_-]{1,192}, not a base cell)")
    return name


def relative_key(rel: str, where: str) -> str:
    """A store-relative key whose every component is safe; ``""`` is the root itself.

    The storage layer applies this to every key it composes, whatever its
    origin, so even a name that escaped its grammar check cannot leave the
    store: absolute keys, ``.``/``..``/empty components, NUL and backslash raise.
    """
    if not isinstance(rel, str):
        raise _refuse(where, "key", rel, "a string")
    text = rel.strip("/")
    if not text:
        return text
    if text.isascii():  # one scan (every chunk read comes here); an ASCII character is one byte
        wrapped = f"/{text}/"  # an empty, '.' or '..' component, a backslash or a NUL leaves the store
        unsafe = (
            "//" in wrapped
            or "/./" in wrapped
            or "/../" in wrapped
            or "\\" in text
            or "\x00" in text
            or (len(text) > MAX_COMPONENT and max(map(len, text.split("/"))) > MAX_COMPONENT)
        )
    else:
        unsafe = any(
            part in ("", ".", "..")
            or "\\" in part
            or "\x00" in part
            or len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT
            for part in text.split("/")
        )
    if unsafe:
        raise _refuse(
            where,
            "key",
            rel,
            "a key inside the store (a component is empty, '.', '..', too long, or holds a NUL or '\\\\')",
        )
    return text


__all__ = [
    "MAX_COMPONENT",
    "array_name",
    "is_base_cell",
    "is_product_name",
    "product_name",
    "relative_key",
    "sidecar_name",
    "version_name",
]
