"""``moczarr-catalog``: build STAC + Intake catalogs for stores, show a store, run the demo.

    moczarr-catalog build ROOT... --out DIR [--thumbnails] [--anon] [--endpoint-url URL]
    moczarr-catalog show ROOT
    moczarr-catalog demo [--out DIR]

``build`` tells morton-hive roots and moraine pyramid folders apart by content,
writes ``DIR/stac/catalog.json`` (static STAC) and ``DIR/catalog.yaml``
(Intake, version 1 drivers) plus ``DIR/catalog_v2.yaml`` (Intake readers).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

from tqdm import tqdm

from moczarr.errors import MoczarrError

from moczarr_moraine import is_moraine_pyramid, read_moraine_info

from .catalog_yaml import v1_catalog, v2_catalog, write_yaml
from .stac import build_stac, stac_hrefs, summarize_for_catalog
from .summary import StoreSummary, summarize_store

REPO_SAMPLE = Path(__file__).resolve().parents[1] / "catalogs" / "sample"


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


def _absolute(root: str) -> str:
    """Local roots as absolute paths (catalog documents must not depend on the working directory)."""
    if "://" in root and not root.startswith("file://"):
        return root.rstrip("/")
    return os.path.abspath(root.removeprefix("file://"))


def build(roots: list[str], out: Path, *, storage_options=None, thumbnails=False, progress=True) -> dict:
    """Summarize every root, write STAC and Intake YAML under ``out``; returns the written paths.

    Stores inside ``out`` are referenced relatively (``{{ CATALOG_DIR }}`` in YAML,
    relative hrefs in STAC), so such a folder moves as a whole.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summaries: list[StoreSummary] = []
    moraine = []
    bar = tqdm([_absolute(r) for r in roots], desc="stores", unit="store", disable=not progress, file=sys.stderr)
    for root in bar:
        bar.set_postfix_str(Path(root).name)
        if classify(root, storage_options) == "moraine":
            moraine.append(read_moraine_info(root, storage_options=storage_options))
        else:
            summaries.append(summarize_for_catalog(root, storage_options))
    catalog = build_stac(
        summaries=summaries, moraine=moraine, out_dir=out / "stac", storage_options=storage_options,
        thumbnails=thumbnails, progress=progress, relative_to=out,
    )
    hrefs = {}
    for root, href in stac_hrefs(catalog).items():
        if href:  # a root recorded relative to its document (relative_to) is resolved back first
            key = root if "://" in root or os.path.isabs(root) else os.path.normpath(os.path.join(os.path.dirname(href), root))
            hrefs[key] = "{{ CATALOG_DIR }}/" + os.path.relpath(href, out)
    v1 = write_yaml(v1_catalog(summaries, out, stac_hrefs=hrefs, storage_options=storage_options, moraine=moraine), out / "catalog.yaml")
    v2 = write_yaml(v2_catalog(summaries, out), out / "catalog_v2.yaml")
    return {"intake": v1, "intake_v2": v2, "stac": out / "stac" / "catalog.json", "summaries": summaries, "moraine": moraine}


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
    """Build the catalog of the bundled sample, open it with intake, read one level, summarize."""
    import intake

    out = out or Path(tempfile.mkdtemp(prefix="moczarr-demo-"))
    written = build([str(REPO_SAMPLE)], out, progress=False)
    cat = intake.open_catalog(str(written["intake"]))
    names = list(cat)
    lines = [f"catalog {written['intake']} ({len(names)} entries: {', '.join(names)})"]
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
    d = sub.add_parser("demo", help="build and open the catalog of the bundled sample")
    d.add_argument("--out", type=Path, default=None)
    for p in (b, s):
        p.add_argument("--anon", action="store_true", help="anonymous object-store access")
        p.add_argument("--endpoint-url", default=None, help="S3-compatible endpoint")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if args.cmd == "build":
            written = build(args.roots, args.out, storage_options=_storage_options(args), thumbnails=args.thumbnails)
            print(f"wrote {written['intake']}, {written['intake_v2']}, {written['stac']}")
        elif args.cmd == "show":
            print(show(args.root, _storage_options(args)))
        else:
            print(demo(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
