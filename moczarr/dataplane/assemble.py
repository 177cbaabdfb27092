"""Lazy arrays per zarr object -> one Dataset on a ``cells`` dimension.

Every opener (source leaves, overview and column levels) ends here. Its
inputs are already decided by coverage arithmetic: which objects, which of
their cells (the row domain), and one schema read from one object. Nothing
here reads a ``morton`` or ``cell_ids`` chunk at open, and no data chunk is
read until the arrays are computed; each dask task reads one batch of
objects' arrays through the open call's single store handle
(:mod:`moczarr.dataplane`).
"""

from __future__ import annotations

import json
import posixpath
import weakref
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple, overload

import dask.array as da
import mortie
import numpy as np
import xarray as xr
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from .. import ids
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    ArrayContractError,
    PrecisionWarning,
    SchemaError,
    StampError,
    warn,
)
from ..format.integrity import check_declared_arrays, parse_array_metadata
from ..indexes.ranges import MortonRanges
from ..storage import Storage, keys
from .reads import (
    DEFAULT_BATCH_BYTES,
    CellsSource,
    SegmentDigests,
    Segments,
    batch_row_chunks,
    cells_rows,
    read_whole,
    row_bytes,
)

if TYPE_CHECKING:
    from dask.typing import Key

CELLS = "cells"
COORD = "morton"
NESTED = "cell_ids"
MAX_EXACT_NESTED_ORDER = 24


@dataclass(frozen=True)
class ArraySchema:
    """One array of the data group: its zarr metadata document, dims and attrs."""

    name: str
    metadata: dict
    dims: tuple[str, ...]

    @property
    def attrs(self) -> dict:
        return dict(self.metadata.get("attributes") or {})

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.metadata["shape"])

    @property
    def dtype(self) -> np.dtype:
        dt = self.metadata["data_type"]
        if dt in ("variable_length_bytes", "bytes", "string", "variable_length_utf8"):
            return np.dtype(object)
        try:
            return np.dtype(dt if isinstance(dt, str) else "O")
        except TypeError as exc:
            raise SchemaError(f"array {self.name!r}: data_type {dt!r} has no numpy dtype") from exc

    @property
    def cells_axis(self) -> int | None:
        return self.dims.index(CELLS) if CELLS in self.dims else None


@dataclass
class Schema:
    """The data group of one object: group attrs and every array (names ascending)."""

    group_attrs: dict
    arrays: dict[str, ArraySchema] = field(default_factory=dict)


class Part(NamedTuple):
    """One object's contribution: the rows ``sel`` (local cell positions, None = all) of ``group``.

    ``hashes`` is what the object's stamp records under ``content_hashes``
    (:func:`moczarr.format.content.recorded_hashes`: digests by array path
    relative to the object's data root, ``"8/count"``), None when nothing is
    recorded. A named tuple: an open makes one per object, and a tuple is the
    cheapest record to make.
    """

    group: str  # store-relative path of the object's data group, e.g. "4/3/.../4331421.zarr/8"
    n_cells: int  # cells the object holds (4**depth)
    sel: np.ndarray | None = None
    hashes: Mapping | None = None

    @property
    def n_rows(self) -> int:
        return self.n_cells if self.sel is None else int(self.sel.size)


def part_digests(parts: list[Part], name: str, hashes: list | None = None) -> SegmentDigests:
    """What each part's stamp records as the digest of array ``name``: a hex string, None, or a malformed value.

    The parts of one Dataset share their data group's name (the level's cell
    order), so the key (``"8/count"``) is composed once; the digests are looked
    up as the objects are read (:class:`~moczarr.dataplane.reads.SegmentDigests`),
    so an open pays nothing per leaf and variable. ``hashes`` is
    ``[p.hashes for p in parts]`` when the caller shares one list among its variables.
    """
    key = f"{posixpath.basename(parts[0].group)}/{name}" if parts else name
    return SegmentDigests([p.hashes for p in parts] if hashes is None else hashes, key)


def check_verify_chunks(value) -> bool:
    """An opener's ``verify_chunks=`` argument: True or False; raises :class:`~moczarr.errors.ArgumentTypeError`."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"verify_chunks must be True or False, got {value!r}")
    return value


@overload
def read_schema(
    storage: Storage, group: str, array_names: list[str] | None = None, *, missing_ok: Literal[False] = False
) -> Schema: ...
@overload
def read_schema(
    storage: Storage, group: str, array_names: list[str] | None = None, *, missing_ok: bool
) -> Schema | None: ...
def read_schema(
    storage: Storage, group: str, array_names: list[str] | None = None, *, missing_ok: bool = False
) -> Schema | None:
    """Group and array metadata of one data group: 1 GET + one per array, in one batched read.

    ``array_names`` skips the LIST when the caller knows them (a stamp's
    ``content_hashes``, a provenance block), and then the group's and the
    arrays' ``zarr.json`` are read at once; each name is checked as one path
    component first (:func:`moczarr.storage.keys.array_name`). With
    ``missing_ok`` a missing group gives None (the caller tells why it is
    missing). Raises :class:`StampError` when the group is missing or is not a
    zarr v3 group, :class:`~moczarr.errors.SchemaError` when an array the
    caller declares or the listing shows has missing or unusable metadata (a
    variable never vanishes silently), and
    :class:`~moczarr.errors.KeyContainmentError` for a name that is not a node name.
    """
    where = storage.describe(group)
    declared = array_names is not None
    names = [] if array_names is None else [keys.array_name(n, where) for n in array_names]
    if declared:
        doc, *docs = storage.get_many_json([f"{group}/zarr.json", *(f"{group}/{n}/zarr.json" for n in names)])
    else:
        doc, docs = storage.get_json(f"{group}/zarr.json"), []
    if doc is None and missing_ok:
        return None
    if not isinstance(doc, dict) or doc.get("node_type") != "group" or doc.get("zarr_format") != 3:
        raise StampError(f"{where}: missing or not a zarr v3 group (malformed object)")
    if not declared:
        names = [keys.array_name(n, where) for n in storage.list_dir(group) if n != "zarr.json"]
        docs = storage.get_many_json([f"{group}/{n}/zarr.json" for n in names])
    arrays = _array_schemas(storage, group, names, docs, "the stamp or provenance block" if declared else "the listing")
    attrs = doc.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise SchemaError(f"{where}: group attributes are {type(attrs).__name__}, not a mapping")
    return Schema(attrs, arrays)


def read_array_schemas(storage: Storage, group: str, array_names: list[str], source: str) -> dict[str, ArraySchema]:
    """``{name: ArraySchema}`` of the named arrays of ``group``, ascending (one GET each, in one batched read).

    The array half of :func:`read_schema`, for a caller that needs no group
    attributes (a catalog summary). ``source`` says where the names came from,
    for the message when one is missing. Raises as :func:`read_schema` does.
    """
    where = storage.describe(group)
    array_names = [keys.array_name(n, where) for n in array_names]
    docs = storage.get_many_json([f"{group}/{n}/zarr.json" for n in array_names])
    return _array_schemas(storage, group, array_names, docs, source)


def _array_schemas(storage: Storage, group: str, array_names: list[str], docs: list, source: str) -> dict:
    """The checked :class:`ArraySchema` of each named array from its read ``zarr.json`` document."""
    where = storage.describe(group)
    present = {n: d for n, d in zip(array_names, docs, strict=True) if d is not None}
    check_declared_arrays(array_names, present, where, source)
    arrays = {}
    for name, meta in sorted(zip(array_names, docs, strict=True)):
        parse_array_metadata(meta, storage.describe(f"{group}/{name}"))
        check_array_contract(meta, storage.describe(f"{group}/{name}"))
        dims = meta.get("dimension_names") or [f"{name}_dim_{i}" for i in range(len(meta["shape"]))]
        arrays[name] = ArraySchema(name, meta, tuple(dims))
        _ = arrays[name].dtype  # an unusable data_type raises here, at open, not in a task
    return arrays


def check_array_contract(meta: dict, where: str) -> None:
    """Refuse arrays whose zagg declarations cannot be read safely (FORMAT.md §0, §9).

    Raises :class:`ArrayContractError` for a composition array of unknown spec or
    with a non-zero fill (fill cells would decode as compositions), a ragged
    declaration of unknown spec, and the ``vlen-ndarray`` data type (zagg-ragged/2).
    """
    attrs = meta.get("attributes") or {}
    comp = attrs.get("composition")
    if comp is not None:
        if not isinstance(comp, dict) or comp.get("spec") != "zagg-composition/1":
            raise ArrayContractError(f"{where}: unknown composition declaration {comp!r}")
        if meta.get("fill_value") not in (0, "0"):
            raise ArrayContractError(f"{where}: a composition array must have fill 0, not {meta.get('fill_value')!r}")
    ragged = attrs.get("ragged")
    if ragged is not None and (not isinstance(ragged, dict) or ragged.get("spec") != "zagg-ragged/1"):
        raise ArrayContractError(f"{where}: unknown ragged declaration {ragged!r}; refusing to guess a layout")
    dtype = meta.get("data_type")
    if (isinstance(dtype, dict) and dtype.get("name") == "vlen-ndarray") or dtype == "vlen-ndarray":
        raise ArrayContractError(
            f"{where}: vlen-ndarray (zagg-ragged/2) needs the zarr-vlen-ndarray extension; install it"
        )


#: the open arrays still exactly as built, by dask name -> their source (what :func:`pick_cells` rebuilds)
_SOURCES: weakref.WeakValueDictionary[str, CellsSource] = weakref.WeakValueDictionary()


def cells_array(source: CellsSource, row_chunks: tuple[int, ...], name: str) -> da.Array:
    """The dask array of ``source`` in batches of ``row_chunks`` rows (object-aligned), named ``name``.

    One task per batch; dask fuses a later slice or integer into the task's
    key, so it reads only the objects the slice touches.
    """
    axis = source.axis
    chunks: list[tuple[int, ...]] = [(s,) for i, s in enumerate(source.shape) if i != axis]
    chunks.insert(axis, row_chunks)
    meta = np.empty((0,) * source.ndim, dtype=source.dtype)
    arr = da.from_array(source, chunks=tuple(chunks), name=name, meta=meta, asarray=False)
    _SOURCES[arr.name] = source
    return arr


def picked_array(source: CellsSource, rows: np.ndarray, max_rows: int, verify: bool = True) -> da.Array:
    """Rows ``rows`` of ``source`` (valid positions, any order, repeats) lazily, in batches of at most ``max_rows``.

    Each task reads only the objects holding its rows, each once per sub-batch,
    checked against their recorded content hashes as the source is unless ``verify=False``.
    """
    verify = verify and source.verified
    token = tokenize(source.token, rows, verify)
    picked = source.pick(rows, token, verify=verify)
    if not picked.groups:
        return da.from_array(np.empty(picked.shape, dtype=source.dtype), chunks=-1)
    row_chunks = batch_row_chunks(np.diff(picked.offsets).tolist(), 1, max_rows)
    return cells_array(picked, row_chunks, f"moczarr-{source.name}-{token}")


def pick_cells(ds: xr.Dataset, cells=None, *, morton=None, verify_chunks: bool | None = None) -> xr.Dataset:
    """``ds.isel(cells=cells)`` (or ``ds.sel(morton=morton)``) that reads only the objects holding the picked cells.

    ``cells`` are positions (integers in any order, repeats and negatives
    allowed) or a boolean mask; ``morton`` are labels of the ``morton`` index
    (words, decimal strings). dask answers an integer-array index with a
    shuffle whose tasks compute every batch the positions fall in, so a plain
    ``isel`` of a few scattered cells reads whole batches; here every variable
    still exactly as opened is rebuilt over just the picked rows
    (:func:`picked_array`) and everything else (coordinates, the index,
    derived variables) is ``isel``'s.

    The picked reads are checked against the objects' recorded content hashes
    as the open's were (``verify_chunks=None``, the default); ``False`` drops
    the check. ``True`` on a Dataset opened with ``verify_chunks=False``
    raises :class:`~moczarr.errors.ArgumentError` (that open kept no digests).
    Raises :class:`~moczarr.errors.ArgumentError` for anything but one of
    ``cells``/``morton`` as a 1-D pick, :class:`IndexError` for positions out
    of range, ``KeyError`` for an absent label; the reads raise
    :class:`~moczarr.errors.ContentHashError` for a chunk that is not the recorded one.
    """
    if (cells is None) == (morton is None):
        raise ArgumentError("pick_cells takes exactly one of cells= (positions or a mask) and morton= (labels)")
    if morton is not None:
        cells = ds.xindexes[COORD].sel({COORD: morton}).dim_indexers[CELLS]
    rows = picked_rows("pick_cells", cells, ds.sizes[CELLS])
    sources = {
        name: source
        for name, var in ds.variables.items()
        if CELLS in var.dims and var.chunks and (source := source_of(var.data)) is not None
    }
    check_verifiable("pick_cells", verify_chunks, sources.values())
    out = ds.isel({CELLS: rows})
    for name, source in sources.items():
        var = ds.variables[name]
        chunks = var.chunks
        assert chunks is not None  # sources holds only chunked variables
        out.variables[name].data = picked_array(
            source, rows, max(chunks[var.dims.index(CELLS)]), verify=verify_chunks is not False
        )
    return out


def picked_rows(caller: str, cells, n: int) -> np.ndarray:
    """The row positions, among ``n``, of a pick (integers in any order, repeats and negatives, or a boolean mask).

    Raises :class:`~moczarr.errors.ArgumentError` (naming ``caller``) for anything but a 1-D pick,
    :class:`IndexError` for positions out of range or a mask of another length.
    """
    positions = np.asarray(cells)
    if positions.size == 0:
        positions = positions.astype(np.int64)
    if positions.ndim != 1 or positions.dtype.kind not in "biu":
        raise ArgumentError(f"{caller}: cells must be 1-D integer positions or a boolean mask, got {cells!r}")
    rows, _ = cells_rows(positions, n)
    return rows


def check_verifiable(caller: str, verify_chunks: bool | None, sources: Iterable[CellsSource]) -> None:
    """:class:`~moczarr.errors.ArgumentError` (naming ``caller``) for a ``verify_chunks`` that is not None, True or
    False, and for True on sources that kept no digests to check against."""
    if verify_chunks not in (None, True, False):
        raise ArgumentError(f"{caller}: verify_chunks must be None, True or False, got {verify_chunks!r}")
    if verify_chunks is True and any(not s.verified for s in sources):
        raise ArgumentError(
            f"{caller}(verify_chunks=True): the Dataset was opened with verify_chunks=False and kept no "
            "content hashes to check against; open it again with verify_chunks=True"
        )


def source_of(arr) -> CellsSource | None:
    """The source of an array still exactly as built (not persisted: its blocks still come from reads)."""
    name = getattr(arr, "name", None)
    source = _SOURCES.get(name) if isinstance(name, str) else None
    if source is None or not arr.__dask_graph__().dependencies.get(arr.name):
        return None
    return source


def lazy_cells_array(
    storage: Storage,
    schema: ArraySchema,
    segments: Segments,
    row_chunks: tuple[int, ...],
    parts_token: str,
    digests: SegmentDigests | None = None,
) -> da.Array:
    """A dask array over the ``cells`` axis of ``segments``, one task per batch of objects (``row_chunks``).

    Each task reads its objects' chunks of this array in batched reads; a
    later slice is fused into the task, so it reads only the objects it
    touches (scattered picks: :func:`pick_cells`). ``parts_token`` names the
    objects and rows (:func:`parts_token_of`, once per open). With
    ``digests`` (one per segment, :func:`part_digests`) each object's values
    are checked against the digest its stamp records.
    """
    axis = schema.cells_axis
    assert axis is not None  # only arrays with a cells axis are built over segments
    if not len(segments):
        shape = list(schema.shape)
        shape[axis] = 0
        return da.from_array(np.empty(shape, dtype=schema.dtype), chunks=-1)
    token = tokenize(parts_token, schema.name, json.dumps(schema.metadata, sort_keys=True), digests is not None)
    dtype = schema.dtype if schema.dtype.kind in "biufc" else None  # else the codec chain says (string types)
    source = CellsSource(storage, schema.name, schema.metadata, axis, segments, token, dtype, digests=digests)
    return cells_array(source, row_chunks, f"moczarr-{schema.name}-{token}")


def parts_token_of(storage: Storage, parts: list[Part]) -> str:
    """One token for the objects and rows of an open (computed once, shared by every variable)."""
    sels = [(i, p.sel) for i, p in enumerate(parts) if p.sel is not None]  # whole objects are most of them
    return tokenize(storage.location, "\n".join(p.group for p in parts), sels)


def lazy_whole_array(storage: Storage, schema: ArraySchema, part: Part, verify_chunks: bool = False) -> da.Array:
    """A dask array of one object's whole array (arrays without a ``cells`` axis), checked as a cells array is."""
    digest = part_digests([part], schema.name)[0] if verify_chunks else None
    name = f"moczarr-{schema.name}-" + tokenize(storage.location, part.group, schema.name, schema.metadata, digest)
    key: tuple[str | int, ...] = (name, *([0] * len(schema.shape)))
    dsk: dict[Key, tuple] = {key: (read_whole, storage, schema.name, schema.metadata, part.group, digest)}
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[])
    return da.Array(graph, name, tuple((s,) for s in schema.shape), dtype=schema.dtype)


NESTED_ROWS = 2**14  # rows of NESTED ids converted at once (bounds mortie's temporaries, whatever the batch)


def _nested_block(domain: MortonRanges, start: int, stop: int) -> np.ndarray:
    out = np.empty(stop - start, dtype=np.uint64)
    for a in range(start, stop, NESTED_ROWS):
        b = min(stop, a + NESTED_ROWS)
        nested, _ = mortie.mort2healpix(domain.isel(slice(a, b)).words())
        out[a - start : b - start] = nested
    return out


def fabricated_cell_ids(domain: MortonRanges, row_chunks: tuple[int, ...], where: str) -> da.Array:
    """NESTED ids of the domain's words, computed per chunk from the index (no I/O)."""
    if domain.order > MAX_EXACT_NESTED_ORDER:
        warn(
            f"{where}: NESTED cell_ids at order {domain.order} exceed 2**53 and are unsafe as float64/JS numbers",
            PrecisionWarning,
        )
    if not row_chunks or sum(row_chunks) == 0:
        return da.from_array(np.empty(0, dtype=np.uint64), chunks=-1)
    name = "moczarr-cell_ids-" + tokenize(domain, row_chunks)
    bounds = np.concatenate([[0], np.cumsum(row_chunks)])
    dsk: dict[Key, tuple] = {
        (name, i): (_nested_block, domain, int(bounds[i]), int(bounds[i + 1])) for i in range(len(row_chunks))
    }
    return da.Array(
        HighLevelGraph.from_collections(name, dsk, dependencies=[]), name, (tuple(row_chunks),), dtype=np.uint64
    )


def nested_attrs(order: int, latitude: str | None = None) -> dict:
    """The xdggs (0.7) HEALPix attrs of a NESTED ``cell_ids`` coordinate, and nothing else (xdggs refuses extras).

    mortie cells are equal-area on WGS84 through the authalic latitude (the
    ``dggs.latitude`` of ``authalic-wgs84`` stores, mortie 1.0's default), which
    xdggs spells ``ellipsoid: "WGS84"``; legacy ``geodetic-spherical`` cells sit on
    the sphere (no ``ellipsoid``).
    """
    attrs = {"grid_name": "healpix", "level": int(order), "indexing_scheme": "nested"}
    if latitude != "geodetic-spherical":
        attrs["ellipsoid"] = "WGS84"
    return attrs


def morton_coords(domain: MortonRanges, index_kind: str) -> xr.Coordinates:
    """The ``morton`` coordinate on ``cells``: the lazy MOC index or a materialized pandas index."""
    if index_kind == "moc":
        from ..indexes.moc_index import MortonMocIndex

        return xr.Coordinates.from_xindex(MortonMocIndex.from_ranges(domain, dim=CELLS, coord_name=COORD))
    if index_kind == "pandas":
        import pandas as pd
        from xarray.indexes import PandasIndex

        index = PandasIndex(
            pd.Index(domain.words(), dtype=np.uint64, name=COORD), CELLS, coord_dtype=np.dtype(np.uint64)
        )
        return xr.Coordinates.from_xindex(index)
    raise ArgumentError(f"index_kind must be 'moc' or 'pandas', got {index_kind!r}")


def build_dataset(
    storage: Storage,
    schema: Schema,
    parts: list[Part],
    domain: MortonRanges,
    *,
    index_kind: str = "moc",
    fabricate_cell_ids: str | bool = "auto",
    attrs: dict | None = None,
    batch_bytes: int | None = None,
    verify_chunks: bool = False,
    variables: Collection[str] | None = None,
) -> xr.Dataset:
    """The Dataset of ``parts`` under ``schema``: lazy data variables, the morton index, NESTED ids.

    ``domain`` must hold exactly the rows of ``parts`` in order (the caller's
    coverage arithmetic guarantees it; a mismatch raises ``ValueError``).
    Every cells variable shares one chunking: batches of consecutive parts
    holding up to ``batch_bytes`` (default :data:`~moczarr.dataplane.DEFAULT_BATCH_BYTES`)
    of decoded data of the widest variable, one dask task per batch and variable.
    ``verify_chunks`` checks every object's values against the content hashes
    its part carries (see :class:`~moczarr.dataplane.reads.CellsSource`).
    ``variables`` names the data variables to build (None: every one; a name
    the schema lacks builds nothing); the coordinates are built whatever it says.
    """
    if fabricate_cell_ids not in ("auto", True, False):
        raise ArgumentError(f"fabricate_cell_ids must be 'auto', True or False, got {fabricate_cell_ids!r}")
    rows = [p.n_rows for p in parts]
    if sum(rows) != len(domain):
        raise ValueError(f"row domain holds {len(domain)} cells but the objects give {sum(rows)}")
    live = [p for p, n in zip(parts, rows, strict=True) if n]
    widest = max(
        (row_bytes(a.dtype, a.shape, a.cells_axis) for a in schema.arrays.values() if a.cells_axis is not None),
        default=1,
    )
    row_chunks = batch_row_chunks([n for n in rows if n], widest, batch_bytes or DEFAULT_BATCH_BYTES)
    parts_token = parts_token_of(storage, live) if live else ""
    segments = Segments([p.group for p in live], [p.sel for p in live], [p.n_cells for p in live])
    hashes = [p.hashes for p in live] if verify_chunks else None
    data_vars: dict[str, xr.Variable] = {}
    coords: dict[str, xr.Variable] = {}
    dims = _other_dims(schema)
    for name, arr in schema.arrays.items():
        if name == COORD:
            continue
        if variables is not None and name not in variables and name not in dims and name != NESTED:
            continue
        if arr.cells_axis is None:
            if live:
                coords_or_vars = coords if name in dims else data_vars
                coords_or_vars[name] = xr.Variable(
                    arr.dims, lazy_whole_array(storage, arr, live[0], verify_chunks), arr.attrs
                )
            continue
        digests = part_digests(live, name, hashes) if verify_chunks else None
        var = xr.Variable(
            arr.dims, lazy_cells_array(storage, arr, segments, row_chunks, parts_token, digests), arr.attrs
        )
        if name == NESTED:
            if fabricate_cell_ids is True:
                continue
            coords[name] = var
        else:
            data_vars[name] = var
    if NESTED not in coords and fabricate_cell_ids in ("auto", True):
        latitude = (
            (schema.group_attrs.get("dggs") or {}).get("latitude")
            if isinstance(schema.group_attrs.get("dggs"), dict)
            else None
        )
        coords[NESTED] = xr.Variable(
            (CELLS,), fabricated_cell_ids(domain, row_chunks, storage.location), nested_attrs(domain.order, latitude)
        )
    ds = xr.Dataset(data_vars, coords=morton_coords(domain, index_kind))
    ds = ds.assign_coords(coords)
    ds.attrs.update(attrs or {})
    return ds


def _other_dims(schema: Schema) -> set[str]:
    return {d for a in schema.arrays.values() for d in a.dims if d != CELLS}


def rows_in(domain: MortonRanges, first_ranks: np.ndarray, n_cells: int) -> list[np.ndarray | None]:
    """Per object (subtrees starting at ``first_ranks``, ``n_cells`` each): local positions in ``domain``.

    None where the whole subtree is in the domain. Vectorized over intervals.
    """
    first = np.asarray(first_ranks, dtype=np.uint64)
    last = first + np.uint64(n_cells - 1)
    lo, hi = domain.lo, domain.hi
    start = np.searchsorted(hi, first, side="left")
    stop = np.searchsorted(lo, last, side="right")
    out: list[np.ndarray | None] = []
    for j in range(first.size):
        a, b = int(start[j]), int(stop[j])
        if b - a == 1 and lo[a] <= first[j] and hi[a] >= last[j]:
            out.append(None)
            continue
        plo = np.maximum(lo[a:b], first[j]) - first[j]
        phi = np.minimum(hi[a:b], last[j]) - first[j]
        lengths = (phi - plo + np.uint64(1)).astype(np.int64)
        pos = np.repeat(plo.astype(np.int64), lengths) + (
            np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        )
        out.append(pos)
    return out


def domain_of(object_words: np.ndarray, cell_order: int, aoi: np.ndarray | None) -> MortonRanges:
    """The row domain: the objects' subtrees at ``cell_order``, intersected with the AOI cover."""
    words = np.asarray(object_words, dtype=np.uint64)
    full = MortonRanges.from_subtrees(words, cell_order) if words.size else MortonRanges.empty(cell_order)
    if aoi is None:
        return full
    return full.intersection(aoi_ranges(aoi, cell_order))


def aoi_ranges(aoi_words: np.ndarray, cell_order: int) -> MortonRanges:
    """An AOI cover as cell-order intervals: a member finer than ``cell_order`` selects its containing cell."""
    if aoi_words.size == 0:
        return MortonRanges.empty(cell_order)
    orders = mortie.orders_of(aoi_words)
    words = aoi_words.copy()
    fine = orders > cell_order
    if fine.any():
        words[fine] = mortie.clip2order(cell_order, aoi_words[fine])
    return MortonRanges.from_subtrees(np.unique(words), cell_order)


__all__ = [
    "ArraySchema",
    "Part",
    "Schema",
    "build_dataset",
    "check_verify_chunks",
    "domain_of",
    "ids",
    "pick_cells",
    "read_schema",
    "rows_in",
]
