"""Opened stores and levels, kept across readers: a small bounded LRU, thread-safe, that notices a changed store.

A reader is made per request by a server, so everything costly lives here,
keyed by what names an open: the URL, the product, ``window``/``time`` and the
storage options. An entry holds the storage handle, the manifest, the level
table, the root MOC's shards (so a tile outside the data costs no read) and the
level Datasets already opened for the tiles asked so far, each scoped to the
shards a tile's pixels fall in (the opener's AOI path), at most
:data:`MAX_DATASETS` of them. Each store and each level is opened once however
many requests ask for it at once (:class:`SingleFlight`: the others wait for
that open, and share its error, which is not kept). At most every
:data:`REVALIDATE_SECONDS` an entry re-reads the manifest and the root
``coverage.moc`` (two small GETs) and, when their bytes changed, is dropped and
opened anew; a leaf replaced in place under an unchanged manifest and root MOC
is noticed only by :func:`clear_cache`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time as clock
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from ..errors import LevelOmittedError, NotAHiveStoreError, ProductError
from ..format.coverage import ROOT_MOC_NAME
from ..format.declaration import pyramid_levels
from ..format.manifest import MANIFEST_NAME, Manifest
from ..format.roster import list_products, manifest_of, read_manifest
from ..openers.leaves import root_shards
from ..openers.pyramid import open_level_in
from ..openers.times import window_or_time
from ..places import Place, footprint
from ..storage import Storage
from .pixels import clear_grid_cells

#: Opened stores kept at once (least recently used dropped first).
MAX_STORES = 16
#: Level Datasets (one per level and set of shards) kept per store.
MAX_DATASETS = 64
#: Requests in flight at once per opened store. Every tile of a store reads through its one handle, so the
#: limit is all its clients' together: 16 close tiles at once ask some 350 chunks, a zoomed-out one 250.
TILE_CONCURRENCY = 256
#: Seconds between two checks that a store's manifest and root MOC are unchanged.
REVALIDATE_SECONDS = 5.0
#: A footprint of more shards than this is not drawn for the bounds (the whole globe is given instead).
MAX_FOOTPRINT_SHARDS = 20_000


class SingleFlight[T]:
    """At most one call per key at a time: a caller of a key already in flight waits for that call's outcome.

    The outcome is shared, never kept: once the call returns or raises, the
    next caller of the key calls again (a caller caches what it wants kept
    inside its call, and looks there first).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[Hashable, Future[T]] = {}

    def run(self, key: Hashable, call: Callable[[], T]) -> T:
        """``call()``, or the outcome of the call of ``key`` in flight (its value, or its exception raised)."""
        with self._lock:
            flight = self._calls.get(key)
            leader = flight is None
            if flight is None:
                flight = self._calls[key] = Future()
        if not leader:
            return flight.result()
        try:
            value = call()
        except BaseException as exc:
            flight.set_exception(exc)
            raise
        else:
            flight.set_result(value)
            return value
        finally:
            with self._lock:
                del self._calls[key]


_lock = threading.Lock()
_stores: OrderedDict[tuple, OpenedStore] = OrderedDict()
_opening: SingleFlight[OpenedStore] = SingleFlight()


@dataclass
class OpenedStore:
    """One store (or product) opened for tiles: its handle, manifest, levels, shards, bounds and level Datasets."""

    key: tuple
    storage: Storage
    manifest: Manifest
    window: Any  # a window label, a TimeRange (time=) or None
    orders: tuple[int, ...]
    node_orders: dict[int, int]
    shards: np.ndarray | None
    token: str
    checked: float
    omitted: set[int] = field(default_factory=set)
    datasets: OrderedDict = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    opening: SingleFlight[xr.Dataset] = field(default_factory=SingleFlight)

    @functools.cached_property
    def bounds(self) -> tuple[float, float, float, float]:
        """``(west, south, east, north)`` of the shards' footprint (the globe without shards or across the
        antimeridian), drawn when first asked: a tile never needs it."""
        return _bounds(self.shards)

    @property
    def levels(self) -> tuple[int, ...]:
        """The cell orders a map can read, finest first (declared levels with nothing stamped left out)."""
        return tuple(o for o in self.orders if o not in self.omitted)

    def level(self, order: int, shards: np.ndarray, variable: str | None = None) -> xr.Dataset:
        """The level at ``order`` scoped to the cells below ``shards`` (sorted unique words), opened once.

        With ``variable``, only that data variable's arrays are built (and the
        coordinates): a tile draws one, and building the others is most of a
        cold open's assembly; a name the level lacks gives a Dataset without it.
        Concurrent first asks of one level wait for one open. Raises
        :class:`~moczarr.errors.LevelOmittedError` for a level with nothing
        materialized (and remembers it: :attr:`levels` leaves it out).
        """
        key = (order, hashlib.sha256(shards.tobytes()).hexdigest(), variable)
        kept = self._kept(key)
        return kept if kept is not None else self.opening.run(key, lambda: self._open_level(key, shards))

    def _kept(self, key: tuple) -> xr.Dataset | None:
        with self.lock:
            ds = self.datasets.get(key)
            if ds is not None:
                self.datasets.move_to_end(key)
            return ds

    def _open_level(self, key: tuple, shards: np.ndarray) -> xr.Dataset:
        kept = self._kept(key)  # opened by a flight that ended as this one began
        if kept is not None:
            return kept
        order, _, variable = key
        variables = None if variable is None else (variable,)
        try:
            ds = open_level_in(
                self.storage, self.manifest, order, self.window, Place(words=shards), variables=variables
            )
        except LevelOmittedError:
            with self.lock:
                self.omitted.add(order)
            raise
        with self.lock:
            self.datasets[key] = ds
            while len(self.datasets) > MAX_DATASETS:
                self.datasets.popitem(last=False)
        return ds


def cache_key(url, product, window, time, storage_options) -> tuple:
    """What names an open: the URL, product, window, time span and storage options (as canonical text)."""
    options = json.dumps(storage_options or {}, sort_keys=True, default=repr)
    span = None if time is None else tuple(str(t) for t in time)
    return (str(url), product, window, span, options)


def opened_store(url, product=None, window=None, time=None, storage_options=None) -> OpenedStore:
    """The cached open of ``url`` (and ``product``), opening it (or opening it again, if it changed) as needed.

    Concurrent first requests of one key wait for one open (and share its
    error). Raises :class:`~moczarr.errors.ProductError` for a multi-product
    root without ``product=`` (naming its products), a product it does not
    hold, or ``product=`` on a bare store; the openers' errors otherwise.
    """
    key = cache_key(url, product, window, time, storage_options)
    due = False
    with _lock:
        entry = _stores.get(key)
        if entry is not None:
            _stores.move_to_end(key)
            due = clock.monotonic() - entry.checked >= REVALIDATE_SECONDS
            if due:
                entry.checked = clock.monotonic()  # one thread re-reads; the others keep the entry meanwhile
    if entry is not None and (not due or _token(entry.storage) == entry.token):
        return entry
    stale = entry

    def open_once() -> OpenedStore:
        with _lock:
            current = _stores.get(key)
        if current is not None and current is not stale:  # opened by a flight that ended as this one began
            return current
        opened = _open(key, url, product, window, time, storage_options)
        with _lock:
            _stores[key] = opened
            _stores.move_to_end(key)
            while len(_stores) > MAX_STORES:
                _stores.popitem(last=False)
        return opened

    return _opening.run(key, open_once)


def clear_cache() -> None:
    """Forget every opened store and level (the next reader opens again) and every grid's cells."""
    with _lock:
        _stores.clear()
    clear_grid_cells()


def cache_info() -> dict:
    """``{"stores": n, "datasets": n}``: what the cache holds now."""
    with _lock:
        entries = list(_stores.values())
    return {"stores": len(entries), "datasets": sum(len(e.datasets) for e in entries)}


def _open(key, url, product, window, time, storage_options) -> OpenedStore:
    storage = Storage.open(url, storage_options, TILE_CONCURRENCY)
    if product is not None:
        storage = _product_storage(storage, product)
    payloads = storage.get_many([MANIFEST_NAME, ROOT_MOC_NAME])  # the open's one round trip for both
    if payloads[0] is None and product is None:
        _product_storage(storage, None)  # no store here: a multi-product root (ProductError naming its products)
    manifest = manifest_of(payloads[0], storage)
    token = _digest(payloads)
    shards = root_shards(storage, manifest, payloads[1])
    levels = pyramid_levels(manifest)
    return OpenedStore(
        key=key,
        storage=storage,
        manifest=manifest,
        window=window_or_time(window, time, manifest.location),
        orders=tuple(lv.cell_order for lv in levels),
        node_orders={lv.cell_order: lv.node_order for lv in levels},
        shards=shards,
        token=token,
        checked=clock.monotonic(),
    )


def _product_storage(storage: Storage, product: str | None) -> Storage:
    """The storage of the store to read: ``storage`` itself, or its product ``product``."""
    where = storage.describe()
    if product is None:
        try:
            read_manifest(storage)
        except NotAHiveStoreError:
            products = list_products(storage)
            if products:
                raise ProductError(
                    f"{where} is a multi-product root: pass product= one of {', '.join(products)} "
                    "(or the product's own URL)"
                ) from None
            raise
        return storage
    products = list_products(storage)
    if not products:
        raise ProductError(f"{where} is a bare store, not a multi-product root: drop product={product!r}")
    if product not in products:
        raise ProductError(f"{where} holds no product {product!r}; products: {', '.join(products)}")
    return storage.child(product)


def _token(storage: Storage) -> str:
    """A digest of the manifest's and the root MOC's bytes as they are now (one round trip)."""
    return _digest(storage.get_many([MANIFEST_NAME, ROOT_MOC_NAME]))


def _digest(payloads: list[bytes | None]) -> str:
    """A digest of the manifest's and the root MOC's bytes (absent ones included as such)."""
    digest = hashlib.sha256()
    for payload in payloads:
        digest.update(b"-" if payload is None else hashlib.sha256(payload).digest())
    return digest.hexdigest()


def _bounds(shards: np.ndarray | None) -> tuple[float, float, float, float]:
    """``(west, south, east, north)`` of the shards' footprint; the globe without shards or across the antimeridian."""
    if shards is None or shards.size == 0 or shards.size > MAX_FOOTPRINT_SHARDS:
        return (-180.0, -90.0, 180.0, 90.0)
    bbox, _ = footprint(shards)
    if bbox is None:
        return (-180.0, -90.0, 180.0, 90.0)
    west, south, east, north = bbox
    if west > east:
        west, east = -180.0, 180.0
    return (float(west), float(south), float(east), float(north))
