"""Gateways brought through their contract file (docs/gateway-contract.md):
a wrong contract is refused by key and line; the independent example
gateway (examples/py-gateway) runs LOSSLESS over UDP and serial with the
simulation's BBO stream; a gateway that misbehaves gets a clear verdict,
never a hang, and leaves nothing running."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from itchbench import paths, rundir
from itchbench.analysis import logs
from itchbench.captures import faults
from itchbench.cli import main as itchbench_main
from itchbench.commands.common import run_line
from itchbench.gateways import adapter, contract
from itchbench.history import store
from itchbench.runs import runner
from itchbench.runs.procs import ProcessGroup
from itchbench.runs.scenario import ScenarioError, load
from itchbench.selftest import zoo

from live_helpers import (EVENTS_HELD_TO_THE_END, config, itch_file_messages, kill_when_running, leftover_processes,
                          make_capture, our_processes)

EXAMPLE = paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

GOOD = """\
name = "g"
inputs = ["udp"]
command = "run --port {feed_port} --bbo {bbo_port}"
"""


def _contract(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "itchbench.toml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("text, error", [
    (GOOD + "colour = \"red\"\n", r"itchbench.toml:4: colour: unknown key"),
    (GOOD + "[bbo]\nformat = \"xml\"\n", r"itchbench.toml:5: bbo.format: 'xml' is not one of csv, jsonl, itchbench"),
    (GOOD + "[ready]\nwhen = \"soon\"\n", r"itchbench.toml:5: ready.when: 'soon' is not one of"),
    (GOOD + "[stop]\ngrace = 3\n", r"itchbench.toml:5: stop.grace: unknown key"),
    (GOOD.replace("{feed_port}", "26477"), r"itchbench.toml:3: command: input udp needs \{feed_port\}"),
    (GOOD.replace("{bbo_port}", "{bbo_prot}"), r"itchbench.toml:3: command: unknown placeholder\(s\) \{bbo_prot\}"),
    (GOOD.replace('inputs = ["udp"]', 'inputs = ["udp", "carrier pigeon"]'),
     r"itchbench.toml:2: inputs: 'carrier pigeon' is not one of udp, serial, file"),
    (GOOD.replace('name = "g"\n', ""), r"missing required key 'name'"),
    (GOOD + "[bbo]\nvia = \"file\"\n", r"itchbench.toml:5: bbo.via: via = \"file\" needs bbo.file"),
    ("name = \n", r"not valid TOML"),
    (GOOD + "white_box = \"everything\"\n", r"itchbench.toml:4: white_box: 'everything' is not one of false, true"),
    (GOOD + "[stop]\nok_exits = [0, \"1\"]\n", r"itchbench.toml:5: stop.ok_exits: must list exit statuses"),
    (GOOD + "[bbo]\nvia = \"mqtt\"\n[ready]\nwhen = \"delay\"\n", r"itchbench.toml:5: bbo.via: via = 'mqtt' needs \{mqtt_port\} in the command"),
    (GOOD + "[subscribers]\nport_pattern = \"tcp=\\\\d+\"\n",
     r"itchbench.toml:5: subscribers.port_pattern: needs a group that captures the port"),
    (GOOD + "[subscribers]\nport_pattern = \"tcp=(\\\\d+)\"\ndepth_port_pattern = \"depth=(\"\n",
     r"itchbench.toml:6: subscribers.depth_port_pattern: not a regex"),
    (GOOD + "[subscribers]\ndepth_port_pattern = \"depth=(\\\\d+)\"\n",
     r"itchbench.toml:5: subscribers.depth_port_pattern: needs subscribers.port_pattern too"),
    (GOOD + "sources = [\"src\", \"../shared\"]\n", r"itchbench.toml:4: sources: '../shared' is not a path inside"),
    (GOOD + "sources = \"src\"\n", r"itchbench.toml:4: sources: expected an array, got a string \('src'\)"),
    (GOOD + "[ready]\ntimeout_s = 0\n", r"itchbench.toml:5: ready.timeout_s: 0; a time above 0, and finite"),
    (GOOD + "[ready]\ntimeout_s = inf\n", r"itchbench.toml:5: ready.timeout_s: inf; a time above 0"),
    (GOOD + "[ready]\ndelay_ms = -5\n", r"itchbench.toml:5: ready.delay_ms: -5; a time 0 or more"),
    (GOOD + "[stop]\ndrain_ms = -1\n", r"itchbench.toml:5: stop.drain_ms: -1; a time 0 or more"),
    (GOOD + "[stop]\nterm_grace_s = nan\n", r"itchbench.toml:5: stop.term_grace_s: nan; a time 0 or more, and"),
    (GOOD.replace('name = "g"', 'name = "  "'), r"itchbench.toml:1: name: empty"),
    (GOOD + "env = { A = true }\n", r"itchbench.toml:4: env: env.A: expected a string \(or a number\), got a boolean"),
    (GOOD + "env = { A = { B = 'x' } }\n", r"env.A: expected a string \(or a number\), got a table"),
    (GOOD + "env = { ITCHBENCH_FEED_PORT = 9000 }\n", r"itchbench.toml:4: env: env.ITCHBENCH_FEED_PORT: itchbench "
     r"sets it for each run to \{feed_port\}'s value, over the contract's env: leave it out"),
    (GOOD.replace('inputs = ["udp"]', 'inputs = ["udp", "udp"]'), r"itchbench.toml:2: inputs: 'udp' listed 2 times"),
    (GOOD + "[ready]\nwhen = \"output\"\n", r"itchbench.toml:5: ready.when: ready.when = \"output\" needs ready.pattern"),
    (GOOD + "[bbo]\nlevels = 5.0\n", r"itchbench.toml:5: bbo.levels: expected an integer or a string, got a float \(5.0\)"),
    (GOOD + "[stop]\nexits_at_end = \"yes\"\n",
     r"itchbench.toml:5: stop.exits_at_end: expected a boolean \(true or false\), got a string \('yes'\)"),
    # Taken and ignored: the run waited for the BBO connection, or read the collector, whatever these said.
    (GOOD + "[ready]\npattern = \"READY\"\n", r'itchbench.toml:5: ready.pattern: takes effect only with ready.when = '
     r'"output" \(here "tcp_connected"\): set that, or leave ready.pattern out'),
    (GOOD + "[ready]\nwhen = \"udp_bound\"\ndelay_ms = 500\n", r'itchbench.toml:6: ready.delay_ms: takes effect '
     r'only with ready.when = "delay" \(here "udp_bound"\)'),
    (GOOD + "[bbo]\nfile = \"{out}/bbo.csv\"\n", r'itchbench.toml:5: bbo.file: takes effect only with bbo.via = '
     r'"file" \(here "tcp"\)'),
])
def test_a_wrong_contract_is_refused_naming_the_key_and_line(tmp_path, text, error):
    with pytest.raises(contract.ContractError, match=error):
        contract.load(_contract(tmp_path, text))


def test_a_scenario_whose_gateway_cannot_take_its_transport_is_refused(tmp_path):
    gw = _contract(tmp_path, GOOD)
    capture = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    scen = tmp_path / "s.toml"
    scen.write_text(f'name = "s"\ntransport = "serial"\ncapture = "{capture}"\ngateway_file = "{gw}"\n')
    with pytest.raises(ScenarioError, match=r"transport serial needs a gateway that takes serial input"):
        load(scen)


def test_a_gateways_output_is_looked_at_as_it_grows_and_only_its_end_read_for_its_last_lines(tmp_path, monkeypatch):
    # Its stdout and stderr were read whole at each look of the ready wait (every 10 ms): a gateway that logged
    # 1.2 GB before it was ready took the harness to 2.4 GB; read a part at a time since, 0.12 GB.
    from itchbench.gateways import adapter
    from itchbench.gateways.adapter import OutputSeen, last_output
    monkeypatch.setattr(OutputSeen, "LONGEST_LINE", 64)  # parts of 64 bytes: every line below is read in pieces
    reads: list[int] = []  # what each read of the files returned

    class Counted:
        def __init__(self, f):
            self.f = f

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def read(self, n=-1):
            got = self.f.read(n)
            reads.append(len(got))
            return got
    monkeypatch.setattr(adapter, "open", lambda *a, **k: Counted(open(*a, **k)), raising=False)
    out, err = tmp_path / "gateway.stdout", tmp_path / "gateway.stderr"
    out.write_bytes(b"")
    seen = OutputSeen((out, err), (r"^READY$", r"subscribers on port (\d+)", ""))
    assert seen.match(r"^READY$") is None  # stderr not there yet: nothing to look at
    err.write_bytes(b"debug: " + b"x" * 1000 + b"\nsubscribers on po")  # a line written in two halves
    assert seen.match(r"subscribers on port (\d+)") is None
    with open(err, "ab") as f:
        f.write(b"rt 4711\nREA")
    assert seen.match(r"subscribers on port (\d+)")[1] == "4711" and seen.match(r"^READY$") is None
    with open(out, "ab") as f:
        f.write(b"READY\n")
    assert seen.match(r"^READY$") is not None
    assert max(reads) == 64 and sum(reads) == out.stat().st_size + err.stat().st_size  # each byte read once
    # The last lines, from the end of each file alone (its start, here 1 MiB of one line, is not read).
    err.write_bytes(b"s" * (1 << 20) + b"\nfirst\nlast\n")
    reads.clear()
    assert last_output((out, err), 2) == "first\nlast"
    assert reads == [out.stat().st_size, adapter.LAST_OUTPUT_BYTES]


@pytest.fixture(scope="session")
def capture(tmp_path_factory) -> Path:
    return make_capture(tmp_path_factory.mktemp("contract"), "seed.pcap", "--messages", "1500")


def _run(capture: Path, gateway: Path, transport: str, tmp_path: Path, pps: int = 5000,
         sender: str = "udp-replay") -> tuple[Path, dict]:
    tables = {"serial": {"baud": 2_000_000}} if transport == "serial" else {
        "replay": {"sender": sender, "rate": "pps", "pps": pps}}
    values = {**config(capture, transport, **tables), "gateway_file": str(gateway), "subscribers": 0}
    run = runner.execute(values, f"contract-{transport}", root=tmp_path / "runs", echo=False)
    return run, rundir.read_json(run / "summary.json")


@needs_root
def test_a_brought_gateways_run_whose_output_is_gone_is_not_comparable(capture, tmp_path, capsys):
    # What the example sent is the collector's file in the run; deleted, the run would compare as one that sent
    # nothing (every base event missing). The count in the refusal is the lines the collector had written.
    run, s = _run(capture, EXAMPLE, "udp", tmp_path)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    lines = len((run / adapter.BBO_FILE).read_text().splitlines())
    for side in ("base", "head"):
        shutil.copytree(run, tmp_path / side / run.name)
    (tmp_path / "head" / run.name / adapter.BBO_FILE).unlink()
    assert itchbench_main(["compare", str(tmp_path / "base"), str(tmp_path / "head"), "--out",
                           str(tmp_path / "cmp")]) == 2
    assert f"{adapter.BBO_FILE} ({lines:,} BBO events) no longer there" in capsys.readouterr().err


@needs_root
def test_a_brought_gateways_run_whose_output_changed_since_is_not_judged_again(capture, tmp_path, capsys):
    # One event's bid size changed in the collector's file after the run: compared, it was the head build's output
    # that differed (BBO OUTPUT DIFFERS); rebuilt, its report said the run's verdict. Both now refuse it.
    run, s = _run(capture, EXAMPLE, "udp", tmp_path)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    for side in ("base", "head"):
        shutil.copytree(run, tmp_path / side / run.name)
    out = tmp_path / "head" / run.name / adapter.BBO_FILE
    lines = out.read_text().splitlines()
    fields = lines[len(lines) // 2].split(",")
    fields[3] = str(int(fields[3]) + 1)
    lines[len(lines) // 2] = ",".join(fields)
    out.write_text("\n".join(lines) + "\n")
    now = "sha256:" + hashlib.sha256(out.read_bytes()).hexdigest()
    assert itchbench_main(["compare", str(tmp_path / "base"), str(tmp_path / "head"), "--out",
                           str(tmp_path / "cmp")]) == 2
    assert f"{adapter.BBO_FILE}: its bytes' digest is {now}, the run recorded sha256:" in capsys.readouterr().err
    assert itchbench_main(["report", str(out.parent)]) == 2
    assert "its logs no longer hold the events the run recorded" in capsys.readouterr().err


@needs_root
@pytest.mark.parametrize("transport", ["udp", "serial"])
def test_the_example_gateway_reproduces_the_simulation(capture, transport, tmp_path):
    run, s = _run(capture, EXAMPLE, transport, tmp_path)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    assert s["reconciliation"]["bbo_check"]["read_in_parts"]  # held equal a part at a time (gateways/in_parts.py)
    # Independently of the black-box check: the collector's lines against the built-in simulation's BBO log.
    sim_dir = tmp_path / "sim"
    sim = runner.execute(config(capture, "sim"), "sim", run_dir=sim_dir, echo=False)
    want = logs.read_bbo(sim / "bbo.bbo").records
    got = np.array([[int(v) for v in line.split(" ", 1)[1].split(",")]
                    for line in (run / "bbo.received").read_text().splitlines()])
    assert len(want) > 100 and got.shape == (len(want), 6)
    assert (got[:, 0] == want["seq"]).all() and (got[:, 1] == want["stock_locate"]).all()
    assert (got[:, 2] == want["bid_px"]).all() and (got[:, 3] == want["bid_qty"]).all()
    assert (got[:, 4] == want["ask_px"]).all() and (got[:, 5] == want["ask_qty"]).all()
    w2w = s["wire_to_wire"]["from_intended"]
    # Every event in wire to wire but those whose stamp a set of CLOCK_REALTIME may have moved (left out, counted).
    left_out = s["wire_to_wire"]["collector"]["events_across_clock_set"]
    assert s["wire_to_wire"]["events"] + left_out == len(want) and 0 < w2w["p50"] <= w2w["p99"] <= w2w["max"]
    # The hops, against a join of our own: each event's message to the send record that carried it.
    send = logs.read_log(run / "send.log", logs.KIND_SEND).records
    sends = pd.DataFrame({"first": send["seq"].astype(np.int64), "last": send["seq"].astype(np.int64)
                          + send["count"].astype(np.int64) - 1, "due": send["t_intended"].astype(np.int64),
                          "called": send["t_sent"].astype(np.int64)}).sort_values("first")
    events = pd.DataFrame({"seq": got[:, 0].astype(np.int64), "t_recv": [
        int(line.split(" ", 1)[0]) for line in (run / "bbo.received").read_text().splitlines()]})
    joined = pd.merge_asof(events.sort_values("seq"), sends, left_on="seq", right_on="first")
    assert (joined["seq"] <= joined["last"]).all()
    assert int((joined["t_recv"] < 0).sum()) == left_out
    joined = joined[joined["t_recv"] > 0]  # a stamp left out (minus when read) is in no figure
    sender_hop, gateway_hop = s["wire_to_wire"]["hops"]
    assert sender_hop["mean"] == pytest.approx((joined["called"] - joined["due"]).mean(), rel=1e-9)
    assert gateway_hop["mean"] == pytest.approx((joined["t_recv"] - joined["called"]).mean(), rel=1e-9)
    assert sender_hop["mean"] + gateway_hop["mean"] == pytest.approx(w2w["mean"], rel=1e-9)
    report = (run / "report.md").read_text()
    assert "wire to wire" in report.lower() and "Not seen by itchbench" in report and "Hop by hop" in report
    # The run's line names what its sender sent, counted here from the send log.
    went = int(((send["flags"] & (logs.SEND_FAILED | logs.SEND_DROPPED)) == 0).sum())  # every packet or line sent
    said = f"udp-replay sent {went:,} / " if transport == "udp" else f"serial-replay sent {went:,} lines; "
    assert said in run_line(s)
    # dump reads the built-in gateway's logs; of this run it names where the gateway's own output is.
    dumped = subprocess.run([sys.executable, "-m", "itchbench.cli", "dump", "bbo", str(run)], capture_output=True,
                            text=True)
    assert dumped.returncode == 2 and not dumped.stdout
    assert f"is a run of py-gateway, which wrote no itchbench BBO log: what it published is {run / 'bbo.received'}" \
        in dumped.stderr
    # A run whose gateway published nothing (it never connected, say): said so, not "the run ended before its
    # gateway wrote one" of a log such a gateway never writes.
    ended = tmp_path / "ended-early"
    shutil.copytree(run, ended)
    (ended / "bbo.received").unlink()
    dumped = subprocess.run([sys.executable, "-m", "itchbench.cli", "dump", "bbo", str(ended)], capture_output=True,
                            text=True)
    assert dumped.returncode == 2 and dumped.stderr == (
        f"itchbench: {ended} is a run of py-gateway, which writes no itchbench BBO log, and what it published is not "
        f"there ({ended / 'bbo.received'}): the run ended before it published anything (its summary says why)\n")


@needs_root
def test_a_gateway_that_ends_at_the_first_end_of_session_is_not_early_nor_losing_the_rest(capture, tmp_path):
    """The sender sends ends of session for a second after the last message (end_of_session_ms); the example with
    a contract that says it ends at the end of session ends at the first. It ended neither early (it was judged by
    the sender's end, a second later: INCOMPLETE gateway_stopped_early) nor lost what came after its end: the ends
    of session that found no socket are those after the last message, never the session's loss."""
    gw = zoo.materialise("py-gateway", zoo._CLAIMS_EXIT_AT_END, tmp_path / "gw")
    values = {**config(capture, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000,
                                               "end_of_session_ms": 1000}),
              "gateway_file": str(gw / "itchbench.toml"), "subscribers": 0}
    run = runner.execute(values, "ends-at-eos", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    send = logs.read_log(run / "send.log", logs.KIND_SEND).records
    carried = np.flatnonzero(send["count"] > 0)
    after_last = len(send) - int(carried[-1]) - 1  # its ends of session: the sender's, every 100 ms for 1 s
    udp = s["reconciliation"]["udp"]
    assert after_last >= 5 and udp["kernel_no_port"] <= after_last
    assert s["reconciliation"]["loss"]["kernel_no_socket_datagrams"] == 0
    # The report counts the feed's way as the summary does, and says why those with no socket are no loss.
    report = (run / "report.md").read_text()
    assert (f"| sent by udp-replay | {udp['sender_sent']:,} |\n| delivered to a socket | {udp['kernel_delivered']:,} |"
            in report)
    if udp["kernel_no_port"]:
        assert "none is counted lost" in report


@needs_root
def test_warnings_among_right_events_are_malformed_lines_not_a_lossless_run(capture, tmp_path):
    # The example gateway, changed to write a warning line before each event of a seq divisible by 97: its events
    # are all right, held equal a part at a time, and each warning is a malformed line (expected: the simulation's
    # events of such a seq, from its own log).
    repo = tmp_path / "warns"
    repo.mkdir()
    (repo / "itchbench.toml").write_text(EXAMPLE.read_text())
    source = (EXAMPLE.parent / "gateway.py").read_text()
    old = '            pending.append(f"{seq},{stock},{bbo[0]},{bbo[1]},{bbo[2]},{bbo[3]}\\n")'
    assert old in source
    warn = '            if seq % 97 == 0:\n                pending.append("WARN consumer slow\\n")\n'
    (repo / "gateway.py").write_text(source.replace(old, warn + old))
    run, s = _run(capture, repo / "itchbench.toml", "udp", tmp_path)
    sim = runner.execute(config(capture, "sim"), "sim", run_dir=tmp_path / "sim", echo=False)
    warnings = int((logs.read_bbo(sim / "bbo.bbo").records["seq"] % 97 == 0).sum())
    check = s["reconciliation"]["bbo_check"]
    assert warnings > 0 and check["read_in_parts"] and check["malformed_lines"] == warnings
    assert check["missing"] == check["extra"] == check["wrong"] == check["out_of_order"] == 0
    assert s["verdict"]["status"] == "bbo_differs" and s["verdict"]["exit_status"] == 1, s["verdict"]["headline"]
    assert f"{warnings:,} malformed lines (e.g. 'WARN consumer slow'" in s["verdict"]["headline"]


@needs_root
@pytest.mark.parametrize("broken", [False, True])
def test_a_gateway_that_publishes_per_shard_is_judged_by_stock(capture, tmp_path, broken):
    # The example gateway run with --shards 3 publishes as a gateway with a thread a shard does: each stock's
    # events through its shard, written four at a time, so stocks interleave otherwise than by seq, each stock's
    # events in order. Judged in buckets of stocks: LOSSLESS. Broken (the zoo's mutant), it writes each four last
    # first: every event that comes after a later event of its stock is out of order (expected: counted from the
    # lines received, a stock's seqs going back), nothing missing, extra or wrong.
    from itchbench.selftest import zoo
    mutant = next(m for m in zoo.MUTANTS if m.name == "sharded-out-of-order")
    gateway = zoo.materialise(zoo.PY, mutant.edits if broken else zoo.CLAIMS_SHARDS, tmp_path / "shards")
    run, s = _run(capture, gateway / "itchbench.toml", "udp", tmp_path)
    check = s["reconciliation"]["bbo_check"]
    assert check["read_in_parts"] and check["cut_by"] == "stock"
    received = pd.DataFrame([line.split(" ", 1)[1].split(",")[:2] for line in
                             (run / "bbo.received").read_text().splitlines()], columns=["seq", "stock"]).astype(int)
    late = int((received["seq"] < received.groupby("stock")["seq"].cummax().groupby(received["stock"]).shift(1)).sum())
    assert (received["seq"].diff() < 0).any()  # seqs go back
    assert check["missing"] == check["extra"] == check["wrong"] == 0 and check["out_of_order"] == late
    if broken:
        assert late > 0 and check["first_difference"]["kind"] == "out of order"
        assert s["verdict"]["status"] == "bbo_differs" and s["verdict"]["exit_status"] == 1, s["verdict"]["headline"]
    else:
        assert late == 0 and s["verdict"]["status"] == "lossless", s["verdict"]["headline"]


BAD = '''\
import os, signal, socket, struct, sys, time
mode, feed, bbo = sys.argv[1], sys.argv[2], sys.argv[3]
if mode.endswith("helper"):  # a helper of its own, deaf to SIGTERM, never stopped
    import subprocess
    subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                      "time.sleep(600)", "itchbench_bad_helper"])
if mode == "never_ready":
    time.sleep(600)
out = socket.create_connection(("127.0.0.1", int(bbo))) if mode != "never_connects" else None
if mode == "handoff":  # its BBO connection handed to a process it did not start (argv[4]'s), which keeps it open
    holder = socket.socket(socket.AF_UNIX)
    holder.connect(sys.argv[4])
    socket.send_fds(holder, [b"fd"], [out.fileno()])
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", int(feed)))
packets = 0
while True:
    p = sock.recv(65536)
    packets += 1
    if mode == "crash" and packets == 100:
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "garbage":
        out.sendall(b"this is not a BBO line\\n")
    if mode == "quits" and packets == 100:
        sys.exit(0)
    if struct.unpack_from(">H", p, 18)[0] == 0xFFFF:
        break
if mode.startswith("hang"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)
'''


def _bad_gateway(tmp_path: Path, mode: str, *args: Path) -> Path:
    """The contract of BAD in mode (args after its ports), over UDP, quick to give up; ready when its BBO connection
    comes (never_connects: when its feed socket is bound)."""
    (tmp_path / "itchbench_bad_gateway.py").write_text(BAD)
    after = shlex.join(map(str, args))
    return _contract(tmp_path, f'''\
        name = "bad"
        inputs = ["udp"]
        command = "exec python3 {{worktree}}/itchbench_bad_gateway.py {mode} {{feed_port}} {{bbo_port}} {after}"
        [ready]
        when = "{'udp_bound' if mode == 'never_connects' else 'tcp_connected'}"
        timeout_s = 2
        [stop]
        drain_ms = 200
        term_grace_s = 1
        ''')


@needs_root
@pytest.mark.parametrize("mode, status, words", [
    ("never_ready", "incomplete", "INCOMPLETE (gateway_failed): the gateway never became ready (tcp_connected) within 2 s"),
    ("crash", "incomplete", "killed by SIGSEGV"),
    ("garbage", "bbo_differs", "malformed lines (e.g. 'this is not a BBO line': 1 field where 6 are due (seq, stock, "
                               "bid_px, …))"),
    ("silent", "bbo_differs", "BBO DIFFERS (exact): "),
    ("hang", "incomplete", "did not stop within 1 s of SIGTERM: killed (SIGKILL)"),
    ("quits", "incomplete", "INCOMPLETE (gateway_stopped_early): the gateway ended by itself (exited with status 0)"),
    # Ready by its feed socket, it never connects to its BBO port: said so, not "kept its BBO connection open".
    ("never_connects", "incomplete", "INCOMPLETE (gateway_failed): the gateway ended by itself (exited with status "
                                     "0), but it never connected to its BBO port (TCP); no BBO event of it was "
                                     "received"),
    # Its helper outlives it, whether it ends by itself or is killed: named, and killed too.
    ("helper", "incomplete", "INCOMPLETE (gateway_failed): the gateway stopped by SIGTERM after the drain, but it "
                             "left 1 process running 1 s after its own end, killed then (SIGKILL): pid "),
    ("hang_helper", "incomplete", "did not stop within 1 s of SIGTERM: killed (SIGKILL); and it left 1 process "
                                  "running 1 s after its own end, killed then (SIGKILL): pid "),
])
def test_a_misbehaving_gateway_gets_a_clear_verdict_and_leaves_nothing_running(capture, tmp_path, mode, status,
                                                                               words):
    gw = _bad_gateway(tmp_path, mode)
    _, s = _run(capture, gw, "udp", tmp_path, pps=1000)  # 1,501 packets: 1.5 s, of which "quits" sees 0.1
    assert s["verdict"]["status"] == status and s["verdict"]["exit_status"] == 1, s["verdict"]["headline"]
    assert words in s["verdict"]["headline"]
    if mode.endswith("helper"):
        assert "time.sleep(600) itchbench_bad_helper` — whatever a gateway starts must end with it" in \
            s["verdict"]["headline"]
    if mode == "silent":
        assert s["reconciliation"]["bbo_check"]["missing"] == s["reconciliation"]["bbo_check"]["reference_events"]
    if status == "bbo_differs":  # judged a part at a time, as the whole check would (test_in_parts)
        assert s["reconciliation"]["bbo_check"]["read_in_parts"]
    assert not [args for _, args in our_processes() if "itchbench_bad_" in args or "gateways.collector" in args]


@needs_root
@pytest.mark.parametrize("sender", ["udp-replay", "tcpreplay"])
def test_a_sender_stopped_with_a_crashed_gateway_says_what_it_sent(capture, tmp_path, sender):
    # The gateway crashes at its 100th packet of 1,501: the run stops the sender, which says what it sent
    # (tcpreplay: its statistics, printed on SIGINT only; udp-replay: its report, and its send log closed), and
    # the run's line gives that, never the capture's count as sent.
    (tmp_path / "itchbench_bad_gateway.py").write_text(BAD)
    gw = _contract(tmp_path, '''\
        name = "bad"
        inputs = ["udp"]
        command = "exec python3 {worktree}/itchbench_bad_gateway.py crash {feed_port} {bbo_port}"
        ''')
    run, s = _run(capture, gw, "udp", tmp_path, pps=1000, sender=sender)
    assert s["failure"]["kind"] == "gateway_crashed", s["verdict"]
    udp = s["reconciliation"]["udp"]
    # The gateway read 100 packets. udp-replay stops between sends and counts each; tcpreplay, stopped by SIGINT, once
    # said 99 (a busy machine): the send its stop interrupted is not always in its statistics.
    assert udp["sender_stopped"] and (100 if sender == "udp-replay" else 99) <= udp["sender_sent"] < 1501
    if sender == "udp-replay":
        with warnings.catch_warnings():
            warnings.simplefilter("error", logs.TruncatedLogWarning)  # closed as it stopped
            assert len(logs.read_log(run / "send.log", logs.KIND_SEND).records) == udp["sender_sent"]
    assert run_line(s).startswith(f"{s['reconciliation']['loss']['expected_messages']:,} messages in the capture, "
                                  f"the sender stopped before its end; {sender} sent {udp['sender_sent']:,} / ")


def _held_back_until_told_to_stop(pattern: str) -> threading.Thread:
    """A thread that stops (SIGSTOP) the first of our processes whose command line holds pattern once the example
    gateway runs (what receives its output started before it), until the run tells it to stop (a SIGTERM waits
    for it: /proc's ShdPnd); then lets it go on. All the gateway sends meanwhile waits for it, with no timing."""
    def told_to_stop(pid: int) -> bool:
        status = Path(f"/proc/{pid}/status").read_text()
        waiting = int(next(line.split()[1] for line in status.splitlines() if line.startswith("ShdPnd:")), 16)
        return bool(waiting & (1 << (signal.SIGTERM - 1)))

    def hold() -> None:
        deadline = time.monotonic() + 120
        pid = None
        while pid is None and time.monotonic() < deadline:
            running = our_processes()
            if any("gateway.py" in args for _, args in running):
                pid = next((p for p, args in running if pattern in args), None)
            time.sleep(0.01)
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        while not told_to_stop(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(pid, signal.SIGCONT)
    thread = threading.Thread(target=hold)
    thread.start()
    return thread


def _flooded(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, via: str, collector: str, *, messages: int,
             pps: int) -> tuple[Path, dict]:
    """A run of the example publishing every level's changes of a capture of `messages` via udp or a broker, its
    collector (a process whose command line holds `collector`) held back from the gateway's start until the run
    tells it to stop: all the gateway's output, thousands of events, waits for it meanwhile."""
    capture = make_capture(tmp_path_factory.mktemp("flood"), "flood.pcap", "--messages", str(messages))
    gw = _example_via(tmp_path, via, "--levels all", 'levels = "all"')
    stopper = _held_back_until_told_to_stop(collector)
    try:
        return _run(capture, gw, "udp", tmp_path, pps=pps)
    finally:
        stopper.join()


@needs_root
def test_bbo_datagrams_the_collector_dropped_are_not_the_feeds_loss(tmp_path_factory, tmp_path):
    # The example's output over UDP (every level's changes: a datagram for nearly every packet), its collector
    # held back (SIGSTOP) from the gateway's start until the run tells it to stop: what the gateway sends meanwhile
    # overflows the collector's socket (8 MiB) and the kernel drops it there. The run says so, by number,
    # and does not count those drops as the feed's (before: the feed's "kernel dropped", and a kernel account that
    # did not add up).
    run, s = _flooded(tmp_path_factory, tmp_path, "udp", "gateways.collector", messages=50_000, pps=20_000)
    received = json.loads((run / "bbo.received.json").read_text())
    kernel = s["reconciliation"]["udp"]
    # What the gateway sent, from the namespace's own count of datagrams sent, less the sender's: read or dropped.
    sent_by_gateway = kernel["kernel_sent"] - kernel["sender_sent"]
    dropped = sent_by_gateway - received["reads"]
    assert dropped > 0 and received["socket_drops"] == dropped
    failed = [name for name, ok in s["reconciliation"]["checks"].items() if not ok]
    assert (f"the collector's socket dropped none of the gateway's BBO datagrams: it dropped {dropped:,} (its "
            "receive buffer full): the BBO output judged is not what the gateway sent") in failed
    assert s["verdict"]["status"] == "unbalanced" and s["verdict"]["exit_status"] != 0
    assert kernel["kernel_dropped"] == kernel["kernel_in_errors"] - dropped


@needs_root
def test_what_the_mqtt_broker_holds_for_a_collector_fallen_behind_is_not_dropped(tmp_path_factory, tmp_path):
    # The example's BBO through the run's Mosquitto, its collector (a subscriber there) held back from the gateway's
    # start until the run tells it to stop: the broker holds what comes meanwhile for it, thousands of messages, and hands
    # it over when it goes on. Mosquitto's default keeps 1,000 a client and drops the rest without a word: the run
    # judged the gateway on an output the testbench had lost.
    _, s = _flooded(tmp_path_factory, tmp_path, "mqtt", "bbo-mqtt-subscriber", messages=20_000, pps=5000)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    check = s["reconciliation"]["bbo_check"]
    assert check["equal"] and check["events"] == check["reference_events"] > 5_000


def _simulated_csv(capture: Path, tmp_path: Path) -> list[str]:
    """The simulation's BBO stream of capture as the contract's csv lines, newline-ended."""
    sim = runner.execute(config(capture, "sim"), "sim", run_dir=tmp_path / "sim", echo=False)
    return [f"{r['seq']},{r['stock_locate']},{r['bid_px']},{r['bid_qty']},{r['ask_px']},{r['ask_qty']}\n"
            for r in logs.read_bbo(sim / "bbo.bbo").records]


# A gateway whose MQTT client publishes from a queue of its own, slower than the feed: each BBO line (the
# simulation's, handed to it in a file) is queued once its message has been read, and published at most one every
# 10 ms, so it is still publishing for seconds after it read the feed's last datagram. SIGTERM ends it at once,
# its queue unpublished, as such a client's would be.
TRICKLE = """\
import os, signal, socket, struct, sys, time
import paho.mqtt.client as mqtt
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
feed_port, mqtt_port, topic, lines_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = [(int(line.split(",", 1)[0]), line) for line in open(lines_file).read().splitlines()]
client = mqtt.Client()
client.connect("127.0.0.1", mqtt_port)
client.loop_start()
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", feed_port))
sock.setblocking(False)
read_to, published = 0, 0
while True:
    try:
        while True:
            seq, count = struct.unpack_from(">QH", sock.recv(65536), 10)
            read_to = max(read_to, seq + count - 1)
    except BlockingIOError:
        pass
    if published < len(lines) and lines[published][0] <= read_to:
        client.publish(topic, lines[published][1] + "\\n", qos=1)
        published += 1
    time.sleep(0.01)
"""


@needs_root
def test_a_gateway_still_publishing_to_its_broker_is_not_stopped_by_the_drain(tmp_path_factory, tmp_path):
    # The trickling gateway above, its collector held back until the run tells it to stop: the collector's file
    # shows nothing new, and the feed was read seconds before its last publish. The drain waits while it still
    # sends to the broker (drain_ms 1 s; it sends every 10 ms), so it is stopped with all it had to say said.
    # Before: stopped 1 s after its last datagram read, hundreds of lines unpublished, and judged BBO DIFFERS.
    capture = make_capture(tmp_path_factory.mktemp("trickle"), "trickle.pcap", "--messages", "800")
    want = _simulated_csv(capture, tmp_path)
    lines = tmp_path / "bbo.csv"
    lines.write_text("".join(want))
    (tmp_path / "itchbench_trickle_gateway.py").write_text(TRICKLE)
    command = ("exec /usr/bin/python3 {worktree}/itchbench_trickle_gateway.py {feed_port} {mqtt_port} {mqtt_topic} "
               f"{lines}")
    gw = _contract(tmp_path, f'''\
        name = "trickle"
        inputs = ["udp"]
        command = "{command}"
        [bbo]
        via = "mqtt"
        [ready]
        when = "udp_bound"
        [stop]
        drain_ms = 1000
        ''')
    stopper = _held_back_until_told_to_stop("bbo-mqtt-subscriber")
    try:
        _, s = _run(capture, gw, "udp", tmp_path, pps=1000)
    finally:
        stopper.join()
    assert len(want) > 250  # 2.5 s and more of publishing, the feed read in 0.6 s
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    assert s["gateway"]["stop"] == "stopped by SIGTERM after the drain"


def _listening(port: int, within_s: float = 30) -> None:
    deadline = time.monotonic() + within_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, f"nothing listens on {port}"
            time.sleep(0.02)


def _free_port(kind: socket.SocketKind) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_example_told_to_stop_while_it_closes_still_publishes_what_it_holds(tmp_path_factory, tmp_path):
    # The example's output through Mosquitto, the broker stopped (SIGSTOP) under it once it runs: paho's queue
    # cannot drain, so with its feed read the example waits in its close. SIGTERM there: it goes on waiting. The
    # broker let go on, every line reaches a subscriber and the example exits 0. Before: the SIGTERM ended it
    # inside its close, its queue unpublished.
    capture = make_capture(tmp_path_factory.mktemp("closing"), "closing.pcap", "--messages", "400")
    want = _simulated_csv(capture, tmp_path)
    broker_port, feed_port = _free_port(socket.SOCK_STREAM), _free_port(socket.SOCK_DGRAM)
    out = tmp_path / "bbo.collected"
    with ProcessGroup() as group:
        broker = group.start("mosquitto", ["mosquitto", "-p", str(broker_port)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        _listening(broker_port)
        sub = group.start("subscriber", [str(paths.tool("bbo-mqtt-subscriber")), "--port", str(broker_port), "--topic",
                                         "t", "--collect", "csv", "--out", str(out)])
        info = Path(f"{out}.json")
        while not (info.exists() and json.loads(info.read_text() or "{}").get("subscribed")):
            assert sub.poll() is None
            time.sleep(0.02)
        gw = group.start("gateway", ["/usr/bin/python3", str(EXAMPLE.parent / "gateway.py"), "--udp",
                                     f"127.0.0.1:{feed_port}", "--bbo", f"127.0.0.1:{broker_port}", "--bbo-via",
                                     "mqtt", "--bbo-topic", "t"])
        while f":{feed_port} " not in subprocess.run(["ss", "-ulnH"], capture_output=True, text=True).stdout:
            assert gw.poll() is None
            time.sleep(0.02)
        os.kill(broker.pid, signal.SIGSTOP)
        subprocess.run([str(paths.tool("udp-replay")), str(capture), "--port", str(feed_port), "--rate", "pps",
                        "--pps", "5000"], check=True, capture_output=True)
        # The feed's end of session read, the example leaves its reading (a select every 50 ms at most) for its
        # close, where its main thread waits on paho (a futex) for as long as the broker is stopped.
        waiting = 0
        while waiting < 25:
            assert gw.poll() is None
            waiting = waiting + 1 if "futex" in Path(f"/proc/{gw.pid}/wchan").read_text() else 0
            time.sleep(0.02)
        gw.send_signal(signal.SIGTERM)
        os.kill(broker.pid, signal.SIGCONT)
        assert gw.wait(60) == 0
        sub.send_signal(signal.SIGTERM)
        assert sub.wait(60) == 0
    got = [line.split(" ", 1)[1] + "\n" for line in out.read_text().splitlines()]
    assert len(want) > 100 and got == want


@needs_root
def test_a_bbo_connection_kept_open_after_the_gateways_end_is_its_failure(capture, tmp_path, monkeypatch):
    # The gateway hands its BBO connection to a process outside its own (this test's, as a daemon it talks to would
    # be), which keeps it open: the collector never sees the stream's end. It is stopped COLLECTOR_END_S after the
    # gateway's end, and the run says why its output may be cut short (before: stopped silently).
    monkeypatch.setattr(adapter, "COLLECTOR_END_S", 2.0)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "holder.sock"))
    listener.listen(1)
    held: list[int] = []
    holder = threading.Thread(target=lambda: held.extend(socket.recv_fds(listener.accept()[0], 16, 1)[1]))
    holder.start()
    gw = _bad_gateway(tmp_path, "handoff", tmp_path / "holder.sock")
    try:
        _, s = _run(capture, gw, "udp", tmp_path, pps=5000)
    finally:
        holder.join()
        for fd in held:
            os.close(fd)
    assert len(held) == 1
    assert s["verdict"]["status"] == "incomplete" and s["failure"]["kind"] == "gateway_failed", s["verdict"]
    assert s["verdict"]["headline"].startswith(
        "INCOMPLETE (gateway_failed): the gateway ended by itself (exited with status 0), but it kept its BBO "
        "connection (TCP) open 2 s after its end: the collector was stopped there, and what it received may not be "
        "the whole output")


@needs_root
@pytest.mark.parametrize("pattern, transport, tables, named", [
    (r"itchbench\.gateways\.collector", "udp", {},
     "the BBO collector (itchbench's receiving end of the gateway's output)"),
    (r"mold-request-server", "udp", {"rerequest": {"server": True}}, "the re-request server"),
    (r"^sleep infinity", "udp", {}, "the run's network namespace (its holder, unshare … sleep infinity)"),
    (r"^socat pty,", "serial", {"serial": {"baud": 115_200}}, "the serial line's relay (socat, the pty pair)"),
    (r"/process-meter --out ", "udp", {}, "process-meter (itchbench's meter of the gateway's process)"),
], ids=["collector", "re-request server", "namespace holder", "serial relay", "process-meter"])
def test_a_process_of_the_testbench_killed_under_a_gateway_is_the_runs_failure(capture, tmp_path, pattern, transport,
                                                                               tables, named):
    # A process of itchbench's own on the example gateway's way killed, by the kernel say, 0.5 s after it started:
    # before the gateway was ready or while the feed (paced to take 3 s or more) was sent. Whatever the gateway or
    # the sender then do (a write refused, a line gone), the run names that process first, and leaves nothing
    # running. Before, each was the gateway's failure, the sender's, or a harness defect.
    replay = {"replay": {"sender": "udp-replay", "rate": "pps", "pps": 500}} if transport == "udp" else {}
    values = {**config(capture, transport, **replay, **tables), "gateway_file": str(EXAMPLE), "subscribers": 0}
    killer = kill_when_running(pattern, signal.SIGKILL, 0.5)
    run = runner.execute(values, "testbench-killed", root=tmp_path / "runs", echo=False)
    killer.join()
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "incomplete" and s["failure"]["kind"] == "testbench_failed", s["verdict"]
    assert s["verdict"]["headline"].startswith(f"INCOMPLETE (testbench_failed): {named} was killed by SIGKILL")
    assert not [args for _, args in our_processes() if "gateway.py" in args or "-replay" in args]


@needs_root
@pytest.mark.parametrize("named", [True, False], ids=["--gateway itchbench.toml", "no gateway named"])
def test_the_built_in_gateway_goes_through_its_own_contract(capture, tmp_path, named):
    """Named or not, the built-in gateway is started, fed, stopped and judged through the repository's
    itchbench.toml: its subscriber port found in its output, its run files (the white-box extra) reconciled
    message by message, its live BBO equal to the simulation's."""
    values = {**config(capture, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000}),
              "gateway_file": str(paths.repo_root() / "itchbench.toml") if named else "", "subscribers": 2}
    run = runner.execute(values, "built-in", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    details = s["transport_details"]
    assert details["gateway_contract"]["name"] == "itchbench built-in"
    assert details["gateway_stop"] == "ended by itself (exited with status 0)"
    assert s["reconciliation"]["checks"]["BBO digest = simulation's digest"] is True
    # The two subscribers got every BBO frame the gateway logged (the count comes from its own log).
    bbo_events = len(logs.read_bbo(run / "bbo.bbo").records)
    assert bbo_events > 100 and [sub["bytes"] > 0 for sub in details["subscribers"]] == [True, True]
    assert (run / "gateway.stdout").read_text().count("READY") == 1 and not (run / "gateway-out").exists()
    assert "Hop by hop" in (run / "report.md").read_text()


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                   check=True, capture_output=True)


@pytest.fixture(scope="session")
def planted(tmp_path_factory) -> Path:
    """A throw-away repository of the example gateway: a good commit, a harmless one, one that puts a wrong ask
    size on stock 3's events (a BBO bug), one that sleeps 0.3 ms a packet (a slowdown), a harmless one."""
    repo = tmp_path_factory.mktemp("planted")
    src = EXAMPLE.parent
    for name in ("gateway.py", "itchbench.toml"):
        (repo / name).write_text((src / name).read_text())
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Example gateway")

    def change(subject: str, path: str, old: str, new: str) -> None:
        text = (repo / path).read_text()
        assert old in text
        (repo / path).write_text(text.replace(old, new, 1))
        _git(repo, "commit", "-qam", subject)

    change("Note the contract", "itchbench.toml", 'name = "py-gateway"', 'name = "py-gateway"  # example')
    change("Count the ask side once more", "gateway.py", "{bbo[3]}\\n", "{bbo[3] + (stock == 3)}\\n")
    change("Pause on every packet", "gateway.py", "        if len(p) < 20:\n            return True\n",
           "        __import__(\"time\").sleep(0.0003)\n        if len(p) < 20:\n            return True\n")
    change("Tidy", "itchbench.toml", "# example", "# the example")
    return repo


def _scenario(tmp_path_factory, transport: str, capture: Path, settings: str) -> Path:
    """A scenario of the capture on the transport (named after it), no subscriber, with its settings' tables."""
    path = tmp_path_factory.mktemp("scen") / f"{transport}.toml"
    path.write_text(f'name = "{transport}"\ntransport = "{transport}"\ncapture = "{capture}"\nsubscribers = 0\n'
                    + settings)
    return path


@pytest.fixture(scope="session")
def udp_scenario(capture, tmp_path_factory) -> Path:
    return _scenario(tmp_path_factory, "udp", capture, '[replay]\nsender = "udp-replay"\nrate = "pps"\npps = 5000\n')


@pytest.fixture(scope="session")
def serial_scenario(capture, tmp_path_factory) -> Path:
    return _scenario(tmp_path_factory, "serial", capture, "[serial]\nbaud = 921600\n")


def _itchbench(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(paths.repo_root() / ".venv" / "bin" / "itchbench"), *map(str, args)],
                          capture_output=True, text=True)


@needs_root
@pytest.mark.parametrize("metric, subject", [
    ("bbo", "Count the ask side once more"),  # the BBO stream, judged exactly: it runs beside other tests
    pytest.param("latency", "Pause on every packet", marks=pytest.mark.alone)])  # judged by timing
def test_bisect_names_the_planted_commit(planted, udp_scenario, metric, subject, tmp_path):
    # Pausing 0.3 ms a packet at 5,000 packets/s leaves the gateway ever further behind: 1,500 packets end 0.15 s
    # late, its p50 grows several hundredfold, so a 2,000 % threshold keeps the noise of a busy machine (a p50 7.4
    # times another's between two commits that change nothing, with a busy loop on a CPU) from passing for a step.
    # A longer pause would overflow the socket's buffer: loss, not latency.
    r = _itchbench("bisect", "HEAD~4", "HEAD", "--repo", planted, "--gateway", "itchbench.toml", "--metric", metric,
                   "--scenario", udp_scenario, "--threshold", "2000", "--out", tmp_path / "bisect")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "first bad commit: " in r.stdout and r.stdout.splitlines()[0].endswith(subject), r.stdout


def _example_history(tmp_path: Path, steps: list[tuple[str, str]]) -> Path:
    """A throw-away repository of the example gateway: its first commit, then a commit for each (subject, text of
    gateway.py) of steps, each changing it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("gateway.py", "itchbench.toml"):
        (repo / name).write_text((EXAMPLE.parent / name).read_text())
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Example gateway")
    for subject, text in steps:
        assert text != (repo / "gateway.py").read_text()
        (repo / "gateway.py").write_text(text)
        _git(repo, "commit", "-qam", subject)
    return repo


@needs_root
def test_bisect_of_a_brought_gateway_steps_over_a_commit_it_cannot_build(tmp_path, udp_scenario):
    """The example gateway's own build (py_compile) fails on "Break" and passes again on "Mend"; "Count" puts a
    wrong ask size on stock 3's events. Bisected by the BBO it sends over UDP: "Break" is stepped over and "Count"
    named, as the built-in gateway's bisect does (test_compare.py)."""
    source = (EXAMPLE.parent / "gateway.py").read_text()
    counted = source.replace("{bbo[3]}\\n", "{bbo[3] + (stock == 3)}\\n", 1)
    repo = _example_history(tmp_path, [("Note", source + "# a note\n"), ("Break", source + "def broken(:\n"),
                                       ("Mend", source), ("Count", counted), ("Tidy", counted + "# tidy\n")])
    r = _itchbench("bisect", "HEAD~5", "HEAD", "--repo", repo, "--gateway", "itchbench.toml", "--metric", "bbo",
                   "--scenario", udp_scenario, "--out", tmp_path / "bisect")
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert r.stdout.splitlines()[0].endswith(" Count"), r.stdout
    assert " on udp; 5 commit(s) measured, 1 of them not building (stepped over)" in r.stdout  # what was measured
    assert "each commit measured on the scenario's configuration udp\n" in r.stderr
    assert re.search(r"'Break': does not build.* -> skipped", r.stderr), r.stderr[-2000:]
    assert len(list((tmp_path / "bisect").glob("*/*/summary.json"))) >= 4  # its runs where --out says, a commit's each


@needs_root
@pytest.mark.parametrize("scenario", ["udp_scenario", "serial_scenario"])
def test_bisect_of_a_brought_gateway_over_a_commit_that_cannot_run(tmp_path, request, scenario):
    """"Crash" makes the example gateway exit with status 3 before it is ready (it builds: py_compile passes),
    "Mend" undoes it, "Count" puts a wrong ask size on stock 3's events. Bisected by the BBO it sends, fed over
    UDP or over the serial line (the example takes no file),
    "Crash" is the first commit measured (the middle of five): by default the bisect stops there and says why;
    --cannot-run skip steps over it as over a commit that does not build and names "Count"; --cannot-run bad
    takes the crash for the change looked for and names "Crash"."""
    source = (EXAMPLE.parent / "gateway.py").read_text()
    assert "import os\n" in source
    crash = source.replace("def main() -> int:\n", "def main() -> int:\n    os._exit(3)\n", 1)
    counted = source.replace("{bbo[3]}\\n", "{bbo[3] + (stock == 3)}\\n", 1)
    repo = _example_history(tmp_path, [("Note", source + "# a note\n"), ("Crash", crash), ("Mend", source),
                                       ("Count", counted), ("Tidy", counted + "# tidy\n")])

    def bisect(*more: str) -> subprocess.CompletedProcess:
        return _itchbench("bisect", "HEAD~5", "HEAD", "--repo", repo, "--gateway", "itchbench.toml", "--metric", "bbo",
                          "--scenario", request.getfixturevalue(scenario), *more,
                          "--out", tmp_path / "-".join(("bisect", *more)))

    r = bisect()
    assert r.returncode == 2 and "first bad commit" not in r.stdout, r.stdout + r.stderr[-2000:]
    assert re.search(r"cannot bisect: .*: the gateway could not run: INCOMPLETE", r.stderr), r.stderr[-2000:]
    assert "status 3" in r.stderr, r.stderr[-2000:]
    r = bisect("--cannot-run", "skip")
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert r.stdout.splitlines()[0].endswith(" Count"), r.stdout
    assert "5 commit(s) measured, 1 of them not running (stepped over)" in r.stdout, r.stdout
    assert re.search(r"'Crash': could not run \(INCOMPLETE.* -> skipped", r.stderr), r.stderr[-2000:]
    r = bisect("--cannot-run", "bad")
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert r.stdout.splitlines()[0].endswith(" Crash"), r.stdout
    assert "-> the gateway could not run (INCOMPLETE" in r.stdout and "3 commit(s) measured" in r.stdout, r.stdout


@needs_root
def test_bisect_by_bbo_runs_a_commit_again_when_its_run_lost_messages(planted, udp_scenario, tmp_path, monkeypatch):
    """A run LOST on a busy machine published what the loss left: its digest would judge the loss as the commit's.
    Here the real runs of the good commit are given LOST verdicts, as such runs end."""
    from itchbench.commands.compare import gateway_workloads
    from itchbench.compare import bisect, outputs
    from itchbench.gateways import revisions

    values = gateway_workloads(udp_scenario, planted / "itchbench.toml", lambda _: None)[0].values
    real_execute, verdicts = runner.execute, iter(["lost", "lossless"])

    def execute(*args, **kwargs):
        run = real_execute(*args, **kwargs)
        summary = rundir.read_json(run / "summary.json")
        assert summary["verdict"]["status"] == "lossless", summary["verdict"]["headline"]
        status = next(verdicts, "lost")
        if status == "lost":
            summary["verdict"] = {"status": "lost", "headline": "LOST: 80 datagrams dropped by the kernel"}
            (run / "summary.json").write_text(json.dumps(summary))
        made.append(run)
        return run

    monkeypatch.setattr(runner, "execute", execute)
    said: list[str] = []
    measure = bisect.contract_measure(planted, Path("itchbench.toml"), "bbo", values, 1, tmp_path, said.append)
    good = revisions.resolve(planted, "HEAD~4")
    made: list[Path] = []
    assert measure(good) == outputs.bbo_digest(made[1])[0] and len(made) == 2  # the lost run was run again
    assert any("no output to judge in the run (it lost messages: LOST: 80 datagrams dropped by the kernel); running "
               "it again" in s for s in said)
    made.clear()
    # Every run lost: a commit that cannot be judged, which --cannot-run decides on (skip: stepped over).
    with pytest.raises(bisect.CouldNotRun, match=rf"{good.label}: the gateway could not run: no output to judge in "
                                                  r"each of 3 runs, so its BBO digest would judge what they lost: it "
                                                  r"lost messages: LOST: 80 datagrams"):
        measure(good)
    assert len(made) == 3
    made.clear()
    assert bisect.measured_or_untestable(measure, good, "skip") == {
        bisect.UNTESTABLE: "could not run (no output to judge in each of 3 runs, so its BBO digest would judge what "
                           f"they lost: it lost messages: LOST: 80 datagrams dropped by the kernel ({made[0]}))"}


@pytest.mark.alone
@needs_root
def test_compare_finds_the_slowdown_and_the_bbo_change(planted, udp_scenario, tmp_path):
    # Across the two planted commits: BBO differs (stock 3's ask sizes) and wire-to-wire is slower.
    r = _itchbench("compare", "HEAD~3", "HEAD~1", "--repo", planted, "--gateway", "itchbench.toml",
                   "--scenario", udp_scenario, "--repetitions", "7", "--out", tmp_path / "cmp")
    assert r.returncode == 1, r.stdout + r.stderr[-2000:]
    headline = r.stdout.strip().splitlines()[-1]
    assert headline.startswith("REGRESSION: BBO OUTPUT DIFFERS on udp") and "wire_to_wire.p50" in headline, headline
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    bbo = result["outputs"]["udp"]["bbo"]
    assert not bbo["equal"] and bbo["first_difference"]["stock"] == 3 and bbo["first_difference"]["kind"] == "wrong"
    assert bbo["missing"] == bbo["extra"] == 0  # a wrong size is a wrong event, not a missing and an extra one
    assert result["black_box"] and not any(k.startswith("instructions") for k in result["metrics"]["udp"])


@needs_root
def test_compare_names_a_workload_the_gateway_cannot_take_and_fails_its_targets(planted, capture, tmp_path):
    """The example takes UDP and serial: a scenario's file workload is run on neither side. Its targets had gone
    unjudged, and the workload unsaid in the headline."""
    scenario = tmp_path / "gate.toml"
    scenario.write_text(f'name = "gate"\ncapture = "{capture}"\nsubscribers = 0\n[[configurations]]\nlabel = "udp"\n'
                        'transport = "udp"\nreplay = { sender = "udp-replay", rate = "pps", pps = 5000 }\n'
                        '[[configurations]]\nlabel = "file"\ntransport = "sim"\ntargets = { throughput_msg_s = 1 }\n')
    r = _itchbench("compare", "HEAD~3", "HEAD~3", "--repo", planted, "--gateway", "itchbench.toml", "--scenario",
                   scenario, "--bbo-only", "--repetitions", "3", "--out", tmp_path / "cmp")
    assert r.returncode == 1, r.stdout + r.stderr[-2000:]
    headline = r.stdout.strip().splitlines()[-1]
    assert headline.startswith("NO REGRESSION") and "1 workload(s) not run, the gateway taking none of their input: " \
        "file | HEAD file: TARGET NOT MEASURED: throughput not measured (target ≥ 1 msg/s) (not run: transport sim " \
        "needs a gateway that takes file input" in headline, headline
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert list(result["workloads_not_run"]) == ["file"] and set(result["runs"]["head"]) == {"udp"}
    assert "> ⚠ file: not run on either side: transport sim needs" in (tmp_path / "cmp" / "compare.md").read_text()


@needs_root
@pytest.mark.parametrize("lenient", [False, True], ids=["the example", "a copy applying cut packets"])
def test_a_capture_with_declared_faults_holds_a_brought_gateway_to_what_they_left(lenient, tmp_path):
    # The NASDAQ slice (packets of several messages) with 5 % of its packets cut short (seed 7): the simulation
    # rejects each whole (docs/book-and-bbo.md), and so does the example; a copy that applies a cut packet's whole
    # messages differs by them.
    faulted = tmp_path / "cut.pcap"
    side = faults.inject(paths.fixtures_dir() / "nasdaq-day-sample.pcap", faulted, seed=7, truncate=0.05)
    assert side["truncated_packets"] > 0
    gateway = EXAMPLE
    if lenient:  # the zoo's mutant of the example: the whole messages before a cut applied
        (m,) = [m for m in zoo.MUTANTS if m.name == "cut-packet-applied"]
        gateway = zoo.materialise(m.example, m.edits, tmp_path / "lenient") / "itchbench.toml"
    _, s = _run(faulted, gateway, "udp", tmp_path)
    headline = s["verdict"]["headline"]
    if lenient:
        check = s["reconciliation"]["bbo_check"]
        assert s["verdict"]["status"] == "bbo_differs" and check["extra"] + check["wrong"] > 0, headline
    else:
        assert s["verdict"]["status"] == "faults_accounted", headline
        assert headline.startswith(f"FAULTS ACCOUNTED: the capture's declared faults ({side['truncated_packets']:,} "
                                   "truncated packets; its sidecar)"), headline


@needs_root
def test_compare_builds_and_runs_a_gateway_from_its_contracts_folder_in_a_monorepo(udp_scenario, tmp_path):
    # The example in services/gw/ of a larger repository, its commands on {worktree}: compare takes {worktree} as
    # the contract's folder, as `itchbench run` does (it had built the repository's root: NOT COMPARABLE).
    repo = tmp_path / "mono"
    gw = repo / "services" / "gw"
    gw.mkdir(parents=True)
    for name in ("gateway.py", "itchbench.toml"):
        (gw / name).write_text((EXAMPLE.parent / name).read_text())
    (repo / "README.md").write_text("services\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Services")
    text = (gw / "gateway.py").read_text()
    (gw / "gateway.py").write_text(text.replace("{bbo[3]}\\n", "{bbo[3] + (stock == 3)}\\n", 1))
    _git(repo, "commit", "-qam", "Count the ask side once more")
    r = _itchbench("compare", "HEAD~1", "HEAD", "--repo", repo, "--gateway", "services/gw/itchbench.toml",
                   "--scenario", udp_scenario, "--bbo-only", "--repetitions", "3", "--out", tmp_path / "cmp")
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1].startswith("REGRESSION: BBO OUTPUT DIFFERS on udp"), r.stdout[-2000:]


@needs_root
def test_doc_writes_a_black_box_document(capture, tmp_path):
    run, s = _run(capture, EXAMPLE, "udp", tmp_path)
    assert s["verdict"]["status"] == "lossless"
    r = _itchbench("doc", run, "--out", tmp_path / "doc")
    assert r.returncode == 0, r.stderr[-2000:]
    text = (tmp_path / "doc" / "report.md").read_text()
    assert "Latency is **wire to wire: intended send -> BBO event received (black box)**" in text
    assert "Gateway under test: py-gateway" in text and "the whole gateway in one hop" in text
    assert "decoded and applied" not in text  # not claimed of a black box
    p50 = s["latency"]["stages"]["wire_to_wire"]["p50"]
    assert f"| 1 | {p50:,.0f} |" in text


@needs_root
def test_a_command_may_take_every_value_from_the_environment(capture, tmp_path):
    # No placeholder at all: ITCHBENCH_FEED_PORT and ITCHBENCH_BBO_PORT; ready when the feed port is bound.
    (tmp_path / "gateway.py").write_text((EXAMPLE.parent / "gateway.py").read_text())
    # It also tells what of the harness's own environment reached it: nothing (OPENBLAS_NUM_THREADS and PYTHONUTF8
    # are the harness's).
    gw = _contract(tmp_path, '''\
        name = "env"
        inputs = ["udp"]
        command = """printenv OPENBLAS_NUM_THREADS PYTHONUTF8 ITCHBENCH_SET_FOR_ITSELF > seen-env; \\
          exec python3 gateway.py --udp 127.0.0.1:$ITCHBENCH_FEED_PORT --bbo 127.0.0.1:$ITCHBENCH_BBO_PORT"""
        [ready]
        when = "udp_bound"
        ''')
    assert os.environ.get("OPENBLAS_NUM_THREADS") == "1"  # set by the harness here (pytest's process imported it)
    _, s = _run(capture, gw, "udp", tmp_path)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    assert (tmp_path / "seen-env").read_text() == ""  # printenv found neither


@needs_root
def test_a_journey_of_a_contract_gateway_times_it_wire_to_wire(planted, udp_scenario, tmp_path):
    # The scenario also has a configuration of file input, which the example (udp and serial) does not take: the
    # document says it was not run, rather than reading as if the scenario had been run whole.
    scenario = tmp_path / "udp-and-file.toml"
    scenario.write_text(udp_scenario.read_text() + '\n[[configurations]]\nlabel = "udp"\n\n'
                        '[[configurations]]\nlabel = "file"\ntransport = "sim"\n')
    r = _itchbench("doc", "--journey", "HEAD~3", "HEAD~2", "--repo", planted, "--gateway", "itchbench.toml",
                   "--scenario", scenario, "--repetitions", "3", "--out", tmp_path / "journey")
    assert r.returncode == 0, r.stderr[-2000:]
    text = (tmp_path / "journey" / "report.md").read_text()
    assert "## Step 1: Count the ask side once more" in text
    assert "| wire_to_wire.p50 |" in text and "**BBO output DIFFERENT**" in text and ", stock 3, " in text
    assert ("**Not run**: 1 of the scenario's configurations, whose input the gateway does not take; nothing below "
            "is about them.\n\n- file: transport sim needs a gateway that takes file input; ") in text
    assert "### file" not in text and "### udp" in text
    assert "\nnot run: file: transport sim needs a gateway that takes file input" in r.stderr


def test_a_journey_of_a_gateway_that_takes_none_of_the_scenario_is_refused_before_anything_is_built(
        planted, capture, tmp_path):
    scenario = tmp_path / "file-only.toml"
    scenario.write_text(f'name = "file-only"\ntransport = "sim"\ncapture = "{capture}"\n')
    r = _itchbench("doc", "--journey", "HEAD~3", "HEAD~2", "--repo", planted, "--gateway", "itchbench.toml",
                   "--scenario", scenario, "--repetitions", "3", "--out", tmp_path / "journey")
    assert r.returncode == 2, r.stderr[-2000:]
    assert ("doc: the gateway takes none of the scenario's configurations (file-only: transport sim needs a gateway "
            "that takes file input; ") in r.stderr
    assert not (tmp_path / "journey").exists() and "building" not in r.stderr


@needs_root
def test_json_lines_over_udp_reach_the_collector_whole(capture, tmp_path):
    # The example's other output: JSON lines in UDP datagrams; ready once its feed port is bound.
    gw = _example_via(tmp_path, "udp", "--bbo-format jsonl", 'format = "jsonl"')
    run, s = _run(capture, gw, "udp", tmp_path)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    first = (run / "bbo.received").read_text().splitlines()[0].split(" ", 1)[1]
    assert json.loads(first).keys() == {"seq", "stock", "bid_px", "bid_qty", "ask_px", "ask_qty"}
    left_out = s["wire_to_wire"]["collector"]["events_across_clock_set"]  # a set of CLOCK_REALTIME's (collector.py)
    assert s["wire_to_wire"]["events"] + left_out == s["reconciliation"]["bbo_check"]["reference_events"] > 100


@needs_root
def test_a_gateway_whose_build_fails_gives_an_incomplete_run_with_the_builds_output(capture, tmp_path):
    gw = _contract(tmp_path, GOOD + 'build = ["echo compiling; echo gateway.c:3: error: expected ; >&2; exit 4"]\n')
    _, s = _run(capture, gw, "udp", tmp_path)
    assert s["verdict"]["status"] == "incomplete" and s["verdict"]["exit_status"] == 1
    assert s["verdict"]["headline"].startswith("INCOMPLETE (setup): the gateway's build failed (exited with status 4)")
    assert "gateway.c:3: error: expected" in s["failure"]["message"]
    # Said as only that: nothing ran, so no BBO event is counted missing.
    assert s.get("reconciliation") is None and s["gateway"]["started"] is False
    from itchbench.commands.common import run_line
    assert run_line(s) == "the gateway did not run"


def test_a_long_build_is_said_as_it_goes_with_its_last_line(tmp_path, monkeypatch):
    """A gateway's build ran in silence however long it took: minutes of a compiler read as a hang. Every
    BUILD_NOTE_S (here 0.2 s, against a build of at least 0.8 s) it is said, with its time and last line."""
    monkeypatch.setattr(adapter, "BUILD_NOTE_S", 0.2)
    gw = _contract(tmp_path, GOOD + 'build = ["echo compiling book.o; sleep 0.8"]\n')
    said: list[str] = []
    adapter.build(contract.load(gw), tmp_path, commit="WORKTREE", build_dir=tmp_path / "b", log=tmp_path / "build.log",
                  say=said.append)
    assert said and all(re.fullmatch(r"  still building: \d+ s of `echo compiling book.o; sleep 0.8`; its last line: "
                                     rf"compiling book.o \(all of it: {re.escape(str(tmp_path / 'build.log'))}\)", line)
                        for line in said), said


def test_a_build_gets_the_contracts_env_as_its_gateway_does(tmp_path):
    """The contract's env reached the gateway and not its build, which the contract page says it gets too: a
    `CXXFLAGS` or `RUSTFLAGS` set there built nothing differently. A PATH of its own keeps ccache's links first."""
    (tmp_path / "tools").mkdir()
    gw = _contract(tmp_path, GOOD + 'build = ["echo flags=$CXXFLAGS commit=$ITCHBENCH_COMMIT path=$PATH > built.txt"]\n'
                             f'env = {{ CXXFLAGS = "-O1 -g", PATH = "{tmp_path / "tools"}:/usr/bin:/bin" }}\n')
    adapter.build(contract.load(gw), tmp_path, commit="abc123", build_dir=tmp_path / "b", log=tmp_path / "build.log")
    said = (tmp_path / "built.txt").read_text().split()
    assert said[:2] == ["flags=-O1", "-g"] and said[2] == "commit=abc123", said
    path = said[3].removeprefix("path=").split(":")
    from itchbench.gateways import compiler_cache
    links = [str(compiler_cache.LINKS)] if compiler_cache.command_environment(tmp_path) else []
    assert path == [*links, str(tmp_path / "tools"), "/usr/bin", "/bin"], path


@needs_root
@pytest.mark.parametrize("via", ["mqtt", "kafka"])
@pytest.mark.parametrize("held_back", [False, True], ids=["collector keeping up", "collector held back"])
def test_the_example_gateway_writes_its_bbo_through_a_broker(capture, tmp_path, via, held_back):
    """Its BBO output through the run's own broker (Mosquitto, or Kafka in KRaft mode), collected by a
    subscriber there: the same check against the simulation as over TCP. Held back: the collector stopped from the
    gateway's start until the run tells it to stop (SIGTERM, after the gateway's end): it has taken nothing then,
    and takes all the broker holds for it before it ends (before: it ended with nothing, and the gateway was judged
    on an empty output)."""
    gw = _example_via(tmp_path, via)
    stopper = _held_back_until_told_to_stop(f"bbo-{via}-subscriber") if held_back else None
    run, s = _run(capture, gw, "udp", tmp_path, pps=2000)
    if stopper:
        stopper.join()
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    check = s["reconciliation"]["bbo_check"]
    assert check["equal"] and check["events"] == check["reference_events"] > 100
    assert s["transport_details"]["brokers"][via]["port"] and s["wire_to_wire"]["events"] == check["events"]
    ended = json.loads((run / "bbo.received.json").read_text())
    assert ended["ended"] == "sigterm" and ended["left_unread"] == 0
    assert leftover_processes() == []


@needs_root
def test_a_gateway_writing_back_on_its_serial_line_does_not_jam_it(capture, tmp_path):
    """A UART's transmitter never waits for the far end to read. On the pty pair it did: the example writing each
    line back, socat blocked relaying it to a sender that never read it, stopped relaying the sender's lines, and
    the run ended "INCOMPLETE (deadline): serial-replay did not finish" at line 938 of 8,000. serial-replay now
    takes what comes back and drops it, as a line would: the run is judged on the gateway's BBO, and its line says
    what came back."""
    copy = tmp_path / "echoing"
    shutil.copytree(EXAMPLE.parent, copy)  # the linked white-box writer copied as a file
    source = (copy / "gateway.py").read_text()
    reading = "            fd = os.open(args.serial, os.O_RDONLY | os.O_NOCTTY)\n"
    read = "                chunk = os.read(fd, 65536)\n"
    assert source.count(reading) == 1 and source.count(read) == 1
    (copy / "gateway.py").write_text(source.replace(reading, reading.replace("O_RDONLY", "O_RDWR")).replace(
        read, read + "                os.write(fd, chunk)  # every byte read, written back\n"))
    run, s = _run(capture, copy / "itchbench.toml", "serial", tmp_path)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    sent = json.loads((run / "serial-replay.json").read_text())["bytes"]
    said = re.search(r"the gateway wrote ([\d,]+) bytes back on its line \(dropped", run_line(s))
    back = int(said[1].replace(",", ""))
    assert 0 < back <= sent  # what it wrote back while the sender ran: at most every byte it was sent


@pytest.mark.parametrize("transport, gateway, asked", [
    ("udp", {"cpu": 1, "sched_fifo": 80, "mlockall": True},
     "gateway.cpu = 1, gateway.sched_fifo = 80, gateway.mlockall = true"),
    ("udp", {"busy_poll": True, "source": "af_xdp"}, 'gateway.busy_poll = true, gateway.source = "af_xdp"'),
    ("serial", {"publisher_cpu": 0}, "gateway.publisher_cpu = 0"),
    ("udp", {"loops": 2}, "replay.loops = 2 (--ignore-end-of-session)"),
], ids=["real time", "busy poll and AF_XDP", "serial publisher", "looped"])
def test_a_configuration_asking_what_the_gateway_is_never_given_is_refused(capture, tmp_path, transport, gateway,
                                                                         asked):
    """scenarios/udp-rt.toml with the Python example, whose commands take no {itchbench_flags}: its CPU, SCHED_FIFO
    and mlockall went nowhere, and the run passed as "udp-rt", LOSSLESS. Refused before the gateway is built."""
    tables = {"serial": {"baud": 2_000_000}} if transport == "serial" else {"replay": {"sender": "udp-replay"}}
    values = config(capture, transport, **tables)
    gateway = dict(gateway)
    replay = {**values["replay"], **({"loops": gateway.pop("loops")} if "loops" in gateway else {})}
    values = {**values, "gateway": {**values["gateway"], **gateway}, "replay": replay, "gateway_file": str(EXAMPLE),
              "subscribers": 0}
    run = runner.execute(values, "asked", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["headline"] == (
        f"INCOMPLETE (setup): {EXAMPLE}: the scenario's {asked} reach a gateway in {{itchbench_flags}} "
        f"alone, which its {transport} command does not take: none would be applied. Give the command "
        "{itchbench_flags}, or place the gateway's threads with [placement] (docs/host.md)")
    assert not (run / "build.log").exists()  # refused before the build


@needs_root
def test_subscribers_asked_of_a_gateway_with_no_subscriber_port_are_said_not_served(capture, tmp_path):
    """The scenario asked for two subscribers; the example's contract names no subscriber port. The run was LOSSLESS
    and said nothing of them: its line and report read as those of a run whose fan-out had been measured."""
    values = {**config(capture, "udp", replay={"sender": "udp-replay"}), "gateway_file": str(EXAMPLE), "subscribers": 2}
    run = runner.execute(values, "unserved", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    said = "the gateway's contract names no subscriber port ([subscribers])"
    assert f"; subscribers none served: {said}; " in run_line(s)
    report = (run / "report.md").read_text()
    assert f"## Subscribers\n\nNone served: {said}; no hop to a subscriber is measured." in report


@needs_root
def test_a_gateway_reading_stdin_gets_its_end_however_itchbench_was_started(capture, tmp_path):
    """The gateway's stdin had been itchbench's own: one that read it (here, its command waits for a byte or the
    end) waited on the user's terminal and was never ready, where under CI's /dev/null the same build ran LOSSLESS.
    itchbench's stdin is made a pipe left open here, as a terminal is: the gateway's is /dev/null all the same."""
    copy = tmp_path / "reading"
    shutil.copytree(EXAMPLE.parent, copy)
    text = (copy / "itchbench.toml").read_text()
    assert text.count('udp = "exec python3') == 1
    (copy / "itchbench.toml").write_text(text.replace('udp = "exec python3',
                                                       'udp = "head -c1 >/dev/null; exec python3'))
    read, write = os.pipe()
    stdin = os.dup(0)
    os.dup2(read, 0)
    try:
        run, s = _run(capture, copy / "itchbench.toml", "udp", tmp_path)
    finally:
        os.dup2(stdin, 0)
        for fd in (stdin, read, write):
            os.close(fd)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]


def _example_via(tmp_path: Path, via: str, flags: str = "", bbo: str = "") -> Path:
    """The Python example's contract with its BBO output in UDP datagrams or through the run's broker (udp, mqtt,
    kafka), ready once its feed port is bound; flags: its own, bbo: a [bbo] key beside via."""
    where = {"udp": "{bbo_addr}:{bbo_port}", "mqtt": "{mqtt_addr}:{mqtt_port} --bbo-topic {mqtt_topic}",
             "kafka": "{kafka_brokers} --bbo-topic {kafka_topic}"}[via]
    command = (f"exec /usr/bin/python3 {shlex.quote(str(EXAMPLE.parent))}/gateway.py --udp {{feed_addr}}:{{feed_port}} "
               f"--bbo-via {via} --bbo {where} {flags}")
    return _contract(tmp_path, f'''\
        name = "py-gateway via {via}"
        inputs = ["udp"]
        command = "{command}"
        [bbo]
        via = "{via}"
        {bbo}
        [ready]
        when = "udp_bound"
        ''')


@needs_root
def test_a_sharded_run_of_a_contract_gateway_merges_and_goes_to_the_store(udp_scenario, tmp_path):
    """Two shards of the example gateway's runs, appended to a store: merged lossless, and the store holds the
    black box's wire-to-wire p50 of each run as its summary says."""
    scen = tmp_path / "two.toml"
    scen.write_text(udp_scenario.read_text().replace('subscribers = 0\n', 'subscribers = 0\nrepetitions = 2\n', 1))
    for k in (0, 1):
        r = _itchbench("run", scen, "--gateway", EXAMPLE.parent, "--shard", f"{k}/2", "--out", tmp_path / f"s{k}",
                       "--store", tmp_path / "store")
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = _itchbench("merge", tmp_path / "s0", tmp_path / "s1")
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "2 run(s): 2 lossless — ok", r.stdout
    got = store.query(tmp_path / "store", "SELECT run_dir, value FROM runs WHERE metric = 'wire_to_wire.p50'")
    assert len(got) == 2
    for run_dir, value in zip(got["run_dir"], got["value"]):
        assert value == rundir.read_json(Path(run_dir) / "summary.json")["wire_to_wire"]["from_intended"]["p50"]


@needs_root
def test_a_sharded_compare_and_bisect_of_a_contract_gateway(planted, udp_scenario, tmp_path):
    """The planted BBO bug (HEAD~2) found from shards: a compare of HEAD~3 and HEAD~2 in two parts, merged,
    says the BBO output differs; a bisect in two parts, merged, names the commit."""
    for k in (0, 1):
        r = _itchbench("compare", "HEAD~3", "HEAD~2", "--repo", planted, "--gateway", "itchbench.toml", "--scenario",
                       udp_scenario, "--repetitions", "3", "--shard", f"{k}/2", "--out", tmp_path / f"c{k}")
        assert r.returncode == 0, r.stderr[-2000:]
        r = _itchbench("bisect", "HEAD~4", "HEAD", "--repo", planted, "--gateway", "itchbench.toml", "--metric",
                       "bbo", "--scenario", udp_scenario, "--shard", f"{k}/2", "--out", tmp_path / f"b{k}")
        assert r.returncode == 0, r.stderr[-2000:]
    r = _itchbench("compare", "HEAD~3", "HEAD~2", "--repo", planted, "--gateway", "itchbench.toml", "--out",
                   tmp_path / "judged", "--merge", tmp_path / "c0", tmp_path / "c1")
    assert r.returncode == 1 and "BBO OUTPUT DIFFERS" in json.loads((tmp_path / "judged" / "compare.json")
                                                                    .read_text())["headline"], r.stderr[-2000:]
    r = _itchbench("bisect", "HEAD~4", "HEAD", "--repo", planted, "--gateway", "itchbench.toml", "--metric", "bbo",
                   "--scenario", udp_scenario, "--merge", tmp_path / "b0", tmp_path / "b1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[0].endswith("Count the ask side once more"), r.stdout


def _built_in_as_black_box(tmp_path: Path, then: str = "", out: str = "{out}", run: str = "") -> Path:
    """The built-in gateway brought as a black box that reads the capture itself and writes its BBO log (the
    `itchbench` format) to a file in out; `then`: a shell command after it, on its output; run: another command."""
    run = run or f"{shlex.quote(str(paths.tool('itch-gateway')))} --source sim --capture {{capture}} --out {out} --no-latency-log"
    return _contract(tmp_path, f"""\
        name = "black-box-file"
        inputs = ["file"]
        command = "{run + then if then else 'exec ' + run}"
        [bbo]
        format = "itchbench"
        via = "file"
        file = "{out}/bbo.bbo"
        [ready]
        when = "delay"
        """)


def test_a_bbo_file_left_by_an_earlier_run_is_not_judged_as_the_next_runs(capture, tmp_path):
    # Its BBO file where the gateway's own folder is ({worktree}, kept from run to run): the built-in gateway writes
    # it and passes; then a gateway that writes nothing and exits 0 must not pass on what the first one left (it
    # did: LOSSLESS, exit 0).
    def run_with(contract: Path, name: str) -> dict:
        values = {**config(capture, "sim"), "gateway_file": str(contract), "subscribers": 0}
        return rundir.read_json(runner.execute(values, name, root=tmp_path / "runs", echo=False) / "summary.json")

    assert run_with(_built_in_as_black_box(tmp_path, out="{worktree}"), "writes")["verdict"]["status"] == "lossless"
    assert (tmp_path / "bbo.bbo").stat().st_size > 0
    s = run_with(_built_in_as_black_box(tmp_path, out="{worktree}", run="true {capture}"), "writes-nothing")
    assert s["verdict"]["status"] == "incomplete" and s["verdict"]["exit_status"] == 1, s["verdict"]
    assert s["verdict"]["headline"].endswith("the gateway's BBO output bbo.bbo is missing")


@pytest.mark.parametrize("leaves, what", [
    ("mkfifo {out}/bbo.bbo", "a FIFO"),  # read, it held the harness forever
    ("ln -s /dev/zero {out}/bbo.bbo", "a character device"),  # read, it filled the memory: killed by the kernel
    ("mkdir {out}/bbo.bbo", "a directory"),  # read, "INCOMPLETE (defect): reconciliation failed: IsADirectoryError"
])
def test_a_gateway_whose_output_is_no_file_is_incomplete_and_its_output_not_read(capture, tmp_path, leaves, what):
    gateway = _built_in_as_black_box(tmp_path, run="true {capture}", then=f"; {leaves}")
    values = {**config(capture, "sim"), "gateway_file": str(gateway), "subscribers": 0}
    run = runner.execute(values, "no-file", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "incomplete" and s["verdict"]["exit_status"] == 1, s["verdict"]
    assert s["verdict"]["headline"] == (f"INCOMPLETE (gateway_failed): the gateway's BBO output "
                                        f"{run / 'gateway-out' / 'bbo.bbo'} is {what}, not a file: not read")
    assert "output_sha256" not in s["bbo"]


def test_a_chatty_gateway_reading_a_file_has_its_first_lines_said_and_the_rest_left_in_its_stderr(capture, tmp_path,
                                                                                                     capsys):
    # Each line of its own it wrote to stderr while it read the capture was echoed to the console, and its stderr
    # read whole at each look: a gateway logging each message would have had its day's log echoed, and held.
    chatter = "for i in $(seq 0 99); do echo chatter $i >&2; done"
    gateway_cmd = f"{shlex.quote(str(paths.tool('itch-gateway')))} --source sim --capture {{capture}} --out {{out}} " \
                  "--no-latency-log"
    gateway = _built_in_as_black_box(tmp_path, run=f"{gateway_cmd}; {chatter}", then="; true")
    values = {**config(capture, "sim"), "gateway_file": str(gateway), "subscribers": 0}
    run = runner.execute(values, "chatty", root=tmp_path / "runs", echo=True)
    out = capsys.readouterr().err  # where a run says what it does
    assert rundir.read_json(run / "summary.json")["verdict"]["status"] == "lossless"
    said = [line.strip() for line in out.splitlines() if line.strip().startswith("chatter ")]
    assert said == [f"chatter {i}" for i in range(20)], out
    assert f"(the gateway's further lines: {run / 'gateway.stderr'})" in out
    assert (run / "gateway.stderr").read_text().count("chatter ") == 100


def test_a_black_box_reading_the_capture_itself_is_told_what_its_bbo_stream_cannot_show(tool, tmp_path):
    # The built-in gateway brought as a black box that reads the capture itself and writes its BBO log to a file.
    # The last messages of a nasdaq-day session move no BBO: nothing in a BBO stream says whether it read them, so
    # the verdict must say that it did not see them rather than count them as read.
    capture = tmp_path / "day.itch"
    assert tool("itch-synth", "--profile", "nasdaq-day", "--messages", 3000, "--format", "itch",
                "--out", capture).returncode == 0
    gateway = _built_in_as_black_box(tmp_path)
    values = {**config(capture, "sim"), "gateway_file": str(gateway), "subscribers": 0}
    run = runner.execute(values, "black-box-file", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    last = int(logs.read_bbo(run / "gateway-out" / "bbo.bbo").records["seq"].max())
    tail = itch_file_messages(capture.read_bytes()) - last
    assert tail > 0  # the session ends with messages that move no BBO
    headline = s["verdict"]["headline"]
    assert s["verdict"]["status"] == "lossless", headline
    assert headline.startswith("LOSSLESS: 3,000 messages in the capture it reads itself"), headline
    assert (f"not seen: whether it read the capture's last {tail:,} message{'s' if tail > 1 else ''}, "
            f"after seq {last:,}") in headline, headline
    assert s["reconciliation"]["bbo_check"]["unseen_tail"] == {"after_seq": last, "messages": tail}
    assert f"Not seen by itchbench: whether it read the capture's last {tail:,}" in (run / "report.md").read_text()


HOSTILE = "a b;touch PWNED $(touch PWNED)'\"`touch PWNED`"


def test_placeholders_are_filled_as_arguments_never_as_shell_text(tmp_path):
    # What bash makes of a filled command, read back word by word: each value one word, exactly as given, also
    # inside ${VAR:-…}; the flags list as its own words; and nothing run that a value spells.
    cmd = contract.fill("cd {out} && printf '<%s>\\n' ${{ITCHBENCH_NOT_SET:-{worktree}/bin}} {capture} {itchbench_flags}",
                        {"out": tmp_path, "worktree": f"/w/{HOSTILE}", "capture": HOSTILE,
                         "itchbench_flags": ["--cpu", "1", "--name", "x y"]})
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [f"</w/{HOSTILE}/bin>", f"<{HOSTILE}>", "<--cpu>", "<1>", "<--name>", "<x y>"]
    assert not (tmp_path / "PWNED").exists()


@needs_root
def test_a_capture_and_run_directory_with_shell_characters_run_as_they_are(capture, tmp_path):
    # The built-in gateway through its own contract, reading the capture itself: the capture and the run
    # directory named with a space, a `;` and command substitutions, which the filled command must not run.
    odd = tmp_path / HOSTILE
    odd.mkdir()
    hostile_capture = odd / "seed.pcap"
    hostile_capture.write_bytes(capture.read_bytes())
    values = {**config(hostile_capture, "sim"), "gateway_file": str(paths.repo_root() / "itchbench.toml")}
    run = runner.execute(values, "hostile", root=odd / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    assert not list(tmp_path.rglob("PWNED")) and not (paths.repo_root() / "PWNED").exists()


def test_an_itchbench_log_output_cut_mid_record_is_said_as_a_malformed_line(tmp_path):
    # The built-in gateway as a black box writing its BBO log to a file, then the file's last 20 bytes cut off: the
    # last event is missing, and what is left of its record (48 - 20 = 28 bytes) is said, as a partial last line
    # of text is, in place of a reader's warning on the console.
    gw = _built_in_as_black_box(tmp_path, " && truncate -s -20 {out}/bbo.bbo")
    sample = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"
    values = {**config(sample, "sim"), "gateway_file": str(gw), "subscribers": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("error", logs.TruncatedLogWarning)
        s = rundir.read_json(runner.execute(values, "cut", root=tmp_path / "runs", echo=False) / "summary.json")
    check = s["reconciliation"]["bbo_check"]
    assert s["verdict"]["status"] == "bbo_differs" and check["missing"] == 1 and check["malformed_lines"] == 1
    assert check["malformed_examples"][0].startswith("bbo.bbo: file ends mid-record: 28 trailing bytes ignored")
    assert "1 malformed line (e.g. 'bbo.bbo: file ends mid-record" in s["verdict"]["headline"]


@pytest.mark.parametrize("clear", [False, True], ids=["its flags", "the stale flag cleared"])
def test_a_gateway_writing_itchbench_records_is_held_to_the_stale_flag_too(tmp_path, clear):
    # The built-in gateway as a black box writing the `itchbench` BBO format, on a capture with drops: its records
    # carry the stale flag after the first loss, as the simulation's do. The same with the flag cleared after the
    # run (a gateway that never sets it) is BBO DIFFERS, the first wrong event showing the flag.
    script = tmp_path / "unflag.py"  # every record's stale bit (FORMAT.md: flags, byte 42 of 48) cleared
    script.write_text("import sys\nb = bytearray(open(sys.argv[1], 'rb').read())\n"
                      "for i in range(128, len(b) - 47, 48):\n    b[i + 42] &= 0xFE\n"
                      "open(sys.argv[1], 'wb').write(b)\n")
    gw = _built_in_as_black_box(tmp_path, f" && python3 {shlex.quote(str(script))} {{out}}/bbo.bbo" if clear else "")
    sample = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"
    values = {**config(sample, "sim", faults={"seed": 7, "drop": 0.01}), "gateway_file": str(gw)}
    s = rundir.read_json(runner.execute(values, "stale", root=tmp_path / "runs", echo=False) / "summary.json")
    if not clear:
        assert s["verdict"]["exit_status"] == 0, s["verdict"]["headline"]
        return
    assert s["verdict"]["status"] == "bbo_differs", s["verdict"]["headline"]
    check = s["reconciliation"]["bbo_check"]
    assert check["missing"] == check["extra"] == 0 and check["wrong"] > 0
    assert "flags 1 (stale)" in s["verdict"]["headline"] and "flags 0" in s["verdict"]["headline"]


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_a_slow_gateway_that_publishes_only_at_its_end_is_drained_not_cut(tmp_path):
    """The example made slow (2 ms a packet) and holding every event until its end: for seconds after the feed
    ends it reads and publishes nothing new, yet it still reads its queued input. The drain waits while the run's
    namespace counts datagrams read (contract stop.drain_ms), so the gateway is not stopped with its input
    queued: LOSSLESS, every event there."""
    from itchbench.selftest import zoo
    edits = (zoo.Edit("                    more = feed.packet(s.recv(65536)) and more\n",
                      "                    more = feed.packet(s.recv(65536)) and more\n"
                      "                    time.sleep(0.002)  # slow\n"),
             EVENTS_HELD_TO_THE_END)
    gateway = zoo.materialise(zoo.PY, edits, tmp_path / "slow")
    values = {**load(zoo.scenario_path("udp"))[0].values, "gateway_file": str(gateway / "itchbench.toml")}
    run = runner.execute(values, "slow", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    udp = s["reconciliation"]["udp"]
    assert udp["kernel_delivered"] == udp["sender_sent"]
    assert s["transport_details"]["gateway_stop"] == "ended by itself (exited with status 0)"  # at its end of session
    # It read for longer after the feed's end than the drain waits without a new event.
    drain_s = s["transport_details"]["gateway_contract"]["stop"]["drain_ms"] / 1000
    assert s["transport_details"]["gateway_resources"]["wall_s"] > udp["sender_sent"] / 5000 + drain_s


def test_a_copy_of_the_python_example_that_kept_its_link_says_what_to_copy(tmp_path):
    # `cp -r` keeps the example's link to gateway/log/whitebox/itchbench_stamps.py, which then leads nowhere: as a
    # white box (--latency-log) it says which file to copy, not an ImportError's traceback.
    copy = tmp_path / "gateway"
    subprocess.run(["cp", "-r", str(EXAMPLE.parent), str(copy)], check=True)
    assert not (copy / "itchbench_stamps.py").exists()
    with socket.socket() as bbo:  # its BBO connection is made first
        bbo.bind(("127.0.0.1", 0))
        bbo.listen()
        ran = subprocess.run([sys.executable, str(copy / "gateway.py"), "--serial", "/dev/null", "--bbo",
                              f"127.0.0.1:{bbo.getsockname()[1]}", "--latency-log", str(tmp_path / "latency.lat")],
                             capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert ran.stderr.startswith("gateway.py: itchbench_stamps.py is missing: copy itchbench's gateway/log/whitebox/")


@pytest.mark.parametrize("named_by", ["ITCHBENCH_GATEWAY", "worktree"])
def test_the_built_in_gateways_commands_take_a_binary_whose_path_holds_a_space(tmp_path, named_by):
    """From a checkout in `/tmp/sp ace/…`, every run of the built-in gateway ended `INCOMPLETE (gateway_failed)`
    with `bash: line 1: /tmp/sp: No such file or directory`: its commands expanded ${ITCHBENCH_GATEWAY:-…}
    unquoted, and the harness names its own build there. Each command is run here as a run fills it, its binary
    under a folder with a space, named by the variable or found under {worktree}."""
    checkout = tmp_path / "sp ace"
    (checkout / "build" / "gateway").mkdir(parents=True)
    binary = checkout / "build" / "gateway" / "itch-gateway"
    binary.symlink_to(paths.build_dir() / "gateway" / "itch-gateway")
    built_in = contract.load(paths.repo_root() / "itchbench.toml")
    env = {k: v for k, v in os.environ.items() if k != paths.GATEWAY_OVERRIDE}
    if named_by == "ITCHBENCH_GATEWAY":
        env[paths.GATEWAY_OVERRIDE] = str(binary)
    for kind in built_in.inputs:
        command = contract.fill(built_in.commands[kind], {
            "worktree": checkout if named_by == "worktree" else paths.repo_root(), "feed_port": 0, "serial": "",
            "baud": 0, "capture": "", "out": tmp_path, "itchbench_flags": ["--help"]})
        done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.startswith("itch-gateway --source"), (kind, done.stderr)
