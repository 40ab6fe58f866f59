"""`itchbench sim`: the gateway on a capture in deterministic simulation."""

from __future__ import annotations

from pathlib import Path

from . import rundir, runner, scenario
from .runner import CaptureError, RunError

__all__ = ["run_sim", "CaptureError", "IncompleteRun"]


class IncompleteRun(RuntimeError):
    """The run ended early; its directory says so and holds what was processed."""


def run_sim(capture: Path, out: Path | None = None, *, echo: bool = True, latency_log: bool = True) -> Path:
    """Run the gateway on a capture in simulation; returns the run directory."""
    capture = runner.check_capture(Path(capture))
    values = scenario.defaults(name="sim", transport="sim", capture=str(capture))
    values["gateway"]["latency_log"] = latency_log
    try:
        run = runner.execute(values, "sim", run_dir=Path(out) if out else None, echo=echo, command="itchbench sim")
    except RunError as e:
        raise CaptureError(str(e).removeprefix("sim: ")) from e
    summary = rundir.read_json(run / "summary.json")
    if not summary["complete"]:
        raise IncompleteRun(f"run INCOMPLETE, see {run}/summary.json: {summary['error']}")
    return run
