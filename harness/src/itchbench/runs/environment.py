"""What a run was measured on: recorded in every run's manifest.json."""

from __future__ import annotations

import concurrent.futures
import functools
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from .. import paths
from ..captures.remembered import remembered
from ..host import facts as host_facts


def _run(cmd: list[str], cwd: Path | None = None) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (proc.stdout or proc.stderr).strip() if proc.returncode == 0 else None


def _first_line(text: str | None) -> str | None:
    return text.splitlines()[0].strip() if text else None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def git_state(root: Path | None = None) -> dict[str, Any]:
    root = root or paths.repo_root()
    commit = _run(["git", "rev-parse", "HEAD"], root)
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], root)
    return {"commit": commit or "unknown", "dirty": bool(status) if status is not None else None}


def commit_label(state: dict[str, Any]) -> str:
    """What goes into log headers: the commit, '-dirty' if modified."""
    return str(state["commit"]) + ("-dirty" if state.get("dirty") else "")


def cpu_model() -> str:
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


class _NotSaid(Exception):
    """The gateway binary did not say how it was built."""


def gateway_build() -> dict[str, Any]:
    """How the gateway binary was built (its --build-info), remembered per version of the binary; {} when it does not
    say. Asked anew before every run, it once left one run of a compare with no build type at all, and the compare
    refused as not comparable ('Release' vs None): a failure is asked again once, and never remembered."""
    try:
        binary = paths.tool("itch-gateway")
    except paths.ToolMissing:
        return {}

    def ask() -> dict[str, Any]:
        for _ in range(2):
            out = _run([str(binary), "--build-info"])
            if out:
                return json.loads(out)
        raise _NotSaid()
    try:
        return dict(sorted(remembered(binary, "build-info", ask).items()))  # one order, asked or read back
    except _NotSaid:
        return {}


def _version_of(cmd: list[str], line: int = 0) -> str | None:
    """The version number a tool prints (the first dotted number on the line)."""
    out = _run(cmd)
    if not out or len(out.splitlines()) <= line:
        return None
    m = re.search(r"\d+(\.\d+)+", out.splitlines()[line])
    return m.group(0) if m else out.splitlines()[line].strip()


def _remembered_version(cmd: list[str], line: int = 0) -> str | None:
    """_version_of, remembered per version of the tool's binary (captures/remembered.py): `tshark --version` alone
    takes a quarter of a second, before every run."""
    binary = shutil.which(cmd[0])
    if binary is None:
        return None
    return remembered(Path(binary).resolve(), f"version-{Path(binary).name}", lambda: _version_of(cmd, line))


@functools.lru_cache(maxsize=1)
def tool_versions() -> dict[str, str | None]:
    """The installed tools' versions, asked once a process (a sweep or a compare makes many runs in one). numpy's
    and pandas' from their installed metadata: importing pandas to ask would cost half a second before the run."""
    return {
        "python": sys.version.split()[0],
        "numpy": importlib.metadata.version("numpy"),
        "pandas": importlib.metadata.version("pandas"),
        "tcpreplay": _remembered_version(["tcpreplay", "--version"]),
        "socat": _remembered_version(["socat", "-V"], 1),
        "tshark": _remembered_version(["tshark", "--version"]),
        "libpcap": _package_version("libpcap0.8"),
    }


DPKG_STATUS = Path("/var/lib/dpkg/status")


def _package_version(package: str) -> str | None:
    """A Debian package's version, remembered per version of dpkg's status file, which every install, upgrade or
    removal rewrites."""
    def ask() -> str | None:
        return _first_line(_run(["dpkg-query", "-W", "-f=${Version}", package]))
    return remembered(DPKG_STATUS, f"package-{package}", ask) if DPKG_STATUS.exists() else ask()


def snapshot() -> dict[str, Any]:
    """The machine, the build and the tools, as a run found them. The parts that ask other programs are asked at
    once: one after the other they took 35-45 ms before every run's gateway started (git twice, the gateway's build
    information, dpkg-query, ethtool an interface)."""
    affinity = sorted(os.sched_getaffinity(0))
    with concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="snapshot") as pool:
        git, build, tools, host = (pool.submit(f) for f in (git_state, gateway_build, tool_versions,
                                                              host_facts.snapshot))
    return {
        "git": git.result(),
        "build": build.result(),
        "tools": tools.result(),
        "kernel": platform.release(),
        "os": _read("/etc/debian_version") and f"Debian {_read('/etc/debian_version')}",
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or "unavailable",
        "isolated_cpus": _read("/sys/devices/system/cpu/isolated") or "",
        "affinity": affinity,
        "clocksource": _read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "host": host.result(),
    }
