"""STAC catalogs of morton-hive stores: structure, offline validation, footprints, time, and the round trip.

The catalog is built once (module scope) over four shared fixtures: two
multi-product roots (``overview_hive``, ``multiproduct_hive``) and two bare
stores (``zagg/windowed/store``, ``zagg/column/store``), then read back from
disk. Every written document is validated offline against STAC core and each
declared extension's schema (``../shared/stac-schemas``); a missing schema
must make validation raise.
"""

from __future__ import annotations

import copy
import json
import os
import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import mortie
import numpy as np
import pystac
import pytest
import shapely
import xarray as xr
from PIL import Image
from pystac.errors import STACValidationError
from shapely.geometry import Point, shape

import moczarr
from moczarr import ids, open_store
from moczarr.errors import LevelOmittedError
from moczarr.format.manifest import parse_manifest
from moczarr.metadata import LevelInfo, ProductSummary, VariableInfo, footprint_geometry, summarize_store
from moczarr.openers.pyramid import open_level
from moczarr.storage import count_requests
from moczarr_intake import stac
from moczarr_intake.stac import (
    DATACUBE,
    FILE,
    MEDIA_TYPE,
    OPEN_LEVEL,
    OPEN_STORE,
    STORAGE,
    VERSION,
    MissingSchemaError,
    build_stac,
    geometry_bbox,
    open_hint,
    open_stac,
    product_collection,
    validate_offline,
    window_interval,
)
from tests.helpers import fixture_path

ROOTS = ["overview_hive", "multiproduct_hive", "zagg/windowed/store", "zagg/column/store"]


def quiet(fn, *args, **kwargs):
    """Call a reader with its (expected, separately tested) warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def built(tmp_path_factory, store_layer):
    roots = [fixture_path(name) for name in ROOTS]  # fails under CI=true when fixtures are missing
    out = tmp_path_factory.mktemp("stac")
    catalog = quiet(build_stac, [str(r) for r in roots], out, thumbnails=True)
    summaries = {name: quiet(summarize_store, str(root)) for name, root in zip(ROOTS, roots, strict=True)}
    products = {os.path.abspath(p.root): p for s in summaries.values() for p in s.products}
    on_disk = pystac.Catalog.from_file(str(out / "catalog.json"))
    return SimpleNamespace(catalog=catalog, out=out, summaries=summaries, products=products, disk=on_disk)


def items_of(catalog) -> list[pystac.Item]:
    return list(catalog.get_items(recursive=True))


def product_of(built, obj) -> ProductSummary:
    root = (
        obj.extra_fields["moczarr:store_root"]
        if isinstance(obj, pystac.Collection)
        else open_hint(obj)["kwargs"]["store_root"]
    )
    return built.products[root]


# -- structure ---------------------------------------------------------------------------------------
@pytest.mark.layers
def test_multi_roots_are_catalogs_products_collections(built):
    top = built.disk
    children = {c.id: c for c in top.get_children()}
    assert type(children["overview_hive"]) is pystac.Catalog
    assert type(children["multiproduct_hive"]) is pystac.Catalog
    for name in ("overview_hive", "multiproduct_hive"):
        products = [p.name for p in built.summaries[name].products]
        sub = children[name]
        assert sub.extra_fields["moczarr:products"] == products
        assert sorted(c.extra_fields["moczarr:product"] for c in sub.get_children()) == sorted(products)
        assert all(isinstance(c, pystac.Collection) for c in sub.get_children())
    # bare stores are Collections directly under the top catalog; "atl06" is in every root, so ids carry the root label
    bare = {c.id for c in children.values() if isinstance(c, pystac.Collection)}
    assert bare == {"windowed-store-atl06", "column-store-atl06"}
    assert "atl06_pg3" in {c.id for c in children["multiproduct_hive"].get_children()}  # unique names stay plain


def expected_item_ids(collection_id: str, p: ProductSummary) -> set[str]:
    manifest_pyramid = (p.manifest.raw.get("pyramid") or {}).get("overview") or {}
    out = set()
    for lv in p.levels:
        if p.windowed:
            out |= {f"{collection_id}-o{lv.cell_order}-{w}" for w in p.windows}
            if lv.artifact == "overview" and manifest_pyramid.get("all_time"):
                out.add(f"{collection_id}-o{lv.cell_order}-all")
        else:
            out.add(f"{collection_id}-o{lv.cell_order}")
    return out


@pytest.mark.layers
def test_one_item_per_level_and_window(built):
    collections = list(built.disk.get_all_collections())
    assert len(collections) == sum(len(s.products) for s in built.summaries.values())
    for collection in collections:
        p = product_of(built, collection)
        assert {i.id for i in collection.get_items()} == expected_item_ids(collection.id, p)
    by_id = {c.id: {i.id for i in c.get_items()} for c in collections}
    assert by_id["windowed-store-atl06"] == {f"windowed-store-atl06-o8-{y}" for y in ("2019", "2020", "2021")}
    assert by_id["column-store-atl06"] == {f"column-store-atl06-o{r}" for r in range(1, 9)}
    assert by_id["overview_hive-atl06_windows"] == {
        "overview_hive-atl06_windows-o8-2019",
        "overview_hive-atl06_windows-o8-2020",
        "overview_hive-atl06_windows-o6-2019",
        "overview_hive-atl06_windows-o6-2020",
        "overview_hive-atl06_windows-o6-all",
    }


@pytest.mark.layers
def test_collection_summaries_and_levels(built):
    for collection in built.disk.get_all_collections():
        p = product_of(built, collection)
        summaries = collection.summaries.to_dict()
        assert summaries["moczarr:cell_order"] == p.orders
        assert summaries["moczarr:artifact"] == sorted({lv.artifact for lv in p.levels})
        assert summaries.get("moczarr:window") == (p.windows or None)
        levels = collection.extra_fields["moczarr:levels"]
        assert [(lv["cell_order"], lv["artifact"], lv["variables"]) for lv in levels] == [
            (lv.cell_order, lv.artifact, lv.variables) for lv in p.levels
        ]
        assert collection.extra_fields.get("version") == p.dataset["version"]


@pytest.mark.layers
def test_cube_variables_are_exactly_the_level_variables(built):
    for item in items_of(built.disk):
        p = product_of(built, item)
        level = p.level(item.properties["moczarr:cell_order"])
        variables = item.properties["cube:variables"]
        assert list(variables) == level.variables, item.id
        dims = item.properties["cube:dimensions"]
        assert dims["cells"]["type"] == "other"
        for name, var in variables.items():
            assert set(var["dimensions"]) <= set(dims), (item.id, name)
            assert var["data_type"] in ("int32", "int64", "uint64", "float32", "float64", "other"), var
        assert DATACUBE in item.stac_extensions


# -- offline validation ------------------------------------------------------------------------------
def linked_documents(out: Path) -> list[str]:
    """The static catalog's documents (the API Collections beside them are not linked from it)."""
    return sorted(str(p.resolve()) for p in Path(out).rglob("*.json") if p.parent.name != stac.API_COLLECTIONS)


@pytest.mark.layers
def test_every_written_document_validates_offline(built):
    written = linked_documents(built.out)
    checked = validate_offline(built.out / "catalog.json")  # walks child/item links on disk
    assert sorted(checked) == written
    n_items = len(items_of(built.disk))
    assert len(written) == 1 + 2 + len(list(built.disk.get_all_collections())) + n_items
    for path, uris in checked.items():
        doc = json.loads(Path(path).read_text())
        core = {"Feature": "item", "Collection": "collection", "Catalog": "catalog"}[doc["type"]]
        assert uris[0] == f"https://schemas.stacspec.org/v1.1.0/{core}-spec/json-schema/{core}.json"
        assert uris[1:] == doc.get("stac_extensions", [])


@pytest.mark.layers
def test_in_memory_catalog_validates(built):
    assert len(validate_offline(built.catalog)) == len(linked_documents(built.out))


@pytest.mark.layers
def test_the_root_answers_its_self_href_by_its_own_method_after_the_save(built):
    """The save reads the root's self href from a copy; afterwards the root's own method answers again."""
    assert "get_self_href" not in vars(built.catalog)
    assert built.catalog.get_self_href() == os.path.abspath(built.out / "catalog.json")
    built.catalog.set_self_href(str(built.out / "elsewhere" / "catalog.json"))
    try:
        assert built.catalog.get_self_href() == os.path.abspath(built.out / "elsewhere" / "catalog.json")
    finally:
        built.catalog.set_self_href(str(built.out / "catalog.json"))


@pytest.mark.layers
def test_api_outputs_are_not_written_with_machine_paths(built):
    """The stores are local paths here (no href_base): a STAC API served elsewhere could not reach them."""
    assert not Path(built.out, stac.API_COLLECTIONS).exists() and not Path(built.out, stac.API_ITEMS).exists()
    local = stac.machine_paths(built.disk)
    assert set(built.products) <= set(local)
    with pytest.warns(moczarr.errors.MoczarrWarning, match="STAC API outputs .* not written"):
        build_stac([str(fixture_path("zagg/column/store"))], built.out.parent / "again")


@pytest.mark.layers
def test_api_collections_are_the_collections_location_free(built, tmp_path):
    stac.write_api_collections(built.disk, tmp_path)  # the function itself writes what it is given
    served = sorted(tmp_path.glob("*.json"))
    collections = {c.id: c for c in built.disk.get_all_collections()}
    assert [p.stem for p in served] == sorted(collections)
    for path in served:
        doc = json.loads(path.read_text())
        assert stac.validate_document(doc)[0].endswith("collection.json")
        assert not {link["rel"] for link in doc["links"]} & {"self", "root", "parent", "child", "item"}
        hint = doc["assets"]["data"]["moczarr:open"]["kwargs"]
        assert os.path.isabs(hint["store_root"]) or "://" in hint["store_root"]
        want = collections[path.stem].to_dict(include_self_link=False)
        assert (doc["title"], doc["extent"], doc["license"]) == (want["title"], want["extent"], want["license"])


@pytest.mark.layers
def test_missing_extension_schema_raises(built, tmp_path, monkeypatch):
    monkeypatch.setattr(stac.validate, "SCHEMA_DIR", tmp_path)  # empty: no index, no schema
    with pytest.raises(MissingSchemaError, match="no offline schema"):
        validate_offline(built.out / "catalog.json")
    item = next(iter(items_of(built.disk)))
    with pytest.raises(MissingSchemaError):
        validate_offline(item)


def test_missing_schema_raises_without_fixtures(tmp_path, monkeypatch):
    collection = product_collection(synthetic_product(["4111", "4112"]))
    assert validate_offline(collection)
    monkeypatch.setattr(stac.validate, "SCHEMA_DIR", tmp_path)
    with pytest.raises(MissingSchemaError, match="no offline schema"):
        validate_offline(collection)


@pytest.mark.layers
def test_schema_referenced_by_an_extension_must_be_there_too(built, tmp_path, monkeypatch):
    shared = stac.schema_dir()
    index = json.loads((shared / "index.json").read_text())
    kept = {uri: name for uri, name in index.items() if "proj.org" not in uri}  # datacube $refs projjson
    for name in kept.values():
        (tmp_path / name).write_bytes((shared / name).read_bytes())
    (tmp_path / "index.json").write_text(json.dumps(kept))
    monkeypatch.setattr(stac.validate, "SCHEMA_DIR", tmp_path)
    with pytest.raises(MissingSchemaError, match="projjson"):
        validate_offline(built.out / "catalog.json")


@pytest.mark.layers
def test_undeclarable_extension_and_invalid_documents_raise(built):
    item = next(i for i in items_of(built.disk) if i.id == "windowed-store-atl06-o8-2020")
    doc = item.to_dict(include_self_link=False)
    assert validate_offline(doc)
    bad = copy.deepcopy(doc)
    bad["stac_extensions"].append("https://stac-extensions.github.io/nonesuch/v1.0.0/schema.json")
    with pytest.raises(MissingSchemaError, match="nonesuch"):
        validate_offline(bad)
    for mutate in (
        lambda d: d["properties"].pop("cube:dimensions"),  # datacube requires it
        lambda d: d["assets"]["manifest"].__setitem__("file:size", -1),  # file: size >= 0
        lambda d: d["properties"].__setitem__("version", 6),  # version: a string
        lambda d: d["properties"].pop("end_datetime"),  # core: start needs end
        lambda d: d["properties"].__setitem__("start_datetime", "2020-01-01"),  # core: RFC 3339
    ):
        bad = copy.deepcopy(doc)
        mutate(bad)
        with pytest.raises(STACValidationError):
            validate_offline(bad)


# -- footprints ----------------------------------------------------------------------------------------
def shard_centroids(decimals: list[str]) -> list[Point]:
    lat, lon = mortie.mort2geo(ids.to_words(decimals))
    lon = (np.asarray(lon) + 180.0) % 360.0 - 180.0
    return [Point(x, y) for x, y in zip(lon, np.asarray(lat), strict=True)]


def in_bbox(bbox, geom) -> bool:
    west, south, east, north = bbox
    minx, miny, maxx, maxy = geom.bounds
    lat_ok = south - 1e-9 <= miny and maxy <= north + 1e-9
    if west <= east:
        return lat_ok and west - 1e-9 <= minx and maxx <= east + 1e-9
    # across the antimeridian: every polygon lies east of west or west of east
    return lat_ok and all(
        part.bounds[0] >= west - 1e-9 or part.bounds[2] <= east + 1e-9 for part in shapely.get_parts(geom)
    )


@pytest.mark.layers
def test_geometry_is_the_coverage_footprint(built):
    for obj in [*built.disk.get_all_collections(), *items_of(built.disk)]:
        p = product_of(built, obj)
        geometry = obj.geometry if isinstance(obj, pystac.Item) else footprint_geometry(ids.to_words(p.shards))
        geom = shape(geometry)
        assert geom.is_valid and geom.geom_type == "MultiPolygon"
        for point in shard_centroids(p.shards):
            assert geom.contains(point), (obj.id, point)
        bbox = obj.bbox if isinstance(obj, pystac.Item) else obj.extent.spatial.bboxes[0]
        assert in_bbox(bbox, geom), obj.id
        # the fixtures hold no antimeridian case: the footprint's box is the summary's box
        np.testing.assert_allclose(bbox, p.bbox, atol=1e-9)


def synthetic_product(shards: list[str], **kw) -> ProductSummary:
    manifest = {
        "spec": "morton-hive/1",
        "dataset": {"short_name": "SYNTH", "version": "1"},
        "cell_order": 5,
        "shard_order": 3,
        "generated_at": "2026-01-02T03:04:05+00:00",
    }
    fields = {
        "name": "synth",
        "root": "/nonexistent/synth",
        "manifest": parse_manifest(manifest, "/nonexistent/synth"),
        "declaration": None,
        "windows": [],
        "time_range": None,
        "n_shards": len(shards),
        "shards": shards,
        "bbox": None,
        "footprint": footprint_geometry(ids.to_words(shards)) if shards else None,
        "levels": [LevelInfo(5, 3, "source", ["v"], float(mortie.order2res(5)))],
        "variables": [VariableInfo("v", "float32", ["cells"], {"units": "m"})],
    }
    fields.update(kw)
    return ProductSummary(**fields)


def test_antimeridian_footprint_box_crosses():
    shards = ["-1411", "-1412", "-1413"]  # order-3 cells astride 180 degrees
    collection = product_collection(synthetic_product(shards))
    west, _south, east, _north = collection.extent.spatial.bboxes[0]
    assert west > east, "a box across the antimeridian has west > east"
    assert 160 < west < 180 and -180 < east < -160
    (item,) = collection.get_items()
    geom = shape(item.geometry)
    assert geom.is_valid
    for part in shapely.get_parts(geom):  # split at the antimeridian, never wrapping
        assert part.bounds[2] - part.bounds[0] < 180
    for point in shard_centroids(shards):
        assert geom.distance(point) < 1e-9  # a centroid on 180 degrees lies on the split line
    assert in_bbox(item.bbox, geom)
    assert validate_offline(collection)


def test_geometry_bbox_rules():
    def box(w, s, e, n):
        return [[[w, s], [e, s], [e, n], [w, n], [w, s]]]

    assert geometry_bbox({"type": "Polygon", "coordinates": box(10, 0, 20, 5)}) == [10, 0, 20, 5]
    crossing = {"type": "MultiPolygon", "coordinates": [box(170, 0, 180, 5), box(-180, 1, -170, 6)]}
    assert geometry_bbox(crossing) == [170, 0, -170, 6]
    apart = {"type": "MultiPolygon", "coordinates": [box(-10, 0, 0, 5), box(100, 0, 110, 5)]}
    assert geometry_bbox(apart) == [-10, 0, 110, 5]
    polar = {"type": "Polygon", "coordinates": box(-180, -90, -90, -70)}
    assert geometry_bbox(polar) == [-180, -90, 180, -70]
    assert geometry_bbox(polar, pole_spans_all=False) == [-180, -90, -90, -70]


def test_no_coverage_means_no_geometry():
    p = synthetic_product([], n_shards=None, coverage_usable=False)
    collection = product_collection(p)
    (item,) = collection.get_items()
    assert item.geometry is None and item.bbox is None
    assert collection.extent.spatial.bboxes == [[-180.0, -90.0, 180.0, 90.0]]
    assert "coverage" not in item.assets
    assert validate_offline(collection)


# -- time ---------------------------------------------------------------------------------------------
def test_window_intervals():
    utc = __import__("datetime").timezone.utc

    def D(*a):
        return __import__("datetime").datetime(*a, tzinfo=utc)

    assert window_interval("2019", "yearly") == (D(2019, 1, 1), D(2020, 1, 1))
    assert window_interval("201912", "monthly") == (D(2019, 12, 1), D(2020, 1, 1))
    assert window_interval("201902", "monthly") == (D(2019, 2, 1), D(2019, 3, 1))
    assert window_interval("20200229", "daily") == (D(2020, 2, 29), D(2020, 3, 1))
    assert window_interval("20190229", "daily") is None  # no such day
    assert window_interval("2019", "monthly") is None  # not a label of that schedule
    temporal = {
        "windows": [
            {"label": "a", "start": "2019-01-02T00:00:00+00:00", "end": "2019-02-01T00:00:00+00:00"},
            {"label": "b", "timestamp": "2020-05-01T12:00:00Z"},
        ]
    }
    assert window_interval("a", "explicit", temporal) == (D(2019, 1, 2), D(2019, 2, 1))
    assert window_interval("b", "explicit", temporal) == (D(2020, 5, 1, 12), D(2020, 5, 1, 12, 0, 1))
    assert window_interval("c", "explicit", temporal) is None


@pytest.mark.layers
def test_item_times(built):
    for item in items_of(built.disk):
        p = product_of(built, item)
        props = item.properties
        window = props["moczarr:window"]
        if p.windowed:
            assert props["datetime"] == props["start_datetime"] and props["moczarr:datetime_source"] == "window"
            if window != "all":
                start, end = window_interval(window, p.schedule, p.manifest.raw.get("temporal"))
                assert (item.common_metadata.start_datetime, item.common_metadata.end_datetime) == (start, end)
        else:  # no observation time is recorded for these unwindowed fixtures: a stated placeholder
            assert item.datetime == stac.fields.PLACEHOLDER_TIME
            assert props["moczarr:datetime_source"] == "placeholder"
            assert "placeholder" in props["description"] and "not a time of data" in props["description"]
            assert "start_datetime" not in props
        # the generation time is the creation time, never the observation time
        assert item.common_metadata.created == pystac.utils.str_to_datetime(p.manifest.raw["generated_at"])
    windowed = built.disk.get_child("windowed-store-atl06")
    intervals = windowed.extent.temporal.intervals
    assert [pystac.utils.datetime_to_str(t) for t in intervals[0]] == ["2019-01-01T00:00:00Z", "2022-01-01T00:00:00Z"]
    assert len(intervals) == 4  # the overall span, then one per window
    assert built.disk.get_child("column-store-atl06").extent.temporal.intervals == [[None, None]]


# -- assets -------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_assets_and_extensions(built):
    for obj in [*built.disk.get_all_collections(), *items_of(built.disk)]:
        p = product_of(built, obj)
        root = os.path.abspath(p.root)
        data = obj.assets["data"]
        assert data.href == root and data.media_type == MEDIA_TYPE and data.roles == ["data"]
        hint = data.extra_fields["moczarr:open"]
        assert hint["function"] == (OPEN_LEVEL if isinstance(obj, pystac.Item) else OPEN_STORE)
        for key, name in (("manifest", "morton_hive.json"), ("coverage", "coverage.moc")):
            asset = obj.assets[key]
            assert asset.href == os.path.join(root, name) and asset.media_type == "application/json"
            assert asset.roles == ["metadata"]
            assert asset.extra_fields["file:size"] == os.path.getsize(asset.href)
        assert FILE in obj.stac_extensions and VERSION in obj.stac_extensions
        assert STORAGE not in obj.stac_extensions  # local roots
        if isinstance(obj, pystac.Item):
            assert obj.properties["version"] == p.dataset["version"]
            assert hint["kwargs"] == {
                "store_root": root,
                "cell_order": obj.properties["moczarr:cell_order"],
                "window": None if obj.properties["moczarr:window"] == "all" else obj.properties["moczarr:window"],
                **({"all_time": True} if obj.properties["moczarr:window"] == "all" else {}),
            }


@pytest.mark.layers
def test_thumbnails(built):
    for collection in built.disk.get_all_collections():
        asset = collection.assets["thumbnail"]
        assert asset.media_type == "image/png" and asset.roles == ["thumbnail"]
        with Image.open(asset.get_absolute_href()) as image:
            assert image.format == "PNG" and 16 <= max(image.size) <= 256
            assert image.getbbox() is not None  # something was drawn


@pytest.mark.layers
def test_thumbnails_need_a_folder():
    with pytest.raises(ValueError, match="out_dir"):
        build_stac(str(fixture_path("zagg/column/store")), thumbnails=True)


@pytest.mark.layers
def test_catalog_reads_nothing_beyond_the_summary(tmp_path):
    root = str(fixture_path("overview_hive"))
    with count_requests() as summary_only:
        quiet(summarize_store, root)
    with count_requests() as building:
        quiet(build_stac, root, tmp_path)
    assert building == summary_only
    with count_requests() as drawing:  # quicklooks show data, so they read it
        quiet(build_stac, root, tmp_path / "with-thumbnails", thumbnails=True)
    assert drawing[("GET", "chunk:data")] > 0 and summary_only[("GET", "chunk:data")] == 0


@pytest.mark.layers
def test_single_store_ids_and_in_memory_catalog():
    catalog = quiet(build_stac, str(fixture_path("zagg/column/store")))
    (collection,) = catalog.get_children()
    assert collection.id == "atl06"
    assert {i.id for i in collection.get_items()} == {f"atl06-o{r}" for r in range(1, 9)}
    assert collection.get_self_href() is None  # nothing written without out_dir
    assert validate_offline(catalog)


@pytest.mark.layers
def test_same_root_twice_is_refused():
    root = str(fixture_path("zagg/column/store"))
    with pytest.raises(ValueError, match="twice"):
        quiet(build_stac, [root, root])


# -- round trip ---------------------------------------------------------------------------------------
@pytest.mark.layers
def test_item_opens_to_what_open_level_gives(built):
    opened = 0
    for item in items_of(built.disk):
        hint = open_hint(item)["kwargs"]
        try:
            direct = quiet(
                open_level,
                hint["store_root"],
                hint["cell_order"],
                window=hint["window"],
                all_time=hint.get("all_time", False),
            )
        except LevelOmittedError as exc:  # a declared level with nothing on disk: both say so
            with pytest.raises(LevelOmittedError, match=re.escape(str(exc))):
                quiet(open_stac, item)
            continue
        ds = quiet(open_stac, item)
        opened += 1
        xr.testing.assert_identical(ds.load(), direct.load())
        assert ds.attrs == direct.attrs
        assert list(ds.data_vars) == list(item.properties["cube:variables"]), item.id
        for name, var in item.properties["cube:variables"].items():
            if var["moczarr:kind"] == "dense":
                assert str(ds[name].dtype) == var["moczarr:dtype"], (item.id, name)
        lo, hi = item.properties["cube:dimensions"]["cells"]["extent"]
        cell_ids = ds["cell_ids"].values
        assert lo <= cell_ids.min() and cell_ids.max() <= hi, item.id
    assert opened == len(items_of(built.disk))


@pytest.mark.layers
def test_item_opens_from_href_and_dict(built):
    item = next(i for i in items_of(built.disk) if i.id == "overview_hive-atl06-o6")
    direct = quiet(open_level, os.path.abspath(fixture_path("overview_hive/atl06")), 6).load()
    xr.testing.assert_identical(quiet(open_stac, item.get_self_href()).load(), direct)
    xr.testing.assert_identical(quiet(open_stac, Path(item.get_self_href())).load(), direct)
    xr.testing.assert_identical(quiet(open_stac, item.to_dict()).load(), direct)
    aoi = [built.products[open_hint(item)["kwargs"]["store_root"]].shards[0]]
    xr.testing.assert_identical(
        quiet(open_stac, item, aoi=aoi).load(),
        quiet(open_level, os.path.abspath(fixture_path("overview_hive/atl06")), 6, aoi=aoi).load(),
    )


@pytest.mark.layers
def test_collection_opens_to_what_open_store_gives(built):
    cases = {
        "overview_hive-atl06": (
            {"store_root": os.path.abspath(fixture_path("overview_hive")), "products": ["atl06"]},
            {},
        ),
        "overview_hive-atl06_windows": (
            {"store_root": os.path.abspath(fixture_path("overview_hive")), "products": ["atl06_windows"]},
            {"window": "2020"},
        ),
        "column-store-atl06": ({"store_root": os.path.abspath(fixture_path("zagg/column/store"))}, {}),
        "windowed-store-atl06": (
            {"store_root": os.path.abspath(fixture_path("zagg/windowed/store"))},
            {"window": "2019"},
        ),
    }
    collections = {c.id: c for c in built.disk.get_all_collections()}
    for cid, (kwargs, extra) in cases.items():
        collection = collections[cid]
        assert open_hint(collection)["kwargs"] == kwargs
        tree = quiet(open_stac, collection, **extra)
        xr.testing.assert_identical(tree.load(), quiet(open_store, **kwargs, **extra).load())
    with pytest.raises(Exception, match="window"):  # a windowed product needs its window
        quiet(open_stac, collections["windowed-store-atl06"])


@pytest.mark.layers
def test_open_stac_calls_only_moczarr_readers(built):
    item = next(iter(items_of(built.disk)))
    doc = copy.deepcopy(item.to_dict())  # to_dict shares the asset's extra fields
    doc["assets"]["data"]["moczarr:open"]["function"] = "os.system"
    with pytest.raises(ValueError, match="not a moczarr reader"):
        open_stac(doc)
    doc["assets"]["data"]["moczarr:open"]["function"] = (
        "moczarr.openers.pyramid.open_level"  # a module path is not a public name
    )
    with pytest.raises(ValueError, match="not a moczarr reader"):
        open_stac(doc)
    with pytest.raises(ValueError, match="fixes cell_order"):
        open_stac(item, cell_order=item.properties["moczarr:cell_order"] + 1)
    with pytest.raises(TypeError, match="Catalog"):
        open_stac(built.disk)


# -- object stores ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3_column(s3_server, store_layer):
    """The session's S3 server, holding ``zagg/column/store`` in a public and a private bucket of this module's."""
    local = fixture_path("zagg/column/store")
    for bucket, public in (("stac-public", True), ("stac-private", False)):
        s3_server.bucket(bucket, public=public)
        s3_server.upload_tree(local, bucket, "zagg/column/store")
    return s3_server


@pytest.mark.layers
def test_s3_root_gets_the_storage_extension(s3_column, tmp_path):
    options = s3_column.storage_options(anon=True)
    catalog = quiet(build_stac, "s3://stac-public/zagg/column/store", tmp_path, storage_options=options)
    assert validate_offline(tmp_path / "catalog.json")
    (collection,) = catalog.get_children()
    scheme = {
        "type": "custom-s3",
        "platform": s3_column.endpoint_url,
        "bucket": "stac-public",
        "region": "us-east-1",
    }
    assert collection.extra_fields["storage:schemes"] == {"s3-stac-public": scheme}
    for item in collection.get_items():
        assert STORAGE in item.stac_extensions
        assert item.properties["storage:schemes"] == {"s3-stac-public": scheme}
        assert item.assets["data"].href == "s3://stac-public/zagg/column/store"
        for asset in item.assets.values():
            assert asset.extra_fields["storage:refs"] == ["s3-stac-public"]
        local = fixture_path("zagg/column/store") / "morton_hive.json"
        assert item.assets["manifest"].extra_fields["file:size"] == local.stat().st_size
    item = pystac.read_file(str(tmp_path / "atl06" / "atl06-o7" / "atl06-o7.json"))
    remote = quiet(open_stac, item, storage_options=options).load()
    xr.testing.assert_identical(remote, quiet(open_level, str(fixture_path("zagg/column/store")), 7).load())


@pytest.mark.layers
def test_s3_build_reads_through_both_intake_flavours_and_the_asset_hints(s3_column, tmp_path):
    """``--anon --endpoint-url``: the storage options reach v1 and v2 entries and the Items' xarray hints."""
    import intake

    from moczarr_intake.cli import main
    from tests.engines import register_engine

    register_engine()
    endpoint = s3_column.endpoint_url
    root = "s3://stac-public/zagg/column/store"
    assert main(["build", root, "--out", str(tmp_path), "--anon", "--endpoint-url", endpoint]) == 0
    local = quiet(open_level, str(fixture_path("zagg/column/store")), 7).load()
    for name in ("catalog.yaml", "catalog_v2.yaml"):
        cat = intake.open_catalog(str(tmp_path / name))
        entry = "atl06" if name == "catalog.yaml" else "atl06_o7"
        got = cat[entry](order=7).read() if name == "catalog.yaml" else cat[entry].read()
        xr.testing.assert_identical(quiet(got.load), local)
    item = pystac.read_file(str(tmp_path / "stac" / "atl06" / "atl06-o7" / "atl06-o7.json"))
    asset = item.assets["data"]
    assert asset.extra_fields["xarray:storage_options"] == {"anon": True, "client_kwargs": {"endpoint_url": endpoint}}
    opened = quiet(
        xr.open_dataset,
        asset.href,
        **asset.extra_fields["xarray:open_kwargs"],
        storage_options=asset.extra_fields["xarray:storage_options"],
    )
    xr.testing.assert_identical(opened.load(), local)


@pytest.mark.layers
def test_credentials_are_never_written(s3_column, tmp_path):
    options = s3_column.storage_options(anon=False)
    quiet(build_stac, "s3://stac-private/zagg/column/store", tmp_path, storage_options=options)
    for path in tmp_path.rglob("*.json"):
        text = path.read_text()
        assert options["secret"] not in text and options["key"] not in text, path


def test_aws_scheme_validates():
    scheme = stac.fields.storage_scheme(
        "s3://my-bucket/prefix", {"anon": True, "client_kwargs": {"region_name": "us-west-2"}}
    )
    assert scheme == (
        "s3-my-bucket",
        {
            "type": "aws-s3",
            "platform": "https://{bucket}.s3.{region}.amazonaws.com",
            "bucket": "my-bucket",
            "region": "us-west-2",
        },
    )
    p = synthetic_product(["-1411"], root="s3://my-bucket/prefix")
    collection = product_collection(p, storage_options={"client_kwargs": {"region_name": "us-west-2"}})
    assert STORAGE in collection.stac_extensions
    assert validate_offline(collection)
    assert stac.fields.storage_scheme("/local/path", None) is None


@pytest.mark.layers
def test_moraine_pyramids_become_items_under_the_top_catalog(tmp_path):
    from moczarr.moraine import read_moraine_info

    info = quiet(read_moraine_info, str(fixture_path("moraine/ras_mean_v1")))
    catalog = quiet(build_stac, [str(fixture_path("zagg/column/store"))], tmp_path, moraine=[info])
    (item,) = catalog.get_items()
    assert item.id == "ras_mean_v1" and item.properties["moczarr:store_root"] == info.path
    assert Path(item.get_self_href()).is_file()
    assert len(validate_offline(tmp_path / "catalog.json")) == 1 + 1 + 8 + 1
