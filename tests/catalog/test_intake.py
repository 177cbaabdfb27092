"""The Intake layer: real ``intake.open_catalog`` on committed and generated catalogs, both plugin generations."""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import intake
import pytest
import xarray as xr

import moczarr
from moczarr.metadata import summarize_store
from moczarr_intake import build
from moczarr_intake.cli import main
from moczarr_intake.readers import MortonHive, MortonLevelReader, MortonStoreReader
from moczarr_intake.stores import describe_root
from tests.helpers import REPO, SAMPLE, fixture_path

COMMITTED = REPO / "catalogs" / "catalog.yaml"

pytestmark = pytest.mark.filterwarnings("ignore:Shell command not executed:UserWarning")


def _same(a: xr.Dataset, b: xr.Dataset):
    xr.testing.assert_identical(a.load(), b.load())


def test_drivers_are_registered():
    for name in ("morton_hive", "morton_level", "morton_store", "moraine_level", "moraine_points"):
        assert name in intake.registry
    assert MortonHive in intake.readers.datatypes.recommend(str(SAMPLE / "elevation"))


def test_committed_catalog_opens_as_is():
    cat = intake.open_catalog(str(COMMITTED))
    names = list(cat)
    assert "elevation" in names and "elevation_yearly" in names and "elevation_tree" in names
    ds = cat["elevation"].read()
    _same(ds, moczarr.open_level(SAMPLE / "elevation", 8))
    coarse = cat["elevation"](order=4).to_dask()
    _same(coarse, moczarr.open_level(SAMPLE / "elevation", 4))
    yearly = cat["elevation_yearly"](window="2020").read()
    _same(yearly, moczarr.open_level(SAMPLE / "elevation_yearly", 8, window="2020"))
    meta = cat["elevation"].describe()["metadata"]
    assert [lv["cell_order"] for lv in meta["levels"]] == [8, 6, 4]
    assert meta["levels"][1]["artifact"] == "overview"
    assert meta["stac_href"].endswith(".json")
    tree = cat["elevation_tree"].read()
    assert isinstance(tree, xr.DataTree)
    assert set(tree["elevation"].children) == {"8", "6", "4"}


def test_committed_v2_catalog_opens_as_is():
    cat = intake.open_catalog(str(REPO / "catalogs" / "catalog_v2.yaml"))
    assert "elevation_o6" in cat.entries
    _same(cat["elevation_o6"].read(), moczarr.open_level(SAMPLE / "elevation", 6))
    _same(cat["elevation_yearly_o8_2019"].read(), moczarr.open_level(SAMPLE / "elevation_yearly", 8, window="2019"))


def test_dynamic_catalog_over_a_root():
    cat = intake.open_catalog(str(REPO / "catalogs" / "sample_root.yaml"))
    nested = cat["sample"]
    assert sorted(nested) == ["elevation", "elevation_tree", "elevation_yearly", "elevation_yearly_tree"]
    _same(nested["elevation"](order=6).read(), moczarr.open_level(SAMPLE / "elevation", 6))


def test_parameters_are_validated_with_clear_messages():
    cat = intake.open_catalog(str(COMMITTED))
    with pytest.raises(ValueError, match="allowed values: 8,6,4"):
        cat["elevation"](order=7).read()
    with pytest.raises(moczarr.errors.WindowError, match="2019, 2020"):
        cat["elevation_yearly"](window="2030").read()
    aoi = cat["elevation"](aoi=["4331421"]).read()
    _same(aoi, moczarr.open_level(SAMPLE / "elevation", 8, aoi=["4331421"]))
    described = cat["elevation_yearly"].describe()
    params = {p["name"]: p for p in described["user_parameters"]}
    assert params["order"]["allowed"] == [8] and described["metadata"]["windows"] == ["2019", "2020"]
    assert set(described["metadata"]["arguments"]) >= {"aoi", "window", "zoom"}


def test_open_functions_and_readers():
    src = intake.open_morton_level(str(SAMPLE / "elevation"), order=6)
    _same(src.to_dask(), moczarr.open_level(SAMPLE / "elevation", 6))
    tree = intake.open_morton_store(str(SAMPLE), window="2019").read()
    assert set(tree.children) == {"elevation", "elevation_yearly"}
    data = MortonHive(url=str(SAMPLE / "elevation"))
    _same(MortonLevelReader(data).read(cell_order=4), moczarr.open_level(SAMPLE / "elevation", 4))
    assert isinstance(MortonStoreReader(data).read(), xr.DataTree)


def test_an_omitted_level_raises_through_every_caller(tmp_path):
    """open_level's LevelOmittedError reaches the Intake source, the Intake reader and the xarray engine as is."""
    root = tmp_path / "elevation"
    shutil.copytree(SAMPLE / "elevation", root)
    (root / "coverage.moc").unlink()  # without a root MOC the overview levels cannot be enumerated
    message = rf"^{re.escape(str(root))}: no usable root coverage.moc, so overview level o6 cannot be enumerated"
    with pytest.raises(moczarr.errors.LevelOmittedError, match=message):
        moczarr.open_level(root, 6)
    with pytest.raises(moczarr.errors.LevelOmittedError, match=message):
        intake.open_morton_level(str(root), order=6).read()
    with pytest.raises(moczarr.errors.LevelOmittedError, match=message):
        MortonLevelReader(MortonHive(url=str(root))).read(cell_order=6)
    with pytest.raises(moczarr.errors.LevelOmittedError, match=message):
        xr.open_dataset(str(root), engine="moczarr", cell_order=6)


@pytest.mark.layers
@pytest.mark.parametrize(
    "name", ["overview_hive", "multiproduct_hive", "zagg/windowed/store", "zagg/column/store", "zagg/multi/store"]
)
def test_cli_build_on_fixtures_round_trips(tmp_path, name):
    root = fixture_path(name)
    written = build([str(root)], tmp_path, progress=False)
    cat = intake.open_catalog(str(written.intake))
    summary = summarize_store(root)
    for product in summary.products:
        entry = cat[product.name]
        meta = entry.describe()["metadata"]
        assert meta["semantic_hash"] == product.semantic_hash
        assert [lv["cell_order"] for lv in meta["levels"]] == product.orders
        window = product.windows[0] if product.windowed else None
        kwargs = {"window": window} if window else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
            _same(entry(**kwargs).read(), moczarr.open_level(product.root, product.cell_order, window=window))


@pytest.mark.layers
def test_cli_show_and_main(capsys):
    text, _ = describe_root(str(SAMPLE))
    assert "elevation_yearly" in text and "o4" in text and "windows (yearly): 2019, 2020" in text
    assert main(["show", str(fixture_path("moraine/ras_mean_v1"))]) == 0
    assert "raster pyramid" in capsys.readouterr().out


@pytest.mark.layers
def test_cli_build_mixes_moraine_and_hive(tmp_path):
    written = build([str(SAMPLE), str(fixture_path("moraine/pc_first_v1"))], tmp_path, progress=False)
    cat = intake.open_catalog(str(written.intake))
    assert any(n.startswith("pc_first_v1") for n in cat)
    assert any(n.endswith("elevation") for n in cat)


def test_committed_stac_validates_moves_and_opens_back(tmp_path):
    import shutil

    import pystac

    from moczarr_intake.stac import open_stac, validate_offline

    stac = REPO / "catalogs" / "stac" / "catalog.json"
    validate_offline(stac)
    for path in (REPO / "catalogs").rglob("*"):
        if path.suffix in (".json", ".yaml") and "sample" not in path.relative_to(REPO / "catalogs").parts[:1]:
            assert str(REPO) not in path.read_text(), f"{path} holds an absolute path of this checkout"
    moved = tmp_path / "elsewhere"
    shutil.copytree(REPO / "catalogs", moved)  # the folder moves as a whole
    items = list(pystac.Catalog.from_file(str(moved / "stac" / "catalog.json")).get_items(recursive=True))
    assert {i.id for i in items} >= {"elevation-o8", "elevation-o6", "elevation-o4", "elevation_yearly-o8-2019"}
    for item in items:
        hint = item.assets["data"].extra_fields["moczarr:open"]["kwargs"]
        direct = moczarr.open_level(
            moved / "sample" / Path(hint["store_root"]).name, hint["cell_order"], window=hint.get("window")
        )
        _same(open_stac(item), direct)


def test_committed_catalogs_are_current(tmp_path):
    """Rebuilding the committed catalogs from the sample gives the same entries (regenerate with the CLI if not)."""
    import shutil

    import yaml

    work = tmp_path / "catalogs"
    shutil.copytree(SAMPLE, work / "sample")
    build([str(work / "sample")], work, progress=False)
    for name in ("catalog.yaml", "catalog_v2.yaml"):
        assert yaml.safe_load((work / name).read_text()) == yaml.safe_load((REPO / "catalogs" / name).read_text()), (
            f"catalogs/{name} is stale: run `moczarr-catalog build catalogs/sample --out catalogs --thumbnails`"
        )


def test_aoi_parameter_means_what_the_openers_mean():
    """Unset: everywhere; ``[]``: nowhere (schema-correct, warned); text: ids, WKT or GeoJSON, as the openers take."""
    import json
    import warnings

    import shapely

    cat = intake.open_catalog(str(COMMITTED))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", moczarr.errors.MoczarrWarning)
        everything = cat["elevation"].read()
    _same(everything, moczarr.open_level(SAMPLE / "elevation", 8))
    with pytest.warns(moczarr.errors.EmptySelectionWarning):
        nothing = cat["elevation"](aoi="[]").read()
    assert nothing.sizes["cells"] == 0 and set(nothing.data_vars) == set(everything.data_vars)
    box = moczarr.BBox(-77, 38.5, -76, 39.5)
    direct = moczarr.open_level(SAMPLE / "elevation", 8, aoi=box)
    assert 0 < direct.sizes["cells"] < everything.sizes["cells"]
    polygon = shapely.box(-77, 38.5, -76, 39.5)
    for text in (polygon.wkt, json.dumps(shapely.geometry.mapping(polygon))):
        _same(cat["elevation"](aoi=text).read(), moczarr.open_level(SAMPLE / "elevation", 8, aoi=polygon))
