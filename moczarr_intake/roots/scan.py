"""Read the facts of every store a catalog build covers: concurrently, or on a dask cluster.

One :class:`~moczarr.metadata.Scanner` per bucket (or local root) serves every
listing and every summary below it, so all products of a bucket share one
client and its one in-flight limit (``concurrency``, the reader's own). Object
stores are read by a pool of threads under that limit; local roots one after
another in the calling thread (a local read is a plain file read, and the
warnings keep their order). With a dask.distributed ``scheduler`` the roots
are sent to the cluster in chunks, each chunk read the same way on a worker.

Roots given as such (no discovery, no cluster) are probed and read in one
task each, so a root's reads start as soon as its own LIST is back.

What each root costs: one LIST of the root (its state, :mod:`..living.record`) plus
the summary's own GETs (manifest, root MOC, one stamp, the source arrays'
metadata); a multi-product root one LIST per product more.

Unreachable is never absent (:mod:`.discover`): a given root is found
holding no store (a :class:`~.discover.Found` with empty ``listings``, what
an ``update`` may read as gone) only when its listing succeeded and showed
none: nothing there (the operating system's ``FileNotFoundError`` of a local
folder, an empty prefix), a file, or a folder without a store. A listing
that fails (denied, timed out, 5xx after the retries, any other ``OSError``,
a bucket that does not exist) raises a typed error naming the location; a
discovery prefix below which no root is found raises one naming it and what
is there.
"""

from __future__ import annotations

import math
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tqdm import tqdm

from moczarr.errors import ContentError, MoczarrWarning, ObjectDroppedWarning
from moczarr.metadata import (
    DEFAULT_CONCURRENCY,
    MANIFEST_NAME,
    ROOT_MOC_NAME,
    Scanner,
    StoreSummary,
    is_remote,
    split_location,
    warn,
)
from moczarr.moraine import MorainePyramid, is_moraine_pyramid, read_moraine_info

from .discover import HIVE, MORAINE, Discovery, Found, discover, probe

#: products of one multi-product root read at once (the root's products share the one in-flight limit)
PRODUCT_WORKERS = 8
#: chunks per worker a scheduled read is split into (enough to balance, few enough to share clients)
CHUNKS_PER_WORKER = 4


class Scanners:
    """One :class:`~moczarr.metadata.Scanner` per bucket (object stores) or per root (local paths).

    Safe from many threads. Making a scanner reads nothing from its bucket: a bucket's
    region, when the options do not give it, is looked up by the scanner's
    first read, in the thread that reads, so the buckets of roots read by
    many threads are looked up at once.
    """

    def __init__(self, storage_options: dict | None = None, concurrency: int = DEFAULT_CONCURRENCY):
        self.storage_options = storage_options
        self.concurrency = concurrency
        self._by_base: dict[str, Scanner] = {}
        self._lock = threading.Lock()

    def at(self, location: str) -> tuple[Scanner, str]:
        """``(scanner, rel)`` for a root location."""
        base, rel = split_location(location)
        with self._lock:  # one scanner (one client, one in-flight limit) per base, whichever thread asks first
            if base not in self._by_base:
                options = self.storage_options if is_remote(base) else None
                self._by_base[base] = Scanner(base, options, self.concurrency)
            return self._by_base[base], rel


@dataclass
class Read:
    """One root read: its :class:`~.discover.Found` (kind, listings) and its facts."""

    found: Found
    summary: StoreSummary | None = None
    moraine: MorainePyramid | None = None
    #: ``(location, why)`` of the root or each product of it left out as damaged
    damaged: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Reading:
    """Everything a build read: the roots in catalog order, and the discovery walks that found them."""

    reads: list[Read]
    discoveries: list[Discovery] = field(default_factory=list)

    @property
    def summaries(self) -> list[StoreSummary]:
        return [r.summary for r in self.reads if r.summary is not None]

    @property
    def moraine(self) -> list:
        return [r.moraine for r in self.reads if r.moraine is not None]

    @property
    def damaged(self) -> list[tuple[str, str]]:
        """``(location, why)`` of every root or product left out as damaged, in catalog order."""
        return [d for r in self.reads for d in r.damaged]

    @property
    def locations(self) -> list[str]:
        """The locations of the stores and pyramids the catalog lists."""
        return [s.root for s in self.summaries] + [m.path for m in self.moraine]


def locate(
    roots: Sequence[str],
    scanners: Scanners,
    *,
    discover_below: bool = False,
    exclude: Sequence[str] = (),
    progress: bool = False,
    allow_empty: bool = False,
) -> tuple[list[Found], list[Discovery]]:
    """The roots to read: each given root as its listing shows it, or (``discover_below``) every root below it.

    Given roots are probed concurrently (threads under the one in-flight
    limit) when two or more are remote. A location found twice (given twice,
    or below two given prefixes) is read once. A given root whose listing
    succeeded and shows no store is a :class:`~.discover.Found` with empty
    ``listings``; a prefix below which no root is found raises
    (:func:`~.discover.discover`; with ``allow_empty`` its :class:`~.discover.Discovery`
    is empty instead, saying why), and so does any listing that fails
    (:class:`~moczarr.errors.StorageError`, or
    :class:`~moczarr.errors.StoreNotFoundError` naming a missing bucket).
    """
    found: list[Found] = []
    discoveries: list[Discovery] = []
    if discover_below:
        for root in roots:
            scanner, rel = scanners.at(str(root))
            discoveries.append(discover(scanner, rel, exclude=exclude, progress=progress, allow_empty=allow_empty))
            found += discoveries[-1].found
    else:
        found = _probe_all([str(r) for r in roots], scanners)
    unique: dict[str, Found] = {}
    for f in found:
        unique.setdefault(f.root, f)
    return list(unique.values()), discoveries


def _probe_all(roots: list[str], scanners: Scanners) -> list[Found]:
    """:func:`~moczarr_intake.roots.discover.probe` of every given root, in order; the first failure (in order) raises.

    A root the probe shows holding no store (its listing succeeded) is a
    :class:`~.discover.Found` with empty ``listings``: positively absent.
    """

    def one(root: str) -> Found:
        scanner, rel = scanners.at(root)
        return probe(scanner, rel) or Found(scanner.url(rel), HIVE, {}, discovered=False)

    if sum(map(is_remote, roots)) < 2:  # a LIST of a local folder costs less than a thread hop
        return [one(r) for r in roots]
    with ThreadPoolExecutor(max_workers=min(len(roots), scanners.concurrency)) as pool:
        return list(pool.map(one, roots))


def read_one(found: Found, scanners: Scanners, workers: int = PRODUCT_WORKERS) -> Read:
    """The facts of one root: its store summary, or its moraine pyramid's description.

    A given folder holding ``0.zarr`` that is no moraine pyramid is read as a
    hive root (which then names what is missing), as a build always did; a
    discovered one is left out with an :class:`~moczarr.errors.ObjectDroppedWarning`.
    ``workers``: products of a multi-product root read at once. A root (or a
    product of a multi-product root) whose content raises
    (:class:`~moczarr.errors.ContentError`: a malformed manifest, root MOC or
    leaf) is left out and named in :attr:`Read.damaged`; a root that is not
    there or not a store still raises.
    """
    try:
        if found.kind == MORAINE:
            if is_moraine_pyramid(found.root, storage_options=scanners.storage_options):
                return Read(found, moraine=read_moraine_info(found.root, storage_options=scanners.storage_options))
            if found.discovered:
                warn(
                    f"{found.root}: holds 0.zarr but is no moraine pyramid; left out of the catalog",
                    ObjectDroppedWarning,
                )
                return Read(found)
        scanner, rel = scanners.at(found.root)
        listed = found.listings[""].folders if "" in found.listings and found.layout == "multi" else None
        summary = scanner.summarize(rel, workers=workers, skip_damaged=True, prefetch=_read_ahead(found), listed=listed)
    except ContentError as exc:
        return Read(found, damaged=[(found.root, one_line(exc))])
    damaged = [(f"{summary.root.rstrip('/')}/{name}", why) for name, why in summary.damaged.items()]
    # a root whose every product is damaged has nothing to list
    return Read(found, summary=summary if summary.products else None, damaged=damaged)


def _read_ahead(found: Found) -> list[str]:
    """The objects a root's summary reads one after another, as far as its listings show them.

    A bare root: its manifest, then its root MOC. A multi-product root: each
    listed product's manifest, then, product by product, that product's root
    MOC (its own manifest, absent, and its listing are not read again: see
    :func:`read_one`). Fetched together they cost the same GETs and one round
    trip instead of a chain of them.
    """
    if found.kind != HIVE or "" not in found.listings:
        return []
    wanted = [MANIFEST_NAME, ROOT_MOC_NAME]
    if found.layout == "bare":
        return wanted if ROOT_MOC_NAME in found.listings[""].objects else []
    products = [name for name in found.listings if name]
    return [f"{name}/{obj}" for name in products for obj in wanted if obj in found.listings[name].objects]


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (whitespace collapsed), or its type's name."""
    return " ".join(str(exc).split()) or type(exc).__name__


def read_all(
    found: Sequence[Found],
    scanners: Scanners,
    *,
    progress: bool = False,
    scheduler: str | None = None,
) -> list[Read]:
    """:func:`read_one` of every root, in order: threads under the one limit, or chunks on ``scheduler``."""
    if scheduler is not None:
        return _read_on_cluster(list(found), scanners, scheduler, progress)
    bar = tqdm(total=len(found), desc="stores", unit="store", disable=not progress, file=sys.stderr)
    try:
        return _read_here(list(found), scanners, bar.update)
    finally:
        bar.close()


def _read_here(found: list[Found], scanners: Scanners, done: Callable[[int], object]) -> list[Read]:
    by_root = {f.root: f for f in found}
    return _each_root(list(by_root), lambda root, workers: read_one(by_root[root], scanners, workers), scanners, done)


def _each_root(
    roots: list[str], work: Callable[[str, int], Read], scanners: Scanners, done: Callable[[int], object]
) -> list[Read]:
    """``work(root, workers)`` of every root, in order: remote roots in threads under the one limit, local ones here.

    ``workers``: the products of a multi-product root to read at once (few
    roots: more each). The first failure (in order) raises.
    """
    remote = [r for r in roots if is_remote(r)]
    if len(remote) < 2:
        out = []
        for root in roots:
            out.append(work(root, scanners.concurrency))
            done(1)
        return out
    by_root: dict[str, Read] = {}
    inner = max(PRODUCT_WORKERS, scanners.concurrency // len(remote))  # few roots: their products at once
    with ThreadPoolExecutor(max_workers=min(len(remote), scanners.concurrency)) as pool:
        futures = {root: pool.submit(work, root, inner) for root in remote}
        for root in roots:  # local roots in this thread meanwhile
            if not is_remote(root):
                by_root[root] = work(root, PRODUCT_WORKERS)
                done(1)
        for root, future in futures.items():
            by_root[root] = future.result()  # the first failure (in order) ends the build
            done(1)
    return [by_root[root] for root in roots]


def _probe_and_read_all(roots: list[str], scanners: Scanners, progress: bool) -> list[Read]:
    """Each given root probed (:func:`~.discover.probe`) and read (:func:`read_one`) in one task, in order.

    What :func:`locate` then :func:`read_all` give, without waiting for every
    probe before the first read: a root's read starts as soon as its own LIST
    is back. A location given twice is read once.
    """
    given: dict[str, str] = {}
    for root in roots:
        scanner, rel = scanners.at(root)
        given.setdefault(scanner.url(rel), root)

    def work(location: str, workers: int) -> Read:
        scanner, rel = scanners.at(given[location])
        found = probe(scanner, rel) or Found(scanner.url(rel), HIVE, {}, discovered=False)
        return read_one(found, scanners, workers)

    bar = tqdm(total=len(given), desc="stores", unit="store", disable=not progress, file=sys.stderr)
    try:
        return _each_root(list(given), work, scanners, bar.update)
    finally:
        bar.close()


def read_chunk(found: list[Found], storage_options: dict | None, concurrency: int) -> tuple[list[Read], list]:
    """A cluster task: read ``found`` on a worker; returns the reads and the warnings, as ``(category, text)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        reads = _read_here(found, Scanners(storage_options, concurrency), lambda n: None)
    return reads, [(w.category, str(w.message)) for w in caught if issubclass(w.category, MoczarrWarning)]


def _read_on_cluster(found: list[Found], scanners: Scanners, scheduler: str, progress: bool) -> list[Read]:
    """Chunks of roots read on a dask.distributed cluster; the workers' warnings are raised again here."""
    import distributed

    if not found:
        return []
    with distributed.Client(scheduler, set_as_default=False) as client:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        size = max(1, math.ceil(len(found) / (workers * CHUNKS_PER_WORKER)))
        chunks = [found[i : i + size] for i in range(0, len(found), size)]
        futures = [
            client.submit(read_chunk, chunk, scanners.storage_options, scanners.concurrency, pure=False)
            for chunk in chunks
        ]
        bar = tqdm(total=len(found), desc="stores", unit="store", disable=not progress, file=sys.stderr)
        try:
            results = []
            for chunk, future in zip(chunks, futures, strict=True):
                results.append(future.result())
                bar.update(len(chunk))
        finally:
            bar.close()
    reads = []
    for chunk_reads, caught in results:
        reads += chunk_reads
        for category, text in caught:
            warnings.warn(text, category, stacklevel=2)
    return reads


def read_roots(
    roots: Sequence[str],
    storage_options: dict | None = None,
    *,
    discover_below: bool = False,
    exclude: Sequence[str] = (),
    progress: bool = False,
    scheduler: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> Reading:
    """Locate (or discover) the roots and read them all: what ``moczarr-catalog build`` reads.

    Roots keep the order given (discovered roots: by location below each
    prefix). Raises the reader's errors of the first root that fails.
    """
    scanners = Scanners(storage_options, concurrency)
    if not discover_below and scheduler is None:
        return Reading(_probe_and_read_all([str(r) for r in roots], scanners, progress))
    found, discoveries = locate(roots, scanners, discover_below=discover_below, exclude=exclude, progress=progress)
    return Reading(read_all(found, scanners, progress=progress, scheduler=scheduler), discoveries)
