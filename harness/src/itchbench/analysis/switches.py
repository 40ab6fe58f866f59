"""The scheduler's time line of a run (profile.scheduler: `perf record -a` of sched:sched_switch, the entries and
exits of interrupt handlers and softirqs, and sched:sched_migrate_task, CLOCK_MONOTONIC stamps): every context
switch, interrupt handler, softirq and migration on every CPU, parsed from `perf script` once into arrays, and
asked, for a slow message's interval, whether the gateway's hot thread was preempted or moved in it, which other
tasks had its CPU and for how long, and which interrupts and softirqs ran there and for how long.

A task is named as it was when it left the CPU (its prev_comm at the switch out), so a process that exec'd while
it held the CPU — `chrt -f 10 sh -c …` — is named by what it ran then (`sh`), not by what started it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable

import numpy as np

EVENTS = ("sched:sched_switch", "irq:irq_handler_entry", "irq:irq_handler_exit", "irq:softirq_entry",
          "irq:softirq_exit", "sched:sched_migrate_task")
FIELDS = "cpu,time,event,trace"  # perf script -F

# perf script -F cpu,time,event,trace, e.g.
#   [001] 29920.117801: sched:sched_switch: prev_comm=perf prev_pid=32421 prev_prio=120 prev_state=R ==>
#       next_comm=migration/0 next_pid=18 next_prio=0
#   [001] 39361.808070: irq:softirq_entry: vec=7 [action=SCHED]
#   [001] 39361.929984: irq:irq_handler_entry: irq=36 name=virtio1-req.0
#   [001] 39361.929990: irq:irq_handler_exit: irq=36 ret=handled
#   [000] 39361.792104: sched:sched_migrate_task: comm=perf pid=2639 prio=120 orig_cpu=0 dest_cpu=1
_HEAD = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):\s(.*)")
_SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) "
                     r"next_pid=(\d+)")
_SOFTIRQ = re.compile(r"\[action=(\w+)\]")
_IRQ = re.compile(r"irq=(\d+) name=(\S+)")
_IRQ_EXIT = re.compile(r"irq=(\d+) ret=")
_MIGRATE = re.compile(r" pid=(\d+) .*orig_cpu=(\d+) dest_cpu=(\d+)")


def _ns(sec: str, frac: str) -> int:
    return int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def _ends(entries: list[tuple[int, int, str]], exits: list[tuple[int, int, str]]) -> np.ndarray:
    """For each entry (cpu, t, what), sorted by t: when the same handler returned on that CPU — the first exit of
    it after the entry and before its next entry there —, or -1."""
    end = np.full(len(entries), -1, np.int64)
    by_key: dict[tuple[int, str], list[int]] = {}
    for k, (cpu, _, what) in enumerate(entries):
        by_key.setdefault((cpu, what), []).append(k)
    out_by_key: dict[tuple[int, str], list[int]] = {}
    for cpu, t, what in exits:
        out_by_key.setdefault((cpu, what), []).append(t)
    for key, ks in by_key.items():
        outs = np.sort(np.array(out_by_key.get(key, []), np.int64))
        starts = np.array([entries[k][1] for k in ks], np.int64)
        nxt = np.append(starts[1:], np.iinfo(np.int64).max)
        at = np.searchsorted(outs, starts, side="left")
        ok = at < outs.size
        ok[ok] &= outs[at[ok]] < nxt[ok]
        end[np.array(ks)[ok]] = outs[at[ok]]
    return end


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
    # The name of the task switched out (after an exec, its new one); and when each interrupt or softirq entered
    # above returned (-1: its exit was not recorded, as in traces made before exits were).
    prev_comm: np.ndarray = field(default_factory=lambda: np.empty(0, object))
    irq_end_ns: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    @staticmethod
    def parse(lines: Iterable[str]) -> "Switches":
        switches, irqs, exits, moves = [], [], [], []
        irq_names: dict[str, str] = {}  # irq number -> its handler's name (an exit names only the number)
        for line in lines:
            head = _HEAD.search(line)
            if not head:
                continue
            cpu, sec, frac, event, rest = head.groups()
            if event == "sched:sched_switch" and (m := _SWITCH.search(rest)):
                prev_comm, prev_pid, state, next_comm, next_pid = m.groups()
                switches.append((int(cpu), _ns(sec, frac), int(prev_pid), state.startswith("R"), int(next_pid),
                                 next_comm, prev_comm))
            elif event in ("irq:softirq_entry", "irq:softirq_exit") and (m := _SOFTIRQ.search(rest)):
                (irqs if event.endswith("entry") else exits).append((int(cpu), _ns(sec, frac), f"softirq {m.group(1)}"))
            elif event == "irq:irq_handler_entry" and (m := _IRQ.search(rest)):
                irq_names[m.group(1)] = m.group(2)
                irqs.append((int(cpu), _ns(sec, frac), f"irq {m.group(2)}"))
            elif event == "irq:irq_handler_exit" and (m := _IRQ_EXIT.search(rest)):
                exits.append((int(cpu), _ns(sec, frac), f"irq {irq_names.get(m.group(1), m.group(1))}"))
            elif event == "sched:sched_migrate_task" and (m := _MIGRATE.search(rest)):
                moves.append((_ns(sec, frac), int(m.group(1))))
        s = sorted(switches, key=lambda r: r[1])
        i = sorted(irqs, key=lambda r: r[1])
        v = sorted(moves)
        col = lambda rows, k, dtype: np.array([r[k] for r in rows], dtype)  # noqa: E731
        return Switches(col(s, 0, np.int16), col(s, 1, np.int64), col(s, 2, np.int64), col(s, 3, bool),
                        col(s, 4, np.int64), col(s, 5, object), col(i, 0, np.int16), col(i, 1, np.int64),
                        col(i, 2, object), col(v, 1, np.int64), col(v, 0, np.int64), col(s, 6, object),
                        _ends(i, exits))

    def save(self, path: Path) -> None:
        np.savez_compressed(path, cpu=self.cpu, t_ns=self.t_ns, prev_pid=self.prev_pid, preempted=self.preempted,
                            next_pid=self.next_pid, next_comm=self.next_comm.astype(str), irq_cpu=self.irq_cpu,
                            irq_t_ns=self.irq_t_ns, irq_what=self.irq_what.astype(str), moved_pid=self.moved_pid,
                            moved_t_ns=self.moved_t_ns, prev_comm=self.prev_comm.astype(str),
                            irq_end_ns=self.irq_end_ns)

    @staticmethod
    def load(path: Path) -> "Switches":
        z = np.load(path)
        empty = np.empty(0, np.int64)
        get = lambda k, like: z[k] if k in z.files else like  # noqa: E731  (a trace of switches alone: older runs)
        irq_t_ns = get("irq_t_ns", empty)
        return Switches(z["cpu"], z["t_ns"], z["prev_pid"], z["preempted"], z["next_pid"],
                        z["next_comm"].astype(object), get("irq_cpu", empty.astype(np.int16)),
                        irq_t_ns, get("irq_what", empty.astype(str)).astype(object),
                        get("moved_pid", empty), get("moved_t_ns", empty),
                        get("prev_comm", z["next_comm"].astype(str)).astype(object) if "prev_comm" in z.files
                        else np.full(z["t_ns"].size, "", object),
                        get("irq_end_ns", np.full(irq_t_ns.size, -1, np.int64)))

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
        preempted = self.was_preempted(hot_tid, start_ns, end_ns)
        back = np.nonzero(self.next_pid[window] == hot_tid)[0]
        if back.size:  # the CPU it came back on, and who ran there in the window before it did
            at = lo + int(back[-1])
            cpu = int(self.cpu[at])
            on_cpu = (self.cpu[lo:at] == cpu) & (self.next_pid[lo:at] != hot_tid) & (self.next_pid[lo:at] != 0)
            taken = {self.slice_name(lo + int(k)) for k in np.nonzero(on_cpu)[0]}
            holder = self._running_at(cpu, lo)  # the task on that CPU when the window opened holds it too
            if holder >= 0 and self.next_pid[holder] not in (hot_tid, 0):
                taken.add(self.slice_name(holder))
        else:
            taken = set()
        return preempted, sorted(taken)

    def was_preempted(self, hot_tid: int, start_ns: int, end_ns: int) -> bool:
        """Whether the hot thread was switched out while still runnable in [start, end]."""
        lo, hi = np.searchsorted(self.t_ns, [start_ns, end_ns], side="left")
        return bool(((self.prev_pid[lo:hi] == hot_tid) & self.preempted[lo:hi]).any())

    def slice_name(self, k: int) -> str:
        """The name of the task switch k put on its CPU, as it was when it left it (its prev_comm at the next
        switch there), or as it came on when the trace does not show it leave."""
        mine = self._by_cpu[int(self.cpu[k])]
        j = int(np.searchsorted(mine, k, side="right"))
        if j < mine.size and self.prev_comm.size and self.prev_pid[mine[j]] == self.next_pid[k] \
                and self.prev_comm[mine[j]]:
            return str(self.prev_comm[mine[j]])
        return str(self.next_comm[k])

    def held(self, cpu: int, start_ns: int, end_ns: int, hot_tid: int) -> list[tuple[str, int, int]]:
        """The tasks other than the hot thread (and idle) that ran on the CPU in [start, end]: (name, from, to)
        for each stretch between two switches there, clipped to the interval. A stretch is the task the later
        switch took off the CPU (its prev_pid, named by its prev_comm): perf drops switches when its buffers
        fill, and the task seen leaving is the one sure to have been running; the last stretch, which no switch
        ends, is the task the switch before it put on."""
        mine = self._by_cpu.get(cpu, np.empty(0, np.int64))
        if not mine.size:
            return []
        t = self.t_ns[mine]
        first = max(int(np.searchsorted(t, start_ns, side="right")) - 1, 0)
        last = int(np.searchsorted(t, end_ns, side="left"))
        out = []
        for j in range(first, last):
            ends = j + 1 < t.size
            k = int(mine[j + 1]) if ends else int(mine[j])
            pid = self.prev_pid[k] if ends else self.next_pid[k]
            if pid in (0, hot_tid):
                continue
            name = str(self.prev_comm[k]) if ends and self.prev_comm.size and self.prev_comm[k] else \
                self.slice_name(int(mine[j]))
            lo, hi = max(int(t[j]), start_ns), min(int(t[j + 1]) if ends else end_ns, end_ns)
            if hi > lo:
                out.append((name, lo, hi))
        return out

    def interrupt_spans(self, cpu: int, start_ns: int, end_ns: int) -> list[tuple[str, int, int]]:
        """The interrupt handlers and softirqs that ran on the CPU in [start, end], with their returns recorded:
        (what, from, to), clipped to the interval."""
        lo, hi = np.searchsorted(self.irq_t_ns, [start_ns, end_ns], side="left")
        if not self.irq_end_ns.size:
            return []
        mine = np.nonzero((self.irq_cpu[lo:hi] == cpu) & (self.irq_end_ns[lo:hi] >= 0))[0] + lo
        return [(str(self.irq_what[k]), int(self.irq_t_ns[k]), min(int(self.irq_end_ns[k]), end_ns)) for k in mine]

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
