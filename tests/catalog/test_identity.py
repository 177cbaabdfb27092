"""What an update promises a portal: ids that stay, missing that is not deleted, a report by id, a checked record.

Every scenario builds a real catalog of copies of the sample store
(``moczarr.testing``), changes the folders as zagg and colleagues would, runs
the real ``moczarr-catalog`` entry point, and compares the ids the written
documents show: the STAC Collections (read back with pystac), the entry names
of both Intake YAMLs (read back with ``intake.open_catalog``) and the
identities in the build record.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import intake
import pystac
import pytest

from moczarr.errors import NotFoundError, StorageError
from moczarr_intake import build, update
from moczarr_intake.cli import main
from moczarr_intake.living.record import RECORD_NAME
from tests.faultproxy import FaultProxy
from tests.helpers import link_copy, rewrite_manifest
from tests.s3server import REGION

pytestmark = pytest.mark.filterwarnings("ignore::moczarr.errors.MoczarrWarning")


def published(out: Path) -> dict:
    """The ids and names the catalog at ``out`` publishes, as each document shows them."""
    stac = pystac.Catalog.from_file(str(out / "stac" / "catalog.json"))
    v1 = intake.open_catalog(str(out / "catalog.yaml"))
    v2 = intake.open_catalog(str(out / "catalog_v2.yaml"))
    record = json.loads((out / RECORD_NAME).read_text())
    return {
        "stac": sorted(c.id for c in stac.get_all_collections()),
        "catalogs": sorted(c.id for c in stac.get_children() if not isinstance(c, pystac.Collection)),
        "v1": {name: v1[name].metadata.get("stac_collection") for name in v1 if not name.endswith("_tree")},
        "v2": sorted(v2),
        "record": {s["root"]: s.get("identity") for s in record["stores"]},
    }


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file below ``folder`` with its inode and modification time: what a write would change."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def names(product: str, cid: str) -> dict:
    return {"id": cid, "entry": product}


# -- 1. stable identity ------------------------------------------------------------------------------
def test_a_store_landing_beside_a_recorded_one_renames_nothing(sample, tmp_path, capsys):
    prefix = tmp_path / "stores"
    link_copy(sample / "elevation", prefix / "team_a" / "single")
    out = tmp_path / "cat"
    assert main(["build", str(prefix), "--discover", "--out", str(out)]) == 0
    before = published(out)
    assert before["stac"] == ["moczarr_sample"] and before["v1"] == {"moczarr_sample": "moczarr_sample"}
    link_copy(sample / "elevation", prefix / "team_a" / "versioned")  # team_a now reads as a multi-product root
    capsys.readouterr()
    assert main(["update", str(out)]) == 0
    stdout = capsys.readouterr().out.splitlines()
    assert stdout[0] == f"updated {out}: 0 changed, 1 added, 0 removed, 1 unchanged"
    assert stdout[1:] == ["added: versioned-moczarr_sample", "unchanged: moczarr_sample"]
    after = published(out)
    assert after["stac"] == ["moczarr_sample", "versioned-moczarr_sample"] and after["catalogs"] == []
    assert after["v1"] == {"moczarr_sample": "moczarr_sample", "versioned_moczarr_sample": "versioned-moczarr_sample"}
    assert set(before["v2"]) < set(after["v2"])  # every entry name of before is still there
    assert after["record"] == {
        "../stores/team_a/single": {
            "layout": "bare",
            "products": {"moczarr_sample": names("moczarr_sample", "moczarr_sample")},
        },
        "../stores/team_a/versioned": {
            "layout": "bare",
            "products": {"moczarr_sample": names("versioned_moczarr_sample", "versioned-moczarr_sample")},
        },
    }
    # and the next update keeps both as they are
    assert update(str(out)).written is False


def test_a_multi_product_root_left_with_one_product_keeps_its_ids(sample, tmp_path):
    prefix = tmp_path / "stores"
    link_copy(sample, prefix / "two")
    link_copy(sample / "elevation", prefix / "solo")
    out = tmp_path / "cat"
    assert main(["build", str(prefix), "--discover", "--out", str(out)]) == 0
    before = published(out)
    assert before["catalogs"] == ["two"] and "elevation" in before["stac"]
    shutil.rmtree(prefix / "two" / "elevation_yearly")  # the walk alone would now find two/elevation as a bare store
    result = update(str(out))
    after = published(out)
    assert after["stac"] == sorted(set(before["stac"]) - {"elevation_yearly"}) and after["catalogs"] == ["two"]
    assert after["v1"] == {k: v for k, v in before["v1"].items() if v != "elevation_yearly"}
    assert after["record"]["../stores/two"] == {
        "layout": "multi",
        "products": {"elevation": before["record"]["../stores/two"]["products"]["elevation"]},
        "catalog": "two",
    }
    assert asdict(result.by_id) == {
        "added": [],
        "removed": ["elevation_yearly"],
        "changed": [],
        "unchanged": [before["record"]["../stores/solo"]["products"]["moczarr_sample"]["id"], "elevation"],
        "renamed": [],
    }


def _bare_to_product_folders(sample: Path, store: Path) -> None:
    """The recorded bare store's folder now holds only product folders: its own store as ``x``, another as ``y``."""
    moved = store.with_name(store.name + ".moved")
    store.rename(moved)
    link_copy(moved, store / "x")
    link_copy(sample / "elevation", store / "y")
    shutil.rmtree(moved)


def test_a_folder_that_can_no_longer_be_read_as_before_is_an_error_unless_asked(sample, tmp_path, capsys):
    prefix = tmp_path / "stores"
    store = link_copy(sample / "elevation", prefix / "one" / "store")
    link_copy(sample / "elevation", prefix / "two" / "other")
    out = tmp_path / "cat"
    assert main(["build", str(prefix), "--discover", "--out", str(out)]) == 0
    before, files = published(out), snapshot(out)
    _bare_to_product_folders(sample, store)
    capsys.readouterr()
    assert main(["update", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {store}: can no longer be read as before (read as a bare store, now found as a multi-product "
        "root): its ids would change from store-moczarr_sample to x, y; nothing written: pass --allow-new-ids to "
        "take the new ids\n"
    )
    assert snapshot(out) == files  # nothing written
    assert main(["update", str(out), "--allow-new-ids"]) == 0
    stdout = capsys.readouterr().out.splitlines()
    assert f"renamed: {store}: store-moczarr_sample -> x, y" in stdout
    assert "removed: store-moczarr_sample" in stdout and "added: x, y" in stdout
    after = published(out)
    assert after["stac"] == ["other-moczarr_sample", "x", "y"] and after["catalogs"] == ["store"]
    assert after["record"]["../stores/two/other"] == before["record"]["../stores/two/other"]


@pytest.mark.parametrize("how", ["update of a discovered prefix", "build of the roots into the same --out"])
def test_a_product_name_in_a_second_root_does_not_rename_the_first(sample, tmp_path, how):
    prefix = tmp_path / "stores"
    a = link_copy(sample / "elevation", prefix / "a")
    out = tmp_path / "cat"
    discover = how.startswith("update")
    build([str(prefix if discover else a)], out, progress=False, discover=discover)
    assert published(out)["stac"] == ["moczarr_sample"]
    b = link_copy(sample / "elevation", prefix / "b")  # the same product name: a full build would prefix both
    if discover:
        update(str(out))
    else:
        build([str(a), str(b)], out, progress=False)
    after = published(out)
    assert after["stac"] == ["b-moczarr_sample", "moczarr_sample"]
    assert after["v1"] == {"moczarr_sample": "moczarr_sample", "b_moczarr_sample": "b-moczarr_sample"}
    assert after["record"]["../stores/a"]["products"] == {"moczarr_sample": names("moczarr_sample", "moczarr_sample")}


def test_a_bare_store_whose_manifest_renames_its_product_keeps_its_ids(sample, tmp_path):
    prefix = tmp_path / "stores"
    a = link_copy(sample / "elevation", prefix / "one" / "a")
    link_copy(sample / "elevation", prefix / "two" / "b")
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True)
    before = published(out)
    rewrite_manifest(a, dataset={"short_name": "ATL99", "version": "2"})  # the same folder, the same product
    result = update(str(out))
    assert published(out)["stac"] == before["stac"] == ["a-moczarr_sample", "b-moczarr_sample"]
    assert published(out)["v1"] == before["v1"] and result.by_id.changed == ["a-moczarr_sample"]


def test_a_record_from_before_identities_keeps_the_ids_a_full_build_gave(sample, tmp_path):
    prefix = tmp_path / "stores"
    link_copy(sample / "elevation", prefix / "a")
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True)
    record = json.loads((out / RECORD_NAME).read_text())
    for store in record["stores"]:
        store.pop("identity", None)  # as the releases before identities wrote it
    (out / RECORD_NAME).write_text(json.dumps(record))
    link_copy(sample / "elevation", prefix / "b")
    result = update(str(out))
    assert published(out)["stac"] == ["b-moczarr_sample", "moczarr_sample"]
    assert result.by_id.unchanged == ["moczarr_sample"] and result.by_id.added == ["b-moczarr_sample"]


# -- 2. missing is not deleted -----------------------------------------------------------------------
def test_a_store_being_rewritten_below_a_prefix_is_kept_as_recorded(sample, tmp_path):
    prefix = tmp_path / "stores"
    link_copy(sample / "elevation", prefix / "one" / "a")  # one store a folder: bare roots
    b = link_copy(sample / "elevation", prefix / "two" / "b")
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True)
    before = published(out)
    (b / "morton_hive.json").unlink()  # a digit tree without a manifest: the walk sees it and skips it
    result = update(str(out))
    assert f"kept as recorded: {b}: the walk skipped it (digit trees without a manifest" in "\n".join(result.notes)
    assert published(out)["stac"] == before["stac"] == ["a-moczarr_sample", "b-moczarr_sample"]
    assert result.by_id.removed == [] and result.refresh.removed == []
    shutil.rmtree(b)  # now the walk, which succeeded, finds it gone: removed
    result = update(str(out))
    assert result.by_id.removed == ["b-moczarr_sample"] and published(out)["stac"] == ["a-moczarr_sample"]


def test_a_prefix_that_holds_no_store_any_more_is_an_error_unless_asked(sample, tmp_path, capsys):
    prefix = tmp_path / "stores"
    link_copy(sample / "elevation", prefix / "a")
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True)
    files = snapshot(out)
    shutil.rmtree(prefix / "a")
    capsys.readouterr()
    assert main(["update", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {prefix}: ") and "--remove-missing" in err[0]
    assert snapshot(out) == files


def test_remove_missing_drops_the_stores_of_a_prefix_whose_listing_shows_it_emptied(sample, tmp_path, capsys):
    emptied, kept = tmp_path / "stores", tmp_path / "more"
    link_copy(sample / "elevation", emptied / "a")
    link_copy(sample / "elevation", kept / "b")
    out = tmp_path / "cat"
    build([str(emptied), str(kept)], out, progress=False, discover=True)
    shutil.rmtree(emptied / "a")  # the prefix is there and empty: its listing succeeded
    with pytest.raises(NotFoundError, match=r"an empty folder.*--remove-missing"):
        update(str(out))
    result = update(str(out), remove_missing=True)
    assert result.by_id.removed == ["a-moczarr_sample"] and published(out)["stac"] == ["b-moczarr_sample"]


def test_a_root_that_cannot_be_listed_is_an_error_even_with_remove_missing(sample, tmp_path, s3_server):
    roots = []
    for bucket in ("identity-a", "identity-b"):  # one bucket each: the fault proxy matches paths, not queries
        s3_server.bucket(bucket, public=True)
        s3_server.upload_tree(sample / "elevation", bucket, "store")
        roots.append(f"s3://{bucket}/store")
    out = tmp_path / "cat"
    with FaultProxy(s3_server.endpoint_url) as proxy:
        options = {"anon": True, "client_kwargs": {"endpoint_url": proxy.endpoint_url, "region_name": REGION}}
        build(roots, out, storage_options=options, progress=False)
        files = snapshot(out)
        proxy.add("/identity-b", kind="status", status=403, code="AccessDenied")  # its LIST is denied
        with pytest.raises(StorageError, match="identity-b"):
            update(str(out), storage_options=options, remove_missing=True)
        assert proxy.rules[0].hits > 0
    assert snapshot(out) == files


# -- 3. the report by id -----------------------------------------------------------------------------
def test_the_report_by_id_is_what_the_documents_show(sample, tmp_path):
    prefix = tmp_path / "stores"
    for name in ("a", "b", "c"):
        link_copy(sample / "elevation", prefix / name)
    link_copy(sample, prefix / "two")
    out = tmp_path / "cat"
    build([str(prefix)], out, progress=False, discover=True)
    before = set(published(out)["stac"])
    shutil.rmtree(prefix / "b")
    link_copy(sample / "elevation", prefix / "d")
    rewrite_manifest(prefix / "two" / "elevation_yearly", generated_at="2032-02-02T00:00:00+00:00")
    by_id = update(str(out)).by_id
    after = set(published(out)["stac"])
    assert set(by_id.added) == after - before == {"d-moczarr_sample"}
    assert set(by_id.removed) == before - after == {"b-moczarr_sample"}
    assert by_id.changed == ["elevation_yearly"]
    assert set(by_id.changed) | set(by_id.unchanged) == before & after
    assert not set(by_id.changed) & set(by_id.unchanged)


# -- 7. the build record is checked as it is read ----------------------------------------------------
@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda r: r | {"roots": 5}, "field 'roots' must be a list of strings, not int"),
        (lambda r: r | {"options": None}, "field 'options' must be an object, not null"),
        (lambda r: r | {"discover": "yes"}, "field 'discover' must be true or false, not str"),
        (
            lambda r: r | {"stores": [{k: v for k, v in r["stores"][0].items() if k != "kind"}]},
            "field 'stores[0].kind' must be 'morton-hive' or 'moraine', not missing",
        ),
        (
            lambda r: r | {"stores": [r["stores"][0] | {"identity": {"layout": "bare", "products": {"p": 3}}}]},
            "field 'stores[0].identity.products.p' must be an object with 'id' and 'entry', not int",
        ),
        (
            lambda r: r | {"stores": [r["stores"][0] | {"identity": {"layout": "flat"}}]},
            "field 'stores[0].identity.layout' must be one of 'bare', 'multi', 'pyramid', not 'flat'",
        ),
        (
            lambda r: r | {"stores": [r["stores"][0] | {"facts": {"root": 1}}]},
            "field 'stores[0].facts.root' must be a string, not int",
        ),
    ],
)
@pytest.mark.parametrize("command", ["update", "build"])
def test_a_damaged_record_is_one_line_naming_the_file_and_the_field(sample, tmp_path, capsys, damage, message, command):
    a = link_copy(sample / "elevation", tmp_path / "a")
    out = tmp_path / "cat"
    build([str(a)], out, progress=False)
    record = json.loads((out / RECORD_NAME).read_text())
    (out / RECORD_NAME).write_text(json.dumps(damage(record)))
    files = snapshot(out)
    capsys.readouterr()
    args = ["update", str(out)] if command == "update" else ["build", str(a), "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {out / RECORD_NAME}: {message}; "), err
    assert snapshot(out) == files
