"""Times: ``time=(start, end)`` on the openers, window spans, and per-cell ``observed`` envelopes (FORMAT.md §10).

A time range is half-open, ``[start, end)`` in UTC, like the windows it is
matched against (a boundary instant belongs to the later window). ``start``
and ``end`` may be ``datetime`` (naive means UTC), ISO strings,
``numpy.datetime64`` or ``pandas.Timestamp``.

On a windowed (``morton-hive/2``) store ``time=`` selects every window whose
span overlaps the range: explicit schedules take spans from the manifest's
``temporal.windows``; ``yearly``/``monthly``/``daily`` labels are their
calendar span. The openers then return one Dataset with a ``window``
dimension (one entry per selected window, in label order) beside ``cells``
(the union of the windows' rows; a row absent from a window reads as the
variable's missing value, which promotes integers to float). ``time=`` and
``window=`` are exclusive. On an unwindowed store ``time=`` is refused: its
leaves carry no window to select (narrow rows with :func:`observed_between`).
"""

from __future__ import annotations

import datetime as dt
import warnings
from dataclasses import dataclass
from typing import overload

import mortie
import numpy as np
import pandas as pd
import xarray as xr

from ..dataplane.assemble import CELLS, COORD, NESTED, fabricated_cell_ids
from ..errors import EmptySelectionWarning, SelectionError, WindowError, warn

#: the attrs a per-cell toc envelope array declares (FORMAT.md §10.3)
PER_CELL = "per-cell"
TOC_SPEC = "zagg-toc/1"


@dataclass(frozen=True)
class TimeRange:
    """A checked half-open UTC range ``[start, end)`` as ``datetime64[ns]``."""

    start: np.datetime64
    end: np.datetime64

    def overlaps(self, lo: np.datetime64, hi: np.datetime64) -> bool:
        """Does the half-open span ``[lo, hi)`` share an instant with this range?"""
        return bool(lo < self.end and self.start < hi)

    def record(self) -> list[str]:
        return [str(self.start) + "Z", str(self.end) + "Z"]


def as_instant(value, argument: str) -> np.datetime64:
    """One instant as UTC ``datetime64[ns]``; raises :class:`WindowError` naming ``argument``."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, np.number)):
        raise WindowError(f"{argument}={value!r} is not a time (want a datetime, an ISO string or numpy.datetime64)")
    try:
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        if isinstance(value, str):
            stamp = pd.Timestamp(value)
            if stamp.tzinfo is not None:
                stamp = stamp.tz_convert("UTC").tz_localize(None)
            value = stamp.to_datetime64()
        elif isinstance(value, pd.Timestamp) and value.tzinfo is not None:
            value = value.tz_convert("UTC").tz_localize(None).to_datetime64()
        out = np.datetime64(value, "ns")
    except (ValueError, TypeError, OverflowError) as exc:
        raise WindowError(f"{argument}={value!r} is not a time: {exc}") from None
    if np.isnat(out):
        raise WindowError(f"{argument}={value!r} is not a time (NaT)")
    return out


@overload
def as_time_range(time: None, argument: str = "time") -> None: ...
@overload
def as_time_range(time: TimeRange | tuple | list, argument: str = "time") -> TimeRange: ...
@overload
def as_time_range(time: object, argument: str = "time") -> TimeRange | None: ...
def as_time_range(time, argument: str = "time") -> TimeRange | None:
    """A ``(start, end)`` pair as a :class:`TimeRange`; None for None. Raises :class:`WindowError`.

    Refused: anything but a pair, an unparsable instant, ``start >= end``.
    """
    if time is None or isinstance(time, TimeRange):
        return time
    if isinstance(time, (str, bytes)) or not hasattr(time, "__len__") or len(time) != 2:
        raise WindowError(f"{argument}={time!r} must be a (start, end) pair of times")
    start = as_instant(time[0], f"{argument}[0]")
    end = as_instant(time[1], f"{argument}[1]")
    if not start < end:
        raise WindowError(f"{argument}: start {start} must be before end {end} (the range is half-open [start, end))")
    return TimeRange(start, end)


def window_or_time(window, time, where: str = ""):
    """The one window argument the internal openers take: a label, None, or a :class:`TimeRange`."""
    span = as_time_range(time)
    if span is None:
        return window
    if window is not None:
        raise WindowError(f"{where + ': ' if where else ''}window= and time= are exclusive; pass one")
    return span


# -- window spans -----------------------------------------------------------------------------------
def window_span(manifest, label: str) -> tuple[np.datetime64, np.datetime64] | None:
    """The UTC span ``[start, end)`` of a window label from the manifest's ``temporal`` block, or None."""
    schedule = manifest.schedule
    if schedule == "explicit":
        for entry in (manifest.temporal or {}).get("windows") or []:
            if isinstance(entry, dict) and entry.get("label") == label:
                try:
                    if "timestamp" in entry:
                        t = as_instant(entry["timestamp"], "timestamp")
                        return t, t + np.timedelta64(1, "s")
                    return as_instant(entry["start"], "start"), as_instant(entry["end"], "end")
                except (KeyError, WindowError):
                    return None
        return None
    try:
        if schedule == "yearly":
            lo = pd.Timestamp(year=int(label), month=1, day=1)
            hi = pd.Timestamp(year=int(label) + 1, month=1, day=1)
        elif schedule == "monthly":
            lo = pd.Timestamp(year=int(label[:4]), month=int(label[4:6]), day=1)
            hi = lo + pd.offsets.MonthBegin(1)
        elif schedule == "daily":
            lo = pd.Timestamp(label)
            hi = lo + pd.Timedelta(days=1)
        else:
            return None
    except (ValueError, OverflowError):
        return None
    return lo.to_datetime64().astype("datetime64[ns]"), hi.to_datetime64().astype("datetime64[ns]")


def windows_overlapping(manifest, labels: list[str], span: TimeRange) -> list[str]:
    """The labels (of those given) whose span overlaps ``span``, sorted; unknown spans are left out."""
    out = []
    for label in sorted(labels):
        s = window_span(manifest, label)
        if s is not None and span.overlaps(*s):
            out.append(label)
    return out


def check_time_store(manifest, span: TimeRange) -> None:
    """Refuse ``time=`` on an unwindowed store."""
    if not manifest.windowed:
        raise WindowError(
            f"{manifest.location}: time={span.record()} given but the store is unwindowed (morton-hive/1); "
            "its leaves carry no window to select; narrow rows with moczarr.observed_between"
        )


def over_windows(manifest, present: list[str], span: TimeRange, open_one) -> xr.Dataset:
    """One Dataset with a ``window`` dimension from ``open_one(label)`` for each window of ``present`` (every
    window of the store) overlapping ``span``.

    When none overlaps, the first present window is opened with no rows
    (``open_one(label, empty=True)``) and an
    :class:`~moczarr.errors.EmptySelectionWarning` names the windows present.
    What ``open_one`` raises propagates.
    """
    selected = windows_overlapping(manifest, present, span)
    if not selected:
        if not present:
            raise WindowError(f"{manifest.location}: time={span.record()} selects no window: the store has none")
        warn(
            f"{manifest.location}: time={span.record()} overlaps no window; windows present: {', '.join(present)}; "
            "returning the schema with 0 rows",
            EmptySelectionWarning,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptySelectionWarning)
            ds = open_one(min(present), empty=True)
        ds = ds.expand_dims(window=np.asarray([], dtype=object))
        ds.attrs = {
            **ds.attrs,
            "morton_hive": {**ds.attrs.get("morton_hive", {}), "window": None, "windows": [], "time": span.record()},
        }
        return ds
    parts = [open_one(label) for label in selected]
    return stack_windows(parts, selected, span)


def stack_windows(parts: list[xr.Dataset], labels: list[str], span: TimeRange) -> xr.Dataset:
    """Concatenate per-window Datasets on a new ``window`` dimension, aligning rows (outer join on ``morton``)."""
    same = all(p.xindexes[COORD].equals(parts[0].xindexes[COORD]) for p in parts[1:])
    bare = [p.drop_vars([NESTED], errors="ignore") for p in parts]
    index = pd.Index(labels, name="window", dtype=object)
    out = xr.concat(
        bare,
        dim=index,
        join="exact" if same else "outer",
        combine_attrs="drop",
        data_vars="all",
        coords="minimal",
        compat="override",
    )
    if NESTED in parts[0].coords:
        idx = out.xindexes[COORD]
        domain = idx.ranges if hasattr(idx, "ranges") else None
        if domain is not None:
            attrs = parts[0][NESTED].attrs
            coord_chunks = out[COORD].chunks
            chunks = coord_chunks[0] if coord_chunks else (out.sizes[CELLS],)
            out = out.assign_coords(
                {NESTED: xr.Variable((CELLS,), fabricated_cell_ids(domain, tuple(chunks), ""), attrs)}
            )
        else:
            words = np.asarray(out[COORD].values, dtype=np.uint64)
            nested = np.asarray(mortie.mort2healpix(words)[0], dtype=np.uint64) if words.size else words
            out = out.assign_coords({NESTED: xr.Variable((CELLS,), nested, parts[0][NESTED].attrs)})
    hive = dict(parts[0].attrs.get("morton_hive", {}))
    per_window = {
        label: {
            k: p.attrs.get("morton_hive", {}).get(k)
            for k in ("n_leaves", "leaves", "time_range")
            if k in p.attrs.get("morton_hive", {})
        }
        for label, p in zip(labels, parts, strict=True)
    }
    for key in ("leaves", "n_leaves", "n_versioned", "cells_with_data", "granule_count", "written_at", "time_range"):
        hive.pop(key, None)
    hive.update(window=None, windows=per_window, time=span.record())
    out.attrs = {**parts[0].attrs, "morton_hive": hive}
    if any("zagg_objects" in p.attrs for p in parts):
        out.attrs["zagg_objects"] = [entry for p in parts for entry in p.attrs.get("zagg_objects") or []]
    return out


# -- per-cell observation envelopes --------------------------------------------------------------------
def observed_variables(ds: xr.Dataset) -> list[str]:
    """Names of the per-cell toc envelope arrays (``temporal: {spec: zagg-toc/1, shape: per-cell}``)."""
    out = []
    for name, var in ds.variables.items():
        t = var.attrs.get("temporal")
        if isinstance(t, dict) and t.get("spec") == TOC_SPEC and t.get("shape") == PER_CELL:
            out.append(str(name))
    return out


def observed_mask(ds: xr.Dataset, start, end, *, variable: str | None = None) -> np.ndarray:
    """Per row: was the cell observed in ``[start, end)`` according to its per-cell toc envelope?

    Word 0 is unobserved. The test is mortie's ``toc_overlaps`` on each word's
    conservative envelope: it never misses an observation in the range and
    may keep a cell whose envelope grazes an edge by one quantum (2**31 ns,
    about 2 s). Reads the envelope array (one read per object). Raises
    :class:`WindowError` for a bad range and ``KeyError`` when the Dataset has
    no per-cell envelope (or several and ``variable`` is not given).
    """
    span = as_time_range((start, end))
    names = observed_variables(ds)
    if variable is None:
        if len(names) != 1:
            raise SelectionError(
                f"the Dataset has {len(names)} per-cell toc envelope arrays ({', '.join(names) or 'none'}); "
                "observed_between needs exactly one (pass variable=)"
            )
        variable = names[0]
    elif variable not in names:
        raise SelectionError(
            f"{variable!r} is not a per-cell toc envelope array of the Dataset (have: {', '.join(names) or 'none'})"
        )
    words = np.asarray(ds[variable].values, dtype=np.uint64)
    if words.ndim != 1:
        raise SelectionError(f"{variable!r} has dims {ds[variable].dims}; observed_between works on one cells axis")
    lo = int(mortie.from_datetime64(span.start))
    hi = int(mortie.from_datetime64(span.end))
    live = words != 0
    hit = np.zeros(words.shape, dtype=bool)
    if live.any():
        hit[live] = np.asarray(mortie.toc_overlaps(words[live], lo, hi), dtype=bool)
    return hit


def observed_between(ds: xr.Dataset, start, end, *, variable: str | None = None) -> xr.Dataset:
    """The rows of ``ds`` whose per-cell ``observed`` envelope overlaps ``[start, end)`` (see :func:`observed_mask`)."""
    return ds.isel({CELLS: np.flatnonzero(observed_mask(ds, start, end, variable=variable))})


__all__ = [
    "TimeRange",
    "as_time_range",
    "observed_between",
    "observed_mask",
    "observed_variables",
    "over_windows",
    "window_span",
    "windows_overlapping",
]
