"""The error hierarchy: four families that partition the reader's errors, and argument checks filed as arguments."""

from __future__ import annotations

import inspect
import shutil

import pytest

import moczarr
import moczarr.errors as errors
import moczarr.indexes.moc_index
import moczarr.moraine
from moczarr.backend import resolve_cell_order
from tests.helpers import REPO

ELEVATION = REPO / "catalogs" / "sample" / "elevation"

FAMILIES = (errors.ArgumentError, errors.ContentError, errors.StorageError, errors.NotFoundError)

#: Errors deliberately in two families, and why.
TWO_FAMILIES = {
    # a local store root that is not there: the storage cannot serve it (StorageError, so a caller
    # retrying storage failures sees it) and the thing asked for is missing (NotFoundError, so a caller
    # catching "not there" does too); FileNotFoundError is both in the builtins as well
    errors.StoreNotFoundError: {errors.StorageError, errors.NotFoundError},
}


def reader_errors() -> list[type]:
    """Every concrete error class of the reader: ``moczarr.errors`` and those beside the code that raises them."""
    seen, todo = set(), [errors.MoczarrError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen and sub.__module__.split(".")[0] == "moczarr":
                seen.add(sub)
                todo.append(sub)
    return sorted(seen - set(FAMILIES), key=lambda c: (c.__module__, c.__name__))


def test_the_four_families_partition_the_readers_errors():
    found = reader_errors()
    # the walk reaches the errors that live outside moczarr.errors too (so the check is not vacuous)
    assert {
        moczarr.indexes.moc_index.IndexKindMismatchError,
        moczarr.moraine.MoraineLevelError,
        moczarr.moraine.NotAMorainePyramidError,
    } <= set(found)
    for cls in found:
        families = {f for f in FAMILIES if issubclass(cls, f)}
        assert families == TWO_FAMILIES.get(cls, families) and len(families) == (2 if cls in TWO_FAMILIES else 1), (
            f"{cls.__module__}.{cls.__name__} is in {sorted(f.__name__ for f in families)}"
        )


def test_every_exported_error_is_a_moczarr_error_in_a_family():
    exported = [getattr(errors, n) for n in errors.__all__]
    classes = [c for c in exported if inspect.isclass(c) and issubclass(c, Exception) and not issubclass(c, Warning)]
    assert len(classes) > len(FAMILIES) and all(issubclass(c, errors.MoczarrError) for c in classes)
    warnings = [c for c in exported if inspect.isclass(c) and issubclass(c, Warning)]
    assert warnings and all(issubclass(c, errors.MoczarrWarning) for c in warnings)
    assert set(reader_errors()) >= set(classes) - set(FAMILIES) - {errors.MoczarrError}


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: moczarr.open_level(ELEVATION, 7), "cell order 7 is not a level of this store; levels: 8"),
        (lambda: moczarr.open_level(ELEVATION, "8"), "cell_order='8' must be an integer cell order"),
        (lambda: moczarr.open_level(ELEVATION, 30), "outside the HEALPix orders"),
        (lambda: moczarr.open_overview_order(ELEVATION, 8), "cell order 8 is a source level, not an overview"),
        (lambda: moczarr.open_pyramid(ELEVATION, levels=[5]), r"cell orders \[5\] are not levels"),
        (lambda: moczarr.open_pyramid(ELEVATION, levels=[]), "names no level"),
    ],
)
def test_level_arguments_raise_level_error(call, match):
    with pytest.raises(errors.LevelError, match=match) as info:
        call()
    assert isinstance(info.value, errors.ArgumentError) and not isinstance(info.value, errors.ContentError)


@pytest.mark.parametrize(
    "leaf, match",
    [
        ("not-a-leaf", "leaf='not-a-leaf' does not name a leaf"),
        ("433", "leaf='433' is not at the store's shard order 6"),
    ],
)
def test_a_leaf_argument_naming_no_leaf_is_an_argument_error(leaf, match):
    with pytest.raises(errors.ArgumentError, match=match) as info:
        moczarr.open_leaf(ELEVATION, leaf)
    assert not isinstance(info.value, errors.ContentError)


@pytest.mark.parametrize("batch_bytes", [0, -1, 2.5, "4MiB", True])
def test_batch_bytes_must_be_a_positive_integer(batch_bytes):
    with pytest.raises(errors.ArgumentError, match=rf"batch_bytes={batch_bytes!r} must be a positive number"):
        moczarr.open_hive(ELEVATION, batch_bytes=batch_bytes)


def test_a_cell_order_alias_that_is_no_integer_is_an_argument_type_error():
    with pytest.raises(errors.ArgumentTypeError, match="must be integers or decimal strings"):
        resolve_cell_order(zoom="six")
    assert resolve_cell_order(zoom="6") == 6


def test_read_ragged_on_an_omitted_level_raises_level_omitted(tmp_path):
    """read_ragged rides open_level: a level with nothing materialized is a LevelOmittedError, not a missing field."""
    root = tmp_path / "elevation"
    shutil.copytree(ELEVATION, root)
    (root / "coverage.moc").unlink()  # the overview levels cannot be enumerated
    with pytest.raises(errors.LevelOmittedError, match="overview level o6 cannot be enumerated"):
        moczarr.read_ragged(root, "h_tdigest", ["433142"], cell_order=6)
