"""itchbench history STORE: append runs to a results store, or draw every metric across commits."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from .common import UserError, folder_path, percentage


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
                   help="a metric to draw, or with --check to judge (repeat; default: receive_to_book.p50, "
                        "receive_to_book.p99, throughput_msg_s, wire_to_wire.p50; with --check, 'all': every metric "
                        "the store holds); names as in docs/history.md")
    h.add_argument("--out", type=folder_path, default=None, help="the folder the page goes into (default: STORE/html)")
    h.add_argument("--check", action="store_true",
                   help="alerts instead of the page: each series' newest commit against the trailing window of the "
                        "commits before it (and against the window's oldest commit: a slow creep); one line an "
                        "alert; exit 1 on any, 2 when no series could be judged (docs/history.md, Alerts)")
    h.add_argument("--branch", metavar="REV", default=None,
                   help="with --check: judge each commit of REV's history (git rev-list REV in --repo) that the store "
                        "holds, each against the window before it, not only the newest")
    h.add_argument("--repo", type=Path, default=Path("."),
                   help="with --branch: the repository whose commits those are (default: here; a brought gateway's "
                        "own repository for its runs)")
    # Unset flags take the store's thresholds (STORE/thresholds.toml), then the defaults; a flag given wins.
    h.add_argument("--test", choices=("t", "percentage"), default=None,
                   help="with --check: Welch's t-test at --boundary, or a percentage at --limit (default t)")
    h.add_argument("--window", type=int, default=None, help="with --check: commits before the one judged (default 10)")
    h.add_argument("--boundary", type=float, default=None,
                   help="with --check and --test t: the confidence that it is worse (default 0.99)")
    h.add_argument("--limit", type=percentage(100), default=None, metavar="PCT",
                   help="with --check and --test percentage: how much worse (default 5)")
    h.add_argument("--min-sample", type=int, default=None, help="with --check: runs in the window at the least "
                   "(default 6); below it a series is NOT JUDGED")
    h.add_argument("--min-runs", type=int, default=None, help="with --check: runs of the commit judged at the least "
                   "(default 3)")
    h.add_argument("--min-commits", type=int, default=None, help="with --check and --test t: commits in the window "
                   "(each of --min-runs runs) at the least (default 3): their medians' spread is how far the machine "
                   "moves between the times runs are made at; below it a series is NOT JUDGED")
    h.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import rundir
    from ..history import page, store

    if args.store.exists() and not args.store.is_dir():
        raise UserError(f"history: {args.store} is a file, not a results store (a directory)")
    if args.append:
        runs = [d for a in args.append for d in rundir.find_run_dirs(a)]
        if not runs:
            raise UserError("history: no run directory in " + ", ".join(map(str, args.append)))
        for d in runs:
            try:
                print(store.append(args.store, d, messages=not args.no_messages,
                                   say=lambda line: print(line, file=sys.stderr, flush=True)))
            except ValueError as e:
                raise UserError(f"history: {e}") from e
        return 0
    if not (args.store / "metrics").is_dir():
        raise UserError(f"history: {args.store} holds no results store (append runs first: --append RUN...)")
    _refuse_unknown_metrics(args.store, [m for m in args.metric or [] if m != "all"])
    if args.check:
        from ..history import alerts
        given = {k: v for k, v in {"test": args.test, "window": args.window, "min_sample": args.min_sample,
                                    "min_runs": args.min_runs, "min_commits": args.min_commits,
                                    "boundary": args.boundary,
                                    "limit": None if args.limit is None else args.limit / 100}.items() if v is not None}
        try:
            alerts.checked_settings({k: v for k, v in given.items() if k != "limit"}, "history", flags=True)
        except alerts.ThresholdError as e:
            raise UserError(str(e)) from e
        commits = None
        if args.branch:
            listed = subprocess.run(["git", "-C", str(args.repo), "rev-list", args.branch], capture_output=True,
                                    text=True)
            if listed.returncode != 0:
                raise UserError(f"history: --branch {args.branch}: {listed.stderr.strip()}")
            commits = listed.stdout.split()
        try:
            # The headline metrics by default: each series judged is a chance of a false alert on an unchanged
            # build, and a store holds dozens of them a run (every stage's percentiles).
            metrics = (None if args.metric and "all" in args.metric else tuple(args.metric) if args.metric
                       else page.DEFAULT_METRICS)
            results = alerts.check(args.store, alerts.Threshold(), metrics, commits=commits, given=given)
        except alerts.ThresholdError as e:
            raise UserError(f"history: {e}") from e
        lines, status = alerts.summarise(results)
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


def _refuse_unknown_metrics(store: Path, asked: list[str]) -> None:
    """A metric asked for by name that no run in the store has: refused, with the nearest names. A page of it was
    drawn empty (exit 0), and a check of it judged nothing without saying why."""
    if not asked:
        return
    import difflib

    from ..history import store as results
    try:
        held = set(results.query(store, "SELECT DISTINCT metric FROM runs")["metric"])
    except FileNotFoundError as e:
        raise UserError(f"history: {e}") from e
    unknown = [m for m in asked if m not in held]
    if unknown:
        near = sorted({n for m in unknown for n in difflib.get_close_matches(m, held, n=3)})
        raise UserError(f"history: no run in {store} has the metric {', '.join(map(repr, unknown))}"
                        + (f" (near: {', '.join(near)})" if near else "") + f"; it holds {len(held)} (docs/history.md)")
