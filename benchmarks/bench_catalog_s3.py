"""Catalog builds over object storage: many products at +20 ms per request, beside the floor.

    python benchmarks/bench_catalog_s3.py [--products 40,1000] [--latency-ms 20] [--concurrency 32]
                                          [--server rclone|moto] [--update 200] [--buckets 40,200]
                                          [--runs 3] [--scratch DIR]

The stores are copies of one small bare store (the ``elevation`` product of
the sample ``moczarr.testing`` writes: a /1 pyramid, four variables) under
``s3://bench/catalog/p{i:04}``; only the objects a catalog reads are served
(manifests, root MOCs, ``zarr.json`` documents). The S3-compatible server
(rclone's, default, or moto's) and the latency proxy are those of
``bench_s3.py``, in child processes on 127.0.0.1 that stop themselves.

The served stores and the catalogs written live under ``--scratch`` (default:
``/dev/shm`` where it is a writable folder with 1 GiB free, else the system's
temporary folder; the header says which). The floor counts only the wire, so a
disk on which creating a file costs the build's CPU (0.5 ms a file on some
virtual machines, against 0.02 ms in RAM) is kept out of the figures unless
asked for.

For each product count it times ``moczarr-catalog build`` over the roots
listed by hand and over the prefix with ``--discover`` (output to a temporary
folder below the scratch folder, so the figures are the reads), and prints

- ``requests``: GETs and LISTs counted by moczarr, and per product;
- ``floor``: requests x latency / in-flight limit (the time the wire needs at
  the limit), ``ms`` (median of ``--runs``), ``ratio`` = ms / floor;
- ``read ms``: the part of the build spent reading (the rest writes the
  catalog's documents locally), and ``in flight``: the most the proxy saw;
- ``cpu ms/product``: the build's own CPU (reads and writing, the
  stac-geoparquet threads included) per product, and ``of it read``: the
  part spent during the read phase (the rest writes the catalog);
- ``cpu s``: the CPU seconds of the build's process, the server and the
  proxy (Linux ``/proc``): the floor assumes a server that costs nothing,
  while here all three share the machine's cores.

The targets: within 3x of the floor at 40 products, within 2x at 1,000.

``--buckets N,...`` builds N products given as roots, each the only store of
a bucket of its own (``s3://one-{N}-{i:04}/p``): once with the region in the
options (``client_kwargs.region_name``: no lookup) and once with the region
left to the reader, which looks each bucket up with one ``HEAD``
(:func:`moczarr.storage.bucket_region`; fresh buckets each run, as a process
keeps the answers). The ``HEAD`` requests are counted in ``requests`` and the
floor, and ``lookups`` prints their count: made together, from the threads
that read the buckets, they cost the build about one round trip more than the
region given, not N.

``--update N`` builds N products with ``--discover``, runs ``moczarr-catalog
update`` with nothing changed (it writes nothing), then again after one store
changed (its manifest rewritten), and prints the requests and the time of each
beside their floor (with one changed, the update writes that product's documents and those listing every
product, :mod:`moczarr_intake.living.reuse`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from bench_s3 import (
    KEY,
    REGION,
    SECRET,
    free_port,
    proxy_stats,
    start_proxy,
    start_server,
    stop_children,
    wait_for_port,
)

from moczarr.storage import count_requests
from moczarr.testing import write_sample_store
from moczarr_intake import build, update
from moczarr_intake.roots import scan as reading

BUCKET, PREFIX = "bench", "catalog"
CATALOG_OBJECTS = ("morton_hive.json", "coverage.moc", "zarr.json")


def catalog_files(store: Path) -> list[Path]:
    """The objects of a store a catalog build reads."""
    return [p for p in store.rglob("*") if p.is_file() and p.name in CATALOG_OBJECTS]


def lay_out(template: Path, target: Path, n: int) -> None:
    """``n`` hard-linked copies of the template's catalog objects at ``target/p{i:04}``."""
    files = catalog_files(template)
    for i in range(n):
        for p in files:
            dest = target / f"p{i:04}" / p.relative_to(template)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.link(p, dest)


def upload(endpoint: str, local: Path, bucket: str = BUCKET, prefix: str = "", create: bool = True) -> None:
    """Every file below ``local`` (links followed) into a moto bucket (new unless ``create`` is False), below
    ``prefix`` (rclone serves the folder itself)."""
    import boto3

    s3 = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    )
    if create:
        s3.create_bucket(Bucket=bucket)
    for folder, _, names in sorted(os.walk(local, followlinks=True)):
        for name in sorted(names):
            key = (Path(folder) / name).relative_to(local).as_posix()
            s3.put_object(
                Bucket=bucket, Key=f"{prefix}/{key}" if prefix else key, Body=(Path(folder) / name).read_bytes()
            )


def lay_out_buckets(served: Path, server: str, upstream: str, n: int, tag: str) -> list[str]:
    """``n`` buckets ``one-{tag}-{i:04}``, each holding the store ``p{i:04}`` at ``p``; returns their roots.

    rclone serves each folder of ``served`` as a bucket (a link to the store here); moto gets uploads.
    """
    roots = []
    for i in range(n):
        bucket, store = f"one-{tag}-{i:04}", served / BUCKET / PREFIX / f"p{i:04}"
        if server == "rclone":
            (served / bucket).mkdir()
            os.symlink(store, served / bucket / "p")
        else:
            upload(upstream, store, bucket, "p")
        roots.append(f"s3://{bucket}/p")
    if server == "rclone":
        time.sleep(2)  # rclone's directory cache (--dir-cache-time 1s) of the new buckets' folder
    return roots


class Timed:
    """The time spent in the catalog's read phase (locating or discovering the roots, then reading them), measured
    around :func:`reading.read_roots`, and this process's CPU seconds meanwhile (nothing else of the build runs
    then)."""

    def __init__(self):
        self.seconds = 0.0
        self.cpu = 0.0
        self._orig = reading.read_roots

    def __enter__(self):
        def timed(*args, **kwargs):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return self._orig(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.cpu += time.process_time() - c0

        reading.read_roots = timed
        return self

    def __exit__(self, *exc):
        reading.read_roots = self._orig


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process so far (NaN where ``/proc`` is not there)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: free space the scratch folder needs: a 1,000-product catalog is about 100 MB (2,000 stac-geoparquet files)
SCRATCH_BYTES = 1 << 30


def default_scratch() -> str | None:
    """``/dev/shm`` where it is a writable folder (RAM on Linux) with :data:`SCRATCH_BYTES` free, else None (the
    system's temporary folder: a container's 64 MB ``/dev/shm`` would fill)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return None
    return str(shm) if shutil.disk_usage(shm).free >= SCRATCH_BYTES else None


def one_build(
    roots, options, endpoint, discover: bool, pids: list[int], scratch: Path
) -> tuple[float, float, int, int, list, int, float]:
    """``(seconds, read seconds, requests, most in flight, CPU seconds of pids, bucket lookups, read CPU seconds)``
    of one build into a temporary folder below ``scratch``."""
    with tempfile.TemporaryDirectory(dir=scratch) as out:
        proxy_stats(endpoint)
        before = [cpu_seconds(pid) for pid in pids]
        with count_requests() as counter, Timed() as timed:
            t0 = time.perf_counter()
            build(roots, Path(out) / "cat", storage_options=options, progress=False, discover=discover)
            seconds = time.perf_counter() - t0
        cpu = [cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]
        seen = proxy_stats(endpoint)["max_in_flight"]
    heads = counter["HEAD", "bucket"]
    return seconds, timed.seconds, counter.gets + counter.lists + heads, seen, cpu, heads, timed.cpu


HEADER = (
    f"{'case':<34}{'requests':>9}{'/product':>9}{'floor ms':>10}{'ms':>8}{'ratio':>7}{'read ms':>9}"
    f"{'read/floor':>11}{'in flight':>10}{'cpu ms/product':>15}{'of it read':>11}  cpu s (build/server/proxy)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--products", default="40,1000")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=32, help="the in-flight limit (the reader's default)")
    parser.add_argument("--server", choices=("rclone", "moto"), default="rclone")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--update", type=int, default=200, help="products of the update case (0: skip it)")
    parser.add_argument(
        "--buckets", default="40,200", help="products of the one-bucket-per-store case, one bucket each (empty: skip)"
    )
    parser.add_argument("--lifetime", type=float, default=7200.0, help="seconds before the servers stop themselves")
    parser.add_argument(
        "--scratch",
        default=default_scratch(),
        help="the folder of the served stores and the catalogs written (default: /dev/shm with 1 GiB free)",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    latency, limit = args.latency_ms / 1e3, args.concurrency
    counts = [int(x) for x in args.products.split(",") if x]
    bucket_counts = [int(x) for x in args.buckets.split(",") if x]
    scratch = Path(tempfile.mkdtemp(prefix="moczarr-bench-catalog-", dir=args.scratch))
    children: list[subprocess.Popen] = []
    try:
        template = write_sample_store(scratch / "sample") / "elevation"
        served = scratch / "served"
        lay_out(template, served / BUCKET / PREFIX, max([*counts, *bucket_counts, args.update]))
        server_port, proxy_port = free_port(), free_port()
        rclone_flags = ("--copy-links", "--dir-cache-time", "1s")  # the update case changes a store: a short cache
        children.append(start_server(args.server, served, server_port, args.lifetime, rclone_flags))
        children.append(start_proxy(proxy_port, server_port, args.latency_ms, args.lifetime))
        wait_for_port(server_port)
        wait_for_port(proxy_port)
        endpoint = f"http://127.0.0.1:{proxy_port}"
        if args.server == "moto":
            upload(f"http://127.0.0.1:{server_port}", served / BUCKET)
        options = {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION}}
        load = os.getloadavg()
        print(
            f"python {sys.version.split()[0]}, server {args.server}, +{args.latency_ms:g} ms per request, "
            f"in-flight limit {limit}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
            f"scratch {scratch.parent}"
        )
        print(HEADER)
        for n in counts:
            roots = [f"s3://{BUCKET}/{PREFIX}/p{i:04}" for i in range(n)]
            prefix = f"s3://{BUCKET}/{PREFIX}-{n}"
            if not (served / BUCKET / f"{PREFIX}-{n}").exists():
                (served / BUCKET / f"{PREFIX}-{n}").mkdir()
                for i in range(n):
                    os.symlink(served / BUCKET / PREFIX / f"p{i:04}", served / BUCKET / f"{PREFIX}-{n}" / f"p{i:04}")
                if args.server == "moto":  # rclone follows the links; moto is given the objects
                    upload(
                        f"http://127.0.0.1:{server_port}",
                        served / BUCKET / f"{PREFIX}-{n}",
                        BUCKET,
                        f"{PREFIX}-{n}",
                        False,
                    )
            for label, given, discover in ((f"{n} products, roots given", roots, False),
                                           (f"{n} products, --discover", [prefix], True)):  # fmt: skip
                pids = [os.getpid(), *(child.pid for child in children)]
                one_build(given[:2], options, endpoint, False, pids, scratch)  # warm the client and the server
                runs = [one_build(given, options, endpoint, discover, pids, scratch) for _ in range(args.runs)]
                print_row(label, n, runs, latency, limit)
        upstream = f"http://127.0.0.1:{server_port}"
        for n in bucket_counts:
            pids = [os.getpid(), *(child.pid for child in children)]
            given = lay_out_buckets(served, args.server, upstream, n, f"{n}-given")
            one_build(given[:2], options, endpoint, False, pids, scratch)  # warm the client and the server
            runs = [one_build(given, options, endpoint, False, pids, scratch) for _ in range(args.runs)]
            print_row(f"{n} buckets, region given", n, runs, latency, limit)
            looked_up = {k: v for k, v in options.items() if k != "client_kwargs"}
            looked_up["client_kwargs"] = {"endpoint_url": endpoint}
            runs = []
            for run in range(args.runs):  # fresh buckets each run: the process keeps the buckets' regions
                fresh = lay_out_buckets(served, args.server, upstream, n, f"{n}-{run}")
                runs.append(one_build(fresh, looked_up, endpoint, False, pids, scratch))
            print_row(f"{n} buckets, region looked up", n, runs, latency, limit)
        if args.update:
            bench_update(args.update, served, options, scratch, latency, limit)
    finally:
        stop_children(children)
        shutil.rmtree(scratch, ignore_errors=True)


def print_row(label: str, n: int, runs: list, latency: float, limit: int) -> None:
    """One line of the table: the medians of ``runs`` (:func:`one_build` results) beside their floor."""
    seconds = statistics.median(r[0] for r in runs)
    read = statistics.median(r[1] for r in runs)
    requests, seen, heads = runs[-1][2], max(r[3] for r in runs), runs[-1][5]
    cpu = [statistics.median(r[4][i] for r in runs) for i in range(len(runs[0][4]))]
    read_cpu = statistics.median(r[6] for r in runs)
    floor = requests * latency / limit
    lookups = f"  lookups {heads}" if heads else ""
    print(
        f"{label:<34}{requests:>9}{requests / n:>9.1f}{floor * 1e3:>10.0f}{seconds * 1e3:>8.0f}"
        f"{seconds / floor:>6.1f}x{read * 1e3:>9.0f}{read / floor:>10.1f}x{seen:>10}"
        f"{cpu[0] / n * 1e3:>15.1f}{read_cpu / n * 1e3:>11.1f}  " + "/".join(f"{c:.1f}" for c in cpu) + lookups,
        flush=True,
    )


def bench_update(n: int, served: Path, options: dict, scratch: Path, latency: float, limit: int) -> None:
    """Build ``n`` products with --discover, change one manifest, and count and time ``update`` (beside its floor).

    The floor is the requests x ``latency`` / ``limit``; with nothing changed an update writes nothing.
    """
    folder = served / BUCKET / f"update-{n}"
    folder.mkdir()
    for i in range(n):  # real copies: the changed manifest must not change the other stores' hard links
        shutil.copytree(served / BUCKET / PREFIX / f"p{i:04}", folder / f"p{i:04}")
    with tempfile.TemporaryDirectory(dir=scratch) as out:
        cat = Path(out) / "cat"
        build([f"s3://{BUCKET}/update-{n}"], cat, storage_options=options, progress=False, discover=True)
        with count_requests() as unchanged:
            t0 = time.perf_counter()
            update(str(cat), storage_options=options)
            t_unchanged = time.perf_counter() - t0
        manifest = folder / f"p{n // 2:04}" / "morton_hive.json"  # any one of the n
        doc = json.loads(manifest.read_text())
        doc["generated_at"] = "2030-01-01T00:00:00+00:00"
        manifest.unlink()
        manifest.write_text(json.dumps(doc, indent=1))
        time.sleep(2)  # rclone's directory cache (--dir-cache-time 1s)
        with count_requests() as one_changed:
            t0 = time.perf_counter()
            result = update(str(cat), storage_options=options)
            t_changed = time.perf_counter() - t0
    r = result.refresh

    def floor(counter) -> str:
        return f"floor {(counter.lists + counter.gets) * latency / limit * 1e3:.0f} ms"

    print(
        f"update, {n} products, none changed: {unchanged.lists} LISTs + {unchanged.gets} GETs "
        f"({(unchanged.lists + unchanged.gets) / n:.2f} per product), {t_unchanged * 1e3:.0f} ms ({floor(unchanged)})"
    )
    print(
        f"update, {n} products, one changed ({len(r.read)} re-read, {r.unchanged} unchanged): "
        f"{one_changed.lists} LISTs + {one_changed.gets} GETs {one_changed.summary()}, {t_changed * 1e3:.0f} ms "
        f"({floor(one_changed)}; only the changed product's documents and those listing every product written)"
    )


if __name__ == "__main__":
    main()
