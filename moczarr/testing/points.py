"""The sample store's input: ICESat-2-like along-track elevation points from a seeded numpy RNG.

A few ground-track passes of three beam pairs around the Chesapeake Bay (lat
38.9, lon -76.5), two years of them; the same seed gives the same points.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np


class _Region(TypedDict):
    lat: float
    lon: float
    name: str


REGION: _Region = {"lat": 38.9, "lon": -76.5, "name": "Chesapeake Bay (synthetic)"}

#: (reference longitude at REGION lat, UTC start of the pass, window). Three 2019 and three 2020 passes.
GRANULES = (
    ("ATL06_20190211063108_06750206_SYN_01.h5", -77.35, "2019-02-11T06:31:08"),
    ("ATL06_20190514021547_07150306_SYN_01.h5", -76.65, "2019-05-14T02:15:47"),
    ("ATL06_20190917184402_12300406_SYN_01.h5", -75.95, "2019-09-17T18:44:02"),
    ("ATL06_20200309101233_11260606_SYN_01.h5", -77.05, "2020-03-09T10:12:33"),
    ("ATL06_20200612225910_12010706_SYN_01.h5", -76.35, "2020-06-12T22:59:10"),
    ("ATL06_20201104133004_06750906_SYN_01.h5", -75.70, "2020-11-04T13:30:04"),
)
BEAMS = ("gt1l", "gt1r", "gt2l", "gt2r", "gt3l", "gt3r")
#: across-track offsets (km) of the six beams: three pairs 3.3 km apart, 90 m within a pair
BEAM_OFFSETS_KM = (-3.3, -3.21, 0.0, 0.09, 3.3, 3.39)
HALF_TRACK_KM = 120.0
ALONG_STEP_KM = 5.0
GROUND_SPEED_KM_S = 7.0
KEEP_FRACTION = 0.75  # the rest is "cloud" dropout


def synthetic_points(seed: int = 0) -> dict[str, np.ndarray]:
    """The sample's input points: ICESat-2-like along-track elevations, one RNG stream per seed.

    Each granule is one near-meridional pass of six beams across the region;
    points sit every ~5 km along track with jitter and a random 25 % dropout.
    Returns ``lat``, ``lon`` (float64, degrees), ``h`` (float32 metres),
    ``time`` (``datetime64[s]`` UTC, whole seconds), ``granule`` (index into
    :data:`GRANULES`), ``beam`` (index into :data:`BEAMS`) and ``window``
    (the year label of each point).
    """
    rng = np.random.default_rng(seed)
    lat0, lon0 = REGION["lat"], REGION["lon"]
    km_per_deg_lon = 111.32 * np.cos(np.radians(lat0))
    cols: dict[str, list] = {k: [] for k in ("lat", "lon", "h", "time", "granule", "beam")}
    steps = np.arange(-HALF_TRACK_KM, HALF_TRACK_KM, ALONG_STEP_KM)
    for g, (_name, ref_lon, start) in enumerate(GRANULES):
        t0 = np.datetime64(start, "s")
        for b, offset in enumerate(BEAM_OFFSETS_KM):
            along = steps + rng.uniform(-1.5, 1.5, steps.size)
            keep = rng.random(steps.size) < KEEP_FRACTION
            along = along[keep]
            lat = lat0 + along / 111.0
            lon = ref_lon + 0.12 * (lat - lat0) + offset / km_per_deg_lon
            terrain = 14.0 + 30.0 * (lat - lat0) + 9.0 * np.cos(3.0 * (lon - lon0))
            h = terrain + rng.normal(0.0, 0.6, along.size)
            secs = np.floor(np.clip(along + HALF_TRACK_KM, 0.0, None) / GROUND_SPEED_KM_S).astype(np.int64)
            cols["lat"].append(lat)
            cols["lon"].append(lon)
            cols["h"].append(h.astype(np.float32))
            cols["time"].append(t0 + secs.astype("timedelta64[s]"))
            cols["granule"].append(np.full(along.size, g, dtype=np.int16))
            cols["beam"].append(np.full(along.size, b, dtype=np.int16))
    out = {k: np.concatenate(v) for k, v in cols.items()}
    out["window"] = np.asarray([str(t)[:4] for t in out["time"].astype("datetime64[Y]")])
    return out
