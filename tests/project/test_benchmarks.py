"""The benchmark scripts still import against the current API (they are run by hand, never timed by tests)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

SCRIPTS = [*sorted((REPO / "benchmarks").glob("bench_*.py")), REPO / "benchmarks" / "run_all.py"]


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 8


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_benchmark_imports_and_has_a_main(script: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(script.parent))  # the scripts import their siblings (bench_open)
    spec = importlib.util.spec_from_file_location(f"_bench_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert callable(module.main)
    assert module.__doc__ and "python benchmarks/" in module.__doc__  # says how to run it
