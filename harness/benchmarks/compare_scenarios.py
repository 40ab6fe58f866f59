"""Latency by stage for several scenarios, run interleaved.

    .venv/bin/python harness/benchmarks/compare_scenarios.py SCENARIO.toml... [--rounds N]

Runs A B C A B C ... so that machine noise falls on every configuration
alike, then prints per scenario and stage the median over rounds of p50,
p99, p99.9 and max (ns, nearest rank), and each scenario's p50/p99 as a
ratio of the first one's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from itchbench import rundir
from itchbench.runs import runner, scenario

STAGES = ["decode", "book", "publish", "receive_to_book", "receive_to_published", "one_way"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenarios", nargs="+")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    configs = [scenario.load(Path(s))[0] for s in args.scenarios]
    results: dict[str, list[dict]] = {c.label: [] for c in configs}
    for r in range(args.rounds):
        for c in configs:
            run = runner.execute(c.values, c.label, echo=False)
            s = rundir.read_json(run / "summary.json")
            print(f"round {r + 1} {c.label}: {s['verdict']['headline']} {run.name}", flush=True)
            results[c.label].append(s["latency"]["stages"])
    base = configs[0].label
    print(f"\n{'scenario':<14} {'stage':<22} {'p50':>9} {'p99':>9} {'p99.9':>9} {'max':>10}   vs {base}: p50, p99")
    for label, rounds in results.items():
        for stage in STAGES:
            if stage not in rounds[0]:
                continue
            med = {k: statistics.median(r[stage][k] for r in rounds) for k in ("p50", "p99", "p999", "max")}
            b = {k: statistics.median(r[stage][k] for r in results[base]) for k in ("p50", "p99")} \
                if stage in results[base][0] else None
            ratio = f"{med['p50'] / b['p50']:.2f}x, {med['p99'] / b['p99']:.2f}x" if b and b["p50"] else ""
            print(f"{label:<14} {stage:<22} {med['p50']:>9,.0f} {med['p99']:>9,.0f} {med['p999']:>9,.0f} "
                  f"{med['max']:>10,.0f}   {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
