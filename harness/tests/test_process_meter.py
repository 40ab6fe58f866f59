"""process-meter: what a gateway's process used, measured from a small parent. The expected figures come from
the commands themselves (bytes they make resident, CPU they burn, the status or signal they end with), never from
the meter."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from itchbench import paths


def meter(tmp_path: Path, *cmd: str) -> tuple[int, dict]:
    out = tmp_path / "usage.json"
    rc = subprocess.run([str(paths.tool("process-meter")), "--out", str(out), "--", *cmd]).returncode
    return rc, json.loads(out.read_text())


def test_peak_rss_is_the_commands_own_not_its_starters(tmp_path):
    # This test process is a large Python (pytest, numpy, pandas): a child forked from it would carry its pages
    # into ru_maxrss. The meter's child is forked from the meter.
    own_kib = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                       if line.startswith("VmRSS:")))
    _, small = meter(tmp_path, "true")
    assert small["max_rss_kib"] < min(own_kib, 20_000), (small, own_kib)
    # 300 MiB written, so resident: the peak is at least that.
    _, big = meter(tmp_path, sys.executable, "-c", "b = b'x' * (300 << 20)")
    assert 300 * 1024 <= big["max_rss_kib"] < 300 * 1024 + 60_000, big


def test_cpu_and_wall_time_are_at_least_what_the_command_spent(tmp_path):
    _, busy = meter(tmp_path, sys.executable, "-c",
                    "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass")
    assert busy["cpu_user_s"] + busy["cpu_system_s"] >= 0.29 and busy["wall_s"] >= 0.29, busy
    _, idle = meter(tmp_path, "sleep", "0.3")
    assert idle["wall_s"] >= 0.3 and idle["cpu_user_s"] + idle["cpu_system_s"] < 0.1, idle


def test_it_ends_as_the_command_did(tmp_path):
    rc, usage = meter(tmp_path, "sh", "-c", "exit 3")
    assert rc == 3 and usage["exit_code"] == 3
    rc, usage = meter(tmp_path, "sh", "-c", "kill -SEGV $$")
    assert rc == -signal.SIGSEGV and usage["signal"] == signal.SIGSEGV
    rc, usage = meter(tmp_path, "/no/such/program")
    assert rc == 127 and usage["exit_code"] == 127


def test_a_signal_to_the_meter_reaches_the_command(tmp_path):
    out = tmp_path / "usage.json"
    proc = subprocess.Popen([str(paths.tool("process-meter")), "--out", str(out), "--", "sleep", "60"])
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == -signal.SIGTERM
    assert json.loads(out.read_text())["signal"] == signal.SIGTERM


def test_usage_is_refused_without_its_arguments():
    proc = subprocess.run([str(paths.tool("process-meter")), "true"], capture_output=True, text=True)
    assert proc.returncode == 2 and "usage: process-meter" in proc.stderr


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_what_the_command_leaves_running_is_killed_and_named(tmp_path):
    # The command forks a process that outlives it (its pid printed): named, and gone when the meter is.
    pids = tmp_path / "pids"
    rc, usage = meter(tmp_path, "bash", "-c", f"sleep 300 & echo $! > {pids}; exit 4")
    left_pid = int(pids.read_text())
    assert rc == 4 and usage["exit_code"] == 4
    assert usage["left_running"] == [{"pid": left_pid, "command": "sleep 300"}]
    assert not _alive(left_pid)


def test_a_process_left_behind_has_its_cpu_counted_and_its_children_killed(tmp_path):
    # A daemon of the usual kind (its own session, its parent gone) that spins 0.4 s of CPU, then forks a child that
    # sleeps, and waits for it; the command ends once the daemon has said both pids. The daemon's CPU is the
    # command's, and the daemon and then its child (which comes to the meter when the daemon dies) are named and
    # killed. The meter takes its grace (1 s) after the command's end, which is where wall_s stops.
    pids = tmp_path / "pids"
    spin = ("import os, subprocess, time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
            f"c = subprocess.Popen(['sleep', '300'])\nopen({str(pids)!r} + '.tmp', 'w').write(f'{{os.getpid()}} "
            f"{{c.pid}}')\nos.rename({str(pids)!r} + '.tmp', {str(pids)!r})\nc.wait()")
    started = time.monotonic()
    # Quoted, and waited for 30 s at most: from a checkout under a path with a space the daemon never started and
    # the wait never ended.
    rc, usage = meter(tmp_path, "bash", "-c", f"setsid {shlex.quote(sys.executable)} -c {shlex.quote(spin)} & "
                                              f"for _ in $(seq 3000); do [ -e {shlex.quote(str(pids))} ] && break; "
                                              "sleep 0.01; done")
    elapsed = time.monotonic() - started
    assert rc == 0, usage
    daemon, child = map(int, pids.read_text().split())
    assert [p["pid"] for p in usage["left_running"]] == [daemon, child], usage
    assert usage["cpu_user_s"] + usage["cpu_system_s"] >= 0.39, usage
    assert usage["wall_s"] + 1.0 <= elapsed, (usage, elapsed)
    assert not _alive(daemon) and not _alive(child)


def test_nothing_is_named_when_nothing_is_left(tmp_path):
    rc, usage = meter(tmp_path, "bash", "-c", "sleep 0.1 & wait")
    assert rc == 0 and usage["left_running"] == []
