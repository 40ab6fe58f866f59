"""The gateway process: its command line, and how its end is judged."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

from ... import paths
from .. import environment
from ..failure import RunError, describe_exit, tail

if TYPE_CHECKING:
    from ..run import Run


def gateway_args(run: "Run") -> list[str]:
    g = run.values["gateway"]
    args = [str(paths.tool("itch-gateway")), "--out", str(run.dir), "--run-id", run.run_id,
            "--commit", environment.commit_label(run.env["git"]), "--expected-orders", str(g["expected_orders"])]
    if not g["latency_log"]:
        args.append("--no-latency-log")
    if g["stamps"] != "all":  # named only when asked: older revisions' gateways (compare) know no --stamps
        args += ["--stamps", g["stamps"]]
    if g["cpu"] >= 0:
        args += ["--cpu", str(g["cpu"])]
    if run.values["transport"] == "sim":
        return args
    args += ["--idle-exit-ms", str(g["idle_exit_ms"]), "--subscriber-queue", str(g["subscriber_queue"]),
             "--slow-subscriber", g["slow_subscriber"], "--wait-subscribers", str(run.values["subscribers"])]
    if g["publisher_cpu"] >= 0:
        args += ["--publisher-cpu", str(g["publisher_cpu"])]
    if g["sched_fifo"] > 0:
        args += ["--sched-fifo", str(g["sched_fifo"])]
    if g["mlockall"]:
        args.append("--mlockall")
    return args


def judge_exit(run: "Run", returncode: int, stderr: str) -> None:
    """Record how the gateway ended; a crash or a failure is a RunError.
    Exit 0 is a normal end, 1 an input that ended early (its gateway.json
    says why), 2 a failure to start or run; a signal is a crash."""
    run.extras["gateway_exit"] = returncode
    run.extras["gateway_exit_described"] = describe_exit(returncode)
    if stderr.strip():
        run.extras["gateway_stderr_tail"] = tail(stderr)
    if returncode < 0:
        raise RunError("gateway_crashed", f"the gateway was {describe_exit(returncode)}"
                       + (f"; its stderr ends: {tail(stderr, 4, 400)}" if stderr.strip() else "; no stderr"))
    if returncode not in (0, 1):
        detail = tail(stderr, 4, 600).replace("itch-gateway: ", "") or "no stderr"
        raise RunError("gateway_failed", f"the gateway {describe_exit(returncode)}: {detail}")


def read_stderr(proc: subprocess.Popen) -> str:
    if proc.stderr is None:
        return ""
    data = proc.stderr.read()
    return data.decode(errors="replace") if isinstance(data, bytes) else data
