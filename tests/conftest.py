"""The suite's fixtures and hooks: the store layer a marked test runs on, the session's S3 server, the xarray engine.

What the tests share besides fixtures (where the stores are, copies, readers and writers) is in
``tests/helpers.py``, which explains the two store layers. A test marked ``layers`` runs once per layer
present (ids ``[generated]``/``[shared]``), one marked ``conformance(reason)`` on the shared layer only.
``--layer shared`` (or ``--layer generated``) selects the tests of one layer only: CI runs the whole suite
in a clone with nothing beside it, then ``--layer shared`` beside ``../shared``, so no test runs twice on
the same stores.

Nothing is written at collection: the generated tree is written (or found in the cache) by the first test
that reads it, and the object-store tests share one S3 server per test process (:func:`s3_server`),
started by the first test that needs one. Tests using it are marked ``s3``; the ``slow``, ``s3`` and
``subprocess`` markers (pyproject.toml) select, they never skip: the default run runs everything.
Hypothesis runs the ``dev`` profile, or ``ci`` under ``CI=true``; ``HYPOTHESIS_PROFILE`` names another.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers import DEFAULT_LAYER, IN_CI, LAYERS, fixture_path, layer_dir, select_layer, writable_copy

#: Hypothesis profiles. Timing is the benchmarks' business, never a test's, so neither has a deadline (on a
#: loaded 2-core machine an example that opens a store can take a second); ``ci`` is thorough and reproducible.
settings.register_profile("dev", max_examples=20, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev"))


@pytest.fixture
def fixtures() -> Path:
    """The folder of the running test's layer."""
    return layer_dir()


@pytest.fixture
def copy_fixture(tmp_path):
    """Copy a store of the running test's layer to a temporary folder (tests damage the copy, never the original)."""

    def copy(name: str) -> Path:
        return writable_copy(fixture_path(name), tmp_path / name.replace("/", "__"))

    return copy


@pytest.fixture(autouse=True, scope="module")
def store_layer(request):
    """Select the layer of the tests parametrized over layers (others read :data:`DEFAULT_LAYER`).

    Module-scoped so a module- or session-wide fixture over stores can request it
    and is built once per layer.
    """
    name = getattr(request, "param", DEFAULT_LAYER)
    select_layer(name)
    yield name
    select_layer(DEFAULT_LAYER)


def pytest_sessionfinish(session, exitstatus):
    """Fail the session if a test wrote into the cached generated stores, and drop them for the next session to rewrite.

    Checked once, by the process that ran the session (under pytest-xdist the
    controller, after every worker), against the tree's manifest: one walk.
    """
    if hasattr(session.config, "workerinput"):
        return
    from tests.stores.cache import COMPLETE, cache_root, damage, discard, version_key

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
    """Parametrize a test marked ``layers`` over :data:`LAYERS`, one marked ``conformance`` over ``shared`` only."""
    if metafunc.definition.get_closest_marker("conformance") is not None:
        layers = ("shared",)
    elif metafunc.definition.get_closest_marker("layers") is not None:
        layers = LAYERS
    else:
        return
    metafunc.parametrize("store_layer", layers, indirect=True, ids=list(layers), scope="module")


@pytest.fixture
def fresh_tile_cache():
    """The map-tile cache (opened stores, levels, pixel cells) empty before and after the test."""
    import moczarr.tiles as tiles

    tiles.clear_cache()
    yield
    tiles.clear_cache()


@pytest.fixture(scope="session")
def s3_server():
    """Moto's S3 server on 127.0.0.1, one per test process, started by the first test that asks for it.

    Shared by every module: each takes its own bucket with ``s3_server.bucket(name)``
    (empty whatever an earlier user left, see tests/s3server.py).
    """
    from tests.s3server import S3Server

    with S3Server() as server:
        yield server


@pytest.fixture(scope="session", autouse=True)
def moczarr_engine():
    """The ``moczarr`` xarray engine, as pyproject declares it (see tests/engines.py: a no-op when installed)."""
    from tests.engines import register_engine

    register_engine()
