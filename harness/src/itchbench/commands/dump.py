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
        raise UserError(_no_logs(run_dir))
    if args.what == "depth" and not (run_dir / "depth.dep").is_file():
        raise UserError(f"{run_dir} holds no depth events (no depth.dep): run it with levels = N "
                        "or all (itchbench sim CAPTURE --levels N, or the scenario key levels)")
    with logs_not_whole() as cut:
        (dump.dump_depth if args.what == "depth" else dump.dump_bbo)(run_dir, sys.stdout)
    return partial_output(cut, "the CSV", run_dir, args.what)


def _no_logs(run_dir: Path) -> str:
    """Why a directory has no BBO log to dump: not a run, or a run of a gateway that writes none of itchbench's."""
    from .. import rundir
    from ..gateways.adapter import BBO_FILE
    manifest = run_dir / "manifest.json"
    if not manifest.is_file():
        return f"{run_dir} is not a run directory (no manifest.json)"
    under = rundir.read_json(manifest).get("gateway_under_test") or {}
    if not under:
        return f"{run_dir} holds no BBO log (no bbo.bbo): the run ended before its gateway wrote one"
    # A brought gateway's: where the run took what it published (the collector's file, or its own file output).
    summary = run_dir / "summary.json"
    details = (rundir.read_json(summary).get("transport_details") or {}) if summary.is_file() else {}
    published = run_dir / details.get("bbo_output", BBO_FILE)
    name = under.get("name", "a brought gateway")
    if published.is_file():
        return (f"{run_dir} is a run of {name}, which wrote no itchbench BBO log: what it published is {published}, "
                "as it sent it (its contract's bbo.format); dump reads the built-in gateway's logs")
    return (f"{run_dir} is a run of {name}, which writes no itchbench BBO log, and what it published is not there "
            f"({published}): the run ended before it published anything (its summary says why)")
