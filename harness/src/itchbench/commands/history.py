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
        "place (DuckDB) and write history.html (self-contained), a PNG and a CSV per series, each metric across "
        "commits with the significant steps marked. docs/history.md")
    h.add_argument("store", type=Path, help="the results store (a directory; created on first append)")
    h.add_argument("--append", nargs="+", type=Path, metavar="RUN", default=None,
                   help="run directories (or folders of them) to add")
    h.add_argument("--no-messages", action="store_true", help="with --append: store the per-run metrics only")
    h.add_argument("--metric", action="append", default=None,
                   help="a metric to draw (repeat; default: receive_to_book.p50, receive_to_book.p99, "
                        "throughput_msg_s, wire_to_wire.p50); names as in docs/history.md")
    h.add_argument("--out", type=Path, default=None, help="where the page goes (default: STORE/html)")
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
    try:
        out = page.write(args.store, args.out or args.store / "html",
                         tuple(args.metric) if args.metric else page.DEFAULT_METRICS)
    except FileNotFoundError as e:
        raise UserError(f"history: {e}") from e
    print(out)
    print(f"wrote {out}", file=sys.stderr)
    return 0
