"""``moczarr-catalog``: build STAC + Intake catalogs for stores, show a store, run the demo.

    moczarr-catalog build ROOT... --out DIR [--thumbnails] [--href-base URL [--stores-root DIR]]
                          [--catalog-url URL] [--license ID|URL] [--strict] [--anon] [--endpoint-url URL]
    moczarr-catalog build PREFIX... --discover --out DIR|URL [--scheduler ADDRESS]
    moczarr-catalog update OUT [--scheduler ADDRESS]
    moczarr-catalog publish OUT --pgstac DSN
    moczarr-catalog show ROOT
    moczarr-catalog demo [--out DIR]
    moczarr-catalog verify ROOT... [--deep] [--json]

``build`` tells morton-hive roots and moraine pyramid folders apart by content,
writes ``DIR/stac/catalog.json`` (static STAC) and ``DIR/catalog.yaml``
(Intake, version 1 drivers) plus ``DIR/catalog_v2.yaml`` (Intake readers), and
the STAC Items as stac-geoparquet ``DIR/stac/items.parquet`` and the Collections as
``DIR/stac/api-collections/*.json`` (what ``rustac serve`` loads).
Each degraded product and each reader warning is one line on stderr; a
failure is one ``error:`` line and a non-zero exit (``--strict``: exit 1 on
any degrade). ``DIR`` is only changed when the build succeeds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from moczarr.errors import MoczarrError, MoczarrWarning
from moczarr.metadata import (
    StoreSummary,
    is_remote,
    summarize_store,
)
from moczarr.moraine import is_moraine_pyramid, read_moraine_info
from moczarr.testing import write_sample_store

from . import living_cli, verify_cli
from .catalog_yaml import v1_catalog, v2_catalog, write_yaml
from .entries import catalog_entries
from .hrefs import HrefPolicy
from .outstore import build_to_url
from .reading import Reading, read_roots
from .record import write_beside
from .stac import API_COLLECTIONS, build_stac


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


class DegradedBuildError(Exception):
    """A ``--strict`` build met a product it had to degrade."""


def degrade_reasons(summary: StoreSummary, product) -> list[str]:
    """Why a product's catalog entry is less than the store would give (empty: not degraded)."""
    reasons = []
    if not product.coverage_usable:
        reasons.append("no usable root coverage.moc: bbox, geometry and cell extent unknown")
    elif not product.shards:
        reasons.append("the root coverage.moc is empty: no footprint")
    if not product.variables:
        reasons.append("no committed leaf schema could be read: no variables listed")
    if product.windowed and not product.windows:
        reasons.append("windowed product with no window found")
    return reasons


def build(
    roots: list[str],
    out: Path,
    *,
    storage_options=None,
    thumbnails=False,
    progress=True,
    href_base: str | None = None,
    stores_root: str | None = None,
    catalog_url: str | None = None,
    license: str | None = None,
    license_url: str | None = None,
    strict: bool = False,
    discover: bool = False,
    scheduler: str | None = None,
    reading: Reading | None = None,
    out_location: str | None = None,
) -> dict:
    """Summarize every root, write STAC and both Intake YAML flavours under ``out``; returns what was written.

    Store addresses follow :class:`~moczarr_intake.hrefs.HrefPolicy`: stores
    inside ``out`` relative, URLs as given, others under ``href_base`` (joined
    with their path relative to ``stores_root``, default the roots' common
    parent) or, without it, absolute paths of this machine (reported in
    ``"notes"``). ``catalog_url``: the URL ``out`` will be published at (the
    STAC root then carries an absolute self link, RELATIVE_PUBLISHED). Everything is written to a temporary sibling of ``out`` and
    moved in at the end, so a failed build leaves ``out`` as it was.

    The result holds ``"notes"``: one line per degraded product (naming why),
    per distinct reader warning, and one about machine-local hrefs. With
    ``strict=True`` any degrade raises :class:`DegradedBuildError` before anything is written.

    ``discover=True``: the roots are prefixes, every store root below them is
    cataloged (:mod:`.discover`). Stores are read concurrently under one
    in-flight limit, or on the dask.distributed ``scheduler`` (:mod:`.reading`).
    ``out`` may be an object-store URL (:mod:`.outstore`). Beside the catalog go
    the build record (:mod:`.record`, what ``update`` follows) and the pgstac
    ndjson (:mod:`.publish`). ``reading``: the stores' facts already read
    (``update`` passes them); ``out_location``: where ``out`` is finally written.
    """
    if is_remote(os.fspath(out)):
        return build_to_url(
            build,
            roots,
            os.fspath(out),
            storage_options=storage_options,
            catalog_url=catalog_url,
            thumbnails=thumbnails,
            progress=progress,
            href_base=href_base,
            stores_root=stores_root,
            license=license,
            license_url=license_url,
            strict=strict,
            discover=discover,
            scheduler=scheduler,
            reading=reading,
        )
    out = Path(out).resolve()
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MoczarrWarning)
        if reading is None:
            reading = read_roots(
                roots,
                storage_options,
                discover_below=discover,
                exclude=[str(out)],
                progress=progress,
                scheduler=scheduler,
            )
    summaries, moraine = reading.summaries, reading.moraine
    notes += [d.summary() for d in reading.discoveries]
    entries = catalog_entries(summaries, moraine)
    for e in entries.products:
        for reason in degrade_reasons(e.store, e.product):
            notes.append(f"degraded: {e.collection_id}: {reason}")
    seen = set()
    for w in caught:
        if issubclass(w.category, MoczarrWarning) and str(w.message) not in seen:
            seen.add(str(w.message))
            notes.append(f"warning: {w.category.__name__}: {w.message}")
    if strict and notes:
        raise DegradedBuildError(f"--strict: {len(notes)} problem(s): " + "; ".join(notes))
    policy = HrefPolicy.for_roots([s.root for s in summaries] + [m.path for m in moraine], out, href_base, stores_root)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MoczarrWarning)
            catalog = build_stac(
                summaries=summaries,
                moraine=moraine,
                out_dir=out / "stac",
                storage_options=storage_options,
                thumbnails=thumbnails,
                progress=progress,
                policy=policy,
                catalog_url=catalog_url.rstrip("/") + "/stac" if catalog_url else None,
                license=license,
                license_url=license_url,
                dest_dir=tmp / "stac",
            )
        hrefs = _stac_hrefs(catalog, entries, out, catalog_url)
        write_yaml(
            v1_catalog(entries, out, stac_hrefs=hrefs, storage_options=storage_options, policy=policy),
            tmp / "catalog.yaml",
        )
        write_yaml(v2_catalog(entries, out, storage_options=storage_options, policy=policy), tmp / "catalog_v2.yaml")
        record_options = {
            "thumbnails": thumbnails,
            "href_base": href_base,
            "stores_root": stores_root,
            "catalog_url": catalog_url,
            "license": license,
            "license_url": license_url,
            "strict": strict,
        }
        written_beside = write_beside(
            tmp,
            catalog,
            reading,
            roots,
            discover,
            record_options,
            storage_options,
            catalog_url or out_location or str(out),
            hashes=out_location is not None,
            base=None if out_location is not None else str(out),
        )
        _move_in(tmp, out, ["stac", "catalog.yaml", "catalog_v2.yaml", *written_beside])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if policy.machine_paths:
        notes.append(
            f"warning: {len(policy.machine_paths)} store address(es) written as paths of this machine "
            f"(e.g. {policy.machine_paths[0]}): pass --href-base URL (and --stores-root DIR) for a publishable catalog"
        )
    parquet = out / "stac" / "items.parquet"  # absent when no Item has a geometry
    return {
        "intake": out / "catalog.yaml",
        "intake_v2": out / "catalog_v2.yaml",
        "stac": out / "stac" / "catalog.json",
        "summaries": summaries,
        "moraine": moraine,
        "notes": notes,
        "entries": entries,
        "geoparquet": parquet if parquet.exists() else None,
        "api_collections": sorted((out / "stac" / API_COLLECTIONS).glob("*.json")),
    }


def _stac_hrefs(catalog, entries, out: Path, catalog_url: str | None) -> dict[str, str]:
    """``{product root or pyramid path: the STAC document as a YAML entry spells it}``."""
    docs = {c.id: c.get_self_href() for c in catalog.get_all_collections()}
    docs.update({i.id: i.get_self_href() for i in catalog.get_items()})

    def spell(href: str) -> str:
        return href if catalog_url else "{{ CATALOG_DIR }}/" + os.path.relpath(href, out).replace(os.sep, "/")

    hrefs = {e.product.root: spell(docs[e.collection_id]) for e in entries.products if e.collection_id in docs}
    hrefs.update({m.info.path: spell(docs[m.item_id]) for m in entries.moraine if m.item_id in docs})
    return hrefs


def _move_in(tmp: Path, out: Path, names: list[str]) -> None:
    """Replace ``out/name`` by ``tmp/name`` for each name (a folder is swapped whole, then the old one removed)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        src, dst = tmp / name, out / name
        old = tmp / f"{name}.old"
        if dst.exists():
            os.replace(dst, old)
        os.replace(src, dst)
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()


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
        lines.append(
            f"- {p.name}: {p.dataset.get('short_name')} v{p.dataset.get('version')} ({p.spec}, {p.pyramid_spec or 'no pyramid'})"
        )
        lines.append(
            f"    shards {p.n_shards} at order {p.shard_order}; bbox {_fmt_bbox(p.bbox)}; time {p.time_range or '-'}"
        )
        if p.windowed:
            lines.append(f"    windows ({p.schedule}): {', '.join(p.windows)}")
        for lv in p.levels:
            lines.append(
                f"    o{lv.cell_order:<3} {lv.artifact:<9} ~{lv.resolution_km:8.2f} km  {', '.join(lv.variables)}"
            )
    return "\n".join(lines)


def _fmt_bbox(bbox) -> str:
    return "-" if not bbox else "[" + ", ".join(f"{v:.3f}" for v in bbox) + "]"


def demo(out: Path | None = None) -> str:
    """Write the sample store, build its catalogs, open them with intake, read one level, summarize.

    The sample is generated by :mod:`moczarr.testing` (so the demo works from an
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
    lines = [f"sample store {store} (written by moczarr.testing from synthetic points)"]
    lines.append(f"catalog {written['intake']} ({len(names)} entries: {', '.join(names)})")
    lines.append(f"STAC    {written['stac']}")
    level_entries = [n for n in names if not n.endswith("_tree")]
    entry = cat[level_entries[0]]
    orders = entry.describe()["user_parameters"][0]["allowed"]
    coarse = min(orders)
    ds = entry(order=coarse).read()
    lines.append(
        f"\n{level_entries[0]} at cell order {coarse} ({ds.attrs['zagg_level']['artifact']}): {ds.sizes['cells']} cells"
    )
    for name, var in ds.data_vars.items():
        lines.append(f"  {name:<10} {var.dtype!s:<8} min {float(var.min()):.6g}  max {float(var.max()):.6g}")
    native = entry.read()
    lines.append(
        f"{level_entries[0]} at native order {max(orders)}: {native.sizes['cells']} cells, "
        f"count total {int(native['count'].sum())}"
    )
    where = out if kept else Path("demo")
    lines.append("" if kept else "\n(the demo folder was temporary and is gone; keep one with --out demo)")
    lines.append("\nnext, try:")
    lines.append(f"  moczarr-catalog demo --out {where}")
    lines.append(f"  moczarr-catalog show {where / 'sample'}")
    lines.append(
        f"  python -c \"import intake; cat = intake.open_catalog('{where / 'catalog.yaml'}'); "
        f"print(cat['{level_entries[0]}'](order={coarse}).read())\""
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The ``moczarr-catalog`` entry point: every failure is one ``error:`` line on stderr, never a traceback.

    Exit status 0 on success, 1 when a ``--strict`` build met a degraded
    product, 2 for any other failure (a :class:`~moczarr.errors.MoczarrError`:
    bad input, damaged store, failing object store; or anything else, named by
    its type), 130 when interrupted; argparse's usage errors keep its own 2.
    The ``verify`` command's own statuses (0 clean, 1 errors found) pass through.
    """
    try:
        return run(argv)
    except DegradedBuildError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except MoczarrError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the promise is "never a traceback": name the failure instead
        print(f"error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def run(argv: list[str] | None = None) -> int:
    """:func:`main` without the error wrapper (exceptions propagate)."""
    parser = argparse.ArgumentParser(
        prog="moczarr-catalog", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write STAC and Intake catalogs for one or more stores")
    b.add_argument("roots", nargs="+")
    b.add_argument("--out", required=True, help="a folder, or an object-store URL (s3://bucket/catalog, ...)")
    b.add_argument("--discover", action="store_true", help="the roots are prefixes: catalog every store below them")
    b.add_argument("--thumbnails", action="store_true", help="attach quicklook PNGs of each level's data")
    b.add_argument(
        "--href-base",
        default=None,
        metavar="URL",
        help="where the stores will be published: hrefs become URL/<path relative to --stores-root>",
    )
    b.add_argument(
        "--stores-root",
        default=None,
        metavar="DIR",
        help="the folder --href-base stands for (default: the common parent of the roots)",
    )
    b.add_argument(
        "--catalog-url",
        default=None,
        metavar="URL",
        help="the URL --out will be published at (STAC RELATIVE_PUBLISHED: absolute self link on the root)",
    )
    b.add_argument("--license", default=None, help="license (SPDX id or URL) of products whose manifest records none")
    b.add_argument(
        "--strict", action="store_true", help="fail (exit 1, nothing written) when any product had to be degraded"
    )
    s = sub.add_parser("show", help="print a store's roster, levels and extents")
    s.add_argument("root")
    d = sub.add_parser("demo", help="write the sample store, build and open its catalogs")
    d.add_argument(
        "--out", type=Path, default=None, help="keep the sample and its catalogs here (default: a temporary folder)"
    )
    verify_cli.add_parser(sub)
    u, pub = living_cli.add_parsers(sub, b)
    for p in (b, s, u, pub):
        p.add_argument("--anon", action="store_true", help="anonymous object-store access")
        p.add_argument("--endpoint-url", default=None, help="S3-compatible endpoint")
    args = parser.parse_args(argv)
    if args.cmd == "verify":
        return verify_cli.run(args)
    if args.cmd in ("update", "publish"):
        return living_cli.run(args, build, _storage_options(args), progress=sys.stderr.isatty())
    if args.cmd == "build":
        licence, licence_url = (None, args.license) if args.license and "://" in args.license else (args.license, None)
        written = build(
            args.roots,
            args.out,
            storage_options=_storage_options(args),
            thumbnails=args.thumbnails,
            href_base=args.href_base,
            stores_root=args.stores_root,
            catalog_url=args.catalog_url,
            license=licence,
            license_url=licence_url,
            strict=args.strict,
            progress=sys.stderr.isatty(),
            discover=args.discover,
            scheduler=args.scheduler,
        )
        for note in written["notes"]:
            print(note, file=sys.stderr)
        if "uploaded" in written:
            print(living_cli.uploaded_line(written))
            return 0
        print(
            f"wrote {written['intake']}, {written['intake_v2']}, {written['stac']}"
            + (f", {written['geoparquet']}" if written["geoparquet"] else "")
            + (
                f", {written['api_collections'][0].parent}/ ({len(written['api_collections'])} Collections)"
                if written["api_collections"]
                else ""
            )
        )
    elif args.cmd == "show":
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", MoczarrWarning)
            print(show(args.root, _storage_options(args)))
        for w in caught:
            if issubclass(w.category, MoczarrWarning):
                print(f"warning: {w.category.__name__}: {w.message}", file=sys.stderr)
    else:
        print(demo(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
