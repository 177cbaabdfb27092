"""Every ```python block in README.md and docs/*.md runs (blocks marked ``notest`` excepted).

Blocks run in order per page, in one namespace, from the repository root, so
pages may build on earlier blocks.
"""

from __future__ import annotations

import re
import warnings

import pytest

from .conftest import REPO, SHARED_ONLY, fixtures_dir, layer_dir

BLOCK = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
# pages with at least one runnable block (api.md is a table of names only)
PAGES = [
    page
    for page in sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
    if any("notest" not in m.group(1) for m in BLOCK.finditer(page.read_text()))
]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run(page, monkeypatch):
    text = page.read_text()
    blocks = [(m.group(1).strip(), m.group(2)) for m in BLOCK.finditer(text)]
    runnable = [code for flags, code in blocks if "notest" not in flags]
    if "../shared/fixtures" in text:  # the examples read the stores of the running layer (or shared-only ones)
        shared_only = any(f"../shared/fixtures/{name}" in text for name in SHARED_ONLY)
        text = text.replace("../shared/fixtures", str(fixtures_dir() if shared_only else layer_dir()))
        blocks = [(m.group(1).strip(), m.group(2)) for m in BLOCK.finditer(text)]
        runnable = [code for flags, code in blocks if "notest" not in flags]
    monkeypatch.chdir(REPO)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for code in runnable:
            exec(compile(code, f"{page.name}", "exec"), namespace)
