"""What the live transports share: the gateway started and judged, real TCP
subscribers, and the sender watched until it is done.

Every wait has a deadline (runs/deadlines.py). A gateway that ends while the
sender is still sending — a crash, or an idle exit during a pause — fails
the run; only an end of session may race the sender's own exit.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Callable

from ... import rundir
from ..deadlines import SUBSCRIBER_DRAIN_S, gateway_drain_seconds, within
from ..failure import RunError, describe_exit
from ..procs import LineWaiter
from .gateway import judge_exit

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

START_TIMEOUT_S = 15.0


def off_the_gateway_cpu(run: "Run", cmd: list[str]) -> list[str]:
    """The testbench's own processes (sender, pty relay, subscribers) kept off the CPU the gateway's receive
    thread is pinned to: on a machine this small they would otherwise take turns with it and show up as its
    latency. Left as it is when the gateway is not pinned or no other CPU is allowed."""
    cpu = run.values["gateway"]["cpu"]
    others = sorted(set(os.sched_getaffinity(0)) - {cpu}) if cpu >= 0 else []
    if not others:
        return cmd
    run.extras["testbench_cpus"] = others
    return ["taskset", "-c", ",".join(map(str, others)), *cmd]


def _stderr_of(run: "Run") -> str:
    path = run.dir / "gateway.stderr"
    return path.read_text(errors="replace") if path.exists() else ""


def start_gateway(run: "Run", group: "ProcessGroup", cmd: list[str],
                  wrap: Callable[[list[str]], list[str]]) -> subprocess.Popen:
    """Start the gateway and its subscribers; return once it says READY."""
    stderr = open(run.dir / "gateway.stderr", "wb")  # a file: never a pipe nobody drains
    group.on_close(stderr.close)
    gw = group.start("gateway", wrap(cmd), stdout=subprocess.PIPE, stderr=stderr)
    lines = LineWaiter(gw)

    def not_started(what: str, e: Exception) -> RunError:
        if gw.poll() is not None:
            judge_exit(run, gw.returncode, _stderr_of(run))  # raises on a crash or a failure
        return RunError("gateway_failed", f"the gateway did not {what}: {e}")

    try:
        listening = lines.wait_for("LISTENING", START_TIMEOUT_S)
    except TimeoutError as e:
        raise not_started("start", e) from e
    tcp_port = int(re.search(r"tcp=(\d+)", listening).group(1))  # type: ignore[union-attr]
    run.extras["publisher_port"] = tcp_port
    modes = run.values["subscriber_modes"]
    for i in range(run.values["subscribers"]):
        mode = modes[i] if i < len(modes) else "fast"
        out = run.dir / f"subscriber-{i}.bbo"
        cmd_sub = [sys.executable, "-m", "itchbench.runs.subscriber", "--port", str(tcp_port), "--out", str(out),
                   "--mode", mode]
        run.subscriber_procs.append((group.start(f"subscriber-{i}", wrap(off_the_gateway_cpu(run, cmd_sub))), out,
                                     mode))
    try:
        lines.wait_for("READY", START_TIMEOUT_S)
    except TimeoutError as e:
        raise not_started("become ready", e) from e
    return gw


def _stop_reason(run: "Run") -> str:
    try:
        return str(rundir.read_json(run.dir / "gateway.json").get("stop_reason", ""))
    except rundir.RunDirError:
        return ""


def wait_for_sender(run: "Run", group: "ProcessGroup", sender: subprocess.Popen, gw: subprocess.Popen,
                    name: str, expected_s: float, ended_ok: Callable[[], bool] | None = None) -> None:
    """Wait for the sender, with progress; fail the run if it outlives its
    deadline or if the gateway ends before it (but at an end of session: what
    ended_ok says, by default the built-in gateway's stop reason)."""
    ended_ok = ended_ok or (lambda: _stop_reason(run) == "end of session")
    deadline_s = within(expected_s)
    run.extras.setdefault("deadlines_s", {})[name] = round(deadline_s, 1)
    start = time.monotonic()
    next_note = start + 2
    while sender.poll() is None:
        now = time.monotonic()
        if gw.poll() is not None and not ended_ok():
            group.stop(sender)
            judge_exit(run, gw.returncode, _stderr_of(run))  # a crash is named as such
            reason = _stop_reason(run) or describe_exit(gw.returncode)
            raise RunError("gateway_stopped_early",
                           f"the gateway stopped ({reason}) while {name} was still sending, "
                           f"{now - start:.1f} s into ~{expected_s:.0f} s")
        if now - start > deadline_s:
            group.stop(sender)
            raise RunError("deadline", f"{name} did not finish within its deadline of {deadline_s:.0f} s "
                                       f"(expected ~{expected_s:.0f} s)")
        if now >= next_note:
            run.say(f"  {name}: replaying, {now - start:.0f} s of ~{expected_s:.0f} s")
            next_note += 2
        time.sleep(0.05)


def finish_gateway(run: "Run", group: "ProcessGroup", gw: subprocess.Popen) -> None:
    """Wait (bounded) for the gateway's own end, then for the subscribers."""
    drain_s = gateway_drain_seconds(run.values)
    stopped_by_harness = False
    try:
        rc = gw.wait(drain_s)
    except subprocess.TimeoutExpired:
        rc = group.stop(gw)
        stopped_by_harness = True
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
    judge_exit(run, rc if rc is not None else -9, _stderr_of(run))
    if stopped_by_harness:
        raise RunError("deadline", f"the gateway did not stop within {drain_s:.0f} s after the sender finished")
