"""The type checker reads all of seri_lsp/ and finds nothing (the settings are
pyproject.toml's `[tool.mypy]`); a failure shows mypy's report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# A group of its own: one worker runs mypy (a few seconds, one core) while the others
# go on with the suite; early, so it is not the last test still running.
@pytest.mark.early
@pytest.mark.xdist_group("mypy")
def test_mypy_finds_no_type_errors_in_seri_lsp() -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-color-output", "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert checked.returncode == 0, f"mypy found type errors:\n{checked.stdout}{checked.stderr}"
