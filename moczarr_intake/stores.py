"""A store as its operator sees it: ``show``'s description of a root and ``verify``'s report of one.

A root is told apart by content (:func:`classify`): a moraine pyramid folder,
or a morton-hive root (bare or multi-product). Nothing here writes.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the reader is loaded when a root is read, not when the command line is parsed
    from moczarr import VerifyReport
    from moczarr.metadata import ProductSummary

__all__ = ["classify", "describe_root", "format_report", "verify_root"]

_ORDER = {"error": 0, "warning": 1, "info": 2}


def classify(root: str, storage_options: dict | None = None) -> str:
    """``"morton-hive"`` or ``"moraine"`` by content (anything else fails later, naming what is missing)."""
    from moczarr.moraine import is_moraine_pyramid

    if is_moraine_pyramid(root, storage_options=storage_options):
        return "moraine"
    return "morton-hive"


def describe_root(root: str, storage_options=None) -> tuple[str, list[str]]:
    """``(text, degraded lines)``: the roster, levels and extents of a store as text (products left out as damaged
    named last), and one line per such product: a damaged product of a multi-product root is a line, not the end."""
    from moczarr.metadata import summarize_store
    from moczarr.moraine import read_moraine_info

    if classify(root, storage_options) == "moraine":
        info = read_moraine_info(root, storage_options=storage_options)
        lines = [f"moraine {info.kind} pyramid {root}", f"  method {info.method}, {info.n_levels} levels"]
        lines += [f"  l{i}: {tuple(s)}" for i, s in enumerate(info.shapes)]
        return "\n".join(lines), []
    summary = summarize_store(root, storage_options, skip_damaged=True)
    lines = [f"{summary.layout} store {summary.root}: {len(summary.products)} product(s)"]
    for p in summary.products:
        lines += _product_lines(p)
    lines += [f"- {name}: damaged, not summarized" for name in summary.damaged]
    degraded = [
        f"degraded: {summary.root.rstrip('/')}/{name}: not summarized: {why}" for name, why in summary.damaged.items()
    ]
    degraded += [line for p in summary.products if (line := _unopenable_levels(p))]
    return "\n".join(lines), degraded


def _unopenable_levels(p: ProductSummary) -> str | None:
    """The ``degraded:`` line of a product whose derived levels cannot be opened (None: every level opens).

    Overview and column levels are enumerated from the root MOC's shards, so without a usable one
    ``open_level`` refuses them (``LevelOmittedError``) while the source level opens through the walk.
    """
    derived = [lv.cell_order for lv in p.levels if lv.artifact != "source"]
    if p.coverage_usable or not derived:
        return None
    orders = ", ".join(f"o{order}" for order in derived)
    return (
        f"degraded: {p.root}: no usable root coverage.moc: level(s) {orders} cannot be opened (open_level refuses "
        "them until the writer rewrites coverage.moc); the source level opens through the discovery walk"
    )


def _product_lines(p: ProductSummary) -> list[str]:
    pyramid = p.pyramid_spec or "no pyramid"
    lines = [
        f"- {p.name}: {p.dataset.get('short_name')} v{p.dataset.get('version')} ({p.spec}, {pyramid})",
        f"    shards {p.n_shards} at order {p.shard_order}; bbox {_fmt_bbox(p.bbox)}; time {p.time_range or '-'}",
    ]
    if p.windowed:
        lines.append(f"    windows ({p.schedule}): {', '.join(p.windows)}")
    closed = "" if p.coverage_usable else "  (cannot be opened: no usable root coverage.moc)"
    lines += [
        f"    o{lv.cell_order:<3} {lv.artifact:<9} ~{lv.resolution_km:8.2f} km  {', '.join(lv.variables)}"
        + (closed if lv.artifact != "source" else "")
        for lv in p.levels
    ]
    return lines


def _fmt_bbox(bbox) -> str:
    return "-" if not bbox else "[" + ", ".join(f"{v:.3f}" for v in bbox) + "]"


def verify_root(
    root: str, *, deep: bool, window: str | None, storage_options: dict | None, progress: bool
) -> VerifyReport:
    """One root's report: a moraine pyramid or a morton-hive root; with ``progress``, a count of the objects checked
    on stderr (no total: the objects are found as the check goes)."""
    from tqdm import tqdm

    from moczarr import verify_store
    from moczarr.moraine import is_moraine_pyramid, verify_moraine

    if is_moraine_pyramid(root, storage_options=storage_options):
        return verify_moraine(root, storage_options=storage_options)
    # a count without a total: the objects are found as the walk goes, so a total would only keep jumping
    bar = tqdm(desc=root, unit="obj", file=sys.stderr, disable=not progress, leave=False)

    def tick(checked: int, found: int) -> None:
        if checked:
            bar.update(checked)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the report carries what the reader's warnings would say
            return verify_store(root, window=window, deep=deep, storage_options=storage_options, progress=tick)
    finally:
        bar.close()


def format_report(report: VerifyReport) -> str:
    """The summary table and one line per finding (errors first), as text."""
    status = "OK" if report.ok else "FAILED"
    sev = Counter(f.severity for f in report.findings)
    lines = [
        f"{report.store_root} ({'deep' if report.deep else 'shallow'}): {status} - "
        f"{sev['error']} errors, {sev['warning']} warnings, {sev['info']} info"
    ]
    if report.counts:
        width = max(len(k) for k in report.counts)
        lines += [f"  {k:<{width}}  {v:>8}" for k, v in sorted(report.counts.items())]
    kinds = Counter((f.severity, f.kind) for f in report.findings)
    if kinds:
        width = max(len(k) for _, k in kinds)
        lines.append(f"  {'finding':<{width}}  {'severity':<8}  {'n':>6}")
        for (severity, kind), n in sorted(kinds.items(), key=lambda kv: (_ORDER[kv[0][0]], kv[0][1])):
            lines.append(f"  {kind:<{width}}  {severity:<8}  {n:>6}")
    for f in sorted(report.findings, key=lambda f: _ORDER[f.severity]):
        lines.append(f"{f.severity.upper():<7} {f.kind} {f.object or '.'}: {f.message}")
    return "\n".join(lines)
