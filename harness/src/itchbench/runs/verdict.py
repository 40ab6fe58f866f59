"""The verdict of one run: a status, one headline line and an exit status.

    lossless      complete, balanced, nothing lost                      exit 0
    faults_accounted  complete, balanced, and every loss is a declared
                  fault that the gateway's counters equal exactly       exit 0
    lost          complete and balanced, but messages were lost         exit 1
    unbalanced    the accounting does not add up                        exit 1
    incomplete    the run did not reach its end (crash, sender failed,
                  deadline, interrupted, …)                             exit 1

docs/verdicts.md is the reference; a run is never called lossless or
balanced when anything was lost, skipped or could not be checked.
"""

from __future__ import annotations

from typing import Any

EXIT = {"lossless": 0, "faults_accounted": 0, "lost": 1, "unbalanced": 1, "incomplete": 1}


# What each kind of loss is called in a headline, in hop order.
_LOSS_WORDS = [
    ("sender_failed_packets", "sender failed {:,} packets"),
    ("kernel_dropped_datagrams", "kernel dropped {:,} datagrams"),
    ("serial_bad_lines", "{:,} bad serial lines"),
    ("sequence_gap_messages", "sequence gaps {:,} messages"),
    ("late_messages_discarded", "{:,} arrived late (discarded)"),
    ("undetected_messages", "{:,} never seen (no later packet showed the gap)"),
    ("rejected_packets", "gateway rejected {:,} packets"),
    ("rejected_messages", "gateway rejected {:,} messages"),
]


def _where(loss: dict[str, Any]) -> str:
    parts = [words.format(loss[key]) for key, words in _LOSS_WORDS if loss[key]]
    parts += [f"{name} missed {n:,} BBO frames" for name, n in loss["subscriber_frames_dropped"].items()]
    return "; ".join(parts)


def judge(summary: dict[str, Any]) -> dict[str, Any]:
    rec = summary.get("reconciliation")
    failure = summary.get("failure")
    if failure or not summary.get("complete") or rec is None:
        why = failure["message"] if failure else (summary.get("error") or "the run did not reach its end")
        kind = failure["kind"] if failure else "input_ended_early"
        status, headline = "incomplete", f"INCOMPLETE ({kind}): {why.splitlines()[0] if why else ''}"
    elif not rec["balanced"]:
        failed = [name for name, ok in rec["checks"].items() if not ok]
        status, headline = "unbalanced", "NOT BALANCED: " + "; ".join(failed)
    elif "faults" in rec:
        status = "faults_accounted"
        headline = (f"FAULTS ACCOUNTED: {rec['loss']['messages_not_applied']:,} of "
                    f"{rec['loss']['expected_messages']:,} messages not applied, each an injected fault "
                    f"({rec['faults']['summary']}); balanced")
    elif not rec["loss"]["lossless"]:
        loss = rec["loss"]
        status = "lost"
        headline = (f"LOST: {loss['messages_not_applied']:,} of {loss['expected_messages']:,} messages not applied"
                    f" ({_where(loss) or 'see summary.json'}); accounting balanced")
    else:
        status = "lossless"
        digest = rec["checks"].get("BBO digest = simulation's digest")
        tail = ", BBO digest = simulation" if digest else ""
        headline = f"LOSSLESS: {rec['received']:,} messages, {summary['bbo']['events']:,} BBO events, balanced{tail}"
    return {"status": status, "headline": headline, "exit_status": EXIT[status]}


def closing_line(statuses: list[str]) -> str:
    """The closing line of a scenario: how many runs ended which way."""
    counts = {s: statuses.count(s) for s in EXIT if statuses.count(s)}
    ok = sum(n for s, n in counts.items() if EXIT[s] == 0)
    listing = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items())
    verdict = "ok" if ok == len(statuses) and statuses else "FAILED"
    return f"{len(statuses)} run(s): {listing or 'none'} — {verdict}"


def exit_status(statuses: list[str]) -> int:
    return 0 if statuses and all(EXIT[s] == 0 for s in statuses) else 1
