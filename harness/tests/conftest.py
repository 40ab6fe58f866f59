from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from itchbench import paths


@pytest.fixture(scope="session")
def tool():
    """Run a built C++ tool; returns the CompletedProcess (never raises on exit code)."""

    def run(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(paths.tool(name)), *map(str, args)], capture_output=True, text=True)

    return run
