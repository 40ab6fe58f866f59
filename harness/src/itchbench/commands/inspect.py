"""itchbench inspect CAPTURE: what a capture holds."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser("inspect", help="per-type message counts and framing accounting of a capture",
                       description="Per-type message counts, the feed's flows, rejections and sequence gaps of a "
                                   "capture. Exit 0: clean; 1: the capture has errors, rejections, messages of its "
                                   "session missing (its own sequence gaps) or out of order, or no feed.")
    i.add_argument("capture", help="pcap/pcapng of MoldUDP64 over UDP, or a binary ITCH 5.0 file")
    i.add_argument("--feed", metavar="ADDR:PORT", default="",
                   help="the feed flow (default: the flow with the most MoldUDP64 messages)")
    i.add_argument("--json", action="store_true", help="print the full JSON report")
    i.add_argument("--declare", action="store_true",
                   help="write CAPTURE.faults.json declaring the capture's own faults (its gaps, late and duplicated "
                        "messages, malformed packets and messages): runs of it are then held to them exactly, "
                        "FAULTS ACCOUNTED, rather than LOST (docs/faults.md)")
    i.set_defaults(func=run)


def type_table(reports: dict[str, dict[str, Any]]) -> str:
    """Per-type message counts, one column per capture."""
    names = list(reports)
    width = max(12, *(len(n) for n in names))
    lines = ["type  " + "".join(f"{n:>{width + 2}}" for n in names)]
    types = list(next(iter(reports.values()))["decode"]["per_type"])
    for t in types:
        lines.append(f"{t:<6}" + "".join(f"{reports[n]['decode']['per_type'][t]:>{width + 2},}" for n in names))
    lines.append(f"{'total':<6}" + "".join(f"{reports[n]['messages']:>{width + 2},}" for n in names))
    return "\n".join(lines)


def flow_table(report: dict[str, Any]) -> str:
    """The capture's UDP flows, the feed marked, and what is not the feed by kind."""
    cap = report["capture_stats"]
    lines = [f"{'flow':<22} {'datagrams':>10} {'MoldUDP64 msgs':>15}  sessions"]
    for f in report["flows"]:
        mark = "  <- feed" if f["destination"] == cap["feed"] else ""
        lines.append(f"{f['destination']:<22} {f['datagrams']:>10,} {f['mold_messages']:>15,}  "
                     f"{', '.join(f['sessions']) or '-'}{mark}")
    skipped = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in cap["not_feed"].items())
    lines.append(f"not the feed (skipped): {skipped}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..captures.inspect import inspect_capture, no_feed, rejections
    if args.declare:
        return declare(Path(args.capture), args.feed)
    report = inspect_capture(Path(args.capture), args.feed)
    # A pcap of no UDP datagram has no feed: nothing in it is ITCH, which a table of zeros would not say.
    feedless = report["kind"] == "pcap" and not report["flows"]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        if report["kind"] == "pcap":
            print(flow_table(report) + "\n")
        print(type_table({Path(args.capture).name: report}))
        rej = {k: v for k, v in rejections(report).items() if v}
        print(f"rejected: {rej or 'none'}")
        if report["kind"] == "pcap" and report["messages"]:
            print(sequence_line(report))
        if not report["complete"]:
            print(f"ERROR: {report['error']}")
        if feedless:
            print(f"NO FEED: {no_feed(report['capture_stats']['not_feed'])}")
    # Messages of its session a run cannot apply: those it does not hold, and those it holds after a later one.
    unapplied = (report["sequence"]["missing_messages"] + report["sequence"]["reordered_messages"]
                 if report["kind"] == "pcap" else 0)
    return 0 if report["complete"] and report["rejected"] == 0 and not feedless and not unapplied else 1


def sequence_line(report: dict[str, Any]) -> str:
    """The feed's sequence numbers, the messages of its session the capture does not hold, and those it holds out of
    order (a run of it loses both: docs/verdicts.md)."""
    from ..captures.inspect import rejections
    seq = report["sequence"]
    line = f"sequence {report['first_sequence']:,}..{report['last_sequence']:,}: "
    if seq["missing_messages"]:
        line += (f"MISSING {seq['missing_messages']:,} message(s) of its session: the capture itself does not hold "
                 "them" + (" whole (some in the malformed packets above)" if any(
                     n for why, n in rejections(report).items() if why.startswith("mold_")) else ""))
    else:
        line += "no gap"
    extra = [f"{seq[k]:,} {words}" for k, words in (("duplicate_messages", "duplicated"),
                                                    ("reordered_messages", "out of order (late: a run discards "
                                                                           "them)")) if seq[k]]
    return line + (f"; {', '.join(extra)}" if extra else "")


def declare(capture: Path, feed: str) -> int:
    """--declare: the sidecar of the capture's own faults written, and said."""
    from ..captures import faults
    from ..captures.inspect import CaptureError
    try:
        sidecar = faults.declare(capture, feed)
    except CaptureError as e:
        print(f"itchbench: {e}", file=sys.stderr)
        return 2
    if sidecar is None:
        print(f"{capture}: nothing to declare: no gap, late or duplicated message, no malformed packet or message")
        return 0
    print(f"{faults.sidecar_path(capture)}: {faults.summary_of(sidecar)}; runs of {capture.name} are held to it")
    return 0
