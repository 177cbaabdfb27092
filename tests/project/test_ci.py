"""``.ci/run`` runs README.md's test command, verbatim, and the shared layer as a selection of it."""

from __future__ import annotations

import re
import shlex

from tests.helpers import REPO

README_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)


def readme_test_command() -> str:
    commands = [b.strip() for b in README_BLOCK.findall((REPO / "README.md").read_text()) if "pytest" in b]
    assert len(commands) == 1, commands  # one test command, the one a newcomer types
    return commands[0]


def ci_assignment(name: str) -> str:
    match = re.search(rf"^{name}=(\".*\")$", (REPO / ".ci" / "run").read_text(), re.M)
    assert match, f".ci/run sets no {name}"
    return shlex.split(match.group(1))[0]


def test_ci_runs_the_readme_test_command():
    assert ci_assignment("readme_tests") == readme_test_command()


def test_the_shared_run_is_the_readme_pytest_command_on_one_layer():
    pytest_part = readme_test_command().rsplit("&& ", 1)[1]
    script = (REPO / ".ci" / "run").read_text()
    assert f"{pytest_part} --layer shared" in script
    assert script.count('bash -c "$readme_tests"') == 2  # here outside CI, in the bare clone under CI
