"""A and B lines, as exchanges send a session twice (docs/exchange.md): udp-replay sends every packet on both,
each line losing packets at send time from its own seeded stream, B behind A by a skew; a gateway that takes both
and keeps the first copy of each message loses nothing that only one line lost, and what both lost comes back from
the re-request server. What each line lost is udp-replay's own record (line-faults.json), not the gateway's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths, rundir
from itchbench.runs import runner
from itchbench.runs.scenario import ScenarioError, defaults

from live_helpers import config

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SAMPLE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"
PY = paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml"


def _run(tmp_path: Path, lines: dict, *, multicast: str = "239.1.1.1", server: bool = False) -> dict:
    values = {**config(SAMPLE, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000,
                                              "multicast": multicast},
                       lines={"b": True, "seed": 7, **lines}, rerequest={"server": server}),
              "subscribers": 0, "gateway_file": str(PY)}
    run = runner.execute(values, "lines", root=tmp_path / "runs", echo=False)
    return rundir.read_json(run / "summary.json") | {"dir": str(run)}


def _lost(s: dict) -> tuple[set[int], set[int]]:
    lost = json.loads((Path(s["dir"]) / "line-faults.json").read_text())
    return set(lost["a"]), set(lost.get("b", []))


@needs_root
def test_faults_on_both_lines_are_recovered_by_the_other_line_and_the_server(tmp_path):
    s = _run(tmp_path, {"b_group": "239.1.1.2", "skew_us": 200, "a_drop": 0.02, "b_drop": 0.02}, server=True)
    a, b = _lost(s)
    r = s["reconciliation"]["recovery"]
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]
    assert (r["lost_on_wire"], r["lost_on_every_line"]) == (len(a | b), len(a & b))
    assert r["lost_on_a_only"] == len(a - b) and r["lost_on_b_only"] == len(b - a) and a & b
    assert r["answered_by_server"] == len(a & b) and r["from_the_other_line"] == len(a ^ b)


@needs_root
@pytest.mark.parametrize("faults", [{"a_drop": 0.02}, {"a_silent": "0.1:0.2"}, {"b_drop": 0.05, "skew_us": 3000}],
                         ids=["A drops", "A silent for 100 ms", "B drops, 3 ms behind"])
def test_faults_on_one_line_are_invisible_to_a_gateway_that_takes_both(tmp_path, faults):
    s = _run(tmp_path, {"b_group": "239.1.1.2", **faults})
    r = s["reconciliation"]["recovery"]
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]
    assert r["lost_on_every_line"] == 0 and r["from_the_other_line"] == r["lost_on_wire"] > 0
    assert s["reconciliation"]["bbo_check"]["equal"]


@needs_root
def test_unicast_lines_reach_two_sockets(tmp_path):
    s = _run(tmp_path, {"a_drop": 0.02}, multicast="")
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]


@needs_root
def test_what_both_lines_lost_without_a_server_is_not_recovered(tmp_path):
    s = _run(tmp_path, {"b_group": "239.1.1.2", "a_drop": 0.02, "b_drop": 0.02})
    a, b = _lost(s)
    r = s["reconciliation"]["recovery"]
    assert a & b and r["lost_on_every_line"] == len(a & b) and not r["server"]
    assert s["verdict"]["status"] in ("bbo_differs", "lost") and s["verdict"]["exit_status"] == 1


def test_the_lines_faults_are_drawn_from_their_seed(tmp_path):
    """udp-replay alone, to a loopback port nobody listens on: the same seed loses the same packets."""
    def send(seed: int, name: str) -> tuple[dict, dict]:
        out = tmp_path / name
        report = subprocess.run([str(paths.tool("udp-replay")), str(SAMPLE), "--port", "9", "--rate", "topspeed",
                                 "--line-b", "127.0.0.1", "--line-b-port", "10", "--drop-a", "0.1", "--drop-b", "0.1",
                                 "--burst-drop-b", "3@0.01", "--line-seed", str(seed), "--line-faults", str(out)],
                                capture_output=True, text=True)
        assert report.returncode == 0, report.stderr
        return json.loads(report.stdout), json.loads(out.read_text())
    (r1, f1), (r2, f2), (_, f3) = send(1, "one.json"), send(1, "two.json"), send(2, "three.json")
    assert f1 == f2 and f1 != f3
    assert r1["copies"] == 2 * r1["packets"] == r1["sent"] + r1["line_a_dropped"] + r1["line_b_dropped"]
    assert 0.05 < r1["line_a_dropped"] / r1["packets"] < 0.15
    assert np.all(np.diff(f1["a"]) > 0)  # the sequences each line lost, ascending


def test_lines_are_refused_where_they_cannot_go():
    with pytest.raises(ScenarioError, match="need transport"):
        defaults(name="x", transport="udp", capture="c", lines={"b": True})
    with pytest.raises(ScenarioError, match="its own group"):
        defaults(name="x", transport="udp", capture="c", replay={"sender": "udp-replay", "multicast": "239.1.1.1"},
                 lines={"b": True})
    with pytest.raises(ScenarioError, match="need lines.b"):
        defaults(name="x", transport="udp", capture="c", replay={"sender": "udp-replay"}, lines={"b_drop": 0.1})


def test_the_sender_makes_heartbeats_while_idle_and_ends_of_session_after(tmp_path):
    """udp-replay alone, the seed workload at a twentieth of its speed (a packet every ~50 ms), heartbeats every
    20 ms: each heartbeat carries the next sequence number, as a MoldUDP64 server's do."""
    seed = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    log = tmp_path / "send.log"
    # The first 40 packets only, at 1/20 of the capture's pace: a second or two.
    from tap_captures import read_pcap, write_pcap
    write_pcap(tmp_path / "head.pcap", read_pcap(seed)[:40])
    proc = subprocess.run([str(paths.tool("udp-replay")), str(tmp_path / "head.pcap"), "--port", "9", "--rate",
                           "capture", "--multiplier", "0.05", "--heartbeat-ms", "20", "--end-of-session-ms", "300",
                           "--send-log", str(log)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    from itchbench.analysis import logs
    rec = logs.read_log(log, logs.KIND_SEND).records
    data = rec[rec["count"] > 0]
    made = rec[(rec["count"] == 0) & (rec["bytes"] == 20)]
    # Ends of session every heartbeat interval after the last packet, up to 300 ms: at 20, 40, ... 300 ms, 15.
    assert report["heartbeats_made"] > 0 and report["ends_of_session_made"] == 15
    assert len(rec) == report["copies"] == 40 + report["heartbeats_made"] + report["ends_of_session_made"]
    # Each heartbeat names the next message: one past the last data packet sent before it.
    order = np.argsort(rec["t_intended"], kind="stable")
    nxt, ok = 0, True
    for r in rec[order]:
        if r["count"] > 0:
            nxt = int(r["seq"]) + int(r["count"])
        elif nxt:
            ok = ok and int(r["seq"]) == nxt
    assert ok and len(made) == report["heartbeats_made"] + report["ends_of_session_made"]
    assert len(data) == 40  # the seed workload's packets hold one message each
