"""Running the C++ tools, with their errors passed on whole."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Sequence

from . import paths


class ToolError(RuntimeError):
    """A tool exited non-zero; the message carries its stderr, `returncode` its status (2: it refused an argument,
    as every tool does, gateway/util/cli.hpp)."""

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode


def run_tool(name: str, args: Sequence[str | Path], *, ok_codes: Sequence[int] = (0,)) -> subprocess.CompletedProcess[str]:
    cmd = [str(paths.tool(name)), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in ok_codes:
        detail = (proc.stderr or proc.stdout).strip()
        raise ToolError(f"{name} failed (exit {proc.returncode}): {detail}", proc.returncode)
    return proc
