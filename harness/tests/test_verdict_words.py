"""Each verdict class in its exact words and exit status (docs/verdicts.md):
lost, rejected, skipped and duplicated said apart, zero classes left out,
plurals right. Every capture is edited here byte by byte, so the expected
counts come from the edit, not from the gateway."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from itchbench import rundir
from itchbench.analysis import logs
from itchbench.cli import main as itchbench_main

from live_helpers import make_capture
from tap_captures import ethernet, ipv4, read_pcap, tap_capture, udp, write_pcap


def _sim(capture: Path, out: Path, capsys) -> tuple[int, str, dict]:
    code = itchbench_main(["sim", str(capture), "--out", str(out)])
    headline = capsys.readouterr().out.strip().splitlines()[-1]
    return code, headline, rundir.read_json(out / "summary.json")


def _itch_messages(data: bytes) -> list[bytes]:
    out, off = [], 0
    while off < len(data):
        n = int.from_bytes(data[off:off + 2], "big")
        out.append(data[off:off + 2 + n])
        off += 2 + n
    return out


@pytest.fixture(scope="session")
def seed_pcap(tmp_path_factory) -> Path:
    """300 messages, one a packet (seed-workload)."""
    return make_capture(tmp_path_factory.mktemp("cap"), "seed.pcap", "--messages", "300")


def test_lossless(seed_pcap, tmp_path, capsys):
    code, headline, s = _sim(seed_pcap, tmp_path / "run", capsys)
    events = s["bbo"]["events"]
    assert (code, headline) == (0, f"LOSSLESS: 300 messages, {events:,} BBO events, balanced")


# Gzip'd, the file is counted by itch-inspect beside the run rather than before it (runs/runner.py): the same words.
@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_malformed_messages_in_a_binary_itch_file_are_rejected_and_the_walk_goes_on(packed, tmp_path, capsys):
    day = make_capture(tmp_path, "day.itch", "--profile", "nasdaq-day", "--messages", "1000", "--symbol-count", "20",
                       "--format", "itch")
    messages = _itch_messages(day.read_bytes())
    unknown = struct.pack(">H", 12) + b"z" + bytes(11)  # a type ITCH 5.0 does not have
    short_add = struct.pack(">H", 20) + b"A" + bytes(19)  # an Add Order is 36 bytes; its prefix says 20
    edited = b"".join(messages[:5] + [unknown] + messages[5:500] + [short_add] + messages[500:])
    bad = day.with_name("bad.itch.gz" if packed else "bad.itch")
    bad.write_bytes(gzip.compress(edited) if packed else edited)
    code, headline, s = _sim(bad, tmp_path / "run", capsys)
    assert (code, headline) == (1, "REJECTED: 2 of 1,002 messages malformed (1 × unknown type, 1 × length mismatch);"
                                   " 1,000 applied, none lost")
    assert s["verdict"]["status"] == "rejected" and s["complete"] and s["balanced"]
    # The 1,000 good messages give the BBO events they give alone, at positions moved by the two inserted.
    _sim(day, tmp_path / "alone", capsys)
    got, alone = (logs.read_bbo(tmp_path / run / "bbo.bbo").records for run in ("run", "alone"))
    assert len(got) == len(alone) > 100
    moved = alone.copy()
    moved["seq"] = alone["seq"] + (alone["seq"] > 5) + (alone["seq"] > 500)
    moved["flags"] |= (moved["seq"] > 6).astype("u1")  # after the first rejection (position 6): book may be stale
    assert got.tobytes() == moved.tobytes()


def test_a_binary_itch_file_whose_framing_is_lost_stops_there_and_says_where(tmp_path, capsys):
    day = make_capture(tmp_path, "day.itch", "--profile", "nasdaq-day", "--messages", "100", "--symbol-count", "8",
                       "--format", "itch")
    messages = _itch_messages(day.read_bytes())
    offset = sum(len(m) for m in messages[:10])
    broken = day.with_name("broken.itch")
    broken.write_bytes(b"".join(messages[:10]) + b"\x00\x05zzzzz\xff\xff" + b"".join(messages[10:]))
    code, headline, s = _sim(broken, tmp_path / "run", capsys)
    assert code == 1 and headline.startswith("INCOMPLETE (input_ended_early)")
    assert f"offset {offset}" in headline and "framing lost" in headline, headline


def test_malformed_packets_only(tmp_path, capsys):
    frames = [(1_000 * i, ethernet(0x0800, ipv4("127.0.0.2", "127.0.0.1", 17, udp(26400, 26477, b"MOLD" * 3))))
              for i in range(200)]  # 12 bytes: shorter than a MoldUDP64 header (20)
    cap = tmp_path / "short.pcap"
    write_pcap(cap, frames)
    code, headline, _ = _sim(cap, tmp_path / "run", capsys)
    assert (code, headline) == (1, "REJECTED: 200 of 200 packets malformed (200 × too short); 0 messages applied,"
                                   " none lost")


def test_a_gap_is_lost_and_a_malformed_message_is_said_apart(seed_pcap, tmp_path, capsys):
    records = read_pcap(seed_pcap)
    ts, frame = records[49]
    records[49] = (ts, frame[:14 + 20 + 8 + 20 + 2] + b"z" + frame[14 + 20 + 8 + 20 + 3:])  # message 50: unknown type
    del records[99]  # message 100 never sent
    cap = tmp_path / "gap.pcap"
    write_pcap(cap, records)
    code, headline, _ = _sim(cap, tmp_path / "run", capsys)
    # The gap is the capture's own (no packet of it holds message 100): said so.
    assert (code, headline) == (1, "LOST: 1 of 300 messages lost (1 message in sequence gaps, all missing from the "
                                   "capture itself); 1 of 299 messages malformed (1 × unknown type); 298 applied; "
                                   "accounting balanced")


def test_duplicates_and_frames_of_other_flows_are_said_and_are_not_loss(seed_pcap, tmp_path, capsys):
    records = read_pcap(seed_pcap)
    records.insert(20, records[19])  # packet 20 again
    dup = tmp_path / "dup.pcap"
    write_pcap(dup, records)
    tap = tap_capture(dup, tmp_path / "tap.pcap")
    skipped = sum(tap.not_feed.values())
    code, headline, s = _sim(tap.path, tmp_path / "run", capsys)
    events = s["bbo"]["events"]
    assert (code, headline) == (0, f"LOSSLESS: 300 messages, {events:,} BBO events, balanced; {skipped} frames not"
                                   " of the feed skipped; 1 duplicate message ignored")


def _loss(**kw: object) -> dict:
    base = {"messages_not_applied": 0, "sender_failed_packets": 0, "kernel_dropped_datagrams": 0,
            "serial_bad_lines": 0, "sequence_gap_messages": 0, "late_messages_discarded": 0,
            "undetected_messages": 0, "subscriber_frames_dropped": {}, "rejected_messages": 0, "rejected_packets": 0,
            "expected_messages": 1000}
    return {**base, **kw}


def test_faults_accounted_covers_only_injected_faults():
    from itchbench.runs import verdict
    rec = {"balanced": True, "checks": {"a count": True}, "received": 990, "decoded": 990,
           "faults": {"summary": "10 messages dropped (seed 5)"}}
    faulted = {"complete": True, "bbo": {"events": 5}, "reconciliation": {**rec, "loss": _loss(messages_not_applied=10)}}
    assert verdict.judge(faulted)["status"] == "faults_accounted"
    # The same run with a BBO frame a subscriber missed: a loss no fault declared.
    missed = {**faulted, "reconciliation": {**rec, "loss": _loss(messages_not_applied=10,
                                                                  subscriber_frames_dropped={"subscriber 0": 3})}}
    v = verdict.judge(missed)
    assert v["status"] == "lost" and v["exit_status"] == 1 and "subscriber 0 missed 3 BBO frames" in v["headline"]


def test_a_failed_check_does_not_hide_what_was_lost_besides():
    # A broker restarted mid-run: its acknowledgement of one message failed a check, and the subscriber missed 40
    # frames. The headline had named the check alone.
    from itchbench.runs import verdict
    rec = {"balanced": False, "checks": {"MQTT: the broker acknowledged every message sent (1 of 1,123 not)": False,
                                         "a count": True}, "received": 1000, "decoded": 1000}
    run = {"complete": True, "bbo": {"events": 5},
           "reconciliation": {**rec, "loss": _loss(subscriber_frames_dropped={"subscriber 0 (MQTT, QoS 1)": 40})}}
    v = verdict.judge(run)
    assert v["status"] == "unbalanced" and v["exit_status"] == 1
    assert v["headline"] == ("NOT BALANCED: failed: MQTT: the broker acknowledged every message sent (1 of 1,123 "
                             "not); and lost: subscriber 0 (MQTT, QoS 1) missed 40 BBO frames; no feed message lost")
    # Nothing lost besides: the failed check alone.
    run["reconciliation"]["loss"] = _loss()
    assert verdict.judge(run)["headline"] == ("NOT BALANCED: failed: MQTT: the broker acknowledged every message "
                                              "sent (1 of 1,123 not)")


def test_a_black_box_is_credited_only_with_what_was_seen():
    from itchbench.runs import verdict
    check = {"mode": "exact", "events": 40, "reference_events": 40, "missing": 0, "extra": 0, "wrong": 0,
             "out_of_order": 0, "equal": True, "malformed_lines": 0, "malformed_examples": []}
    own_file = {"complete": True, "transport": "sim", "reconciliation": {
        "balanced": True, "checks": {}, "loss": {"expected_messages": 100, "sender_failed_packets": 0,
                                                 "kernel_dropped_datagrams": 0, "lossless": True}, "bbo_check": check}}
    assert verdict.judge_black_box(own_file)["headline"] == \
        "LOSSLESS: 100 messages in the capture it reads itself, 40 BBO events = simulation (exact)"
    sent = {**own_file, "transport": "udp",
            "reconciliation": {**own_file["reconciliation"], "checks": {"sent = delivered": True}}}
    assert verdict.judge_black_box(sent)["headline"].endswith("40 BBO events = simulation (exact), balanced")
    # Wire to wire is credited to the gateway with its stamps' caveat: events the collector stamped when it read
    # them, for want of an arrival stamp, are said in the headline.
    w2w = {"events": 40, "from_intended": {"p50": 12_000, "p99": 30_000},
           "collector": {"events_stamp_unknown": 0, "events_earlier_than_stamp": 3}}
    timed = {**sent, "wire_to_wire": w2w}
    assert verdict.judge_black_box(timed)["headline"].endswith("balanced; wire-to-wire p50 12.0 µs, p99 30.0 µs")
    late = {**sent, "wire_to_wire": {**w2w, "collector": {**w2w["collector"], "events_stamp_unknown": 5}}}
    assert verdict.judge_black_box(late)["headline"].endswith(
        "wire-to-wire p50 12.0 µs, p99 30.0 µs (5 of 40 events stamped when read, late by a wait not known)")
    # Lost on line A, and a gateway that listens to line A only: the copies were on line B, not taken from it.
    r = {"lines": 2, "from_the_other_line": 300, "server": False, "lost_on_every_line": 0, "lost_on_wire": 300,
         "never_answered": 0}
    differs = {**sent, "reconciliation": {**sent["reconciliation"], "recovery": r,
                                          "bbo_check": {**check, "equal": False, "missing": 12}}}
    v = verdict.judge_black_box(differs)
    assert v["status"] == "bbo_differs" and "300 on the other line" in v["headline"]
    assert "from the other line" not in v["headline"]


def test_a_black_box_runs_line_names_the_events_its_contract_publishes():
    from itchbench.commands.common import run_line
    check = {"mode": "exact", "events": 7, "reference_events": 8, "missing": 1, "extra": 0, "wrong": 0,
             "out_of_order": 0, "equal": False, "malformed_lines": 0, "malformed_examples": []}
    s = {"transport": "sim", "reconciliation": {"loss": {"expected_messages": 100}, "bbo_check": check}}
    words = {0: "7 BBO events received of 8 (simulation)", 5: "7 depth events (5 levels) received of 8 (simulation)",
             "all": "7 level changes (every level) received of 8 (simulation)"}
    for levels, expected in words.items():
        assert expected in run_line({**s, "bbo": {"levels": levels}}), levels
    # Counts of a day are grouped in thousands, as the verdict's are.
    day = {**check, "events": 20_058_455, "reference_events": 20_058_455, "missing": 0, "wrong": 312_450,
           "malformed_lines": 1_234}
    assert ("20,058,455 BBO events received of 20,058,455 (simulation); 0 missing, 0 extra, 312,450 wrong, "
            "0 out of order, 1,234 malformed lines") in run_line({**s, "bbo": {"levels": 0},
                                                                 "reconciliation": {**s["reconciliation"],
                                                                                    "bbo_check": day}})
    # serial-replay ended without its report (killed): what it sent is not known, not 0 lines.
    serial = {**s, "transport": "serial", "bbo": {"levels": 0},
              "reconciliation": {**s["reconciliation"], "serial": {"lines_sent": None}}}
    assert "; serial-replay did not say what it sent; " in run_line(serial)
    serial["reconciliation"]["serial"]["lines_sent"] = 462
    assert "; serial-replay sent 462 lines; " in run_line(serial)
    # A flood (gateways/in_parts.py): the counts are of the events up to its seq, which the line says.
    flood = {**check, "flood": {"seq": 4_001, "events_of_seq": 4_200_000, "most": 4_194_304, "bytes_not_read": 9}}
    assert run_line({**s, "bbo": {"levels": 0}, "reconciliation": {**s["reconciliation"], "bbo_check": flood}}) \
        .endswith("1 missing, 0 extra, 0 wrong, 0 out of order, 0 malformed lines; judged up to seq 4,001 only: the "
                  "output then held 4,200,000 events of that one seq (more than 4,194,304, a flood) and was read no "
                  "further, 9 bytes unread")


def test_a_loss_offered_again_is_said_to_be_the_gateways():
    """Both lines dropped packets, no server: 70 messages were lost on every line, and the built-in gateway gave
    up 73. The 3 a line still carried were its own loss, which the words for the wire's did not say."""
    from itchbench.runs import verdict
    recovery = {"lines": 2, "server": False, "lost_on_wire": 1491, "lost_on_every_line": 70,
                "from_the_other_line": 1421, "never_answered": 70, "answered_by_server": 0}
    rec = {"balanced": True, "checks": {"a count": True}, "received": 7927, "decoded": 7927, "recovery": recovery}

    def headline(**loss: object) -> str:
        return verdict.judge({"complete": True, "bbo": {"events": 5},
                              "reconciliation": {**rec, "loss": _loss(expected_messages=8000, **loss)}})["headline"]

    assert "70 lost on every line, no re-request server; 3 of them offered again (on the other line) and not " \
           "applied; accounting balanced" in headline(messages_not_applied=73, sequence_gap_messages=73)
    # No more than the wire lost everywhere: nothing of the gateway's to say.
    assert "offered again" not in headline(messages_not_applied=70, sequence_gap_messages=70)
    # A copy the kernel dropped was never offered: the clause would blame the gateway for it.
    assert "offered again" not in headline(messages_not_applied=73, sequence_gap_messages=73,
                                           kernel_dropped_datagrams=2)


def test_a_depth_subscribers_frames_are_said_depth_frames():
    """A depth subscriber's frames are level changes, not BBO events: its loss and its duplicates say so, named as
    reconcile names the subscriber; a BBO subscriber beside it keeps 'BBO frames'."""
    from itchbench.runs import reconcile, verdict
    rec = {"received": 1000, "missing": 0, "reordered": 0, "duplicates": 0, "rejected": 0, "rejected_reasons": {},
           "rejected_packets": 0, "rejected_packet_reasons": {}, "packets": 100, "decoded": 1000}
    subs = [{"index": 0, "kind": "tcp", "mode": "fast", "frames_dropped": 3, "duplicates": 0},
            {"index": 4, "kind": "mqtt", "depth": 5, "settings": "QoS 1", "mode": "fast", "frames_dropped": 2,
             "duplicates": 1}]
    loss = reconcile._loss("sim", rec, subs)
    v = verdict.judge({"complete": True, "bbo": {"events": 5},
                       "reconciliation": {"balanced": True, "checks": {}, **rec, "loss": loss}})
    assert v["headline"] == ("LOST: subscriber 0 (TCP) missed 3 BBO frames; subscriber 4 (MQTT, depth, QoS 1) missed "
                             "2 depth frames; no feed message lost; 1,000 applied; subscriber 4 (MQTT, depth, QoS 1) "
                             "received 1 depth frame twice; accounting balanced")


def test_datagrams_no_socket_took_are_lost_however_right_the_output(tmp_path):
    """A gateway ready before its feed socket was bound misses what is sent meanwhile: a stock directory, say, which
    a gateway naming stocks by locate does not need, so that its output still equals the simulation. The datagrams
    the kernel had no socket for, up to the session's last message, are lost on a run of one line with no way back;
    those sent after it (ends of session a gateway that ended at the first leaves to no socket) are not; with a B
    line or a re-request server the recovery's verdict says what came back."""
    from itchbench.analysis import logs
    from itchbench.commands.common import run_line
    from itchbench.runs import reconcile, verdict
    # 10 packets of messages, then 3 ends of session (count 0 in the send log), one of them refused by the line.
    send = np.zeros(13, logs.SEND_DTYPE)
    send["count"][:10] = 5
    send["flags"] = 0x80
    send["flags"][11] |= logs.SEND_DROPPED
    log = tmp_path / "send.log"
    writer = logs.LogWriter(log, logs.KIND_SEND, stage_clock=1)
    writer.append(send)
    writer.close()
    facts = {"heartbeats": 1, "ends_of_session": 2}
    hop = {"sender": "udp-replay", "sender_sent": 12, "kernel_delivered": 1, "kernel_dropped": 0,
           "kernel_no_port": 11, "kernel_no_group_member": 0, "kernel_no_socket": 11, "expected_messages": 50,
           "loops": 2}
    assert reconcile._after_last_message(log, facts, hop) == 2
    # tcpreplay writes no send log: at most every packet of the capture that carries no message, each loop's.
    assert reconcile._after_last_message(tmp_path / "no-send.log", facts, hop) == 6
    def two() -> int:  # the packets after the last message, as _after_last_message counted them
        return 2
    assert reconcile._no_socket(hop, None, False, two) == 9
    assert reconcile._no_socket({**hop, "kernel_no_socket": 4}, None, False, two) == 2  # (no group member)
    # A gateway that ended at the first end of session: the two after it found no socket, nothing else did.
    assert reconcile._no_socket({**hop, "kernel_no_socket": 2}, None, False, two) == 0
    assert reconcile._no_socket(hop, {"b": {}}, False, two) == 0 and reconcile._no_socket(hop, None, True, two) == 0
    check = {"mode": "exact", "events": 40, "reference_events": 40, "missing": 0, "extra": 0, "wrong": 0,
             "out_of_order": 0, "equal": True, "malformed_lines": 0, "malformed_examples": []}
    loss = {"expected_messages": 50, "sender_failed_packets": 0, "kernel_dropped_datagrams": 0,
            "kernel_no_socket_datagrams": 9, "lossless": False}
    s = {"complete": True, "transport": "udp", "bbo": {"levels": 0},
         "reconciliation": {"balanced": True, "checks": {"sent = delivered": True}, "loss": loss, "bbo_check": check,
                            "udp": hop}}
    v = verdict.judge_black_box(s)
    assert (v["status"], v["exit_status"]) == ("lost", 1)
    assert v["headline"] == ("LOST: the kernel found no socket for at least 9 datagrams sent up to the session's last "
                             "message (the gateway's feed socket not bound, or the group not joined, when they came, "
                             "though it was ready) on the way to the gateway; accounting balanced")
    assert "udp-replay sent 12 / kernel delivered 1 dropped 0, no socket 11" in run_line(s)
