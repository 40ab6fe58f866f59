"""Everything about the host that moves latency, read from /proc and /sys (and ethtool for the interfaces):
the kernel command line and the isolation it asked for and got, THP, the sysctls that matter, SMT, caches, RAM,
CPU frequency and governor, and each interface's driver and offloads. Recorded in every run's manifest
(environment.host); a fact the machine does not expose is None, never guessed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

SYSCTLS = (
    "net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
    "net.core.busy_read", "net.core.busy_poll", "net.core.netdev_max_backlog",
    "kernel.sched_rt_runtime_us", "kernel.sched_rt_period_us", "kernel.timer_migration", "kernel.numa_balancing",
    "vm.swappiness", "vm.stat_interval", "kernel.watchdog",
)
ISOLATION = ("isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity", "idle", "processor.max_cstate",
             "intel_idle.max_cstate", "mitigations", "transparent_hugepage", "skew_tick", "tsc")


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _selected(text: str | None) -> str | None:
    """'always [madvise] never' -> 'madvise'."""
    m = re.search(r"\[(\w+)\]", text or "")
    return m.group(1) if m else text


def sysctl(name: str, root: Path = Path("/proc/sys")) -> str | None:
    return _read(root / name.replace(".", "/"))


def cmdline_options(cmdline: str) -> dict[str, str]:
    """The isolation and latency options of a kernel command line (before a lone '--', which ends the kernel's
    own): name -> value ('' for a bare flag)."""
    kernel = cmdline.split(" -- ", 1)[0]
    out = {}
    for word in kernel.split():
        name, _, value = word.partition("=")
        if name in ISOLATION:
            out[name] = value
    return out


def _caches(cpu: Path) -> list[dict[str, Any]]:
    out = []
    for index in sorted(cpu.glob("cache/index*")):
        out.append({"level": _int(_read(index / "level")), "type": _read(index / "type"),
                    "size": _read(index / "size"), "shared_with": _read(index / "shared_cpu_list")})
    return out


def _meminfo() -> dict[str, int]:
    out = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "HugePages_Total", "Hugepagesize"):
            out[key] = _int(rest.split()[0]) or 0
    return out


def _ethtool(interface: str) -> dict[str, str]:
    """The interface's offloads that change the receive path (ethtool -k): name -> on/off."""
    try:
        done = subprocess.run(["ethtool", "-k", interface], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    wanted = ("rx-checksumming", "generic-receive-offload", "large-receive-offload", "rx-gro-hw",
              "generic-segmentation-offload", "tcp-segmentation-offload", "rx-udp-gro-forwarding")
    out = {}
    for line in done.stdout.splitlines():
        name, _, value = line.strip().partition(":")
        if name in wanted:
            out[name] = value.split()[0] if value.split() else ""
    return out


def interfaces(names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Driver, speed, MTU and offloads of the host's interfaces (or those named)."""
    out = {}
    for path in sorted(Path("/sys/class/net").glob("*")):
        if names is not None and path.name not in names:
            continue
        driver = path / "device" / "driver"
        out[path.name] = {"driver": driver.resolve().name if driver.exists() else ("loopback" if path.name == "lo"
                                                                                    else None),
                          "mtu": _int(_read(path / "mtu")), "speed_mbps": _int(_read(path / "speed")),
                          "offloads": _ethtool(path.name)}
    return out


def snapshot() -> dict[str, Any]:
    """The host's facts (environment.host of a manifest)."""
    cpu = Path("/sys/devices/system/cpu")
    cmdline = _read("/proc/cmdline") or ""
    asked = cmdline_options(cmdline)
    return {
        "kernel_cmdline": cmdline.split(" -- ", 1)[0],
        "isolation": {
            "asked": {k: asked.get(k) for k in ("isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity")},
            "got": {"isolated": _read(cpu / "isolated"), "nohz_full": _read(cpu / "nohz_full")},
        },
        "latency_options": {k: v for k, v in asked.items() if k not in ("isolcpus", "nohz_full", "rcu_nocbs",
                                                                        "irqaffinity")},
        "thp": {"enabled": _selected(_read("/sys/kernel/mm/transparent_hugepage/enabled")),
                "defrag": _selected(_read("/sys/kernel/mm/transparent_hugepage/defrag"))},
        "sysctl": {name: sysctl(name) for name in SYSCTLS},
        "smt": {"active": _read(cpu / "smt" / "active"), "control": _read(cpu / "smt" / "control")},
        "caches": _caches(cpu / "cpu0"),
        "memory_kib": _meminfo(),
        "cpu_frequency_khz": {"current": _int(_read(cpu / "cpu0/cpufreq/scaling_cur_freq")),
                              "max": _int(_read(cpu / "cpu0/cpufreq/cpuinfo_max_freq"))},
        "cpu_governor": _read(cpu / "cpu0/cpufreq/scaling_governor"),
        "irqbalance": _irqbalance(),
        "interfaces": interfaces(),
    }


def _irqbalance() -> bool | None:
    """Whether irqbalance runs (it moves interrupts onto isolated CPUs' neighbours at will)."""
    for proc in Path("/proc").glob("[0-9]*"):
        if (_read(proc / "comm") or "") == "irqbalance":
            return True
    return False


ROW_NAMES = ("kernel isolation", "kernel command line", "THP", "SMT", "caches (CPU 0)", "RAM", "CPU frequency",
             "sysctls", "irqbalance", "interfaces")


def describe(host: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The host in a few rows, as a write-up's system-configuration table gives it (reports and documents)."""
    if not host:
        return [("host", "not recorded (a run made before itchbench recorded its host)")]
    iso, sysctl = host["isolation"], host["sysctl"]
    asked = " ".join(f"{k}={v}" for k, v in iso["asked"].items() if v) or "none"
    caches = ", ".join(f"L{c['level']}{(c['type'] or '')[:1].lower() if c['type'] != 'Unified' else ''} {c['size']}"
                       for c in host["caches"]) or "?"
    mem = host["memory_kib"]
    offloads = "; ".join(f"{name} ({i['driver'] or '?'}, GRO {i['offloads'].get('generic-receive-offload', '?')})"
                         for name, i in host["interfaces"].items())
    freq = host["cpu_frequency_khz"]
    return [
        ("kernel isolation", f"asked: {asked}; got: isolated [{iso['got'].get('isolated') or ''}], nohz_full "
                             f"[{iso['got'].get('nohz_full') or ''}]"),
        ("kernel command line", host["kernel_cmdline"] or "?"),
        ("THP", f"{host['thp']['enabled']} (defrag {host['thp']['defrag']})"),
        ("SMT", f"active {host['smt']['active']}, control {host['smt']['control']}"),
        ("caches (CPU 0)", caches),
        ("RAM", f"{mem.get('MemTotal', 0) / 1048576:.1f} GiB, huge pages {mem.get('HugePages_Total', 0)} × "
                f"{mem.get('Hugepagesize', 0)} KiB"),
        ("CPU frequency", f"governor {host['cpu_governor'] or 'unavailable'}, "
                          + (f"{freq['current'] / 1e6:.2f} of {freq['max'] / 1e6:.2f} GHz"
                             if freq.get("current") and freq.get("max") else "frequency not exposed")),
        ("sysctls", ", ".join(f"{k}={v}" for k, v in sysctl.items() if v is not None)),
        ("irqbalance", "running" if host["irqbalance"] else "not running"),
        ("interfaces", offloads or "none"),
    ]
