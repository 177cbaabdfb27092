"""``moczarr-catalog``: build STAC + Intake catalogs for stores, show a store, run the demo.

    moczarr-catalog build ROOT... --out DIR [--thumbnails] [--anon] [--endpoint-url URL]
    moczarr-catalog show ROOT
    moczarr-catalog demo [--out DIR]
    moczarr-catalog verify ROOT... [--deep] [--json]

``build`` tells morton-hive roots and moraine pyramid folders apart by content,
writes ``DIR/stac/catalog.json`` (static STAC) and ``DIR/catalog.yaml``
(Intake, version 1 drivers) plus ``DIR/catalog_v2.yaml`` (Intake readers), and
the STAC Items as stac-geoparquet ``DIR/stac/items.parquet`` (what ``rustac serve`` loads).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

from tqdm import tqdm

from moczarr import MoczarrError
from moczarr.metadata import (
    StoreSummary,
    is_remote,
    join_location,
    normalize_location,
    summarize_store,
)
from moczarr_moraine import is_moraine_pyramid, read_moraine_info
from moczarr_samples import write_sample_store

from . import verify_cli
from .catalog_yaml import v1_catalog, v2_catalog, write_yaml
from .stac import build_stac, stac_hrefs


def _storage_options(args) -> dict | None:
    opts: dict = {}
    if getattr(args, "anon", False):
        opts["anon"] = True
    if getattr(args, "endpoint_url", None):
        opts["client_kwargs"] = {"endpoint_url": args.endpoint_url}
    return opts or None


def classify(root: str, storage_options: dict | None = None) -> str:
    """``"morton-hive"`` or ``"moraine"`` by content (anything else fails later, naming what is missing)."""
    if is_moraine_pyramid(root, storage_options=storage_options):
        return "moraine"
    return "morton-hive"


def build(roots: list[str], out: Path, *, storage_options=None, thumbnails=False, progress=True) -> dict:
    """Summarize every root, write STAC and Intake YAML under ``out``; returns the written paths.

    Stores inside ``out`` are referenced relatively (``{{ CATALOG_DIR }}`` in YAML,
    relative hrefs in STAC), so such a folder moves as a whole.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summaries: list[StoreSummary] = []
    moraine = []
    bar = tqdm([normalize_location(r) for r in roots], desc="stores", unit="store", disable=not progress, file=sys.stderr)
    for root in bar:
        bar.set_postfix_str(Path(root).name)
        if classify(root, storage_options) == "moraine":
            moraine.append(read_moraine_info(root, storage_options=storage_options))
        else:
            summaries.append(summarize_store(root, storage_options))
    catalog = build_stac(
        summaries=summaries, moraine=moraine, out_dir=out / "stac", storage_options=storage_options,
        thumbnails=thumbnails, progress=progress, relative_to=out,
    )
    hrefs = {}
    for root, href in stac_hrefs(catalog).items():
        if href:  # a root recorded relative to its document (relative_to) is resolved back first
            key = root if is_remote(root) or os.path.isabs(root) else join_location(href, "..", root)
            hrefs[key] = "{{ CATALOG_DIR }}/" + os.path.relpath(href, out)
    v1 = write_yaml(v1_catalog(summaries, out, stac_hrefs=hrefs, storage_options=storage_options, moraine=moraine), out / "catalog.yaml")
    v2 = write_yaml(v2_catalog(summaries, out), out / "catalog_v2.yaml")
    parquet = out / "stac" / "items.parquet"  # absent when no Item has a geometry
    return {"intake": v1, "intake_v2": v2, "stac": out / "stac" / "catalog.json", "summaries": summaries, "moraine": moraine,
            "geoparquet": parquet if parquet.exists() else None}


def show(root: str, storage_options=None) -> str:
    """The roster, levels and extents of a store, as text."""
    if classify(root, storage_options) == "moraine":
        info = read_moraine_info(root, storage_options=storage_options)
        lines = [f"moraine {info.kind} pyramid {root}", f"  method {info.method}, {info.n_levels} levels"]
        lines += [f"  l{i}: {tuple(s)}" for i, s in enumerate(info.shapes)]
        return "\n".join(lines)
    summary = summarize_store(root, storage_options)
    lines = [f"{summary.layout} store {summary.root}: {len(summary.products)} product(s)"]
    for p in summary.products:
        lines.append(f"- {p.name}: {p.dataset.get('short_name')} v{p.dataset.get('version')} ({p.spec}, {p.pyramid_spec or 'no pyramid'})")
        lines.append(f"    shards {p.n_shards} at order {p.shard_order}; bbox {_fmt_bbox(p.bbox)}; time {p.time_range or '-'}")
        if p.windowed:
            lines.append(f"    windows ({p.schedule}): {', '.join(p.windows)}")
        for lv in p.levels:
            lines.append(f"    o{lv.cell_order:<3} {lv.artifact:<9} ~{lv.resolution_km:8.2f} km  {', '.join(lv.variables)}")
    return "\n".join(lines)


def _fmt_bbox(bbox) -> str:
    return "-" if not bbox else "[" + ", ".join(f"{v:.3f}" for v in bbox) + "]"


def demo(out: Path | None = None) -> str:
    """Write the sample store, build its catalogs, open them with intake, read one level, summarize.

    The sample is generated by :mod:`moczarr_samples` (so the demo works from an
    installed wheel); without ``out`` everything goes to a temporary folder that
    is removed afterwards.
    """
    if out is None:
        with tempfile.TemporaryDirectory(prefix="moczarr-demo-") as tmp:
            return _demo(Path(tmp), kept=False)
    return _demo(Path(out), kept=True)


def _demo(out: Path, *, kept: bool) -> str:
    import intake

    store = write_sample_store(out / "sample", overwrite=True)
    written = build([str(store)], out, progress=False)
    cat = intake.open_catalog(str(written["intake"]))
    names = list(cat)
    lines = [f"sample store {store} (written by moczarr_samples from synthetic points)"]
    lines.append(f"catalog {written['intake']} ({len(names)} entries: {', '.join(names)})")
    lines.append(f"STAC    {written['stac']}")
    level_entries = [n for n in names if not n.endswith("_tree")]
    entry = cat[level_entries[0]]
    orders = entry.describe()["user_parameters"][0]["allowed"]
    coarse = min(orders)
    ds = entry(order=coarse).read()
    lines.append(f"\n{level_entries[0]} at cell order {coarse} ({ds.attrs['zagg_level']['artifact']}): {ds.sizes['cells']} cells")
    for name, var in ds.data_vars.items():
        lines.append(f"  {name:<10} {str(var.dtype):<8} min {float(var.min()):.6g}  max {float(var.max()):.6g}")
    native = entry.read()
    lines.append(f"{level_entries[0]} at native order {max(orders)}: {native.sizes['cells']} cells, "
                 f"count total {int(native['count'].sum())}")
    where = out if kept else Path("demo")
    lines.append("" if kept else "\n(the demo folder was temporary and is gone; keep one with --out demo)")
    lines.append("\nnext, try:")
    lines.append(f"  moczarr-catalog demo --out {where}")
    lines.append(f"  moczarr-catalog show {where / 'sample'}")
    lines.append(f"  python -c \"import intake; cat = intake.open_catalog('{where / 'catalog.yaml'}'); "
                 f"print(cat['{level_entries[0]}'](order={coarse}).read())\"")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The ``moczarr-catalog`` entry point: every failure is one ``error:`` line on stderr, never a traceback.

    Exit status 0 on success, 2 for a :class:`~moczarr.errors.MoczarrError`
    (bad input, damaged store, failing object store), 1 for any other
    failure, 130 when interrupted; argparse's usage errors keep its own 2.
    """
    try:
        return run(argv)
    except MoczarrError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the promise is "never a traceback": name the failure instead
        print(f"error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def run(argv: list[str] | None = None) -> int:
    """:func:`main` without the error wrapper (exceptions propagate)."""
    parser = argparse.ArgumentParser(prog="moczarr-catalog", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write STAC and Intake catalogs for one or more stores")
    b.add_argument("roots", nargs="+")
    b.add_argument("--out", required=True, type=Path)
    b.add_argument("--thumbnails", action="store_true", help="attach coverage quicklook PNGs")
    s = sub.add_parser("show", help="print a store's roster, levels and extents")
    s.add_argument("root")
    d = sub.add_parser("demo", help="write the sample store, build and open its catalogs")
    d.add_argument("--out", type=Path, default=None, help="keep the sample and its catalogs here (default: a temporary folder)")
    verify_cli.add_parser(sub)
    for p in (b, s):
        p.add_argument("--anon", action="store_true", help="anonymous object-store access")
        p.add_argument("--endpoint-url", default=None, help="S3-compatible endpoint")
    args = parser.parse_args(argv)
    if args.cmd == "verify":
        return verify_cli.run(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if args.cmd == "build":
            written = build(args.roots, args.out, storage_options=_storage_options(args), thumbnails=args.thumbnails)
            print(f"wrote {written['intake']}, {written['intake_v2']}, {written['stac']}"
                  + (f", {written['geoparquet']}" if written["geoparquet"] else ""))
        elif args.cmd == "show":
            print(show(args.root, _storage_options(args)))
        else:
            print(demo(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
