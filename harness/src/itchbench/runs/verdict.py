"""The verdict of one run: a status, one headline line and an exit status.

    lossless      complete, balanced, nothing lost or rejected          exit 0
    faults_accounted  complete, balanced, and every loss is a declared
                  fault that the gateway's counters equal exactly       exit 0
    rejected      complete and balanced, nothing lost, but malformed
                  messages or packets were rejected (counted, by reason) exit 1
    lost          complete and balanced, but messages were sent and
                  never applied (gaps, drops, late)                     exit 1
    unbalanced    the accounting does not add up                        exit 1
    incomplete    the run did not reach its end (crash, sender failed,
                  deadline, interrupted, …)                             exit 1

Each class a user cares about is said apart, never mixed in one sentence:
lost (sent, not applied), rejected (malformed, with reasons), skipped (not
the selected feed) and duplicated (seen twice, applied once); a class that
is zero is not printed. docs/verdicts.md is the reference; a run is never
called lossless or balanced when anything was lost, skipped over or could
not be checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import rundir
from ..depth_levels import ALL_LEVELS, Levels
from ..gateways.collector import stamp_counts

# Not a verdict: what a command counts a run that passed as when its report was not written (as_said).
REPORT_NOT_WRITTEN = "report_not_written"
EXIT = {"lossless": 0, "faults_accounted": 0, "recovered": 0, "joined": 0, "rejected": 1, "lost": 1, "bbo_differs": 1,
        "not_joined": 1, "unbalanced": 1, "incomplete": 1, REPORT_NOT_WRITTEN: 1}

# For --help: the headlines a run ends with and their exit statuses.
EXIT_HELP = ("Each run ends with its verdict: LOSSLESS, FAULTS ACCOUNTED, RECOVERED (lost on the wire, every "
             "message back: from the other line or the re-request server) or JOINED (a late join, judged from the "
             "join point) (exit 0); BBO DIFFERS, NOT JOINED (a join run whose gateway took no snapshot), REJECTED (malformed messages or "
             "packets, counted by reason, none lost), LOST (sent and not applied: gaps, drops, late), NOT BALANCED "
             "or INCOMPLETE (exit 1); a run whose report could not be written says REPORT NOT WRITTEN under its "
             "verdict (exit 1). Exit 2: unusable input; 130/143: interrupted.")


def as_said(run_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """What a command says of a finished run: its verdict, and (a second line of its headline) its report when that
    was not written. A run that passed without its report fails as REPORT_NOT_WRITTEN: its summary holds none of
    the report's figures, and nothing downstream takes it as whole."""
    verdict = summary["verdict"]
    why = summary.get(rundir.REPORT_NOT_WRITTEN)
    if not why:
        return verdict
    status = REPORT_NOT_WRITTEN if EXIT[verdict["status"]] == 0 else verdict["status"]
    return {**verdict, "status": status, "exit_status": max(int(verdict["exit_status"]), EXIT[status]),
            "headline": f"{verdict['headline']}\nREPORT NOT WRITTEN ({why}): its latency figures are missing; "
                        f"`itchbench report {run_dir}` writes them"}


def not_balanced(failed: list[str]) -> str:
    """The headline of checks that failed. A check is named by what it asserts ("depth digest = simulation's
    digest"), so the names are said as failed: listed bare, the headline read as if each held."""
    return "NOT BALANCED: failed: " + "; ".join(failed)


def count(n: int, noun: str) -> str:
    """'1 message', '2 messages', '1,000 messages'."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def frame_noun(loss: dict[str, Any], subscriber: str) -> str:
    """What a subscriber's frames carry: 'depth frame' for a depth subscriber's; a summary written before the
    nouns were kept says 'BBO frame', as it did."""
    return loss.get("subscriber_frame_nouns", {}).get(subscriber, "BBO frame")


def _reasons(by_reason: dict[str, int]) -> str:
    return ", ".join(f"{n:,} × {why}" for why, n in by_reason.items() if n)


# Where messages were lost, in hop order: (loss key, unit, what happened).
_LOSS_WORDS = [
    ("sender_failed_packets", "packet", "the sender failed {}"),
    ("kernel_dropped_datagrams", "datagram", "the kernel dropped {}"),
    ("serial_bad_lines", "bad serial line", "{}"),
    ("sequence_gap_messages", "message", "{} in sequence gaps"),
    ("late_messages_discarded", "message", "{} arrived late (discarded)"),
    ("undetected_messages", "message", "{} never seen (no later packet showed the gap)"),
]


# What of the capture's own session reading it in order does not apply (reconcile._capture_unapplied): the loss
# key, the gateway's key it is part of, and where it is.
_OWN_WORDS = [("capture_missing_messages", "sequence_gap_messages", "missing from the capture itself"),
              ("capture_late_messages", "late_messages_discarded", "out of order in the capture itself")]


def _own_words(loss: dict[str, Any]) -> list[str]:
    """The capture's own losses, as a gateway seen from outside is told them: its session numbered them, and no
    path could apply them."""
    return [f"{count(loss[key], 'message')} {words}" for key, _, words in _OWN_WORDS if loss.get(key)]


def _own_rejected_clause(loss: dict[str, Any]) -> str:
    """What the capture holds malformed, as a gateway seen from outside is told it (itch-inspect's count): "" when
    nothing."""
    parts = []
    if loss.get("capture_rejected_messages"):
        parts.append(f"{loss['capture_rejected_messages']:,} of {count(loss['expected_messages'], 'message')} "
                     f"malformed ({_reasons(loss['capture_rejected_message_reasons'])})")
    if loss.get("capture_rejected_packets"):
        parts.append(f"{loss['capture_rejected_packets']:,} of {count(loss['capture_packets'], 'packet')} malformed "
                     f"({_reasons(loss['capture_rejected_packet_reasons'])})")
    return f"{' and '.join(parts)} in the capture itself" if parts else ""


def _lost_clause(loss: dict[str, Any]) -> str:
    where = [words.format(count(loss[key], unit)) for key, unit, words in _LOSS_WORDS if loss[key]]
    said = [key for key, _, _ in _LOSS_WORDS if loss[key]]
    for key, gateway_key, words in _OWN_WORDS:  # each among the gateway's own count of its kind
        own = loss.get(key, 0)
        if own and gateway_key in said:
            where[said.index(gateway_key)] += (f", all {words}" if own == loss[gateway_key] else
                                               f" ({own:,} of them {words})")
        elif own:
            where.insert(0, f"{count(own, 'message')} {words}")
    where += [f"{name} missed {count(n, frame_noun(loss, name))}"
              for name, n in loss["subscriber_frames_dropped"].items()]
    n = loss["messages_not_applied"]
    if not n:  # lost on the way out only: a subscriber's share
        return f"{'; '.join(where)}; no feed message lost"
    head = f"{n:,} of {count(loss['expected_messages'], 'message')} lost"
    return f"{head} ({'; '.join(where)})" if where else head


def _rejected_clause(loss: dict[str, Any], received: int) -> str:
    parts = []
    if loss["rejected_messages"]:
        parts.append(f"{loss['rejected_messages']:,} of {count(received, 'message')} malformed "
                     f"({_reasons(loss.get('rejected_message_reasons', {}))})")
    if loss["rejected_packets"]:
        parts.append(f"{loss['rejected_packets']:,} of {count(loss.get('packets', 0), 'packet')} malformed "
                     f"({_reasons(loss.get('rejected_packet_reasons', {}))})")
    return " and ".join(parts)


def _skipped_clause(summary: dict[str, Any]) -> str:
    """The capture's frames that are not its feed (other flows, not UDP, ...), counted and skipped by every path;
    and on a serial line, the capture's duplicated messages, which the line carries once."""
    skipped = sum((summary.get("feed") or {}).get("not_feed", {}).values())
    twice = ((summary.get("reconciliation") or {}).get("serial") or {}).get("duplicates_not_sent", 0)
    return "; ".join(([f"{count(skipped, 'frame')} not of the feed skipped"] if skipped else [])
                     + ([f"{count(twice, 'duplicated message')} of the capture not sent (a line carries each message "
                         "once)"] if twice else []))


def _other_clauses(summary: dict[str, Any], loss: dict[str, Any]) -> str:
    """Skipped and duplicated: counted, said, never loss."""
    parts = [_skipped_clause(summary)] if _skipped_clause(summary) else []
    if loss.get("duplicate_messages"):
        parts.append(f"{count(loss['duplicate_messages'], 'duplicate message')} ignored")
    for name, n in loss.get("subscriber_duplicates", {}).items():
        parts.append(f"{name} received {count(n, frame_noun(loss, name))} twice")
    for name, n in loss.get("subscriber_own_loss", {}).items():
        parts.append(f"{name} missed {count(n, frame_noun(loss, name))}, its own")
    return "".join(f"; {p}" for p in parts)


def _incomplete(summary: dict[str, Any]) -> dict[str, Any]:
    """A run that did not reach its end: its failure's kind and first line."""
    failure = summary.get("failure")
    why = failure["message"] if failure else (summary.get("error") or "the run did not reach its end")
    kind = failure["kind"] if failure else "input_ended_early"
    return {"status": "incomplete", "headline": f"INCOMPLETE ({kind}): {why.splitlines()[0] if why else ''}",
            "exit_status": EXIT["incomplete"]}


def judge(summary: dict[str, Any]) -> dict[str, Any]:
    rec = summary.get("reconciliation")
    if summary.get("failure") or not summary.get("complete") or rec is None:
        return _incomplete(summary)
    loss = rec["loss"]
    rest = _other_clauses(summary, loss)
    lost = (loss["messages_not_applied"] or loss["sender_failed_packets"] or loss["kernel_dropped_datagrams"]
            or loss["serial_bad_lines"] or loss["subscriber_frames_dropped"])
    rejected = loss["rejected_messages"] or loss["rejected_packets"]
    applied = loss.get("applied_messages", rec["decoded"])
    if not rec["balanced"]:
        failed = [name for name, ok in rec["checks"].items() if not ok]
        # What was lost besides is said too: a check that failed (a broker's acknowledgement) must not hide that a
        # subscriber missed frames.
        status, headline = "unbalanced", not_balanced(failed) + (f"; and lost: {_lost_clause(loss)}" if lost else "")
    elif "join" in rec:
        status, headline = _judge_join(rec, lost, rest)
    elif "recovery" in rec:
        status, headline = _judge_recovering(summary, rec, lost, rest)
    elif "faults" in rec and not (loss["sender_failed_packets"] or loss["kernel_dropped_datagrams"]
                                  or loss["subscriber_frames_dropped"]):
        # Only what was injected: a drop by the sender, the kernel or on the way to a subscriber is no declared
        # fault, and makes the run LOST below whatever the fault accounting says.
        status = "faults_accounted"
        each = ("each a fault its sidecar declares" if rec["faults"].get("injected", {}).get("declared")
                else "each an injected fault")
        headline = (f"FAULTS ACCOUNTED: {loss['messages_not_applied']:,} of "
                    f"{count(loss['expected_messages'], 'message')} not applied, {each} "
                    f"({rec['faults']['summary']}); balanced")
    elif lost:
        status = "lost"
        also = f"; {_rejected_clause(loss, rec['received'])}" if rejected else ""
        headline = f"LOST: {_lost_clause(loss)}{also}; {applied:,} applied{rest}; accounting balanced"
    elif rejected:
        status = "rejected"
        applied_words = f"{applied:,} applied" if loss["rejected_messages"] else f"{count(applied, 'message')} applied"
        headline = f"REJECTED: {_rejected_clause(loss, rec['received'])}; {applied_words}, none lost{rest}"
    else:
        status = "lossless"
        digest = rec["checks"].get("BBO digest = simulation's digest")
        depth = rec["checks"].get("depth digest = simulation's digest")
        tail = (", BBO and depth digests = simulation" if digest and depth else ", BBO digest = simulation" if digest
                else "")
        headline = f"LOSSLESS: {count(rec['received'], 'message')}, {_events(summary)}, balanced{tail}{rest}"
    return {"status": status, "headline": headline, "exit_status": EXIT[status]}


def _events(summary: dict[str, Any]) -> str:
    """The run's BBO events, and its depth events when it logged them (levels = N, or all: level changes)."""
    words = count(summary["bbo"]["events"], "BBO event")
    depth = summary.get("depth")
    return words + (f", {depth_events_words(depth['events'], depth['levels'])}" if depth else "")


def unrebuildable_orders(j: dict[str, Any]) -> int:
    """How many of the snapshot's orders rest, at the least, from before the feed's first message: the feed's
    messages up to the join point can add at most one order each, so the rest the gateway can have only from the
    snapshot. The seam a join verdict tests is as wide as this."""
    feed_before_join = max(0, j["through"] - j["from_seq"] + 1)
    return max(0, int((j.get("snapshot") or {}).get("orders", 0)) - feed_before_join)


def malformed_example(check: dict[str, Any]) -> str:
    """A BBO check's first malformed line, quoted, and what is wrong with it when that was told (malformed_why)."""
    why = check.get("malformed_why")
    return f"{check['malformed_examples'][0]!r}" + (f": {why}" if why else "")


def _join_words(j: dict[str, Any]) -> str:
    """What the join took, in a few words."""
    snap = j.get("snapshot") or {}
    words = (f"snapshot of {count(snap.get('messages', 0), 'message')} ({count(snap.get('orders', 0), 'order')}, "
             f"{unrebuildable_orders(j):,} at least from before the feed began) in {j['transfer_ms']:,.1f} ms"
             if j.get("transfer_ms") is not None and j["transfer_ms"] >= 0 else "no snapshot")
    if j.get("connections", 1) and j.get("connections", 1) > 1:
        words += f" over {j['connections']} connections (cut after {count(j.get('server_cut', 0), 'time')})"
    if not j.get("black_box"):  # what the gateway held and dropped is its own account
        words += (f", {count(j['held'], 'packet')} held meanwhile, {count(j['covered_messages'], 'message')} of them "
                  f"covered by the snapshot")
    return words + f", {count(j['re_requested_between'], 'message')} between the snapshot and the feed re-requested"


def _judge_join(rec: dict[str, Any], lost: Any, rest: str) -> tuple[str, str]:
    """A late join: JOINED when the gateway took the snapshot, applied every message after it, and its BBO from
    the join point on equals the simulation of the whole session (each stock's book at the join included)."""
    loss, j = rec["loss"], rec["join"]
    check = j["bbo_check"]
    at = f"at seq {j['next']:,}"
    if not j.get("snapshot_taken"):  # the server's own record: nothing was joined, whatever the BBO shows
        server = f"{j['refused']}, recorded" if j.get("refused") else "the snapshot server recorded"
        return "not_joined", (f"NOT JOINED {at}: {server} {count(j.get('logins', 0), 'login')} and no snapshot "
                              f"received to its last message; a join is judged only once a snapshot was taken")
    if lost:
        lost_words = _lost_clause(loss) if "messages_not_applied" in loss else "messages were lost on the way to it"
        return "lost", f"LOST after joining {at}: {lost_words}; {_join_words(j)}; accounting balanced{rest}"
    if loss.get("rejected_messages") or loss.get("rejected_packets"):
        return "rejected", f"REJECTED after joining {at}: {_rejected_clause(loss, rec['received'])}; {_join_words(j)}"
    depth = j.get("depth_check")
    # A brought gateway that publishes depth (bbo.levels = N): its one stream (bbo_check) is its depth.
    published = levels_words(j["levels"]) + (" a side" if j["levels"] != ALL_LEVELS else "") if j.get("levels") else ""
    for name, c in (("DEPTH" if published else "BBO", check), ("DEPTH", depth)):
        if c and not c["equal"]:
            where = (f"{difference_words(c['after_join'])}" if not c["after_join"]["equal"] else
                     f"{c['events_before_join']:,} events for messages the snapshot covered"
                     if c["events_before_join"] else
                     f"{c['stocks_differing_at_join']:,} stocks' books at the join differ (first: stock "
                     f"{c['first_stock_differing']}" + (f", {c['first_level_differing']}"
                                                        if c.get("first_level_differing") else "") + ")")
            return "bbo_differs", f"{name} DIFFERS after joining {at}: {where}; {_join_words(j)}"
    # A brought gateway's output is held whole too: a line that is no event fails it, after the join as before it.
    whole = rec.get("bbo_check") or {}
    if whole.get("malformed_lines"):
        return "bbo_differs", (f"{'DEPTH' if published else 'BBO'} DIFFERS after joining {at}: "
                               f"{count(whole['malformed_lines'], 'malformed line')} (e.g. "
                               f"{malformed_example(whole)}) in its output; {_join_words(j)}")
    applied = f"{count(loss['expected_messages'], 'message')} after the join applied, " if not j.get("black_box") \
        else ""
    depth_words = (f", {count(depth['after_join']['events'], 'depth event')} after it and each stock's depth at "
                   "the join = the simulation's") if depth else ""
    events = f"{count(check['after_join']['events'], 'depth event')} ({published})" if published else \
        count(check['after_join']['events'], 'BBO event')
    return "joined", (f"JOINED {at}: {_join_words(j)}; {applied}"
                      f"{events} after it = the simulation's (exact), "
                      f"{count(check['stocks_at_join'], 'stock')}' {'depth' if published else 'books'} at the join "
                      f"= the simulation's{depth_words}; balanced{rest}")


def _judge_recovering(summary: dict[str, Any], rec: dict[str, Any], lost: Any, rest: str) -> tuple[str, str]:
    """The built-in gateway with a B line or a re-request server: held to the whole session. RECOVERED when the
    wire lost messages and every one reached the book, the BBO digest equal to the simulation of the session."""
    loss, r = rec["loss"], rec["recovery"]
    digest_key = next((k for k in rec["checks"] if k.startswith("BBO digest")), None)
    took = r.get("time_to_recover_ns")
    timing = f"; gaps filled in p50 {_us(took['p50'])}, p99 {_us(took['p99'])}" if took else ""
    if lost:
        return "lost", (f"LOST: {_lost_clause(loss)}; {_recovery_words(r)}{_offered_again_words(loss, r)}; "
                        f"accounting balanced{rest}")
    if loss["rejected_messages"] or loss["rejected_packets"]:
        return "rejected", f"REJECTED: {_rejected_clause(loss, rec['received'])}; {_recovery_words(r)}{rest}"
    if digest_key is None:  # nothing lost, yet no digest compared: never said to be equal
        return "incomplete", "INCOMPLETE: the BBO digest was not compared with the simulation of the whole session"
    if r["lost_on_wire"]:
        return "recovered", (f"RECOVERED: {count(r['lost_on_wire'], 'message')} lost on the wire, every one back and "
                             f"the BBO digest = the simulation of the whole session "
                             f"({count(summary['bbo']['events'], 'event')}); {_recovery_words(r)}; balanced"
                             f"{timing}{rest}")
    return "lossless", (f"LOSSLESS: {count(rec['received'], 'message')}, {_events(summary)}, "
                        f"balanced, BBO digest = simulation of the whole session{rest}")


def _us(ns: float) -> str:
    return f"{ns / 1000:,.1f} µs"


def difference_words(check: dict[str, Any]) -> str:
    """What run and compare both say of a BBO difference: the counts, then the first difference by seq."""
    parts = [f"{check[k]:,} {k}" for k in ("missing", "extra", "wrong")]
    if check.get("out_of_order"):
        parts.append(f"{check['out_of_order']:,} out of order (after a later event of their stock)")
    text = f"{', '.join(parts)} of {check['reference_events']:,} reference events"
    f = check.get("first_difference")
    if f:
        text += (f"; first at seq {f['seq']:,} (message {f['message']}), stock {f['stock']}, {f['stream']} event "
                 f"#{f['event']:,}: {f['kind']}: " + (f"{f['level']}; " if f.get("level") else "")
                 + f"expected {f['expected']}, got {f['got']}")
    if check.get("flood"):
        text += f"; {flood_words(check['flood'])}"
    return text


def flood_words(flood: dict[str, int]) -> str:
    """How much of a flooding output was judged (gateways/in_parts.py)."""
    unread = f", {flood['bytes_not_read']:,} bytes unread" if flood["bytes_not_read"] >= 0 else ""
    if "seq" in flood:
        after = flood.get("events_read_after", 0)
        return (f"judged up to seq {flood['seq']:,} only: the output then held {flood['events_of_seq']:,} events of "
                f"that one seq (more than {flood['most']:,}, a flood) and was "
                + (f"judged no further, {after:,} events read after them" if after else "read no further") + unread)
    return (f"judged on its first {flood['events']:,} events only: an output of more (the simulation's "
            f"{flood['reference_events']:,} four times over, and more) is a flood, read no further{unread}")


def _recovery_words(r: dict[str, Any], black_box: bool = False) -> str:
    """The routes back, in a few words: the other line, the re-request server. Of a black box only what it was
    offered is seen, not what it took: "on the other line", never "from" it."""
    words = (f"{r['from_the_other_line']:,} {'on' if black_box else 'from'} the other line, " if r["lines"] > 1
             else "")
    if not r["server"]:
        return words + f"{r['lost_on_every_line']:,} lost on every line, no re-request server"
    refused = {k: v for k, v in r["requests_by_outcome"].items() if k != "served" and v}
    words += (f"{r['answered_by_server']:,} answered by the re-request server ({count(r['requests'], 'request')}, "
              f"{count(r['messages_answered'], 'message')} in {count(r['answer_packets'], 'packet')})")
    if r["answers_dropped"]:
        words += f", {count(r['answers_dropped'], 'answer')} dropped by the server (a fault)"
    if refused:
        words += f", refused: {_reasons(refused)}"
    return words


def _offered_again_words(loss: dict[str, Any], r: dict[str, Any]) -> str:
    """The messages the built-in gateway did not apply though the run offered them again (on the other line, or in
    the server's answer): its own loss, which the words for the wire's do not say. Empty when there are none, or
    when the sender or the kernel lost datagrams too (a line's copy dropped there is not offered)."""
    # Neither is what the capture itself lacks or holds late: no line and no server carries it again.
    missed = (loss["messages_not_applied"] - r["never_answered"] - loss.get("capture_missing_messages", 0)
              - loss.get("capture_late_messages", 0))
    again = " or ".join(w for w, on in (("on the other line", r["lines"] > 1), ("by the server", r["server"])) if on)
    if missed <= 0 or not again or loss["sender_failed_packets"] or loss["kernel_dropped_datagrams"]:
        return ""
    return f"; {missed:,} of them offered again ({again}) and not applied"


def messages_verb(transport: str) -> str:
    """How a black box got its messages: the capture it reads itself (how far it read is not seen, see
    unseen_tail_words), or sent to it."""
    return "in the capture it reads itself" if transport == "sim" else "sent"


def unseen_tail_words(tail: dict[str, Any] | None) -> str:
    """What a black box reading the capture itself leaves unseen: the messages after the simulation's last BBO
    event, which its BBO stream shows nothing of (reconciliation's bbo_check.unseen_tail); empty when none."""
    if not tail or not tail["messages"]:
        return ""
    return (f"whether it read the capture's last {count(tail['messages'], 'message')}, after seq "
            f"{tail['after_seq']:,}, the simulation's last BBO event (a BBO stream shows nothing of them)")


def judge_black_box(summary: dict[str, Any]) -> dict[str, Any]:
    """The verdict of a gateway brought through its contract: the path to it balanced and nothing lost, and
    its BBO stream equal to the simulation's (BBO DIFFERS: missing, extra and wrong events said apart)."""
    rec = summary.get("reconciliation")
    if summary.get("failure") or not summary.get("complete") or rec is None:
        return _incomplete(summary)
    loss, check = rec["loss"], rec["bbo_check"]
    twice = loss.get("capture_duplicates_sent", 0)
    skipped = "".join(f"; {words}" for words in (
        _skipped_clause(summary), f"{count(twice, 'duplicated message')} of the capture sent twice" if twice else "")
        if words)
    w2w = summary.get("wire_to_wire") or {}
    perf = summary.get("performance") or {}
    unknown = stamp_counts(w2w)[0]
    late = (f" ({unknown:,} of {w2w['events']:,} events stamped when read, late by a wait not known)" if unknown
            else "")
    timing = (f"; wire-to-wire p50 {_us(w2w['from_intended']['p50'])}, p99 {_us(w2w['from_intended']['p99'])}{late}"
              if w2w.get("from_intended") else
              f"; {perf['messages_per_s']:,.0f} messages/s start to exit" if perf.get("messages_per_s") else "")
    if not rec["balanced"]:
        status, headline = "unbalanced", not_balanced([n for n, ok in rec["checks"].items() if not ok])
    elif rec.get("join"):
        status, headline = _judge_join(rec, not loss["lossless"], "")
    elif not loss["lossless"]:
        where = [words.format(count(loss[key], unit)) for key, unit, words in _LOSS_WORDS[:2] if loss[key]]
        if loss.get("kernel_no_socket_datagrams"):
            where.append(f"the kernel found no socket for at least "
                         f"{count(loss['kernel_no_socket_datagrams'], 'datagram')} sent up to the session's last "
                         "message (the gateway's feed socket not bound, or the group not joined, when they came, "
                         "though it was ready)")
        on_the_way = f"{'; '.join(where)} on the way to the gateway" if where else ""
        rejected = _own_rejected_clause(loss)
        status, headline = "lost", f"LOST: {'; '.join(_own_words(loss) + ([on_the_way] if on_the_way else []))}; " \
                                   f"{f'{rejected}; ' if rejected else ''}accounting balanced{skipped}"
    elif not check["equal"] or check["malformed_lines"]:
        malformed = (f"; {count(check['malformed_lines'], 'malformed line')} (e.g. "
                     f"{malformed_example(check)})" if check["malformed_lines"] else "")
        status = "bbo_differs"
        depth = summary.get("bbo", {}).get("levels", 0)
        of_depth = f", depth of {levels_words(depth)}" if depth else ""
        headline = f"BBO DIFFERS ({check['mode']}{of_depth}): {difference_words(check)}{malformed}"
        if rec.get("faults", {}).get("source") == "serial-replay":
            headline += f"; {_corrupted_words(rec['faults'])}"
        if rec.get("recovery"):
            headline += f"; {_recovery_words(rec['recovery'], black_box=True)}"
    elif rec.get("recovery", {}).get("never_answered"):
        r = rec["recovery"]
        status = "lost"
        headline = (f"LOST: {r['never_answered']:,} of {count(r['lost_on_wire'], 'message')} lost on the wire "
                    + ("never came back from the re-request server" if r["server"] else "had no way back (no "
                       "re-request server in the run)")
                    + f" (first: seq {r['first_never_answered']:,}); its {black_box_events(summary, check)} "
                    f"still equal the simulation of the whole session; {_recovery_words(r, black_box=True)}")
    elif rec.get("recovery", {}).get("lost_on_wire"):
        r = rec["recovery"]
        status = "recovered"
        # Of a black box only what it was sent is seen: every lost message sent to it again, not that it took it.
        headline = (f"RECOVERED: {count(r['lost_on_wire'], 'message')} lost on the wire, every one sent to it again, "
                    f"and its {black_box_events(summary, check)} = the simulation of the whole session "
                    f"({check['mode']}); {_recovery_words(r, black_box=True)}; balanced{timing}")
    elif rec.get("faults"):
        status = "faults_accounted"
        f = rec["faults"]
        events = black_box_events(summary, check)
        headline = ("FAULTS ACCOUNTED: " + (
            f"{f['corrupted_lines']:,} of {loss['expected_messages']:,} lines corrupted on the line "
            f"(serial.corrupt_every; first: seq {f['first_seq']:,}), {events} = the simulation without them"
            if f["source"] == "serial-replay" else
            f"the capture's declared faults ({f['summary']}; its sidecar), "
            f"{count(loss['expected_messages'], 'message')} {messages_verb(summary['transport'])}, {events} = the "
            f"simulation of the capture as its faults left it") + f" ({check['mode']}); balanced{timing}")
    elif rejected := _own_rejected_clause(loss):
        # As the built-in gateway's run of the capture is REJECTED: its BBO equal to the simulation's, which skips
        # what fails validation, is all a black box shows of rejecting it.
        status = "rejected"
        headline = (f"REJECTED: {rejected}; {black_box_events(summary, check)} = simulation ({check['mode']}), "
                    f"which rejects them too; none lost{', balanced' if rec['checks'] else ''}{timing}{skipped}")
    else:
        status = "lossless"
        unseen = unseen_tail_words(check.get("unseen_tail"))
        # "balanced" only where the path to the gateway had counts to balance (a sender, a kernel, a line); a
        # gateway reading the capture itself had none.
        balanced = ", balanced" if rec["checks"] else ""
        headline = (f"LOSSLESS: {count(loss['expected_messages'], 'message')} {messages_verb(summary['transport'])}, "
                    f"{black_box_events(summary, check)} = simulation ({check['mode']}){balanced}{timing}{skipped}"
                    + (f"; not seen: {unseen}" if unseen else ""))
    return {"status": status, "headline": headline, "exit_status": EXIT[status]}


def _corrupted_words(f: dict[str, Any]) -> str:
    """What a brought gateway on a noisy serial line is held to (reconcile's rec["faults"])."""
    return (f"held to the simulation without the {count(f['corrupted_lines'], 'corrupted line')} (first: seq "
            f"{f['first_seq']:,}), as a gateway checking each line's checksum applies the capture")


def black_box_events(summary: dict[str, Any], check: dict[str, Any]) -> str:
    """A brought gateway's events: BBO, or depth of the N levels its contract says it publishes."""
    levels = summary.get("bbo", {}).get("levels", 0)
    return depth_events_words(check["events"], levels) if levels else count(check["events"], "BBO event")


def depth_events_words(events: int, levels: Levels) -> str:
    """'7,752 depth events (5 levels)', or '8,143 level changes (every level)' (levels = all)."""
    if levels == ALL_LEVELS:
        return f"{count(events, 'level change')} (every level)"
    return f"{count(events, 'depth event')} ({levels_words(levels)})"


def levels_words(levels: Levels) -> str:
    """'5 levels', or 'every level' (levels = all)."""
    return "every level" if levels == ALL_LEVELS else count(int(levels), "level")


def closing_line(statuses: list[str], targets_failed: int = 0, not_run: list[str] | tuple[str, ...] = ()) -> str:
    """The closing line of a scenario: how many runs ended which way, how many configurations failed a target
    (capacity/targets.py), and the configurations not run (the gateway takes none of their input)."""
    counts = {s: statuses.count(s) for s in EXIT if statuses.count(s)}
    ok = sum(n for s, n in counts.items() if EXIT[s] == 0)
    listing = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items())
    verdict = "ok" if ok == len(statuses) and statuses and not targets_failed else "FAILED"
    missed = f"; targets not met by {targets_failed} configuration(s)" if targets_failed else ""
    skipped = (f"; {len(not_run)} configuration(s) not run, the gateway taking none of their input: "
               f"{', '.join(not_run)}" if not_run else "")
    return f"{len(statuses)} run(s): {listing or 'none'}{missed}{skipped} — {verdict}"


def exit_status(statuses: list[str]) -> int:
    return 0 if statuses and all(EXIT[s] == 0 for s in statuses) else 1
