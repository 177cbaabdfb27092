"""The linear footprint equals the dissolved mortie outline the catalog summary used (same bbox, same geometry)."""

from __future__ import annotations

import json

import mortie
import numpy as np
import pytest
import shapely

from moczarr.places import footprint, geometry_bbox


def cover(lats, lons, order: int) -> np.ndarray:
    la, lo = np.meshgrid(lats, lons)
    return np.unique(np.asarray(mortie.geo2mort(la.ravel(), lo.ravel(), order=order), dtype=np.uint64))


def reference(words: np.ndarray) -> dict:
    """The summary's former outline: mortie's own dissolve of the compressed cover."""
    geom = mortie.to_geometry(np.asarray(mortie.compress_moc(words), dtype=np.uint64))
    return json.loads(shapely.to_geojson(geom))


rng = np.random.default_rng(3)
SCATTER = np.unique(
    np.asarray(mortie.geo2mort(rng.uniform(-60, 60, 900), rng.uniform(-170, 170, 900), order=6), dtype=np.uint64)
)
CASES = {
    "scattered": SCATTER,
    "antimeridian": cover(np.linspace(-10, 10, 40), np.r_[np.linspace(170, 180, 20), np.linspace(-180, -170, 20)], 6),
    "north_cap": cover(np.linspace(80, 90, 40), np.linspace(-180, 180, 80), 6),
    "south_cap": cover(np.linspace(-90, -75, 30), np.linspace(-180, 180, 60), 5),
    "with_hole": np.setdiff1d(
        cover(np.linspace(-60, -40, 40), np.linspace(10, 60, 40), 6),
        cover(np.linspace(-52, -48, 10), np.linspace(30, 35, 10), 6),
    ),
    "mixed_orders": np.asarray(
        mortie.compress_moc(cover(np.linspace(20, 40, 60), np.linspace(-20, 20, 60), 7)), dtype=np.uint64
    ),
    "one_cell": cover(np.array([12.0]), np.array([34.0]), 8),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_footprint_matches_the_dissolved_outline(name):
    words = CASES[name]
    bbox, geometry = footprint(words)
    expected = reference(words)
    assert geometry["type"] == "MultiPolygon"
    got, want = shapely.from_geojson(json.dumps(geometry)), shapely.from_geojson(json.dumps(expected))
    assert got.is_valid
    assert shapely.symmetric_difference(got, want).area <= 1e-9 * want.area, name
    assert len(geometry["coordinates"]) == len(expected["coordinates"] if expected["type"] == "MultiPolygon" else [1])
    np.testing.assert_allclose(bbox, geometry_bbox(expected), atol=1e-9)


def test_antimeridian_footprint_never_crosses_it():
    bbox, geometry = footprint(CASES["antimeridian"])
    lons = np.concatenate([np.asarray(p[0])[:, 0] for p in geometry["coordinates"]])
    assert lons.min() >= -180.0 and lons.max() <= 180.0
    assert bbox[0] > bbox[2], "a box across the antimeridian has west > east"


def test_empty_cover_has_no_footprint():
    assert footprint(np.empty(0, dtype=np.uint64)) == (None, None)


def test_geometry_bbox_refuses_points():
    with pytest.raises(ValueError, match="not a polygonal geometry"):
        geometry_bbox({"type": "Point", "coordinates": [0, 0]})
