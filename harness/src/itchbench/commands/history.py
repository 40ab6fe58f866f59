"""itchbench history STORE: append runs to a results store, or draw every metric across commits."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import UserError


def register(sub: argparse._SubParsersAction) -> None:
    h = sub.add_parser(
        "history", help="append runs to a results store (Parquet), or draw its metrics across commits (HTML)",
        description="With --append RUN_DIR...: add finished runs to the store (hive-partitioned Parquet by "
        "scenario, configuration and commit date; safe with any number of writers). Without: query the store in "
        "place (DuckDB) and write history.html (self-contained, interactive: pick a gateway, machine, scenario, "
        "configuration and metric; hover a commit; click for its runs) and a CSV per series, each metric across "
        "commits with the significant steps marked. docs/history.md")
    h.add_argument("store", type=Path, help="the results store (a directory; created on first append)")
    h.add_argument("--append", nargs="+", type=Path, metavar="RUN", default=None,
                   help="run directories (or folders of them) to add")
    h.add_argument("--no-messages", action="store_true", help="with --append: store the per-run metrics only")
    h.add_argument("--metric", action="append", default=None,
                   help="a metric to draw (repeat; default: receive_to_book.p50, receive_to_book.p99, "
                        "throughput_msg_s, wire_to_wire.p50); names as in docs/history.md")
    h.add_argument("--out", type=Path, default=None, help="where the page goes (default: STORE/html)")
    h.add_argument("--check", action="store_true",
                   help="alerts instead of the page: each series' newest commit against the trailing window of the "
                        "commits before it (and against the window's oldest commit: a slow creep); one line an "
                        "alert; exit 1 on any, 2 when no series could be judged (docs/history.md, Alerts)")
    h.add_argument("--test", choices=("t", "percentage"), default="t",
                   help="with --check: Welch's t-test at --boundary, or a percentage at --limit (default %(default)s)")
    h.add_argument("--window", type=int, default=10, help="with --check: commits before the one judged (default 10)")
    h.add_argument("--boundary", type=float, default=0.99,
                   help="with --check and --test t: the confidence that it is worse (default %(default)s)")
    h.add_argument("--limit", type=float, default=5.0, metavar="PCT",
                   help="with --check and --test percentage: how much worse (default %(default)s)")
    h.add_argument("--min-sample", type=int, default=6, help="with --check: runs in the window at the least "
                   "(default %(default)s); below it a series is NOT JUDGED")
    h.add_argument("--min-runs", type=int, default=3, help="with --check: runs of the commit judged at the least "
                   "(default %(default)s)")
    h.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import rundir
    from ..history import page, store

    if args.append:
        runs = [d for a in args.append for d in rundir.find_run_dirs(a)]
        if not runs:
            raise UserError("history: no run directory in " + ", ".join(map(str, args.append)))
        for d in runs:
            try:
                print(store.append(args.store, d, messages=not args.no_messages))
            except ValueError as e:
                raise UserError(f"history: {e}") from e
        return 0
    if not (args.store / "metrics").is_dir():
        raise UserError(f"history: {args.store} holds no results store (append runs first: --append RUN...)")
    if args.check:
        from ..history import alerts
        threshold = alerts.Threshold(test=args.test, window=args.window, min_sample=args.min_sample,
                                     min_runs=args.min_runs, boundary=args.boundary, limit=args.limit / 100)
        lines, status = alerts.summarise(alerts.check(args.store, threshold,
                                                      tuple(args.metric) if args.metric else None))
        print("\n".join(lines))
        return status
    try:
        out = page.write(args.store, args.out or args.store / "html",
                         tuple(args.metric) if args.metric else page.DEFAULT_METRICS)
    except FileNotFoundError as e:
        raise UserError(f"history: {e}") from e
    print(out)
    print(f"wrote {out}", file=sys.stderr)
    return 0
