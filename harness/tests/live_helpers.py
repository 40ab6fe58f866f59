"""Shared pieces of the live-transport tests."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from itchbench import paths, rundir
from itchbench.runs import scenario
from itchbench.selftest import zoo

MARKERS = ["itch-gateway", "bbo-shm-subscriber", "bbo-mqtt-subscriber", "bbo-kafka-subscriber", "mosquitto -c",
           "kafka.Kafka", "serial-replay", "udp-replay", "tcpreplay", "itchbench.runs.subscriber", "socat pty", "sleep infinity"]


# The Python example made to hold every event until its end, then publish them in one burst (zoo.materialise).
EVENTS_HELD_TO_THE_END = zoo.Edit("                flush()  # a packet's events go out with it\n",
                                  "                pass  # held\n")


def make_capture(tmp: Path, name: str, *args: str) -> Path:
    out = tmp / name
    proc = subprocess.run([str(paths.tool("itch-synth")), *args, "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def itch_file_messages(data: bytes) -> int:
    """Messages of a binary ITCH file: one per 2-byte big-endian length prefix (counted apart from the code under
    test)."""
    count = offset = 0
    while offset + 2 <= len(data):
        offset += 2 + int.from_bytes(data[offset:offset + 2], "big")
        count += 1
    assert offset == len(data), "the file does not end on a message boundary"
    return count


def config(capture: Path, transport: str, **tables: dict[str, Any]) -> dict[str, Any]:
    values = scenario.defaults(name=f"test-{transport}", transport=transport, capture=str(capture))
    for table, entries in tables.items():
        if isinstance(entries, dict):
            values[table].update(entries)
        else:
            values[table] = entries
    return values


def another_run(run: Path, to: Path) -> Path:
    """A copy of a run standing for another run (another build's, whose output a test then edits): its own run_id,
    told by where it lies, as compare refuses a run on both sides."""
    shutil.copytree(run, to)
    manifest = rundir.read_json(to / "manifest.json")
    manifest["run_id"] += "-copy-" + hashlib.sha256(str(to.resolve()).encode()).hexdigest()[:8]
    rundir.write_json(to / "manifest.json", manifest)
    return to


def summary_of(run: Path) -> dict[str, Any]:
    return rundir.read_json(run / "summary.json")


def _parent_and_state(pid: int) -> tuple[int, str]:
    """(parent pid, state letter) from /proc/PID/stat; the command may hold spaces and parentheses."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    rest = stat[stat.rindex(")") + 2:].split()
    return int(rest[1]), rest[0]


def our_processes() -> list[tuple[int, str]]:
    """(pid, command line) of every live descendant of this test process — orphans of a run come back to it, a
    child subreaper (conftest.py) —, never another program's (nor another test worker's) that happen to match.
    Zombies (already dead, not yet reaped) are not alive."""
    me, found = os.getpid(), []
    tree: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent, state = _parent_and_state(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
            if state != "Z":
                tree[int(entry.name)] = parent
    for pid in tree:
        ancestor = tree.get(pid)
        while ancestor not in (None, 0, 1, me):
            ancestor = tree.get(ancestor)
        if ancestor != me:
            continue
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        found.append((pid, args))
    return found


def leftover_processes() -> list[str]:
    """Processes of ours still alive (a run must leave none)."""
    return [f"{pid} {args}" for pid, args in our_processes() if any(m in args for m in MARKERS)]


def kill_when_running(pattern: str, sig: signal.Signals, after_s: float) -> threading.Thread:
    """A thread that sends sig to the first of our processes (our_processes) whose command line matches the regular
    expression pattern, after_s after it appears."""
    wanted = re.compile(pattern)

    def kill() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pids = sorted(pid for pid, args in our_processes() if wanted.search(args))
            if pids:
                time.sleep(after_s)
                os.kill(pids[0], sig)
                return
            time.sleep(0.02)
    t = threading.Thread(target=kill)
    t.start()
    return t
