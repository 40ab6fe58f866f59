"""Progress of long work (itchbench/progress.py) and a simulation stopped part-way: the gateway takes SIGINT
between two inputs, finalizes its logs and says how far it got; the run is INCOMPLETE (interrupted), its report
covers what was taken, and progress.log holds the last line reached."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np

from itchbench import progress, rundir
from itchbench.analysis import logs
from itchbench.runs import runner
from itchbench.runs.scenario import defaults


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_says_the_rate_and_time_left_at_most_every_interval(tmp_path):
    clock, said = Clock(), []
    meter = progress.Progress("gateway", 1_000_000, estimated=True, say=said.append, log=tmp_path / "progress.log",
                              interval_s=5, clock=clock)
    clock.now += 2
    meter.update(200_000)            # 2 s in: within the interval, nothing said
    assert said == []
    clock.now += 3
    meter.update(500_000)            # 5 s in: 0.1 M/s, 500,000 left -> 5 s
    assert said == ["  gateway: 500,000 of ~1,000,000 messages (50 %), 0.10 M/s, 5 s, about 5 s left"]
    clock.now += 1
    meter.finish(600_000, how="stopped")
    meter.finish(700_000)            # said once only
    assert said[-1] == "  gateway: 600,000 of ~1,000,000 messages (60 %), 0.10 M/s, 6.0 s — stopped"
    lines = (tmp_path / "progress.log").read_text().splitlines()
    assert len(lines) == 2 and lines[1].endswith("gateway: 600,000 of ~1,000,000 messages (60 %), 0.10 M/s, 6.0 s — "
                                                 "stopped")
    unknown = progress.Progress("report", None, say=said.append, clock=clock)
    clock.now += 4
    unknown.finish(8_000_000)
    assert said[-1] == "  report: 8,000,000 messages, 2.00 M/s, 4.0 s — done"  # no total: no share, no time left


def test_the_next_piece_of_a_work_is_counted_afresh_in_its_own_units(tmp_path):
    # An output read (bytes), then judged bucket by bucket: the first piece said finished, the next counted from its
    # own start, a slow unit's rate said as it is, not as 0.00 M/s.
    clock, said, log = Clock(), [], tmp_path / "progress.log"
    meter = progress.Progress("output", 8_000_000, say=said.append, log=log, unit="bytes", interval_s=5, clock=clock)
    clock.now += 2
    meter.update(8_000_000)
    meter.next("output, bucket by bucket", 40, "buckets", how="read into buckets")
    assert said == ["  output: 8,000,000 of 8,000,000 bytes (100 %), 4.00 M/s, 2.0 s — read into buckets"]
    clock.now += 5
    meter.update(10)                     # 5 s into this piece: 2 a second, 30 left
    assert said[-1] == "  output, bucket by bucket: 10 of 40 buckets (25 %), 2.0/s, 5 s, about 15 s left"
    clock.now += 15
    meter.finish(40, how="equal")
    assert said[-1] == "  output, bucket by bucket: 40 of 40 buckets (100 %), 2.0/s, 20.0 s — equal"
    assert progress.finished(log) == [progress.Finished("output", 8_000_000, 2.0, "read into buckets"),
                                      progress.Finished("output, bucket by bucket", 40, 20.0, "equal")]


def test_the_pieces_a_progress_log_says_ended_are_read_back_and_a_running_one_is_not(tmp_path):
    clock, log = Clock(), tmp_path / "progress.log"
    gateway = progress.Progress("gateway", 1_000_000, say=None, log=log, interval_s=5, clock=clock)
    clock.now += 7.3
    gateway.update(900_000)              # a line on the way: not an end
    gateway.finish(1_000_000, how="the gateway ended by itself (exited with status 0)")
    scan = progress.Progress("report, pass 2 of 2 over the latency log", 1_000_000, estimated=True, log=log,
                             clock=clock)
    clock.now += 0.5
    scan.finish(1_000_000)
    running = progress.Progress("report, pass 1 of 2 over the latency log", None, log=log, interval_s=1, clock=clock)
    clock.now += 2
    running.update(10)
    assert progress.finished(log) == [
        progress.Finished("gateway", 1_000_000, 7.3, "the gateway ended by itself (exited with status 0)"),
        progress.Finished("report, pass 2 of 2 over the latency log", 1_000_000, 0.5, "done")]
    assert progress.finished(tmp_path / "none.log") == []


def test_a_binary_itch_files_message_count_is_estimated_from_its_head(tmp_path):
    # Messages of 12 and 38 bytes alternating, each after its 2-byte length: 54 bytes a pair.
    pair = (12).to_bytes(2, "big") + b"S" * 12 + (38).to_bytes(2, "big") + b"A" * 38
    small = tmp_path / "small.itch"
    small.write_bytes(pair * 1000)
    assert progress.estimated_itch_messages(small) == 2000  # all of it in the head: counted
    big = tmp_path / "big.itch"
    big.write_bytes(pair * (3 * progress.HEAD_BYTES // len(pair)))
    exact = 2 * (3 * progress.HEAD_BYTES // len(pair))
    # The head ends part-way through a pair, so its mean is a hair off the file's: an estimate, within 0.01 %.
    assert abs(progress.estimated_itch_messages(big) - exact) <= exact * 1e-4
    (tmp_path / "empty.itch").write_bytes(b"\0\0")
    assert progress.estimated_itch_messages(tmp_path / "empty.itch") is None


def test_a_simulation_stopped_by_sigint_finalizes_and_reports_how_far_it_got(tmp_path, tool):
    day = tmp_path / "day.itch"
    made = tool("itch-synth", "--profile", "nasdaq-day", "--seed", "5", "--messages", "12000000", "--format", "itch",
                "--out", day)
    assert made.returncode == 0, made.stderr
    stop_at_first_progress_line(tmp_path / "runs", day)
    run = runner.execute(defaults(name="day", transport="sim", capture=str(day)), "day", root=tmp_path / "runs",
                         echo=False)
    summary = rundir.read_json(run / "summary.json")
    assert summary["verdict"]["status"] == "incomplete" and summary["failure"]["kind"] == "interrupted"
    gateway = rundir.read_json(run / "gateway.json")
    took = gateway["messages_received"]
    assert gateway["stopped_by_signal"] and not gateway["complete"] and 0 < took < 12_000_000
    # The logs were finalized, not cut: every message taken has its latency record, and the report was written.
    latency = logs.read_latency(run / "latency.lat")
    assert latency.complete and len(latency.records) == took
    assert np.array_equal(latency.records["seq"][[0, -1]], [1, took])
    assert "INCOMPLETE (interrupted)" in (run / "report.md").read_text()
    last = (run / "progress.log").read_text().splitlines()[-1]
    # Of the file's count by itch-inspect before the run (12,000,000 made), not an estimate.
    assert f"gateway: {took:,} of 12,000,000 messages" in last and "exited with status 3" in last


def stop_at_first_progress_line(runs: Path, capture: Path) -> None:
    """A watcher: once the gateway under runs/ has printed its first progress line (2^20 messages in), SIGINT to
    the gateway alone, as a CI job's cancel or a Ctrl-C reaches it."""
    import threading

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for err in runs.glob("*/gateway.stderr"):
                if b"progress" in err.read_bytes():
                    subprocess.run(["pkill", "-INT", "-f", f"itch-gateway --source sim --capture {capture}"])
                    return
            time.sleep(0.01)

    threading.Thread(target=watch, daemon=True).start()


