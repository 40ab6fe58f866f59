"""itchbench bisect GOOD BAD: the first commit whose instructions per message
grew, or whose BBO stream changed."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from .. import paths, vocabulary
from .common import at_least, given_path, percentage


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bisect", help="find the first commit where instructions per message grew or the BBO "
                       "stream changed (exact: one measurement a commit)",
                       description="Bisect the commits from GOOD (exclusive) to BAD on an exact metric: "
                       "instructions per message on the gateway's message path (callgrind; bad when more than "
                       "0.5 % above GOOD's) or the BBO digest in simulation (bad when it differs from GOOD's; "
                       "with a --scenario that sets levels = N, the depth digest of N levels beside it). "
                       "Builds are shared with itchbench compare. A commit between GOOD and BAD whose build fails "
                       "is stepped over (git bisect's skip); one whose gateway builds but cannot run (it crashes, "
                       "hangs, never becomes ready) ends the bisect, or is stepped over or taken as bad "
                       "(--cannot-run). "
                       "Exit 0 when found; 1 when the first bad commit is one of a few, those before the bad one "
                       "not measured (each named); 2 when it cannot bisect.")
    b.add_argument("good", metavar="GOOD")
    b.add_argument("bad", metavar="BAD")
    b.add_argument("--metric", choices=vocabulary.BISECT_METRICS, default="instructions")
    b.add_argument("--scenario", type=Path, help="take the capture of the scenario's first configuration "
                   "(default: the seed-workload fixture)")
    b.add_argument("--repo", type=Path, default=Path.cwd(), help="the git repository (default: the current folder)")
    b.add_argument("--gateway", type=Path, metavar="FILE",
                   help="bisect a gateway brought through its contract: FILE is its itchbench.toml, relative to "
                        "--repo; metric bbo (the events it sends, exact) or latency (wire-to-wire p50); the "
                        "workload is --scenario's first configuration (default scenarios/gateway.toml, UDP)")
    b.add_argument("--runs", type=at_least(1), default=3, help="latency: runs a commit, their median p50 (default 3)")
    b.add_argument("--threshold", type=percentage(), default=50.0, metavar="PCT",
                   help="latency: bad when the median p50 is this much above GOOD's (default %(default)s)")
    b.add_argument("--cannot-run", choices=vocabulary.BISECT_CANNOT_RUN, default="stop",
                   help="a commit between GOOD and BAD whose gateway builds but cannot run: stop the bisect there "
                        "and say why (default), skip it as one that does not build, or take it as bad (the crash "
                        "is the regression looked for); GOOD must run whatever this says")
    b.add_argument("--shard", metavar="K/N",
                   help="measure every commit of GOOD..BAD (GOOD included) that falls to part K of N (K from 0; "
                        "default $ITCHBENCH_SHARD) and write shard-K-of-N.json in --out; find nothing yet")
    b.add_argument("--merge", nargs="+", type=Path, metavar="DIR",
                   help="the first bad commit from every shard's measurements (their --out folders)")
    b.add_argument("--out", type=given_path, help="where a brought gateway's runs and a shard's record go (default "
                   "reports/bisect/STAMP)")
    b.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..captures import fixtures
    from ..compare import bisect
    from ..gateways import contract, provenance, revisions
    from ..runs import scenario
    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    try:
        revisions.require_repository(args.repo)
    except revisions.RevisionError as e:
        print(f"itchbench: cannot bisect: {e}", file=sys.stderr)
        return 2
    first = scenario.load(args.scenario)[0].values if args.scenario else None
    capture = (Path(first["capture"]) if first else
               next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload").path)
    levels = first["levels"] if first and args.metric == "bbo" else 0  # the built-in's depth beside its BBO
    measure = None
    measured_on = ""
    if args.gateway:
        from ..commands.compare import gateway_workloads
        workloads = gateway_workloads(args.scenario, (args.repo / args.gateway).resolve(), say)
        if args.metric == "instructions":  # counted on what the gateway reads itself
            workloads = [w for w in workloads if w.values["transport"] == "sim"]
        if not workloads:
            print("itchbench: the scenario has no configuration this gateway can take"
                  + (" from a file (--metric instructions counts the gateway reading the capture itself: "
                     "inputs = [\"file\", …] and a transport = \"sim\" configuration)"
                     if args.metric == "instructions" else ""), file=sys.stderr)
            return 2
        measured_on = f" on {workloads[0].label}"  # the one configuration each commit is measured on
        say(f"each commit measured on the scenario's configuration {workloads[0].label}")
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        root = args.out or paths.repo_root() / "reports" / "bisect" / stamp
        measure = bisect.contract_measure(args.repo, args.gateway, args.metric, workloads[0].values, args.runs,
                                          root, say)
        brought = contract.load((args.repo / args.gateway).resolve())
        sources_of = lambda commit: provenance.sources_id(brought.root, commit,  # noqa: E731
                                                          provenance.identity_paths(brought))
    elif args.metric == "latency":
        print("itchbench: --metric latency is for a gateway brought with --gateway (the built-in gateway bisects "
              "exactly, by instructions)", file=sys.stderr)
        return 2
    else:
        measure = bisect.default_measure(args.repo, args.metric, capture, say, levels)
        sources_of = lambda commit: revisions.measured_sources(  # noqa: E731
            args.repo, revisions.Revision(commit, commit, "", ""))
    from ..compare import sharded
    from ..runs import shards
    def identity(units: list[str]) -> dict:
        return {**sharded.bisect_identity(args.metric, args.threshold, args.gateway, capture, units), "levels": levels,
                "cannot_run": args.cannot_run}
    try:
        shard = shards.requested(args.shard)
        if args.merge:
            values = sharded.merged_bisect_values(args.merge, args.repo, args.good, args.bad, identity)
            good, first_bad, steps = bisect.first_bad(args.repo, args.good, args.bad, args.metric, values,
                                                      args.threshold / 100, sources_of)
        elif shard:
            out = args.out or paths.repo_root() / "reports" / "bisect" / time.strftime("%Y%m%dT%H%M%SZ",
                                                                                       time.gmtime())
            record, measured, total = sharded.measure_bisect_shard(
                shard, args.repo, args.good, args.bad,
                measure, identity, out, args.cannot_run)
            print(f"{shard.name}: {len(measured)} of {total} commits measured"
                  + _stepped_over([bisect.untestable_reason(v) for v in measured.values()], " ({})")
                  + f"; record {record}\nfind the first bad commit "
                  f"from every shard: itchbench bisect {args.good} {args.bad} --metric {args.metric} --merge DIR... "
                  "(each shard's --out)")
            return 0
        else:
            good, first_bad, steps = bisect.bisect(args.repo, args.good, args.bad, args.metric, capture, say,
                                                   measure=measure, threshold=args.threshold / 100,
                                                   sources_of=sources_of, cannot_run=args.cannot_run)
    except bisect.NotNarrowed as e:
        print(f"first bad commit: one of {len(e.candidates)}, the commits before the bad one "
              + ("not building" if all(s.untestable.startswith("does not build") for s in e.candidates[:-1])
                 else "not measured"))
        for step in e.candidates:
            why = step.untestable or f"bad ({_change(args.metric, levels, e.good, step)})"
            print(f"  {step.revision.commit} {step.revision.subject}: {why}")
        print(f"  {len(e.steps)} commit(s) measured{measured_on}")
        return 1
    except (bisect.BisectError, revisions.RevisionError, shards.ShardError) as e:
        print(f"itchbench: cannot bisect: {e}", file=sys.stderr)
        return 2
    rev = first_bad.revision
    print(f"first bad commit: {rev.commit} {rev.subject}")
    print(f"  {_change(args.metric, levels, good, first_bad)}{measured_on}; {len(steps)} commit(s) measured"
          + _stepped_over([s.untestable for s in steps], ", {} (stepped over)"))
    print("  compare it: " + shlex.join(["itchbench", "compare", f"{rev.commit}~1", rev.commit, "--repo", str(args.repo),
                                         *(["--gateway", str(args.gateway)] if args.gateway else []),
                                         *(["--scenario", str(args.scenario)] if args.scenario else [])]))
    return 0


def _stepped_over(reasons: list[str], form: str) -> str:
    """How many commits were not measured, by why ("1 of them not building, 2 not running"), in form; "" for
    none."""
    said: list[str] = []
    for start, words in (("does not build", "not building"), ("could not run", "not running")):
        n = sum(r.startswith(start) for r in reasons)
        if n:
            said.append(f"{n} {'' if said else 'of them '}{words}")
    return form.format(", ".join(said)) if said else ""


def _change(metric: str, levels: object, good: Any, bad: Any) -> str:
    """What changed from GOOD's value to a bad commit's, in the metric's words."""
    from ..compare import bisect
    if bisect.could_not_run(bad.value):
        return f"{bisect.shown(good.value, metric)} -> the gateway {bisect.shown(bad.value, metric)}"
    if metric == "instructions":
        return (f"instructions per message {good.value:.1f} -> {bad.value:.1f} "
                f"({(bad.value / good.value - 1) * 100:+.2f} %)")
    if metric == "latency":
        return (f"wire-to-wire p50 {good.value / 1000:,.1f} -> {bad.value / 1000:,.1f} us "
                f"({(bad.value / good.value - 1) * 100:+.0f} %)")
    return f"{'BBO and depth' if levels else 'BBO'} digest {good.value} -> {bad.value}"
