"""A capture in deterministic simulation, as one run (itchbench sim)."""

from __future__ import annotations

from pathlib import Path

from ..captures.inspect import check_capture
from . import runner, scenario


def run_sim(capture: Path, out: Path | None = None, *, echo: bool = True, latency_log: bool = True,
            feed: str = "", levels: int | str = 0) -> Path:
    """Run the gateway on a capture in simulation; returns the run directory,
    whose summary.json holds the verdict."""
    capture = check_capture(Path(capture), feed)
    values = scenario.defaults(name="sim", transport="sim", capture=str(capture), feed=feed)
    values["gateway"]["latency_log"] = latency_log
    values["levels"] = levels
    return runner.execute(values, "sim", run_dir=Path(out) if out else None, echo=echo, command="itchbench sim")
