"""The exception and warning types the hive reader raises and emits, and :func:`warn`.

Every error is a :class:`MoczarrError` and belongs to one of four families a
caller can catch by meaning:

- :class:`ArgumentError` (also a ``ValueError``): an argument the call cannot take;
- :class:`ContentError` (also a ``ValueError``): store content that is present but damaged
  or untrustworthy (a manifest, a stamp, a coverage object, a chunk, a key);
- :class:`StorageError` (also an ``OSError``): the storage failed to serve an object;
- :class:`NotFoundError` (also a ``LookupError``): a thing asked for is not there.

Each error also subclasses the builtin that best describes it, so callers
catching the builtins keep working. Warnings all subclass :class:`MoczarrWarning`,
itself a ``UserWarning``, so ``warnings.simplefilter("error", MoczarrWarning)``
turns every degrade path into a failure. The rule behind the split (the
seed's): caches degrade with a warning, corrupt content raises.

This module imports nothing heavy: touching an error type loads no zarr,
dask or xarray. Errors that need such a base live beside the code that raises
them (:class:`moczarr.indexes.moc_index.IndexKindMismatchError`), as do the
moraine reader's (:mod:`moczarr.moraine`) and the catalog's.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType


class MoczarrError(Exception):
    """Base class of every error moczarr raises on purpose."""


# -- the four families -------------------------------------------------------


class ArgumentError(MoczarrError, ValueError):
    """An argument of the wrong type or value (``products=``, ``index_kind=``, a path, options)."""


class ContentError(MoczarrError, ValueError):
    """Store content that is present but damaged, malformed, or of a version this reader cannot read."""


class StorageError(MoczarrError, OSError):
    """The object store failed to serve an object (after the retry budget); names the object."""


class NotFoundError(MoczarrError, LookupError):
    """Something asked for (a store, a level, a field, a leaf) is not there."""


# -- bad arguments -----------------------------------------------------------


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type (also a ``TypeError``)."""


class AOIError(ArgumentError):
    """An ``aoi=`` argument that is not a set of valid morton ids, a place, or a ``mortie.Moc``."""


class AOITypeError(AOIError, ArgumentTypeError):
    """An ``aoi=`` or label argument of a type that cannot spell morton ids (a float, a boolean, ...)."""


class WindowError(ArgumentError):
    """A ``window=`` argument that the store cannot take (missing, refused, unknown, or ``all``)."""


class LevelError(ArgumentError):
    """A ``cell_order=`` or ``levels=`` argument naming no level the call can open.

    Not an integer cell order in 0..29, not a declared level of the store, or
    a level of another kind than the call opens (``open_overview_order``).
    """


class ProductError(ArgumentError):
    """A ``products=`` argument the store root cannot take (a bare store, or a name it does not hold)."""


class ObstoreUnsupportedError(ArgumentError):
    """obstore cannot serve an object-store root with these options; the message says why (fsspec then reads it)."""


class MissingExtraError(ArgumentError, ImportError):
    """A URL or command needs an optional dependency this install lacks; the message names the extra that adds it."""

    @classmethod
    def of(cls, what: str, extra: str, modules: str) -> MissingExtraError:
        """``what`` (a URL, a command) needs ``modules``: install them with ``pip install 'moczarr[extra]'``."""
        return cls(f"{what} needs {modules}, not installed here: pip install 'moczarr[{extra}]'")


class MixedOrderError(ArgumentError):
    """A rank-space structure was handed words of more than one cell order."""


class MapError(ArgumentError):
    """A Dataset or variable the map helpers cannot place (no ``morton`` coordinate, not one value per cell)."""


# -- damaged store content ---------------------------------------------------


class ManifestError(ContentError):
    """``morton_hive.json`` is missing a field, malformed, or of an unknown spec."""


class CoverageError(ContentError):
    """A coverage object is present but corrupt (a bad range, a bitmap of the wrong size)."""


class StaleCoverageError(ContentError, LookupError):
    """Committed leaves exist but the root coverage MOC names none of them."""


class StampError(ContentError):
    """A commit stamp or ``zarr.json`` is present but cannot be parsed or trusted."""


class SchemaError(StampError):
    """A data group's metadata contradicts what its stamp declares, or an array's metadata cannot be used."""


class KeyContainmentError(ContentError):
    """A key read from store content (a name, a pointer, a location) is not one path component of its grammar.

    Composing a key from it could address something outside the object it
    belongs to (or outside the store), so it is refused before any read.
    """


class VersionPointerError(StampError, KeyContainmentError):
    """A stamp's ``current`` is not one path component beginning ``run-``."""


class ArrayContractError(ContentError):
    """An array violates a zagg array convention it declares (composition fill, ragged layout, ...)."""


class ChunkError(ArrayContractError):
    """A data chunk that cannot be decoded (empty, truncated, corrupt, wrong size), or is not the recorded one."""


class ContentHashError(ChunkError):
    """A chunk whose values do not hash to the ``content_hashes`` its object's stamp records.

    Replaced, altered or deleted after the stamp was written (a deleted chunk
    reads as fill, and fill is not what the stamp recorded). Named by the
    chunk's key; raised only by an open with ``verify_chunks=True`` (the
    verifier reports the same as a finding); without it the stored values are read.
    """


class RaggedError(ArrayContractError):
    """A ragged declaration this reader must refuse (unknown spec, no well-formed element)."""


class PyramidError(ContentError):
    """A pyramid declaration or a derived object is malformed or contradicts its address."""


class UnsupportedVersionError(ContentError):
    """An object declares a format version newer than this reader supports."""


# -- storage failures --------------------------------------------------------


class StoreNotFoundError(StorageError, NotFoundError, FileNotFoundError):
    """The store root itself does not exist (a local folder that is not there)."""


class StorageTimeoutError(StorageError, TimeoutError):
    """An object did not arrive within the read timeout (a stalled or unreachable server)."""


class StoragePermissionError(StorageError, PermissionError):
    """The object store refused access to an object (403, missing credentials)."""


class StorageThrottledError(StorageError):
    """The object store kept throttling (``SlowDown``, 503) past the retry budget."""


class ChecksumMismatchError(StorageError, ConnectionError):
    """A body that does not hash to its object's MD5 ETag: damaged in transit (retried like a broken connection)."""


# -- missing things ----------------------------------------------------------


class NotAHiveStoreError(NotFoundError, FileNotFoundError):
    """The path holds no morton-hive manifest (and is not a product root)."""


class NoCoverageError(NotFoundError):
    """The store holds no stamped leaf at all, so there is nothing to open (not even a schema)."""


class UncommittedError(NotFoundError):
    """A zarr object that was asked for by name carries no commit stamp (missing or debris)."""


class LevelOmittedError(NotFoundError):
    """A declared level asked for by itself (``open_level``) has no materialized object to open.

    The tree openers leave such a level out with a :class:`LevelOmittedWarning` instead.
    """


class SelectionError(NotFoundError, KeyError):
    """A field or cell asked for by name is not in the level (also a ``KeyError``)."""


# -- warnings ----------------------------------------------------------------


class MoczarrWarning(UserWarning):
    """Base class of every warning moczarr emits."""


class CoverageFallbackWarning(MoczarrWarning):
    """A coverage cache was unusable; the reader fell back to a slower but exact path."""


class DebrisWarning(MoczarrWarning):
    """A leaf that claims committed data (a stamped version pointer) has none; it was skipped."""


class MissingLeafWarning(MoczarrWarning):
    """The root coverage MOC names a shard of an unwindowed store whose leaf is missing entirely; it was left out."""


class EmptySelectionWarning(MoczarrWarning):
    """The AOI or window selected no leaf; the result is schema-correct with zero rows."""


class IndexDegradedWarning(MoczarrWarning):
    """A selection the lazy MOC index cannot represent; the index was dropped."""


class PrecisionWarning(MoczarrWarning):
    """NESTED ids above order 24 exceed 2**53 and are unsafe as float64 / JS numbers."""


class ObjectDroppedWarning(MoczarrWarning):
    """A derived (cache) object could not be interpreted and was left out."""


class LevelOmittedWarning(MoczarrWarning):
    """A declared pyramid level had nothing materialized and was left out of ``open_pyramid`` / ``open_store``."""


#: Modules whose frames a warning walks out of: this package, its catalog, and xarray.
_LIBRARY_PREFIXES = ("moczarr", "xarray.")


def find_stack_level() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside moczarr and xarray.

    The pattern of xarray's own ``find_stack_level``: walk out of the library's
    modules instead of counting frames by hand, so a warning raised deep inside
    ``open_store`` points at the user's line however the call got there.
    """
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(_LIBRARY_PREFIXES):
        frame, level = frame.f_back, level + 1
    return level


def warn(message: str, category: type[Warning]) -> None:
    """Emit ``message`` as ``category`` at the caller's line (see :func:`find_stack_level`)."""
    warnings.warn(message, category, stacklevel=find_stack_level())


__all__ = [
    "AOIError",
    "AOITypeError",
    "ArgumentError",
    "ArgumentTypeError",
    "ArrayContractError",
    "ChecksumMismatchError",
    "ChunkError",
    "ContentError",
    "ContentHashError",
    "CoverageError",
    "CoverageFallbackWarning",
    "DebrisWarning",
    "EmptySelectionWarning",
    "IndexDegradedWarning",
    "KeyContainmentError",
    "LevelError",
    "LevelOmittedError",
    "LevelOmittedWarning",
    "ManifestError",
    "MapError",
    "MissingExtraError",
    "MissingLeafWarning",
    "MixedOrderError",
    "MoczarrError",
    "MoczarrWarning",
    "NoCoverageError",
    "NotAHiveStoreError",
    "NotFoundError",
    "ObjectDroppedWarning",
    "ObstoreUnsupportedError",
    "PrecisionWarning",
    "ProductError",
    "PyramidError",
    "RaggedError",
    "SchemaError",
    "SelectionError",
    "StaleCoverageError",
    "StampError",
    "StorageError",
    "StoragePermissionError",
    "StorageThrottledError",
    "StorageTimeoutError",
    "StoreNotFoundError",
    "UncommittedError",
    "UnsupportedVersionError",
    "VersionPointerError",
    "WindowError",
    "find_stack_level",
    "warn",
]
