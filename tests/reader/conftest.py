"""Fixtures of the reader's tests."""

from __future__ import annotations

import pytest

from tests.helpers import local_cluster


@pytest.fixture(scope="module")
def client():
    """A dask.distributed cluster of two worker processes, one per module that asks (see :func:`local_cluster`)."""
    with local_cluster() as c:
        yield c
