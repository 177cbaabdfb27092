"""Killed runs and concurrent runs: the installed ``moczarr-catalog`` stopped with SIGKILL at named steps.

Each run is a real process, paused at a step of :mod:`moczarr_intake.living.staging`
through its test hook (``MOCZARR_CATALOG_PAUSE``), then killed. What a local
run leaves must be one whole generation: every file byte for byte the
previous catalog's or, once the folders are exchanged, the new one's (a fresh
build of each state is the reference). Where the exchange is unavailable,
and on object storage, it must be readable (every document reachable from
the entry documents is whole and every href resolves) and hold no third
generation. The next run must converge to exactly what a fresh build writes,
including deleting what the killed run meant to delete, and remove what the
killed run left beside the catalog. Object storage is moto's real S3 server.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from moczarr_intake import build
from moczarr_intake.cli import main
from moczarr_intake.living.lock import LOCK_KEY
from moczarr_intake.living.record import RECORD_NAME
from moczarr_intake.living.staging import PAUSE_ENV
from tests.helpers import catalog_script, link_copy, rewrite_manifest
from tests.s3server import ACCESS_KEY, SECRET_KEY, S3Server

pytestmark = [pytest.mark.subprocess, pytest.mark.filterwarnings("ignore::moczarr.errors.MoczarrWarning")]

HREF = "https://h.example.org/s"


def _stores(sample: Path, prefix: Path) -> Path:
    for name in ("a", "b"):
        link_copy(sample / "elevation", prefix / "one" / name)
    link_copy(sample, prefix / "two")
    return prefix


def _change(sample: Path, prefix: Path) -> None:
    """One store gone, one added, one product changed: a new generation that adds, rewrites and deletes."""
    shutil.rmtree(prefix / "one" / "b")
    link_copy(sample / "elevation", prefix / "one" / "c")
    rewrite_manifest(prefix / "two" / "elevation_yearly", generated_at="2032-02-02T00:00:00+00:00")


def _change_one_product(sample: Path, prefix: Path) -> None:
    """One product changed, every other store as it was."""
    rewrite_manifest(prefix / "two" / "elevation_yearly", generated_at="2032-02-02T00:00:00+00:00")


def _before_and_after(sample: Path, base: Path, change, *, user_file: bool = False) -> tuple:
    """The stores laid out under ``base``, built, changed by ``change(sample, prefix)`` and built again, each
    build fresh into one folder (holding only :data:`USER_FILE` first, with ``user_file``): the build's
    arguments, the folder, and every file of each build."""
    prefix = _stores(sample, base / "stores")
    args = ["build", prefix, "--discover", "--href-base", HREF, "--stores-root", prefix]
    out = base / "runs" / "cat"
    states = []
    for step in (None, change):
        if step is not None:
            step(sample, prefix)
        shutil.rmtree(out.parent, ignore_errors=True)
        out.mkdir(parents=True)
        if user_file:
            (out / USER_FILE).write_text("placed by the operator\n")
        assert main([*map(str, args), "--out", str(out)]) == 0
        states.append(_files(out))
    return args, out, states[0], states[1]


class Paused:
    """A ``moczarr-catalog`` process paused at ``step`` (its marker line read from stderr), killed by its pid."""

    def __init__(self, args, step: str, cwd: Path, env: dict | None = None, script: list[str] | None = None):
        full = {**os.environ, PAUSE_ENV: step, "NO_PROXY": "127.0.0.1,localhost", **(env or {})}
        command = [sys.executable, *(script or [catalog_script()]), *map(str, args)]
        self.proc = subprocess.Popen(command, cwd=cwd, env=full, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        lines = []
        for line in self.proc.stderr:  # ends when the process ends: then it never reached the step
            lines.append(line)
            if line.strip() == f"moczarr-catalog: paused at {step}":
                return
        self.proc.wait()
        pytest.fail(f"never paused at {step} (exit {self.proc.returncode}): {''.join(lines)[-2000:]}")

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        assert self.proc.returncode == -signal.SIGKILL


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _reachable(read, root: str, yaml_keys: list[str], base: str = "{{ CATALOG_DIR }}") -> list[str]:
    """Walk the catalog from its entry documents (``read(key)``: bytes or None); the hrefs that do not resolve.

    ``base``: how the YAML documents spell the catalog's location in their ``stac_href``.
    """
    dangling: list[str] = []
    todo = [root]
    for name in yaml_keys:
        for source in (yaml.safe_load(read(name)).get("sources") or {}).values():
            href = ((source or {}).get("metadata") or {}).get("stac_href")
            if href:
                todo.append(href.removeprefix(f"{base}/"))
    seen: set[str] = set()
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        seen.add(key)
        payload = read(key)
        if payload is None:
            dangling.append(key)
            continue
        doc = json.loads(payload)
        hrefs = [(lk["rel"], lk["href"]) for lk in doc.get("links", [])]
        hrefs += [("asset", a["href"]) for a in doc.get("assets", {}).values()]
        for rel, href in hrefs:
            if "://" in href or href.startswith("/"):
                continue  # the stores, published elsewhere
            target = posixpath.normpath(posixpath.join(posixpath.dirname(key), href))
            if read(target) is None:
                dangling.append(f"{key} -> {href}")
            elif rel in ("child", "item"):
                todo.append(target)
    return dangling


def _local_reader(out: Path):
    def read(key: str) -> bytes | None:
        path = out / key
        return path.read_bytes() if path.is_file() else None

    return read


def _check_left(out: Path, before: dict[str, bytes], after: dict[str, bytes]) -> None:
    """What a run killed while placing file by file left: readable, every file of the previous or the new
    generation (no third)."""
    assert not _reachable(_local_reader(out), "stac/catalog.json", ["catalog.yaml", "catalog_v2.yaml"])
    left = _files(out)
    foreign = [k for k, v in left.items() if v != before.get(k) and v != after.get(k)]
    assert not foreign, foreign


def _beside(out: Path) -> list[str]:
    """What runs left beside the catalog: staging folders, generations, the lock file."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


#: a file a user placed in the catalog's folder, which no build owns: every generation keeps it
USER_FILE = "README.operator.txt"


@pytest.fixture(scope="module")
def snapshots(sample, tmp_path_factory):
    """Stores changed after a catalog was built of them: the build's arguments, the catalog's folder, and every
    file of a fresh build of the stores before the change (``before``) and after it (``after``), each into that
    folder (its pgstac lines name it) holding only :data:`USER_FILE`."""
    return _before_and_after(sample, tmp_path_factory.mktemp("crash"), _change, user_file=True)


@pytest.fixture
def generations(snapshots):
    """The catalog of the stores before their change, alone in its folder (the stores changed): the build's
    arguments, the catalog's folder, what is in it (``before``) and what a fresh build of the stores writes
    there (``after``)."""
    args, out, before, after = snapshots
    _restore(out, before)
    return args, out, before, after


def _restore(out: Path, files: dict[str, bytes]) -> None:
    """``out`` holding ``files``, alone in its folder."""
    shutil.rmtree(out.parent)
    for key, payload in files.items():
        (out / key).parent.mkdir(parents=True, exist_ok=True)
        (out / key).write_bytes(payload)


#: the steps of a local run in order; a run killed before ``swapped`` leaves the previous generation
STEPS = ["staged", "linked", "swapped", "deleting"]


@pytest.mark.parametrize("command", ["build", "update"])
@pytest.mark.parametrize("step", STEPS)
def test_a_run_killed_at_any_step_leaves_one_whole_generation_and_the_next_run_converges(generations, step, command):
    args, out, before, after = generations
    assert before != after and set(before) - set(after) and set(after) - set(before)
    cli = [*args, "--out", out] if command == "build" else ["update", out]
    Paused(cli, step, cwd=out.parent).kill()
    left = _files(out)
    assert left == (before if STEPS.index(step) < STEPS.index("swapped") else after)  # never a mix
    assert left[USER_FILE] == before[USER_FILE]
    assert _beside(out)  # the killed run's staging folders (or the previous generation) and its lock
    assert main([*map(str, cli)]) == 0
    assert _files(out) == after
    assert not _beside(out)  # cleaned by the next run


@pytest.fixture(scope="module")
def one_product_changed(sample, tmp_path_factory):
    """As :func:`snapshots`, the stores changed in one product only: an update writes that product's documents
    and keeps the others'."""
    _, out, before, after = _before_and_after(sample, tmp_path_factory.mktemp("partial"), _change_one_product)
    return out, before, after


@pytest.mark.parametrize("step", ["linked", "swapped"])
def test_a_partial_update_killed_leaves_one_generation_and_the_next_keeps_the_unchanged_files(
    one_product_changed, step
):
    out, before, after = one_product_changed
    _restore(out, before)
    kept = [k for k in before if k.endswith("/collection.json") and "elevation_yearly" not in k]
    assert kept and all(before[k] == after[k] for k in kept)
    inodes = {k: (out / k).stat().st_ino for k in kept}
    Paused(["update", out], step, cwd=out.parent).kill()
    assert _files(out) == (before if step == "linked" else after)
    assert main(["update", str(out)]) == 0
    assert _files(out) == after
    assert {k: (out / k).stat().st_ino for k in kept} == inodes  # linked into each generation, never rewritten
    assert not _beside(out)


#: a ``moczarr-catalog`` whose system cannot exchange two folders (the file-by-file placement)
NO_EXCHANGE = (
    "import sys; from moczarr_intake.living import staging; staging._swap_function = lambda: None; "
    "from moczarr_intake.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize("step", ["moving", "roots"])
def test_where_no_exchange_a_killed_run_leaves_resolving_hrefs_and_publish_waits_for_the_next_run(
    generations, step, capsys
):
    args, out, before, after = generations
    Paused([*args, "--out", out], step, cwd=out.parent, script=["-c", NO_EXCHANGE]).kill()
    _check_left(out, before, after)
    assert _files(out) not in (before, after)  # the weaker guarantee: files of both generations
    capsys.readouterr()
    assert main(["publish", str(out), "--pgstac", "postgresql://nobody@127.0.0.1:9/none"]) == 2
    assert "the catalog was left unsettled (moczarr-catalog build, pid " in capsys.readouterr().err
    assert main(["update", str(out)]) == 0  # this one exchanges: the whole catalog written again
    assert _files(out) == after
    assert not _beside(out)


def test_two_updates_at_once_one_refuses_naming_the_other(generations, capsys):
    _, out, _, after = generations
    first = Paused(["update", out], "locked", cwd=out.parent)
    try:
        capsys.readouterr()
        assert main(["update", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {out}: locked by another moczarr-catalog run (moczarr-catalog update, ")
        assert f"pid {first.proc.pid} on " in err and " since 20" in err and len(err.splitlines()) == 1
    finally:
        first.kill()
    assert main(["update", str(out)]) == 0  # its holder is dead: the lock is taken over
    assert _files(out) == after


# -- object storage -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3():
    with S3Server() as server:
        server.create_bucket("crash")
        yield server


def _bucket_reader(s3, prefix: str):
    client = s3.client()

    def read(key: str) -> bytes | None:
        try:
            return client.get_object(Bucket="crash", Key=f"{prefix}/{key}")["Body"].read()
        except client.exceptions.NoSuchKey:
            return None

    return read


def _keys(s3, prefix: str) -> set[str]:
    pages = s3.client().get_paginator("list_objects_v2").paginate(Bucket="crash", Prefix=f"{prefix}/")
    return {o["Key"].removeprefix(f"{prefix}/") for page in pages for o in page.get("Contents", [])}


def test_an_update_to_s3_killed_while_deleting_is_finished_by_the_next_update(sample, s3, tmp_path):
    for name in ("a", "b", "c"):
        s3.upload_tree(sample / "elevation", "crash", f"stores/{name}/store")  # three bare roots
    options = s3.storage_options(anon=False)
    build(["s3://crash/stores"], "s3://crash/cat", storage_options=options, progress=False, discover=True)
    s3.delete_prefix("crash", "stores/b/")
    gone = {k for k in _keys(s3, "cat") if "b-store" in k}  # the documents of the store that is gone
    assert gone
    env = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": "us-east-1"}
    cli = ["update", "s3://crash/cat", "--endpoint-url", s3.endpoint_url]
    Paused(cli, "deleting", cwd=tmp_path, env=env).kill()
    left = _keys(s3, "cat")
    assert gone & left and gone - left  # killed halfway through the deletes, the record already written
    assert LOCK_KEY in left  # the dead run's lock, with its journal
    read = _bucket_reader(s3, "cat")
    assert not _reachable(read, "stac/catalog.json", ["catalog.yaml", "catalog_v2.yaml"], "s3://crash/cat")
    os.environ.update(env)
    try:
        assert main(cli) == 0  # same host, its pid dead: taken over; the journal's keys deleted
    finally:
        for name in env:
            os.environ.pop(name)
    after = _keys(s3, "cat")
    assert not gone & after and LOCK_KEY not in after
    build(["s3://crash/stores"], "s3://crash/fresh", storage_options=options, progress=False, discover=True)
    assert after == _keys(s3, "fresh")
    record = json.loads(_bucket_reader(s3, "cat")(RECORD_NAME))
    assert "unsettled" not in record and record["written_by"]


def test_a_lock_held_from_another_host_refuses_until_broken(sample, s3, tmp_path, capsys):
    s3.upload_tree(sample / "elevation", "crash", "held/a")
    options = s3.storage_options(anon=False)
    build(["s3://crash/held/a"], "s3://crash/held-cat", storage_options=options, progress=False)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    other = {"command": "update", "host": "elsewhere.example", "pid": 4242, "since": since, "token": "f" * 32}
    s3.put_bytes("crash", f"held-cat/{LOCK_KEY}", json.dumps(other).encode())
    env = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": "us-east-1"}
    cli = ["update", "s3://crash/held-cat", "--endpoint-url", s3.endpoint_url]
    os.environ.update(env)
    try:
        capsys.readouterr()
        assert main(cli) == 2
        err = capsys.readouterr().err
        assert f"(moczarr-catalog update, pid 4242 on elsewhere.example, since {since})" in err
        assert "--break-lock" in err
        assert main([*cli, "--break-lock"]) == 0
        broke = capsys.readouterr().err
        assert "note: broke the lock of moczarr-catalog update, pid 4242 on elsewhere.example" in broke
    finally:
        for name in env:
            os.environ.pop(name)
    assert LOCK_KEY not in _keys(s3, "held-cat")


def test_the_library_takes_the_catalog_lock_itself(sample, s3):
    """``update`` and ``publish`` called from Python refuse a catalog another run holds, naming it, before they
    read its record or reach the database (only the command line took the lock before)."""
    from moczarr_intake import publish, update
    from moczarr_intake.living.lock import CatalogLockedError

    s3.upload_tree(sample / "elevation", "crash", "lib/a")
    options = s3.storage_options(anon=False)
    build(["s3://crash/lib/a"], "s3://crash/lib-cat", storage_options=options)
    other = {"command": "update", "host": "elsewhere.example", "pid": 4242, "since": "-", "token": "e" * 32}
    s3.put_bytes("crash", f"lib-cat/{LOCK_KEY}", json.dumps(other).encode())
    with pytest.raises(CatalogLockedError, match=r"pid 4242 on elsewhere\.example"):
        publish("s3://crash/lib-cat", "postgresql://nobody@127.0.0.1:9/none", storage_options=options)
    with pytest.raises(CatalogLockedError, match=r"pid 4242 on elsewhere\.example"):
        update("s3://crash/lib-cat", storage_options=options)


def test_a_catalog_holding_its_store_is_placed_file_by_file_and_says_so_once(sample, tmp_path, capsys):
    """A store inside ``--out`` (relative hrefs) is not the catalog's to link and swap: the run places the
    catalog file by file, in one ``note:`` line."""
    out = tmp_path / "cat"
    store = link_copy(sample, out / "sample")
    chunk = next(p for p in store.rglob("*") if p.is_file())
    inode = chunk.stat().st_ino
    for _ in range(2):
        capsys.readouterr()
        assert main(["build", str(store), "--out", str(out)]) == 0
        notes = [line for line in capsys.readouterr().err.splitlines() if "placed file by file" in line]
        assert notes == [
            f"note: {out}: placed file by file (the store {store} sits inside it): "
            "a run killed meanwhile may leave files of both generations"
        ]
    assert chunk.stat().st_ino == inode and (out / "stac" / "catalog.json").is_file()
    assert not _beside(out)
