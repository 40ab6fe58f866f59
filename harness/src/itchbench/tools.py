"""Running the C++ tools, with their errors passed on whole."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Sequence

from . import paths


class ToolError(RuntimeError):
    """A tool exited non-zero; the message carries its stderr."""


def run_tool(name: str, args: Sequence[str | Path], *, ok_codes: Sequence[int] = (0,)) -> subprocess.CompletedProcess[str]:
    cmd = [str(paths.tool(name)), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in ok_codes:
        detail = (proc.stderr or proc.stdout).strip()
        raise ToolError(f"{name} failed (exit {proc.returncode}): {detail}")
    return proc


def inspect_capture(capture: Path, port: int | None = None) -> dict[str, Any]:
    """itch-inspect --json: per-type counts, framing and sequence accounting."""
    args: list[str | Path] = [capture, "--json"]
    if port is not None:
        args += ["--port", str(port)]
    proc = run_tool("itch-inspect", args, ok_codes=(0, 1))
    return json.loads(proc.stdout)


def rejections(report: dict[str, Any]) -> dict[str, int]:
    """Every rejection counted in an itch-inspect or itch-gateway report, by reason."""
    dec, mold, cap = report["decode"], report["mold"], report["capture_stats"]
    return {
        "unknown_type": dec["rejected_unknown_type"],
        "wrong_length": dec["rejected_wrong_length"],
        "empty_message": dec["rejected_empty"],
        "mold_too_short": mold["rejected_too_short"],
        "mold_length_overrun": mold["rejected_length_overrun"],
        "mold_count_mismatch": mold["rejected_count_mismatch"],
        "bad_frames": cap["bad_frames"],
    }


def message_sequences(capture: Path) -> list[int]:
    """Sequence number of every message, in capture order."""
    proc = run_tool("itch-inspect", [capture, "--list"], ok_codes=(0, 1))
    return [int(line.split()[0]) for line in proc.stdout.splitlines()]
