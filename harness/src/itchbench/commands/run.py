"""itchbench run SCENARIO: every configuration and repetition of a scenario."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ..runs.verdict import EXIT_HELP
from .common import folder_path, run_line, verdict_of


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="run a scenario (sim, udp via tcpreplay, serial via socat) into run directories",
                       description="Run every configuration and repetition of a scenario, repetitions "
                       "interleaved across configurations (A B A B ...); a [sweep] runs its steps in order, each step's runs "
                       "interleaved, and stops a configuration past its saturation. The last lines judge the "
                       "scenario's [targets] (TARGET MISSED, UNDECIDED, NOT MEASURED: exit 1) and count the verdicts; "
                       "exit 0 only when every run's is and every target is met. " + EXIT_HELP)
    r.add_argument("scenario", help="scenario file (TOML), e.g. scenarios/udp-baseline.toml")
    r.add_argument("--out", type=folder_path, metavar="DIR", help="where run directories go (default: reports/runs)")
    r.add_argument("--gateway", metavar="FILE",
                   help="the gateway under test: its contract file itchbench.toml, or the repository that holds "
                        "one at its root (docs/gateway-contract.md); overrides the scenario's gateway_file")
    r.add_argument("--shard", metavar="K/N",
                   help="run only the K-th of N parts of the plan (K from 0; default: $ITCHBENCH_SHARD, else all), "
                        "split by expected cost; writes shard-K-of-N.json beside the runs (docs/sharding.md)")
    r.add_argument("--store", metavar="DIR",
                   help="also append each finished run to this results store (Parquet, docs/history.md)")
    r.add_argument("--profile", action="store_true",
                   help="sample the gateway with perf in every run, as [profile] enabled = true (docs/profile.md)")
    r.add_argument("--allow-undecided", action="store_true",
                   help="a target whose runs straddle it (UNDECIDED) is no reason for exit 1 (docs/capacity.md)")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import time

    from ..capacity.record import Capacity
    from ..runs import microbench, runner, scenario, shards, verdict
    from ..runs.failure import RunError
    try:
        shard = shards.requested(args.shard)
    except shards.ShardError as e:
        raise scenario.ScenarioError(str(e)) from e
    configs = scenario.load(Path(args.scenario))
    not_run: list[tuple[scenario.Configuration, str]] = []
    if args.gateway:
        # The gateway named here is run on every configuration whose input it takes; the others are not run, each
        # said in one line and again in the closing one, their targets NOT MEASURED (a gate of file, UDP and
        # serial targets had said "ok" of a UDP-only gateway, half its targets never judged), and a scenario it can
        # take none of is refused.
        gateway = Path(args.gateway).resolve()
        kept = []
        for config in configs:
            config.values["gateway_file"] = str(gateway / "itchbench.toml" if gateway.is_dir() else gateway)
            why = scenario.input_not_taken(config.values, scenario.load_gateway_file(config.values))
            if why:
                print(f"skipped {config.label}: {why}", flush=True)
                not_run.append((config, why))
            else:
                kept.append(config)
        if not kept:
            raise scenario.ScenarioError(f"{args.scenario}: {args.gateway} can run none of its configurations "
                                         "(why, above)")
        configs = kept
    if args.profile:
        for config in configs:
            config.values["profile"]["enabled"] = True
    for config in configs:  # a micro-benchmark filter that selects nothing is refused before anything runs
        try:
            microbench.planned(config.values)
        except RunError as e:
            raise scenario.ScenarioError(f"{args.scenario} [{config.label}]: {e}") from e
    root = Path(args.out) if args.out else runner.default_root()
    # Repetitions interleaved across configurations (A B C A B C ...): drift on a noisy machine falls on every
    # configuration alike, so their figures can be set side by side.
    most = max(c.values["repetitions"] for c in configs)
    plan = [(c, r) for r in range(1, most + 1) for c in configs if r <= c.values["repetitions"]]
    whole = plan
    if shard and any(c.step is not None for c in configs):
        raise scenario.ScenarioError(f"{args.scenario}: a sweep is not sharded: each step runs only if the one "
                                     "before it met every bound")
    if shard:
        parts = shards.assign([shards.expected_seconds(c.values) for c, _ in plan], shard.count)
        plan = [unit for unit, k in zip(plan, parts) if k == shard.index]
        ident = shards.identity(Path(args.scenario), whole)
    part = f" ({shard.name}: {len(plan)} of {len(whole)})" if shard else ""
    most_runs = "at most " if any(c.step is not None for c in configs) else ""
    print(f"{Path(args.scenario).name}: {len(configs)} configuration(s), {most_runs}{len(plan)} run(s){part} -> {root}",
          flush=True)
    statuses: list[str] = []
    done: list[tuple[list[object], Path]] = []
    by_label: dict[str, list[Path]] = {}
    capacity = Capacity()
    started = time.time()

    def run_units(units: list[tuple[scenario.Configuration, int]], offset: int, total: int) -> None:
        for i, (config, rep) in enumerate(units, offset + 1):
            step = (f", sweep step {config.step + 1}: {config.values['sweep']['key']} = "
                    f"{config.step_value}" if config.step is not None else "")
            print(f"[{i}/{total}] {config.label} ({config.transport}) repetition "
                  f"{rep}/{config.values['repetitions']}{step}", flush=True)
            origin = {"scenario_file": str(Path(args.scenario)), "scenario_text": config.source.read_text(),
                      "configuration": config.label, "repetition": rep,
                      "repetitions": config.values["repetitions"],
                      "command_line": shlex.join(["itchbench", *sys.argv[1:]])}
            if config.step is not None:
                origin["sweep"] = {"configuration": config.swept, "key": config.values["sweep"]["key"],
                                   "step": config.step, "value": config.step_value}
            run_dir = runner.execute(config.values, config.label, root=root, origin=origin)
            summary, v = verdict_of(run_dir)
            headline = v["headline"].replace("\n", "\n  ")
            print(f"  {run_line(summary)}\n  {headline}\n  run directory: {run_dir}", flush=True)
            statuses.append(v["status"])
            done.append(([config.label, rep], run_dir))
            by_label.setdefault(config.label, []).append(run_dir)
            if args.store:
                from ..history import store
                try:
                    stored = store.append(Path(args.store), run_dir, say=lambda line: print(f"  {line}", flush=True))
                    print(f"  stored: {stored}", flush=True)
                except ValueError as e:  # a run not whole (its report not written): said, the others still run
                    print(f"  not stored: {e}", flush=True)

    try:
        # Configurations outside a sweep (a [[configurations]] entry may set sweep.key = ""), then the steps.
        plain = [(c, r) for c, r in plan if c.step is None]
        run_units(plain, 0, len(plain))
        steps = sorted({c.step for c in configs if c.step is not None})
        past: set[str] = set()  # sweeps stopped: their configurations past saturation
        for step in steps:
            units = [(c, r) for c, r in plan if c.step == step and c.swept not in past]
            if not units:
                break
            run_units(units, len(done), len(done) + len(units))
            for config in [c for c in configs if c.step == step and c.swept not in past]:
                value = config.step_value
                why = capacity.add_step(config.swept, config.values, value, by_label[config.label])
                if why:
                    past.add(config.swept)
                    print(f"  {config.swept}: past saturation at {config.values['sweep']['key']} = {value}: "
                          f"{'; '.join(why)}; its sweep stops here", flush=True)
        for config in configs:
            if config.step is None and config.label in by_label:
                capacity.add_configuration(config.label, config.values, by_label[config.label])
        for config, why in not_run:
            if config.step is None:
                capacity.add_not_run(config.label, config.values, why)
    except KeyboardInterrupt:
        statuses.append("incomplete")
        print(verdict.closing_line(statuses) + " (interrupted)")
        raise
    if shard:
        print(f"shard record: {shards.write_record(root, shard, ident, done, started)}")
    if capacity.anything():
        for line in capacity.finish_sweeps() + capacity.lines():
            print(line)
        print(f"capacity record: {capacity.write(root, configs[0].scenario)}")
    failed = capacity.failed(args.allow_undecided)
    print(verdict.closing_line(statuses, failed, not_run=sorted({c.swept for c, _ in not_run})))
    if failed:
        return 1
    return verdict.exit_status(statuses)
