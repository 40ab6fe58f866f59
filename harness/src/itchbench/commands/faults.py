"""itchbench faults IN OUT --seed N …: seeded faults on a capture, with a sidecar."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser("faults", help="write a copy of a capture with seeded packet faults and a sidecar",
                       description="Write OUT: IN with deterministic faults on its MoldUDP64 packets (at most one "
                       "per packet; the first packet and end-of-session packets are never faulted), and "
                       "OUT.faults.json: seed, packets_in, packets_out, dropped_packets, dropped_messages, "
                       "duplicated_packets, duplicated_messages, reordered_packets, truncated_packets, "
                       "corrupted_packets, … and the sequence numbers affected. Any run of OUT is reconciled "
                       "with the sidecar exactly (docs/faults.md).")
    f.add_argument("input", metavar="IN.pcap")
    f.add_argument("output", metavar="OUT.pcap")
    f.add_argument("--seed", type=int, required=True, help="seed of the fault draw (recorded in the sidecar)")
    for name, what in [("drop", "dropped"), ("duplicate", "sent twice"), ("reorder", "moved later"),
                       ("truncate", "cut short"), ("corrupt", "given one damaged message")]:
        f.add_argument(f"--{name}", type=float, default=0.0, metavar="P",
                       help=f"probability that a packet is {what} (default 0)")
    f.add_argument("--reorder-window", type=int, default=4, metavar="K",
                   help="a reordered packet moves later by 1..K packets (default 4, at most 64)")
    f.add_argument("--burst-drop", metavar="LEN@P", help="drop LEN packets in a row, starting with probability P")
    f.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..captures import faults
    from ..captures.inspect import check_capture
    src = check_capture(Path(args.input))
    side = faults.inject(src, Path(args.output), seed=args.seed, drop=args.drop, duplicate=args.duplicate,
                         reorder=args.reorder, reorder_window=args.reorder_window, truncate=args.truncate,
                         corrupt=args.corrupt, burst_drop=args.burst_drop)
    print(f"{args.output}: {side['packets_in']:,} packets in, {side['packets_out']:,} out; "
          f"dropped {side['dropped_packets']:,} ({side['dropped_messages']:,} messages), "
          f"duplicated {side['duplicated_packets']:,}, reordered {side['reordered_packets']:,}, "
          f"truncated {side['truncated_packets']:,}, corrupted {side['corrupted_packets']:,} "
          f"({side['corrupted_messages_decoded']:,} still decode)")
    print(f"sidecar: {faults.sidecar_path(Path(args.output))}")
    return 0
