"""What became of the messages the wire lost, in a run with the exchange's re-request server (docs/exchange.md):
each message the faults took away (the capture's fault sidecar: dropped and truncated packets' messages) is
followed to the server's answers (its request log). The verdict (runs/verdict.py) calls a run RECOVERED only
when every lost message was answered and the gateway's BBO equals the simulation of the whole session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..analysis import logs


def answered_sequences(log: Path) -> np.ndarray:
    """Every sequence number the server sent in an answer packet (not those its fault policy dropped), sorted."""
    if not log.is_file():
        return np.zeros(0, np.uint64)
    r = logs.read_log(log, logs.KIND_REQUEST).records
    sent = r[((r["flags"] & logs.REQUEST_ANSWER) != 0) & ((r["flags"] & logs.REQUEST_ANSWER_DROPPED) == 0)]
    counts = sent["count"].astype(np.int64)
    if not counts.sum():
        return np.zeros(0, np.uint64)
    # Each packet's run of sequences, laid end to end: start repeated, plus its offset within the run.
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.unique(np.repeat(sent["seq"].astype(np.uint64), counts) + offsets.astype(np.uint64))


def of(sidecar: dict[str, Any] | None, log: Path, server: dict[str, Any]) -> dict[str, Any]:
    """Lost on the wire, answered by the server, never answered; and the server's own counts."""
    seqs = (sidecar or {}).get("sequences", {})
    lost = np.unique(np.array([*seqs.get("dropped", []), *seqs.get("truncated", [])], dtype=np.uint64))
    back = np.isin(lost, answered_sequences(log))
    never = lost[~back]
    return {
        "lost_on_wire": int(lost.size), "answered_by_server": int(back.sum()), "never_answered": int(never.size),
        "first_never_answered": int(never[0]) if never.size else None,
        "requests": int(server.get("requests", 0)), "requests_by_outcome": server.get("by_outcome", {}),
        "answer_packets": int(server.get("answer_packets", 0)), "answers_dropped": int(server.get("answers_dropped", 0)),
        "messages_answered": int(server.get("messages_answered", 0)),
        "socket_dropped": int(server.get("socket_dropped", 0)),
    }
