"""Messages that say what is true, met the way a user meets them.

A file given as a store root is called a file; ``moczarr-catalog verify
--window`` refuses a window the store does not hold, naming the windows it
does (the installed console script, as a subprocess); one damage is one
finding; ``open_stac`` raises typed errors naming the document; an ``aoi=`` id
finer than order 29 is an :class:`AOIError` naming it; plain
``xarray.open_datatree`` recognises a local root without ``engine=``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import xarray as xr

import moczarr
from moczarr.errors import (
    AOIError,
    ContentError,
    CoverageFallbackWarning,
    EmptySelectionWarning,
    NotAHiveStoreError,
    NotFoundError,
    StorageError,
)
from moczarr_intake.stac import StacDocumentError, StacNotFoundError, open_stac
from tests.helpers import REPO, fixture_path
from tests.loopback import serve_folder

WINDOWED = "zagg/windowed/store"
BARE = "zagg/single_8/store"
MULTI = "multiproduct_hive"


def catalog_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``moczarr-catalog ARGS`` through the console script installed beside this interpreter."""
    script = shutil.which("moczarr-catalog", path=str(Path(sys.executable).parent))
    assert script, "the moczarr-catalog console script is not installed beside this interpreter"
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


# -- a file given as the store root ---------------------------------------------------------------------
@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "README.md"
    path.write_text("# not a store\n")
    return path


@pytest.mark.parametrize(
    "opener",
    [moczarr.open_hive, moczarr.open_store, moczarr.open_level, moczarr.open_pyramid, moczarr.read_manifest],
)
def test_a_file_as_store_root_is_called_a_file(a_file, opener):
    with pytest.raises(NotAHiveStoreError, match=r"README\.md: a file, not a store root"):
        opener(a_file)


def test_a_missing_root_still_says_it_does_not_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        moczarr.open_hive(tmp_path / "nothing-here")


def test_verify_calls_a_file_a_file(a_file):
    done = catalog_cli("verify", "--no-progress", str(a_file))
    assert done.returncode == 2
    assert "a file, not a store root" in done.stderr
    assert "does not exist" not in done.stderr


# -- verify --window ------------------------------------------------------------------------------------------
@pytest.mark.layers
def test_verify_refuses_a_window_the_store_does_not_hold():
    root = fixture_path(WINDOWED)
    present = moczarr.list_windows(root)
    assert present, "the windowed store holds windows"
    for window in ("2099", "nope"):
        done = catalog_cli("verify", "--no-progress", "--window", window, str(root))
        assert done.returncode == 2, done.stdout
        assert f"window {window!r}" in done.stderr
        assert f"windows present: {', '.join(present)}" in done.stderr
        assert "OK" not in done.stdout


@pytest.mark.layers
def test_verify_of_a_held_window_checks_its_leaves():
    root = fixture_path(WINDOWED)
    window = moczarr.list_windows(root)[0]
    done = catalog_cli("verify", "--no-progress", "--json", "--window", window, str(root))
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)
    expected = moczarr.open_hive(root, window=window).attrs["morton_hive"]["n_leaves"]
    assert report["counts"]["leaves_stamped"] == expected > 0


@pytest.mark.layers
def test_verify_refuses_a_window_on_a_root_without_windowed_products():
    done = catalog_cli("verify", "--no-progress", "--window", "2019", str(fixture_path(BARE)))
    assert done.returncode == 2
    assert "no product of this root is time-windowed" in done.stderr


@pytest.mark.layers
def test_verify_window_scopes_windowed_products_and_checks_the_others_whole():
    root = fixture_path(MULTI)
    windowed = [p for p in moczarr.list_products(root) if moczarr.read_manifest(root / p).windowed]
    window = moczarr.list_windows(root / windowed[0])[0]
    done = catalog_cli("verify", "--no-progress", "--json", "--window", window, str(root))
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)
    stamped = {f["object"]: f["message"] for f in report["findings"] if f["kind"] == "leaves-stamped"}
    tree = moczarr.open_store(root, window=window)
    for product in moczarr.list_products(root):
        node = tree[product]
        leaves = (node.ds if node.has_data else next(iter(node.children.values())).ds).attrs["morton_hive"]["n_leaves"]
        assert stamped[f"{product}/"] == f"{leaves} stamped leaves"


# -- one finding per damage ---------------------------------------------------------------------------------
@pytest.mark.layers
def test_a_truncated_product_manifest_is_one_finding(copy_fixture):
    root = copy_fixture(MULTI)
    product = moczarr.list_products(root)[0]
    manifest = root / product / "morton_hive.json"
    manifest.write_bytes(manifest.read_bytes()[:100])
    done = catalog_cli("verify", "--no-progress", "--json", str(root))
    assert done.returncode == 1
    (report,) = json.loads(done.stdout)
    about = [f for f in report["findings"] if f["object"].startswith(f"{product}/")]
    assert [f["kind"] for f in about] == ["manifest-invalid"]


# -- open_stac ----------------------------------------------------------------------------------------------
def test_open_stac_of_a_document_that_is_not_json(a_file):
    with pytest.raises(StacDocumentError, match=r"README\.md: not a STAC document: not JSON") as info:
        open_stac(a_file)
    assert isinstance(info.value, ContentError)


def test_open_stac_of_a_missing_file(tmp_path):
    missing = tmp_path / "item.json"
    with pytest.raises(StacNotFoundError, match=r"item\.json: no such STAC document") as info:
        open_stac(missing)
    assert isinstance(info.value, NotFoundError) and isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize("document", [[1, 2], {"a": 1}, {"type": "Feature", "id": "x"}])
def test_open_stac_of_json_that_is_not_stac(tmp_path, document):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document))
    with pytest.raises(StacDocumentError, match=r"doc\.json: not a STAC Item or Collection"):
        open_stac(path)
    with pytest.raises(StacDocumentError, match="not a STAC Item or Collection"):
        open_stac(document) if isinstance(document, dict) else open_stac(path)


def test_open_stac_of_a_folder(tmp_path):
    with pytest.raises(StacDocumentError, match="a folder, not a STAC document"):
        open_stac(tmp_path)


@pytest.fixture
def http_folder(tmp_path):
    """``http.server`` on 127.0.0.1 serving ``tmp_path`` (quietly); yields its URL and folder."""

    with serve_folder(tmp_path) as url:
        yield url, tmp_path


def test_open_stac_over_http_names_the_url(http_folder):
    url, folder = http_folder
    (folder / "page.json").write_text("<html>not json</html>")
    with pytest.raises(StacNotFoundError, match=rf"{url}/gone\.json: no such STAC document \(HTTP 404\)"):
        open_stac(f"{url}/gone.json")
    with pytest.raises(StacDocumentError, match=rf"{url}/page\.json: not a STAC document"):
        open_stac(f"{url}/page.json")


def test_open_stac_of_an_unreachable_server_is_a_storage_error():
    with pytest.raises(StorageError, match=r"127\.0\.0\.1:9/item\.json"):
        open_stac("http://127.0.0.1:9/item.json")


# -- aoi ids finer than order 29 ------------------------------------------------------------------------------
@pytest.mark.layers
@pytest.mark.parametrize("aoi", ["1" + "1" * 30, ["1" + "1" * 30], "-4" + "1" * 30, "6" + "4" * 30 + "p"])
def test_an_id_finer_than_order_29_is_an_aoi_error_naming_it(aoi):
    text = aoi if isinstance(aoi, str) else aoi[0]
    with pytest.raises(AOIError, match=rf"'{text}' is not a morton decimal id: 30 order digits, and order 29"):
        moczarr.open_hive(fixture_path(BARE), aoi=aoi)


# -- xarray.open_datatree on a local root -----------------------------------------------------------------------
@pytest.mark.layers
def test_plain_xarray_open_datatree_recognises_a_local_root():
    root = fixture_path(WINDOWED)
    window = moczarr.list_windows(root)[0]
    tree = xr.open_datatree(root, window=window)
    xr.testing.assert_identical(tree, moczarr.open_store(root, window=window))
    groups = xr.open_groups(root, window=window)
    assert set(groups) == {node.path for node in tree.subtree}


@pytest.mark.layers
def test_plain_xarray_open_datatree_of_a_multi_product_root():
    root = fixture_path(MULTI)
    windowed = [p for p in moczarr.list_products(root) if moczarr.read_manifest(root / p).windowed]
    window = moczarr.list_windows(root / windowed[0])[0]
    tree = xr.open_datatree(root, window=window)
    assert set(tree.children) == set(moczarr.list_products(root))


# -- issue 40: advice that works, addresses as given, one warning per cause -----------------------------------
@pytest.mark.layers
def test_a_multi_product_root_advises_what_works():
    """The advice of ``open_hive`` / ``xr.open_dataset`` on a multi-product root, followed as written."""
    root = str(fixture_path(MULTI))
    for opener in (moczarr.open_hive, xr.open_dataset):
        with pytest.raises(NotAHiveStoreError) as info:
            opener(root)
        message = str(info.value)
        assert "product=" not in message
        product_root = re.search(r"open_hive\('([^']+)'\)", message).group(1)
        assert re.search(r"open_store\('([^']+)'\)", message).group(1) == root and "products=[...]" in message
        product = Path(product_root).name
        assert moczarr.read_manifest(product_root).cell_order > 0  # a store root: open_hive takes it
        assert list(moczarr.open_store(root, products=[product], window=_a_window(product_root)).children) == [product]


def _a_window(root: str) -> str | None:
    windows = moczarr.list_windows(root)
    return windows[0] if windows else None


def test_an_https_url_is_named_as_given():
    with pytest.raises(StorageError) as info:
        moczarr.open_hive("https://127.0.0.1:9/store")
    assert str(info.value).startswith("https://127.0.0.1:9/store/morton_hive.json: ")
    assert "http://https://" not in str(info.value)


def test_an_unreachable_store_is_named_not_a_probe_object():
    from moczarr.moraine import is_moraine_pyramid

    with pytest.raises(StorageError, match=r"^http://127\.0\.0\.1:9/store: cannot be read \("):
        is_moraine_pyramid("http://127.0.0.1:9/store")


def test_a_box_given_lat_lon_says_so():
    root = REPO / "catalogs" / "sample" / "elevation"
    with pytest.warns(EmptySelectionWarning) as caught:
        ds = moczarr.open_hive(root, aoi=moczarr.BBox(38.5, -77, 39.5, -76))
    assert ds.sizes["cells"] == 0
    (message,) = [str(w.message) for w in caught]
    assert "BBox(38.5, -77, 39.5, -76) selects no committed leaf" in message
    assert "BBox(-77, 38.5, -76, 39.5), its lon/lat swapped, would: BBox takes (west, south, east, north)" in message
    assert moczarr.open_hive(root, aoi=moczarr.BBox(-77, 38.5, -76, 39.5)).sizes["cells"] > 0  # the advice holds
    with pytest.warns(EmptySelectionWarning) as caught:
        moczarr.open_hive(root, aoi=moczarr.BBox(10, 10, 11, 11))
    assert "swapped" not in str(caught[0].message)  # nothing there either way: nothing to suggest


def test_the_walk_is_warned_about_once_per_open(tmp_path):
    """One cause, one warning: ``time=`` opens several windows through one walk of a store without its MOC."""
    root = tmp_path / "elevation_yearly"
    shutil.copytree(REPO / "catalogs" / "sample" / "elevation_yearly", root)
    (root / "coverage.moc").unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = moczarr.open_hive(root, time=("2019-01-01", "2021-01-01"))
    assert ds.sizes["window"] == 2
    fallbacks = [w for w in caught if issubclass(w.category, CoverageFallbackWarning)]
    assert len(fallbacks) == 1, [str(w.message) for w in fallbacks]
