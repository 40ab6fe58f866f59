"""What several commands print: a run's one-line result and its verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import rundir


class UserError(RuntimeError):
    """Bad input from the user: printed without a traceback, exit 2."""


def run_line(summary: dict[str, Any]) -> str:
    """The counts of a run, hop by hop, on one line."""
    rec = summary.get("reconciliation") or {}
    transport = summary["transport"]
    hop = rec.get(transport, {})
    check = rec.get("bbo_check")
    if check:  # a gateway brought through its contract: what its output showed, seen from outside
        parts = [f"{rec['loss']['expected_messages']:,} messages sent"]
        if transport == "udp" and hop:
            parts.append(f"{hop['sender']} sent {hop['sender_sent']:,} / kernel delivered {hop['kernel_delivered']:,} "
                         f"dropped {hop['kernel_dropped']:,}")
        parts.append(f"{check['events']:,} BBO events received of {check['reference_events']:,} "
                     f"(simulation); {check['missing']} missing, {check['extra']} extra, {check['wrong']} wrong, "
                     f"{check['malformed_lines']} malformed lines")
        return "; ".join(parts)
    parts = [f"{rec.get('received', 0):,} messages applied"]
    if transport == "udp" and hop.get("source") == "af_xdp":
        parts.append(f"{hop['sender']} sent {hop['sender_sent']:,} / XDP hook took {hop['hook_feed_frames']:,} "
                     f"({hop['attach_mode']}, {hop['bind_mode']}), socket dropped {hop['socket_dropped']:,}")
    elif transport == "udp" and hop:
        parts.append(f"{hop['sender']} sent {hop['sender_sent']:,} / kernel delivered {hop['kernel_delivered']:,} "
                     f"dropped {hop['kernel_dropped']:,}")
    if transport == "serial" and hop:
        util = hop.get("line_utilisation")
        parts.append(f"{hop['lines_good']:,} good lines, {hop['lines_bad']} bad"
                     + (f", line utilisation {util * 100:.2f}%" if util is not None else ""))
    if rec:
        parts.append(f"{rec.get('missing', 0)} missing, {rec.get('rejected', 0)} rejected, "
                     f"{rec.get('duplicates', 0)} duplicates")
    parts.append(f"{summary.get('bbo', {}).get('events', 0):,} BBO events")
    return "; ".join(parts)


def verdict_of(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    summary = rundir.read_json(run_dir / "summary.json")
    return summary, summary["verdict"]
