"""The way back from a STAC Item or Collection to data: follow its ``moczarr:open`` hint."""

from __future__ import annotations

import os

import pystac

import moczarr
from moczarr.metadata import is_remote, join_location

#: the readers an open hint may name (under their public and former module paths); nothing else is called
OPENERS = {
    "moczarr.open_level": moczarr.open_level,
    "moczarr.pyramid.open_level": moczarr.open_level,
    "moczarr.open_store": moczarr.open_store,
    "moczarr.products.open_store": moczarr.open_store,
}


def open_hint(obj) -> dict:
    """The ``moczarr:open`` hint of an Item or Collection (its ``data`` asset)."""
    asset = obj.assets.get("data")
    hint = asset.extra_fields.get("moczarr:open") if asset is not None else None
    if not isinstance(hint, dict) or "function" not in hint or not isinstance(hint.get("kwargs"), dict):
        raise ValueError(f"STAC object {obj.id!r} carries no moczarr:open hint on a 'data' asset")
    return hint


def open_stac(obj_or_href, **kw):
    """Open a STAC Item or Collection written by :func:`build_stac` through the reader it names.

    ``obj_or_href``: a pystac Item or Collection, a document dict, or the
    path/href of its JSON. An Item opens to exactly ``open_level(**hint)`` (an
    ``xarray.Dataset``); a Collection to ``open_store(**hint)`` for that product
    (an ``xarray.DataTree``; windowed products need ``window=``). ``kw`` adds
    reader arguments (``aoi``, ``window`` for a Collection, ``index_kind``,
    ``storage_options``...); it may not change what the hint fixes. Only the
    moczarr readers are ever called, whatever the document names.
    """
    if isinstance(obj_or_href, dict):
        obj = pystac.read_dict(obj_or_href)
    elif isinstance(obj_or_href, (pystac.Item, pystac.Collection)):
        obj = obj_or_href
    elif isinstance(obj_or_href, pystac.Catalog):
        raise TypeError(f"{obj_or_href.id!r} is a Catalog: open one of its Collections or Items")
    else:
        obj = pystac.read_file(os.fspath(obj_or_href))
    if not isinstance(obj, (pystac.Item, pystac.Collection)):
        raise TypeError(f"{obj.id!r} is a {type(obj).__name__}: open one of its Collections or Items")
    hint = open_hint(obj)
    opener = OPENERS.get(hint["function"])
    if opener is None:
        raise ValueError(f"{obj.id!r}: open hint names {hint['function']!r}, which is not a moczarr reader")
    kwargs = dict(hint["kwargs"])
    root = kwargs.get("store_root")
    self_href = obj.get_self_href()
    if isinstance(root, str) and not is_remote(root) and not os.path.isabs(root) and self_href:
        kwargs["store_root"] = join_location(self_href, "..", root)
    for key, value in kw.items():
        if key in kwargs and kwargs[key] != value:
            raise ValueError(f"{obj.id!r} fixes {key}={kwargs[key]!r}; got {key}={value!r}")
        kwargs[key] = value
    return opener(**kwargs)
