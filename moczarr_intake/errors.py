"""The catalog's own error types, in the reader's hierarchy (:class:`moczarr.errors.MoczarrError`)."""

from __future__ import annotations

from moczarr.errors import ContentError, MoczarrWarning


class DegradedBuildError(ContentError):
    """A ``strict`` build met a product it had to degrade (the message names each); nothing was written."""


def warning_lines(caught, *, distinct: bool = True) -> list[str]:
    """One ``warning: Category: message`` line per reader warning (:class:`~moczarr.errors.MoczarrWarning`) among
    the recorded ``caught``; each distinct line once unless ``distinct=False``."""
    lines = [f"warning: {w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, MoczarrWarning)]
    return list(dict.fromkeys(lines)) if distinct else lines
