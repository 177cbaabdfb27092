"""The way back from a STAC Item or Collection to data: follow the ``moczarr:open`` hint of one of its assets."""

from __future__ import annotations

import json
import os
import urllib.error
from collections.abc import Callable
from typing import TypeGuard

import pystac

import moczarr
from moczarr.errors import ArgumentError, ArgumentTypeError, ContentError, NotFoundError, StorageError
from moczarr.metadata import is_remote, join_location
from moczarr.moraine import open_moraine_level, open_moraine_points

from ..model.hrefs import local_path

#: the readers an open hint may name, by their public names; nothing else is called
OPENERS: dict[str, Callable[..., object]] = {
    "moczarr.open_level": moczarr.open_level,
    "moczarr.open_store": moczarr.open_store,
    "moczarr.moraine.open_moraine_level": open_moraine_level,
    "moczarr.moraine.open_moraine_points": open_moraine_points,
}
#: hint arguments holding a location (resolved against the document when relative)
LOCATION_ARGS = ("store_root", "path")


class StacDocumentError(ContentError):
    """A document given to :func:`open_stac` that is not a STAC Item or Collection (not JSON, not STAC, a folder)."""


class StacNotFoundError(NotFoundError, FileNotFoundError):
    """The STAC document given to :func:`open_stac` is not there (no such file, an HTTP 404)."""


#: what pystac raises for a JSON document that is no STAC object it can build
_NOT_STAC = (pystac.STACError, pystac.STACTypeError, KeyError, TypeError, AttributeError, ValueError)


def read_stac(href) -> pystac.STACObject:
    """The STAC object at a path or URL, read with pystac; every failure typed and naming ``href``.

    Raises :class:`StacNotFoundError` for a missing file (or an HTTP 404),
    :class:`StacDocumentError` for a folder, a file that is not JSON, or JSON
    that is not a STAC object, and :class:`~moczarr.errors.StorageError` for
    any other failure to read it (another HTTP status, a server that does not answer).
    """
    where = os.fspath(href)
    try:
        return pystac.read_file(where)
    except FileNotFoundError:
        raise StacNotFoundError(f"{where}: no such STAC document") from None
    except IsADirectoryError:
        raise StacDocumentError(
            f"{where}: a folder, not a STAC document (give the path of an Item or Collection JSON)"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StacDocumentError(f"{where}: not a STAC document: not JSON ({exc})") from None
    except _NOT_STAC as exc:
        raise StacDocumentError(f"{where}: not a STAC Item or Collection ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # pystac's HTTP reads: an HTTPError wrapped in Exception, urllib3's own errors
        raise _read_failure(where, exc) from None


def _read_failure(where: str, exc: Exception) -> Exception:
    """The typed error of a document that could not be read: a 404 is not there, anything else a storage failure."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, urllib.error.HTTPError):
        cause = cause.__cause__
    if isinstance(cause, urllib.error.HTTPError):
        if cause.code == 404:
            return StacNotFoundError(f"{where}: no such STAC document (HTTP 404)")
        return StorageError(f"{where}: the STAC document could not be read (HTTP {cause.code})")
    return StorageError(f"{where}: the STAC document could not be read ({type(exc).__name__}: {exc})")


def _valid(hint: object) -> TypeGuard[dict]:
    return isinstance(hint, dict) and "function" in hint and isinstance(hint.get("kwargs"), dict)


def open_hint(obj, asset: str | None = None, level: int | None = None) -> dict:
    """The ``moczarr:open`` hint of an Item or Collection.

    Hive Items and Collections: the ``data`` asset's. Moraine Items: the asset
    named ``asset``, or the level asset of ``level`` (default 0). Raises
    :class:`ValueError` when there is none.
    """
    if (
        asset is None
        and level is None
        and _valid(getattr(obj.assets.get("data"), "extra_fields", {}).get("moczarr:open"))
    ):
        return obj.assets["data"].extra_fields["moczarr:open"]
    if asset is not None:
        chosen = obj.assets.get(asset)
    else:
        wanted = 0 if level is None else int(level)
        chosen = next(
            (
                a
                for a in obj.assets.values()
                if a.extra_fields.get("moraine:level") == wanted and _valid(a.extra_fields.get("moczarr:open"))
            ),
            None,
        )
    hint = chosen.extra_fields.get("moczarr:open") if chosen is not None else None
    if not _valid(hint):
        what = f"asset {asset!r}" if asset else ("a 'data' asset" if level is None else f"a level-{level} asset")
        raise ArgumentError(f"STAC object {obj.id!r} carries no moczarr:open hint on {what}")
    return hint


def open_stac(obj_or_href, *, asset: str | None = None, level: int | None = None, **kw):
    """Open a STAC Item or Collection written by :func:`build_stac` through the reader it names.

    ``obj_or_href``: a pystac Item or Collection, a document dict, or the
    path or URL of its JSON. A hive level Item opens to exactly
    ``open_level(**hint)`` (an ``xarray.Dataset``); a Collection to
    ``open_store(**hint)`` for that product (an ``xarray.DataTree``; windowed
    products need ``window=``). A moraine Item opens one level
    (``level=``, default 0) with ``open_moraine_level``, or ``asset="points"``
    with ``open_moraine_points``. ``kw`` adds reader arguments (``aoi``,
    ``window`` for a Collection, ``storage_options``...); it may not change
    what the hint fixes. A relative location in the hint is resolved against
    the document's own href (a path or an ``http(s)://`` URL). Only the
    moczarr readers are ever called, whatever the document names.

    Raises :class:`StacNotFoundError` for a document that is not there,
    :class:`StacDocumentError` for one that is not a STAC Item or Collection
    (see :func:`read_stac`), :class:`~moczarr.errors.ArgumentTypeError` for a
    Catalog or an argument of another type, and
    :class:`~moczarr.errors.ArgumentError` for a missing or foreign open hint
    or ``kw`` contradicting it.
    """
    if isinstance(obj_or_href, dict):
        try:
            obj = pystac.read_dict(obj_or_href)
        except _NOT_STAC as exc:
            raise StacDocumentError(
                f"the document given is not a STAC Item or Collection ({type(exc).__name__}: {exc})"
            ) from None
    elif isinstance(obj_or_href, (pystac.Item, pystac.Collection)):
        obj = obj_or_href
    elif isinstance(obj_or_href, pystac.Catalog):
        raise ArgumentTypeError(f"{obj_or_href.id!r} is a Catalog: open one of its Collections or Items")
    elif isinstance(obj_or_href, (str, os.PathLike)):
        obj = read_stac(obj_or_href)
    else:
        raise ArgumentTypeError(
            f"open_stac takes a pystac Item or Collection, a document dict, or a path or URL, "
            f"not {type(obj_or_href).__name__}"
        )
    if not isinstance(obj, (pystac.Item, pystac.Collection)):
        raise ArgumentTypeError(f"{obj.id!r} is a {type(obj).__name__}: open one of its Collections or Items")
    hint = open_hint(obj, asset, level)
    opener = OPENERS.get(hint["function"])
    if opener is None:
        raise ArgumentError(f"{obj.id!r}: open hint names {hint['function']!r}, which is not a moczarr reader")
    kwargs = dict(hint["kwargs"])
    self_href = obj.get_self_href()
    for key in LOCATION_ARGS:
        root = kwargs.get(key)
        if isinstance(root, str) and not is_remote(root) and not os.path.isabs(root) and self_href:
            # a relative href is percent-encoded: a URL keeps it so, a path of this machine is decoded
            kwargs[key] = join_location(self_href, "..", root if is_remote(self_href) else local_path(root))
    for key, value in kw.items():
        if key in kwargs and kwargs[key] != value:
            raise ArgumentError(f"{obj.id!r} fixes {key}={kwargs[key]!r}; got {key}={value!r}")
        kwargs[key] = value
    return opener(**kwargs)
