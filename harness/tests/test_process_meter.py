"""process-meter: what a gateway's process used, measured from a small parent. The expected figures come from
the commands themselves (bytes they make resident, CPU they burn, the status or signal they end with), never from
the meter."""

from __future__ import annotations

import json
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
