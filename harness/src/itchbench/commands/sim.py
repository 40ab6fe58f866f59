"""itchbench sim CAPTURE: the gateway on a capture in deterministic simulation."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..runs.verdict import EXIT_HELP
from .common import given_path, run_line, verdict_of


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("sim", help="run the gateway on a capture in deterministic simulation",
                       description="Run the gateway on a capture in deterministic simulation. A capture with a "
                       "fault sidecar beside it (CAPTURE.faults.json, from `itchbench faults`) is reconciled "
                       "with it exactly. " + EXIT_HELP)
    s.add_argument("capture", help="pcap/pcapng of MoldUDP64 over UDP (any port), or a binary ITCH 5.0 file")
    s.add_argument("--out", type=given_path, metavar="RUN_DIR", help="new run directory (default: reports/runs/RUN_ID)")
    s.add_argument("--no-latency-log", action="store_true", help="record the BBO stream only")
    s.add_argument("--feed", metavar="ADDR:PORT", default="",
                   help="the capture's feed flow (default: the flow with the most MoldUDP64 messages)")
    s.add_argument("--levels", metavar="N", type=_levels, default=0,
                   help="depth events too: a stock's top N price levels a side (1 to 64) whenever any changed, or "
                   "all: each level a message changed, its new shares (itchbench dump depth RUN_DIR; "
                   "docs/book-and-bbo.md); default 0, the BBO only")
    s.set_defaults(func=run)


def _levels(text: str) -> int | str:
    from ..depth_levels import parse_levels
    try:
        return parse_levels(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def run(args: argparse.Namespace) -> int:
    from ..runs.sim import run_sim
    run_dir = run_sim(Path(args.capture), Path(args.out) if args.out else None, latency_log=not args.no_latency_log,
                      feed=args.feed, levels=args.levels)
    summary, verdict = verdict_of(run_dir)
    print(run_line(summary))
    if "performance" in summary:
        print(f"{summary['performance']['messages_per_s'] / 1e6:.2f} M msg/s; BBO digest {summary['bbo']['digest']}")
    print(f"run directory: {run_dir}")
    print(verdict["headline"])
    return int(verdict["exit_status"])
