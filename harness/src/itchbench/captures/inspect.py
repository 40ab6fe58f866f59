"""What a capture holds, from itch-inspect: its UDP flows and which one is
the feed (docs/feeds.md), per-type counts, framing, sequence accounting and
rejections; and the check that a file is a capture with one feed, made
before any run directory exists."""

from __future__ import annotations

import csv
import functools
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from .. import paths, tools
from ..tools import run_tool
from .remembered import remembered


class CaptureError(RuntimeError):
    """The capture cannot be used (missing, empty, not a capture): no run is made."""


def check_capture(capture: Path, feed: str = "") -> Path:
    """The capture's resolved path; CaptureError if it cannot be used, or if
    it has no single feed (two MoldUDP64 sessions and no `feed` chosen, or a
    `feed` that is not in it)."""
    if not capture.exists():
        raise CaptureError(f"capture not found: {capture}")
    if capture.is_dir():
        raise CaptureError(f"{capture} is a directory, not a capture")
    if not capture.is_file():  # a pipe (`<(zcat day.pcap.gz)`), a device: its size said 0 bytes, an empty capture
        raise CaptureError(f"{capture}: not a regular file (a pipe or a device): a run reads its capture more than "
                           "once (its digest, its count, the gateway's read), so it must be a file; a .gz or .zst "
                           "file is read as it is")
    if capture.stat().st_size == 0:
        raise CaptureError(f"{capture}: empty capture (0 bytes)")
    if capture_kind(capture) == "pcap":
        facts = facts_of(capture, feed)  # the feed is chosen (or refused) from the capture's flows
        if not facts["flows"]:  # else a run of nothing: LOSSLESS, 0 messages, which checked nothing
            raise CaptureError(f"{capture}: {no_feed(facts['not_feed'])}: no feed to replay")
    elif feed:
        raise CaptureError(f"{capture}: a binary ITCH file has no UDP flows: a feed ({feed}) applies to pcap "
                           "captures only")
    return capture.resolve()


def no_feed(not_feed: dict[str, int]) -> str:
    """What a pcap with no UDP datagram holds instead, from its not-the-feed counts."""
    skipped = ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in not_feed.items() if n)
    return "no UDP datagram in the capture" + (f" (its packets: {skipped})" if skipped else " (no packets)")


@functools.lru_cache(maxsize=64)
def _kind(capture: str, mtime_ns: int) -> str:
    proc = subprocess.run([str(paths.tool("itch-inspect")), capture, "--check"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CaptureError(tools.said("itch-inspect", proc.stderr))
    return proc.stdout.strip()


def capture_kind(capture: Path) -> str:
    """"pcap" or "itch", told by content without reading the capture through (CaptureError if neither). Asked once
    a file, however its path is spelled: a run checks the path it was given and then the resolved one (itch-inspect
    twice before the gateway started, 4-7 ms each)."""
    return _kind(str(capture.resolve()), capture.stat().st_mtime_ns)


def inspect_capture(capture: Path, feed: str = "") -> dict[str, Any]:
    """itch-inspect --json: flows and feed, per-type counts, framing and
    sequence accounting. CaptureError when there is no single feed."""
    args: list[str | Path] = [capture, "--json"]
    if feed:
        args += ["--feed", feed]
    proc = subprocess.run([str(paths.tool("itch-inspect")), *map(str, args)], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise CaptureError(tools.said("itch-inspect", proc.stderr or proc.stdout))
    return json.loads(proc.stdout)


def rejections(report: dict[str, Any]) -> dict[str, int]:
    """Every rejection counted in an itch-inspect or itch-gateway report, by reason."""
    dec, mold, cap = report["decode"], report["mold"], report["capture_stats"]
    return {
        "unknown_type": dec["rejected_unknown_type"],
        "wrong_length": dec["rejected_wrong_length"],
        "empty_message": dec["rejected_empty"],
        "mold_too_short": mold["rejected_too_short"],
        "mold_length_overrun": mold["rejected_length_overrun"],
        "mold_count_mismatch": mold["rejected_count_mismatch"],
        "mold_sequence_overflow": mold.get("rejected_sequence_overflow", 0),
        "bad_frames": cap["bad_frames"],
    }


def message_sequences(capture: Path) -> list[int]:
    """Sequence number of every message handed on in sequence order, in capture order."""
    return listed_messages(capture)[0].tolist()


def listed_messages(capture: Path) -> tuple[np.ndarray, np.ndarray]:
    """Every message itch-inspect hands on in sequence order (late and duplicated ones are not): its sequence
    number, and whether it failed validation."""
    import pandas as pd

    proc = run_tool("itch-inspect", [capture, "--list"], ok_codes=(0, 1))
    if not proc.stdout:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    # One line a message, "SEQ TYPE" or "SEQ TYPE rejected", its type one word whatever the byte: read by the
    # C parser (a day lists tens of millions), no quoting.
    listed = pd.read_csv(io.StringIO(proc.stdout), sep=" ", header=None, names=["seq", "type", "flag"],
                         dtype={"seq": np.int64, "type": str, "flag": str}, quoting=csv.QUOTE_NONE,
                         keep_default_na=False)
    return listed["seq"].to_numpy(), (listed["flag"] == "rejected").to_numpy()


@functools.lru_cache(maxsize=32)
def _facts(capture: str, mtime_ns: int, feed: str) -> dict[str, Any]:
    return remembered(Path(capture), f"inspect-v7-{feed}", lambda: _read_facts(Path(capture), feed),
                      tool=paths.tool("itch-inspect"))


def _read_facts(capture: Path, feed: str) -> dict[str, Any]:
    rep = inspect_capture(capture, feed)
    cap = rep["capture_stats"]
    return {
        "kind": rep["kind"],
        "feed": cap["feed"],
        "not_feed": cap["not_feed"],
        "flows": rep["flows"],
        "datagrams": rep["capture_stats"]["udp_datagrams"],
        "messages": rep["mold"]["messages"] if rep["kind"] == "pcap" else rep["capture_stats"]["itch_messages"],
        # Packets that carry no message: what may follow a session's last message (a binary ITCH file has none).
        "heartbeats": rep["mold"]["heartbeats"] if rep["kind"] == "pcap" else 0,
        "ends_of_session": rep["mold"]["end_of_session"] if rep["kind"] == "pcap" else 0,
        # Messages its session numbered that the capture does not hold (its own sequence gaps), and those it holds
        # after a later one (late: a sequencer reading it in order discards them). A binary ITCH file's numbers are
        # positions: none of either.
        "missing_messages": rep["sequence"]["missing_messages"] if rep["kind"] == "pcap" else 0,
        "late_messages": rep["sequence"]["reordered_messages"] if rep["kind"] == "pcap" else 0,
        "duplicate_messages": rep["sequence"]["duplicate_messages"] if rep["kind"] == "pcap" else 0,
        # What of it fails validation, every gateway's to reject, counted by the gateway's own keys (gateway.json's
        # decode.rejected_* and mold.rejected_*); the messages of a rejected packet are among the missing ones.
        "rejected_messages": {k.removeprefix("rejected_"): n for k, n in rep["decode"].items()
                              if k.startswith("rejected_")},
        "rejected_packets": {k.removeprefix("rejected_"): n for k, n in rep["mold"].items()
                             if k.startswith("rejected_")} if rep["kind"] == "pcap" else {},
        "packets": rep["mold"]["packets"] if rep["kind"] == "pcap" else 0,
        "linktype": rep["capture_stats"]["linktype"],
        "complete": rep["complete"],
        "error": rep["error"],  # where and why it ends early (complete false)
        "first_timestamp_ns": rep["first_timestamp_ns"],
        "max_timestamp_ns": rep["max_timestamp_ns"],
    }


def gateway_feed_args(capture: Path, feed: str) -> list[str]:
    """The gateway's --feed for this capture: named only when the capture has other flows. Otherwise the
    gateway's own default picks the same feed, and the gateways of revisions older than feed selection
    (itchbench compare, bisect) still run the capture."""
    if capture_kind(capture) != "pcap":
        return []
    facts = facts_of(capture, feed)
    return ["--feed", facts["feed"]] if facts["not_feed"]["other_flow"] else []


def facts_of(capture: Path, feed: str = "") -> dict[str, Any]:
    """What the capture's feed holds (kind, feed, datagrams, messages, link
    type) and what is not the feed, cached per file version and feed."""
    return _facts(str(capture), capture.stat().st_mtime_ns, feed)
