"""What several commands print: a run's one-line result and its verdict, and what logs they read did not hold
whole."""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .. import rundir
from ..runs.verdict import black_box_events, flood_words, messages_verb


class UserError(RuntimeError):
    """Bad input from the user: printed without a traceback, exit 2."""


def percentage(most: float | None = None) -> Callable[[str], float]:
    """An argparse type: a percentage above 0, finite, and at most `most` when given (nan compares false with every
    figure: a gate at nan % could never fail, and one below 0 would fail every unchanged build)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
        if not (math.isfinite(value) and 0 < value <= (most if most is not None else math.inf)):
            raise argparse.ArgumentTypeError(f"{text!r}: a percentage above 0"
                                             + (f", at most {most:g}" if most is not None else ", finite"))
        return value
    return parse


def at_least(least: int) -> Callable[[str], int]:
    """An argparse type: an integer of `least` or more."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: not an integer") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{text!r}: {least} or more")
        return value
    return parse


def given_path(text: str) -> Path:
    """An argparse type: a path that is not empty. `--out "$OUT"` with OUT unset is an empty path, which Path takes
    for the current folder (or a command for its default): said, not written somewhere unasked."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: an empty path (an unset variable?)")
    return Path(text)


def folder_path(text: str) -> Path:
    """given_path for a folder an output goes into: refused when something other than a folder is there (a file in
    the way had ended some commands in a bare errno line, others only once their first run was made)."""
    path = given_path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: not a folder (a file is there); name a folder, or one to make")
    return path


@contextmanager
def logs_not_whole() -> Iterator[list[str]]:
    """What the logs read inside did not hold whole (a tail cut off, a log never closed: TruncatedLogWarning),
    collected for the command to say, in place of Python's warning lines; other warnings pass on."""
    from ..analysis.logs import TruncatedLogWarning
    cut: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield cut
    for w in caught:
        if issubclass(w.category, TruncatedLogWarning):
            cut.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def partial_output(cut: list[str], what: str, run_dir: Path | None = None, log: str = "") -> int:
    """Exit status 1, each reason said, when `what` was made from logs not read whole, or (run_dir and log, "bbo"
    or "depth", given) from a log that no longer holds the events its run recorded; 0 otherwise: an output made from
    part of a log, or from another log than the run's, is never handed on as the run's whole."""
    for reason in dict.fromkeys(cut):
        print(f"itchbench: {what} is partial: {reason}", file=sys.stderr)
    from ..analysis import logs
    summary = run_dir / "summary.json" if run_dir is not None else None
    changed = logs.changed_since_run(run_dir, rundir.read_json(summary), only=log) \
        if log and summary is not None and summary.is_file() and not cut else ""
    if changed:
        print(f"itchbench: {what} is not the run's: {changed}", file=sys.stderr)
    return 1 if cut or changed else 0


def _no_socket_words(hop: dict[str, Any]) -> str:
    """The datagrams the kernel had no socket for, when there were any: with delivered and dropped, every one sent."""
    n = hop.get("kernel_no_socket", 0)  # a summary written before it was counted says nothing of it, as it did
    return f", no socket {n:,}" if n else ""


def _written_back_words(hop: dict[str, Any]) -> str:
    """What the gateway wrote back on its serial line, when it wrote any (serial-replay took it and dropped it)."""
    back = hop.get("bytes_written_back", 0)
    return (f"; the gateway wrote {back:,} bytes back on its line (dropped, as a serial line's unread receiver "
            "drops them)") if back else ""


def run_line(summary: dict[str, Any]) -> str:
    """The counts of a run, hop by hop, on one line."""
    rec = summary.get("reconciliation") or {}
    transport = summary["transport"]
    hop = rec.get(transport, {})
    check = rec.get("bbo_check")
    if (summary.get("gateway") or {}).get("started") is False:
        return "the gateway did not run"
    if not rec and "left_in_logs" in summary:  # it ended without its counters: only what its logs hold is known
        left = summary["left_in_logs"]
        held = [f"{left[key]:,} {words}" for key, words in (("messages", "messages"), ("bbo_events", "BBO events"))
                if key in left]
        return ("nothing reconciled: the gateway wrote no counters"
                + (f"; its logs hold {' and '.join(held)} to where it stopped" if held else ""))
    if check:  # a gateway brought through its contract: what its output showed, seen from outside
        stopped = bool(hop.get("sender_stopped"))  # the run stopped its sender before the end
        parts = [f"{rec['loss']['expected_messages']:,} messages "
                 + ("in the capture, the sender stopped before its end" if stopped else messages_verb(transport))]
        if transport == "udp" and hop:
            parts.append(f"{hop['sender']} sent {hop['sender_sent']:,} / kernel delivered {hop['kernel_delivered']:,} "
                         f"dropped {hop['kernel_dropped']:,}{_no_socket_words(hop)}")
        if transport == "serial" and hop:
            parts.append((f"serial-replay sent {hop['lines_sent']:,} lines" if hop["lines_sent"] is not None else
                          "serial-replay did not say what it sent") + _written_back_words(hop))
        not_served = (summary.get("transport_details") or {}).get("subscribers_not_served")
        if not_served:
            parts.append(f"subscribers none served: {not_served}")
        parts.append(f"{black_box_events(summary, check)} received of {check['reference_events']:,} "
                     f"(simulation); {check['missing']:,} missing, {check['extra']:,} extra, {check['wrong']:,} wrong, "
                     f"{check.get('out_of_order', 0):,} out of order, "
                     f"{check['malformed_lines']:,} malformed lines")
        if check.get("flood"):  # the figures above are of what was judged of it
            parts.append(flood_words(check["flood"]))
        res, perf = summary.get("resources") or {}, summary.get("performance") or {}
        if perf.get("messages_per_s"):
            parts.append(f"{perf['elapsed_s'] * 1e3:,.1f} ms start to exit, {perf['messages_per_s']:,.0f} messages/s")
        if res.get("cpu_ns_per_message"):
            parts.append(f"CPU {res['cpu_ns_per_message']:,.0f} ns a message, peak RSS {res['max_rss_kib'] / 1024:,.1f} MiB")
        return "; ".join(parts)
    parts = [f"{rec.get('received', 0):,} messages applied"]
    if transport == "udp" and hop.get("source") == "af_xdp":
        parts.append(f"{hop['sender']} sent {hop['sender_sent']:,} / XDP hook took {hop['hook_feed_frames']:,} "
                     f"({hop['attach_mode']}, {hop['bind_mode']}), socket dropped {hop['socket_dropped']:,}")
    elif transport == "udp" and hop:
        parts.append(f"{hop['sender']} sent {hop['sender_sent']:,} / kernel delivered {hop['kernel_delivered']:,} "
                     f"dropped {hop['kernel_dropped']:,}{_no_socket_words(hop)}")
    if transport == "serial" and hop:
        util = hop.get("line_utilisation")
        parts.append(f"{hop['lines_good']:,} good lines, {hop['lines_bad']} bad"
                     + (f", line utilisation {util * 100:.2f}%" if util is not None else "") + _written_back_words(hop))
    if rec:
        parts.append(f"{rec.get('missing', 0)} missing, {rec.get('rejected', 0)} rejected, "
                     f"{rec.get('duplicates', 0)} duplicates")
    parts.append(f"{summary.get('bbo', {}).get('events', 0):,} BBO events")
    return "; ".join(parts)


def verdict_of(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A finished run's summary and what is said of it (runs/verdict.py as_said)."""
    from ..runs.verdict import as_said
    summary = rundir.read_json(run_dir / "summary.json")
    return summary, as_said(run_dir, summary)
