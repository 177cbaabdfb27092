"""The generated stores hold what their goldens (computed from the input points) say, read straight from disk."""

from __future__ import annotations

import json

import pytest

from tests.helpers import generated_dir, load_json
from tests.stores.zagg_stores import STORES

ZAGG = [name for name in STORES if name.startswith("zagg/")]


def _leaves_on_disk(product_root):
    """Leaf folder names (``{id}[_{window}]``) under a product: the ``.zarr`` folders whose id is their path
    (one digit per folder), which leaves out versions and the overview and column objects."""
    out = set()
    for leaf in product_root.rglob("*.zarr"):
        rel = leaf.relative_to(product_root)
        stem = leaf.name[: -len(".zarr")]
        if "".join(rel.parts[:-1]) == stem.split("_")[0]:
            out.add(stem)
    return out


@pytest.mark.parametrize("name", ZAGG)
def test_leaf_rosters_on_disk_match_the_golden(name):
    golden = load_json(generated_dir() / name / "golden.json")
    store = generated_dir() / name / "store"
    for key, product in golden["products"].items():
        root = store if key == "." else store / product["path"]
        assert _leaves_on_disk(root) == set(product["leaves"]) | set(product["debris_leaves"]), key
        for debris in product["debris_leaves"]:
            (leaf,) = root.rglob(f"{debris}.zarr")
            assert "morton_hive_commit" not in json.loads((leaf / "zarr.json").read_text())["attributes"]


def test_superseded_versions_stay_beside_the_current_one():
    golden = load_json(generated_dir() / "zagg/versioned/golden.json")["products"]["."]
    store = generated_dir() / "zagg/versioned/store"
    assert any(lv["expected_versions"] == 2 for lv in golden["leaves"].values())
    for key, leaf in golden["leaves"].items():
        (path,) = store.rglob(f"{key}.zarr")
        versions = sorted(p.name for p in path.iterdir() if p.name.startswith("run-"))
        assert len(versions) == leaf["expected_versions"], key
        current = json.loads((path / "zarr.json").read_text())["attributes"]["morton_hive_commit"]["current"]
        assert current in versions
