"""itchbench bisect GOOD BAD: the first commit whose instructions per message
grew, or whose BBO stream changed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import vocabulary


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bisect", help="find the first commit where instructions per message grew or the BBO "
                       "stream changed (exact: one measurement a commit)",
                       description="Bisect the commits from GOOD (exclusive) to BAD on an exact metric: "
                       "instructions per message on the gateway's message path (callgrind; bad when more than "
                       "0.5 % above GOOD's) or the BBO digest in simulation (bad when it differs from GOOD's). "
                       "Builds are shared with itchbench compare. Exit 0 when found, 2 when it cannot bisect.")
    b.add_argument("good", metavar="GOOD")
    b.add_argument("bad", metavar="BAD")
    b.add_argument("--metric", choices=vocabulary.BISECT_METRICS, default="instructions")
    b.add_argument("--scenario", type=Path, help="take the capture of the scenario's first configuration "
                   "(default: the seed-workload fixture)")
    b.add_argument("--repo", type=Path, default=Path.cwd(), help="the git repository (default: the current folder)")
    b.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..captures import fixtures
    from ..compare import bisect, revisions
    from ..runs import scenario
    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    capture = (Path(scenario.load(args.scenario)[0].values["capture"]) if args.scenario else
               next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload").path)
    try:
        good, first_bad, steps = bisect.bisect(args.repo, args.good, args.bad, args.metric, capture, say)
    except (bisect.BisectError, revisions.RevisionError) as e:
        print(f"itchbench: cannot bisect: {e}", file=sys.stderr)
        return 2
    rev = first_bad.revision
    if args.metric == "instructions":
        change = (f"instructions per message {good.value:.1f} -> {first_bad.value:.1f} "
                  f"({(first_bad.value / good.value - 1) * 100:+.2f} %)")
    else:
        change = f"BBO digest {good.value} -> {first_bad.value}"
    print(f"first bad commit: {rev.commit} {rev.subject}")
    print(f"  {change}; {len(steps)} commit(s) measured")
    print(f"  compare it: itchbench compare {rev.commit}~1 {rev.commit} --repo {args.repo}")
    return 0
