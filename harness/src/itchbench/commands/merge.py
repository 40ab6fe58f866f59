"""itchbench merge DIR...: the shards of a sharded run, checked to belong together."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import UserError, given_path, run_line, verdict_of


def register(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser(
        "merge", help="check that shard directories make one whole sharded run, and list its runs",
        description="Read the shard records (shard-K-of-N.json) in the directories given, check that they are "
        "every part of one sharded run exactly once (same scenario, same inputs' digests, same machine class), "
        "and list the runs in plan order with their verdicts. Refuses, naming it, a missing, duplicated or "
        "foreign shard, or a run whose logs were cut or changed after it ended (exit 2). `itchbench doc` takes the "
        "same directories. docs/sharding.md")
    m.add_argument("dirs", nargs="+", metavar="DIR", help="directories holding shard records and their runs")
    m.add_argument("--out", type=given_path, metavar="FILE",
                   help="also write the merged list (JSON: shards, runs) here")
    m.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import rundir
    from ..host import differences as host
    from ..runs import shards, verdict

    out = Path(args.out) if args.out else None
    ours = out is not None and (shards.RECORD.match(out.name) or (out.parent / "manifest.json").is_file())
    if out is not None and out.is_file() and ours:
        raise UserError(f"merge: {out} is a shard record or a run's own file: the merged list would replace it; "
                        "write it elsewhere")
    try:
        merged = shards.merge([Path(d) for d in args.dirs])
    except shards.ShardError as e:
        raise UserError(f"merge: {e}") from e
    first = merged.records[0]
    print(f"{first['scenario']}: {first['count']} shards, {len(merged.run_dirs)} runs, machine "
          f"{first['machine']['cpu_model']} x{first['machine']['cpu_count']}")
    # One machine class is checked by the merge; settings on it (THP, sysctls, isolation) are flagged run by run.
    hosts = [(d, rundir.read_json(d / "manifest.json").get("environment", {}).get("host")) for d in merged.run_dirs]
    for d, h in hosts[1:]:
        for diff in host.differences(hosts[0][1], h):
            print(f"  host differs: {d.name} against {hosts[0][0].name}: {diff}")
    statuses = []
    for d in merged.run_dirs:
        summary, v = verdict_of(d)
        headline = v["headline"].replace("\n", "\n    ")
        print(f"  {d}\n    {run_line(summary)}\n    {headline}")
        statuses.append(v["status"])
    if out is not None:
        rundir.write_json(out, {"scenario": first["scenario"], "scenario_sha256": first["scenario_sha256"],
                                           "shards": first["count"], "runs": [str(d) for d in merged.run_dirs]})
    print(verdict.closing_line(statuses))
    return verdict.exit_status(statuses)
