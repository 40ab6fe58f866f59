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

from ..analysis import logs


def answered_sequences(log: Path) -> np.ndarray:
    """Every sequence number the server sent in an answer packet (not those its fault policy dropped), sorted."""
    if not log.is_file():
        return np.zeros(0, np.uint64)
    r = logs.read_log(log, logs.KIND_REQUEST).records
    sent = r[((r["flags"] & logs.REQUEST_ANSWER) != 0) & ((r["flags"] & logs.REQUEST_ANSWER_DROPPED) == 0)]
    return np.unique(logs.expand_runs(sent["seq"], sent["count"])).astype(np.uint64)


def of(sidecar: dict[str, Any] | None, lines: dict[str, list[int]] | None, log: Path,
       server: dict[str, Any] | None) -> dict[str, Any]:
    """Each message lost on the wire and its route back: lost on line A only or on B only (the other line carried
    it), or on every line (the capture's own faults, or both lines' at send time): then only the re-request
    server can bring it back. And the server's own counts."""
    seqs = (sidecar or {}).get("sequences", {})
    capture_lost = np.array([*seqs.get("dropped", []), *seqs.get("truncated", [])], dtype=np.uint64)
    lines = lines or {}
    on_a = np.union1d(capture_lost, np.array(lines.get("a", []), dtype=np.uint64))
    two = "b" in lines
    on_b = np.union1d(capture_lost, np.array(lines.get("b", []), dtype=np.uint64)) if two else on_a
    everywhere = np.intersect1d(on_a, on_b)
    lost = np.union1d(on_a, on_b)
    back = np.isin(everywhere, answered_sequences(log)) if server is not None else np.zeros(everywhere.size, bool)
    never = everywhere[~back]
    server = server or {}
    return {
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
