"""Real TCP subscribers on a gateway's BBO publisher (contract [subscribers]):
started as soon as the gateway names its port, drained after it ends."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING, Callable

from ... import rundir
from ..deadlines import SUBSCRIBER_DRAIN_S
from .live import off_the_gateway_cpu

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run


def starter(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]]) -> Callable[[int], None]:
    """What to call with the gateway's publisher port: starts the scenario's subscribers on it."""
    def start(port: int) -> None:
        run.extras["publisher_port"] = port
        modes = run.values["subscriber_modes"]
        for i in range(run.values["subscribers"]):
            mode = modes[i] if i < len(modes) else "fast"
            out = run.dir / f"subscriber-{i}.bbo"
            cmd = [sys.executable, "-m", "itchbench.runs.subscriber", "--port", str(port), "--out", str(out),
                   "--mode", mode]
            run.subscriber_procs.append((group.start(f"subscriber-{i}", wrap(off_the_gateway_cpu(run, cmd))), out,
                                         mode))
    return start


def finish(run: "Run", group: "ProcessGroup") -> None:
    """After the gateway has ended: each subscriber's end (a fast one has SUBSCRIBER_DRAIN_S to see the close)."""
    results = []
    for i, (proc, out, mode) in enumerate(run.subscriber_procs):
        timed_out = False
        if mode == "fast":
            try:
                proc.wait(SUBSCRIBER_DRAIN_S)
            except subprocess.TimeoutExpired:
                timed_out = True
        group.stop(proc)
        info_path = out.with_suffix(".json")
        info = rundir.read_json(info_path) if info_path.exists() else {}
        results.append({"index": i, "file": out.name, "mode": mode, "bytes": out.stat().st_size if out.exists() else 0,
                        "exit": proc.returncode, "timed_out": timed_out,
                        "local_ports": info.get("local_ports", [])})
    run.extras["subscribers"] = results
