"""The noise a run ran in, from the kernel.

Per CPU (/proc/stat, before and after the run): steal (time the hypervisor
gave the vCPU to someone else), interrupt and softirq time. Per gateway
thread (its own report, read from /proc/self/task as the run ends):
voluntary and involuntary context switches (an involuntary one is a
preemption), page faults, migrations, policy and affinity. A report shows
them beside the latency figures, and `compare` says when two sides ran under
different noise. docs/verdicts.md, "Noise", defines the fields.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

_FIELDS = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]


def cpu_times(stat: Path = Path("/proc/stat")) -> dict[str, list[int]]:
    """Clock ticks spent per CPU ("cpu0", ...) in each of _FIELDS."""
    out: dict[str, list[int]] = {}
    for line in stat.read_text().splitlines():
        name, *values = line.split()
        if name.startswith("cpu") and name != "cpu":
            out[name] = [int(v) for v in values[:len(_FIELDS)]]
    return out


def cpu_noise(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    """Per CPU, milliseconds of each kind of time between two cpu_times(), and the share stolen."""
    ms_per_tick = 1000 / os.sysconf("SC_CLK_TCK")
    out = {}
    for cpu in sorted(set(before) & set(after), key=lambda c: int(c[3:])):
        delta = {f: (a - b) * ms_per_tick for f, a, b in zip(_FIELDS, after[cpu], before[cpu])}
        total = sum(delta.values())
        out[cpu] = {"steal_ms": delta["steal"], "irq_ms": delta["irq"], "softirq_ms": delta["softirq"],
                    "busy_ms": total - delta["idle"] - delta["iowait"], "total_ms": total,
                    "steal_share": delta["steal"] / total if total else 0.0}
    return out


def hot_thread(threads: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The gateway's main thread (the one named after the process): it runs the pipeline."""
    named = [t for t in threads if t["name"] == "itch-gateway"]
    return named[0] if named else (threads[0] if threads else None)


# A real-time hot thread that waited for a CPU this share of its time or more, under RT throttling, was throttled.
THROTTLED_SHARE = 0.01


def _rt_throttled(hot: dict[str, Any] | None, throttling: dict[str, Any] | None) -> str:
    """Words naming RT throttling as the cause of the hot thread's waits, when the figures point there: it ran
    real-time, the kernel throttles real-time threads, and it waited runnable about the unbudgeted share."""
    if not hot or not throttling or not throttling.get("active") or hot.get("policy") not in ("SCHED_FIFO", "SCHED_RR"):
        return ""
    ran, waited = hot.get("on_cpu_ns", -1), hot.get("run_delay_ns", -1)
    if ran < 0 or waited < 0 or waited < THROTTLED_SHARE * (ran + waited):
        return ""
    runtime, period = throttling["runtime_us"], throttling["period_us"]
    return (f"the hot thread ran {hot['policy']} under RT throttling (kernel.sched_rt_runtime_us = {runtime:,} of "
            f"{period:,}): once it has used that much of a period the kernel stops it for the rest, up to "
            f"{(period - runtime) / 1000:g} ms, and every message arriving then waits; it waited "
            f"{waited / 1e6:,.1f} ms over {(ran + waited) / 1e9:,.1f} s. Not the gateway's code: a host setting "
            "(sched_rt_runtime_us = -1, or an isolated CPU) or a thread that sleeps")


def summarise(cpus: dict[str, dict[str, float]], gw_noise: dict[str, Any] | None,
              throttling: dict[str, Any] | None = None) -> dict[str, Any]:
    threads = (gw_noise or {}).get("threads", [])
    hot = hot_thread(threads)
    steal = sum(c["steal_ms"] for c in cpus.values())
    busy = sum(c["busy_ms"] for c in cpus.values())
    words = [f"steal {steal:.0f} ms of {busy + steal:.0f} ms busy ({steal / (busy + steal) if busy + steal else 0:.1%})"]
    if hot is not None:
        waited = hot.get("run_delay_ns", -1)
        if waited >= 0:
            ran = hot["on_cpu_ns"]
            words.append(f"hot thread waited for a CPU {waited / 1e6:,.1f} ms while runnable "
                         f"({waited / (ran + waited) if ran + waited else 0:.1%} of its time)")
        words.append(f"hot thread: {hot['involuntary_switches']:,} preemptions, {hot['voluntary_switches']:,} "
                     f"sleeps, {hot['major_faults']:,} major and {hot['minor_faults']:,} minor faults"
                     + (f", {hot['migrations']:,} migrations" if hot["migrations"] >= 0 else "")
                     + f", {hot['policy']} on CPUs {hot['affinity']}")
    cause = _rt_throttled(hot, throttling)
    if cause:
        words.append(cause)
    return {"cpus": cpus, "threads": threads, "rt_throttling": throttling, "cause": cause, "process": (gw_noise or {}).get("process"), "hot_thread": hot,
            "steal_ms": steal, "busy_ms": busy, "words": "; ".join(words)}
