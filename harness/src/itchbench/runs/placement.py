"""[placement]: where the gateway's threads run and at what priority (docs/host.md), for any gateway: applied by
the harness to the gateway's own process once it is ready, thread by thread by the names its threads carry
(/proc/PID/task/*/comm) — the built-in one names them itch-gateway (receive), bbo-publisher, log-provision.

    cpus = "2-5"                                    every thread of the process on these CPUs
    threads = [{ name = "itch-gateway", cpu = 2, fifo = 80 },
               { name = "bbo-publisher", cpu = 3, fifo = 70 }]

What was asked and what the kernel granted, read back, go into the run (transport_details.placement). As for
the gateway's own real-time options, something asked and not granted stops the run with the reason: a thread
named that the process does not have, a CPU not allowed, SCHED_FIFO refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .failure import RunError
from .procs import leaf_process

if TYPE_CHECKING:
    from .run import Run


def cpu_list(text: str) -> set[int]:
    """'2-5,7' -> {2, 3, 4, 5, 7}; ValueError on anything else."""
    out: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()) or (hi and int(hi) < int(lo)):
            raise ValueError(f"{text!r} is not a CPU list such as 2-5,7")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def check_cpus(v: str) -> bool | str:
    try:
        return v == "" or bool(cpu_list(v))
    except ValueError as e:
        return str(e)


def check_threads(v: list) -> bool | str:
    for t in v:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not t["name"]:
            return "each must be a table with a name, e.g. { name = \"itch-gateway\", cpu = 2, fifo = 80 }"
        extra = set(t) - {"name", "cpu", "fifo"}
        if extra:
            return f"has unknown keys {sorted(extra)} (name, cpu, fifo)"
        if "cpu" in t and (not isinstance(t["cpu"], int) or isinstance(t["cpu"], bool) or t["cpu"] < 0):
            return f"{t['name']}: cpu must be a CPU number"
        if "fifo" in t and (not isinstance(t["fifo"], int) or not 1 <= t["fifo"] <= 99):
            return f"{t['name']}: fifo must be a SCHED_FIFO priority from 1 to 99"
    return True


def wanted(values: dict[str, Any]) -> bool:
    p = values["placement"]
    return bool(p["cpus"] or p["threads"])


def _threads(pid: int) -> list[tuple[int, str]]:
    out = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name)):
        try:
            out.append((int(task.name), (task / "comm").read_text().strip()))
        except OSError:
            continue  # a thread that ended meanwhile
    return out


def apply(run: "Run", launcher_pid: int) -> None:
    """Place the gateway's threads; record what was granted; RunError("setup") for what was not."""
    p = run.values["placement"]
    pid = leaf_process(launcher_pid)
    threads = _threads(pid)
    record: dict[str, Any] = {"pid": pid, "cpus": p["cpus"], "threads": []}
    allowed = os.sched_getaffinity(0)
    try:
        if p["cpus"]:
            cpus = cpu_list(p["cpus"])
            if not cpus <= allowed:
                raise RunError("setup", f"placement.cpus = {p['cpus']!r}: CPUs {sorted(cpus - allowed)} are not "
                                        f"available here (allowed: {sorted(allowed)})")
            for tid, _ in threads:
                os.sched_setaffinity(tid, cpus)
        for spec in p["threads"]:
            matched = [tid for tid, comm in threads if comm == spec["name"][:15]]
            if not matched:
                raise RunError("setup", f"placement: the gateway has no thread named {spec['name']!r} (its threads: "
                                        f"{sorted({comm for _, comm in threads})})")
            for tid in matched:
                if "cpu" in spec:
                    if spec["cpu"] not in allowed:
                        raise RunError("setup", f"placement: {spec['name']} on CPU {spec['cpu']}: not available here")
                    os.sched_setaffinity(tid, {spec["cpu"]})
                if "fifo" in spec:
                    os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(spec["fifo"]))
    except OSError as e:
        raise RunError("setup", f"placement not granted: {e.strerror}") from e
    finally:
        for tid, comm in _threads(pid):  # what the kernel holds now, asked for or not
            try:
                policy = os.sched_getscheduler(tid)
                record["threads"].append({"tid": tid, "name": comm, "cpus": sorted(os.sched_getaffinity(tid)),
                                          "policy": {os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}.get(
                                              policy, "SCHED_OTHER"),
                                          "priority": os.sched_getparam(tid).sched_priority})
            except OSError:
                continue
        run.extras["placement"] = record
    run.say("  placement: " + "; ".join(f"{t['name']} {t['tid']} on {t['cpus']}, {t['policy']} {t['priority']}"
                                        for t in record["threads"]))


def report_section(summary: dict[str, Any]) -> list[str]:
    """A run report's Placement section: each thread of the gateway as the kernel held it once placed."""
    p = (summary.get("transport_details") or {}).get("placement")
    if not p:
        return []
    md = ["## Placement", "", f"[placement] applied to the gateway's process (pid {p['pid']})"
          + (f", every thread on CPUs {p['cpus']}" if p["cpus"] else "") + "; as the kernel held them after:", "",
          "| thread | tid | CPUs | policy | priority |", "|---|---:|---|---|---:|"]
    md += [f"| {t['name']} | {t['tid']} | {','.join(map(str, t['cpus']))} | {t['policy']} | {t['priority']} |"
           for t in p["threads"]]
    return md + [""]
