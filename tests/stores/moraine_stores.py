"""Moraine pyramids for the test suite (placeholder until the writer lands)."""
from pathlib import Path

def write_all(out: Path) -> None:
    out.mkdir()
