"""Recovery through the exchange's re-request server (docs/exchange.md), with real sockets in the run's own
namespace: the feed loses packets on the wire (the capture's faults, drawn from a seed), the server holds the
whole session, and a gateway that asks for what it missed must end with the BBO of the whole session. The
messages lost come from the fault injector's sidecar, the BBO reference from a simulation of the capture before
its faults: neither from the gateway under test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from itchbench import paths, rundir
from itchbench.runs import runner

from live_helpers import config, make_capture

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SAMPLE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"  # every message type: executions, cancels
PY = paths.repo_root() / "examples" / "py-gateway"
CPP = paths.repo_root() / "examples" / "cpp-gateway" / "itchbench.toml"


def _run(tmp_path: Path, gateway: Path, *, drop: float = 0.02, multicast: str = "", **server: object) -> dict:
    values = {**config(SAMPLE, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000,
                                              "multicast": multicast},
                       faults={"seed": 5, "drop": drop}, rerequest={"server": True, **server}),
              "subscribers": 0, "gateway_file": str(gateway)}
    run = runner.execute(values, "recovery", root=tmp_path / "runs", echo=False)
    return rundir.read_json(run / "summary.json") | {"dir": str(run)}


def _dropped(s: dict) -> int:
    """Messages the fault injector took off the wire, from its sidecar."""
    sidecar = Path(s["capture"]).with_name(Path(s["capture"]).name + ".faults.json")
    return json.loads(sidecar.read_text())["dropped_messages"]


@needs_root
def test_a_gateway_that_asks_again_recovers_every_lost_message(tmp_path):
    s = _run(tmp_path, PY / "itchbench.toml")
    r = s["reconciliation"]["recovery"]
    assert s["verdict"]["status"] == "recovered" and s["verdict"]["exit_status"] == 0, s["verdict"]["headline"]
    assert r["lost_on_wire"] == _dropped(s) > 0 and r["answered_by_server"] == r["lost_on_wire"]
    assert s["reconciliation"]["bbo_check"]["equal"] and s["reconciliation"]["balanced"]
    assert s["reconciliation"]["bbo_check"]["read_in_parts"]  # held to the whole session a part at a time
    assert s["verdict"]["headline"].startswith(f"RECOVERED: {r['lost_on_wire']:,} messages lost on the wire")
    # How long each gap held the stream: the first event after it, measured for every gap that had one.
    held = r["held_after_gaps_ns"]
    assert 0 < held["measured"] <= r["gaps"] and 0 < held["p50"] <= held["p99"] <= held["max"]
    assert "the first BBO event after each gap" in (Path(s["dir"]) / "report.md").read_text()


@needs_root
def test_it_still_recovers_when_the_server_drops_a_tenth_of_its_answers(tmp_path):
    s = _run(tmp_path, PY / "itchbench.toml", drop_answers=0.1, seed=3)
    r = s["reconciliation"]["recovery"]
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]
    # Answers were lost (the fault happened), and every lost message still came back, asked for again.
    assert r["answers_dropped"] > 0 and r["answered_by_server"] == r["lost_on_wire"] > 0
    assert "dropped by the server (a fault)" in s["verdict"]["headline"]


@needs_root
@pytest.mark.parametrize("server", [{"delay_ms": 50}, {"max_messages": 2, "max_payload": 200}],
                         ids=["slow", "capped"])
def test_a_slow_or_capped_server_still_brings_every_message_back(tmp_path, server):
    # Capped: each answer holds at most two messages, so a longer gap takes several requests (what is still missing).
    s = _run(tmp_path, PY / "itchbench.toml", **server)
    r = s["reconciliation"]["recovery"]
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]
    if "max_messages" in server:
        assert r["requests"] > r["lost_on_wire"] / 2 - 1 and r["messages_answered"] >= r["lost_on_wire"]


@needs_root
def test_over_multicast_the_answers_reach_the_joined_socket(tmp_path):
    s = _run(tmp_path, PY / "itchbench.toml", multicast="239.1.1.9")
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]


@needs_root
def test_a_gateway_without_recovery_is_judged_against_the_whole_session(tmp_path):
    # The cpp example skips gaps: against the whole session its book is wrong, and nothing was asked for.
    s = _run(tmp_path, CPP)
    r = s["reconciliation"]["recovery"]
    assert s["verdict"]["status"] == "bbo_differs" and r["requests"] == 0, s["verdict"]["headline"]
    assert s["reconciliation"]["bbo_check"]["read_in_parts"] and not s["reconciliation"]["bbo_check"]["equal"]
    assert r["never_answered"] == r["lost_on_wire"] == _dropped(s)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                   check=True, capture_output=True)


@needs_root
def test_a_planted_recovery_bug_is_caught_and_bisected(tmp_path):
    """A copy of the example that, once a retransmission fills a gap, applies the messages that waited behind it
    twice: an execution taken twice leaves a wrong size."""
    repo = tmp_path / "gateway"
    repo.mkdir()
    for name in ("gateway.py", "itchbench.toml"):
        (repo / name).write_text((PY / name).read_text())
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Example gateway")
    text = (repo / "gateway.py").read_text()
    applied = "            self._apply(self.next_seq, m)\n"
    assert text.count(applied) == 1
    (repo / "gateway.py").write_text(text.replace(applied, "            self.book.apply(self.next_seq, m)\n" + applied))
    _git(repo, "commit", "-qam", "Apply what waited behind a gap at once")
    (repo / "itchbench.toml").write_text((repo / "itchbench.toml").read_text() + "# tidy\n")
    _git(repo, "commit", "-qam", "Tidy")

    s = _run(tmp_path, repo / "itchbench.toml")
    check = s["reconciliation"]["bbo_check"]
    assert s["verdict"]["status"] == "bbo_differs" and check["wrong"] > 0, s["verdict"]["headline"]
    assert "first at seq" in s["verdict"]["headline"]

    scenario = tmp_path / "recovery.toml"
    scenario.write_text(f'name = "recovery"\ntransport = "udp"\ncapture = "{SAMPLE}"\nsubscribers = 0\n'
                        '[replay]\nsender = "udp-replay"\nrate = "pps"\npps = 5000\n'
                        '[faults]\nseed = 5\ndrop = 0.02\n[rerequest]\nserver = true\n')
    r = subprocess.run([str(paths.repo_root() / ".venv" / "bin" / "itchbench"), "bisect", "HEAD~2", "HEAD",
                        "--repo", str(repo), "--gateway", "itchbench.toml", "--metric", "bbo",
                        "--scenario", str(scenario), "--out", str(tmp_path / "bisect")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[0].endswith("Apply what waited behind a gap at once"), r.stdout


@needs_root
def test_heartbeats_and_ends_of_session_from_the_sender_are_taken_and_balanced(tmp_path):
    # 1,200 messages at 400 packets a second: 2.5 ms between packets, a heartbeat every 1 ms in between, and ends
    # of session for 50 ms after the last. The kernel's count has them all; the gateway still recovers.
    capture = make_capture(tmp_path, "short.pcap", "--messages", "1200")
    values = {**config(capture, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 400, "heartbeat_ms": 1,
                                               "end_of_session_ms": 50},
                       faults={"seed": 5, "drop": 0.02}, rerequest={"server": True}),
              "subscribers": 0, "gateway_file": str(PY / "itchbench.toml")}
    s = rundir.read_json(runner.execute(values, "heartbeats", root=tmp_path / "runs", echo=False) / "summary.json")
    ur = s["transport_details"]["udp_replay"]
    assert ur["heartbeats_made"] > 1000 and ur["ends_of_session_made"] == 50
    assert s["verdict"]["status"] == "recovered" and s["reconciliation"]["balanced"], s["verdict"]["headline"]


@needs_root
def test_a_document_has_the_recovery_of_its_runs(tmp_path):
    s = _run(tmp_path, PY / "itchbench.toml")
    r = s["reconciliation"]["recovery"]
    out = subprocess.run([str(paths.repo_root() / ".venv" / "bin" / "itchbench"), "doc", str(tmp_path / "runs"),
                          "--out", str(tmp_path / "doc")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    text = (tmp_path / "doc" / "report.md").read_text()
    row = (f"| recovery | 1 | recovered | {r['lost_on_wire']:,} | 0 | {r['answered_by_server']:,} | 0 | {r['gaps']:,} | "
           f"{r['requests']:,} | 0 |")
    assert "## Recovery" in text and row in text, text[text.find("## Recovery"):][:1500]


@needs_root
def test_a_capture_faulted_beforehand_is_served_and_judged_as_its_whole_session(tmp_path):
    # Made with itchbench faults, not by the scenario: its sidecar names the session it came from, which the
    # server serves and the run is held to. Before, the server refused the faulted file (it lacks messages).
    faulted = tmp_path / "faulted.pcap"
    itchbench = [sys.executable, "-m", "itchbench.cli"]
    assert subprocess.run([*itchbench, "faults", str(SAMPLE), str(faulted), "--seed", "5", "--drop", "0.02"],
                          capture_output=True).returncode == 0
    values = {**config(faulted, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000},
                       rerequest={"server": True}), "subscribers": 0}
    s = rundir.read_json(runner.execute(values, "pre-faulted", root=tmp_path / "runs", echo=False) / "summary.json")
    assert s["verdict"]["status"] == "recovered", s["verdict"]
    assert s["reconciliation"]["recovery"]["lost_on_wire"] == _dropped(s) > 0
    assert "the simulation of the whole session" in s["verdict"]["headline"]
    # A sidecar that does not say what it was made from cannot be: refused before any run, and why.
    sidecar = faulted.with_name(faulted.name + ".faults.json")
    sidecar.write_text(json.dumps({k: v for k, v in json.loads(sidecar.read_text()).items() if k != "source"}))
    refused = subprocess.run([*itchbench, "sim", str(faulted), "--out", str(tmp_path / "sim")], capture_output=True)
    assert refused.returncode == 0  # nothing recovers in simulation: the faulted file is all it is judged on
    with pytest.raises(runner.CaptureError, match="does not say what faulted.pcap was made from"):
        runner.execute(values, "pre-faulted", root=tmp_path / "runs", echo=False)
