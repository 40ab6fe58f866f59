"""The scheduler's time line of a run (profile.scheduler: `perf record -a` of sched:sched_switch, irq:irq_handler_entry,
irq:softirq_entry and sched:sched_migrate_task, CLOCK_MONOTONIC stamps): every context switch, interrupt handler,
softirq and migration on every CPU, parsed from `perf script` once into arrays, and asked, for a slow message's
interval, whether the gateway's hot thread was preempted or moved in it, which other tasks had its CPU, and which
interrupts and softirqs ran there."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterable

import numpy as np

EVENTS = ("sched:sched_switch", "irq:irq_handler_entry", "irq:softirq_entry", "sched:sched_migrate_task")
FIELDS = "cpu,time,event,trace"  # perf script -F

# perf script -F cpu,time,event,trace, e.g.
#   [001] 29920.117801: sched:sched_switch: prev_comm=perf prev_pid=32421 prev_prio=120 prev_state=R ==>
#       next_comm=migration/0 next_pid=18 next_prio=0
#   [001] 39361.808070: irq:softirq_entry: vec=7 [action=SCHED]
#   [001] 39361.929984: irq:irq_handler_entry: irq=36 name=virtio1-req.0
#   [000] 39361.792104: sched:sched_migrate_task: comm=perf pid=2639 prio=120 orig_cpu=0 dest_cpu=1
_HEAD = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):\s(.*)")
_SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) "
                     r"next_pid=(\d+)")
_SOFTIRQ = re.compile(r"\[action=(\w+)\]")
_IRQ = re.compile(r"irq=(\d+) name=(\S+)")
_MIGRATE = re.compile(r" pid=(\d+) .*orig_cpu=(\d+) dest_cpu=(\d+)")


def _ns(sec: str, frac: str) -> int:
    return int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


@dataclass(frozen=True)
class Switches:
    cpu: np.ndarray        # int16
    t_ns: np.ndarray       # int64, CLOCK_MONOTONIC
    prev_pid: np.ndarray   # int64
    preempted: np.ndarray  # bool: the previous task was still runnable (prev_state R: an involuntary switch)
    next_pid: np.ndarray   # int64
    next_comm: np.ndarray  # object (str)
    # Interrupt handlers and softirqs entered: the CPU, when, and what ("softirq NET_RX", "irq virtio0-input.0").
    irq_cpu: np.ndarray    # int16
    irq_t_ns: np.ndarray   # int64
    irq_what: np.ndarray   # object (str)
    # Tasks moved to another CPU.
    moved_pid: np.ndarray  # int64
    moved_t_ns: np.ndarray  # int64

    @staticmethod
    def parse(lines: Iterable[str]) -> "Switches":
        switches, irqs, moves = [], [], []
        for line in lines:
            head = _HEAD.search(line)
            if not head:
                continue
            cpu, sec, frac, event, rest = head.groups()
            if event == "sched:sched_switch" and (m := _SWITCH.search(rest)):
                _, prev_pid, state, next_comm, next_pid = m.groups()
                switches.append((int(cpu), _ns(sec, frac), int(prev_pid), state.startswith("R"), int(next_pid),
                                 next_comm))
            elif event == "irq:softirq_entry" and (m := _SOFTIRQ.search(rest)):
                irqs.append((int(cpu), _ns(sec, frac), f"softirq {m.group(1)}"))
            elif event == "irq:irq_handler_entry" and (m := _IRQ.search(rest)):
                irqs.append((int(cpu), _ns(sec, frac), f"irq {m.group(2)}"))
            elif event == "sched:sched_migrate_task" and (m := _MIGRATE.search(rest)):
                moves.append((_ns(sec, frac), int(m.group(1))))
        s = sorted(switches, key=lambda r: r[1])
        i = sorted(irqs, key=lambda r: r[1])
        v = sorted(moves)
        col = lambda rows, k, dtype: np.array([r[k] for r in rows], dtype)  # noqa: E731
        return Switches(col(s, 0, np.int16), col(s, 1, np.int64), col(s, 2, np.int64), col(s, 3, bool),
                        col(s, 4, np.int64), col(s, 5, object), col(i, 0, np.int16), col(i, 1, np.int64),
                        col(i, 2, object), col(v, 1, np.int64), col(v, 0, np.int64))

    def save(self, path: Path) -> None:
        np.savez_compressed(path, cpu=self.cpu, t_ns=self.t_ns, prev_pid=self.prev_pid, preempted=self.preempted,
                            next_pid=self.next_pid, next_comm=self.next_comm.astype(str), irq_cpu=self.irq_cpu,
                            irq_t_ns=self.irq_t_ns, irq_what=self.irq_what.astype(str), moved_pid=self.moved_pid,
                            moved_t_ns=self.moved_t_ns)

    @staticmethod
    def load(path: Path) -> "Switches":
        z = np.load(path)
        empty = np.empty(0, np.int64)
        get = lambda k, like: z[k] if k in z.files else like  # noqa: E731  (a trace of switches alone: older runs)
        return Switches(z["cpu"], z["t_ns"], z["prev_pid"], z["preempted"], z["next_pid"],
                        z["next_comm"].astype(object), get("irq_cpu", empty.astype(np.int16)),
                        get("irq_t_ns", empty), get("irq_what", empty.astype(str)).astype(object),
                        get("moved_pid", empty), get("moved_t_ns", empty))

    @property
    def span(self) -> tuple[int, int]:
        """The first and last event recorded, of any kind (0, -1: none)."""
        times = [a for a in (self.t_ns, self.irq_t_ns, self.moved_t_ns) if a.size]
        return (min(int(a[0]) for a in times), max(int(a[-1]) for a in times)) if times else (0, -1)

    def who_took(self, hot_tid: int, start_ns: int, end_ns: int) -> tuple[bool, list[str]]:
        """In [start, end]: whether the hot thread was switched out while runnable, and the other tasks that ran on
        the CPU it came back on before it did (idle excluded)."""
        lo, hi = np.searchsorted(self.t_ns, [start_ns, end_ns], side="left")
        window = slice(lo, hi)
        preempted = bool(((self.prev_pid[window] == hot_tid) & self.preempted[window]).any())
        back = np.nonzero(self.next_pid[window] == hot_tid)[0]
        if back.size:  # the CPU it came back on, and who ran there in the window before it did
            at = lo + int(back[-1])
            cpu = int(self.cpu[at])
            on_cpu = (self.cpu[lo:at] == cpu) & (self.next_pid[lo:at] != hot_tid) & (self.next_pid[lo:at] != 0)
            taken = set(self.next_comm[lo:at][on_cpu])
            holder = self._running_at(cpu, lo)  # the task on that CPU when the window opened holds it too
            if holder >= 0 and self.next_pid[holder] not in (hot_tid, 0):
                taken.add(self.next_comm[holder])
        else:
            taken = set()
        return preempted, sorted(taken)

    @cached_property
    def _by_cpu(self) -> dict[int, np.ndarray]:
        return {int(c): np.nonzero(self.cpu == c)[0] for c in np.unique(self.cpu)}

    def _running_at(self, cpu: int, index: int) -> int:
        """The switch that put on the CPU the task running there just before switch `index` (-1: none seen)."""
        mine = self._by_cpu.get(cpu, np.empty(0, np.int64))
        k = int(np.searchsorted(mine, index, side="left")) - 1
        return int(mine[k]) if k >= 0 else -1

    def cpus_of(self, tid: int, at_ns: np.ndarray) -> np.ndarray:
        """For each time, the CPU the thread was last switched in on at or before it (-1: not seen yet)."""
        ins = np.nonzero(self.next_pid == tid)[0]
        last = np.searchsorted(self.t_ns[ins], at_ns, side="right") - 1
        return np.where(last >= 0, self.cpu[ins[np.maximum(last, 0)]] if ins.size else -1, -1)

    def interrupts(self, cpu: int, start_ns: int, end_ns: int) -> list[str]:
        """The interrupt handlers and softirqs entered on the CPU in [start, end], by name."""
        lo, hi = np.searchsorted(self.irq_t_ns, [start_ns, end_ns], side="left")
        return sorted(set(self.irq_what[lo:hi][self.irq_cpu[lo:hi] == cpu]))

    def moved(self, tid: int, start_ns: int, end_ns: int) -> bool:
        """Whether the thread was migrated to another CPU in [start, end]."""
        lo, hi = np.searchsorted(self.moved_t_ns, [start_ns, end_ns], side="left")
        return bool((self.moved_pid[lo:hi] == tid).any())
