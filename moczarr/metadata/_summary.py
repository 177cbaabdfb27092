"""One cheap description of a store: what a catalog needs to let a user choose without opening data.

Per product it reads the manifest, the root coverage MOC and a bounded number
of small objects (one committed leaf's schema, a few shard-node listings for
window labels on generative schedules), so its cost does not grow with the
leaf count. Without a usable root coverage MOC it falls back, as the reader
does, to the discovery walk (LISTs over the leaf tree) and says so with a
:class:`~moczarr.errors.CoverageFallbackWarning`. Levels are what the manifest
declares (declared is not materialized; opening a level says what is on disk).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import mortie

from .. import ids
from ..dataplane.assemble import read_array_schemas, read_schema
from ..errors import (
    ContentError,
    CoverageFallbackWarning,
    ManifestError,
    MoczarrError,
    NotAHiveStoreError,
    ObjectDroppedWarning,
    SelectionError,
    warn,
)
from ..format.coverage import ROOT_MOC_NAME, parse_root_moc
from ..format.declaration import PyramidDeclaration, pyramid_declaration, pyramid_levels
from ..format.manifest import MANIFEST_NAME, Manifest, parse_manifest
from ..format.roster import read_manifest, read_roster
from ..format.stamps import (
    leaf_data_prefix,
    stamp_of,
    stamped_array_names,
    walk_leaves,
    windows_present,
)
from ..places import footprint_geometry, geometry_bbox
from ..storage import Storage, is_remote, parse_json

#: shard nodes listed (at most) to find window labels on generative schedules
WINDOW_SAMPLE = 8
#: leaves tried (at most) to find one committed leaf for the schema
SCHEMA_TRIES = 4


@dataclass
class VariableInfo:
    name: str
    dtype: str
    dims: list[str]
    attrs: dict = field(default_factory=dict)
    kind: str = "dense"  # dense | ragged


@dataclass
class LevelInfo:
    cell_order: int
    node_order: int
    artifact: str
    variables: list[str]
    resolution_km: float


@dataclass
class ProductSummary:
    """What a catalog entry needs to let a user choose without opening data.

    The store's own facts are the validated :class:`~moczarr.format.manifest.Manifest`
    (``manifest``) and its pyramid record (``declaration``); the rest is what
    the summary read beside them.
    """

    name: str
    root: str
    manifest: Manifest = field(repr=False)
    declaration: PyramidDeclaration | None
    windows: list[str]
    time_range: list[str] | None
    n_shards: int | None
    shards: list[str]  # decimal shard ids from the root MOC, else from the discovery walk
    bbox: list[float] | None
    footprint: dict | None  # GeoJSON MultiPolygon of the root MOC's shards (mortie polygons, dissolved)
    levels: list[LevelInfo]
    variables: list[VariableInfo]
    #: False when the root coverage MOC is missing or unusable (``shards`` then come from the discovery walk)
    coverage_usable: bool = True
    #: ``{name: bytes}`` of the small root objects the summary read (``morton_hive.json``, ``coverage.moc``)
    object_sizes: dict[str, int] = field(default_factory=dict)

    spec = property(lambda self: self.manifest.spec)
    dataset = property(lambda self: dict(self.manifest.dataset))
    semantic_hash = property(lambda self: self.manifest.semantic_hash)
    cell_order = property(lambda self: self.manifest.cell_order)
    shard_order = property(lambda self: self.manifest.shard_order)
    path_grouping = property(lambda self: self.manifest.path_grouping)
    windowed = property(lambda self: self.manifest.windowed)
    schedule = property(lambda self: self.manifest.schedule)
    pyramid_spec = property(lambda self: self.declaration.spec if self.declaration else None)

    @property
    def native_order(self) -> int:
        return self.cell_order

    @property
    def orders(self) -> list[int]:
        return [lv.cell_order for lv in self.levels]

    def level(self, cell_order: int) -> LevelInfo:
        for lv in self.levels:
            if lv.cell_order == cell_order:
                return lv
        raise SelectionError(f"{self.root}: no level at cell order {cell_order}; levels: {self.orders}")

    def metadata(self) -> dict:
        """The Intake entry metadata (plain JSON types)."""
        return {
            "product": self.name,
            "store_root": self.root,
            "spec": self.spec,
            "dataset": self.dataset,
            "semantic_hash": self.semantic_hash,
            "cell_order": self.cell_order,
            "shard_order": self.shard_order,
            "pyramid": self.pyramid_spec,
            "levels": [asdict(lv) for lv in self.levels],
            "windows": self.windows,
            "schedule": self.schedule,
            "time_range": self.time_range,
            "bbox": self.bbox,
            "n_shards": self.n_shards,
            "variables": {v.name: {"dtype": v.dtype, "kind": v.kind} for v in self.variables},
        }


@dataclass
class StoreSummary:
    root: str
    layout: str  # "bare" | "multi"
    products: list[ProductSummary]
    #: products of a multi-product root left out as damaged (``summarize_store(skip_damaged=True)``): name -> why
    damaged: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The summary as plain JSON types; :meth:`from_dict` gives it back equal (a catalog's build record)."""
        products = []
        for p in self.products:
            doc = {
                f.name: getattr(p, f.name) for f in fields(ProductSummary) if f.name not in ("manifest", "declaration")
            }
            doc["manifest"] = p.manifest.raw
            doc["levels"] = [asdict(lv) for lv in p.levels]
            doc["variables"] = [asdict(v) for v in p.variables]
            products.append(doc)
        return {"root": self.root, "layout": self.layout, "products": products, "damaged": self.damaged}

    @classmethod
    def from_dict(cls, doc: dict) -> StoreSummary:
        """A summary from :meth:`to_dict`'s document; raises the manifest's errors when it is not one."""
        products = []
        for p in doc["products"]:
            manifest = parse_manifest(p["manifest"], p["root"])
            rest = {k: v for k, v in p.items() if k not in ("manifest", "levels", "variables")}
            products.append(
                ProductSummary(
                    **rest,
                    manifest=manifest,
                    declaration=pyramid_declaration(manifest),
                    levels=[LevelInfo(**lv) for lv in p["levels"]],
                    variables=[VariableInfo(**v) for v in p["variables"]],
                )
            )
        return cls(doc["root"], doc["layout"], products, dict(doc.get("damaged", {})))


def summarize_store(
    root,
    storage_options: dict | None = None,
    *,
    skip_damaged: bool = False,
    workers: int = 1,
    listed: Sequence[str] | None = None,
) -> StoreSummary:
    """Describe a bare store or a multi-product root (see the module docstring for the cost).

    ``workers``: products of a multi-product root summarized at once (threads
    sharing the root's one in-flight limit; the result is the same).
    ``listed``: a multi-product root's child folders as a listing just showed
    them (see :func:`~moczarr.format.roster.read_roster`: neither read again).
    Raises :class:`~moczarr.errors.NotAHiveStoreError` when the root holds
    neither a manifest nor products, and the content errors
    (:class:`~moczarr.errors.ContentError`: a malformed manifest, root MOC or
    leaf) of its products. With ``skip_damaged=True`` a product of a
    multi-product root whose content raises is left out instead, and named
    with the error's message in :attr:`StoreSummary.damaged`; the other
    products are summarized as usual (a bare store's own damage still raises).
    """
    storage = Storage.open(root, storage_options)
    found: dict[str, ManifestError] | None = {} if skip_damaged else None
    root_doc, manifests = read_roster(storage, found, listed)
    if root_doc is not None:
        manifest = parse_manifest(root_doc, storage.describe())
        name = (manifest.short_name or "product").lower()
        return StoreSummary(storage.location, "bare", [summarize_product(storage, manifest, name)])
    if not manifests and not found:
        raise NotAHiveStoreError(f"{storage.describe()} holds neither a morton-hive manifest nor products")
    damaged = {name: str(exc) for name, exc in (found or {}).items()}

    def one(name: str) -> ProductSummary | None:
        child = storage.child(name)
        try:
            return summarize_product(child, parse_manifest(manifests[name], child.describe()), name)
        except ContentError as exc:
            if not skip_damaged:
                raise
            damaged[name] = str(exc)
            return None

    names = sorted(manifests)
    if workers > 1 and len(names) > 1 and not is_local(storage):
        with ThreadPoolExecutor(max_workers=min(workers, len(names))) as pool:
            summaries = list(pool.map(one, names))
    else:
        summaries = [one(name) for name in names]
    out = [summary for summary in summaries if summary is not None]
    return StoreSummary(storage.location, "multi", out, dict(sorted(damaged.items())))


def summarize_products(storage: Storage, names: list[str], *, workers: int = 1) -> list[ProductSummary]:
    """The summaries of the named products of a multi-product root (each manifest read, none listed).

    What :func:`summarize_store` gives for those products, for a caller that
    knows which products it needs (a catalog refreshing the changed ones).
    Raises :class:`~moczarr.errors.NotAHiveStoreError` for a name without a
    manifest, and the manifest's own errors.
    """

    def one(name: str) -> ProductSummary:
        child = storage.child(name)
        return summarize_product(child, read_manifest(child), name)

    if workers > 1 and len(names) > 1 and not is_local(storage):
        with ThreadPoolExecutor(max_workers=min(workers, len(names))) as pool:
            return list(pool.map(one, names))
    return [one(name) for name in names]


def is_local(storage: Storage) -> bool:
    """True for a handle on a local folder (read in the calling thread: threads would not help)."""
    return not is_remote(storage.location)


def summarize_product(storage: Storage, manifest: Manifest, name: str) -> ProductSummary:
    """One product's summary (manifest + root MOC + one leaf schema + bounded listings)."""
    moc_bytes = storage.get_bytes(ROOT_MOC_NAME)
    sizes = {
        n: storage.sizes[storage.key(n)] for n in (MANIFEST_NAME, ROOT_MOC_NAME) if storage.key(n) in storage.sizes
    }
    shards = parse_root_moc(moc_bytes, manifest.shard_order, storage.describe())
    usable = shards is not None
    envelope = parse_json(moc_bytes, storage.describe(ROOT_MOC_NAME)) if usable else None
    if shards is None:
        shards = _walked_shards(storage, manifest)
    decimals = ids.to_decimals(shards)
    footprint = footprint_geometry(shards) if shards.size else None
    windows = _windows(storage, manifest, decimals)
    variables = _source_variables(storage, manifest, decimals, windows)
    decl = pyramid_declaration(manifest)
    composable = (
        sorted(
            k
            for k, f in (decl.fields or {}).items()
            if isinstance(f, dict) and f.get("class") in ("exact", "approximate")
        )
        if decl
        else []
    )
    levels = []
    for lv in pyramid_levels(manifest):
        names = [v.name for v in variables] if lv.artifact == "source" else composable
        levels.append(
            LevelInfo(lv.cell_order, lv.node_order, lv.artifact, names, float(mortie.order2res(lv.cell_order)))
        )
    return ProductSummary(
        name=name,
        root=storage.location,
        manifest=manifest,
        declaration=decl,
        windows=windows,
        time_range=_time_range(manifest, envelope),
        n_shards=int(shards.size),
        shards=decimals,
        bbox=geometry_bbox(footprint) if footprint else None,
        footprint=footprint,
        levels=levels,
        variables=variables,
        coverage_usable=usable,
        object_sizes=sizes,
    )


def _walked_shards(storage: Storage, manifest: Manifest):
    """Shard words of the leaves the discovery walk finds (any window), as the reader falls back to them."""
    refs = walk_leaves(storage, manifest.shard_order, manifest.path_grouping)
    warn(
        f"{storage.describe()}: no usable root coverage.moc; the summary falls back to the discovery walk "
        f"({len({r.decimal for r in refs})} shard(s) found)",
        CoverageFallbackWarning,
    )
    return ids.to_words(list(dict.fromkeys(r.decimal for r in refs)))


def _windows(storage: Storage, manifest: Manifest, decimals: list[str]) -> list[str]:
    if not manifest.windowed:
        return []
    if manifest.declared_windows:
        return manifest.declared_windows
    if decimals:
        step = max(1, len(decimals) // WINDOW_SAMPLE)
        return windows_present(storage, decimals[::step][:WINDOW_SAMPLE], manifest.path_grouping)
    return sorted({r.window for r in walk_leaves(storage, manifest.shard_order, manifest.path_grouping) if r.window})


def _source_variables(
    storage: Storage, manifest: Manifest, decimals: list[str], windows: list[str]
) -> list[VariableInfo]:
    """Variables of the source level, from the schema of one committed leaf."""
    group = str(manifest.cell_order)
    candidates = [
        ids.leaf_path(d, windows[0] if windows else None, manifest.path_grouping) for d in decimals[:SCHEMA_TRIES]
    ]
    if not candidates:
        candidates = [r.path for r in walk_leaves(storage, manifest.shard_order, manifest.path_grouping)[:SCHEMA_TRIES]]
    for batch in (candidates[:1], candidates[1:]):  # the first leaf is almost always committed: one stamp GET
        for path, doc in zip(batch, storage.get_many_json([f"{p}/zarr.json" for p in batch]), strict=True):
            stamp = stamp_of(doc)
            if stamp is None:
                continue
            prefix = leaf_data_prefix(path, stamp, where=storage.describe(path))
            try:
                arrays = _variable_schemas(storage, f"{prefix}/{group}", stamped_array_names(stamp, group))
            except MoczarrError as exc:  # a torn leaf: try the next one
                warn(f"{storage.describe(path)}: schema unreadable ({exc}); trying another leaf", ObjectDroppedWarning)
                continue
            out = []
            for name, arr in arrays.items():
                if name == "morton":
                    continue
                kind = "ragged" if "ragged" in arr.attrs else "dense"
                out.append(VariableInfo(name, str(arr.metadata["data_type"]), list(arr.dims), arr.attrs, kind))
            return out
    return []


def _variable_schemas(storage: Storage, group: str, stamped: list[str] | None) -> dict:
    """The array schemas of a leaf's data group that a summary lists (``morton`` is no variable).

    With the stamp's array names, only those arrays' metadata is read (no
    group document, no LIST, not ``morton``'s); without them, the group as
    :func:`read_schema` reads it.
    """
    if stamped is None:
        return read_schema(storage, group, None).arrays
    return read_array_schemas(storage, group, [n for n in stamped if n != "morton"], "the stamp")


def _time_range(manifest: Manifest, envelope: Any) -> list[str] | None:
    if isinstance(envelope, dict) and isinstance(envelope.get("time_range"), list) and len(envelope["time_range"]) == 2:
        return list(envelope["time_range"])
    windows = (manifest.temporal or {}).get("windows") or []
    starts = [w["start"] for w in windows if isinstance(w, dict) and "start" in w]
    ends = [w["end"] for w in windows if isinstance(w, dict) and "end" in w]
    if starts and ends:
        return [min(starts), max(ends)]
    return None
