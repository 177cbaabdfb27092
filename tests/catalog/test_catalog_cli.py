"""``moczarr-catalog build`` and ``show`` as a user meets them: the installed command, run as a subprocess.

What the command refuses (every flag, before anything is written), what it
honours (``--href-base`` wherever the stores are), what it degrades (one
damaged product, a root coverage MOC cut short by the server) and what it
never writes (a path of this machine into the STAC API outputs, a credential
into any document). The stores are copies of the bundled sample
(``catalogs/sample``: a multi-product root of ``elevation`` and
``elevation_yearly``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import intake
import pystac
import pytest
import xarray as xr
import yaml

import moczarr
from moczarr.metadata import MANIFEST_NAME
from moczarr_intake.model import options as arguments
from moczarr_intake.stac import API_COLLECTIONS, API_ITEMS, open_stac
from tests.helpers import REPO, SAMPLE, run_catalog, tree_snapshot

#: the libraries ``--help`` and an argument error must not import (issue 19: 1.46 s of them)
HEAVY = ("xarray", "zarr", "dask", "mortie", "pandas", "pystac", "rustac", "numpy", "intake")


def copy_sample(dest: Path) -> Path:
    shutil.copytree(SAMPLE, dest)
    return dest


def errors_of(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("error: ")]


# -- a light command line ---------------------------------------------------------------------------
def imported(done: subprocess.CompletedProcess) -> set[str]:
    """Top-level packages a ``python -X importtime`` run imported (its stderr)."""
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["build", "--help"],
        ["build"],  # argparse: the roots and --out are missing
        ["build", "x", "--out", "o", "--license", "not a license!!"],
        ["build", "x", "--out", "o", "--href-base", "not-a-url"],
        ["show"],
    ],
    ids=["help", "build-help", "missing-arguments", "bad-license", "bad-href-base", "show-missing-root"],
)
def test_help_and_argument_errors_import_no_heavy_library(tmp_path, args):
    done = run_catalog(*args, cwd=tmp_path, python_flags=["-X", "importtime"])
    assert done.returncode in (0, 2), done.stderr[-2000:]
    names = imported(done)
    assert "argparse" in names, "the import log was not read"  # the check can see what was imported
    assert not names & set(HEAVY), f"{args} imported {sorted(names & set(HEAVY))}"


# -- refusals: every flag is checked before anything is written ----------------------------------
def refusal_cases(tmp: Path) -> dict[str, tuple[list, str]]:
    store = tmp / "stores" / "sample"
    readme = tmp / "README.md"
    readme.write_text("not a catalog folder\n")
    roots = [store]
    return {
        "license-not-spdx": ([*roots, "--out", tmp / "cat", "--license", "not a license!!"], "--license"),
        "license-expression": ([*roots, "--out", tmp / "cat", "--license", "MIT OR Apache-2.0"], "--license"),
        "license-ftp-url": ([*roots, "--out", tmp / "cat", "--license", "ftp://example.org/terms"], "--license"),
        "href-base-not-a-url": ([*roots, "--out", tmp / "cat", "--href-base", "not-a-url"], "--href-base"),
        "href-base-ftp": ([*roots, "--out", tmp / "cat", "--href-base", "ftp:/x"], "--href-base"),
        "href-base-no-host": ([*roots, "--out", tmp / "cat", "--href-base", "https://"], "--href-base"),
        "catalog-url-ftp": ([*roots, "--out", tmp / "cat", "--catalog-url", "ftp:/x"], "--catalog-url"),
        "catalog-url-relative": ([*roots, "--out", tmp / "cat", "--catalog-url", "site/cat"], "--catalog-url"),
        "stores-root-alone": ([*roots, "--out", tmp / "cat", "--stores-root", tmp / "stores"], "--stores-root"),
        "endpoint-not-a-url": ([*roots, "--out", tmp / "cat", "--endpoint-url", "localhost:9000"], "--endpoint-url"),
        "out-is-a-file": ([*roots, "--out", readme], "--out"),
        "out-inside-the-root": ([*roots, "--out", store / "cat"], "--out"),
        "out-inside-a-product": ([store / "elevation", "--out", store / "elevation" / "cat"], "--out"),
        "out-inside-a-store-not-given": ([store / "elevation", "--out", store / "elevation_yearly" / "c"], "--out"),
    }


REFUSALS = [
    "license-not-spdx",
    "license-expression",
    "license-ftp-url",
    "href-base-not-a-url",
    "href-base-ftp",
    "href-base-no-host",
    "catalog-url-ftp",
    "catalog-url-relative",
    "stores-root-alone",
    "endpoint-not-a-url",
    "out-is-a-file",
    "out-inside-the-root",
    "out-inside-a-product",
    "out-inside-a-store-not-given",
]


@pytest.mark.parametrize("case", REFUSALS)
def test_a_flag_it_cannot_honour_is_refused_before_anything_is_written(tmp_path, case):
    copy_sample(tmp_path / "stores" / "sample")
    args, flag = refusal_cases(tmp_path)[case]
    before = tree_snapshot(tmp_path)
    done = run_catalog("build", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = errors_of(done)
    assert flag in line and "Traceback" not in done.stderr
    assert tree_snapshot(tmp_path) == before  # nothing written: no catalog, no stac/ in a store, no temporary folder


def test_accepted_licenses_are_written_in_their_canonical_form(tmp_path):
    assert arguments.check_license("cc-by-4.0") == ("CC-BY-4.0", None)
    assert arguments.check_license("https://example.org/terms") == (None, "https://example.org/terms")
    assert arguments.check_url("s3://bucket/stores/", "--href-base") == "s3://bucket/stores"
    assert arguments.MANIFEST_NAME == MANIFEST_NAME  # the light module's copy of the name
    copy_sample(tmp_path / "sample")
    done = run_catalog("build", "sample", "--out", "cat", "--license", "cc-by-4.0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    catalog = pystac.Catalog.from_file(str(tmp_path / "cat" / "stac" / "catalog.json"))
    assert {c.license for c in catalog.get_all_collections()} == {"CC-BY-4.0"}


# -- --href-base wherever the stores are; no machine path in the STAC API outputs ----------------------
def every_href(out: Path) -> list[str]:
    """Every store address the written documents give: STAC assets and hints, both YAML flavours."""
    hrefs = []
    for path in (out / "stac").rglob("*.json"):
        doc = json.loads(path.read_text())
        for asset in doc.get("assets", {}).values():
            if "data" in asset.get("roles", []) or "metadata" in asset.get("roles", []):
                hrefs.append(asset["href"])
            hrefs += [v for k, v in (asset.get("moczarr:open") or {}).get("kwargs", {}).items() if k == "store_root"]
    v1 = yaml.safe_load((out / "catalog.yaml").read_text())["sources"]
    hrefs += [s["args"]["store_root"] for s in v1.values()]
    v2 = yaml.safe_load((out / "catalog_v2.yaml").read_text())["data"]
    hrefs += [d["kwargs"]["url"] for d in v2.values()]
    return hrefs


def test_href_base_is_honoured_for_stores_inside_out(tmp_path):
    copy_sample(tmp_path / "cat" / "sample")  # the stores sit inside the catalog folder, as catalogs/sample does
    base = "https://data.example.org/cat"
    done = run_catalog("build", "cat/sample", "--out", "cat", "--href-base", base, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    hrefs = every_href(tmp_path / "cat")
    assert len(hrefs) > 20
    assert all(h.startswith(f"{base}/sample") for h in hrefs), [h for h in hrefs if not h.startswith(base)][:5]
    assert (tmp_path / "cat" / "stac" / API_ITEMS).is_dir() and not [
        line for line in done.stderr.splitlines() if "not written" in line
    ]


def test_stac_api_outputs_are_written_only_without_machine_paths(tmp_path):
    copy_sample(tmp_path / "sample")
    plain = run_catalog("build", "sample", "--out", "plain", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    (line,) = [line for line in plain.stderr.splitlines() if "STAC API outputs" in line]
    assert "--href-base" in line and str(tmp_path / "sample") in line
    assert not (tmp_path / "plain" / "stac" / API_ITEMS).exists()
    assert not (tmp_path / "plain" / "stac" / API_COLLECTIONS).exists()
    # published stores but thumbnails beside a catalog of no URL: the thumbnails' hrefs would be paths
    thumbs = run_catalog(
        "build", "sample", "--out", "thumbs", "--href-base", "https://h/s", "--thumbnails", cwd=tmp_path
    )
    assert thumbs.returncode == 0, thumbs.stderr
    (line,) = [line for line in thumbs.stderr.splitlines() if "STAC API outputs" in line]
    assert "--catalog-url" in line and "thumbnail.png" in line
    published = run_catalog(
        "build", "sample", "--out", "pub", "--href-base", "https://h/s", "--catalog-url", "https://h/c", "--thumbnails",
        cwd=tmp_path,
    )  # fmt: skip
    assert published.returncode == 0, published.stderr
    api = tmp_path / "pub" / "stac"
    files = sorted(p.name for p in (api / API_ITEMS).iterdir())
    assert files and all(f.endswith(".parquet") for f in files)
    blobs = b"".join(p.read_bytes() for p in [*(api / API_ITEMS).iterdir(), *(api / API_COLLECTIONS).iterdir()])
    assert str(tmp_path).encode() not in blobs  # not one path of this machine


# -- one damaged product degrades, it does not end the build --------------------------------------------
def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_one_damaged_product_is_a_degraded_line_not_the_end_of_its_root(tmp_path):
    root = copy_sample(tmp_path / "sample")
    truncate(root / "elevation_yearly" / MANIFEST_NAME)
    done = run_catalog("build", "sample", "--out", "cat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("degraded: ")]
    assert "elevation_yearly" in line and MANIFEST_NAME in line
    cat = intake.open_catalog(str(tmp_path / "cat" / "catalog.yaml"))
    assert sorted(cat) == ["elevation", "elevation_tree"]
    xr.testing.assert_identical(cat["elevation"].read(), moczarr.open_level(root / "elevation").load())
    strict = run_catalog("build", "sample", "--out", "strict", "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and "elevation_yearly" in errors_of(strict)[0]
    assert not (tmp_path / "strict").exists()
    show = run_catalog("show", "sample", cwd=tmp_path)
    assert show.returncode == 0, show.stderr
    assert "- elevation:" in show.stdout and "elevation_yearly: damaged" in show.stdout
    (shown,) = [line for line in show.stderr.splitlines() if line.startswith("degraded: ")]
    assert "elevation_yearly" in shown and MANIFEST_NAME in shown


def test_a_damaged_root_among_others_is_left_out_and_alone_it_is_an_error(tmp_path):
    good = copy_sample(tmp_path / "good")
    bare = shutil.copytree(SAMPLE / "elevation", tmp_path / "bare")
    truncate(bare / MANIFEST_NAME)
    done = run_catalog("build", "good", "bare", "--out", "cat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    degraded = [line for line in done.stderr.splitlines() if line.startswith("degraded: ")]
    assert len(degraded) == 1 and str(bare) in degraded[0]
    assert sorted(intake.open_catalog(str(tmp_path / "cat" / "catalog.yaml"))) == [
        "elevation",
        "elevation_tree",
        "elevation_yearly",
        "elevation_yearly_tree",
    ]
    alone = run_catalog("build", "bare", "--out", "alone", cwd=tmp_path)
    assert alone.returncode == 2 and "nothing to catalog" in errors_of(alone)[0]
    assert good.is_dir() and not (tmp_path / "alone").exists()


# -- object storage: a root coverage MOC cut short, a private bucket ----------------------------------
@pytest.fixture(scope="module")
def s3():
    from tests.s3server import S3Server

    with S3Server() as server:
        server.create_bucket("catalog-public", public=True)
        server.create_bucket("catalog-private", public=False)
        for bucket in ("catalog-public", "catalog-private"):
            server.delete_prefix(bucket, "sample/")
            server.upload_tree(SAMPLE, bucket, "sample")
        yield server


def collection_facts(out: Path) -> dict[str, tuple]:
    catalog = pystac.Catalog.from_file(str(out / "stac" / "catalog.json"))
    return {
        c.id: (c.extent.spatial.bboxes, c.extra_fields["moczarr:n_shards"], len(list(c.get_items())))
        for c in catalog.get_all_collections()
    }


def test_a_root_coverage_moc_cut_short_falls_back_to_the_walk(s3, tmp_path):
    from tests.faultproxy import FaultProxy

    intact = run_catalog("build", "s3://catalog-public/sample", "--out", "intact", "--anon", "--endpoint-url",
                 s3.endpoint_url, cwd=tmp_path)  # fmt: skip
    assert intact.returncode == 0, intact.stderr
    assert not [line for line in intact.stderr.splitlines() if line.startswith("degraded: ")]
    with FaultProxy(s3.endpoint_url) as proxy:
        rule = proxy.add("/catalog-public/sample/elevation/coverage.moc", "cut", method="GET")
        cut = run_catalog("build", "s3://catalog-public/sample", "--out", "cut", "--anon", "--endpoint-url",
                  proxy.endpoint_url, cwd=tmp_path)  # fmt: skip
        assert rule.hits >= 1, "the proxy never served the root coverage.moc"
        strict = run_catalog("build", "s3://catalog-public/sample", "--out", "strict", "--strict", "--anon",
                     "--endpoint-url", proxy.endpoint_url, cwd=tmp_path)  # fmt: skip
    assert cut.returncode == 0, cut.stderr
    (line,) = [line for line in cut.stderr.splitlines() if line.startswith("degraded: ")]
    assert line.startswith("degraded: elevation:") and "discovery walk" in line
    assert collection_facts(tmp_path / "cut") == collection_facts(tmp_path / "intact")  # bbox, shards, Items
    v1 = yaml.safe_load((tmp_path / "cut" / "catalog.yaml").read_text())["sources"]["elevation"]["metadata"]
    want = yaml.safe_load((tmp_path / "intact" / "catalog.yaml").read_text())["sources"]["elevation"]["metadata"]
    assert (v1["bbox"], v1["n_shards"]) == (want["bbox"], want["n_shards"]) and v1["n_shards"] > 0
    assert strict.returncode == 1 and "discovery walk" in errors_of(strict)[0]


def test_no_credential_is_written_and_readers_bring_their_own(s3, tmp_path):
    from moczarr_intake import build
    from tests.s3server import ACCESS_KEY, SECRET_KEY

    full = s3.storage_options(anon=False)  # key, secret, endpoint, region
    root = "s3://catalog-private/sample"
    written = build([root], tmp_path / "api", storage_options=full, progress=False)
    assert any("not written into the catalog" in n and "secret" in n for n in written.notes)
    env = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": "us-east-1"}
    done = run_catalog("build", root, "--out", "cli", "--endpoint-url", s3.endpoint_url, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    for out in (tmp_path / "api", tmp_path / "cli"):
        files = [p for p in out.rglob("*") if p.is_file()]
        assert len(files) > 5
        for path in files:
            data = path.read_bytes()
            assert SECRET_KEY.encode() not in data and ACCESS_KEY.encode() not in data, path
    mine = {"key": ACCESS_KEY, "secret": SECRET_KEY}  # what a reader brings at open time
    want = moczarr.open_level(f"{root}/elevation", 6, storage_options=full).load()
    v1 = intake.open_catalog(str(tmp_path / "api" / "catalog.yaml"))
    assert v1["elevation"].describe()["args"]["storage_options"] == {
        "client_kwargs": {"endpoint_url": s3.endpoint_url, "region_name": "us-east-1"}
    }
    xr.testing.assert_identical(v1["elevation"](order=6, storage_options=mine).read(), want)
    v2 = intake.open_catalog(str(tmp_path / "api" / "catalog_v2.yaml"))
    xr.testing.assert_identical(v2["elevation_o6"].read(storage_options=mine), want)
    item = pystac.read_file(
        str(tmp_path / "api" / "stac" / "sample" / "elevation" / "elevation-o6" / "elevation-o6.json")
    )
    hinted = item.assets["data"].extra_fields["xarray:storage_options"]
    xr.testing.assert_identical(open_stac(item, storage_options={**hinted, **mine}).load(), want)


# -- version-1 entries check their arguments as the version-2 readers do, quietly ------------------------
V1_SCRIPT = """
import json
import warnings
warnings.simplefilter("error")  # any warning of a healthy read fails the run
import intake, moczarr
from moczarr.errors import ArgumentTypeError
cat = intake.open_catalog("catalogs/catalog.yaml")
sizes = [cat["elevation"].read().sizes["cells"], cat["elevation"](order=4).read().sizes["cells"],
         cat["elevation"](zoom=4).read().sizes["cells"], cat["elevation"](aoi=["4331421"]).read().sizes["cells"]]
yearly = [cat["elevation_yearly"].read().attrs["morton_hive"]["window"],
          cat["elevation_yearly"](window="2020").read().attrs["morton_hive"]["window"]]
trees = [sorted(cat["elevation_tree"].read().children), sorted(cat["elevation_yearly_tree"].read().children)]
refused = []
for kwargs in ({"order": 6, "zoom": 4}, {"order": 8, "zoom": 4}, {"zoom": 4, "level": 6}):
    try:
        cat["elevation"](**kwargs).read()
    except ArgumentTypeError as exc:
        refused.append(type(exc).__name__)
print(json.dumps([sizes, yearly, trees, refused]))
"""


def test_version_1_entries_check_arguments_and_read_without_a_warning():
    done = subprocess.run([sys.executable, "-c", V1_SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""
    native, coarse = (moczarr.open_level(SAMPLE / "elevation", r).sizes["cells"] for r in (8, 4))
    picked = moczarr.open_level(SAMPLE / "elevation", aoi=["4331421"]).sizes["cells"]
    assert json.loads(done.stdout) == [
        [native, coarse, coarse, picked],
        ["2019", "2020"],
        [["elevation"], ["elevation_yearly"]],
        ["ArgumentTypeError"] * 3,
    ]


def test_verify_refuses_an_endpoint_that_is_not_a_url(tmp_path):
    """``verify`` checks ``--endpoint-url`` as every other command does: one error line, nothing read."""
    store = copy_sample(tmp_path / "stores" / "sample")
    done = run_catalog("verify", store, "--endpoint-url", "localhost:9000", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("error: --endpoint-url 'localhost:9000' is not an absolute URL")
    assert done.stderr.count("\n") == 1 and not done.stdout
