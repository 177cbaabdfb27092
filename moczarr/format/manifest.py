"""``morton_hive.json``: parse and validate the store manifest (FORMAT.md §2.2, §10.1).

The manifest is the bootstrap of every open: an unknown ``spec`` or a
malformed field raises :class:`~moczarr.errors.ManifestError` naming the store
and the field. Unknown keys are ignored.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ManifestError, WindowError
from ..ids import ALL_TOKEN, WINDOW_RE

MANIFEST_NAME = "morton_hive.json"
SUPPORTED_SPECS = ("morton-hive/1", "morton-hive/2")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

#: label patterns of the generative window schedules (FORMAT.md §10.1)
SCHEDULE_PATTERNS = {
    "yearly": re.compile(r"^\d{4}$"),
    "monthly": re.compile(r"^\d{4}(0[1-9]|1[0-2])$"),
    "daily": re.compile(r"^\d{4}(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])$"),
}


@dataclass(frozen=True)
class Manifest:
    """A validated manifest. ``raw`` keeps the parsed JSON verbatim."""

    spec: str
    dataset: dict
    semantic_hash: str | None
    cell_order: int
    shard_order: int
    path_grouping: int
    pyramid: Any
    temporal: dict | None
    multiscales: list | None
    generated_at: str | None
    raw: dict = field(repr=False)
    location: str = ""

    @property
    def windowed(self) -> bool:
        """True for ``morton-hive/2`` stores, whose leaves are all time-windowed."""
        return self.spec == "morton-hive/2"

    @property
    def schedule(self) -> str:
        """The window schedule (``none`` on unwindowed stores)."""
        return (self.temporal or {}).get("schedule", "none") if self.windowed else "none"

    @property
    def declared_windows(self) -> list[str]:
        """Window labels the manifest declares (explicit schedules only; declared, not necessarily written)."""
        windows = (self.temporal or {}).get("windows") or []
        return [w["label"] for w in windows if isinstance(w, dict) and isinstance(w.get("label"), str)]

    @property
    def short_name(self) -> str | None:
        return self.dataset.get("short_name")

    @property
    def cells_per_leaf(self) -> int:
        return 4 ** (self.cell_order - self.shard_order)

    def summary(self) -> dict:
        """The attrs block describing this store (``morton_hive``)."""
        out = {
            "spec": self.spec,
            "cell_order": self.cell_order,
            "shard_order": self.shard_order,
            "path_grouping": self.path_grouping,
            "dataset": dict(self.dataset),
        }
        if self.semantic_hash:
            out["semantic_hash"] = self.semantic_hash
        return out


def _int_field(obj: dict, name: str, where: str, *, minimum: int = 0) -> int:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ManifestError(f"{where}: field {name!r} must be an integer, got {value!r}")
    if value < minimum:
        raise ManifestError(f"{where}: field {name!r} must be >= {minimum}, got {value}")
    return value


def parse_manifest(obj: Any, where: str) -> Manifest:
    """Validate a parsed manifest. ``where`` names the store in error messages.

    Raises :class:`ManifestError` for an unknown ``spec`` (including the
    writer-less ``morton-hive/3``), a missing or mistyped order field,
    ``cell_order < shard_order``, a bad ``path_grouping``, or a ``temporal``
    block that contradicts the spec.
    """
    if not isinstance(obj, dict):
        raise ManifestError(f"{where}: {MANIFEST_NAME} is not a JSON object")
    spec = obj.get("spec")
    if spec not in SUPPORTED_SPECS:
        raise ManifestError(f"{where}: field 'spec' is {spec!r}; this reader supports {', '.join(SUPPORTED_SPECS)}")
    dataset = obj.get("dataset", {})
    if dataset is None:
        dataset = {}
    if not isinstance(dataset, dict):
        raise ManifestError(f"{where}: field 'dataset' must be an object, got {dataset!r}")
    for name, kinds, what in (("short_name", (str,), "a string"), ("version", (str, int, float), "a string or number")):
        if dataset.get(name) is not None and (isinstance(dataset[name], bool) or not isinstance(dataset[name], kinds)):
            raise ManifestError(f"{where}: field 'dataset.{name}' must be {what}, got {dataset[name]!r}")
    cell_order = _int_field(obj, "cell_order", where)
    shard_order = _int_field(obj, "shard_order", where)
    if cell_order > 27:
        raise ManifestError(f"{where}: field 'cell_order' is {cell_order}; orders above 27 are not supported")
    if cell_order < shard_order:
        raise ManifestError(f"{where}: cell_order {cell_order} is below shard_order {shard_order}")
    pg = obj.get("path_grouping", 1)
    if pg is None:
        pg = 1
    if isinstance(pg, bool) or not isinstance(pg, int) or pg < 1:
        raise ManifestError(f"{where}: field 'path_grouping' must be an integer >= 1, got {pg!r}")
    semantic_hash = obj.get("semantic_hash")
    if semantic_hash is not None and not (isinstance(semantic_hash, str) and _HEX64.match(semantic_hash)):
        raise ManifestError(f"{where}: field 'semantic_hash' must be 64 lowercase hex digits, got {semantic_hash!r}")
    temporal = obj.get("temporal")
    if spec == "morton-hive/2":
        if not isinstance(temporal, dict):
            raise ManifestError(f"{where}: a morton-hive/2 manifest must carry a 'temporal' object")
        _check_windows(temporal, where)
    elif temporal is not None:
        raise ManifestError(f"{where}: a morton-hive/1 manifest must not carry 'temporal'")
    multiscales = obj.get("multiscales")
    return Manifest(
        spec=spec,
        dataset=dataset,
        semantic_hash=semantic_hash,
        cell_order=cell_order,
        shard_order=shard_order,
        path_grouping=pg,
        pyramid=obj.get("pyramid"),
        temporal=temporal,
        multiscales=multiscales if isinstance(multiscales, list) else None,
        generated_at=obj.get("generated_at"),
        raw=obj,
        location=where,
    )


def _check_windows(temporal: dict, where: str) -> None:
    schedule = temporal.get("schedule", "none")
    if not isinstance(schedule, str):
        raise ManifestError(f"{where}: field 'temporal.schedule' must be a schedule name, got {schedule!r}")
    windows = temporal.get("windows")
    if windows is None:
        return
    if not isinstance(windows, list):
        raise ManifestError(f"{where}: field 'temporal.windows' must be a list")
    for entry in windows:
        label = entry.get("label") if isinstance(entry, dict) else None
        if not isinstance(label, str) or not WINDOW_RE.match(label) or label == ALL_TOKEN:
            raise ManifestError(f"{where}: 'temporal.windows' entry {entry!r} has no valid label")


def check_window(manifest: Manifest, window: str | None, available: Callable[[], list[str]]) -> str | None:
    """Validate ``window=`` against the store (FORMAT.md §10.1, §12).

    ``available`` is called (lazily, on error paths only) to list the labels
    present in the store. Raises :class:`~moczarr.errors.WindowError` when a
    windowed store gets no window, an unwindowed one gets one, the token
    ``all`` is passed, or the label is malformed for the schedule.
    """
    where = manifest.location
    if window is not None and not isinstance(window, str):
        raise WindowError(f"{where}: window= must be a label string, got {window!r}")
    if window == ALL_TOKEN:
        raise WindowError(
            f"{where}: 'all' is the reserved all-time token, never a window label; "
            "all-time folds are opened with all_time=True on the pyramid openers"
        )
    if not manifest.windowed:
        if window is not None:
            raise WindowError(f"{where}: window={window!r} given but the store is unwindowed (morton-hive/1)")
        return None
    if window is None:
        labels = available()
        raise WindowError(
            f"{where}: the store is time-windowed (morton-hive/2); pass window= one of "
            f"{', '.join(labels) if labels else '(no windows found)'}"
        )
    pattern = SCHEDULE_PATTERNS.get(manifest.schedule)
    declared = manifest.declared_windows
    if (
        not WINDOW_RE.match(window)
        or (pattern and not pattern.match(window))
        or (manifest.schedule == "explicit" and declared and window not in declared)
    ):
        labels = available()
        raise WindowError(
            f"{where}: window {window!r} is not a {manifest.schedule} label of this store; "
            f"windows present: {', '.join(labels) if labels else '(none found)'}"
        )
    return window


def parse_time(text: str | None) -> dt.datetime | None:
    """An ISO 8601 timestamp as an aware UTC datetime (naive means UTC), or None when absent or unparsable."""
    if not text:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def window_interval(label: str, schedule: str, temporal: dict | None = None) -> tuple[dt.datetime, dt.datetime] | None:
    """The half-open ``[start, end)`` UTC interval of a window label, or None when unknown.

    Declared ``temporal.windows`` entries win (``start``/``end``, or a point
    ``timestamp`` -> ``[t, t+1s)``); otherwise the generative schedules give
    the calendar year (``YYYY``), month (``YYYYMM``) or day (``YYYYMMDD``).
    """
    for entry in (temporal or {}).get("windows") or []:
        if isinstance(entry, dict) and entry.get("label") == label:
            start, end = parse_time(entry.get("start")), parse_time(entry.get("end"))
            if start and end:
                return start, end
            t = parse_time(entry.get("timestamp"))
            if t:
                return t, t + dt.timedelta(seconds=1)
    pattern = SCHEDULE_PATTERNS.get(schedule)
    if pattern is None or not pattern.match(label):
        return None
    utc = dt.UTC
    if schedule == "yearly":
        y = int(label)
        return dt.datetime(y, 1, 1, tzinfo=utc), dt.datetime(y + 1, 1, 1, tzinfo=utc)
    if schedule == "monthly":
        y, m = int(label[:4]), int(label[4:])
        return dt.datetime(y, m, 1, tzinfo=utc), dt.datetime(y + m // 12, m % 12 + 1, 1, tzinfo=utc)
    try:
        day = dt.datetime(int(label[:4]), int(label[4:6]), int(label[6:]), tzinfo=utc)
    except ValueError:  # 20190231 matches the pattern but is no day
        return None
    return day, day + dt.timedelta(days=1)
