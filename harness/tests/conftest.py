from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest

from itchbench import paths

# Orphans of the runs the tests make (a gateway whose shell died, say) come back to this process rather than to
# init, so the tests' check for leftover processes (live_helpers.leftover_processes) sees them, and only ours.
_PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1)


@pytest.fixture(scope="session")
def tool():
    """Run a built C++ tool; returns the CompletedProcess (never raises on exit code)."""

    def run(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(paths.tool(name)), *map(str, args)], capture_output=True, text=True)

    return run
