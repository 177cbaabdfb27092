"""Listings that tell folders from objects: :class:`Entries` of a prefix, with each object's version tag.

One delimiter-LIST per prefix on every kind of store (local folders, obstore,
fsspec), the objects tagged without a read (ETag, else size and modification
time), so a catalog can tell what changed. Only a listing that succeeded says a
prefix is empty: a missing bucket or a failing local scan raises.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zarr.abc.store import Store
from zarr.storage import FsspecStore, LocalStore, ObjectStore

from ..errors import ArgumentError
from ._obstore import VerifiedObjectStore
from ._retry import missing_bucket, storage_error


@dataclass(frozen=True)
class Entries:
    """The immediate children of a prefix: ``folders`` (child prefixes) and ``objects`` (name -> version tag).

    A version tag identifies an object's state without reading it: the ETag
    an object store lists (``"etag:..."``), else its size and modification
    time (``"size:mtime"``, local files and stores that list no ETag), or None
    when the listing tells neither (an HTTP directory index).
    """

    folders: tuple[str, ...] = ()
    objects: dict[str, str | None] = field(default_factory=dict)


async def list_entries(store: Store, prefix: str) -> Entries:
    """:class:`Entries` of ``prefix`` in a zarr store (local, obstore or fsspec), one delimiter-LIST.

    A missing prefix lists as empty, as object stores have no empty prefixes;
    a missing bucket raises (``FileNotFoundError``: :func:`read_with_retries`
    makes it a :class:`~moczarr.errors.StoreNotFoundError`), as obstore's 404 does.
    """
    prefix = prefix.strip("/")
    if isinstance(store, LocalStore):
        return await asyncio.to_thread(local_entries, os.path.join(os.fspath(store.root), prefix))
    if isinstance(store, ObjectStore):
        import obstore

        path = store.path(prefix) if isinstance(store, VerifiedObjectStore) else prefix
        return obstore_entries(await obstore.list_with_delimiter_async(store.store, prefix=path or None), path)
    if isinstance(store, FsspecStore):
        root = store.path.rstrip("/")
        path = f"{root}/{prefix}" if root and prefix else (root or prefix)
        try:
            listed = await store.fs._ls(path, detail=True)
        except FileNotFoundError as exc:
            if missing_bucket(exc):  # s3fs says so for a bucket that is not there: no listing answered
                raise
            return Entries()
        names: set[str] = set()
        versions: dict[str, str | None] = {}
        for info in listed:
            name = str(info["name"]).rstrip("/")
            name = name.rsplit("/", 1)[-1] if name != path.rstrip("/") else ""
            if not name or name in (".", "..") or "#" in name or "?" in name:
                continue
            if info.get("type") == "directory":
                names.add(name)
            else:
                etag = info.get("ETag") or info.get("etag") or info.get("e_tag")
                versions[name] = _version(etag, info.get("size"), info.get("LastModified") or info.get("mtime"))
        return Entries(tuple(sorted(names)), dict(sorted(versions.items())))
    raise ArgumentError(f"{type(store).__name__}: no listing of entries for this kind of store")


def obstore_entries(listed: Mapping[str, Any], path: str) -> Entries:
    """:class:`Entries` of obstore's delimiter listing of ``path`` (the bucket path listed)."""
    folders = tuple(sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in listed["common_prefixes"]))
    objects = {
        meta["path"].rsplit("/", 1)[-1]: _version(meta.get("e_tag"), meta.get("size"), meta.get("last_modified"))
        for meta in listed["objects"]
        if meta["path"].rstrip("/") != path
    }
    return Entries(folders, dict(sorted(objects.items())))


def local_entries(path: str) -> Entries:
    """:class:`Entries` of a local folder; nothing at ``path`` (or a file there) lists as empty.

    Only the operating system saying nothing is there (``FileNotFoundError``,
    ``NotADirectoryError``: a listing that succeeded) reads as empty; any other
    failure (denied, a symlink loop, an I/O error) raises a
    :class:`~moczarr.errors.StorageError` naming the folder, never an empty listing.
    """
    folders, objects = [], {}
    try:
        with os.scandir(path) as it:
            for entry in it:
                try:
                    if entry.is_dir():
                        folders.append(entry.name)
                    elif entry.is_file():
                        st = entry.stat()
                        objects[entry.name] = f"{st.st_size}:{st.st_mtime_ns}"
                except FileNotFoundError:  # removed since the folder was read: that one entry is gone, not the folder
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return Entries()
    except OSError as exc:
        raise storage_error(exc, f"{path.rstrip(os.sep)}{os.sep} (LIST)", 1, 0.0) from exc
    return Entries(tuple(sorted(folders)), dict(sorted(objects.items())))


def _version(etag, size, modified) -> str | None:
    if etag:
        return f"etag:{str(etag).strip(chr(34))}"
    if size is not None and modified is not None:
        return f"{size}:{modified.isoformat() if hasattr(modified, 'isoformat') else modified}"
    return None
