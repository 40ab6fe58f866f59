"""What a brought gateway's own latency log must be before its stages are reported (`white_box = true`,
docs/gateway-contract.md): written and closed, each record's stamps in stage order, on the run's clock (none before
its message was sent, none after its BBO event arrived: a gateway stamping another clock, or in other units, is
caught where itchbench's own stamps stand on both sides), and, where every message reached the gateway once, one
record for each message of the capture, none for another.

Each is a check of the run's balance (runs/reconcile.py): a log that fails one is named in the run's NOT BALANCED
headline, with the first record or message at fault, rather than its figures reported as the gateway's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..analysis import hops, logs

LOG = "latency.lat"  # in the gateway's {out} folder
PART = 1 << 20       # records read at a time: memory stays a part whatever the day's size

WRITTEN = "white-box latency log written and closed by the gateway (white_box = true)"
IN_ORDER = "white-box stamps in stage order"
ON_THE_CLOCK = ("white-box stamps on the run's clock (CLOCK_MONOTONIC): none before its message was sent, none after "
                "its BBO event arrived")
ONE_A_MESSAGE = "white-box latency log: one record a message of the capture"


def each_message_once(hop: dict[str, Any], lossless: bool, recovering: bool, faulted_capture: bool) -> bool:
    """Whether each of the capture's messages reached the gateway once, so that its log must hold one record each:
    nothing lost or corrupted on the way (a serial line's corrupted lines), no recovery or join, no faults in the
    capture, the capture not replayed in loops (hop: the run's transport path, reconcile's)."""
    return (lossless and not recovering and not faulted_capture and hop.get("loops", 1) == 1
            and not hop.get("corrupted_lines"))


@dataclass(frozen=True)
class RunStamps:
    """What itchbench stamped on either side of the gateway, on CLOCK_MONOTONIC: each message's first send (seqs
    sorted, unique; empty when the sender stamps nothing) and each BBO event's arrival (seq and t_recv per event;
    empty when its output was not received by itchbench)."""
    sent_seq: np.ndarray
    sent: np.ndarray
    event_seq: np.ndarray
    arrived: np.ndarray


def checks(out_dir: Path, reference_log: Path, every_message: bool, run: RunStamps | None = None) -> dict[str, bool]:
    """The checks of the gateway's latency log in out_dir, named as NOT BALANCED says them (a failed one with what
    failed). every_message: each of the capture's messages reached the gateway once (nothing lost, no recovery, no
    join, no faults), so its log holds exactly the simulation's sequence numbers (reference_log's). run: the run's
    own stamps around the gateway, which its stamps must lie between (made only where there are any)."""
    path = out_dir / LOG
    if not path.is_file():
        return {f"{WRITTEN}: {path.name} is missing from {out_dir.name}/": False}
    try:
        log = logs.read_latency(path, quiet=True)  # what was not whole is said below, as the check's failure
    except logs.LogFormatError as e:
        return {f"{WRITTEN}: {str(e).removeprefix(f'{path}: ')}": False}
    found = {(f"{WRITTEN}: " + "; ".join(log.notes) if log.notes else WRITTEN): log.complete}
    if "seq" not in log.dtype.names:
        return {**found, f"{IN_ORDER}: a latency log of format version {log.header['version']} holds no sequence "
                         "numbers (version 3: gateway/log/whitebox/)": False}
    found.update(_stage_order(log))
    if run is not None and (run.sent.size or run.arrived.size):
        found.update(on_the_clock(log, run))
    if every_message:
        found.update(_one_a_message(log, logs.read_latency(reference_log)))
    return found


def _stage_order(log: logs.LogFile) -> dict[str, bool]:
    """Every record's stamps that are set (0: the stage did not happen) never go back from one stage to a later."""
    stages = [n for n in logs.STAGE_STAMPS if n in log.dtype.names]
    bad, first = 0, None
    for part in logs.iter_records(log, PART):
        latest = np.zeros(len(part), np.int64)         # each record's latest stamp so far
        latest_stage = np.zeros(len(part), np.intp)    # and its stage
        back = np.full((2, len(part)), -1, np.intp)    # the first stage that went back, and the one it went before
        for i, name in enumerate(stages):
            t = logs.stamp(part, name)
            now_back = (t != 0) & (t < latest) & (back[0] < 0)
            back[0, now_back], back[1, now_back] = i, latest_stage[now_back]
            ahead = (t != 0) & (t >= latest)
            latest = np.where(ahead, t, latest)
            latest_stage[ahead] = i
        wrong = back[0] >= 0
        if first is None and wrong.any():
            at = int(np.argmax(wrong))
            first = (int(part["seq"][at]), stages[int(back[0, at])], stages[int(back[1, at])])
        bad += int(np.count_nonzero(wrong))
    if not bad:
        return {IN_ORDER: True}
    seq, later, earlier = first
    return {f"{IN_ORDER}: {bad:,} record{'s' if bad != 1 else ''} with a stage stamped before the one before it "
            f"(first: seq {seq:,}, {later} before {earlier})": False}


# The built-in gateway's stamps (and a "run-files" gateway's) are its stage clock's, moved onto CLOCK_MONOTONIC by a
# line from the anchor to the offset measured at the end (analysis/hops.py): a few µs off at most, where a stamp
# in the wrong units or of the wrong clock is milliseconds to decades off.
MOVED_SLACK_NS = 100_000
BUILT_IN_ON_THE_CLOCK = ("gateway stamps on the run's clock (CLOCK_MONOTONIC, moved from its stage clock): none "
                         "before its message was sent")


def on_the_clock(log: logs.LogFile, run: RunStamps, moved: Callable[[np.ndarray], np.ndarray] | None = None,
                 slack_ns: int = 0, name: str = ON_THE_CLOCK) -> dict[str, bool]:
    """Each record's first stamp no earlier than its message's first send, and its last no later than the last
    arrival of a BBO event of its seq: a message is read after it was sent, and stamped before what it published
    arrives (a loop of the capture, or a second line, sends a seq again: the first send and the last arrival bound
    every copy). moved: the stamps (ns) onto CLOCK_MONOTONIC, for a log on another clock; slack_ns: how far off
    that move may leave a stamp. The check is named `name`."""
    stages = [n for n in logs.STAGE_STAMPS if n in log.dtype.names]
    order = np.argsort(run.event_seq, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(run.event_seq[order])) + 1] if order.size else np.zeros(0, np.intp)
    event_seq = run.event_seq[order][starts]  # each seq once, sorted, with its last arrival
    last_arrival = np.maximum.reduceat(run.arrived[order], starts) if order.size else np.zeros(0, np.int64)
    early = late = 0
    first_early = first_late = None
    for part in logs.iter_records(log, PART):
        t = np.stack([logs.stamp(part, stage).astype(np.int64) for stage in stages])
        if moved is not None:
            t = np.stack([moved(row) for row in t])
        set_ = t != 0
        first = np.where(set_, t, np.iinfo(np.int64).max).min(axis=0)
        latest = np.where(set_, t, 0).max(axis=0)
        seq = part["seq"].astype(np.int64)
        sent = hops.lookup(seq, run.sent_seq, run.sent)
        arrived = hops.lookup(seq, event_seq, last_arrival)
        before = set_.any(axis=0) & (sent > 0) & (first < sent - slack_ns)
        after = (arrived > 0) & (latest > arrived + slack_ns)
        if before.any():
            early += int(np.count_nonzero(before))
            at = int(np.argmax(before))
            first_early = first_early if first_early is not None else (int(seq[at]), int(sent[at] - first[at]))
        if after.any():
            late += int(np.count_nonzero(after))
            at = int(np.argmax(after))
            first_late = first_late if first_late is not None else (int(seq[at]), int(latest[at] - arrived[at]))
    faults = []
    if early:
        faults.append(f"{early:,} record{'s' if early != 1 else ''} stamped before its message was sent (first: seq "
                      f"{first_early[0]:,}, {hops.span_words(first_early[1])} before)")
    if late:
        faults.append(f"{late:,} record{'s' if late != 1 else ''} stamped after its BBO event arrived (first: seq "
                      f"{first_late[0]:,}, {hops.span_words(first_late[1])} after)")
    return {f"{name}: {'; '.join(faults)}" if faults else name: not faults}


def _one_a_message(log: logs.LogFile, reference: logs.LogFile) -> dict[str, bool]:
    """The log's sequence numbers against the simulation's: each once, none missing, none the capture lacks."""
    expected, lo = _seqs_seen(reference)
    seen = np.zeros_like(expected)
    twice = unknown = 0
    first_twice = first_unknown = None
    for part in logs.iter_records(log, PART):
        s = part["seq"].astype(np.int64) - lo
        known = (s >= 0) & (s < len(expected))
        known[known] = expected[s[known]]
        if not known.all():
            unknown += int(np.count_nonzero(~known))
            first_unknown = first_unknown if first_unknown is not None else int(part["seq"][np.argmin(known)])
        values, counts = np.unique(s[known], return_counts=True)
        again = values[(counts > 1) | seen[values]]
        if len(again):
            twice += len(again)
            first_twice = first_twice if first_twice is not None else int(again[0] + lo)
        seen[values] = True
    missing = np.flatnonzero(expected & ~seen)
    faults = []
    if len(missing):
        faults.append(f"{len(missing):,} of {int(expected.sum()):,} messages have no record (first: seq "
                      f"{int(missing[0]) + lo:,})")
    if twice:
        faults.append(f"{twice:,} recorded more than once (first: seq {first_twice:,})")
    if unknown:
        faults.append(f"{unknown:,} records of a sequence number the capture does not have (first: seq "
                      f"{first_unknown:,})")
    return {f"{ONE_A_MESSAGE}: {'; '.join(faults)}" if faults else ONE_A_MESSAGE: not faults}


def _seqs_seen(reference: logs.LogFile) -> tuple[np.ndarray, int]:
    """The simulation's sequence numbers as a mask over [lo, hi], and lo."""
    lo, hi = None, None
    for part in logs.iter_records(reference, PART):
        if len(part):
            lo = int(part["seq"].min()) if lo is None else min(lo, int(part["seq"].min()))
            hi = int(part["seq"].max()) if hi is None else max(hi, int(part["seq"].max()))
    if lo is None:
        return np.zeros(0, bool), 0
    mask = np.zeros(hi - lo + 1, bool)
    for part in logs.iter_records(reference, PART):
        mask[part["seq"].astype(np.int64) - lo] = True
    return mask, lo
