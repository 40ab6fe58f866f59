"""What the live transports share: the testbench's processes kept off the
gateway's CPU, and the sender watched until it is done.

Every wait has a deadline (runs/deadlines.py). A gateway that ends while the
sender is still sending — a crash, or an idle exit during a pause — fails
the run; only an end of session may race the sender's own exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING, Any, Callable

from ..deadlines import within
from ..failure import RunError

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run


def capture_ended_early(facts: dict[str, Any], then: str) -> RunError | None:
    """The capture's own early end (itch-inspect's facts of it: cut short, or malformed), where every path stops
    as the simulation's run of it does (`input_ended_early`), with what the path did then; None for a whole
    capture."""
    if facts.get("complete", True):
        return None
    return RunError("input_ended_early", f"the capture ends early: {facts.get('error') or 'no reason given'}; {then}")


def sender_failure(sender: str, facts: dict[str, Any], words: str) -> RunError:
    """Why a sender failed: the capture's own early end, or else the sender's failure, in its words."""
    return capture_ended_early(facts, f"{sender} failed on it") or RunError("sender_failed", words)


def gateway_cpus(run: "Run") -> set[int]:
    """The CPUs the gateway's threads are pinned to (gateway.cpu, placement.threads); empty: none."""
    taken = {run.values["gateway"]["cpu"]} - {-1}
    return taken | {t["cpu"] for t in run.values["placement"]["threads"] if "cpu" in t}


def off_the_gateway_cpu(run: "Run", cmd: list[str]) -> list[str]:
    """The testbench's own processes (sender, pty relay, subscribers) kept off the CPUs the gateway's threads are
    pinned to (gateway_cpus): on a machine this small they would otherwise take turns with it and show up as its
    latency. Left as it is when the gateway is not pinned or no other CPU is allowed."""
    taken = gateway_cpus(run)
    others = sorted(set(os.sched_getaffinity(0)) - taken) if taken else []
    if not others:
        return cmd
    run.extras["testbench_cpus"] = others
    return ["taskset", "-c", ",".join(map(str, others)), *cmd]


def stop_sender(run: "Run", group: "ProcessGroup", sender: subprocess.Popen) -> None:
    """Stops a sender before its end with SIGINT, on which each says what it sent (tcpreplay prints its statistics
    only then, not on SIGTERM; udp-replay and serial-replay close their send logs and report), and notes it."""
    group.stop(sender, sig=signal.SIGINT)
    run.extras["sender_stopped"] = True


def wait_for_sender(run: "Run", group: "ProcessGroup", sender: subprocess.Popen, name: str, expected_s: float,
                    gateway_gone: Callable[[float], RunError | None]) -> None:
    """Wait for the sender, with progress; fail the run if it outlives its deadline or if the gateway ends before
    it: gateway_gone(seconds sending so far) is the failure to raise, or None while that is not so."""
    deadline_s = within(expected_s)
    run.extras.setdefault("deadlines_s", {})[name] = round(deadline_s, 1)
    start = time.monotonic()
    next_note = start + 2
    while sender.poll() is None:
        now = time.monotonic()
        gone = gateway_gone(now - start)
        if gone is not None:
            stop_sender(run, group, sender)
            raise gone
        if now - start > deadline_s:
            stop_sender(run, group, sender)
            raise RunError("deadline", f"{name} did not finish within its deadline of {deadline_s:.0f} s "
                                       f"(expected ~{expected_s:.0f} s)")
        if now >= next_note:
            run.say(f"  {name}: replaying, {now - start:.0f} s of ~{expected_s:.0f} s")
            next_note += 2
        time.sleep(0.05)
