"""The deep pass's bytes: every object under a data root in batched reads, its arrays decoded from them.

No request after the reads: arrays are decoded from the bytes already held,
in one event-loop pass, so a deep verify costs one LIST per data root and
batched GETs.
"""

from __future__ import annotations

import asyncio

import numpy as np
from zarr.storage import MemoryStore, StorePath

from .._zarr import AsyncArray, default_buffer_prototype, sync
from ..errors import StampError
from ..storage import Storage, parse_json


def decode_arrays(objects: list[dict[str, bytes]]) -> list[dict[str, np.ndarray | Exception]]:
    """Every array of every object decoded from its already-read bytes (no request), in one event-loop pass.

    Arrays are found by their ``zarr.json`` documents (FORMAT.md §8.6: not by
    zarr's member listing, which trips over the non-zarr ``coverage.moc``).
    An array that does not decode maps to its exception.
    """
    proto = default_buffer_prototype()

    async def one(store: MemoryStore, name: str, meta: dict):
        try:
            # AsyncArray parses the metadata document itself (any zarr_format); its overloads name zarr's TypedDicts
            arr = AsyncArray(metadata=meta, store_path=StorePath(store, name))  # type: ignore[call-overload]
            return await arr.getitem(Ellipsis, prototype=proto)
        except Exception as exc:  # a chunk that does not decode: any codec error
            return exc

    async def go():
        jobs, where = [], []
        for i, objs in enumerate(objects):
            store = MemoryStore({k: proto.buffer.from_bytes(v) for k, v in objs.items()})
            for key, payload in objs.items():
                if not key.endswith("zarr.json") or key == "zarr.json":
                    continue
                try:
                    doc = parse_json(payload, key)
                except StampError as exc:
                    jobs.append(asyncio.sleep(0, exc))
                    where.append((i, key[: -len("/zarr.json")]))
                    continue
                if isinstance(doc, dict) and doc.get("node_type") == "array":
                    jobs.append(one(store, key[: -len("/zarr.json")], doc))
                    where.append((i, key[: -len("/zarr.json")]))
        return where, await asyncio.gather(*jobs)

    where, results = sync(go())
    out: list[dict] = [{} for _ in objects]
    for (i, name), result in zip(where, results, strict=True):
        out[i][name] = result
    return out


def chunk_presence(name: str, objs: dict[str, bytes]) -> str:
    """How many of array ``name``'s chunk objects are among ``objs`` and how many its shape and chunk grid make."""
    meta = parse_json(objs[f"{name}/zarr.json"], name)
    shape = meta.get("shape") or []
    chunk = ((meta.get("chunk_grid") or {}).get("configuration") or {}).get("chunk_shape") or shape
    expected = int(np.prod([-(-s // c) for s, c in zip(shape, chunk, strict=True)])) if shape else 1
    present = sum(1 for k in objs if k.startswith(f"{name}/c/") or k == f"{name}/c")
    return f"{present} of {expected} chunk objects on disk"


def read_objects(storage: Storage, targets: list[str], skip_root_doc: list[bool]) -> list[dict[str, bytes]]:
    """Every object under each data root, keyed relative to it (one LIST per root, then batched GETs).

    ``skip_root_doc[i]`` leaves out target ``i``'s own ``zarr.json`` (already read).
    Under a legacy root the
    version subgroups ``run-*`` are left out (FORMAT.md §5.5: hash only the
    current version); under a version the root is the version itself.
    """

    async def listing(data: str, sem: asyncio.Semaphore) -> list[str]:
        async with sem:
            base = storage.key(data) + "/"
            return [k[len(base) :] async for k in storage.store.list_prefix(base)]

    async def list_all():
        sem = asyncio.Semaphore(storage.concurrency)
        return await asyncio.gather(*(listing(d, sem) for d in targets))

    listings = sync(list_all())
    keys: list[str] = []
    owners: list[tuple[int, str]] = []
    for i, (data, rels) in enumerate(zip(targets, listings, strict=True)):
        for rel in rels:
            if rel.startswith("run-") or (skip_root_doc[i] and rel == "zarr.json"):
                continue
            keys.append(f"{data}/{rel}")
            owners.append((i, rel))
    payloads = storage.get_many(keys)
    out: list[dict[str, bytes]] = [{} for _ in targets]
    for (i, rel), payload in zip(owners, payloads, strict=True):
        if payload is not None:
            out[i][rel] = payload
    return out
