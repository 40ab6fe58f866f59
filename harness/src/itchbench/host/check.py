"""What a host measuring a low-latency gateway is recommended to have, each against what this one has, with the
command that would set it (`itchbench check-host`). Nothing here changes the host: the commands are printed, for a
person to run, because most need a reboot, a maintenance window or a decision (SMT off halves the CPUs)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RMEM_WANTED = 16 << 20  # the gateway asks 8 MiB of receive buffer; twice that leaves room for a burst


@dataclass(frozen=True)
class Check:
    name: str
    have: str
    want: str
    ok: bool | None  # None: the machine does not expose it (a VM without cpufreq, SMT not supported)
    command: str
    why: str


def online_cpus() -> set[int]:
    """This machine's online CPUs (/sys/devices/system/cpu/online; the CPUs this process may use where it is not
    exposed)."""
    try:
        return cpu_set(Path("/sys/devices/system/cpu/online").read_text().strip()) or os.sched_getaffinity(0)
    except OSError:
        return os.sched_getaffinity(0)


def cpu_list_text(cpus: set[int]) -> str:
    """{1, 2, 3, 5} -> '1-3,5': the kernel's form of a CPU list."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in runs)


def _suggested(cpus: str, online: set[int]) -> str:
    """The CPUs the commands name: those asked for, or every online CPU but the first, left to the rest of the
    machine (its interrupts, the harness, the kernel's housekeeping); "" on a machine of one CPU."""
    if cpus or not online:
        return cpus
    return cpu_list_text(online - {min(online)})


def cpu_set(text: str | None) -> set[int]:
    """'2-5,7' -> {2, 3, 4, 5, 7}; flags before the list (isolcpus=domain,managed_irq,2-5) are skipped."""
    out: set[int] = set()
    for part in (text or "").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _covers(have: str | None, cpus: str) -> bool:
    """Whether the list `have` holds every CPU of `cpus` (any CPU at all when none is named)."""
    got = cpu_set(have)
    return bool(got) and (not cpus or cpu_set(cpus) <= got)


def checks(host: dict[str, Any], cpus: str = "", online: set[int] | None = None) -> list[Check]:
    """The recommended settings for gateway CPUs `cpus` (e.g. "2-5"; "": any, the commands naming every online CPU
    but the first); online: this machine's CPUs (read when None)."""
    iso, sysctl = host["isolation"], host["sysctl"]
    want_cpus = _suggested(cpus, online_cpus() if online is None else online)
    out = []
    for option in ("isolcpus", "nohz_full", "rcu_nocbs"):
        asked = iso["asked"].get(option)
        command = (f"add {option}={want_cpus} to GRUB_CMDLINE_LINUX in /etc/default/grub; update-grub; reboot"
                   if want_cpus else "this machine has one CPU: none to keep the rest of the machine off")
        out.append(Check(f"kernel {option}", asked or "not set", want_cpus if cpus else "the gateway's CPUs",
                         _covers(asked, cpus), command,
                         {"isolcpus": "keeps the scheduler's other tasks off the gateway's CPUs",
                          "nohz_full": "stops the scheduler tick on a CPU running one task",
                          "rcu_nocbs": "moves RCU callbacks off them"}[option]))
    got = iso["got"].get("isolated") or ""
    out.append(Check("CPUs isolated (granted)", got or "none", want_cpus or "none", _covers(got, cpus),
                     "follows from isolcpus after the reboot", "what the kernel actually isolated"))
    thp = host["thp"]["enabled"]
    out.append(Check("transparent huge pages", str(thp), "madvise or never", thp in ("madvise", "never") if thp else None,
                     "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
                     "khugepaged compaction stalls a process whose pages it collapses"))
    rmem = int(sysctl.get("net.core.rmem_max") or 0)
    out.append(Check("net.core.rmem_max", f"{rmem:,}", f"≥ {RMEM_WANTED:,}", rmem >= RMEM_WANTED,
                     f"sysctl -w net.core.rmem_max={RMEM_WANTED}", "a burst the gateway has not read yet fits"))
    for name, want in (("net.core.busy_read", 50), ("net.core.busy_poll", 50)):
        value = int(sysctl.get(name) or 0)
        out.append(Check(name, str(value), f"{want} (µs)", value >= want, f"sysctl -w {name}={want}",
                         "the socket spins this long for a packet before it sleeps"))
    rt = sysctl.get("kernel.sched_rt_runtime_us")
    out.append(Check("kernel.sched_rt_runtime_us", str(rt), "-1 (no RT throttling)", rt == "-1",
                     "sysctl -w kernel.sched_rt_runtime_us=-1",
                     "a SCHED_FIFO thread is otherwise stopped 50 ms each second (keep a CPU for the rest)"))
    tm = sysctl.get("kernel.timer_migration")
    out.append(Check("kernel.timer_migration", str(tm), "0", tm == "0", "sysctl -w kernel.timer_migration=0",
                     "timers stay off the isolated CPUs"))
    swap = sysctl.get("vm.swappiness")
    out.append(Check("vm.swappiness", str(swap), "≤ 10", int(swap) <= 10 if swap is not None else None,
                     "sysctl -w vm.swappiness=10", "the gateway's pages stay in memory (or use gateway.mlockall)"))
    smt = host["smt"]
    smt_ok = None if smt.get("control") in (None, "notsupported", "notimplemented") else smt.get("active") == "0"
    out.append(Check("SMT", f"active {smt.get('active')}, control {smt.get('control')}", "off on the gateway's cores",
                     smt_ok, "echo off > /sys/devices/system/cpu/smt/control",
                     "a sibling thread shares the core's caches and ports with the hot thread"))
    gov = host.get("cpu_governor")
    out.append(Check("CPU governor", str(gov or "unavailable"), "performance", gov == "performance" if gov else None,
                     "cpupower frequency-set -g performance", "no frequency ramp under a burst"))
    irq = host.get("irqbalance")
    out.append(Check("irqbalance", "running" if irq else "not running", "not running", not irq,
                     "systemctl disable --now irqbalance; pin the NIC's queues off the gateway's CPUs",
                     "it moves interrupts at will"))
    return out


def lines(found: list[Check]) -> list[str]:
    """The check's report: what is missing first, each with its command; then what is there."""
    missing = [c for c in found if c.ok is False]
    unknown = [c for c in found if c.ok is None]
    there = [c for c in found if c.ok]
    out = [f"{len(missing)} of {len(found)} recommended settings missing, {len(unknown)} not exposed by this "
           f"machine, {len(there)} in place. Nothing was changed."]
    for c in missing:
        out += [f"MISSING  {c.name}: {c.have} (want {c.want}) — {c.why}", f"         {c.command}"]
    for c in unknown:
        out.append(f"UNKNOWN  {c.name}: {c.have} — not exposed here (a VM, or not supported); on a host: {c.command}")
    for c in there:
        out.append(f"OK       {c.name}: {c.have}")
    return out
