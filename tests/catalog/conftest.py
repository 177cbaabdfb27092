"""Fixtures of the catalog's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from moczarr.testing import write_sample_store


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """The sample, written for the module: a multi-product root of ``elevation`` and ``elevation_yearly`` (one
    ``short_name``). Tests change hard-linked copies of it (:func:`tests.helpers.link_copy`), never the sample."""
    return write_sample_store(tmp_path_factory.mktemp("sample") / "sample")
