"""End to end, hop by hop (issue: every hop stamped on one clock): udp-replay
and serial-replay stamp what they send, the gateway every stage, each
subscriber what it receives. Expected values come from physics and from the
definitions: stamps in path order, hops that add up, a line that cannot
arrive before its bytes were on the wire, a stall that only the intended
time sees whole."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from itchbench.analysis import hops, logs
from itchbench.runs import runner

from live_helpers import config, make_capture, summary_of

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


@pytest.fixture(scope="session")
def day(tmp_path_factory) -> Path:
    return make_capture(tmp_path_factory.mktemp("cap"), "day.pcap", "--profile", "nasdaq-day", "--messages", "3000",
                        "--symbol-count", "20", "--seed", "11")


@pytest.fixture(scope="session")
def udp_run(day, tmp_path_factory) -> Path:
    values = config(day, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000},
                    subscribers=2, subscriber_modes=["slow"])
    return runner.execute(values, "hops-udp", root=tmp_path_factory.mktemp("udp"), echo=False)


def _offset(run: Path) -> int:
    return abs(json.loads((run / "gateway.json").read_text())["clock"]["offset_from_monotonic_ns_at_end"])


def test_udp_replay_run_is_lossless_and_stamps_every_packet(udp_run):
    s = summary_of(udp_run)
    assert s["lossless"], s["verdict"]["headline"]
    udp = s["reconciliation"]["udp"]
    assert udp["sender"] == "udp-replay" and udp["sender_sent"] == udp["capture_datagrams"] == udp["kernel_delivered"]
    send = logs.read_log(udp_run / "send.log", logs.KIND_SEND)
    assert send.complete and len(send.records) == udp["capture_datagrams"]
    assert (send.records["t_sent"] >= send.records["t_intended"]).all()
    assert int(send.records["count"].sum()) == s["reconciliation"]["received"]
    # 5,000 packets a second, against absolute deadlines: the intended times are 200 µs apart.
    assert np.all(np.diff(send.records["t_intended"].astype(np.int64)) == 200_000)


@pytest.mark.alone  # a stamp order within 3 µs across processes: a busy CPU moves the clocks' offset
def test_stamps_are_in_path_order_across_processes(udp_run):
    ch = hops.chain(udp_run)
    f = ch.frame
    slack = _offset(udp_run) + 2_000  # the stage clock's distance from CLOCK_MONOTONIC, and rounding
    assert (f["t_intended"] > 0).all() and (f["t_sent"] > 0).all() and (f["t_kernel"] > 0).all()
    assert (f["t_intended"] <= f["t_sent"]).all()                          # one process: the sender
    assert (f["t_sent"] <= f["t_kernel"] + slack).all()                    # sender -> gateway's clock
    assert (f["t_kernel"] <= f["t_read"]).all() and (f["t_read"] <= f["t_decoded"]).all()
    assert (f["t_decoded"] <= f["t_book"]).all()
    bbo = f[f["bbo"]]
    assert (bbo["t_book"] <= bbo["t_published"]).all()
    fast = bbo[bbo["t_sub_1"] != 0]
    assert len(fast) == len(bbo)                                           # the fast subscriber got every event
    assert (fast["t_published"] <= fast["t_sub_1"] + slack).all()           # gateway's clock -> subscriber


def test_hops_add_up_to_the_end_to_end_figure(udp_run):
    lat = summary_of(udp_run)["latency"]["hops"]
    for rows in [lat["to_book"], *lat["to_subscriber"].values()]:
        *parts, total = rows
        assert total["hop"].startswith("end to end")
        assert sum(r["mean"] for r in parts) == pytest.approx(total["mean"], rel=1e-9, abs=0.01)
        assert sum(r["share_of_mean"] for r in parts) == pytest.approx(1.0, abs=1e-8)  # rounded to 1e-9 each
        assert parts[-1]["cumulative_mean"] == pytest.approx(total["mean"], rel=1e-9, abs=0.01)
    names = [r["hop"] for r in lat["to_book"]]
    assert names[:5] == ["sender (due → send called)", "network (send called → kernel receive)",
                         "wake-up (kernel → read returned)", "parse (user-space receipt → parse complete)",
                         "book (decoded → book applied)"]


def test_a_slow_subscriber_shows_in_its_own_hop_only(udp_run):
    lat = summary_of(udp_run)["latency"]["hops"]["to_subscriber"]
    slow, fast = {r["hop"]: r for r in lat["0"]}, {r["hop"]: r for r in lat["1"]}
    slow_hop, fast_hop = slow["subscriber 0 (published → received)"], fast["subscriber 1 (published → received)"]
    assert slow_hop["p50"] > 20 * max(fast_hop["p50"], 1_000)  # reads 4 KiB every 50 ms: milliseconds behind
    for name in ("parse (user-space receipt → parse complete)", "book (decoded → book applied)"):
        # Before the publisher the two chains are one: the slow reader leaves them alone.
        assert slow[name]["p50"] == pytest.approx(fast[name]["p50"], rel=0.5, abs=2_000)
    report = (udp_run / "report.md").read_text()
    assert "### BBO events, to subscriber 0 (slow)" in report and "### BBO events, to subscriber 1 (fast)" in report


def _process(root: Path, program: bytes) -> int | None:
    """The pid of a process of this run (its command line names the run's folder)."""
    for pid in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(program) and str(root).encode() in b" ".join(cmd):
            return int(pid)
    return None


def _run_with_a_stall(values: dict, root: Path, sender: bytes, after_s: float, stall_s: float) -> Path:
    """Run a configuration; after_s once its sender is sending, stop its gateway (SIGSTOP) for stall_s."""
    result: dict[str, Path] = {}
    thread = threading.Thread(target=lambda: result.update(run=runner.execute(values, "stall", root=root, echo=False)))
    thread.start()
    deadline = time.monotonic() + 60
    while _process(root, sender) is None and time.monotonic() < deadline:
        time.sleep(0.005)
    gateway = _process(root, b"itch-gateway")
    assert gateway is not None, "the run's sender never started"
    time.sleep(after_s)
    os.kill(gateway, signal.SIGSTOP)
    time.sleep(stall_s)
    os.kill(gateway, signal.SIGCONT)
    thread.join(180)
    return result["run"]


def _from(frame, start: str) -> np.ndarray:
    return (frame["t_book"] - frame[start]).to_numpy()


def test_a_50ms_stall_shows_in_the_intended_time_distribution(day, tmp_path):
    # 3,000 messages in 600 packets at 1,000 a second: the stall comes in the middle of the run.
    values = config(day, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 1000}, subscribers=0)
    run = _run_with_a_stall(values, tmp_path, b"udp-replay", after_s=0.3, stall_s=0.05)
    s = summary_of(run)
    assert s["lossless"], s["verdict"]["headline"]
    f = hops.chain(run).frame
    from_intended = _from(f, "t_intended")
    # The whole stall, where it belongs: the first packet due after SIGSTOP waited for it, less the part of a
    # packet interval (1 ms) that had passed when the signal landed.
    assert from_intended.max() >= 50e6 - 2e6
    # Every packet due during the stall waited for the gateway: some 40 of them at least (50 ms at 1,000 a
    # second, less the last 10 ms). No upper bound: a slow start on a busy machine makes the first ones late too.
    late_packets = f[from_intended > 10e6]["t_intended"].nunique()
    assert late_packets >= 35, late_packets
    co = {r["measure"]: r for r in s["latency"]["hops"]["coordinated_omission"]}
    assert co["from the intended send time (free of coordinated omission)"]["max"] == from_intended.max()
    assert co["service time (read returned → book)"]["p99"] < 1e6  # the gateway's own work never saw it


SERIAL_BAUD = 4_000_000  # the fastest rate a pty takes: 400 kB/s


@pytest.fixture(scope="session")
def stalled_serial_run(tmp_path_factory) -> Path:
    """A serial run whose gateway stops for 400 ms: longer than the pty pair and socat can buffer at this rate,
    so serial-replay's writes block, as a sender that waits for its receiver does."""
    root = tmp_path_factory.mktemp("stall")
    capture = make_capture(root, "long.pcap", "--profile", "nasdaq-day", "--messages", "20000", "--seed", "12")
    return _run_with_a_stall(config(capture, "serial", serial={"baud": SERIAL_BAUD}), root, b"serial-replay",
                             after_s=1.0, stall_s=0.4)


def test_a_stall_that_holds_the_sender_back_hides_from_the_actual_send_time(stalled_serial_run):
    s = summary_of(stalled_serial_run)
    assert s["lossless"], s["verdict"]["headline"]
    f = hops.chain(stalled_serial_run).frame
    from_intended, from_sent = _from(f, "t_intended"), _from(f, "t_sent")
    assert from_intended.max() >= 400e6
    # Every line due during the stall was late from its intended time; only those already in the pty when the
    # gateway stopped were late from their write: the rest were written late, when the pty had room again.
    late_intended = int((from_intended > 50e6).sum())
    late_sent = int((from_sent > 50e6).sum())
    # How many more depends on how busy the machine was (3x idle, 2.8x seen under load): more, in any case.
    assert late_intended > late_sent, (late_intended, late_sent)
    co = {r["measure"]: r for r in s["latency"]["hops"]["coordinated_omission"]}
    assert co["from the intended send time (free of coordinated omission)"]["p99"] > \
        co["from the actual send time"]["p99"]


def test_serial_one_way_is_never_below_the_lines_serialisation_time(stalled_serial_run):
    send = logs.read_log(stalled_serial_run / "send.log", logs.KIND_SEND).records
    lat = logs.read_latency(stalled_serial_run / "latency.lat").records
    order = np.argsort(send["seq"])
    line_ns = send["bytes"][order].astype(np.float64) * 10 * 1e9 / SERIAL_BAUD  # 8N1: 10 bits a byte
    idx = np.searchsorted(send["seq"][order], lat["seq"])
    one_way = lat["t_read"].astype(np.int64) - send["t_intended"][order][idx].astype(np.int64)
    slack = _offset(stalled_serial_run) + 2_000
    assert (one_way + slack >= line_ns[idx]).all()
    assert "t_kernel" not in lat.dtype.names  # a serial line has no kernel stamp: the log holds none
