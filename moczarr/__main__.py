"""``python -m moczarr [ROOT] [--window W]``: open a store (or each product of a root) and print a summary."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from . import list_products, list_windows, open_hive, read_manifest
from .errors import MoczarrError
from .storage import Storage


def summarize(root: str, window: str | None = None) -> str:
    """A readable summary of one bare store: identity, orders, leaves, variables, totals."""
    storage = Storage.open(root)
    manifest = read_manifest(storage)
    if manifest.windowed and window is None:
        window = (list_windows(root) or [None])[0]
    ds = open_hive(root, window=window)
    info = ds.attrs["morton_hive"]
    lines = [
        f"store      {root}",
        f"dataset    {manifest.short_name} v{manifest.dataset.get('version')}  ({manifest.spec})",
        f"orders     shard {manifest.shard_order}, cell {manifest.cell_order}",
        f"window     {window or '-'}",
        f"leaves     {info['n_leaves']} ({info['n_versioned']} versioned)",
        f"rows       {ds.sizes['cells']} cells, {info['cells_with_data']} with data",
    ]
    for name, var in ds.data_vars.items():
        stat = ""
        if var.dtype.kind in "iuf":
            stat = f"  sum={float(var.sum().values):.6g}" if name == "count" else f"  max={float(var.max().values):.6g}"
        lines.append(f"  {name:<24} {str(var.dtype):<8} {stat}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m moczarr", description=__doc__)
    default = Path(__file__).resolve().parents[1] / "catalogs" / "sample"
    parser.add_argument("root", nargs="?", default=str(default), help="store or multi-product root (default: the bundled sample)")
    parser.add_argument("--window", default=None)
    args = parser.parse_args(argv)
    try:
        products = list_products(args.root)
        roots = [f"{args.root.rstrip('/')}/{p}" for p in products] or [args.root]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for root in roots:
                print(summarize(root, args.window))
                print()
    except MoczarrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
