"""What a verifier reports: findings with a kind, a severity, the object they are about, and a message.

Plain records shared by the hive verifier (:mod:`moczarr.verify`) and the
moraine one (:mod:`moczarr.moraine.verify`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..errors import ArgumentError

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """What the verifier found: a stable ``kind``, its ``severity``, the store-relative ``object`` and a ``message``."""

    kind: str
    severity: str
    object: str
    message: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "severity": self.severity, "object": self.object, "message": self.message}


@dataclass
class VerifyReport:
    """Everything :func:`verify_store` found about one store root.

    ``ok`` is true when no finding is an error. ``counts`` holds tallies
    (``leaves_stamped``, ``debris``, ``stamp_lost``, ``versioned``, ``superseded``,
    ``overviews``, ``columns``, ``arrays_hashed``, ...).
    """

    store_root: str
    deep: bool
    findings: list[Finding] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def by_severity(self, severity: str) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]

    def kinds(self) -> Counter:
        """How many findings of each kind."""
        return Counter(f.kind for f in self.findings)

    def add(self, kind: str, severity: str, obj: str, message: str) -> None:
        if severity not in SEVERITIES:
            raise ArgumentError(f"severity {severity!r} is not one of {SEVERITIES}")
        self.findings.append(Finding(kind, severity, obj, message))

    def to_dict(self) -> dict:
        """A JSON-ready view: ``store_root``, ``deep``, ``ok``, ``severities``, ``counts``, ``findings``."""
        return {
            "store_root": self.store_root,
            "deep": self.deep,
            "ok": self.ok,
            "severities": {s: len(self.by_severity(s)) for s in SEVERITIES},
            "counts": dict(sorted(self.counts.items())),
            "findings": [f.to_dict() for f in self.findings],
        }
