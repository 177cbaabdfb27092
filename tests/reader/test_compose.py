"""compose: the seamless order-k view is computed from stored levels and matches the input-computed goldens."""

from __future__ import annotations

import numpy as np
import pytest

import moczarr
from moczarr.analysis.cells import compose
from tests.helpers import fixture_path, load_json

pytestmark = pytest.mark.layers


@pytest.mark.parametrize("order", [8, 7, 6, 5, 4, 3, 1])
def test_compose_matches_golden_levels(order):
    golden = load_json(fixture_path("zagg/pyramid/golden.json"))["products"]["."]["levels"][str(order)]
    node = moczarr.open_store(fixture_path("zagg/pyramid/store"))["atl06"]
    view = compose(node, order)
    count = view["count"].values
    assert int(count.sum()) == golden["count_sum"]
    assert int((count > 0).sum()) == golden["n_cells"]
    np.testing.assert_allclose(np.nanmin(view["h_min"].values), golden["h_min_min"], rtol=1e-6)
    np.testing.assert_allclose(np.nanmax(view["h_max"].values), golden["h_max_max"], rtol=1e-6)
    np.testing.assert_allclose(np.nansum(view["h_min"].values.astype("f8")), golden["h_min_sum"], rtol=1e-5)
    assert "h_mean" not in view or order == 8, "fields without a fold law exist only at native order"
    assert view.attrs["moczarr_composed"]["cell_order"] == order
    words = view["morton"].values
    assert np.all(np.diff(words.astype(object)) > 0)


def test_compose_equals_the_stored_overview():
    node = moczarr.open_store(fixture_path("overview_hive"), window="2019")["atl06"]
    stored = node["6"].ds
    view = compose(node, 6)
    occupied = stored.where((stored["count"] > 0).compute(), drop=True)
    np.testing.assert_array_equal(view["morton"].values[view["count"].values > 0], occupied["morton"].values)
    np.testing.assert_array_equal(view["count"].values[view["count"].values > 0], occupied["count"].values)


def test_compose_refuses_orders_finer_than_the_source():
    node = moczarr.open_store(fixture_path("zagg/pyramid/store"))["atl06"]
    with pytest.raises(ValueError, match="no source level"):
        compose(node, 9)
