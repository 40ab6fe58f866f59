"""A late join end to end (docs/snapshot.md): the built-in gateway in the run's namespace takes the book from the
snapshot server over TCP while udp-replay sends the session from before (or after) the join point, then applies
the feed from the number End of Snapshot carries. The reference is the simulation of the whole session; where
the join is and what was sent come from the servers' and the sender's own reports, not the gateway's."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from itchbench import paths, rundir
from itchbench.cli import main as itchbench_main
from itchbench.analysis import logs
from itchbench.gateways import blackbox
from itchbench.runs import join, runner, verdict
from itchbench.runs.transports import snapshot

from independent_bbo import Book, level_changes, mold_messages
from live_helpers import config
from test_depth import as_version_1, as_version_2
from tap_captures import mold_payload, read_pcap

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SAMPLE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"
MESSAGES = 8000


def _packets(pcap: Path):
    """(first sequence, message count) of each MoldUDP64 packet with messages, from the pcap's bytes."""
    for _, frame in read_pcap(pcap):
        seq, count = struct.unpack_from(">QH", mold_payload(frame), 10)
        if count not in (0, 0xFFFF):
            yield seq, count


def _run(tmp_path: Path, levels: int | str = 0, **join_table: object) -> dict:
    values = {**config(SAMPLE, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000},
                       rerequest={"server": True}, join={"feed_lead": 200, **join_table}), "subscribers": 0,
              "levels": levels}
    run = runner.execute(values, "join", root=tmp_path / "runs", echo=False)
    return rundir.read_json(run / "summary.json") | {"dir": str(run)}


@needs_root
@pytest.mark.parametrize("share", [0.1, 0.9])
def test_a_join_applies_exactly_the_session_after_the_snapshot(tmp_path, share):
    s = _run(tmp_path, at_share=share)
    j = s["reconciliation"]["join"]
    through = int(MESSAGES * share)
    assert s["verdict"]["status"] == "joined" and s["verdict"]["exit_status"] == 0, s["verdict"]["headline"]
    assert (j["through"], j["next"]) == (through, through + 1)
    assert s["reconciliation"]["received"] == MESSAGES - through
    assert j["bbo_check"]["after_join"]["equal"] and j["bbo_check"]["after_join"]["events"] > 0
    assert j["snapshot_events"] == j["bbo_check"]["stocks_at_join"] > 0
    assert s["verdict"]["headline"].startswith(f"JOINED at seq {through + 1:,}")
    # Its report and a document over it say the same.
    assert f"| the snapshot: its last message (N) / End of Snapshot's number | {through:,} / {through + 1:,} |" in \
        (Path(s["dir"]) / "report.md").read_text()
    assert itchbench_main(["doc", str(tmp_path / "runs"), "--out", str(tmp_path / "doc")]) == 0
    table = (tmp_path / "doc" / "report.md").read_text().split("## Late join")[1]
    assert f"| joined | {through + 1:,} | {j['snapshot']['messages']:,} |" in table


@needs_root
def test_a_join_with_depth_holds_the_depth_at_and_after_the_join_point(tmp_path):
    s = _run(tmp_path, levels=5, at_share=0.5)
    j = s["reconciliation"]["join"]
    assert s["verdict"]["status"] == "joined", s["verdict"]["headline"]
    depth = j["depth_check"]
    assert depth["equal"] and depth["after_join"]["events"] > 0 and depth["stocks_at_join"] > 0
    assert "depth event" in s["verdict"]["headline"] and "each stock's depth at the join = the simulation's" in \
        s["verdict"]["headline"]
    # A level changed in the gateway's depth (rewritten as whole events) — one share more at bid level 2 of an event after the join, then at the
    # best bid of one it published for the snapshot — is found where it is: after the join, or in that stock's
    # book at the join.
    path = Path(s["dir"]) / "depth.dep"
    rec = logs.read_depth(path).records
    snapshot = (rec["flags"] & logs.FLAG_FROM_SNAPSHOT) != 0
    for k, level, where in ((int(np.flatnonzero(~snapshot & (rec["bids"]["px"][:, 1] > 0))[0]), 1, "after"),
                            (int(np.flatnonzero(snapshot & (rec["bids"]["px"][:, 0] > 0))[-1]), 0, "at")):
        broken = Path(s["dir"]) / f"depth-{where}.dep"
        shutil.copyfile(path, broken)
        changed = rec.copy()
        changed["bids"]["qty"][k, level] += 1
        as_version_1(broken, changed)
        got = join.check_depth(broken, SAMPLE, "", j["through"])
        assert not got["equal"]
        flagged = (changed["flags"] & logs.FLAG_FROM_SNAPSHOT) != 0
        assert got == join.check_events(blackbox.depth_frame(changed), flagged, SAMPLE, "", j["through"], 5)  # as whole
        if where == "after":
            assert got["after_join"]["wrong"] == 1 and got["stocks_differing_at_join"] == 0
        else:
            assert got["after_join"]["equal"] and got["first_stock_differing"] == int(rec["stock_locate"][k])
            px, qty = int(rec["bids"]["px"][k, 0]), int(rec["bids"]["qty"][k, 0])
            assert got["first_level_differing"] == f"bid level 1: {qty + 1:,} shares at {px}, expected {qty:,} " \
                f"shares at {px}"


@needs_root
def test_a_join_with_every_level_publishes_the_whole_book_and_the_changes_after(tmp_path):
    s = _run(tmp_path, levels="all", at_share=0.5)
    j = s["reconciliation"]["join"]
    assert s["verdict"]["status"] == "joined", s["verdict"]["headline"]
    depth = j["depth_check"]
    assert depth["equal"] and depth["after_join"]["events"] > 0 and depth["stocks_at_join"] > 0
    # The levels published for the snapshot are the independent book's whole book at the join, every level of
    # every stock; the changes after it are the independent book's changes after it.
    through = j["through"]
    expected = level_changes(SAMPLE)
    book: dict[tuple, int] = {}
    for seq, stock, side, price, shares in expected:
        if seq <= through:
            book[(stock, side, price)] = shares
    rec = logs.read_depth(Path(s["dir"]) / "depth.dep").records
    snapshot = (rec["flags"] & logs.FLAG_FROM_SNAPSHOT) != 0
    names = rundir.read_json(Path(s["dir"]) / "gateway.json")["symbols"]
    got = {(names.get(str(int(r["stock_locate"])), str(int(r["stock_locate"]))), r["side"].decode(), int(r["px"])):
           int(r["qty"]) for r in rec[snapshot]}
    assert got == {k: v for k, v in book.items() if v} and len(got) >= 5
    assert [(int(r["seq"]), r["side"].decode(), int(r["px"]), int(r["qty"])) for r in rec[~snapshot]] == \
        [(e[0], e[2], e[3], e[4]) for e in expected if e[0] > through]
    # One share more in a change after the join, then in a level published for the snapshot: found where it is,
    # the level named.
    path = Path(s["dir"]) / "depth.dep"
    for k, where in ((int(np.flatnonzero(~snapshot)[3]), "after"), (int(np.flatnonzero(snapshot)[-1]), "at")):
        broken = rec.copy()
        broken["qty"][k] += 1
        out = Path(s["dir"]) / f"depth-{where}.dep"
        shutil.copyfile(path, out)
        as_version_2(out, broken)
        check = join.check_depth(out, SAMPLE, "", through)
        side = "bid" if rec["side"][k] == b"B" else "ask"
        said = f"{side} {int(rec['px'][k])}: {int(rec['qty'][k]) + 1:,} shares, expected {int(rec['qty'][k]):,}"
        assert not check["equal"]
        if where == "after":
            assert check["after_join"]["wrong"] == 1 and check["stocks_differing_at_join"] == 0
            assert check["after_join"]["first_difference"]["level"] == said
        else:
            assert check["after_join"]["equal"] and check["first_stock_differing"] == int(rec["stock_locate"][k])
            assert check["first_level_differing"] == said


@needs_root
def test_a_feed_that_starts_after_the_snapshot_is_filled_by_re_request(tmp_path):
    s = _run(tmp_path, at_seq=4000, feed_lead=-300)
    j, g = s["reconciliation"]["join"], rundir.read_json(Path(s["dir"]) / "gateway.json")
    assert s["verdict"]["status"] == "joined", s["verdict"]["headline"]
    # The feed began with the capture's first packet holding 4,301 or later: everything from 4,001 up to that
    # packet's first message had to be asked for.
    first = next(seq for seq, count in _packets(SAMPLE) if seq + count > 4300)
    assert j["re_requested_between"] == first - 4001 > 0
    assert g["recovery"]["messages_first"]["answers"] >= j["re_requested_between"]


@needs_root
def test_a_slow_snapshot_has_the_feed_held_and_what_it_covered_dropped(tmp_path):
    s = _run(tmp_path, at_seq=4000, messages_per_s=50)
    j = s["reconciliation"]["join"]
    assert s["verdict"]["status"] == "joined", s["verdict"]["headline"]
    # The feed started 200 messages before the join and ran on for the half second the snapshot took.
    assert j["held"] > 100 and j["covered_messages"] >= 200


@needs_root
def test_a_snapshot_cut_midway_is_taken_up_at_the_next_message(tmp_path):
    s = _run(tmp_path, at_seq=4000, cut_after=10)
    j = s["reconciliation"]["join"]
    assert s["verdict"]["status"] == "joined", s["verdict"]["headline"]
    assert j["connections"] == 2 and j["server_cut"] == 1
    clients = rundir.read_json(Path(s["dir"]) / "snapshot-server.json")["clients"]
    assert [c["requested_sequence"] for c in clients] == [1, 11]


def test_a_rejected_login_leaves_the_gateway_incomplete_with_the_code(tmp_path):
    """The gateway and the snapshot server alone, on loopback: a wrong password is refused (J A), and the gateway
    ends without pretending to have joined: incomplete, the code in its error."""
    server = subprocess.Popen([str(paths.tool("snapshot-server")), str(SAMPLE), "--through", "4000", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(server.stdout.readline().split("tcp=")[1].split()[0])
        gw = subprocess.run([str(paths.tool("itch-gateway")), "--source", "udp", "--port", "0", "--out", str(tmp_path),
                             "--snapshot", f"127.0.0.1:{port}", "--snapshot-login", "itch:wrong",
                             "--idle-exit-ms", "500"], capture_output=True, text=True, timeout=30)
    finally:
        server.terminate()
        server.wait(timeout=10)
    g = rundir.read_json(tmp_path / "gateway.json")
    assert gw.returncode == 1 and not g["complete"] and g["stop_reason"] == "late join failed", gw.stderr
    assert "rejected the login: A (not authorized)" in g["error"] and not g["join"]["ok"]


@needs_root
def test_a_seam_bug_is_caught_as_bbo_differs(tmp_path):
    """The check itself, against a BBO log changed by hand: the event after the join point shifted to the
    snapshot's last message (as a gateway applying N twice would emit), and a snapshot event dropped."""
    s = _run(tmp_path, at_seq=4000)
    log = Path(s["dir"]) / "bbo.bbo"
    session = Path(s["capture"])
    assert join.check(log, session, "", 4000)["equal"]
    raw = np.fromfile(log, np.uint8)
    head = logs.read_bbo(log).header_size
    rec = raw[head:].view(logs.BBO_DTYPE)
    first_live = int(np.flatnonzero((rec["seq"] > 4000) & ((rec["flags"] & logs.FLAG_FROM_SNAPSHOT) == 0))[0])
    shifted = tmp_path / "shifted.bbo"
    shutil.copy(log, shifted)
    edit = np.memmap(shifted, np.uint8, mode="r+")[head:].view(logs.BBO_DTYPE)
    edit["seq"][first_live] = 4000
    edit.flush()
    bad = join.check(shifted, session, "", 4000)
    assert not bad["equal"] and bad["events_before_join"] == 1 and bad["after_join"]["missing"] == 1
    # Read a part at a time, as its records read whole judge it.
    whole = logs.read_bbo(shifted).records
    assert bad == join.check_events(pd.DataFrame(blackbox.event_block(whole), columns=blackbox.COLUMNS),
                                    (whole["flags"] & logs.FLAG_FROM_SNAPSHOT) != 0, session, "", 4000)
    rec_j = {**s["reconciliation"]["join"], "bbo_check": bad}
    status, headline = verdict._judge_join({**s["reconciliation"], "join": rec_j}, 0, "")
    assert status == "bbo_differs" and "BBO DIFFERS after joining at seq 4,001" in headline


PY = paths.repo_root() / "examples" / "py-gateway"


def _run_py(tmp_path: Path, gateway: Path, **join_table: object) -> dict:
    values = {**config(SAMPLE, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000},
                       rerequest={"server": True}, join={"feed_lead": 200, **join_table}),
              "subscribers": 0, "gateway_file": str(gateway / "itchbench.toml")}
    run = runner.execute(values, "join-py", root=tmp_path / "runs", echo=False)
    return rundir.read_json(run / "summary.json") | {"dir": str(run)}


@needs_root
@pytest.mark.parametrize("table", [{"at_seq": 4000, "feed_lead": -300}, {"at_seq": 4000, "cut_after": 10}],
                         ids=["feed after the snapshot", "snapshot cut"])
def test_a_brought_gateway_joins_and_is_judged_black_box(tmp_path, table):
    s = _run_py(tmp_path, PY, **table)
    j = s["reconciliation"]["join"]
    assert s["verdict"]["status"] == "joined", s["verdict"]["headline"]
    assert j["black_box"] and j["bbo_check"]["after_join"]["equal"] and j["bbo_check"]["stocks_at_join"] > 0


@needs_root
def test_a_planted_off_by_one_at_the_seam_is_caught_with_the_first_difference(tmp_path):
    """A copy of the example that goes on from the snapshot's last message instead of the next one, so that the
    message the snapshot already holds is applied twice. The join point is one where that shows: an execution or
    cancel that leaves its order live at the best price (found with the independent book, not the gateway's)."""
    copy = tmp_path / "py-gateway"
    shutil.copytree(PY, copy)
    source = (copy / "gateway.py").read_text()
    right = "feed.next_seq = feed.top = take_snapshot(s_addr, int(s_port), user, password, staged.append)"
    assert right in source
    (copy / "gateway.py").write_text(source.replace(right, right + " - 1"))
    at = _a_reduction_twice_visible(SAMPLE, after=2000)
    s = _run_py(tmp_path, copy, at_seq=at)
    assert s["verdict"]["status"] == "bbo_differs", s["verdict"]["headline"]
    first = s["reconciliation"]["join"]["bbo_check"]["after_join"]["first_difference"]
    assert f"BBO DIFFERS after joining at seq {at + 1:,}" in s["verdict"]["headline"] and first["seq"] > at


@needs_root
def test_a_brought_gateway_whose_login_is_refused_is_said_so_by_the_server(tmp_path):
    """A contract that gives the example a password other than the run's: the example ends (status 1), and the run
    said only that, though the snapshot server had recorded why: the refusal is now in the headline."""
    copy = tmp_path / "py-gateway"
    shutil.copytree(PY, copy, ignore=shutil.ignore_patterns("__pycache__"))
    contract = (copy / "itchbench.toml").read_text()
    assert contract.count("{snapshot_user}:{snapshot_password}") == 1
    (copy / "itchbench.toml").write_text(contract.replace("{snapshot_user}:{snapshot_password}", "{snapshot_user}:x"))
    s = _run_py(tmp_path, copy, at_seq=4000)
    server = rundir.read_json(Path(s["dir"]) / "snapshot-server.json")
    assert server["rejected"] == {"not_authorized": 1, "session_not_available": 0} and server["logins"] == 0
    assert s["verdict"]["status"] == "incomplete" and s["verdict"]["headline"].endswith(
        "; no BBO event of it was received; the snapshot server refused 1 login (1 for a user or password not the "
        "run's)"), s["verdict"]["headline"]


def test_the_refusals_are_said_by_kind():
    j = {"next": 4001, "bbo_check": {}, "logins": 0, "snapshot_taken": False,
         "refused": snapshot.refusals({"rejected": {"not_authorized": 1}})}
    assert verdict._judge_join({"loss": {}, "join": j}, 0, "") == ("not_joined", (
        "NOT JOINED at seq 4,001: the snapshot server refused 1 login (1 for a user or password not the run's), "
        "recorded 0 logins and no snapshot received to its last message; a join is judged only once a snapshot was "
        "taken"))
    assert snapshot.refusals({"rejected": {"not_authorized": 0, "session_not_available": 0}}) == ""
    assert snapshot.refusals({}) == ""
    assert snapshot.refusals({"rejected": {"not_authorized": 2, "session_not_available": 1}}) == (
        "the snapshot server refused 3 logins (2 for a user or password not the run's; 1 for a session not the feed's)")


def _a_reduction_twice_visible(pcap: Path, after: int) -> int:
    """The first E, C or X past `after` whose second application would change its stock's BBO."""
    book = Book()
    for seq, m in mold_messages(pcap):
        if seq > after and m[:1] in (b"E", b"C", b"X"):
            twice = Book()
            twice.orders = {k: list(v) for k, v in book.orders.items()}
            twice.apply(m)
            stock = twice.apply(m)
            book.apply(m)
            if stock is not None and twice.bbo(stock) != book.bbo(stock):
                return seq
            continue
        book.apply(m)
    raise AssertionError("the fixture has no such message")
