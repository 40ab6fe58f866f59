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


def said(name: str, text: str) -> str:
    """What tool `name` said, for a user who ran an itchbench command, not the tool: its name before each line and
    its "(see NAME --help)" pointer left out (gateway/util/cli.hpp: the tools' one form)."""
    lines = [line.removeprefix(f"{name}: ") for line in text.strip().splitlines() if line != f"(see {name} --help)"]
    return "\n".join(lines)


def run_tool(name: str, args: Sequence[str | Path], *,
             ok_codes: Sequence[int] = (0,)) -> subprocess.CompletedProcess[str]:
    """The tool run to its end; ToolError unless its status is one of ok_codes. A tool that refused an argument (2)
    refused the user's: said as only what it said; any other failure is named as the tool's."""
    cmd = [str(paths.tool(name)), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in ok_codes:
        detail = said(name, proc.stderr or proc.stdout)
        raise ToolError(detail if proc.returncode == 2 else f"{name} failed (exit {proc.returncode}): {detail}",
                        proc.returncode)
    return proc
