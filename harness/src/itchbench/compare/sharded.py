"""compare and bisect split over runners (docs/sharding.md): each shard does a part and writes its record; the
merge checks the parts belong together and hands back what one unsharded compare or bisect would have had."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ..runs import shards
from ..gateways import revisions
from . import bisect, session


def compare_identity(base: session.Side, head: session.Side, workloads: list[session.Workload], repetitions: int,
                     scenario: Path | None) -> dict[str, Any]:
    """What every shard of one sharded compare shares: the two revisions, the workloads, the plan."""
    assert base.revision and head.revision
    plan = [[w.label, rep, side] for w in workloads for rep in range(1, repetitions + 1) for side in ("base", "head")]
    return shards.identity_of("compare", scenario.read_text() if scenario else "default workloads",
                              [w.values for w in workloads], plan, base=base.revision.commit,
                              head=head.revision.commit, repetitions=repetitions)


def run_compare_shard(shard: shards.Shard, base: session.Side, head: session.Side, workloads: list[session.Workload],
                      repetitions: int, scenario: Path | None, out: Path,
                      say: Callable[[str], None]) -> tuple[Path, int]:
    """This shard's part of the workloads x repetitions, both sides each, interleaved, and its record; returns the
    record and the runs kept."""
    units = [(w.label, rep) for w in workloads for rep in range(1, repetitions + 1)]
    cost = {w.label: shards.expected_seconds(w.values) for w in workloads}
    parts = shards.assign([cost[label] for label, _ in units], shard.count)
    mine = {u for u, k in zip(units, parts) if k == shard.index}
    started = time.time()
    say(f"{shard.name}: {len(mine)} of {len(units)} repetitions, both sides each, interleaved")
    kept = session.run_interleaved([base, head], workloads, repetitions, out, say, units=mine)
    record = shards.write_record(out, shard, compare_identity(base, head, workloads, repetitions, scenario),
                                 [([label, rep, side], d) for label, rep, side, d in kept], started)
    return record, len(kept)


def merged_compare_sides(dirs: list[Path], repo: Path, base_spec: str, head_spec: str) -> tuple[session.Side,
                                                                                                session.Side]:
    """BASE and HEAD with the runs of every shard of their sharded compare, checked to be those revisions."""
    merged = shards.merge(dirs)
    record = merged.records[0]
    sides = []
    for name, spec in (("base", base_spec), ("head", head_spec)):
        side = session.Side(name, spec)
        try:
            side.revision = revisions.resolve(repo, spec)
        except revisions.RevisionError as e:
            raise session.NotComparable(str(e)) from e
        if side.revision.commit != record.get(name):
            raise shards.ShardError(f"the shards compared {name} {record.get(name)}, not {spec} "
                                    f"({side.revision.commit})")
        sides.append(side)
    for (label, _, name), d in zip(merged.units, merged.run_dirs):
        session.add_run(sides[0] if name == "base" else sides[1], label, d)
    return sides[0], sides[1]


def bisect_identity(metric: str, threshold: float, gateway: Path | None, capture: Path,
                    units: list[str]) -> dict[str, Any]:
    """What every shard of one sharded bisect shares: the metric and its workload, the commits."""
    return shards.identity_of("bisect", f"{metric} {threshold} {gateway or ''}", [{"capture": str(capture)}],
                              [[c] for c in units], metric=metric)


def measure_bisect_shard(shard: shards.Shard, repo: Path, good: str, bad: str, measure: Callable[[Any], Any],
                         identity: Callable[[list[str]], dict[str, Any]], out: Path, cannot_run: str = "stop"
                         ) -> tuple[Path, dict[str, Any], int]:
    """This part of GOOD and the commits after it, each measured once (or said not to build), the values in the
    record; returns the record, the values by commit and how many commits the bisect has."""
    good_rev, _, commits = bisect.span(repo, good, bad)
    units = [good_rev.commit, *commits]
    parts = shards.assign([1.0] * len(units), shard.count)  # every commit costs a build and a measurement alike
    started = time.time()
    measured = {c: bisect.measured_or_untestable(measure, revisions.resolve(repo, c), cannot_run)
                for c, k in zip(units, parts) if k == shard.index}
    return shards.write_record(out, shard, identity(units), [], started, measured=measured), measured, len(units)


def merged_bisect_values(dirs: list[Path], repo: Path, good: str, bad: str,
                         identity: Callable[[list[str]], dict[str, Any]]) -> dict[str, Any]:
    """Every shard's values, the shards checked to be every part of this bisect (same commits, metric, workload)."""
    good_rev, _, commits = bisect.span(repo, good, bad)
    records = shards.load_together(dirs)
    want = identity([good_rev.commit, *commits])
    if records[0][1]["plan"] != want["plan"] or records[0][1]["scenario_sha256"] != want["scenario_sha256"]:
        raise shards.ShardError(f"{records[0][0]} is not a shard of this bisect of {good}..{bad}")
    return {c: v for _, r in records for c, v in r["measured"].items()}
