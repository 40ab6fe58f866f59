"""What became of the messages the wire lost, in a run that can recover them (docs/exchange.md): a B line that
sends the session again, the exchange's re-request server, or both. Each message the faults took away — the
capture's own (its fault sidecar: dropped and truncated packets) and each line's at send time (udp-replay's line
faults) — is followed to its route back: the other line, or the server's answers (its request log). The verdict
(runs/verdict.py) calls a run RECOVERED only when every message lost on every line was answered and the gateway's
BBO equals the simulation of the whole session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import pandas as pd

from ..analysis import hops, logs


def answered_sequences(log: Path) -> np.ndarray:
    """Every sequence number the server sent in an answer packet (not those its fault policy dropped), sorted."""
    if not log.is_file():
        return np.zeros(0, np.uint64)
    r = logs.read_log(log, logs.KIND_REQUEST).records
    sent = r[((r["flags"] & logs.REQUEST_ANSWER) != 0) & ((r["flags"] & logs.REQUEST_ANSWER_DROPPED) == 0)]
    return np.unique(logs.expand_runs(sent["seq"], sent["count"])).astype(np.uint64)


def _gaps(lost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs of consecutive sequence numbers: (first of each, one past the last of each)."""
    if not lost.size:
        return lost, lost
    breaks = np.flatnonzero(np.diff(lost.astype(np.int64)) != 1) + 1
    return lost[np.r_[0, breaks]], lost[np.r_[breaks - 1, lost.size - 1]] + 1


def held_after_gaps(gaps_end: np.ndarray, events: pd.DataFrame, send_log: Path) -> dict[str, float] | None:
    """How long a gap held the stream back, seen from outside: for each gap, the first BBO event after it (the
    first with a seq at or past the gap's end), its time from the actual send of the packet that carried its
    message to the collector's receipt — ns, percentiles over the gaps. A gateway that holds messages behind a gap
    until it is filled shows the wait there; one that skips ahead shows only its usual latency."""
    if not gaps_end.size or not send_log.is_file() or events.empty:
        return None
    seq, _, sent = hops.send_stamps(send_log)
    ev = events[events["t_recv"] > 0].sort_values("seq", kind="stable")
    e_seq, e_t = ev["seq"].to_numpy(np.int64), ev["t_recv"].to_numpy(np.int64)
    at = np.searchsorted(e_seq, gaps_end.astype(np.int64))
    at = at[at < e_seq.size]
    first_seq = e_seq[at]
    where = np.searchsorted(seq, first_seq)
    found = (where < seq.size) & (seq[np.minimum(where, max(seq.size - 1, 0))] == first_seq) if seq.size else \
        np.zeros(first_seq.size, bool)
    held = e_t[at][found] - sent[where[found]]
    if not held.size:
        return None
    return {"gaps": int(gaps_end.size), "measured": int(held.size), "p50": float(np.percentile(held, 50)),
            "p99": float(np.percentile(held, 99, method="higher")), "max": float(held.max())}


def gap_ends(sidecar: dict[str, Any] | None, lines: dict[str, list[int]] | None) -> np.ndarray:
    """One past the last message of each gap the wire made on any line."""
    seqs = (sidecar or {}).get("sequences", {})
    lost = np.array([*seqs.get("dropped", []), *seqs.get("truncated", []), *(lines or {}).get("a", []),
                     *(lines or {}).get("b", [])], dtype=np.uint64)
    return _gaps(np.unique(lost))[1]


def published_events(latency_log: Path) -> pd.DataFrame | None:
    """White box: the gateway's BBO events as it handed each to its publisher (the latency log's published stamp,
    ns on the senders' clock), in the shape held_after_gaps takes: seq, t_recv."""
    if not latency_log.is_file():
        return None
    log = logs.read_latency(latency_log)
    r = logs.in_ns(log, log.records)
    published = logs.stamp(r, "t_published")
    keep = ((r["flags"] & logs.FLAG_BBO_EVENT) != 0) & (published > 0)
    return pd.DataFrame({"seq": r["seq"][keep].astype(np.int64), "t_recv": published[keep]})


def time_to_recover(ends: np.ndarray, latency_log: Path) -> dict[str, float] | None:
    """White box (the built-in gateway's latency log): for each gap, from the kernel's receipt of the first message
    after it (the packet that showed the gap) to the book stamp of the gap's last message — how long the gap took
    to fill, in ns, percentiles over the gaps. 0 when the gap was filled before that packet came."""
    if not ends.size or not latency_log.is_file():
        return None
    log = logs.read_latency(latency_log)
    r = logs.in_ns(log, log.records)
    order = np.argsort(r["seq"], kind="stable")
    seq = r["seq"][order].astype(np.int64)
    kernel, book = logs.stamp(r, "t_kernel")[order], logs.stamp(r, "t_book")[order]
    if not seq.size or not kernel.any() or not book.any():
        return None
    ends = ends.astype(np.int64)
    after = np.minimum(np.searchsorted(seq, ends), seq.size - 1)
    last = np.minimum(np.searchsorted(seq, ends - 1), seq.size - 1)
    found = (seq[after] == ends) & (seq[last] == ends - 1)
    took = np.maximum(book[last[found]] - kernel[after[found]], 0)
    if not took.size:
        return None
    return {"gaps": int(ends.size), "measured": int(took.size), "p50": float(np.percentile(took, 50)),
            "p99": float(np.percentile(took, 99, method="higher")), "max": float(took.max())}


def of(sidecar: dict[str, Any] | None, lines: dict[str, list[int]] | None, log: Path,
       server: dict[str, Any] | None, events: pd.DataFrame | None = None,
       send_log: Path | None = None, after: int = 0) -> dict[str, Any]:
    """Each message lost on the wire and its route back: lost on line A only or on B only (the other line carried
    it), or on every line (the capture's own faults, or both lines' at send time): then only the re-request
    server can bring it back. And the server's own counts."""
    seqs = (sidecar or {}).get("sequences", {})
    capture_lost = np.array([*seqs.get("dropped", []), *seqs.get("truncated", [])], dtype=np.uint64)
    lines = lines or {}
    on_a = np.union1d(capture_lost, np.array(lines.get("a", []), dtype=np.uint64))
    two = "b" in lines
    on_b = np.union1d(capture_lost, np.array(lines.get("b", []), dtype=np.uint64)) if two else on_a
    if after:  # a late join: what the snapshot covered was never the gateway's to receive
        on_a, on_b = on_a[on_a > after], on_b[on_b > after]
    everywhere = np.intersect1d(on_a, on_b)
    lost = np.union1d(on_a, on_b)
    back = np.isin(everywhere, answered_sequences(log)) if server is not None else np.zeros(everywhere.size, bool)
    never = everywhere[~back]
    server = server or {}
    _, gap_ends = _gaps(lost)
    held = held_after_gaps(gap_ends, events, send_log) if events is not None and send_log is not None else None
    return {
        "gaps": int(gap_ends.size), "held_after_gaps_ns": held,
        "lines": 2 if two else 1, "lost_on_wire": int(lost.size),
        "lost_on_a_only": int(np.setdiff1d(on_a, on_b).size), "lost_on_b_only": int(np.setdiff1d(on_b, on_a).size),
        "lost_on_every_line": int(everywhere.size), "from_the_other_line": int(lost.size - everywhere.size),
        "answered_by_server": int(back.sum()), "never_answered": int(never.size),
        "first_never_answered": int(never[0]) if never.size else None, "server": bool(server),
        "requests": int(server.get("requests", 0)), "requests_by_outcome": server.get("by_outcome", {}),
        "answer_packets": int(server.get("answer_packets", 0)), "answers_dropped": int(server.get("answers_dropped", 0)),
        "messages_answered": int(server.get("messages_answered", 0)),
        "socket_dropped": int(server.get("socket_dropped", 0)),
    }
