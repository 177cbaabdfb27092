"""The exception and warning types moczarr raises and emits.

Errors subclass both :class:`MoczarrError` and the builtin that best describes
them (``ValueError`` for bad content, ``LookupError`` for missing things), so
callers can catch either. Warnings all subclass :class:`MoczarrWarning`, itself
a ``UserWarning``, so ``warnings.simplefilter("error", MoczarrWarning)`` turns
every degrade path into a failure.

The rule behind the split (the seed's): caches degrade with a warning, corrupt
content raises.
"""

from __future__ import annotations

import os
import sys
import warnings

import xarray as xr


class MoczarrError(Exception):
    """Base class of every error moczarr raises on purpose."""


class NotAHiveStoreError(MoczarrError, FileNotFoundError):
    """The path holds no morton-hive manifest (and is not a product root)."""


class ManifestError(MoczarrError, ValueError):
    """``morton_hive.json`` is missing a field, malformed, or of an unknown spec."""


class CoverageError(MoczarrError, ValueError):
    """A coverage object is present but corrupt (a bad range, a bitmap of the wrong size)."""


class ArrayContractError(MoczarrError, ValueError):
    """An array violates a zagg array convention it declares (composition fill, ragged layout, ...)."""


class StampError(MoczarrError, ValueError):
    """A commit stamp or ``zarr.json`` is present but cannot be parsed or trusted."""


class KeyContainmentError(MoczarrError, ValueError):
    """A key read from store content (a name, a pointer, a location) is not one path component of its grammar.

    Composing a key from it could address something outside the object it
    belongs to (or outside the store), so it is refused before any read.
    """


class VersionPointerError(StampError, KeyContainmentError):
    """A stamp's ``current`` is not one path component beginning ``run-``."""


class NoCoverageError(MoczarrError, LookupError):
    """The store holds no stamped leaf at all, so there is nothing to open (not even a schema)."""


class StaleCoverageError(MoczarrError, LookupError):
    """Committed leaves exist but the root coverage MOC names none of them."""


class WindowError(MoczarrError, ValueError):
    """A ``window=`` argument that the store cannot take (missing, refused, unknown, or ``all``)."""


class AOIError(MoczarrError, ValueError):
    """An ``aoi=`` argument that is not a set of valid morton ids or a ``mortie.Moc``."""


class AOITypeError(AOIError, TypeError):
    """An ``aoi=`` or label argument of a type that cannot spell morton ids (a float, a boolean, ...)."""


class MixedOrderError(MoczarrError, ValueError):
    """A rank-space structure was handed words of more than one cell order."""


class PyramidError(MoczarrError, ValueError):
    """A pyramid declaration or a derived object is malformed or contradicts its address."""


class UnsupportedVersionError(MoczarrError, ValueError):
    """An object declares a format version newer than this reader supports."""


class SchemaError(StampError):
    """A data group's metadata contradicts what its stamp declares, or an array's metadata cannot be used."""


class ChunkError(ArrayContractError):
    """A data chunk is present but cannot be decoded (empty, truncated, corrupt, wrong size)."""


class StorageError(MoczarrError, OSError):
    """The object store failed to serve an object (after the retry budget); names the object."""


class StoreNotFoundError(StorageError, FileNotFoundError):
    """The store root itself does not exist (a local folder that is not there)."""


class StorageTimeoutError(StorageError, TimeoutError):
    """An object did not arrive within the read timeout (a stalled or unreachable server)."""


class StoragePermissionError(StorageError, PermissionError):
    """The object store refused access to an object (403, missing credentials)."""


class StorageThrottledError(StorageError):
    """The object store kept throttling (``SlowDown``, 503) past the retry budget."""


class ArgumentError(MoczarrError, ValueError):
    """An opener argument of the wrong type or value (``products=``, ``index_kind=``, a path, options)."""


class ProductError(ArgumentError):
    """A ``products=`` argument the store root cannot take (a bare store, or a name it does not hold)."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An opener argument of the wrong type (also a ``TypeError``)."""


class SelectionError(MoczarrError, KeyError):
    """A field or cell asked for by name is not in the level (also a ``KeyError``)."""


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
    """A declared pyramid level could not be opened and was left out of the tree."""


class LevelOmittedError(MoczarrError, LookupError):
    """A level asked for by name has no materialized object to open (see :class:`LevelOmittedWarning`)."""


class UncommittedError(MoczarrError, LookupError):
    """A zarr object that was asked for by name carries no commit stamp (missing or debris)."""


class RaggedError(ArrayContractError):
    """A ragged declaration this reader must refuse (unknown spec, no well-formed element)."""


class IndexKindMismatchError(MoczarrError, xr.AlignmentError):
    """A moc-indexed and a pandas-indexed ``morton`` met in one alignment or concat."""


class NotAMorainePyramidError(PyramidError):
    """The directory is neither a marked (version >= 1) nor a legacy moraine pyramid."""


class MoraineLevelError(MoczarrError, IndexError):
    """A ``level=`` argument outside the levels a pyramid has."""


class MissingSchemaError(MoczarrError, LookupError):
    """A JSON schema needed to validate a STAC document is not available offline."""


_PACKAGE_DIRS = tuple(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep + name + os.sep
    for name in ("moczarr", "moczarr_moraine", "moczarr_intake")
)
_LIBRARY_DIRS = _PACKAGE_DIRS + (os.path.dirname(xr.__file__) + os.sep,)


def find_stack_level() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside moczarr and xarray.

    The pattern of xarray's own ``find_stack_level``: walk out of the library's
    files instead of counting frames by hand, so a warning raised deep inside
    ``open_store`` points at the user's line however the call got there.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    return level


def warn(message: str, category: type[Warning]) -> None:
    """Emit ``message`` as ``category`` at the caller's line (see :func:`find_stack_level`)."""
    warnings.warn(message, category, stacklevel=find_stack_level())


class MapError(MoczarrError, ValueError):
    """A Dataset or variable the map helpers cannot place (no ``morton`` coordinate, not one value per cell)."""
