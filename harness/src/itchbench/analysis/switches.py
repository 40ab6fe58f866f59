"""The scheduler's time line of a run (profile.scheduler: `perf record -a -e sched:sched_switch`, CLOCK_MONOTONIC
stamps): every context switch on every CPU, parsed from `perf script` once into arrays, and asked, for a slow
message's interval, whether the gateway's hot thread was preempted in it and which other tasks had its CPU."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

# perf script -F cpu,time,trace:  "[001] 29920.117801: prev_comm=perf prev_pid=32421 prev_prio=120 prev_state=R ==>
# next_comm=migration/0 next_pid=18 next_prio=0"
_LINE = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d+):.*?prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> "
                   r"next_comm=(.*?) next_pid=(\d+)")


@dataclass(frozen=True)
class Switches:
    cpu: np.ndarray        # int16
    t_ns: np.ndarray       # int64, CLOCK_MONOTONIC
    prev_pid: np.ndarray   # int64
    preempted: np.ndarray  # bool: the previous task was still runnable (prev_state R: an involuntary switch)
    next_pid: np.ndarray   # int64
    next_comm: np.ndarray  # object (str)

    @staticmethod
    def parse(lines: Iterable[str]) -> "Switches":
        rows = [m.groups() for m in map(_LINE.search, lines) if m]
        if not rows:
            e = np.empty(0, np.int64)
            return Switches(e.astype(np.int16), e, e, e.astype(bool), e, e.astype(object))
        cpu, sec, frac, _, prev_pid, state, next_comm, next_pid = zip(*rows)
        t = np.array(sec, np.int64) * 1_000_000_000 + np.array([int(f.ljust(9, "0")[:9]) for f in frac], np.int64)
        order = np.argsort(t, kind="stable")
        return Switches(np.array(cpu, np.int16)[order], t[order], np.array(prev_pid, np.int64)[order],
                        np.array([s.startswith("R") for s in state])[order], np.array(next_pid, np.int64)[order],
                        np.array(next_comm, object)[order])

    def save(self, path: Path) -> None:
        np.savez_compressed(path, cpu=self.cpu, t_ns=self.t_ns, prev_pid=self.prev_pid, preempted=self.preempted,
                            next_pid=self.next_pid, next_comm=self.next_comm.astype(str))

    @staticmethod
    def load(path: Path) -> "Switches":
        z = np.load(path)
        return Switches(z["cpu"], z["t_ns"], z["prev_pid"], z["preempted"], z["next_pid"],
                        z["next_comm"].astype(object))

    def who_took(self, hot_tid: int, start_ns: int, end_ns: int) -> tuple[bool, list[str]]:
        """In [start, end]: whether the hot thread was switched out while runnable, and the other tasks that ran on
        the CPU it came back on before it did (idle excluded)."""
        lo, hi = np.searchsorted(self.t_ns, [start_ns, end_ns], side="left")
        window = slice(lo, hi)
        preempted = bool(((self.prev_pid[window] == hot_tid) & self.preempted[window]).any())
        back = np.nonzero(self.next_pid[window] == hot_tid)[0]
        if back.size:  # the CPU it came back on, and who ran there in the window before it did
            at = lo + int(back[-1])
            on_cpu = (self.cpu[lo:at] == self.cpu[at]) & (self.next_pid[lo:at] != hot_tid) & (self.next_pid[lo:at] != 0)
            taken = sorted(set(self.next_comm[lo:at][on_cpu]))
        else:
            taken = []
        return preempted, taken
