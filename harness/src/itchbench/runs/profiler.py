"""[profile]: the gateway sampled by `perf record` while it runs (docs/profile.md). Software clock events where
the machine has no hardware counters (as on these VMs), call graphs unwound from the stack (dwarf: the build has
no frame pointers). Attached to the gateway's own process once it is ready, it ends with it; then the samples
are folded, the flame graph drawn and the hottest functions tabled into the run directory's profile/."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis import flamegraph, profile, switches
from .procs import leaf_process

if TYPE_CHECKING:
    from .procs import ProcessGroup
    from .run import Run

PERF_END_S = 15.0  # perf writes its data after the gateway ends; a large profile takes a few seconds
# perf takes a moment to start and open its events on the gateway's threads; the feed waits for it that long at
# most. Not waited for, a busy machine had it attach after a short run's gateway had done its work: no sample.
PERF_ATTACH_S = 30.0
TOP = 20


def _perf_events_open(pid: int) -> bool:
    """Whether process pid holds a perf event (perf record has opened its events on its target)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]":
                return True
        except OSError:
            continue
    return False


def _perf_script(data: Path, fields: str) -> list[str]:
    """perf script's lines of a perf.data, the fields asked for."""
    done = subprocess.run(["perf", "script", "-i", str(data), "-F", fields], capture_output=True, text=True,
                          errors="replace", env={**os.environ, "PAGER": "cat"})
    return done.stdout.splitlines()


class Profiler:
    def __init__(self, run: "Run", group: "ProcessGroup") -> None:
        self.run, self.group = run, group
        self.dir = run.dir / "profile"
        self.proc: subprocess.Popen | None = None
        self.target = 0

    def attach(self, launcher_pid: int) -> None:
        """perf record on the gateway's process (the leaf of the launcher's chain) and every thread of it; with
        profile.scheduler, a second perf records every context switch on every CPU, on CLOCK_MONOTONIC."""
        p = self.run.values["profile"]
        self.dir.mkdir(exist_ok=True)
        self.target = leaf_process(launcher_pid)
        self.sched = None
        if p["scheduler"]:
            self.sched_err = open(self.dir / "sched.stderr", "wb")
            self.group.on_close(self.sched_err.close)
            events = [arg for event in switches.EVENTS for arg in ("-e", event)]
            self.sched = self.group.start("perf-sched", ["perf", "record", "-a", *events, "-k", "CLOCK_MONOTONIC",
                                                         "-o", str(self.dir / "sched.data")],
                                          stdout=subprocess.DEVNULL, stderr=self.sched_err)
        if not p["samples"]:
            return
        cmd = ["perf", "record", "-F", str(p["frequency"]), "-e", p["event"], "-p", str(self.target),
               "-o", str(self.dir / "perf.data")]
        if p["call_graph"] != "none":
            cmd += ["--call-graph", "dwarf,8192" if p["call_graph"] == "dwarf" else "fp"]
        self.err = open(self.dir / "perf.stderr", "wb")
        self.group.on_close(self.err.close)
        self.proc = self.group.start("perf", cmd, stdout=subprocess.DEVNULL, stderr=self.err)
        self.run.say(f"  profiling the gateway (pid {self.target}): perf record -e {p['event']} -F {p['frequency']}")
        deadline = time.monotonic() + PERF_ATTACH_S
        while not _perf_events_open(self.proc.pid) and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if not _perf_events_open(self.proc.pid):  # said in the profile's error, if nothing is recorded then
            self.run.say(f"  perf has not attached to the gateway within {PERF_ATTACH_S:g} s; the feed goes on")

    def finish(self) -> None:
        """After the gateway ended: perf's end, then the folded stacks, the flame graph and the table; the
        scheduler's time line parsed into profile/switches.npz."""
        if self.sched is not None:
            self.sched.send_signal(signal.SIGINT)  # system-wide: it does not end with the gateway
            self.group.stop(self.sched, timeout=PERF_END_S)
            self._switches()
        if self.proc is None:
            return
        try:
            self.proc.wait(PERF_END_S)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGINT)  # perf writes what it has and ends
            self.group.stop(self.proc, timeout=PERF_END_S)
        self.run.extras["profile"] = self._analyse()

    def _switches(self) -> None:
        data = self.dir / "sched.data"
        info: dict[str, Any] = {"recorded": False}
        if data.is_file() and data.stat().st_size:
            found = switches.Switches.parse(_perf_script(data, switches.FIELDS))
            found.save(self.dir / "switches.npz")
            info = {"recorded": True, "switches": int(found.t_ns.size), "interrupts": int(found.irq_t_ns.size),
                    "migrations": int(found.moved_t_ns.size), "file": "profile/switches.npz"}
        self.run.extras["scheduler_trace"] = info

    def _analyse(self) -> dict[str, Any]:
        p = self.run.values["profile"]
        out: dict[str, Any] = {"event": p["event"], "frequency": p["frequency"], "call_graph": p["call_graph"],
                               "pid": self.target, "perf_exit": self.proc.returncode if self.proc else None}
        data = self.dir / "perf.data"
        if not data.is_file() or data.stat().st_size == 0:
            said = (self.dir / "perf.stderr").read_text(errors="replace").strip().splitlines()
            out["error"] = "perf recorded nothing" + (f": {said[-1]}" if said else "")
            return out
        stacks = profile.fold(_perf_script(data, "comm,tid,period,ip,sym"))
        folded = self.dir / "folded.txt"
        folded.write_text("".join(f"{s} {n}\n" for s, n in sorted(stacks.items())))
        title = f"{self.run.label}: {p['event']} at {p['frequency']} Hz, {sum(stacks.values()):,} samples"
        drawn = flamegraph.write(self.dir / "flamegraph.svg", stacks, title)
        out.update({"samples": sum(stacks.values()), "stacks": len(stacks), "flamegraph": "profile/flamegraph.svg"
                    if drawn else None, "perf_data_bytes": data.stat().st_size,
                    "top": [h.__dict__ for h in profile.hottest(stacks, TOP)]})
        return out
