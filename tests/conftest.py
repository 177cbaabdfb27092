"""Where the test stores are, in two layers, and damaged copies of them.

Every test on real stores names a store the way ``../shared/fixtures`` names it
(``fixture_path("zagg/single_8/store")``) and runs in one or both **layers**:

``generated``
    stores the suite writes itself (``tests/stores``), cached between runs; always
    present. zagg's writer writes the hive stores, the project's spec-level
    writers (``moczarr.testing``) the raster leaf zagg writes only from imagery
    (``spec/raster_toc``) and the moraine pyramids.
``shared``
    ``../shared/fixtures`` (or ``$MOCZARR_SHARED/fixtures``): real stores nobody in
    this project wrote. Present in CI; when it is missing the shared layer skips
    locally and fails under ``CI=true``.

A test whose code (or a helper or fixture of its module it calls) names only
stores with a generated twin runs once per layer (ids ``[generated]``/``[shared]``).
A test that names a shared-only store (:data:`SHARED_ONLY`: ``strata_hive`` and
``strata_goldens``, which no test reads yet) or is marked ``conformance`` (it pins
a quirk of one shared store) runs on the shared layer only. ``--layer shared``
(or ``--layer generated``) selects the tests of one layer only: CI runs the
whole suite in a clone with nothing beside it, then ``--layer shared`` beside
``../shared``, so no test runs twice on the same stores.

Nothing is written at collection: the generated tree is written (or found in
the cache) by the first test that reads it, and the object-store tests share
one S3 server per test process (:func:`s3_server`), started by the first test
that needs one. Tests using it are marked ``s3``; the ``slow``, ``s3`` and
``subprocess`` markers (pyproject.toml) select, they never skip: the default
run runs everything. Hypothesis runs the ``dev`` profile, or ``ci`` under
``CI=true``; ``HYPOTHESIS_PROFILE`` names another.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import shutil
import types
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MOCZARR_SHARED", REPO.parent / "shared"))
FIXTURES = SHARED / "fixtures"
IN_CI = os.environ.get("CI", "").lower() == "true"

#: Store names (prefixes) that only the shared layer holds.
SHARED_ONLY = ("strata",)
#: What a test's code must mention to be a test on stores.
STORE_LOOKUPS = {"fixture_path", "copy_fixture", "fixtures", "layer_dir", "moraine_root"}
LAYERS = ("generated", "shared") if (FIXTURES.is_dir() or IN_CI) else ("generated",)

#: Hypothesis profiles. Timing is the benchmarks' business, never a test's, so neither has a deadline (on a
#: loaded 2-core machine an example that opens a store can take a second); ``ci`` is thorough and reproducible.
settings.register_profile("dev", max_examples=20, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev"))

#: The layer of a test not parametrized over layers.
DEFAULT_LAYER = "shared" if FIXTURES.is_dir() else "generated"
_layer = {"name": DEFAULT_LAYER}


def fixtures_dir() -> Path:
    """The shared fixtures folder; fail under CI, skip elsewhere, when it is missing."""
    if not FIXTURES.is_dir():
        msg = f"shared fixtures not found at {FIXTURES} (set MOCZARR_SHARED)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return FIXTURES


@functools.cache
def generated_dir() -> Path:
    """The generated tree: written by the first test of any session that needs it, then cached (see tests/stores)."""
    from .stores.cache import generated_stores

    return generated_stores()


def layer() -> str:
    """The layer the running test reads: ``generated`` or ``shared``."""
    return _layer["name"]


def layer_dir() -> Path:
    return generated_dir() if layer() == "generated" else fixtures_dir()


@pytest.fixture
def fixtures() -> Path:
    return layer_dir()


def fixture_path(name: str) -> Path:
    """Store (or golden) ``name`` of the running test's layer; shared-only names always come from the shared layer."""
    base = fixtures_dir() if name.startswith(SHARED_ONLY) else layer_dir()
    path = base / name
    assert path.exists(), f"fixture {name} missing from {base} ({layer()} layer)"
    return path


def has_fixture(name: str) -> bool:
    """Whether the running test's layer holds ``name`` (shared-only names: whether the shared layer is there)."""
    base = FIXTURES if (name.startswith(SHARED_ONLY) or layer() == "shared") else generated_dir()
    return (base / name).exists()


def moraine_root() -> Path:
    """The folder of moraine pyramids of the running test's layer."""
    return fixture_path("moraine")


@pytest.fixture(autouse=True, scope="module")
def store_layer(request):
    """Select the layer of the tests parametrized over layers (others read :data:`DEFAULT_LAYER`).

    Module-scoped so a module- or session-wide fixture over stores can request it
    and is built once per layer.
    """
    _layer["name"] = getattr(request, "param", DEFAULT_LAYER)
    yield _layer["name"]
    _layer["name"] = DEFAULT_LAYER


def pytest_sessionfinish(session, exitstatus):
    """Fail the session if a test wrote into the cached generated stores, and drop them for the next session to rewrite.

    Checked once, by the process that ran the session (under pytest-xdist the
    controller, after every worker), against the tree's manifest: one walk.
    """
    if hasattr(session.config, "workerinput"):
        return
    from .stores.cache import COMPLETE, cache_root, damage, discard, version_key

    root = cache_root() / version_key()
    if not (root / COMPLETE).is_file():
        return
    changed = damage(root)
    if changed:
        discard(root)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
            reporter.write_line(
                f"a test wrote into the cached generated stores {root} ({len(changed)} entries: {shown}); "
                "discarded them",
                red=True,
            )


def pytest_addoption(parser):
    parser.addoption(
        "--layer",
        choices=("generated", "shared"),
        default=None,
        help="run only the tests that read this store layer (ids [generated] or [shared]); default: every test",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "conformance(reason): a test of a particular shared store's quirks; runs on the shared layer only",
    )


def pytest_collection_modifyitems(config, items):
    """Mark the tests on the session's S3 server ``s3``; with ``--layer``, keep only the tests of that layer."""
    for item in items:
        if "s3_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.s3)
    only = config.getoption("layer")
    if only is None:
        return
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        (kept if callspec is not None and callspec.params.get("store_layer") == only else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_generate_tests(metafunc):
    """Parametrize a test on stores over its layers: :data:`LAYERS`, or only ``shared`` for a conformance test
    and a test naming a shared-only store."""
    own, reached = _mentioned(metafunc)
    if not (own | reached) & STORE_LOOKUPS:
        return
    conformance = metafunc.definition.get_closest_marker("conformance") is not None
    if conformance or any(isinstance(s, str) and s.startswith(SHARED_ONLY) for s in own):
        layers = ("shared",)
    else:
        layers = LAYERS
    metafunc.parametrize("store_layer", layers, indirect=True, ids=list(layers), scope="module")


def _mentioned(metafunc) -> tuple[set, set]:
    """Names and string constants of a test: in its own code and module helpers, and in the fixtures it requests.

    Parametrize values and fixtures are only searched for store lookups, so a
    fixture or a case naming a shared-only store does not take the whole test off
    the generated layer (such a case reads the shared layer in both layers).
    """
    module = metafunc.module
    seen: set = set()

    def visit_function(fn, out):
        fn = inspect.unwrap(getattr(fn, "_get_wrapped_function", lambda: fn)())
        if isinstance(fn, types.FunctionType) and fn.__module__ == module.__name__:
            visit_code(fn.__code__, out)

    def visit_code(code, out):
        if code in seen:
            return
        seen.add(code)
        for const in code.co_consts:
            if isinstance(const, str):
                out.add(const)
            elif isinstance(const, types.CodeType):
                visit_code(const, out)
        for name in code.co_names:
            out.add(name)
            value = getattr(module, name, None)
            if isinstance(value, str):
                out.add(value)
            elif isinstance(value, types.FunctionType):
                visit_function(value, out)

    own: set = set()
    visit_function(metafunc.function, own)
    reached: set = set(metafunc.fixturenames)
    for name in metafunc.fixturenames:
        value = getattr(module, name, None)
        if value is not None:
            visit_function(value, reached)
    return own, reached


def load_json(path: Path):
    return json.loads(Path(path).read_text())


def write_json(path: Path, obj) -> None:
    Path(path).write_text(json.dumps(obj, indent=1))


@pytest.fixture
def copy_fixture(tmp_path):
    """Copy a store of the running test's layer to a temporary folder (tests damage the copy, never the original)."""

    def copy(name: str) -> Path:
        dest = tmp_path / name.replace("/", "__")
        shutil.copytree(fixture_path(name), dest)
        for p in [dest, *dest.rglob("*")]:  # the originals are read-only
            p.chmod(0o755 if p.is_dir() else 0o644)
        return dest

    return copy


def set_attrs(zarr_json: Path, update) -> None:
    """Rewrite the attributes of a ``zarr.json`` document with ``update(attrs)``."""
    doc = load_json(zarr_json)
    update(doc.setdefault("attributes", {}))
    write_json(zarr_json, doc)


def rewrite_manifest(store: Path, **changes) -> None:
    """Replace a store's manifest by a changed copy: a new file, so hard-linked copies of the store keep theirs."""
    path = Path(store) / "morton_hive.json"
    doc = {**load_json(path), **changes}
    path.unlink()
    write_json(path, doc)


@contextmanager
def local_cluster():
    """A dask.distributed cluster of two worker processes on 127.0.0.1 (no dashboard), and its client."""
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
            # no dashboard; the scheduler's bare HTTP endpoint takes a free port instead of 8787
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@contextmanager
def quiet():
    """A block in which any moczarr warning fails the test."""
    import moczarr

    with warnings.catch_warnings():
        warnings.simplefilter("error", moczarr.errors.MoczarrWarning)
        yield


@pytest.fixture(scope="session")
def s3_server():
    """Moto's S3 server on 127.0.0.1, one per test process, started by the first test that asks for it.

    Shared by every module: each takes its own bucket with ``s3_server.bucket(name)``
    (empty whatever an earlier user left, see tests/s3server.py).
    """
    from .s3server import S3Server

    with S3Server() as server:
        yield server


@pytest.fixture(scope="session", autouse=True)
def moczarr_engine():
    """The ``moczarr`` xarray engine, as pyproject declares it (see tests/engines.py: a no-op when installed)."""
    from .engines import register_engine

    register_engine()
