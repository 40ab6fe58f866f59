"""summary.json: completeness, the BBO digest, every message accounted for,
and the verdict.

For each transport the counts are followed hop by hop — capture, sender,
kernel, gateway, decoder, logs, subscribers — and each hop is checked
against the next (`checks`: the accounting adds up, `balanced`). Separately,
`loss` says what did not arrive and where (`lossless`: nothing). A run whose
capture carries a fault sidecar (itchbench faults) is reconciled with it
exactly, per kind. docs/verdicts.md defines every field.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd

from ..analysis import hops, logs, microbench
from ..captures import faults
from ..captures.digest import sim_bbo, sim_depth
from ..captures.inspect import capture_kind, facts_of
from ..gateways import adapter, blackbox, in_parts, white_box
from .. import progress, rundir
from . import join, noise, recovery, verdict
from .transports import rerequest, snapshot, udp
from .failure import RunError, describe_exit

if TYPE_CHECKING:
    from .run import Run


# The checks that what the run recorded of the gateway's output is all it published: its BBO and depth logs took
# every record, and itchbench's receiving end of a brought gateway's output took every datagram and read all a broker
# held for it. One that fails leaves the stream recorded short through no doing of the build (a full disk, a busy
# machine): its digest is no build's, and compare and bisect judge no output from the run
# (reconciliation.output_unrecorded).
LOG_DROPPED = "no {} log record dropped"
COLLECTOR_SOCKET = "the collector's socket dropped none of the gateway's BBO datagrams"
COLLECTOR_READ = "the collector read what the {} broker held for it to its end"
_RECORDING = (LOG_DROPPED.format("bbo"), LOG_DROPPED.format("depth"), COLLECTOR_SOCKET,
              COLLECTOR_READ.partition("{}")[0])


def output_unrecorded(checks: dict[str, bool]) -> list[str]:
    """The recording checks that failed, as named."""
    return [name for name, ok in checks.items() if not ok and name.startswith(_RECORDING)]


def _depth(run: "Run", gw: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    """The run's depth events (levels = N): their count, N and digest (of the events read back whole: the same
    whatever version of the log holds them); every event and record the gateway counted is in its log, whole (else
    the run does not balance)."""
    path = run.dir / "depth.dep"
    if not path.is_file():
        checks["depth log written (levels = N)"] = False
        return {"levels": run.values["levels"], "events": 0, "digest": ""}
    log = logs.read_depth(path)
    # A day at 5 levels is 120 M level changes, read back, rebuilt into events and hashed: seconds, said as they go.
    meter = progress.Progress("depth log, read back and digested", gw["logs"].get("depth_records") or None,
                              say=run.say, log=run.dir / "progress.log", unit="level changes")
    try:
        summary = logs.depth_summary(log, meter.update)
    except logs.LogFormatError as e:
        meter.finish(how="refused")
        # Records a reader cannot rebuild events from (one takes out a level its top N does not hold, ...): the
        # gateway wrote them, and nothing more of its depth can be judged. Named, with the first record refused.
        checks[f"depth log holds together (its records rebuild every event): {str(e).rpartition('.dep: ')[2]}"] = False
        return {"levels": logs.levels_of(log.dtype), "events": 0, "digest": "", "refused": str(e)}
    meter.finish(summary.changes)
    checks["depth log holds together (its records rebuild every event)"] = True
    checks["depth events logged = the gateway's count"] = (
        summary.changes == gw["logs"].get("depth_records", 0) and summary.events == gw.get("depth_events", -1)
        and log.complete)
    return {"levels": logs.levels_of(log.dtype), "events": summary.events, "digest": summary.digest}


def _latency_messages(run: "Run", lat_path: Path) -> int:
    """The messages the latency log holds. In a simulation the report's second pass decoded the log's slots as the
    gateway wrote them (analysis/latency_follow.py): when it decoded every one, its count is the log's, and the
    log is not read again (50 M messages: 1 GB, 0.27 s). Otherwise they are counted here."""
    lat = logs.read_latency(lat_path)
    followed = run.follower.result() if run.follower is not None else None
    covered = followed.covered if followed is not None else None
    if covered is not None and not covered.abandoned and covered.slots == len(lat.stored):
        return int(covered.messages)
    return lat.count


def _stale_flags(bbo: logs.LogFile, after: int | None, source: str, checks: dict[str, bool],
                 seen: logs.StaleSeen | None = None) -> dict[str, Any]:
    """The stale flag (FORMAT.md, 0x01) on exactly the BBO events after seq `after`, the first message lost or
    rejected (None: on none), as `source` says that message is. When what the digest's pass saw (`seen`) shows
    them so, that is the answer (50 M messages: 0.14 s less); otherwise the log is read again for the events
    that differ, a chunk at a time: a memory map of the log would keep every page of it resident (a 270 M-message
    day's BBO log is 1 GB)."""
    name = (f"BBO events flagged stale = those after seq {after:,}, the first message lost or rejected ({source})"
            if after is not None else f"no BBO event flagged stale ({source})")
    if seen is not None and seen.exactly_after(after):
        checks[name] = True
        return {"after_seq": after, "flagged": seen.flagged, "expected": seen.flagged, "wrong": 0}
    flagged_n = expected_n = wrong_n = 0
    first: dict[str, Any] = {}
    for part in logs.iter_records(bbo, 1 << 20):
        seq = part["seq"]
        flagged = (part["flags"] & logs.FLAG_BOOK_MAY_BE_STALE) != 0
        expected = seq > after if after is not None else np.zeros(len(seq), dtype=bool)
        wrong = np.flatnonzero(flagged != expected)
        if wrong.size and not first:
            first = {"first_wrong_seq": int(seq[wrong[0]]), "first_wrong_flagged": bool(flagged[wrong[0]])}
        flagged_n, expected_n, wrong_n = (flagged_n + int(flagged.sum()), expected_n + int(expected.sum()),
                                          wrong_n + int(wrong.size))
    checks[name] = wrong_n == 0
    return {"after_seq": after, "flagged": flagged_n, "expected": expected_n, "wrong": wrong_n, **first}


def _feed_facts(capture: Path, feed: str) -> dict[str, Any]:
    """The feed the run read (address "" for a binary ITCH file) and what else the capture holds (counted, never
    replayed)."""
    if capture_kind(capture) != "pcap":
        return {"address": "", "not_feed": {}, "flows": []}
    facts = facts_of(capture, feed)
    return {"address": facts["feed"], "not_feed": facts["not_feed"], "flows": facts["flows"]}


def _capture_own(capture: Path, feed: str, session: Path, recovering: bool, joined: bool) -> dict[str, Any]:
    """What the session a run is held to holds, itch-inspect's facts, for what of it reading it in order does not
    apply (the messages the capture does not hold, its own sequence gaps; those it holds after a later one, late)
    or rejects (its malformed messages and packets), when nothing else accounts for it: {} when something does. A
    fault sidecar declares its capture's. A recovering run is held to the whole session it was made from
    (`session`): what that lacks no line and no server can bring back (a B line carries the same recording). A late
    join is held to the session after the join point alone: not counted here."""
    if joined:
        return {}
    source = session if recovering else capture
    if source == capture and faults.sidecar_of(capture) is not None:
        return {}
    return facts_of(source, feed)


def _capture_unapplied(own: dict[str, Any]) -> tuple[int, int]:
    """Of the session's own facts (_capture_own), the messages it does not hold and those it holds late."""
    return int(own.get("missing_messages", 0)), int(own.get("late_messages", 0))


def _gateway(gw: dict[str, Any], latency_records: int | None, bbo_records: int,
             checks: dict[str, bool]) -> dict[str, Any]:
    dec = gw["decode"]
    rejected = dec["rejected_unknown_type"] + dec["rejected_wrong_length"] + dec["rejected_empty"]
    received = gw["messages_received"]
    checks["decoded + rejected = received"] = dec["messages"] + rejected == received
    if latency_records is not None:
        checks["one latency record per message"] = latency_records == received
    checks["one BBO record per event"] = bbo_records == gw["bbo_events"]
    for log in ("latency", "bbo", "depth"):
        if f"{log}_dropped" not in gw["logs"]:  # no depth log (levels not asked)
            continue
        dropped = gw["logs"][f"{log}_dropped"]
        why = gw["logs"].get(f"{log}_drop_reason") or "no reason given"
        name = LOG_DROPPED.format(log) + (f" ({dropped:,} dropped: {why})" if dropped else "")
        checks[name] = dropped == 0
    seq, mold = gw["sequence"], gw["mold"]
    packet_reasons = {why: mold.get(f"rejected_{key}", 0) for key, why in _PACKET_REJECTIONS}
    return {
        "received": received, "decoded": dec["messages"], "rejected": rejected,
        "rejected_reasons": {why: dec[f"rejected_{key}"] for key, why in _MESSAGE_REJECTIONS},
        "missing": seq["missing_messages"], "duplicates": seq["duplicate_messages"],
        "reordered": seq["reordered_messages"], "gap_events": seq["gap_events"],
        "packets": mold["packets"], "rejected_packets": sum(packet_reasons.values()),
        "rejected_packet_reasons": packet_reasons,
        "latency_records": latency_records, "bbo_events": gw["bbo_events"], "bbo_records": bbo_records,
    }


# The gateway's rejection counters and what a headline calls each (docs/verdicts.md).
_MESSAGE_REJECTIONS = [("unknown_type", "unknown type"), ("wrong_length", "length mismatch"), ("empty", "empty")]
_PACKET_REJECTIONS = [("too_short", "too short"), ("length_overrun", "message overruns packet"),
                      ("count_mismatch", "count mismatch"), ("sequence_overflow", "sequence overflow")]


def _udp_path(run: "Run", facts: dict[str, Any], checks: dict[str, bool], *, kernel_udp: bool = True,
              answers_read: int | None = None) -> dict[str, Any]:
    """The way to any gateway over UDP: the sender's counts against the capture, the kernel's against the
    sender's (unless the feed bypasses the kernel's UDP stack: kernel_udp False). BBO that a contract gateway
    sends over UDP crosses the same kernel: its datagrams, as the collector counted them, are not the feed's."""
    loops = run.values["replay"]["loops"]
    sender, kernel = run.values["replay"]["sender"], run.extras.get("kernel", {})
    datagrams = run.extras.get("replayed_datagrams", facts["datagrams"])  # a binary ITCH file's: as packetized
    expected_datagrams = datagrams * loops
    line_dropped = 0  # copies a line's declared faults kept from being sent (udp-replay's lines)
    if sender == "tcpreplay":
        tr = run.extras.get("tcpreplay", {})
        sent, failed = int(tr.get("successful", 0)), int(tr.get("failed", 0))
    else:
        ur = run.extras.get("udp_replay", {})
        sent, failed = int(ur.get("sent", 0)), int(ur.get("failed", 0))
        # Sent on every line, A and B: a copy a line's faults dropped was never sent, and is counted as such.
        lines = int(ur.get("lines", 1))
        line_dropped = int(ur.get("line_a_dropped", 0)) + int(ur.get("line_b_dropped", 0))
        # The sender's own heartbeats and ends of session (a MoldUDP64 server's), on every line too; and the second
        # sends of the packets a line's faults duplicated.
        made = int(ur.get("heartbeats_made", 0)) + int(ur.get("ends_of_session_made", 0))
        duplicated = int(ur.get("line_a_duplicated", 0)) + int(ur.get("line_b_duplicated", 0))
        expected_datagrams = (expected_datagrams + made) * lines + duplicated
    delivered = kernel.get("UdpInDatagrams", 0)
    bbo, bbo_dropped = _collector_datagrams(run)
    if bbo_dropped is not None:  # the collector's socket's own drops are the BBO output's, not the feed's
        checks[COLLECTOR_SOCKET + (f": it dropped {bbo_dropped:,} (its receive buffer full): the BBO output judged is "
                                   "not what the gateway sent" if bbo_dropped else "")] = bbo_dropped == 0
    dropped = kernel.get("UdpInErrors", 0) - (bbo_dropped or 0)
    # The gateway's conversation with the re-request server crosses the same kernel: its requests (read, left
    # unread at the stop, or dropped at the server's socket) and the server's answer packets.
    server = run.extras.get("request_server") or {}
    talk = (int(server.get("requests", 0)) + int(server.get("requests_unread_at_stop", 0))
            + int(server.get("socket_dropped", 0)) + int(server.get("answer_packets", 0)))
    ur = run.extras.get("udp_replay", {}) if sender == "udp-replay" else {}
    lined, made = ur.get("lines", 1) > 1, ur.get("heartbeats_made", 0) + ur.get("ends_of_session_made", 0)
    duplicated = int(ur.get("line_a_duplicated", 0)) + int(ur.get("line_b_duplicated", 0))
    checks[f"{sender} sent + failed" + (" + dropped by the lines" if lined or line_dropped else "")
           + " = capture datagrams x loops" + (" + its own heartbeats and ends of session" if made else "")
           + (" x lines" if lined else "") + (" + the lines' duplicates" if duplicated else "")] = \
        sent + failed + line_dropped == expected_datagrams
    accounted = delivered - bbo - talk + dropped + kernel.get("UdpNoPorts", 0) + kernel.get("UdpIgnoredMulti", 0)
    # Multicast that reaches a namespace with no member of its group left (the gateway ended at one line's end of
    # session while the other line's last copies were on their way, or it never joined) is dropped at the IP layer
    # with no counter of its own (the IP layer's multicast count has IGMP in it too): what UDP did not see of the
    # sender's multicast is that, said as such. A socket that could not take a datagram is counted by UDP.
    multicast = bool(run.values["replay"]["multicast"])
    # The sender's own ends of session go on after the last message: a gateway that stops at the first may leave
    # the rest queued on its socket as it closes, which no counter counts (UDP counts a datagram when it is read).
    ends = int(run.extras.get("udp_replay", {}).get("ends_of_session_made", 0)) if sender == "udp-replay" else 0
    unread_ends = min(max(0, sent - accounted), ends)
    # Likewise the server's answers still on their way when the gateway stopped (a slow server's answers to
    # requests already filled): at most those the gateway did not read, when it says (white box).
    answers = int(server.get("answer_packets", 0))
    unread_answers = min(max(0, sent - accounted - unread_ends),
                         answers - answers_read if answers_read is not None else answers)
    no_member = max(0, sent - accounted - unread_ends - unread_answers) if multicast else 0
    # What no counter has: UDP counts a datagram when a socket reads it, so one still queued on the gateway's
    # socket when the gateway ended is in none of them. Said with the check, by number.
    uncounted = sent - accounted - no_member - unread_ends - unread_answers
    if kernel_udp:
        less = [f"{bbo:,} BBO datagrams to the collector"] * bool(bbo) + \
               [f"{talk:,} requests and answers with the re-request server"] * bool(server)
        checks["kernel delivered + dropped + no port" + (" + no group member" if multicast else "")
               + (" + ends of session left unread at the gateway's end" if ends else "")
               + (" + answers left unread at the gateway's end" if server else "") + " = sent"
               + (f" (less {', '.join(less)})" if less else "")
               + (f": {uncounted:,} of them counted nowhere (a datagram still queued, unread, on the gateway's "
                  "socket when it ended has no counter)" if uncounted > 0 else
                  f": {-uncounted:,} more counted than sent" if uncounted < 0 else "")] = uncounted == 0
    return {
        "capture_datagrams": datagrams, "loops": loops, "expected_messages": facts["messages"] * loops,
        "sender": sender, "sender_sent": sent, "sender_failed": failed, "line_dropped": line_dropped,
        "kernel_delivered": delivered, "kernel_dropped": dropped, "kernel_in_errors": kernel.get("UdpInErrors", 0),
        "kernel_sent": kernel.get("UdpOutDatagrams", 0), "collector_dropped": bbo_dropped,
        "kernel_rcvbuf_errors": kernel.get("UdpRcvbufErrors", 0), "kernel_no_port": kernel.get("UdpNoPorts", 0),
        "kernel_no_group_member": no_member, "ends_of_session_unread": unread_ends,
        # No port bound, or no member of the group: every datagram no socket took, whichever way.
        "kernel_no_socket": kernel.get("UdpNoPorts", 0) + no_member,
        "answers_unread": unread_answers, "uncounted": uncounted,
        "sender_stopped": bool(run.extras.get("sender_stopped")),  # before its end, with a run that failed
    }


def _udp(run: "Run", gw: dict[str, Any], facts: dict[str, Any], checks: dict[str, bool],
         server: dict[str, Any] | None = None) -> dict[str, Any]:
    if "af_xdp" in gw:
        return _af_xdp(run, gw["af_xdp"], facts, checks)
    hop = _udp_path(run, facts, checks, answers_read=gw["udp"].get("per_line", {}).get("answers"))
    # Read and dropped as it stopped (copies after the end of session, late answers): the kernel counted them.
    unread = int(gw["udp"].get("unread_at_stop", 0))
    name = "gateway datagrams" + (" + those left unread at its stop" if unread else "")
    if server is None:
        checks[f"{name} = kernel delivered"] = gw["udp"]["datagrams"] + unread == hop["kernel_delivered"]
    else:  # the server's reads of the gateway's requests are the kernel's deliveries too
        checks[f"{name} + requests the server read = kernel delivered"] = \
            gw["udp"]["datagrams"] + unread + int(server.get("requests", 0)) == hop["kernel_delivered"]
    return {**hop, "gateway_datagrams": gw["udp"]["datagrams"], "gateway_unread_at_stop": unread}


def _af_xdp(run: "Run", xdp: dict[str, Any], facts: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    """The feed taken at the XDP hook: the kernel's UDP stack never sees it, so the hook's and the socket's
    counts take the place of the kernel's: every datagram sent reached the hook; each one there went to the
    socket or (no socket bound) on to the kernel; each one the socket took was read or dropped by it."""
    hop = _udp_path(run, facts, checks, kernel_udp=False)
    sent = hop["sender_sent"]
    socket_dropped = xdp["rx_dropped"] + xdp["rx_ring_full"]
    checks["XDP hook feed frames = sent"] = xdp["hook_feed_frames"] == sent
    checks["hook redirected + passed (no socket) = hook feed frames"] = (
        xdp["hook_redirected"] + xdp["hook_no_socket"] == xdp["hook_feed_frames"])
    checks["gateway datagrams + socket dropped = redirected"] = (
        xdp["datagrams"] + xdp["not_udp"] + socket_dropped == xdp["hook_redirected"])
    return {**{k: hop[k] for k in ("capture_datagrams", "loops", "expected_messages", "sender", "sender_sent",
                                   "sender_failed")},
            "source": "af_xdp", "attach_mode": xdp["attach_mode"], "bind_mode": xdp["bind_mode"],
            "hook_feed_frames": xdp["hook_feed_frames"], "hook_redirected": xdp["hook_redirected"],
            "hook_no_socket": xdp["hook_no_socket"], "hook_other_frames": xdp["hook_other_frames"],
            "socket_dropped": socket_dropped, "gateway_datagrams": xdp["datagrams"],
            # What the loss counts as dropped before the gateway: at the socket, or passed by the hook.
            "kernel_dropped": socket_dropped + xdp["hook_no_socket"]}


def _serial_path(run: "Run", facts: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    """The way to any gateway over the serial line: serial-replay sent every message of the capture."""
    sr = run.extras.get("serial_replay")
    # None: it said nothing of what it sent (killed, or never started), which is not 0 lines.
    lines_sent = int(sr["lines"]) if sr is not None else None
    checks["serial-replay sent every message"] = sr is not None and \
        lines_sent + int(sr.get("not_sent_oversize", 0)) == facts["messages"]
    sr = sr or {}
    return {
        "expected_messages": facts["messages"], "lines_sent": lines_sent,
        "not_sent_oversize": int(sr.get("not_sent_oversize", 0)),
        # The capture's second copies: a line carries each message once (serial-replay reads it in order).
        "duplicates_not_sent": int(facts.get("duplicate_messages", 0)),
        "line_utilisation": sr.get("line_utilisation"), "late_lines": sr.get("late_lines"),
        "timestamps_backwards": sr.get("timestamps_backwards", 0),
        "corrupted_lines": int(sr.get("corrupted_lines", 0)),
        # What the gateway wrote back on the line while serial-replay ran (taken and dropped: LineReturn).
        "bytes_written_back": int(sr.get("bytes_written_back", 0)),
        "sender_stopped": bool(run.extras.get("sender_stopped")),  # before its end, with a run that failed
    }


def _serial(run: "Run", gw: dict[str, Any], facts: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    hop = _serial_path(run, facts, checks)
    ser = gw["serial"]
    bad_lines = ser["bad_checksum"] + ser["malformed"] + ser["overlong"]
    checks["good + bad lines = lines sent"] = ser["lines"] + bad_lines == hop["lines_sent"]
    return {**hop, "lines_good": ser["lines"], "lines_bad": bad_lines, "garbage_bytes": ser["garbage_bytes"]}


BROKER_NAMES = {"mqtt": "MQTT", "kafka": "Kafka"}
TRANSPORT_NAMES = {"tcp": "TCP", "shm": "shared memory", **BROKER_NAMES}


def subscriber_name(sub: dict[str, Any], *details: str) -> str:
    """'subscriber 2 (MQTT, QoS 1)', 'subscriber 3 (TCP, depth)': its number, how it was fed, what it read when not
    the BBO and any details, as every verdict names it."""
    what = ["depth"] if sub.get("depth") else []
    said = [TRANSPORT_NAMES[sub.get('kind', 'tcp')], *what, *filter(None, details)]
    return f"subscriber {sub['index']} ({', '.join(said)})"


def _subscribers(run: "Run", gw: dict[str, Any], bbo: logs.LogFile, checks: dict[str, bool]) -> list[dict[str, Any]]:
    """Each subscriber against the gateway's counters for its own connection(s):
    a fast one must hold the BBO log byte for byte; what was dropped to a
    slow or stuck one is counted against it alone."""
    expected = bytes(bbo.record_bytes())
    by_port = {r["peer_port"]: r for r in gw.get("publisher", {}).get("subscribers", [])}
    out = []
    for sub in run.extras.get("subscribers", []):
        if sub.get("depth"):
            out.append(_depth_subscriber(sub, gw, run.dir, checks))
            continue
        if sub.get("kind") == "shm":
            out.append(_shm_subscriber(sub, gw, run.dir / sub["file"], expected, checks))
            continue
        if sub.get("kind") in BROKER_NAMES:
            out.append(_brokered_subscriber(sub, gw, run.dir / sub["file"], expected, checks))
            continue
        path = run.dir / sub["file"]
        got = path.read_bytes() if path.exists() else b""
        conns = [by_port[p] for p in sub["local_ports"] if p in by_port]
        dropped = sum(c["frames_dropped"] for c in conns)
        closed = [c["closed_by"] for c in conns if c["closed_by"]]
        by_policy = "policy" in closed  # the gateway's own disconnect of a slow one; "peer": the subscriber left
        same = got == expected
        entry = {**sub, "frames": len(got) // logs.BBO_DTYPE.itemsize, "frames_dropped": dropped,
                 "closed_by": closed, "identical_to_bbo_log": same}
        _ended_well(sub, checks)
        if sub["mode"] != "reconnect":  # (a reconnecting one's file joins its connections' streams, cut anywhere)
            # Whatever else it was dropped or cut from, what it got must be the log's own frames in the log's
            # order; a partial last frame only where the gateway closed the connection, or the run stopped a
            # subscriber that does not end with the stream (slow, stuck) mid-frame.
            wrong = _first_frame_not_in_log(got, expected)
            whole = sub["mode"] == "fast" and not by_policy
            entry["first_frame_not_in_log"] = wrong
            checks[f"{subscriber_name(sub, sub['mode'], *(['closed by the gateway'] if by_policy else []))} received "
                   "only the BBO log's frames, in its order" + (", whole" if whole else "")] = \
                wrong is None and (len(got) % logs.BBO_DTYPE.itemsize == 0 or not whole)
        if sub["mode"] == "fast":
            name = subscriber_name(sub)
            checks[f"{name} is known to the gateway"] = len(conns) == len(sub["local_ports"]) == 1
            checks[f"{name} finished in time"] = not sub["timed_out"]
            # Identity is required exactly when the gateway says it sent everything to it.
            if dropped == 0 and not closed:
                checks[f"{name} received the BBO log exactly"] = same
        out.append(entry)
    return out


def _ended_well(sub: dict[str, Any], checks: dict[str, bool]) -> None:
    """A TCP subscriber's process (bbo-tcp-subscribers, status 0 when each fast reader saw its stream's end, or on
    the run's SIGTERM) ended with status 0: one that crashed is named with its signal, whatever it had received
    by then (a prefix of the log reads as a subscriber the gateway closed)."""
    rc = sub.get("exit")
    checks[f"{subscriber_name(sub)} ended without failure" + ("" if rc == 0 else f" ({describe_exit(rc)})")] \
        = rc == 0


def _depth_subscriber(sub: dict[str, Any], gw: dict[str, Any], run_dir: Path,
                      checks: dict[str, bool]) -> dict[str, Any]:
    """A subscriber of the gateway's depth stream (levels = N), over TCP or through a broker: held to the depth
    log as a BBO subscriber is to the BBO log, frame for record (a frame is a level change record: the log's
    slots read back)."""
    log_path = run_dir / "depth.dep"
    log = logs.read_depth(log_path) if log_path.is_file() else None
    try:
        records = log.changes if log is not None else np.zeros(0, logs.LEVEL_CHANGE_DTYPE)
    except logs.LogFormatError:  # refused, and said so by the depth check: nothing to hold the frames to
        records = np.zeros(0, logs.LEVEL_CHANGE_DTYPE)
    expected, dtype = records.tobytes(), records.dtype
    path = run_dir / sub["file"]
    if sub.get("kind") in BROKER_NAMES:
        return _brokered_subscriber(sub, gw, path, expected, checks, dtype)
    if sub.get("kind") == "shm":
        return _shm_subscriber(sub, gw, path, expected, checks, dtype)
    got = path.read_bytes() if path.exists() else b""
    publisher = gw.get("depth_publisher", {})
    conns = [c for c in publisher.get("subscribers", []) if c["peer_port"] in sub["local_ports"]]
    dropped = sum(c["frames_dropped"] for c in conns) + int(publisher.get("ring_dropped", 0))
    closed = [c["closed_by"] for c in conns if c["closed_by"]]
    name = subscriber_name(sub)
    wrong = _first_frame_not_in_log(got, expected, dtype)
    _ended_well(sub, checks)
    checks[f"{name} is known to the gateway"] = len(conns) == len(sub["local_ports"]) == 1
    checks[f"{name} finished in time"] = not sub["timed_out"]
    checks[f"{name} received only the depth log's frames, in its order, whole"] = \
        wrong is None and len(got) % dtype.itemsize == 0
    checks[f"{name}: depth records published = logged"] = int(publisher.get("published", -1)) == len(records)
    if dropped == 0 and not closed:
        checks[f"{name} received the depth log exactly"] = got == expected
    return {**sub, "frames": len(got) // dtype.itemsize, "frames_dropped": dropped, "closed_by": closed,
            "first_frame_not_in_log": wrong, "identical_to_depth_log": got == expected}


def _event_keys(*records: np.ndarray) -> list[np.ndarray]:
    """One number per event of each array, the same event the same number in all: BBO or depth, a stock has at
    most one event a message, so (seq, stock) names it; a level change adds its side and price, as a message
    changes several levels of its stock."""
    keys = [(r["seq"].astype(np.uint64) << np.uint64(16)) | r["stock_locate"].astype(np.uint64) for r in records]
    if records[0].dtype != logs.LEVEL_CHANGE_DTYPE:
        return keys
    codes, _ = pd.MultiIndex.from_arrays([np.concatenate(keys), np.concatenate([r["side"] for r in records]),
                                          np.concatenate([r["px"] for r in records])]).factorize()
    return np.split(codes.astype(np.uint64), np.cumsum([len(k) for k in keys])[:-1])


def _first_frame_not_in_log(got: bytes, log: bytes, dtype: np.dtype = logs.BBO_DTYPE) -> int | None:
    """The index of the first whole frame received that is not the log's (BBO, or depth: dtype), byte for byte,
    after the one received before it (a frame the log does not hold, a changed one, one out of order or
    again); None when every frame is the log's, in the log's order (a subsequence: some may have been
    dropped)."""
    frame = dtype.itemsize
    if log.startswith(got[:len(got) - len(got) % frame]):
        return None  # its whole frames are the log, or its start (a subscriber cut short): no frame to look up
    received = np.frombuffer(got, dtype=dtype, count=len(got) // frame)
    published = np.frombuffer(log, dtype=dtype)
    published_keys, received_keys = _event_keys(published, received)
    at = pd.Index(published_keys).get_indexer(received_keys)
    found = at >= 0
    same = np.zeros(len(received), dtype=bool)
    same[found] = published.view(f"V{frame}")[at[found]] == received.view(f"V{frame}")[found]
    onward = np.concatenate(([True], np.diff(at) > 0))
    bad = ~(found & same & onward)
    return int(np.argmax(bad)) if bad.any() else None


def _shm_subscriber(sub: dict[str, Any], gw: dict[str, Any], path: Path, expected: bytes,
                    checks: dict[str, bool], dtype: np.dtype = logs.BBO_DTYPE) -> dict[str, Any]:
    """A consumer of the shared-memory ring (or of the depth ring: dtype its records'): what it read and lost to
    overruns (its own count) against what the gateway published into the ring; a fast one that lost nothing
    must hold the BBO log (the depth log) byte for byte. Any that did not end with the stream (killed,
    crashed) is named with how it ended."""
    got = path.read_bytes() if path.exists() else b""
    depth = bool(sub.get("depth"))
    log_name = "depth log" if depth else "BBO log"
    published = int(gw.get("depth_shm" if depth else "shm", {}).get("published", -1))
    read, overruns = int(sub.get("read", 0)), int(sub.get("overruns", 0))
    name = subscriber_name(sub)
    rc = sub.get("exit")
    same = got == expected
    ended = rc == 0 and sub.get("ended") == "end of stream"
    if sub["mode"] == "stuck":  # stopped by the run at the end (SIGTERM): only a crash is wrong
        checks[f"{name} (stuck) did not crash" + ("" if rc == 0 else f" ({describe_exit(rc)})")] = rc == 0
    elif not ended:  # what it read is not its whole share: the one check is how it ended
        checks[f"{name} ended with the stream ({describe_exit(rc) if rc else sub.get('ended') or 'no end'})"] = False
    else:
        checks[f"{name} read + overruns = events published"] = read + overruns == published
        if sub["mode"] == "fast" and overruns == 0:
            checks[f"{name} received the {log_name} exactly"] = same
    return {**sub, "frames": len(got) // dtype.itemsize, "frames_dropped": overruns, "closed_by": [],
            "identical_to_depth_log" if depth else "identical_to_bbo_log": same}




def _brokered_subscriber(sub: dict[str, Any], gw: dict[str, Any], path: Path, expected: bytes,
                         checks: dict[str, bool], dtype: np.dtype = logs.BBO_DTYPE) -> dict[str, Any]:
    """A subscriber through a broker (MQTT, Kafka), event by event against the BBO log — or the depth log, for a
    subscriber of the depth topic (dtype its records') — (its seq and stock name each event): what it missed is
    its loss, what it received twice is said, anything not in the log is wrong. It must have ended with the
    stream (the gateway's end marker) and heard the gateway's count; one that missed nothing must hold the log
    byte for byte."""
    got = path.read_bytes() if path.exists() else b""
    depth = bool(sub.get("depth"))
    kind, log_name = sub["kind"], "depth log" if depth else "BBO log"
    publisher = gw.get(("depth_" if depth else "") + kind, {})
    name = subscriber_name(sub, sub.get("settings", ""))
    rc, ended = sub.get("exit"), str(sub.get("ended", ""))
    whole = len(got) // dtype.itemsize * dtype.itemsize
    want, received = _event_keys(np.frombuffer(expected, dtype=dtype), np.frombuffer(got[:whole], dtype=dtype))
    unique = np.unique(received)
    missing = int(np.setdiff1d(want, unique).size)
    duplicates, extra = int(received.size - unique.size), int(np.setdiff1d(unique, want).size)
    if rc != 0 or not ended.startswith("end of stream"):
        how = describe_exit(rc) if rc else ("stopped by the run: no end marker came" if ended in ("signal", "")
                                            else ended)
        checks[f"{name} ended with the stream ({how})"] = False
    else:
        checks[f"{name} heard the gateway's count (end marker = messages sent)"] = (
            int(sub.get("announced", -1)) == int(publisher.get("sent", -1)))
        checks[f"{name} received only whole frames of the {log_name}"] = \
            int(sub.get("bad_size", 0)) == 0 and extra == 0
        if missing == 0 and duplicates == 0:
            checks[f"{name} received the {log_name} exactly"] = got == expected
    return {**sub, "frames": int(received.size), "frames_dropped": missing, "duplicates": duplicates, "extra": extra,
            "closed_by": [], "identical_to_depth_log" if depth else "identical_to_bbo_log": got == expected}


def _broker_checks(brokers: dict[str, Any], checks: dict[str, bool]) -> None:
    """Each broker the run started ran until the run stopped it: one that died (killed, crashed) is named with how,
    before what its subscribers then missed."""
    for kind, info in brokers.items():
        if "died" in info:
            checks[f"the {BROKER_NAMES[kind]} broker ({info['broker']}) ran until the run stopped it "
                   f"({info['died']})"] = False


def _collector_read_the_topic(run: "Run", bbo_cfg: dict[str, Any], checks: dict[str, bool]) -> None:
    """A gateway's own BBO output through a broker: its collector, told to stop, reads what the broker holds for it
    first (Kafka: to the partition's end; MQTT: until its own end marker comes back). What it could not read in
    time, or could not find the end of, is output the check never saw."""
    via = bbo_cfg.get("via")
    if via not in BROKER_NAMES:
        return
    left = _collector_ended(run).get("left_unread")
    words = ("not known: it could not learn where the output ends" if left is None else
             f"it left {left:,} records unread" if left else "")
    checks[COLLECTOR_READ.format(BROKER_NAMES[via]) + (f": {words}" if words else "")] = left == 0


def _broker_gateway_checks(gw: dict[str, Any], checks: dict[str, bool]) -> None:
    """The gateway's side of each broker: every event handed over was sent, refused by the client (a broker
    down: its subscribers then miss it, and say so) or dropped at a full ring; the broker acknowledged every
    message sent (what the gateway's exit left unacknowledged is named, with its count)."""
    for kind, words in BROKER_NAMES.items():
        for section, named in ((kind, words), (f"depth_{kind}", f"{words}, depth")):
            b = gw.get(section)
            if b is None:
                continue
            checks[f"{named}: events handed to the publisher = sent + refused + dropped"] = (
                b["sent"] + b["errors"] + b["ring_dropped"] == b["published"])
            unacked = "" if b["acked"] == b["sent"] else f" ({b['sent'] - b['acked']:,} of {b['sent']:,} not)"
            checks[f"{named}: the broker acknowledged every message sent{unacked}"] = b["acked"] == b["sent"]


def _loss(transport: str, rec: dict[str, Any], subs: list[dict[str, Any]],
          capture_unapplied: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """What did not arrive, hop by hop, in messages (datagrams where so named). capture_unapplied: what of the
    capture's session reading it in order does not apply (_capture_unapplied)."""
    hop = rec.get(transport, {})
    # A path's expected messages are those the capture's sequencer applies; the messages its session numbered and
    # it does not hold were never sent, and those it holds late are discarded: lost all the same, the gateway's book
    # lacks them, as in simulation, where its gaps and late messages count.
    own_missing, own_late = capture_unapplied
    expected = (hop["expected_messages"] + (own_missing + own_late) * hop.get("loops", 1) if "expected_messages" in hop
                else rec["received"] + rec["missing"] + rec["reordered"])
    not_applied = max(0, expected - rec["received"])
    loss = {
        "expected_messages": expected,
        "messages_not_applied": not_applied,
        "sequence_gap_messages": rec["missing"],
        "capture_missing_messages": own_missing,
        "capture_late_messages": own_late,
        "late_messages_discarded": rec["reordered"],
        "undetected_messages": max(0, not_applied - rec["missing"] - rec["reordered"]),
        "duplicate_messages": rec["duplicates"],
        "rejected_messages": rec["rejected"],
        "rejected_message_reasons": {k: n for k, n in rec["rejected_reasons"].items() if n},
        "rejected_packets": rec["rejected_packets"],
        "rejected_packet_reasons": {k: n for k, n in rec["rejected_packet_reasons"].items() if n},
        "packets": rec["packets"],
        "applied_messages": rec["decoded"],
        "sender_failed_packets": hop.get("sender_failed", 0) + hop.get("not_sent_oversize", 0),
        "kernel_dropped_datagrams": hop.get("kernel_dropped", 0),
        "serial_bad_lines": hop.get("lines_bad", 0),
        # Each named as its checks name it (a broker's with its settings: "subscriber 0 (MQTT, QoS 1)").
        "subscriber_duplicates": {subscriber_name(s, s.get("settings", "")): s["duplicates"] for s in subs
                                  if s.get("duplicates")},
        # A slow or reconnecting subscriber of a broker loses only its own share: said, not the run's loss.
        "subscriber_own_loss": {subscriber_name(s, s.get("settings", ""), s["mode"]): s["frames_dropped"] for s in subs
                                if s.get("kind") in BROKER_NAMES and s["mode"] != "fast" and s["frames_dropped"]},
        "subscriber_frames_dropped": {subscriber_name(s, s.get("settings", "")): s["frames_dropped"]
                                      for s in subs if s["mode"] == "fast" and s["frames_dropped"]},
        # What a subscriber's frames carry, by every name it goes by above: a depth subscriber misses depth frames.
        "subscriber_frame_nouns": {subscriber_name(s, *details): "depth frame" if s.get("depth") else "BBO frame"
                                   for s in subs for details in ((s.get("settings", ""),),
                                                                 (s.get("settings", ""), s["mode"]))},
    }
    loss["lossless"] = not (not_applied or rec["rejected"] or rec["rejected_packets"]
                            or loss["sender_failed_packets"] or loss["kernel_dropped_datagrams"]
                            or loss["serial_bad_lines"] or loss["subscriber_frames_dropped"])
    return loss


def write_summary(run: "Run", failure: RunError | None) -> dict[str, Any]:
    """Write summary.json, with its verdict, whatever state the run is in."""
    summary: dict[str, Any] = {
        "run_id": run.run_id, "label": run.label, "transport": run.values["transport"],
        "capture": run.values["capture"], "complete": False, "balanced": False, "lossless": False,
        "failure": {"kind": failure.kind, "message": str(failure)} if failure else None,
        "error": str(failure) if failure else "", "transport_details": run.extras,
    }
    try:
        _reconcile(run, failure, summary)
    except Exception as e:  # noqa: BLE001 - a summary is always written; the defect is named
        summary["complete"] = summary["balanced"] = summary["lossless"] = False
        if not failure:
            summary["failure"] = {"kind": "defect", "message": f"reconciliation failed: {type(e).__name__}: {e}"}
            summary["error"] = summary["failure"]["message"]
    try:
        _resources(run, summary)
    except Exception as e:  # noqa: BLE001 - as above: said, never hidden
        summary["resources_error"] = f"{type(e).__name__}: {e}"
    try:
        bench = microbench.summarise(run.dir)
        if bench is not None:
            summary["microbench"] = bench
    except microbench.MicrobenchError as e:
        if not summary["failure"]:
            summary["failure"] = {"kind": "microbench_failed", "message": str(e)}
            summary["error"] = str(e)
            summary["complete"] = False
    summary["verdict"] = (verdict.judge if reads_run_files(run) else verdict.judge_black_box)(summary)
    rundir.write_json(run.dir / "summary.json", summary)
    return summary


def _resources(run: "Run", summary: dict[str, Any]) -> None:
    """What the gateway's process used (wall, CPU, peak RSS: wait4), per message of the capture's feed, for every
    gateway and input. A black box reading the capture itself is timed by it: its messages a second are the
    feed's messages over its wall time from start to exit, process start-up included."""
    used = run.extras.get("gateway_resources") or {}
    if not used:
        return
    messages = int(facts_of(Path(run.values["capture"]), run.values["feed"])["messages"])
    res = {**used, "messages": messages}
    if messages:
        res["cpu_ns_per_message"] = used["cpu_s"] * 1e9 / messages
    summary["resources"] = res
    if run.values["transport"] == "sim" and "performance" not in summary and summary.get("complete") and messages:
        summary["performance"] = {"elapsed_s": used["wall_s"], "messages_per_s": messages / used["wall_s"],
                                  "timed": "wall time of the gateway's process, start to exit (black box)"}


def _sender_checks(run: "Run", facts: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    """What the black box leaves to check of the way to it: the sender's and the kernel's counts."""
    transport = run.values["transport"]
    if transport == "udp":
        return _udp_path(run, facts, checks)
    if transport == "serial":
        return _serial_path(run, facts, checks)
    return {"expected_messages": facts["messages"]}


def _collector_datagrams(run: "Run") -> tuple[int, int | None]:
    """BBO datagrams the collector received over UDP, and those its socket dropped (None: not known); (0, None) for
    other ways of delivery."""
    if run.extras.get("gateway_contract", {}).get("bbo", {}).get("via") != "udp":
        return 0, None
    ended = _collector_ended(run)
    drops = ended.get("socket_drops")
    return int(ended.get("reads", 0)), None if drops is None else int(drops)


def _stamped_after_sent(run: "Run", lat_path: Path) -> dict[str, bool]:
    """The gateway's stamps, moved onto CLOCK_MONOTONIC as the report's hops take them, held to the sender's: none
    before its message was sent (a stamp of the wrong clock or units is named); {} without a sender's stamps."""
    send_log = run.dir / "send.log"
    if not send_log.is_file():
        return {}
    sent_seq, _, sent = hops.send_stamps(send_log)
    clock = hops.gateway_clock(run.dir)
    none = np.zeros(0, np.int64)
    return white_box.on_the_clock(logs.read_latency(lat_path, quiet=True),
                                  white_box.RunStamps(sent_seq.astype(np.int64), sent.astype(np.int64), none, none),
                                  moved=lambda t: hops.to_monotonic(t, clock), slack_ns=white_box.MOVED_SLACK_NS,
                                  name=white_box.BUILT_IN_ON_THE_CLOCK)


def _corrupted_lines(run: "Run") -> np.ndarray:
    """The seqs of the lines serial-replay damaged (serial.corrupt_every), by its send log; none otherwise."""
    send_log = run.dir / "send.log"
    if run.values["transport"] != "serial" or not run.values["serial"]["corrupt_every"] or not send_log.is_file():
        return np.zeros(0, np.int64)
    return faults.corrupted_lines(send_log)


class _LineKinds:
    """Message types for a difference's words on a noisy serial line: the capture's own (its simulation's, run only
    when a difference is named), a corrupted line's said as such (the reference has its type byte damaged)."""

    def __init__(self, capture: Path, feed: str, corrupted: np.ndarray) -> None:
        self.capture, self.feed, self.corrupted = capture, feed, corrupted

    def get(self, seq: int, default: str = "?") -> str:
        kind = blackbox.reference_run(self.capture, self.feed).get(seq, default)
        at = int(np.searchsorted(self.corrupted, seq))
        return f"{kind}, on a corrupted line" if at < self.corrupted.size and self.corrupted[at] == seq else kind


def _run_stamps(run: "Run", events: pd.DataFrame) -> white_box.RunStamps:
    """itchbench's own stamps on either side of a brought gateway: its sender's (none from tcpreplay, or when the
    gateway reads the capture itself) and its collector's of each BBO event (none when the gateway wrote a file)."""
    send_log = run.dir / "send.log"
    sent_seq, _, sent = hops.send_stamps(send_log) if send_log.is_file() else (np.zeros(0, np.int64),) * 3
    received = events[events["t_recv"] > 0] if "t_recv" in events else events.iloc[:0]
    return white_box.RunStamps(sent_seq.astype(np.int64), sent.astype(np.int64),
                               received["seq"].to_numpy(np.int64), received["t_recv"].to_numpy(np.int64))


def _no_socket(hop: dict[str, Any], lines: dict[str, Any] | None, recovering: bool,
               after_last: Callable[[], int]) -> int:
    """The feed's datagrams sent up to the session's last message that the kernel had no socket for (no port
    bound, no member of the group), at least, on a run of one line with no way back: each one the gateway never
    received, though it said it was ready (its output may still equal the simulation: a stock directory missed by
    a gateway naming stocks by locate). What was sent after the last message (after_last(), read only when some
    datagram found no socket: ends of session, heartbeats) a gateway that ends at the first end of session leaves
    to no socket: taken off, so the count is a floor. With a B line or a re-request server a datagram a line lost
    may come back, and its verdict is the recovery's."""
    if recovering or (lines and "b" in lines):
        return 0
    no_socket = int(hop.get("kernel_no_socket", 0))
    return max(0, no_socket - after_last()) if no_socket else 0


def _after_last_message(send_log: Path, facts: dict[str, Any], hop: dict[str, Any]) -> int:
    """The packets sent after the last one that carried a message: from the send log (which counts a heartbeat's
    and an end of session's messages as 0); without one (tcpreplay), at most every packet of the capture that
    carries none, each loop's."""
    if not send_log.is_file():
        return (int(facts["heartbeats"]) + int(facts["ends_of_session"])) * int(hop.get("loops", 1))
    rec = hops.packets_sent(send_log)
    last = hops.last_message_packet(rec)
    return len(rec) - (last + 1 if last is not None else 0)


def _collector_ended(run: "Run") -> dict[str, Any]:
    """How the collector of a brought gateway's output said it ended (its FILE.json); {} when it did not say."""
    info = run.dir / (adapter.BBO_FILE + ".json")
    return rundir.read_json(info) if info.is_file() else {}


CAPTURE_OPENED = "the gateway opened the capture it was given"


def _reconcile_contract(run: "Run", failure: RunError | None, summary: dict[str, Any]) -> None:
    """A gateway brought through its contract, checked black box: its BBO stream against the simulation's,
    wire-to-wire latency from the sender's stamps; its insides are not seen (white box: its own logs)."""
    capture, feed = Path(run.values["capture"]), run.values["feed"]
    c = run.extras.get("gateway_contract", {})
    if failure is not None and "gateway_exit" not in run.extras:
        # It never started (its build failed, its contract or the run's set-up did): there is no output to check,
        # and counting the reference's events as missing would say it ran.
        summary["gateway"] = {"contract": c, "started": False}
        return
    bbo_cfg = c.get("bbo", {"format": "csv", "via": "tcp", "check": "exact"})
    checks: dict[str, bool] = {}
    hop = _sender_checks(run, facts_of(capture, feed), checks)
    _broker_checks(run.extras.get("brokers", {}), checks)  # the one its BBO output goes through (bbo.via)
    _collector_read_the_topic(run, bbo_cfg, checks)
    opened = run.extras.get("capture_opens")
    if opened and not opened["error"]:
        # Reading the capture itself, an output equal to the simulation's is no proof it read it: one made from a
        # recording is equal too (runs/opens.py). An opener gone before it could be placed may have been its own.
        checks[CAPTURE_OPENED] = opened["by_gateway"] > 0 or opened["unplaced"] > 0
    output = run.extras.get("bbo_output", adapter.BBO_FILE)
    out = run.dir / output
    other = blackbox.not_a_file(out)  # read as no output at all, and the run said incomplete (below)
    server, lines, recovering = _recovery_setting(run)
    joined = run.extras.get("join")
    recovering = recovering or bool(joined)
    session = Path(run.values.get("source_capture") or capture) if recovering else capture
    whole = session  # the session as recorded, before the corrupted lines' messages are taken out of it
    corrupted = _corrupted_lines(run)
    kinds = None
    if corrupted.size:  # what a gateway checking each line's checksum can apply: the rest of the capture
        session = faults.without_corrupted_lines(capture, corrupted, run.dir)
        kinds = _LineKinds(capture, feed, corrupted)
    # Records that carry the stale flag are held to the simulation's flag too (exact; not against a whole session
    # that recovery is held to, where what was given up shows as a loss, not as a flag).
    stale = blackbox.judges_stale(bbo_cfg) and bbo_cfg["check"] == "exact" and not recovering
    levels = bbo_cfg.get("levels", 0)
    reference = blackbox.reference_run(session, feed, levels)
    # Held to the simulation (of the whole session, when recovering or joining late) a part at a time.
    judged = _judged_in_parts(run, out, bbo_cfg, reference, stale, kinds)
    if judged is not None:  # judged a part at a time: windows of whole seqs of both streams, or buckets of stocks
        events = pd.DataFrame(judged.stamps, columns=["seq", "t_recv"])
        bbo_check = {"mode": bbo_cfg["check"], "reference_events": judged.reference_events, "events": judged.events,
                     **judged.counts, "equal": judged.equal, "read_in_parts": True, "cut_by": judged.cut_by}
        if judged.first is not None:
            bbo_check["first_difference"] = judged.first
        if judged.flood is not None:
            bbo_check["flood"] = judged.flood
        malformed, examples = judged.malformed, judged.examples
        event_count, reference_events = judged.events, judged.reference_events
        last, reached = judged.reference_last_seq, judged.last_seq
    else:
        ref, session_kinds = blackbox.reference(session, feed, levels, stale=stale)
        events, malformed, examples = blackbox.read_output(run.dir, output, bbo_cfg, reference.symbols)
        bbo_check = blackbox.check(events, ref, kinds or session_kinds, bbo_cfg["check"],
                                   also=(blackbox.STALE,) if stale else ())
        event_count, reference_events = len(events), len(ref)
        last = int(ref["seq"].max()) if len(ref) else 0
        reached = int(events["seq"].max()) if len(events) else 0
    bbo_check.update({"malformed_lines": malformed, "malformed_examples": examples, "output": str(out.name)})
    if examples:
        bbo_check["malformed_why"] = blackbox.why_malformed(examples[0], bbo_cfg["format"], blackbox.columns(levels),
                                                           reference.symbols)
    if run.values["transport"] == "sim":
        # Reading the capture itself, a black box shows how far it read only through its BBO stream: the messages
        # after the simulation's last event leave no trace there, whether it read them or not.
        bbo_check["unseen_tail"] = {"after_seq": last, "messages": reference.messages_after(last)}
    own = _capture_own(capture, feed, whole, recovering, bool(joined))
    own_missing, own_late = _capture_unapplied(own)
    # What the capture holds malformed, a gateway seen from outside is held to rejecting as the simulation does (its
    # BBO equal to one that skipped them): REJECTED, as the built-in gateway's run of the capture is.
    own_rejected = {why: int(own.get("rejected_messages", {}).get(key, 0)) for key, why in _MESSAGE_REJECTIONS}
    own_rejected_packets = {why: int(own.get("rejected_packets", {}).get(key, 0)) for key, why in _PACKET_REJECTIONS}
    loss = {"expected_messages": hop["expected_messages"] + (own_missing + own_late) * hop.get("loops", 1),
            "capture_missing_messages": own_missing, "capture_late_messages": own_late,
            "capture_rejected_messages": sum(own_rejected.values()),
            "capture_rejected_message_reasons": {why: n for why, n in own_rejected.items() if n},
            "capture_rejected_packets": sum(own_rejected_packets.values()),
            "capture_rejected_packet_reasons": {why: n for why, n in own_rejected_packets.items() if n},
            "capture_packets": int(own.get("packets", 0)),
            # Sent as the capture holds them: a black box's duplicates are seen only as the capture's.
            "capture_duplicates_sent": int(facts_of(capture, feed).get("duplicate_messages", 0))
            if run.values["transport"] == "udp" else 0,
            "sender_failed_packets": hop.get("sender_failed", 0) + hop.get("not_sent_oversize", 0),
            "kernel_dropped_datagrams": hop.get("kernel_dropped", 0),
            "kernel_no_socket_datagrams": _no_socket(hop, lines, recovering, lambda: _after_last_message(
                run.dir / "send.log", facts_of(capture, feed), hop))}
    loss["lossless"] = not (own_missing or own_late or loss["sender_failed_packets"] or loss["kernel_dropped_datagrams"]
                            or loss["kernel_no_socket_datagrams"])
    own_log = None
    injected = faults.sidecar_of(capture)
    if c.get("white_box") == "stamps":  # its own stages are reported only from a log that holds together
        once = white_box.each_message_once(hop, loss["lossless"], recovering, injected is not None)
        own_log = white_box.checks(run.dir / rundir.GATEWAY_OUT, reference.latency_log, every_message=once,
                                   run=_run_stamps(run, events))
        checks.update(own_log)
    after = joined["through"] if joined else 0
    latency = blackbox.wire_to_wire(events, run.dir / "send.log", after=after)
    # Held to the send of what makes them: the events stamped with their arrival and, with no figure, those whose
    # arrival the collector left out (a set of CLOCK_REALTIME), by when they were read. An output read in one burst
    # across a set has only those (a gateway publishing from a recording before the feed came: LOSSLESS, unheld).
    before = (latency["before_sent"] if latency else
              blackbox.before_the_send(events, hops.send_stamps(run.dir / "send.log"), after)
              if (run.dir / "send.log").is_file() and not events.empty else None)
    if before is not None:
        checks.update(blackbox.after_the_send(before))
    rec = {run.values["transport"]: hop, "checks": checks, "balanced": all(checks.values()), "loss": loss,
           "bbo_check": bbo_check, "black_box": True, "output_unrecorded": output_unrecorded(checks)}
    if corrupted.size:
        rec["faults"] = {"source": "serial-replay", "corrupted_lines": int(corrupted.size),
                         "first_seq": int(corrupted[0]), "held_to": session.name}
    elif injected is not None and not recovering:  # held to the simulation of the capture as its faults left it
        rec["faults"] = {"source": "sidecar", "summary": faults.summary_of(injected)}
    if own_log is not None:
        rec["white_box_log"] = {"holds_together": all(own_log.values()),
                                "failed": [name for name, ok in own_log.items() if not ok]}
    if recovering:
        rec["recovery"] = recovery.of(injected, lines, run.dir / rerequest.LOG, server, events,
                                      run.dir / "send.log", after=joined["through"] if joined else 0)
    if joined:
        rec["join"] = _join_black_box(run, joined, out, bbo_cfg, session, reference,
                                      (lambda: events) if judged is None else
                                      (lambda: blackbox.read_output(run.dir, output, bbo_cfg, reference.symbols)[0]))
    if latency and bbo_cfg.get("via") in ("tcp", "udp"):  # stamped by itchbench's collector: how exactly
        ended = _collector_ended(run)
        latency["collector"] = {key: ended.get(key) for key in ("reads", "events_earlier_than_stamp",
                                                                 "max_earlier_ns", "median_earlier_ns",
                                                                 "events_stamp_unknown", "events_across_clock_set",
                                                                 "clock_sets", "largest_clock_set_ns")}
    summary.update({
        "complete": failure is None and out.is_file(),
        "balanced": rec["balanced"],
        "lossless": (loss["lossless"] and bbo_check["equal"] and malformed == 0
                     and not (loss["capture_rejected_messages"] or loss["capture_rejected_packets"])),
        "bbo": {"events": event_count, "reference_events": reference_events, "levels": levels,
                # What its output held when judged: a file changed since is not judged again (logs.changed_since_run).
                **({"output": out.name, "output_sha256": logs.file_digest(out)} if out.is_file() else {})},
        "reconciliation": rec,
        "feed": _feed_facts(capture, feed),
        "wire_to_wire": latency,
        **({"capture_opens": opened} if opened else {}),
        "latency": {"method": "higher", "stages": {stage: latency[key] for stage, (key, _) in blackbox.STAGES.items()
                                                   if latency and latency.get(key)},
                    "stage_descriptions": {stage: words for stage, (_, words) in blackbox.STAGES.items()}},
        "gateway": {"contract": c, "stop": run.extras.get("gateway_stop", "")},
        "noise": noise.summarise(run.cpu_noise, None),
        "not_seen": "inside the gateway (receive, decode, book, publish stages): it writes no itchbench latency "
                    "log" if not c.get("white_box") else "",
        "not_seen_tail": verdict.unseen_tail_words(bbo_check.get("unseen_tail")),
    })
    if other and not failure:
        summary["failure"] = {"kind": "gateway_failed", "message": f"the gateway's BBO output {out} is {other}, not a "
                                                                   "file: not read"}
        summary["error"] = summary["failure"]["message"]
    elif not summary["complete"] and not failure:
        summary["error"] = f"the gateway's BBO output {out.name} is missing"
    # What itchbench has of it: a file the gateway wrote, or what the collector received (a collector killed, or a
    # connection that never came, says nothing of what the gateway wrote).
    none_came = "it wrote no BBO event" if bbo_cfg.get("via") == "file" else "no BBO event of it was received"
    if reference.ended_early and (failure is None or failure.kind.startswith("gateway_")):
        # The capture itself ends early: whatever the gateway then did, the run is held to a part of it, as the
        # built-in gateway's simulation of it is.
        output = f"its BBO output reaching seq {reached:,}" if reached else none_came
        summary["complete"] = False
        summary["failure"] = {"kind": "input_ended_early", "message": (
            f"the capture ends early, as its simulation found: {reference.ended_early} (the simulation read "
            f"{reference.messages_after(0):,} messages before it); "
            f"{failure if failure else 'the gateway ended by itself'}, {output}")}
        summary["error"] = summary["failure"]["message"]
    elif failure is not None and failure.kind in ("gateway_crashed", "gateway_failed", "gateway_stopped_early",
                                                  "testbench_failed", "deadline"):
        # Of the whole session where the gateway is held to it (recovering, joining late): a capture that lost
        # messages has fewer than its last seq.
        whole, messages = ("session", int(facts_of(session, feed)["messages"])) if session != capture else \
            ("capture", hop["expected_messages"])
        # Counted, not taken as messages - reached: a session's numbers need not start at 1 (wide-fields' start
        # past 2^32).
        after = reference.messages_after(reached) if reached else messages
        summary["progress"] = {"last_bbo_seq": reached, "messages": messages, "messages_after": after}
        refused = snapshot.refusals(run.extras.get("snapshot_server") or {})  # what the exchange's side saw of it
        summary["failure"]["message"] = (
            f"{failure}; its BBO output reached seq {reached:,}, {after:,} of the {whole}'s {messages:,} messages "
            "after it" if reached else f"{failure}; {none_came}") + (f"; {refused}" if refused else "")
        summary["error"] = summary["failure"]["message"]


def _judged_in_parts(run: "Run", out: Path, bbo_cfg: dict[str, Any], reference: blackbox.ReferenceRun,
                     stale: bool, kinds: blackbox.Kinds | None = None) -> in_parts.Judged | None:
    """The output held to the reference a part at a time (gateways/in_parts.py), or None: the whole check judges
    it. A day's output is gigabytes: its reading said as it goes."""
    meter = progress.Progress("the gateway's output, held to the simulation", out.stat().st_size if out.is_file()
                              else None, say=run.say, log=run.dir / "progress.log", unit="bytes")
    judged = in_parts.judged(out, bbo_cfg, reference, stale, keep_stamps=(run.dir / "send.log").is_file(),
                             meter=meter, kinds=kinds)
    if judged is None:
        meter.finish(how="not to be cut into parts (a log that does not read back, no room for buckets): read whole")
    else:
        meter.finish(how=("the simulation's events" if judged.equal else "differs")
                     + (f", {judged.malformed:,} malformed lines" if judged.malformed else "")
                     + (f", not read past seq {judged.flood['seq']:,} (a flood)" if judged.flood else ""))
    return judged


def _recovery_setting(run: "Run") -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
    """The re-request server's report, what each line lost, and whether the run can recover: with a second line or
    the exchange's re-request server in the run, or lines losing packets on their own, the gateway is held to the
    simulation of the whole session, the capture before its faults: what the wire lost it may get back, and what
    it could not is a loss."""
    server = run.extras.get("request_server")
    line_faults = run.dir / udp.LINE_FAULTS
    lines = rundir.read_json(line_faults) if line_faults.is_file() else None
    return server, lines, server is not None or bool(lines and ("b" in lines or lines.get("a")))


def _recovery_checks(gw: dict[str, Any], server: dict[str, Any] | None, checks: dict[str, bool]) -> None:
    """The built-in gateway's recovery stage against its own framer and the server (gateway.json "recovery")."""
    r = gw.get("recovery")
    if r is None:
        return
    checks["recovery: messages first by line + by answer = messages handed on"] = \
        sum(r["messages_first"].values()) == gw["mold"]["messages"]
    checks["recovery: messages given up = the framer's gap messages"] = \
        r["messages_given_up"] == gw["sequence"]["gap_messages"]
    checks["recovery: packets by line = datagrams by socket"] = r["packets"] == gw["udp"]["per_line"]
    if server is not None:
        checks["recovery: requests sent = requests the server read"] = \
            r["requests"] == int(server.get("requests", 0)) + int(server.get("requests_unread_at_stop", 0)) \
            + int(server.get("socket_dropped", 0))
        checks["recovery: answer packets read <= answer packets sent"] = \
            r["packets"]["answers"] <= int(server.get("answer_packets", 0))


def _join(run: "Run", gw: dict[str, Any], joined: dict[str, Any], session: Path,
          checks: dict[str, bool], depth_readable: bool = True) -> dict[str, Any]:
    """A late join: the BBO against the whole session from the join point on (runs/join.py: its verdict, not a
    balance check; the depth too, when its log holds together), and what the join took: the snapshot, the feed held
    meanwhile, what it covered, what was asked for between."""
    bbo_check = join.check(run.dir / "bbo.bbo", session, run.values["feed"], joined["through"])
    # With depth (levels = N), its depth is held the same way: a wrong level below the top shows nowhere else.
    depth = run.dir / "depth.dep"
    depth_check = join.check_depth(depth, session, run.values["feed"], joined["through"]) \
        if run.values["levels"] and depth.is_file() and depth_readable else None
    g, r = gw.get("join") or {}, gw.get("recovery") or {}
    server = run.extras.get("snapshot_server") or {}
    checks["the gateway joined where the snapshot said (its End of Snapshot's number)"] = \
        g.get("ok", False) and g.get("next_sequence") == joined["next"]
    checks["snapshot messages applied = the snapshot's (End of Snapshot aside)"] = \
        g.get("snapshot_messages_applied") == (server.get("snapshot") or {}).get("messages", 0) - 1
    return {**joined, "bbo_check": bbo_check, **({"depth_check": depth_check} if depth_check else {}),
            "snapshot": server.get("snapshot"), **_snapshot_taken(server),
            "connections": g.get("connections"), "transfer_ms": g.get("transfer_ms"),
            "joined_after_ms": g.get("joined_after_ms"), "snapshot_events": g.get("snapshot_events"),
            "held": r.get("join_held_packets", 0), "held_most": r.get("held_most", 0),
            "covered_messages": r.get("join_covered_messages", 0),
            "dropped_while_joining": r.get("join_dropped_packets", 0),
            "re_requested_between": max(0, _first_sent(run.dir / "send.log", joined["from_seq"]) - joined["next"]),
            "server_cut": int(server.get("cut", 0))}


def _join_black_box(run: "Run", joined: dict[str, Any], out: Path, bbo_cfg: dict[str, Any], session: Path,
                    reference: blackbox.ReferenceRun, events: Callable[[], pd.DataFrame]) -> dict[str, Any]:
    """A brought gateway's late join: its events from the join point on (runs/join.py), read a part at a time,
    or whole (`events`) where they cannot be; of its insides only what the servers and the sender saw."""
    snap = run.extras.get("snapshot_server") or {}
    clients = snap.get("clients", [])
    done = [c for c in clients if c.get("login_to_last_message_ms", -1) >= 0]  # the one that got the whole rest
    # A gateway publishing depth (its contract's bbo.levels = N) is held on its depth events: after the join, and
    # each stock's top N levels a side at it.
    levels = bbo_cfg.get("levels", 0)
    check = join.check_output(out, bbo_cfg, reference, joined["through"]) if bbo_cfg["check"] == "exact" else None
    if check is None:
        got = events()
        check = join.check_events(got[blackbox.columns(levels)], got["seq"].to_numpy() <= joined["through"],
                                  session, run.values["feed"], joined["through"], levels=levels)
    return {**joined, "bbo_check": check, "levels": levels, "snapshot": snap.get("snapshot"), **_snapshot_taken(snap),
            "connections": len(clients),
            "transfer_ms": done[-1]["login_to_last_message_ms"] if done else None,
            "re_requested_between": max(0, _first_sent(run.dir / "send.log", joined["from_seq"]) - joined["next"]),
            "server_cut": int(snap.get("cut", 0)), "black_box": True}


def _snapshot_taken(server: dict[str, Any]) -> dict[str, Any]:
    """What the snapshot server itself recorded of the gateway: its logins, and whether a connection received the
    snapshot to its last message. A join is judged only when it was: a gateway that never asked for the book
    has not joined, whatever its BBO shows."""
    clients = server.get("clients", [])
    return {"logins": int(server.get("logins", 0)), "refused": snapshot.refusals(server),
            "snapshot_taken": any(c.get("login_to_last_message_ms", -1) >= 0 for c in clients)}


def _first_sent(send_log: Path, fallback: int) -> int:
    """The first sequence number the sender sent (its log): where the live feed began."""
    if not send_log.is_file():
        return fallback
    seq = hops.send_stamps(send_log)[0]
    return int(seq.min()) if seq.size else fallback


def _left_in_logs(run_dir: Path) -> dict[str, Any]:
    """What a gateway that wrote no counters (killed) left in its logs, each read to its last whole record:
    messages (the latency log) and BBO events, and whether each log was closed. Nothing is reconciled from it."""
    left: dict[str, Any] = {}
    for name, key, kind in (("latency.lat", "messages", logs.KIND_LATENCY), ("bbo.bbo", "bbo_events", logs.KIND_BBO)):
        try:
            log = logs.read_log(run_dir / name, kind, quiet=True)  # left open: the run names how the gateway ended
        except (OSError, logs.LogFormatError):
            continue
        left[key] = int(log.count)
        left[f"{key}_log_closed"] = log.complete
    return left


def reads_run_files(run: "Run") -> bool:
    """Whether the gateway wrote itchbench's run files (white_box = "run-files": the built-in one does), so
    the run is reconciled message by message from its counters; otherwise it is checked black box."""
    c = run.extras.get("gateway_contract")
    return c["white_box"] == "run-files" if c else not run.values.get("gateway_file")


def _reconcile(run: "Run", failure: RunError | None, summary: dict[str, Any]) -> None:
    if not reads_run_files(run):
        return _reconcile_contract(run, failure, summary)
    gw_path = run.dir / "gateway.json"
    if not gw_path.exists():
        if not failure:
            summary["failure"] = {"kind": "gateway_failed", "message": "the gateway wrote no counters (gateway.json)"}
            summary["error"] = summary["failure"]["message"]
        summary["left_in_logs"] = _left_in_logs(run.dir)
        return
    gw = rundir.read_json(gw_path)
    capture = Path(run.values["capture"])
    bbo = logs.read_bbo(run.dir / "bbo.bbo")
    # The BBO log's digest, taken as the gateway wrote the log (analysis/bbo_follow.py) when that covers the
    # log exactly; else on a thread beside the latency log's count: each reads a file of its own in large
    # chunks, and neither holds the GIL for long (50 M messages: 0.2 s each, one after the other).
    followed = run.bbo_follower.result() if run.bbo_follower is not None else None
    taken = followed if followed is not None and followed.records == len(bbo.records) else None
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        digesting = pool.submit(logs.digest_and_stale, bbo) if taken is None else None
        lat_path = run.dir / "latency.lat"
        latency_records = _latency_messages(run, lat_path) if lat_path.exists() else None
        digest, stale_seen = digesting.result() if digesting is not None else (taken.digest, taken.stale)
    checks: dict[str, bool] = {}
    rec = _gateway(gw, latency_records, len(bbo.records), checks)
    transport = run.values["transport"]
    server, lines, recovering = _recovery_setting(run) if transport == "udp" else (None, None, False)
    joined = run.extras.get("join")  # a late join: the gateway is held to the session after the join point
    recovering = recovering or bool(joined)
    # Recovering, the gateway is held to the whole session (the capture before its faults).
    session = Path(run.values.get("source_capture") or capture) if recovering else capture
    if transport == "udp":
        facts = facts_of(session, run.values["feed"])
        if joined:
            facts = {**facts, "messages": facts["messages"] - joined["through"]}
        rec["udp"] = _udp(run, gw, facts, checks, server)
        _recovery_checks(gw, server, checks)
    elif transport == "serial":
        rec["serial"] = _serial(run, gw, facts_of(capture, run.values["feed"]), checks)
    elif transport == "sim" and gw["complete"] and not gw.get("stopped_by_signal"):
        # In simulation the gateway reads the capture itself; its sequence numbers cannot show messages it never
        # handed on at the end of a binary ITCH file (a message's number is its place), so a count of the capture
        # by another process (itch-inspect) is what "every message" is held to.
        rec["capture_messages"] = int(facts_of(capture, run.values["feed"])["messages"])
        checks["received = the capture's messages (itch-inspect)"] = rec["received"] == rec["capture_messages"]
    _broker_checks(run.extras.get("brokers", {}), checks)
    subs = _subscribers(run, gw, bbo, checks) if transport != "sim" else []
    _broker_gateway_checks(gw, checks)
    if transport != "sim":
        rec["subscribers"] = subs
    rec["loss"] = _loss(transport, rec, subs, _capture_unapplied(
        _capture_own(capture, run.values["feed"], session, recovering, bool(joined))))
    if lat_path.exists():
        checks.update(_stamped_after_sent(run, lat_path))
    injected = faults.sidecar_of(capture)
    if recovering:
        # The capture's faults and the lines' are the wire's losses: each is followed to its route back.
        rec["recovery"] = recovery.of(injected, lines, run.dir / rerequest.LOG, server,
                                      recovery.published_events(lat_path), run.dir / "send.log",
                                      after=joined["through"] if joined else 0)
        rec["recovery"]["time_to_recover_ns"] = recovery.time_to_recover(recovery.gap_ends(injected, lines), lat_path)
        rec["recovery"]["gateway"] = gw.get("recovery")
    elif injected is not None:
        rec["faults"] = faults.reconcile(injected, rec, checks, transport)
        rec["stale"] = _stale_flags(bbo, faults.stale_from(injected), "sidecar", checks, stale_seen)
    elif transport == "serial" and run.values["serial"]["corrupt_every"]:
        rec["faults"] = faults.reconcile_serial(rec, checks)
    elif rec["loss"]["lossless"]:
        rec["stale"] = _stale_flags(bbo, None, "nothing lost or rejected", checks, stale_seen)
    depth = _depth(run, gw, checks) if run.values["levels"] else None
    if joined:
        rec["join"] = _join(run, gw, joined, session, checks, depth_readable=not (depth or {}).get("refused"))
    elif transport != "sim" and rec["loss"]["lossless"] and not failure:
        checks["BBO digest = simulation's digest" + (" (the whole session)" if recovering else "")] = \
            digest == sim_bbo(session, run.values["feed"])[0]
        if depth:
            checks["depth digest = simulation's digest" + (" (the whole session)" if recovering else "")] = \
                depth["digest"] == sim_depth(session, depth["levels"], run.values["feed"])[0]
    rec["checks"] = checks
    rec["balanced"] = all(checks.values())
    rec["output_unrecorded"] = output_unrecorded(checks)
    complete = bool(gw["complete"]) and bbo.complete and not failure
    gw_error = gw.get("error", "") or "; ".join(bbo.notes)
    summary.update({
        "complete": complete,
        "balanced": rec["balanced"],
        "lossless": rec["loss"]["lossless"],
        "error": summary["error"] or gw_error,
        "bbo": {"digest": digest, "events": len(bbo.records)},
        **({"depth": depth} if depth else {}),
        "messages": {"per_type": gw["decode"]["per_type"]},
        "feed": _feed_facts(capture, run.values["feed"]),
        "book": gw["book"],
        "reconciliation": rec,
        "gateway": {k: gw[k] for k in ("stop_reason", "udp", "af_xdp", "serial", "publisher", "shm", "mqtt",
                                       "kafka", "realtime", "capture_stats", "rt_throttling") if k in gw},
        "noise": noise.summarise(run.cpu_noise, gw.get("noise"), gw.get("rt_throttling")),
        "performance": {"elapsed_s": gw["elapsed_s"], "messages_per_s": gw["messages_per_s"],
                        "timer_overhead_ns": gw["clock"]["timer_overhead_ns"], "stage_clock": gw["clock"]["stage"]},
    })
