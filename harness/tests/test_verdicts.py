"""Each verdict, as a CI job would see it: the headline, the summary fields
and the exit status (docs/verdicts.md)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from itchbench.analysis import logs
from itchbench.cli import main as itchbench_main
from itchbench.commands.common import run_line
from itchbench.runs import runner

from live_helpers import config, leftover_processes, make_capture, summary_of


@pytest.fixture(scope="session")
def day(tmp_path_factory) -> Path:
    return make_capture(tmp_path_factory.mktemp("cap"), "day.pcap", "--profile", "nasdaq-day", "--messages", "3000",
                        "--symbol-count", "20", "--seed", "7")


def test_lossy_udp_run_says_lost_and_fails(tmp_path, capsys):
    big = make_capture(tmp_path, "big.pcap", "--profile", "nasdaq-day", "--messages", "200000", "--seed", "3")
    scen = tmp_path / "lossy.toml"
    scen.write_text(f'name = "lossy"\ntransport = "udp"\ncapture = "{big}"\nsubscribers = 0\n'
                    '[replay]\nrate = "topspeed"\n[gateway]\nrcvbuf = 2048\n')
    assert itchbench_main(["run", str(scen), "--out", str(tmp_path / "runs")]) == 1
    out = capsys.readouterr().out
    assert "LOST:" in out and "kernel dropped" in out and "— FAILED" in out
    (run,) = (tmp_path / "runs").iterdir()
    s = summary_of(run)
    loss = s["reconciliation"]["loss"]
    assert s["complete"] and s["balanced"] and not s["lossless"]
    assert loss["kernel_dropped_datagrams"] > 0 and loss["messages_not_applied"] > 0
    assert s["verdict"] == {"status": "lost", "headline": s["verdict"]["headline"], "exit_status": 1}


def _gateway_pid(run_root: Path, timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(["pgrep", "-f", f"itch-gateway .*--out {run_root}"], capture_output=True, text=True)
        pids = [int(p) for p in proc.stdout.split()]
        if pids:
            return pids[-1]
        time.sleep(0.05)
    raise AssertionError("no gateway process appeared")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_gateway_killed_mid_run_is_incomplete_and_named(day, tmp_path, sig):
    values = config(day, "udp", replay={"rate": "pps", "pps": 200})
    killer = threading.Thread(target=lambda: (time.sleep(1.5), __import__("os").kill(_gateway_pid(tmp_path), sig)))
    killer.start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = runner.execute(values, "killed", root=tmp_path, echo=False)
    killer.join()
    s = summary_of(run)
    assert s["failure"]["kind"] == "gateway_crashed"
    assert f"killed by {sig.name}" in s["verdict"]["headline"] and s["verdict"]["exit_status"] == 1
    assert s["verdict"]["status"] == "incomplete" and not s["complete"]
    # The logs it left open are the run's to say, in words, not a warning of the reader's on the console.
    assert not [w for w in caught if issubclass(w.category, logs.TruncatedLogWarning)]
    # What the gateway wrote before it died reads to its last whole record, and the run says so, never that it
    # applied nothing (it wrote no counters).
    with pytest.warns(logs.TruncatedLogWarning, match="never closed"):
        lat = logs.read_latency(run / "latency.lat")
    with pytest.warns(logs.TruncatedLogWarning, match="never closed"):
        events = len(logs.read_bbo(run / "bbo.bbo").records)
    assert 0 < len(lat.records) < 3000
    assert s["left_in_logs"] == {"messages": len(lat.records), "messages_log_closed": False,
                                 "bbo_events": events, "bbo_events_log_closed": False}
    assert run_line(s) == (f"nothing reconciled: the gateway wrote no counters; its logs hold {len(lat.records):,} "
                           f"messages and {events:,} BBO events to where it stopped")
    assert leftover_processes() == []


def test_gateway_that_idles_out_while_the_sender_sends_fails_the_run(tmp_path):
    # One message a second: far longer gaps than the gateway's 300 ms idle exit.
    slow = make_capture(tmp_path, "slow.pcap", "--profile", "seed-workload", "--messages", "40", "--rate", "1")
    values = config(slow, "udp", replay={"rate": "capture"}, gateway={"idle_exit_ms": 300})
    run = runner.execute(values, "idle", root=tmp_path, echo=False)
    s = summary_of(run)
    assert s["failure"]["kind"] == "gateway_stopped_early"
    assert "idle timeout" in s["verdict"]["headline"] and "still sending" in s["verdict"]["headline"]
    assert s["verdict"]["status"] == "incomplete" and s["verdict"]["exit_status"] == 1
    assert leftover_processes() == []


def test_sigterm_of_the_harness_marks_the_run_interrupted(day, tmp_path):
    scen = tmp_path / "long.toml"
    scen.write_text(f'name = "long"\ntransport = "udp"\ncapture = "{day}"\n[replay]\nrate = "pps"\npps = 100\n')
    proc = subprocess.Popen([sys.executable, "-m", "itchbench.cli", "run", str(scen), "--out", str(tmp_path / "runs")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    _gateway_pid(tmp_path / "runs")
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=30)[0].decode()
    assert proc.returncode == 143, out
    (run,) = (tmp_path / "runs").iterdir()
    s = summary_of(run)
    assert s["failure"]["kind"] == "interrupted" and "SIGTERM" in s["verdict"]["headline"]
    # The gateway was stopped cleanly: its counters were written and reconciled.
    assert (run / "gateway.json").exists() and "reconciliation" in s
    assert leftover_processes() == []


def test_slow_and_reconnecting_subscribers_lose_only_their_own_frames(tmp_path):
    big = make_capture(tmp_path, "big.pcap", "--profile", "nasdaq-day", "--messages", "100000", "--symbol-count", "50")
    # ~8 s of replay: the reconnecting one (every 3 s) opens at least two more connections. About 6,000 frames a
    # second: a queue of 16,384 holds 2.7 s of them for the fast one, which a busy machine's CI starved of its CPU
    # for longer than a queue of 1,024 holds (it missed 4,077). The slow one reads 4 KiB every 50 ms and still
    # misses about 10,000 of the 43,253.
    values = config(big, "udp", replay={"rate": "pps", "pps": 4000}, subscribers=3,
                    subscriber_modes=["slow", "reconnect"], gateway={"subscriber_queue": 16384})
    run = runner.execute(values, "modes", root=tmp_path, echo=False)
    s = summary_of(run)
    subs = {sub["mode"]: sub for sub in s["reconciliation"]["subscribers"]}
    assert s["verdict"]["status"] == "lossless", s["verdict"]
    assert subs["fast"]["identical_to_bbo_log"] and subs["fast"]["frames_dropped"] == 0
    assert subs["slow"]["frames_dropped"] > 0 and not subs["slow"]["identical_to_bbo_log"]
    assert len(subs["reconnect"]["local_ports"]) >= 3
    # The gateway kept a report for every connection it had, and only those.
    assert len(s["gateway"]["publisher"]["subscribers"]) == 2 + len(subs["reconnect"]["local_ports"])
    assert leftover_processes() == []
