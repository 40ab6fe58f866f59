"""Deterministic fault injection (replay/tools/itch_faults.cpp) and the exact
reconciliation of a run with the faults it was given.

`itchbench faults IN OUT --seed N …` writes OUT and OUT.faults.json, the
sidecar: integer counts per kind and the sequence numbers affected. Any run
of a capture that has a sidecar beside it is reconciled with it, kind by
kind (docs/faults.md):

    messages not applied   = dropped + truncated + late (reordered) messages
    gateway duplicates     = duplicated messages
    gateway late discards  = reordered messages
    gateway packet rejects = truncated packets
    gateway message rejects = corrupted messages that fail validation
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from .. import atomic
from ..analysis import logs
from ..tools import run_tool
from .compressed import plain_copy
from .fixtures import sha256_of
from .inspect import CaptureError, capture_kind
from .loopback import cache_dir

SIDECAR_SUFFIX = ".faults.json"
OPTIONS = ("drop", "duplicate", "reorder", "truncate", "corrupt")


def sidecar_path(capture: Path) -> Path:
    return capture.with_name(capture.name + SIDECAR_SUFFIX)


# What a sidecar holds (docs/faults.md, "The sidecar"): its counts, whole numbers 0 or more; `sequences`, lists of
# sequence numbers; `source`, when there, the capture it was made from; `capture_sha256` (a faulted capture's) or
# `declared.capture_sha256` (a declared one's), when there, the capture it describes.
COUNTS = ("seed", "packets_in", "packets_out", "messages_in", "passed_unparsed", "dropped_packets", "dropped_messages",
          "duplicated_packets", "duplicated_messages", "reordered_packets", "reordered_messages", "truncated_packets",
          "truncated_messages", "corrupted_packets", "corrupted_messages_rejected", "corrupted_messages_decoded")
SEQUENCES = ("dropped", "duplicated", "reordered", "truncated", "corrupted_rejected", "corrupted_decoded")


def sidecar_of(capture: Path) -> dict[str, Any] | None:
    """The fault sidecar beside capture, None when there is none. CaptureError for one that is not a sidecar (not
    JSON, a count or a list of sequence numbers missing or of another type): a run held to it would hold the
    gateway to nothing, or end in a traceback."""
    path = sidecar_path(capture)
    if not path.is_file():
        return None
    try:
        sidecar = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        wrong = f"not JSON ({e})"
    else:
        wrong = _not_a_sidecar(sidecar)
    if wrong:
        raise CaptureError(f"{path}: not a fault sidecar: {wrong}; make {capture.name} again with itchbench faults, "
                           "or remove the sidecar to run it as a capture of its own")
    return sidecar


def _not_a_sidecar(sidecar: Any) -> str:
    """What makes a JSON value no sidecar ("" when it is one)."""
    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if not isinstance(sidecar, dict):
        return "not a JSON object"
    for key in COUNTS:
        if not whole(sidecar.get(key)):
            return f"'{key}' is {'missing' if key not in sidecar else repr(sidecar[key])}, not a whole number 0 or more"
    seqs = sidecar.get("sequences")
    if not isinstance(seqs, dict):
        return "'sequences' is missing or not an object"
    for key in SEQUENCES:
        if not (isinstance(seqs.get(key), list) and all(whole(v) for v in seqs[key])):
            return f"sequences.{key} is missing or not a list of sequence numbers"
    source = sidecar.get("source")
    if source is not None and not (isinstance(source, dict) and isinstance(source.get("path"), str)
                                   and isinstance(source.get("sha256"), str)):
        return "'source' is not an object with a path and a sha256"
    if not isinstance(sidecar.get("declared", {}), dict) or not isinstance(_described(sidecar) or "", str):
        return "the digest of the capture it describes is not a string"
    return ""


def _described(sidecar: dict[str, Any]) -> Any:
    """The digest of the capture a sidecar describes: a faulted capture's, or a declared one's; None when it names
    none."""
    return sidecar.get("capture_sha256") or (sidecar.get("declared") or {}).get("capture_sha256")


def check_describes(capture: Path, sidecar: dict[str, Any]) -> None:
    """CaptureError when the sidecar names the capture it describes by its digest and the capture is not that one
    any more (recorded again, or faulted again without its sidecar): a run would be held to another capture's
    faults, and a right gateway judged NOT BALANCED by them. A sidecar that names no digest (written by itch-faults
    itself, or before itchbench recorded one) is not checked."""
    described = _described(sidecar)
    if not described or (now := sha256_of(capture)) == described:
        return
    again = ("declare its faults again: remove the sidecar, then itchbench inspect --declare"
             if sidecar.get("declared") else
             "make it again with itchbench faults, or remove the sidecar to run it as a capture of its own")
    raise CaptureError(f"{sidecar_path(capture)} describes another capture than {capture.name} is now (sha256 "
                       f"{described[:16]}…, the capture's {now[:16]}…): a run would be held to another capture's "
                       f"faults; {again}")


def inject(src: Path, dst: Path, *, seed: int, drop: float = 0, duplicate: float = 0, reorder: float = 0,
           reorder_window: int = 4, truncate: float = 0, corrupt: float = 0,
           burst_drop: str | None = None, reject: np.ndarray | None = None) -> dict[str, Any]:
    """Write dst (and its sidecar) from src; returns the sidecar. reject: sequence numbers of messages to damage
    so that they are rejected (their type byte a digit), besides what is drawn. CaptureError for a binary ITCH
    file, whose messages are in no packets (itch-faults said only that it could not read it)."""
    if capture_kind(src) == "itch":
        raise CaptureError(f"{src}: a binary ITCH file, whose messages travel in no packets: faults are put on "
                           "MoldUDP64 packets; packetize it first (build/replay/itch2pcap IN --out IN.pcap) and "
                           "fault the pcap")
    args: list[str | Path] = [src, dst, "--seed", str(seed), "--drop", str(drop), "--duplicate", str(duplicate),
                              "--reorder", str(reorder), "--reorder-window", str(reorder_window),
                              "--truncate", str(truncate), "--corrupt", str(corrupt)]
    if burst_drop:
        args += ["--burst-drop", burst_drop]
    listed = None
    if reject is not None:  # the sidecar names them again (sequences.corrupted_rejected): the list goes
        listed = dst.with_name(dst.name + ".reject")
        listed.write_text("".join(f"{int(s)}\n" for s in reject))
        args += ["--reject-seqs", listed]
    try:
        run_tool("itch-faults", args)
    finally:
        if listed is not None:
            listed.unlink(missing_ok=True)
    sidecar = sidecar_of(dst)
    assert sidecar is not None, "itch-faults wrote no sidecar"
    # The whole session it was made from: what a re-request server or a snapshot serves in a run of dst.
    sidecar["source"] = {"path": str(src.resolve()), "sha256": sha256_of(src)}
    sidecar["capture_sha256"] = sha256_of(dst)  # what it describes: a run of dst changed since is refused
    atomic.write_text(sidecar_path(dst), json.dumps(sidecar, indent=1) + "\n")
    return sidecar


def declare(capture: Path, feed: str = "") -> dict[str, Any] | None:
    """Write the sidecar of a capture's own faults (`itchbench inspect --declare`): what reading it in order does
    not apply — messages of its session it does not hold (its gaps, and the messages of its malformed packets),
    those it holds late —, the duplicates it holds, its malformed packets and messages. Counted by itch-inspect,
    whose sequence accounting is the gateway's own code, so a gateway's counters can equal them exactly; the
    sequence numbers listed (the first one lost or rejected starts the stale flag) from the messages it hands on in
    order: `dropped` lists every number of its range not applied (missing or late), `corrupted_rejected` those that
    fail validation; duplicates are counted, not listed. None when there is nothing to declare. CaptureError for a
    capture that has a sidecar already, ends early, or is a binary ITCH file (no packets, no gaps)."""
    from .inspect import inspect_capture, listed_messages, rejections
    side = sidecar_path(capture)
    if side.exists():
        raise CaptureError(f"{side} exists: a capture's faults are declared once (remove it to declare them again)")
    if capture_kind(capture) == "itch":
        raise CaptureError(f"{capture}: a binary ITCH file numbers its messages by their place: it has no gaps, "
                           "duplicates or late messages to declare")
    rep = inspect_capture(capture, feed)
    if not rep["complete"]:
        raise CaptureError(f"{capture}: it ends early ({rep['error']}): no run reaches its end to be accounted")
    seq, rejected_by = rep["sequence"], rejections(rep)
    rejected_packets = sum(n for why, n in rejected_by.items() if why.startswith("mold_"))
    rejected_messages = rejected_by["unknown_type"] + rejected_by["wrong_length"] + rejected_by["empty_message"]
    if not (seq["gap_messages"] or seq["duplicate_messages"] or rejected_packets or rejected_messages):
        return None
    # What it hands on in order: the rest of its range was not applied (missing, or late: the list cannot tell
    # them apart, and need not: the first of either starts the stale flag).
    seqs, rejected = listed_messages(capture)
    unapplied = np.setdiff1d(np.arange(rep["first_sequence"], rep["last_sequence"] + 1, dtype=np.int64), seqs) \
        if seqs.size else np.zeros(0, dtype=np.int64)
    counts = {key: 0 for key in COUNTS}
    counts.update(
        packets_in=rep["capture_stats"]["udp_datagrams"], packets_out=rep["capture_stats"]["udp_datagrams"],
        messages_in=rep["messages"] + rejected_messages + seq["missing_messages"] + seq["reordered_messages"],
        dropped_messages=seq["missing_messages"], duplicated_messages=seq["duplicate_messages"],
        reordered_messages=seq["reordered_messages"], truncated_packets=rejected_packets,
        corrupted_messages_rejected=rejected_messages)
    sidecar = {**counts, "sequences": {"dropped": unapplied.tolist(), "duplicated": [], "reordered": [],
                                       "truncated": [], "corrupted_rejected": seqs[rejected].tolist(),
                                       "corrupted_decoded": []},
               "declared": {"by": "itchbench inspect --declare", "capture_sha256": sha256_of(capture)}}
    atomic.write_text(side, json.dumps(sidecar, indent=1) + "\n")
    return sidecar


def whole_session(capture: Path, sidecar: dict[str, Any]) -> tuple[Path | None, str]:
    """(the capture a faulted one was made from, "") when its sidecar names it and it is there unchanged; else
    (None, why not)."""
    source = sidecar.get("source")
    if not source:
        return None, (f"{sidecar_path(capture)} does not say what {capture.name} was made from (it was made before "
                      "itchbench recorded that): make it again with itchbench faults")
    path = Path(source["path"])
    if not path.is_file():
        return None, f"{capture.name} was made from {path}, which is not there any more"
    if sha256_of(path) != source["sha256"]:
        return None, f"{capture.name} was made from {path}, which has changed since (sha256 {source['sha256'][:16]}…)"
    return path, ""


def any_faults(table: dict[str, Any]) -> bool:
    return any(table[k] for k in OPTIONS) or bool(table["burst_drop"])


def faulted_capture(capture: Path, table: dict[str, Any]) -> Path:
    """The capture with a scenario's [faults] applied, cached by content and
    options under reports/cache/ (its sidecar beside it)."""
    options = {k: table[k] for k in sorted(table)}
    key = hashlib.sha256((sha256_of(capture) + json.dumps(options, sort_keys=True)).encode()).hexdigest()[:16]
    out = cache_dir() / f"{key}-faults.pcap"
    if not (out.is_file() and sidecar_path(out).is_file()):
        inject(plain_copy(capture), out, seed=table["seed"], drop=table["drop"], duplicate=table["duplicate"],
               reorder=table["reorder"], reorder_window=table["reorder_window"], truncate=table["truncate"],
               corrupt=table["corrupt"], burst_drop=table["burst_drop"] or None)
    return out


def stale_from(injected: dict[str, Any]) -> int | None:
    """The first message lost or rejected, after which every BBO event is flagged stale (docs/faults.md): the
    smallest seq the sidecar names dropped, late, truncated or rejected as corrupt; None when it names none. The
    injector never faults the first packet, so each of these shows to a gateway as a jump in sequence or a
    rejection."""
    seqs = injected.get("sequences", {})
    firsts = [min(seqs[k]) for k in ("dropped", "reordered", "truncated", "corrupted_rejected") if seqs.get(k)]
    return min(firsts) if firsts else None


def reconcile(injected: dict[str, Any], rec: dict[str, Any], checks: dict[str, bool],
              transport: str = "udp") -> dict[str, Any]:
    """Check the gateway's counters against the sidecar, per kind. On a serial line, which carries each message once
    and in order (serial-replay reads the capture as a sequencer does), no duplicate, late message or malformed
    packet reaches the gateway: a late message is a gap there, and each of those counters is held to 0."""
    loss = rec["loss"]
    not_applied = (injected["dropped_messages"] + injected["truncated_messages"]
                   + injected["reordered_messages"])
    expected = injected["messages_in"]
    checks["messages not applied = dropped + truncated + reordered messages (sidecar)"] = (
        expected - rec["received"] == not_applied)
    if transport == "serial":
        line = "(serial: the line carries each message once, in order)"
        checks[f"gateway duplicates, late discards and rejected packets = 0 {line}"] = (
            rec["duplicates"] == rec["reordered"] == rec["rejected_packets"] == 0)
    else:
        checks["gateway duplicates = duplicated messages (sidecar)"] = (
            rec["duplicates"] == injected["duplicated_messages"])
        checks["gateway late discards = reordered messages (sidecar)"] = (
            rec["reordered"] == injected["reordered_messages"])
        checks["gateway rejected packets = truncated packets (sidecar)"] = (
            rec["rejected_packets"] == injected["truncated_packets"])
    checks["gateway rejected messages = corrupted messages failing validation (sidecar)"] = (
        rec["rejected"] == injected["corrupted_messages_rejected"])
    loss["expected_messages"] = expected
    loss["messages_not_applied"] = max(0, expected - rec["received"])
    return {"source": "sidecar", "injected": injected, "summary": summary_of(injected),
            "corrupted_but_decoded": injected["corrupted_messages_decoded"]}


def summary_of(injected: dict[str, Any]) -> str:
    """The faults a sidecar says were drawn (or, declared, the capture holds of its own), in a few words."""
    if injected.get("declared"):
        own = ", ".join(f"{injected[k]:,} {words}" for k, words in (
            ("dropped_messages", "messages missing"), ("reordered_messages", "late"),
            ("duplicated_messages", "duplicated"), ("truncated_packets", "malformed packets"),
            ("corrupted_messages_rejected", "malformed messages")) if injected[k])
        return f"the capture's own: {own}"
    drawn = ", ".join(f"{injected[k]:,} {k.replace('_', ' ')}" for k in
                      ("dropped_packets", "duplicated_packets", "reordered_packets", "truncated_packets",
                       "corrupted_packets") if injected[k])
    return drawn or "no faults drawn"


def corrupted_lines(send_log: Path) -> np.ndarray:
    """The sequence numbers of the lines serial-replay sent with a payload digit damaged (serial.corrupt_every), by
    its send log: the messages a gateway checking each line's checksum never applies."""
    rec = logs.read_log(send_log, logs.KIND_SEND, quiet=True).records
    return np.unique(rec["seq"][(rec["flags"] & logs.SEND_CORRUPTED) != 0].astype(np.int64))


def without_corrupted_lines(capture: Path, seqs: np.ndarray, into: Path) -> Path:
    """The capture with the messages of a serial line's corrupted lines rejected (their type byte a digit): its
    simulation applies what a gateway that checks each line's checksum can apply, in the same order, and flags
    every event after the first as a book that may be stale, as one after a lost message. A brought gateway on a
    noisy line is held to it."""
    out = into / f"{capture.name.split('.')[0]}-without-corrupted-lines.pcap"
    inject(plain_copy(capture), out, seed=0, reject=seqs)
    return out


def reconcile_serial(rec: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    """serial-replay's own corruption (serial.corrupt_every): each corrupted
    line must be rejected by its checksum and be the only messages lost."""
    hop = rec["serial"]
    corrupted = int(hop.get("corrupted_lines", 0))
    checks["bad lines = lines corrupted by serial-replay"] = hop["lines_bad"] == corrupted
    checks["messages not applied = lines corrupted"] = rec["loss"]["messages_not_applied"] == corrupted
    return {"source": "serial-replay", "injected": {"corrupted_lines": corrupted},
            "summary": f"{corrupted:,} corrupted lines", "corrupted_but_decoded": 0}
