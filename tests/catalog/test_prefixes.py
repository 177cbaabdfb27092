"""A prefix or root that is missing, empty, not a folder, or cannot be listed: one error naming it, nothing written.

``build --discover`` of a prefix below which no store is found, and an ``update`` whose discovered prefix
moved or emptied, end in one ``error:`` line naming the path and what is there (exit 2); a listing that
fails (403, 5xx after the retries, a stall, a symlink loop) is an error naming the location, never read as
"no store here", and the catalog at ``--out`` stays byte for byte what it was. Every command is the
installed ``moczarr-catalog`` (``tests.helpers.run_catalog``); object storage is the suite's moto
server, faults come from tests/faultproxy.py in front of it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from moczarr.errors import StorageError, StoragePermissionError, StorageTimeoutError, StoreNotFoundError
from moczarr.metadata import MANIFEST_NAME, Scanner
from moczarr_intake import build, update
from moczarr_intake.roots.scan import Scanners, locate
from tests.faultproxy import FaultProxy
from tests.helpers import SAMPLE, run_catalog, tree_snapshot

ELEVATION = SAMPLE / "elevation"  # a bare store
BUCKET = "moczarr-prefixes"


def one_error(done) -> str:
    """The one ``error:`` line of a failed command (exit 2, no traceback)."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def copy_store(dest: Path) -> Path:
    shutil.copytree(ELEVATION, dest)
    return dest


# -- a local prefix -------------------------------------------------------------------------------------
def _no_store(prefix: Path) -> str:
    (prefix / "zarrthing").mkdir(parents=True)
    (prefix / "zarrthing" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    return f"holds no store (skipped 1 zarr hierarchies (not stores): {prefix / 'zarrthing'}); nothing to catalog"


def _only_output(prefix: Path) -> str:
    copy_store(prefix / "cat" / "inside")  # a store only inside the catalog's own output: not walked
    return f"holds no store (not walked (the catalog's own output): {prefix / 'cat'}); nothing to catalog"


def _missing(prefix: Path) -> str:
    return "no such folder; discovery walks the folder holding the stores (was it moved?)"


def _file(prefix: Path) -> str:
    prefix.write_text("x")
    return "a file, not a folder; discovery walks the folder holding the stores"


def _empty(prefix: Path) -> str:
    prefix.mkdir()
    return "an empty folder; no store to discover there"


#: each case: what it puts at the prefix, and what the error line says of it
LOCAL_CASES = {"missing": _missing, "file": _file, "empty": _empty, "no-store": _no_store, "only-output": _only_output}


@pytest.mark.parametrize("case", list(LOCAL_CASES))
def test_build_discover_of_a_local_prefix_without_stores_names_it(tmp_path, case):
    prefix = tmp_path / "stores"
    want = LOCAL_CASES[case](prefix)
    out = prefix / "cat" if case == "only-output" else tmp_path / "cat"
    before = tree_snapshot(out) if out.exists() else None
    line = one_error(run_catalog("build", prefix, "--discover", "--out", out, cwd=tmp_path))
    assert line.startswith(f"error: {prefix}: {want}"), line
    assert "build_stac" not in line
    assert (tree_snapshot(out) if out.exists() else None) == before  # nothing written


@pytest.mark.parametrize(
    "change,want",
    [
        (lambda prefix: prefix.rename(prefix.with_name("moved")), "no such folder"),
        (lambda prefix: shutil.rmtree(prefix / "a") or shutil.rmtree(prefix / "b"), "an empty folder"),
    ],
    ids=["moved", "emptied"],
)
def test_update_of_a_local_prefix_that_moved_names_it_and_writes_nothing(tmp_path, change, want):
    prefix = tmp_path / "stores"
    copy_store(prefix / "a")
    copy_store(prefix / "b")
    out = tmp_path / "cat"
    build([str(prefix)], out, discover=True, progress=False)
    before = tree_snapshot(out)
    change(prefix)
    line = one_error(run_catalog("update", out, cwd=tmp_path))
    assert line.startswith(f"error: {prefix}: {want}"), line
    assert tree_snapshot(out) == before


def test_a_local_root_that_cannot_be_listed_is_an_error_not_gone(tmp_path):
    """Only the OS saying nothing is there makes a given root absent: a symlink loop (any other OSError) is not."""
    a, b = copy_store(tmp_path / "a"), copy_store(tmp_path / "b")
    out = tmp_path / "cat"
    build([str(a), str(b)], out, progress=False)
    before = tree_snapshot(out)
    shutil.rmtree(b)
    b.symlink_to(b)  # ELOOP: the folder is there, its listing fails
    line = one_error(run_catalog("update", out, cwd=tmp_path))
    assert line.startswith(f"error: {b}/ (LIST): read failed"), line
    assert tree_snapshot(out) == before
    with pytest.raises(StorageError, match=re.escape(f"{b}/ (LIST)")):
        locate([str(b)], Scanners())


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists a folder whatever its mode")
def test_a_local_root_denied_is_a_permission_error_naming_it(tmp_path):
    root = copy_store(tmp_path / "locked" / "a")
    root.chmod(0)
    try:
        with pytest.raises(StoragePermissionError, match=re.escape(f"{root}/ (LIST): read access denied")):
            locate([str(root)], Scanners())
    finally:
        root.chmod(0o755)


def test_a_file_removed_while_its_folder_is_listed_leaves_the_rest_listed(tmp_path, monkeypatch):
    """A writer's scratch file removed between the folder's read and its stat: that file is gone, not the folder."""
    store = copy_store(tmp_path / "a")
    (store / "scratch.tmp").write_text("x")
    real = os.scandir

    class Racing:
        """The real directory iterator; the scratch file is removed right after the folder's read returned it."""

        def __init__(self, path):
            self.it = real(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.it.close()

        def __iter__(self):
            for entry in self.it:
                if entry.name == "scratch.tmp":
                    os.unlink(entry.path)
                yield entry

    monkeypatch.setattr(os, "scandir", Racing)
    (entries,) = Scanner(store).list_entries([""])
    monkeypatch.undo()
    assert MANIFEST_NAME in entries.objects and "scratch.tmp" not in entries.objects
    assert entries.folders == Scanner(store).list_entries([""])[0].folders != ()


# -- object storage -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bucket(s3_server):
    s3_server.bucket(BUCKET, public=True)
    for name in ("team/a", "team/b", "moving/a"):
        s3_server.upload_tree(ELEVATION, BUCKET, name)
    s3_server.put_bytes(BUCKET, "afile", b"x")
    s3_server.put_bytes(BUCKET, "zz/zarrthing/zarr.json", b'{"zarr_format": 3, "node_type": "group"}')
    return s3_server


@pytest.fixture(scope="module")
def proxy(bucket):
    with FaultProxy(bucket.endpoint_url, max_stall=20.0) as proxy:
        yield proxy


@pytest.fixture
def faults(proxy):
    proxy.clear()
    yield proxy
    proxy.clear()


def s3_flags(endpoint: str) -> list[str]:
    return ["--anon", "--endpoint-url", endpoint]


def cli_options(endpoint: str) -> dict:
    """The storage options :func:`s3_flags` give the command (a catalog built with them records the same)."""
    return {"anon": True, "client_kwargs": {"endpoint_url": endpoint}}


@pytest.mark.parametrize(
    "prefix,want",
    [
        (f"s3://{BUCKET}/nosuch", f"s3://{BUCKET}/nosuch: holds nothing (no object below this prefix)"),
        ("s3://moczarr-no-such-bucket/team", "s3://moczarr-no-such-bucket: no such bucket"),
        (f"s3://{BUCKET}/afile", f"s3://{BUCKET}/afile: an object, not a folder"),
        (
            f"s3://{BUCKET}/zz",
            f"s3://{BUCKET}/zz: holds no store (skipped 1 zarr hierarchies (not stores): s3://{BUCKET}/zz/zarrthing)",
        ),
    ],
    ids=["empty-prefix", "no-bucket", "object", "no-store"],
)
def test_build_discover_of_an_s3_prefix_without_stores_names_it(bucket, tmp_path, prefix, want):
    done = run_catalog("build", prefix, "--discover", "--out", "cat", *s3_flags(bucket.endpoint_url), cwd=tmp_path)
    line = one_error(done)
    assert line.startswith(f"error: {want}"), line
    assert prefix in line and not (tmp_path / "cat").exists()


def test_a_given_root_in_a_missing_bucket_is_no_such_bucket_on_either_client(bucket):
    for backend in ("obstore", "s3fs"):
        options = {**bucket.storage_options(anon=True), "moczarr_backend": backend}
        with pytest.raises(StoreNotFoundError, match=r"^s3://moczarr-no-such-bucket: no such bucket"):
            locate(["s3://moczarr-no-such-bucket/a"], Scanners(options))


def test_update_of_an_s3_prefix_that_moved_names_it_and_writes_nothing(bucket, tmp_path):
    out = tmp_path / "cat"
    options = cli_options(bucket.endpoint_url)
    build([f"s3://{BUCKET}/moving"], out, storage_options=options, discover=True, progress=False)
    before = tree_snapshot(out)
    bucket.upload_tree(ELEVATION, BUCKET, "moved/a")
    bucket.delete_prefix(BUCKET, "moving/")
    line = one_error(run_catalog("update", out, cwd=tmp_path))  # the record's endpoint
    assert line.startswith(f"error: s3://{BUCKET}/moving: holds nothing"), line
    assert tree_snapshot(out) == before


# -- a listing that fails ---------------------------------------------------------------------------------
LIST_FAULTS = {
    "prefix-403": ("team/", {"kind": "status", "status": 403, "code": "AccessDenied"}, "team/", "read access denied"),
    "root-403": ("team/b/", {"kind": "status", "status": 403, "code": "AccessDenied"}, "team/b/", "read access denied"),
    "root-500": ("team/b/", {"kind": "status", "status": 500, "code": "InternalError"}, "team/b/", "read failed"),
}


def list_fault(proxy: FaultProxy, listed: str, fault: dict):
    """``fault`` on every LIST of ``listed`` (a LIST is a GET of the bucket, the prefix in its query)."""
    return proxy.add(f"/{BUCKET}", method="GET", query=f"prefix={listed}", **fault)


@pytest.fixture(scope="module")
def catalogs(proxy, tmp_path_factory):
    """Two catalogs built through the proxy (no fault yet): over the prefix ``team`` discovered, and its two roots."""
    base = tmp_path_factory.mktemp("catalogs")
    options = cli_options(proxy.endpoint_url)
    build([f"s3://{BUCKET}/team"], base / "discovered", storage_options=options, discover=True, progress=False)
    build([f"s3://{BUCKET}/team/a", f"s3://{BUCKET}/team/b"], base / "given", storage_options=options, progress=False)
    return {"discovered": base / "discovered", "given": base / "given"}


@pytest.mark.parametrize("fault", list(LIST_FAULTS))
@pytest.mark.parametrize("kind", ["discovered", "given"])
def test_update_whose_listing_fails_names_it_and_writes_nothing(catalogs, faults, kind, fault):
    listed, spec, named, what = LIST_FAULTS[fault]
    if kind == "given" and listed == "team/":
        listed = named = "team/a/"  # given roots list no prefix above them
    out = catalogs[kind]
    before = tree_snapshot(out)
    rule = list_fault(faults, listed, spec)
    line = one_error(run_catalog("update", out, cwd=out.parent))
    assert rule.hits >= 1
    assert f"s3://{BUCKET}/{named} (LIST): {what}" in line, line
    assert tree_snapshot(out) == before


@pytest.mark.parametrize("fault", ["prefix-403", "root-500"])
def test_build_discover_whose_listing_fails_names_it_and_writes_nothing(bucket, faults, tmp_path, fault):
    listed, spec, named, what = LIST_FAULTS[fault]
    rule = list_fault(faults, listed, spec)
    done = run_catalog("build", f"s3://{BUCKET}/team", "--discover", "--out", "cat", *s3_flags(faults.endpoint_url),
               cwd=tmp_path)  # fmt: skip
    line = one_error(done)
    assert rule.hits >= 1
    assert f"s3://{BUCKET}/{named} (LIST): {what}" in line, line
    assert not (tmp_path / "cat").exists()


def test_update_whose_listing_stalls_times_out_naming_it_and_writes_nothing(catalogs, faults):
    """A stall, with a short budget (the command's own is 30 s): the same error, within it."""
    options = {
        "anon": True,
        "client_kwargs": {"endpoint_url": faults.endpoint_url, "region_name": "us-east-1"},
        "moczarr_retry": {"attempts": 2, "deadline": 3.0, "backoff": 0.05},
        "config_kwargs": {"read_timeout": 1, "connect_timeout": 1},
    }
    for kind in ("discovered", "given"):
        out = catalogs[kind]
        before = tree_snapshot(out)
        faults.clear()
        list_fault(faults, "team/b/", {"kind": "stall", "seconds": 20})
        with pytest.raises(StorageTimeoutError, match=re.escape(f"s3://{BUCKET}/team/b/ (LIST)")):
            update(str(out), storage_options=options)
        assert tree_snapshot(out) == before
