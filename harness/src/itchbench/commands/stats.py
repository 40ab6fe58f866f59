"""itchbench stats FILE: the same statistics for another gateway's latency CSV."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..vocabulary import DEFAULT_METHOD, METHODS


def register(sub: argparse._SubParsersAction) -> None:
    st = sub.add_parser("stats", help="latency statistics of an external CSV log (one latency in ns per line)")
    st.add_argument("file", help="CSV of latencies in ns, one a row, under a header row or none")
    st.add_argument("--column", help="the column holding latencies in ns (default: the only column)")
    st.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD, help="percentile method (default: %(default)s)")
    st.add_argument("--json", action="store_true",
                    help="one JSON object: count, mean, min, max, p50, p90, p95, p99, p999, p9999, stddev")
    st.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis import external
    result = external.stats_of_csv(Path(args.file), args.column, args.method)
    print(json.dumps(result.figures, indent=2) if args.json else external.format_table(result))
    return 0
