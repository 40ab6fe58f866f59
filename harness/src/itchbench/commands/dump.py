"""itchbench dump bbo|depth RUN_DIR: a run's BBO or depth events as CSV."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import UserError, logs_not_whole, partial_output


def register(sub: argparse._SubParsersAction) -> None:
    dp = sub.add_parser("dump", help="a run's logs as CSV on stdout")
    dp.add_argument("what", choices=["bbo", "depth"], help="bbo: seq,stock,bid_px,bid_qty,ask_px,ask_qty,stale (1: "
                    "messages were lost or rejected before this event, so the book may differ from the feed's); "
                    "depth (a run made with levels = N): seq,stock,bid1_px,bid1_qty,…,bidN_qty,ask1_px,…,askN_qty; "
                    "of a run made with levels = all, each level a message changed: seq,stock,side,price,shares "
                    "(0: the level left the book)")
    dp.add_argument("run_dir", metavar="RUN_DIR")
    dp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis import dump
    run_dir = Path(args.run_dir)
    if not (run_dir / "bbo.bbo").is_file():
        raise UserError(f"{run_dir} is not a run directory (no bbo.bbo)")
    if args.what == "depth" and not (run_dir / "depth.dep").is_file():
        raise UserError(f"{run_dir} holds no depth events (no depth.dep): run it with levels = N "
                        "or all (itchbench sim CAPTURE --levels N, or the scenario key levels)")
    with logs_not_whole() as cut:
        (dump.dump_depth if args.what == "depth" else dump.dump_bbo)(run_dir, sys.stdout)
    return partial_output(cut, "the CSV")
