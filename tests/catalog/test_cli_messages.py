"""What ``moczarr-catalog`` says to a person: help in plain text with examples, its version, the usage of the
command a mistyped flag was given to, one ``error:`` line for a path it cannot use, a quiet exit when its reader
closes the pipe, one line and 130 when interrupted, and no progress bar drawn into a log.

Every test runs the installed command as a subprocess (:func:`tests.test_catalog_cli.run`).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from tests.helpers import REPO
from tests.helpers import catalog_script as script
from tests.helpers import run_catalog as run

SAMPLE = REPO / "catalogs" / "sample"
COMMANDS = ["build", "show", "demo", "verify", "update", "publish", "serve"]
#: reST and Sphinx markup a terminal shows as noise
MARKUP = re.compile(r"``|:(func|class|mod|data|meth|attr):")

pytestmark = pytest.mark.subprocess


def positionals(help_text: str) -> dict[str, str]:
    """The ``positional arguments:`` section of a ``--help``: each name and its help text."""
    section = help_text.split("positional arguments:\n", 1)[1].split("\n\n", 1)[0]
    found: dict[str, str] = {}
    for line in section.splitlines():
        name, _, text = line.strip().partition(" ")
        if line.startswith("  ") and not line.startswith("   "):
            found[name] = text.strip()
        elif found:
            found[list(found)[-1]] += " " + line.strip()
    return found


def test_the_top_level_help_is_plain_text_with_examples_and_exit_statuses(tmp_path):
    done = run("--help", cwd=tmp_path)
    assert done.returncode == 0
    assert not MARKUP.search(done.stdout), done.stdout
    assert "examples:" in done.stdout and "exit status" in done.stdout
    for command in COMMANDS:
        assert re.search(rf"^    {command}\s+\S", done.stdout, re.M), command


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_a_description_examples_and_help_for_its_positionals(tmp_path, command):
    done = run(command, "--help", cwd=tmp_path)
    assert done.returncode == 0
    text = done.stdout
    assert not MARKUP.search(text), text
    description = text.split("\n\n", 2)[1]
    assert not description.startswith(("positional arguments", "options")) and len(description.split()) > 8
    examples = text.split("examples:\n", 1)[1].splitlines()
    assert examples and all(line.startswith(f"  moczarr-catalog {command}") for line in examples)
    if "positional arguments:" in text:
        given = positionals(text)
        assert given and all(given.values()), given


def test_version_is_moczarrs(tmp_path):
    done = run("--version", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == f"moczarr-catalog {importlib.metadata.version('moczarr')}"


def test_a_mistyped_flag_prints_the_commands_usage_and_the_flag_meant(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "sample")
    done = run("build", "sample", "--out", "cat", "--hrefbase", "https://h/s", cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "cat").exists()
    assert done.stderr.startswith("usage: moczarr-catalog build ")
    assert done.stderr.splitlines()[-1] == (
        "moczarr-catalog build: error: unrecognized arguments: --hrefbase https://h/s (did you mean --href-base?)"
    )


def test_demo_into_a_file_is_one_line_about_out(tmp_path):
    (tmp_path / "README.md").write_text("mine\n")
    done = run("demo", "--out", "README.md", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: --out README.md is a file") and "Error" not in line
    assert (tmp_path / "README.md").read_text() == "mine\n"


def test_a_reader_closing_the_pipe_ends_the_command_quietly(tmp_path):
    """``show ... | head``: the reader is gone before the command writes; exit 141 (128 + SIGPIPE, as the shell
    reports a command a pipe ended) and nothing on stderr."""
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    reader, writer = os.pipe()
    os.close(reader)  # closed before the command starts: its first write meets a closed pipe
    try:
        done = subprocess.run(
            [sys.executable, script(), "show", str(SAMPLE)],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
    finally:
        os.close(writer)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""


def test_an_interrupt_is_one_line_and_130(tmp_path):
    """A real SIGINT at a pause point of a build (the test hook of ``moczarr_intake.living.staging``)."""
    shutil.copytree(SAMPLE, tmp_path / "sample")
    env = {**os.environ, "MOCZARR_CATALOG_PAUSE": "staged", "NO_PROXY": "127.0.0.1,localhost"}
    proc = subprocess.Popen(
        [sys.executable, script(), "build", "sample", "--out", "cat"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert first.strip() == "moczarr-catalog: paused at staged"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert err.splitlines() == ["error: interrupted"]
    assert not (tmp_path / "cat").exists()


def test_verify_draws_no_progress_bar_into_a_log(tmp_path):
    """stderr a file (a log, cron mail): no bar, no carriage returns; the report on stdout as always."""
    done = run("verify", str(SAMPLE), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "OK" in done.stdout.splitlines()[0]
