"""The live transports end to end: tcpreplay -> UDP, serial-replay -> socat -> serial,
real TCP subscribers, reconciliation, teardown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from itchbench.analysis import logs
from itchbench.captures import faults
from itchbench.captures.digest import sim_bbo
from itchbench.runs import runner

from live_helpers import config, kill_when_running, leftover_processes, make_capture, summary_of
from pcap_edit import record_offsets

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


@pytest.fixture(scope="session")
def short_day(tmp_path_factory) -> Path:
    return make_capture(tmp_path_factory.mktemp("cap"), "day.pcap", "--profile", "nasdaq-day", "--messages", "3000",
                        "--symbol-count", "20", "--seed", "7")


HOST_SYSCTLS = ["net.ipv4.conf.all.route_localnet", "net.ipv4.conf.lo.route_localnet",
                "net.ipv4.conf.all.accept_local", "net.ipv4.conf.lo.accept_local"]


def host_state() -> tuple[str, str]:
    sysctls = subprocess.run(["sysctl", *HOST_SYSCTLS], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return sysctls, links


def test_udp_runs_leave_the_host_network_untouched(short_day, tmp_path):
    before = host_state()
    for i in range(5):  # the namespace set-up used to race with unshare
        runner.execute(config(short_day, "udp", replay={"rate": "topspeed"}), f"host{i}", root=tmp_path, echo=False)
        assert host_state() == before


def test_udp_run_matches_simulation_and_reconciles(short_day, tmp_path):
    run = runner.execute(config(short_day, "udp", replay={"rate": "pps", "pps": 20000}, subscribers=2),
                         "udp", root=tmp_path, echo=False)
    s = summary_of(run)
    rec = s["reconciliation"]
    assert s["complete"] and rec["balanced"], rec["checks"]
    udp = rec["udp"]
    assert udp["sender_sent"] == udp["capture_datagrams"] == udp["kernel_delivered"] == udp["gateway_datagrams"]
    assert udp["kernel_dropped"] == 0 and rec["loss"]["messages_not_applied"] == 0 and s["lossless"]
    assert s["verdict"]["status"] == "lossless" and s["verdict"]["exit_status"] == 0
    assert rec["checks"]["BBO digest = simulation's digest"]
    assert s["bbo"]["digest"] == sim_bbo(short_day)[0]
    # Both real subscribers got the BBO stream, byte for byte the BBO log.
    assert [sub["identical_to_bbo_log"] for sub in rec["subscribers"]] == [True, True]
    assert rec["subscribers"][0]["frames"] == s["bbo"]["events"] > 100
    # Kernel receive timestamps stamped every datagram.
    assert s["gateway"]["udp"]["kernel_timestamps"] == udp["gateway_datagrams"]
    log = logs.read_latency(run / "latency.lat")
    assert log.header["stages"] == list(logs.STAGE_STAMPS)  # UDP: the kernel's stamp and every stage, 64 bytes
    lat = log.records
    # The kernel's stamp, moved onto the stage clock, comes before the read returned, which comes before decoding;
    # but those the gateway left out (a bracket too wide, a set of CLOCK_REALTIME: gateway/source/kernel_stamps.hpp),
    # 0 for each of their datagram's messages: one at least, at most all the capture's past one a datagram.
    kept = lat["t_kernel"] > 0
    unplaced, missing = s["gateway"]["udp"]["kernel_timestamps_unplaced"], int((~kept).sum())
    assert unplaced <= missing <= unplaced + len(lat) - udp["gateway_datagrams"] and (missing == 0) == (unplaced == 0)
    assert (lat["t_kernel"][kept] <= lat["t_read"][kept]).all()
    assert (lat["t_read"] <= lat["t_decoded"]).all()


def test_a_tcp_subscriber_killed_mid_run_is_named_with_its_signal(short_day, tmp_path):
    # The pool of two TCP subscribers (one process) crashes while the feed runs (at 200 packets a second, seconds
    # long: far longer than the half second the kill waits, on a busy machine too). Before, what it had received
    # read as a prefix the gateway had closed: LOSSLESS, exit 0.
    killer = kill_when_running("bbo-tcp-subscribers --port", signal.SIGSEGV, 0.5)
    run = runner.execute(config(short_day, "udp", replay={"rate": "pps", "pps": 200}, subscribers=2),
                         "killed-subscriber", root=tmp_path, echo=False)
    killer.join()
    s = summary_of(run)
    assert s["verdict"]["status"] == "unbalanced" and s["verdict"]["exit_status"] == 1, s["verdict"]["headline"]
    for k in (0, 1):
        assert f"subscriber {k} (TCP) ended without failure (killed by SIGSEGV)" in s["verdict"]["headline"]
    assert leftover_processes() == []


def test_serial_run_matches_simulation_and_reconciles(short_day, tmp_path):
    run = runner.execute(config(short_day, "serial", serial={"baud": 2_000_000}), "serial", root=tmp_path, echo=False)
    s = summary_of(run)
    rec = s["reconciliation"]
    assert s["complete"] and rec["balanced"], rec["checks"]
    assert rec["serial"]["lines_sent"] == rec["serial"]["lines_good"] == 3000
    assert rec["checks"]["BBO digest = simulation's digest"]
    assert rec["subscribers"][0]["identical_to_bbo_log"]
    # Paced at the baud, the line is never driven faster than it; a sender that falls behind (a busy machine: 1,291
    # of 3,000 lines late, utilisation 0.76) says so in its late lines rather than passing for a full line.
    serial = rec["serial"]
    assert serial["line_utilisation"] <= 1.001
    assert serial["line_utilisation"] > 0.95 or serial["late_lines"] > 0, serial
    lat = logs.read_latency(run / "latency.lat")
    assert lat.header["origin_clock"] == "sender-monotonic"
    # A pty has no kernel receive stamp: the log holds the read and every later stage, no kernel stamp.
    assert lat.header["stages"] == ["t_read", "t_decoded", "t_book", "t_published"]
    one_way = lat.records["t_read"].astype("int64") - lat.records["t_origin"].astype("int64")
    assert (one_way > 0).all()  # received after the line's first byte was due


def test_garbage_and_corrupt_lines_are_counted_and_skipped(short_day, tmp_path):
    run = runner.execute(config(short_day, "serial", serial={"baud": 2_000_000, "garbage_every": 100,
                                                             "corrupt_every": 250}),
                         "serial-faults", root=tmp_path, echo=False)
    s = summary_of(run)
    rec = s["reconciliation"]
    ser = rec["serial"]
    assert rec["balanced"], rec["checks"]
    assert ser["lines_bad"] == 3000 // 250 and ser["lines_good"] == 3000 - 12
    assert ser["garbage_bytes"] == (3000 // 100) * 9
    assert rec["missing"] == 12 and not s["lossless"]  # every damaged line is a counted gap
    # The corruption was declared (serial.corrupt_every): accounted exactly, so the run passes.
    assert s["verdict"]["status"] == "faults_accounted" and s["verdict"]["exit_status"] == 0
    assert rec["checks"]["bad lines = lines corrupted by serial-replay"]
    # Each damaged line is flagged in the send log: every 250th line of the 3,000, whose messages are seqs 1 on.
    assert faults.corrupted_lines(run / "send.log").tolist() == list(range(250, 3001, 250))


@pytest.mark.parametrize("policy", ["drop", "disconnect"])
def test_stuck_subscriber_never_slows_the_gateway(tmp_path, policy):
    big = make_capture(tmp_path, "big.pcap", "--profile", "nasdaq-day", "--messages", "150000", "--symbol-count", "50")
    values = config(big, "udp", replay={"rate": "pps", "pps": 40000}, subscribers=2, subscriber_modes=["stuck"],
                    gateway={"subscriber_queue": 4096, "slow_subscriber": policy})
    run = runner.execute(values, f"stuck-{policy}", root=tmp_path, echo=False)
    s = summary_of(run)
    rec = s["reconciliation"]
    pub = s["gateway"]["publisher"]
    assert s["bbo"]["events"] > 20000  # far more than a queue and the socket buffers hold
    # The hot path never waited: every message processed, nothing refused by the ring.
    assert s["complete"] and s["lossless"], rec
    # What the stuck one lost is counted against it alone; the run stands.
    stuck = next(sub for sub in rec["subscribers"] if sub["mode"] == "stuck")
    assert (stuck["frames_dropped"] > 0) if policy == "drop" else (stuck["closed_by"] == ["policy"])
    assert s["verdict"]["status"] == "lossless", s["verdict"]
    assert pub["ring_dropped"] == 0 and pub["published"] == s["bbo"]["events"]
    if policy == "drop":
        assert pub["frames_dropped"] > 0 and pub["slow_disconnects"] == 0
    else:
        assert pub["slow_disconnects"] == 1
    # The subscriber that reads kept receiving everything.
    reader = next(sub for sub in rec["subscribers"] if sub["mode"] == "fast")
    assert reader["identical_to_bbo_log"] and reader["frames"] == s["bbo"]["events"]
    # What the stuck one did get, before it was cut off or between its drops, was the log's own frames.
    closed = ", closed by the gateway" if policy == "disconnect" else ""
    assert rec["checks"][f"subscriber {stuck['index']} (TCP, stuck{closed}) received only the BBO log's frames, in its "
                         "order"]


def test_realtime_options_are_granted_and_recorded(short_day, tmp_path):
    values = config(short_day, "udp", replay={"rate": "topspeed"},
                    gateway={"cpu": 1, "publisher_cpu": 0, "sched_fifo": 10, "mlockall": True})
    run = runner.execute(values, "rt", root=tmp_path, echo=False)
    summary = summary_of(run)
    rt = summary["gateway"]["realtime"]
    assert rt["cpu"] == {"requested": True, "value": 1, "granted": True, "error": ""}
    assert rt["sched_fifo"]["granted"] and rt["sched_fifo"]["value"] == 10
    assert rt["mlockall"]["granted"] and rt["publisher_cpu"]["granted"]
    # The sender and the subscriber were kept off the receive thread's CPU.
    others = sorted(set(os.sched_getaffinity(0)) - {1})
    assert summary["transport_details"].get("testbench_cpus") == (others or None)
    assert summary["lossless"], summary["verdict"]["headline"]


def test_a_realtime_option_not_granted_is_a_clear_error(short_day, tmp_path):
    values = config(short_day, "udp", gateway={"cpu": 999})
    run = runner.execute(values, "bad-cpu", root=tmp_path, echo=False)
    s = summary_of(run)
    assert s["complete"] is False and "cpu 999 is not available to this process" in s["error"]
    assert s["failure"]["kind"] == "gateway_failed" and s["verdict"]["exit_status"] == 1
    assert leftover_processes() == []


def _interrupt(tmp_path: Path, scenario_text: str, sig: int) -> tuple[int, str]:
    scen = tmp_path / "long.toml"
    scen.write_text(scenario_text)
    # The harness as a terminal starts it: Ctrl-C's default. A suite started in the background of a shell inherits
    # SIGINT ignored, and Python then never raises KeyboardInterrupt: the run would go on as if nothing was sent.
    proc = subprocess.Popen([sys.executable, "-m", "itchbench.cli", "run", str(scen), "--out", str(tmp_path / "runs")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    out = ""
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while "replaying" not in out and time.monotonic() < deadline:
        out += (proc.stdout.read() or b"").decode()
        time.sleep(0.05)
    assert "replaying" in out, out
    proc.send_signal(sig)
    proc.wait(20)
    time.sleep(0.5)
    return proc.returncode, out


@pytest.mark.parametrize("transport", ["udp", "serial"])
def test_ctrl_c_tears_everything_down(short_day, tmp_path, transport):
    assert leftover_processes() == []
    text = (f'name = "long"\ntransport = "{transport}"\ncapture = "{short_day}"\n'
            '[replay]\nrate = "pps"\npps = 100\n[serial]\nbaud = 9600\n')
    rc, _ = _interrupt(tmp_path, text, signal.SIGINT)
    assert rc == 130
    assert leftover_processes() == []
    (run,) = list((tmp_path / "runs").iterdir())
    s = summary_of(run)
    assert s["complete"] is False and s["failure"]["kind"] == "interrupted"
    assert s["verdict"]["headline"].startswith("INCOMPLETE (interrupted)")
    # This run's pty pair's directory is gone (another test's serial run may hold one of its own meanwhile).
    pty_dir = s["transport_details"].get("pty_dir")
    assert (pty_dir is None) == (transport != "serial") and not (pty_dir and Path(pty_dir).exists())


def test_harness_killed_outright_leaves_nothing_behind(short_day, tmp_path):
    text = f'name = "long"\ntransport = "udp"\ncapture = "{short_day}"\n[replay]\nrate = "pps"\npps = 100\n'
    rc, _ = _interrupt(tmp_path, text, signal.SIGKILL)
    assert rc == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while leftover_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftover_processes() == []


def test_a_run_without_subscribers(short_day, tmp_path):
    # LISTENING and READY then arrive in one read: neither may be lost.
    run = runner.execute(config(short_day, "udp", replay={"rate": "topspeed"}, subscribers=0), "nosub",
                         root=tmp_path, echo=False)
    s = summary_of(run)
    assert s["complete"] and s["reconciliation"]["balanced"] and s["reconciliation"]["subscribers"] == []


def test_busy_poll_receive_loop(short_day, tmp_path):
    run = runner.execute(config(short_day, "udp", replay={"rate": "pps", "pps": 20000}, gateway={"busy_poll": True}),
                         "busy", root=tmp_path, echo=False)
    s = summary_of(run)
    assert s["complete"] and s["reconciliation"]["balanced"] and s["lossless"]
    assert s["gateway"]["udp"]["busy_poll"] is True
    assert s["gateway"]["stop_reason"] == "end of session"
    assert s["bbo"]["digest"] == sim_bbo(short_day)[0]


def test_a_live_udp_run_counts_its_stage_times_in_histograms(tool, tmp_path):
    """itch-gateway --latency-histogram on the UDP source, fed by udp-replay on loopback: no per-message log, and
    each message's times counted once, the kernel's receive stamp (wakeup) included."""
    from itchbench import paths
    from itchbench.captures import fixtures

    fx = next(f for f in fixtures.load_manifest() if f.name == "nasdaq-day-sample")
    out = tmp_path / "gw"
    out.mkdir()
    gw = subprocess.Popen([str(paths.tool("itch-gateway")), "--source", "udp", "--port", "0", "--out", str(out),
                           "--latency-histogram", "--idle-exit-ms", "5000", "--rcvbuf", str(16 << 20)],
                          stdout=subprocess.PIPE, text=True)  # room for the whole capture: no drop on a busy machine
    try:
        listening = gw.stdout.readline().split()
        assert listening[0] == "LISTENING", listening
        port = next(w.split("=")[1] for w in listening if w.startswith("udp="))
        assert gw.stdout.readline().strip() == "READY"
        sent = tool("udp-replay", fx.path, "--port", port, "--rate", "pps", "--pps", "20000")
        assert sent.returncode == 0, sent.stderr
        assert gw.wait(timeout=60) == 0
    finally:
        if gw.poll() is None:
            gw.kill()
    assert not (out / "latency.lat").exists()
    report = json.loads((out / "gateway.json").read_text())
    hist = report["latency_histogram"]
    datagrams = len(record_offsets(fx.path.read_bytes()))  # the capture's records, counted from its bytes
    assert report["stop_reason"] == "end of session" and report["udp"]["kernel_timestamps"] == datagrams
    # 8,000 messages, each datagram's with its kernel stamp but those the gateway left out (a bracket too wide, a set
    # of CLOCK_REALTIME: gateway/source/kernel_stamps.hpp), which only the wake-up needs; publish times for the
    # golden count of BBO events.
    for stage in ("parse", "book", "receive_to_book"):
        assert hist[stage]["count"] == 8000, (stage, hist[stage])
    # A datagram left out leaves out each of its messages: one at least, and at most all the capture's past one a
    # datagram.
    unplaced, missing = report["udp"]["kernel_timestamps_unplaced"], 8000 - hist["wakeup"]["count"]
    assert unplaced <= missing <= unplaced + 8000 - datagrams and (missing == 0) == (unplaced == 0)
    assert hist["publish"]["count"] == hist["receive_to_published"]["count"] == fx.golden["bbo_events"]
    assert hist["backwards"] == 0
