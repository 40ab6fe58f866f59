"""itchbench dump bbo RUN_DIR: a run's BBO events as CSV."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import UserError


def register(sub: argparse._SubParsersAction) -> None:
    dp = sub.add_parser("dump", help="a run's logs as CSV on stdout")
    dp.add_argument("what", choices=["bbo"], help="bbo: seq,stock,bid_px,bid_qty,ask_px,ask_qty,stale (1: messages were lost or "
                    "rejected before this event, so the book may differ from the feed's)")
    dp.add_argument("run_dir", metavar="RUN_DIR")
    dp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis import dump
    run_dir = Path(args.run_dir)
    if not (run_dir / "bbo.bbo").is_file():
        raise UserError(f"{run_dir} is not a run directory (no bbo.bbo)")
    dump.dump_bbo(run_dir, sys.stdout)
    return 0
