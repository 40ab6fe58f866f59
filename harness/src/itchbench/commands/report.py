"""itchbench report RUN_DIR: rebuild a run's report, byte for byte."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..vocabulary import DEFAULT_METHOD, METHODS
from .common import UserError


def register(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser("report", help="(re)build a run's report.md, plots, HdrHistogram logs and summary latency")
    rp.add_argument("run_dir", metavar="RUN_DIR")
    rp.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD, help="percentile method (default: %(default)s)")
    rp.add_argument("--csv", action="store_true", help="also write latency.csv, one row per message")
    rp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis import report
    from ..runs import runner
    from .. import rundir
    from ..analysis import logs
    run_dir = Path(args.run_dir)
    if not (run_dir / "manifest.json").is_file():
        raise UserError(f"{run_dir} is not a run directory (no manifest.json)")
    summary = run_dir / "summary.json"
    recorded = rundir.read_json(summary) if summary.is_file() else None
    cut = logs.cut_since_complete(run_dir, recorded) if recorded is not None else ""
    if cut:
        raise UserError(f"{cut}: its report is not rebuilt from part of them (the report as it was is kept)")
    changed = logs.changed_since_run(run_dir, recorded) if recorded is not None else ""
    if changed:
        raise UserError(f"{changed}: its report is not rebuilt (the report as it was is kept)")
    print(report.build(run_dir, method=args.method, csv=args.csv, closing=runner.closing_sections))
    return 0
