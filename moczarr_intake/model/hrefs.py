"""How a catalog document spells the address of a store it points at.

One policy (:class:`HrefPolicy`) for STAC and both YAML flavours:

- a root given as a URL (``s3://``, ``https://``...) stays as given;
- with ``href_base``, every local store, inside the catalog folder or not,
  becomes ``href_base`` joined with its path relative to ``stores_root``
  (default: the common parent of the roots): where the stores will be published;
- without it, a local store inside the catalog folder is written relative to
  the document (``{{ CATALOG_DIR }}/...`` in YAML, a relative href in STAC), so
  the folder moves as a whole;
- otherwise the absolute local path is written, and :attr:`HrefPolicy.machine_paths`
  records it, so the builder can say which flag fixes it.

A store's folder names come from wherever the stores live (spaces, non-ASCII,
``%``). What the policy composes is a URI reference (RFC 3986), so each path
segment it adds is percent-encoded (:func:`quote_path`): a published
``href_base`` URL and a relative STAC href. A folder literally named
``%2e%2e`` is written ``%252e%252e`` and stays that folder, never ``..``.
Three spellings are left as they are, because their readers take them
verbatim: a root given as a URL (as its owner spelled it), an object-store
key (``s3://bucket/a b`` names the key ``a b`` to every S3 client; ``a%20b``
would be another key), and a path of this machine or the ``{{ CATALOG_DIR }}``
path template of a YAML entry (Intake renders it as a local path). A reader
resolving a relative href against a local document decodes it
(:func:`local_path`); against a URL it keeps it encoded.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from moczarr.errors import ArgumentError
from moczarr.metadata import is_remote, normalize_location

#: how a located address is to be written
INSIDE, URL, MACHINE = "inside", "url", "machine"


def quote_path(rel: str) -> str:
    """A relative ``/``-separated path as a URI path: each segment percent-encoded (RFC 3986), ``..`` kept.

    Only unreserved characters (``A-Za-z0-9-._~``) stay as they are, so an
    ordinary name is unchanged and ``a b`` becomes ``a%20b``, ``%2e%2e``
    becomes ``%252e%252e``.
    """
    return "/".join(quote(segment, safe="") for segment in rel.split("/"))


def local_path(href: str) -> str:
    """The path of this machine a relative href written by :func:`quote_path` names (percent-decoding undone)."""
    return unquote(href)


def common_parent(roots: list[str]) -> str | None:
    """The deepest folder holding every local root (None when there is none)."""
    local = [normalize_location(r) for r in roots if not is_remote(r)]
    if not local:
        return None
    parent = os.path.commonpath(local)
    return parent if len(local) > 1 or parent not in local else os.path.dirname(parent)


@dataclass
class HrefPolicy:
    """Where a catalog written to ``out_dir`` says each store lives (see the module docstring).

    Raises :class:`~moczarr.errors.ArgumentError` (from :meth:`locate`) for a local
    store outside ``stores_root`` when ``href_base`` is given: it would have no
    published address.
    """

    out_dir: Path | None = None
    href_base: str | None = None
    stores_root: str | None = None
    machine_paths: list[str] = field(default_factory=list)
    _located: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.out_dir is not None:
            self.out_dir = Path(self.out_dir).resolve()
        if self.href_base is not None:
            self.href_base = self.href_base.rstrip("/")
        if self.stores_root is not None:
            self.stores_root = normalize_location(self.stores_root)

    @classmethod
    def for_roots(
        cls, roots: list[str], out_dir=None, href_base: str | None = None, stores_root: str | None = None
    ) -> HrefPolicy:
        """The policy of a build over ``roots`` (``stores_root`` defaults to their common parent)."""
        if href_base is not None and stores_root is None:
            stores_root = common_parent(roots)
        return cls(out_dir, href_base, stores_root)

    def locate(self, location: str) -> tuple[str, str]:
        """``(kind, address)``: ``kind`` is ``"url"`` (address is a URL; under ``href_base`` its added path
        percent-encoded), ``"inside"`` (an absolute path inside ``out_dir``) or ``"machine"`` (an absolute
        path of this machine).

        Raises :class:`~moczarr.errors.ArgumentError` for a local store outside
        ``stores_root`` when ``href_base`` is given."""
        if location not in self._located:  # a catalog spells each store many times; resolving a path is not free
            self._located[location] = self._locate(location)
        return self._located[location]

    def _locate(self, location: str) -> tuple[str, str]:
        if is_remote(location):
            return URL, normalize_location(location)
        path = normalize_location(location)
        if self.href_base is not None:
            base = self.stores_root
            if base is None or not Path(path).is_relative_to(base):
                raise ArgumentError(
                    f"{path} is not under the stores root {base}: it has no address below {self.href_base}"
                )
            rel = Path(path).relative_to(base).as_posix()
            return URL, self.href_base if rel == "." else posixpath.join(self.href_base, quote_path(rel))
        if self.out_dir is not None and Path(path).resolve().is_relative_to(self.out_dir):
            return INSIDE, str(Path(path).resolve())
        if path not in self.machine_paths:
            self.machine_paths.append(path)
        return MACHINE, path

    def yaml_location(self, location: str, template: str = "{{ CATALOG_DIR }}") -> str:
        """The address a YAML document in ``out_dir`` writes (``template`` stands for its folder)."""
        kind, address = self.locate(location)
        if kind != INSIDE:
            return address
        rel = os.path.relpath(address, self.out_dir)
        return template + ("" if rel == "." else "/" + rel.replace(os.sep, "/"))

    def stac_href(self, location: str, document_dir: str | os.PathLike | None) -> str:
        """The href a STAC document in ``document_dir`` writes (relative and percent-encoded for stores inside
        ``out_dir``)."""
        kind, address = self.locate(location)
        if kind != INSIDE or document_dir is None:
            return address
        return quote_path(os.path.relpath(address, Path(document_dir).resolve()).replace(os.sep, "/"))
