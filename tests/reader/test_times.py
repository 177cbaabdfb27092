"""Times: ``time=(start, end)`` selects overlapping windows; ``window=`` takes declared labels; ``observed`` envelopes.

The expected values come from the writer's goldens (``golden_cells.json``:
per-window cell values and the ``[min_ns, max_ns]`` of each cell's member
observations), never from this reader.
"""

from __future__ import annotations

import datetime as dt
import json

import mortie
import numpy as np
import pytest

import moczarr
from moczarr.errors import WindowError
from moczarr.openers.times import as_time_range, observed_mask, window_span
from tests.helpers import fixture_path, quiet


def _golden(name: str) -> dict:
    return json.loads((fixture_path(name).parent / "golden_cells.json").read_text())["."]


@pytest.mark.conformance("checks against the writer's golden_cells.json, which only the shared zagg stores carry")
def test_time_range_stacks_the_overlapping_windows_of_a_yearly_store():
    root = fixture_path("zagg/pyramid_temporal/store")
    golden = _golden("zagg/pyramid_temporal/store")
    with quiet():
        ds = moczarr.open_hive(root, time=("2019-06-01", dt.datetime(2020, 6, 1)))
    assert list(ds["window"].values) == ["2019", "2020"]
    assert ds["count"].dims == ("window", "cells")
    words = ds["morton"].values
    decimals = moczarr.ids.to_decimals(words)
    for label in ("2019", "2020"):
        counts = ds["count"].sel(window=label).values
        expect = np.array([golden["by_window"][label].get(d, [0])[0] for d in decimals], dtype=float)
        got = np.nan_to_num(np.asarray(counts, dtype=float), nan=0.0)
        np.testing.assert_array_equal(got, expect)
        with quiet():
            one = moczarr.open_hive(root, window=label)
        assert float(ds["count"].sel(window=label).sum()) == int(one["count"].sum())
    assert set(ds.attrs["morton_hive"]["windows"]) == {"2019", "2020"}
    assert ds.attrs["morton_hive"]["time"][0].startswith("2019-06-01")


@pytest.mark.layers
def test_time_range_inside_one_window_keeps_a_window_dimension_of_one():
    root = fixture_path("zagg/windowed/store")
    with quiet():
        ds = moczarr.open_hive(root, time=(np.datetime64("2020-03-01"), np.datetime64("2020-03-02")))
        one = moczarr.open_hive(root, window="2020")
    assert list(ds["window"].values) == ["2020"]
    np.testing.assert_array_equal(ds["morton"].values, one["morton"].values)
    np.testing.assert_array_equal(ds["count"].isel(window=0).values, one["count"].values)
    assert ds["count"].dtype == one["count"].dtype  # one window: no realignment, no promotion


@pytest.mark.layers
def test_half_open_boundaries_belong_to_the_later_window():
    root = fixture_path("zagg/windowed/store")
    with quiet():
        ds = moczarr.open_hive(root, time=("2020-01-01T00:00:00Z", "2021-01-01T00:00:00Z"))
    assert list(ds["window"].values) == ["2020"]


@pytest.mark.layers
def test_explicit_windows_take_their_manifest_spans_on_every_opener():
    root = fixture_path("zagg/pyramid_windows/store")
    span = ("2020-03-01", "2022-01-01")
    with quiet():
        level = moczarr.open_level(root, 6, time=span)
        tree = moczarr.open_pyramid(root, time=span)
        store = moczarr.open_store(root, time=span)
    assert list(level["window"].values) == ["2020", "2021"]
    assert {o["window"] for o in level.attrs["zagg_objects"]} == {"2020", "2021"}
    for node in ("o8", "o6", "o4"):
        assert list(tree[node].ds["window"].values) == ["2020", "2021"]
    for node in ("atl06/8", "atl06/6", "atl06/4"):
        assert list(store[node].ds["window"].values) == ["2020", "2021"]
    with quiet():
        per_window = [int(moczarr.open_level(root, 6, window=w)["count"].sum()) for w in ("2020", "2021")]
    assert level["count"].sum(dim="cells").values.tolist() == per_window


@pytest.mark.layers
def test_window_spans_from_the_schedule():
    windowed = moczarr.read_manifest(fixture_path("zagg/windowed/store"))
    assert window_span(windowed, "2019") == (np.datetime64("2019-01-01", "ns"), np.datetime64("2020-01-01", "ns"))
    explicit = moczarr.read_manifest(fixture_path("zagg/pyramid_windows/store"))
    assert window_span(explicit, "2021") == (np.datetime64("2021-01-01", "ns"), np.datetime64("2022-01-01", "ns"))
    assert window_span(explicit, "1999") is None


@pytest.mark.layers
def test_a_time_range_overlapping_no_window_is_empty_and_names_the_windows():
    root = fixture_path("zagg/windowed/store")
    with pytest.warns(moczarr.errors.EmptySelectionWarning, match="2019, 2020, 2021"):
        ds = moczarr.open_hive(root, time=("2030-01-01", "2031-01-01"))
    assert ds.sizes["window"] == 0 and ds.sizes["cells"] == 0 and "count" in ds


@pytest.mark.layers
@pytest.mark.parametrize(
    "time,message",
    [
        ("2019", "pair"),
        (("2019-01-01",), "pair"),
        (("2020-01-01", "2019-01-01"), "before"),
        (("2019-01-01", "2019-01-01"), "before"),
        (("not a date", "2020-01-01"), r"time\[0\]"),
        ((2019, 2020), r"time\[0\]=2019 is not a time"),
        ((None, "2020-01-01"), r"time\[0\]"),
    ],
)
def test_bad_time_values_raise_window_errors(time, message, capfd):
    with pytest.raises(WindowError, match=message):
        moczarr.open_hive(fixture_path("zagg/windowed/store"), time=time)
    assert capfd.readouterr().err == ""


@pytest.mark.layers
def test_time_and_window_are_exclusive_and_time_needs_a_windowed_store():
    with pytest.raises(WindowError, match="exclusive"):
        moczarr.open_hive(fixture_path("zagg/windowed/store"), window="2019", time=("2019-01-01", "2019-02-01"))
    with pytest.raises(WindowError, match="unwindowed"):
        moczarr.open_hive(fixture_path("serc_hive"), time=("2019-01-01", "2019-02-01"))
    with pytest.raises(WindowError, match="unwindowed"):
        moczarr.open_level(fixture_path("zagg/pyramid/store"), 6, time=("2019-01-01", "2019-02-01"))


@pytest.mark.layers
def test_window_labels_declared_or_not():
    explicit = fixture_path("zagg/pyramid_windows/store")
    with pytest.raises(WindowError, match="2019, 2020, 2021"):
        moczarr.open_hive(explicit, window="2109")  # undeclared on an explicit schedule: names the declared ones
    with pytest.raises(WindowError, match="2019, 2020, 2021"):
        moczarr.open_level(explicit, 6, window="2109")
    # on a generative schedule a well-formed label that no leaf carries (a typo) names the windows present
    with pytest.raises(WindowError, match="windows present: 2019, 2020, 2021"):
        moczarr.open_hive(fixture_path("zagg/windowed/store"), window="2109")


# -- observed envelopes -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "start,end",
    [
        ("2019-01-01", "2019-01-02"),
        ("2019-01-10", "2019-01-20"),
        ("2019-02-01", "2019-03-01"),
        ("2018-01-01", "2030-01-01"),
    ],
)
@pytest.mark.conformance("checks against the writer's golden_cells.json, which only the shared zagg stores carry")
def test_observed_between_keeps_the_cells_observed_in_the_range(start, end):
    root = fixture_path("zagg/pyramid_temporal/store")
    bounds = _golden("zagg/pyramid_temporal/store")["by_window"]["toc:2019"]
    with quiet():
        ds = moczarr.open_hive(root, window="2019")
    got = moczarr.observed_between(ds, start, end)
    lo = int(mortie.from_datetime64(np.datetime64(start)))
    hi = int(mortie.from_datetime64(np.datetime64(end)))
    truth = {d for d, (first, last) in bounds.items() if first < hi and last >= lo}
    kept = set(moczarr.ids.to_decimals(got["morton"].values))
    assert truth <= kept  # never misses an observation
    quantum = 2**32  # the envelope may graze an edge by one rounding quantum, never more
    for d in kept - truth:
        first, last = bounds[d]
        assert first < hi + quantum and last + quantum >= lo
    assert got.sizes["cells"] == len(kept) and (got["observed"].values != 0).all()


@pytest.mark.layers
def test_observed_between_needs_one_envelope_and_a_range():
    with quiet():
        ds = moczarr.open_hive(fixture_path("serc_hive"))
    with pytest.raises(KeyError, match="per-cell toc envelope"):
        moczarr.observed_between(ds, "2019-01-01", "2020-01-01")
    with quiet():
        temporal = moczarr.open_hive(fixture_path("zagg/pyramid_temporal/store"), window="2019")
    with pytest.raises(WindowError, match="before"):
        observed_mask(temporal, "2020-01-01", "2019-01-01")


def test_time_range_parsing():
    span = as_time_range((dt.datetime(2019, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), "2019-01-02T00:00Z"))
    assert span.start == np.datetime64("2019-01-01T00:00", "ns")
    assert span.end == np.datetime64("2019-01-02T00:00", "ns")
