"""The slowest messages of a run and why: kept while the log is read (the largest end-to-end latencies to the
book, at most KEPT, in bounded memory), then each of those at or above p99.9 charged to the hop that ran longest
past its own typical time (its p50). A message whose excess is spread — no hop holds half of it — is left
unexplained, and said to be. Always on: it reads only the stamps the run has already recorded."""

from __future__ import annotations

from typing import Any

import numpy as np

from .stats import TYPE_NAMES
from .switches import Switches

KEPT = 5_000
DOMINANT = 0.5  # the share of a message's excess one hop must hold to be its cause

# What a hop running long means, in the words a reader needs (the hop names are analysis/hops.py's).
CAUSES = {
    ("t_intended", "t_sent"): "the sender was late (its own delay: not the gateway's)",
    ("t_sent", "t_kernel"): "the kernel's network path was slow (softirq, the sender's CPU)",
    ("t_sent", "t_read"): "the line or the pty relay was slow",
    ("t_kernel", "t_read"): "the receive thread was not running when the packet came (woken late, preempted or "
                            "busy with the datagram's earlier messages)",
    ("t_read", "t_decoded"): "decoding took long",
    ("t_decoded", "t_book"): "the book update took long",
    ("t_book", "t_published"): "publishing took long",
}


def _union_ns(spans: list[tuple[str, int, int]]) -> int:
    """The time covered by any of the spans (an interrupt inside another task's turn counts once)."""
    total, reach = 0, None
    for _, lo, hi in sorted(spans, key=lambda s: s[1]):
        if reach is None or lo > reach:
            total, reach = total + hi - lo, hi
        elif hi > reach:
            total, reach = total + hi - reach, hi
    return total


def _scheduler(switches: Switches, hot_tid: int, start: np.ndarray, hops: np.ndarray,
               dominant: np.ndarray, excess: np.ndarray) -> dict[str, Any]:
    """Per outlier, in the interval of the hop it is charged to: the hot thread preempted, or its CPU taken by
    other tasks before it ran again; interrupt handlers and softirqs on the CPU it ran on; the thread moved to
    another CPU. Each counted, and the tasks and interrupts named by how many outliers each touched. Then ranked by
    the time each held the gateway's CPU in those hops (an interrupt's time inside a task's turn is in the task's
    too), and the share of the outliers' excess over their hops' p50 that the time held explains: per outlier,
    the time anything held its CPU in the hop, at most its excess."""
    edges = np.concatenate([start[:, None], start[:, None] + np.cumsum(hops, axis=1)], axis=1)
    rows = np.arange(start.size)
    begin, end = edges[rows, dominant], edges[rows, dominant + 1]
    cpus = switches.cpus_of(hot_tid, end)
    # perf starts after the gateway is ready: a hop outside the time line was not looked at, and is not "none".
    first, last = switches.span
    traced = (begin >= first) & (end <= last)
    by_task: dict[str, int] = {}
    by_interrupt: dict[str, int] = {}
    held: dict[tuple[str, str], list[int]] = {}  # (kind, name) -> [ns held, outliers touched]
    excess_ns = explained_ns = 0
    preempted = taken = interrupted = moved = anything = 0
    for i in np.nonzero(traced)[0]:
        was = switches.was_preempted(hot_tid, int(begin[i]), int(end[i]))
        irqs = switches.interrupts(int(cpus[i]), int(begin[i]), int(end[i])) if cpus[i] >= 0 else []
        tasks = switches.held(int(cpus[i]), int(begin[i]), int(end[i]), hot_tid) if cpus[i] >= 0 else []
        who = sorted({name for name, _, _ in tasks})
        handlers = switches.interrupt_spans(int(cpus[i]), int(begin[i]), int(end[i])) if cpus[i] >= 0 else []
        spans = tasks + handlers
        seen: set[tuple[str, str]] = set()
        for k, (name, lo, hi) in enumerate(spans):
            key = ("task" if k < len(tasks) else "interrupt", name)
            row = held.setdefault(key, [0, 0])
            row[0] += hi - lo
            if key not in seen:
                row[1] += 1
                seen.add(key)
        mine = int(excess[i, dominant[i]])
        excess_ns += mine
        explained_ns += min(_union_ns(spans), mine)
        went = switches.moved(hot_tid, int(begin[i]), int(end[i]))
        preempted += was
        taken += bool(was or who)
        interrupted += bool(irqs)
        moved += went
        anything += bool(was or who or irqs or went)
        for comm in who:
            by_task[comm] = by_task.get(comm, 0) + 1
        for what in irqs:
            by_interrupt[what] = by_interrupt.get(what, 0) + 1
    n = int(traced.sum())
    ranked = lambda counts: dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10])  # noqa: E731
    return {"outliers": n, "not_traced": int(start.size) - n, "cpu_taken": taken, "share": taken / n if n else 0.0,
            "hot_thread_preempted": preempted, "by_task": ranked(by_task),
            "interrupted": interrupted, "interrupted_share": interrupted / n if n else 0.0,
            "by_interrupt": ranked(by_interrupt), "migrated": moved,
            "none_of_these": n - anything,
            "held": [{"who": name, "kind": kind, "held_ns": ns, "outliers": touched}
                     for (kind, name), (ns, touched) in sorted(held.items(), key=lambda kv: (-kv[1][0], kv[0]))[:10]],
            "excess_ns": excess_ns, "explained_ns": explained_ns,
            "explained_share": explained_ns / excess_ns if excess_ns else 0.0}


class Outliers:
    """The KEPT messages with the largest latency along `chain` (stamp names to the book), with each hop."""

    def __init__(self, chain: list[str], kept: int | None = None) -> None:
        self.chain, self.kept = chain, KEPT if kept is None else kept
        self.total = np.empty(0, np.int64)
        self.start = np.empty(0, np.int64)  # the first stamp (CLOCK_MONOTONIC ns): where the hops are on the clock
        self.hops = np.empty((0, len(chain) - 1), np.int64)
        self.seq = np.empty(0, np.int64)
        self.type = np.empty(0, np.uint8)

    @classmethod
    def kept_from(cls, chain: list[str], total: np.ndarray, start: np.ndarray, hops: np.ndarray, seq: np.ndarray,
                  kinds: np.ndarray, kept: int | None = None) -> Outliers:
        """The slowest messages chosen elsewhere (the compiled scan), by the same rule as add()."""
        out = cls(chain, kept)
        out.total, out.start, out.hops, out.seq, out.type = total, start, hops, seq, kinds
        return out

    def add(self, cols: dict[str, np.ndarray], msg_type: np.ndarray) -> None:
        """Keeps the `kept` largest totals; of equal totals the earlier messages, so that which are kept does not
        depend on how the log was cut into chunks."""
        stamps = np.stack([cols[c] for c in self.chain])
        have = (stamps != 0).all(axis=0)
        if not have.any():
            return
        stamps = stamps[:, have]
        total = stamps[-1] - stamps[0]
        seq, kinds = cols["seq"][have], msg_type[have]
        if self.total.size >= self.kept:  # only what could enter the kept ones
            worst = np.lexsort((-self.seq, self.total))[0]
            better = (total > self.total[worst]) | ((total == self.total[worst]) & (seq < self.seq[worst]))
            stamps, total, seq, kinds = stamps[:, better], total[better], seq[better], kinds[better]
            if not total.size:
                return
        self.total = np.concatenate([self.total, total])
        self.start = np.concatenate([self.start, stamps[0]])
        self.hops = np.concatenate([self.hops, np.diff(stamps, axis=0).T])
        self.seq = np.concatenate([self.seq, seq])
        self.type = np.concatenate([self.type, kinds])
        if self.total.size > self.kept:
            top = np.lexsort((self.seq, -self.total))[:self.kept]
            self.total, self.start, self.hops, self.seq, self.type = (
                self.total[top], self.start[top], self.hops[top], self.seq[top], self.type[top])

    def result(self, threshold_ns: float, typical_ns: list[float], switches: Switches | None = None,
               hot_tid: int = 0) -> dict[str, Any]:
        """Those at or above threshold_ns (the run's p99.9), each charged to a cause; typical_ns: each hop's p50.
        With the scheduler's time line (switches) and the hot thread's id: which of them had their CPU taken by
        other tasks, or the hot thread preempted, in the hop they are charged to."""
        at = self.total >= threshold_ns
        total, hops, seq, kinds = self.total[at], self.hops[at], self.seq[at], self.type[at]
        start = self.start[at]
        pairs = list(zip(self.chain, self.chain[1:]))
        out: dict[str, Any] = {"threshold_ns": float(threshold_ns), "outliers": int(total.size),
                               "kept_at_most": self.kept, "causes": [], "unexplained": 0, "slowest": []}
        if not total.size:
            return out
        excess = np.clip(hops - np.asarray(typical_ns, dtype=np.float64), 0, None)
        dominant = excess.argmax(axis=1)
        share = excess[np.arange(total.size), dominant] / np.maximum(excess.sum(axis=1), 1)
        explained = share >= DOMINANT
        for i, pair in enumerate(pairs):
            mine = explained & (dominant == i)
            if mine.any():
                out["causes"].append({"cause": CAUSES.get(pair, f"{pair[0]} → {pair[1]}"), "hop": i,
                                      "outliers": int(mine.sum()), "share": float(mine.mean()),
                                      "median_excess_ns": float(np.median(excess[mine, i]))})
        out["causes"].sort(key=lambda c: -c["outliers"])
        out["unexplained"] = int((~explained).sum())
        names = np.array([TYPE_NAMES.get(int(t), "?") for t in range(256)])
        kinds_named, counts = np.unique(names[kinds], return_counts=True)
        out["types"] = {str(k): int(n) for k, n in sorted(zip(kinds_named, counts), key=lambda x: -x[1])}
        if switches is not None and hot_tid:
            out["scheduler"] = _scheduler(switches, hot_tid, start, hops, dominant, excess)
        order = np.lexsort((seq, -total))[:10]
        out["slowest"] = [{"seq": int(seq[j]), "type": str(names[kinds[j]]), "latency_ns": int(total[j]),
                           "cause": CAUSES.get(pairs[dominant[j]], "") if explained[j] else "spread over hops",
                           "hops_ns": [int(h) for h in hops[j]]} for j in order]
        return out
