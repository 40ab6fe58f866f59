"""Each run records the noise it ran in (runs/noise.py): per-CPU steal and
interrupt time from /proc/stat, and each gateway thread's preemptions,
faults and migrations as the kernel counts them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from itchbench import rundir
from itchbench.runs import noise, runner

from live_helpers import config, make_capture

pytestmark = pytest.mark.alone


TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def test_cpu_noise_is_the_difference_of_two_readings_in_milliseconds(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    # user nice system idle iowait irq softirq steal (guest columns ignored)
    before.write_text("cpu  1 1 1 1 1 1 1 1 0 0\ncpu0 100 0 50 1000 0 5 5 10 0 0\ncpu1 10 0 10 10 0 0 0 0 0 0\n")
    after.write_text("cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 160 0 70 1100 20 7 8 30 0 0\ncpu1 10 0 10 110 0 0 0 0 0 0\n")
    got = noise.cpu_noise(noise.cpu_times(before), noise.cpu_times(after))
    # cpu0: +60 user +20 system +100 idle +20 iowait +2 irq +3 softirq +20 steal = 225 ticks, 105 busy
    assert got["cpu0"] == {"steal_ms": 20 * TICK_MS, "irq_ms": 2 * TICK_MS, "softirq_ms": 3 * TICK_MS,
                           "busy_ms": 105 * TICK_MS, "total_ms": 225 * TICK_MS, "steal_share": 20 / 225}
    assert got["cpu1"]["busy_ms"] == 0 and got["cpu1"]["total_ms"] == 100 * TICK_MS
    assert list(got) == ["cpu0", "cpu1"]


@pytest.fixture(scope="session")
def long_capture(tmp_path_factory) -> Path:
    return make_capture(tmp_path_factory.mktemp("noise"), "day.itch", "--profile", "nasdaq-day", "--messages",
                        "3000000", "--format", "itch", "--seed", "5")


def _hot_thread(capture: Path, root: Path, label: str) -> dict:
    run = runner.execute(config(capture, "sim", gateway={"cpu": 1}), label, root=root, echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    hot = s["noise"]["hot_thread"]
    assert hot["name"] == "itch-gateway" and hot["affinity"] == "1" and hot["last_cpu"] == 1
    assert {t["name"] for t in s["noise"]["threads"]} >= {"itch-gateway", "log-provision"}
    return s["noise"]


@pytest.mark.skipif(os.cpu_count() < 2, reason="needs a second CPU to pin to")
def test_a_busy_competitor_on_the_hot_threads_cpu_shows_as_preemptions(long_capture, tmp_path):
    quiet = _hot_thread(long_capture, tmp_path, "quiet")
    spinner = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", "while True: pass"])
    try:
        busy = _hot_thread(long_capture, tmp_path, "busy")
    finally:
        spinner.kill()
        spinner.wait()
    # Two CPU-bound tasks on one CPU take turns: the hot thread waits, runnable, about half of its time, and is
    # preempted at every turn. (The quiet run is not a baseline: the machine is shared and noisy.)
    hot = busy["hot_thread"]
    assert hot["run_delay_ns"] >= 0.3 * (hot["on_cpu_ns"] + hot["run_delay_ns"]), hot
    assert hot["involuntary_switches"] >= 10, hot
    assert quiet["hot_thread"]["on_cpu_ns"] > 0
    assert busy["cpus"]["cpu1"]["busy_ms"] > 0
    assert "waited for a CPU" in busy["words"] and "preemptions" in busy["words"]


def _hot(policy: str, ran_ms: float, waited_ms: float) -> dict:
    return {"name": "itch-gateway", "policy": policy, "on_cpu_ns": int(ran_ms * 1e6), "run_delay_ns": int(waited_ms * 1e6),
            "involuntary_switches": 800, "voluntary_switches": 10, "major_faults": 0, "minor_faults": 0,
            "migrations": 0, "affinity": "1"}


def test_rt_throttling_is_named_when_the_figures_point_there():
    throttling = {"active": True, "runtime_us": 950_000, "period_us": 1_000_000}
    # 17 s of a never-sleeping SCHED_FIFO thread: 50 ms a second taken, 850 ms waited (the busy-poll tail).
    words = noise.summarise({}, {"threads": [_hot("SCHED_FIFO", 16_150, 850)]}, throttling)["cause"]
    assert "RT throttling (kernel.sched_rt_runtime_us = 950,000 of 1,000,000)" in words
    assert "up to 50 ms" in words and "it waited 850.0 ms over 17.0 s" in words
    # Not named: a thread that barely waited, one that is not real-time, or a kernel that does not throttle.
    assert noise.summarise({}, {"threads": [_hot("SCHED_FIFO", 17_000, 1)]}, throttling)["cause"] == ""
    assert noise.summarise({}, {"threads": [_hot("SCHED_OTHER", 16_150, 850)]}, throttling)["cause"] == ""
    assert noise.summarise({}, {"threads": [_hot("SCHED_FIFO", 16_150, 850)]},
                           {"active": False, "runtime_us": -1, "period_us": 1_000_000})["cause"] == ""
