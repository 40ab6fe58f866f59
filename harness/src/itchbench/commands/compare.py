"""itchbench compare BASE HEAD: two builds of the gateway on the same workloads."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .. import paths
from .common import folder_path, percentage

if TYPE_CHECKING:
    from ..compare import session

SEED = 20261122  # bootstrap resampling: fixed, recorded, so the same runs give the same report


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("compare", help="compare two revisions (or two sets of run directories) of the gateway",
                       description="Build BASE and HEAD (git revisions of --repo: a commit, branch, tag, HEAD~3, or "
                       "WORKTREE for the working tree with its uncommitted changes), each once in its own git "
                       "worktree, cached under reports/cache/builds; or take existing run directories. Run both on "
                       "the same workloads, interleaved, and judge every metric. Exit 0: no regression; 1: a "
                       "regression or an output difference; 2: usage error or not comparable.")
    c.add_argument("base", metavar="BASE")
    c.add_argument("head", metavar="HEAD")
    c.add_argument("--scenario", type=Path, help="workloads from a scenario (default: simulation of the bundled "
                   "fixtures and of a 300k-message generated session)")
    c.add_argument("--repetitions", type=int, default=9, help="runs a side after the warm-up (default %(default)s)")
    c.add_argument("--max-repetitions", type=int, metavar="N",
                   help="runs a side at most: a workload with a timing still undecided (TOO NOISY or INCONCLUSIVE) "
                        "after --repetitions gets more, interleaved, in batches of half as many, up to N (default: "
                        "twice --repetitions; equal to --repetitions: none)")
    c.add_argument("--threshold", type=percentage(), default=5.0, metavar="PCT",
                   help="smallest timing change that counts, in percent (default %(default)s)")
    c.add_argument("--out", type=folder_path, help="output folder (default reports/compare/STAMP)")
    c.add_argument("--repo", type=Path, default=Path.cwd(), help="the git repository (default: the current folder)")
    c.add_argument("--no-instructions", action="store_true", help="skip the callgrind instruction counts")
    c.add_argument("--profile", action="store_true",
                   help="sample both sides' gateways with perf in every run and show where the time moved: the "
                        "functions whose share changed and a differential flame graph (docs/profile.md)")
    c.add_argument("--bbo-only", action="store_true",
                   help="judge the BBO output alone: a workload on which no speed metric could be judged is then no "
                        "reason for exit 2")
    c.add_argument("--allow-inconclusive", action="store_true",
                   help="exit 0 when the only findings are INCONCLUSIVE timings or UNDECIDED targets (default: exit "
                        "1, as for a regression: the runs point at a change they do not establish)")
    c.add_argument("--gateway", type=Path, metavar="FILE",
                   help="compare a gateway brought through its contract: FILE is its itchbench.toml, relative to "
                        "--repo (e.g. itchbench.toml); each revision is built with the contract's build commands "
                        "in a worktree of its own; workloads default to scenarios/gateway.toml "
                        "(docs/gateway-contract.md)")
    c.add_argument("--shard", metavar="K/N",
                   help="run only the K-th of N parts of the repetitions (K from 0; default $ITCHBENCH_SHARD), both "
                        "sides each, and write shard-K-of-N.json in --out; judge nothing (docs/sharding.md)")
    c.add_argument("--merge", nargs="+", type=Path, metavar="DIR",
                   help="judge the runs of every shard of a sharded compare of BASE and HEAD (their --out "
                        "folders), without building or running anything")
    c.set_defaults(func=run)


def _targets(base: session.Side, head: session.Side) -> dict[str, dict[str, Any]]:
    """Per workload whose scenario sets targets: each side's runs judged on them (docs/capacity.md)."""
    from .. import rundir
    from ..capacity import record, targets
    out: dict[str, dict[str, Any]] = {}
    for label in sorted(set(base.runs) & set(head.runs)):
        runs = head.runs[label]
        set_ = targets.set_targets(rundir.read_json(runs[0] / "manifest.json").get("scenario") or {}) if runs else {}
        set_.pop("saturation_msg_s", None)
        if not set_:
            continue
        sides = {name: targets.judge(set_, record.measures_of(side.runs[label])) for name, side in
                 (("base", base), ("head", head))}
        out[label] = {"base": [j.row() for j in sides["base"]], "head": [j.row() for j in sides["head"]],
                      "head_headline": targets.headline(sides["head"]), "head_judged": sides["head"]}
    return out


def _side(name: str, spec: str, repo: Path, say, benchmarks: bool, contract_rel: Path | None) -> session.Side:
    from ..compare import session
    side = session.Side(name, spec)
    if _is_run_folder(spec):
        session.load_run_dirs(side, Path(spec))
    else:
        session.prepare_revision(side, repo, say, benchmarks=benchmarks, contract_rel=contract_rel)
    return side


def _flags_difference(repo: Path, base: str, head: str, say: Callable[[str], None]) -> str:
    """Two revisions of the built-in gateway whose compiler flags differ: not comparable, said before building."""
    from ..gateways import revisions
    if _is_run_folder(base) or _is_run_folder(head):
        return ""  # their runs' manifests are compared
    try:
        return revisions.flags_difference(repo, revisions.resolve(repo, base), revisions.resolve(repo, head), say)
    except revisions.RevisionError:
        return ""  # the build says why, as a side's problem


def _is_run_folder(spec: str) -> bool:
    """A side given as a folder of run directories, not a revision."""
    from ..gateways import revisions
    path = Path(spec)
    return spec != revisions.WORKTREE and path.is_dir() and not (path / ".git").exists()


def gateway_workloads(scenario_file: Path | None, contract_file: Path, say: Callable[[str], None] | None = None,
                      not_run: list[tuple[session.Workload, str]] | None = None) -> list[session.Workload]:
    """A contract gateway's workloads: the scenario's (default scenarios/gateway.toml) with the gateway named;
    those of inputs it does not take are left out, each said in one line and added to not_run with why."""
    from ..compare import session
    from ..gateways import contract
    from ..runs import scenario
    c = contract.load(contract_file)
    workloads = session.scenario_workloads(scenario_file or paths.repo_root() / "scenarios" / "gateway.toml")
    kept = []
    for w in workloads:
        why = scenario.input_not_taken(w.values, c)
        if why:
            if say:
                say(f"skipped {w.label}: {why}")
            if not_run is not None:
                not_run.append((w, why))
            continue
        w.values["gateway_file"] = str(contract_file)
        kept.append(w)
    return kept


# Past this many runs a side, an estimate of the runs that would decide a metric says only that none will.
MOST_RUNS_WORTH_SAYING = 10_000


def _runs_to_decide(n: int) -> str:
    return (f"~{n:,} runs a side would likely decide it" if n <= MOST_RUNS_WORTH_SAYING else
            "no affordable number of runs would decide it: the change, if any, is well inside the noise")


def inconclusive_words(metrics: dict[str, dict[str, dict]], verdict: str = "inconclusive") -> list[str]:
    """Each inconclusive (or too noisy) metric: its change, interval and p, and the runs a side that would likely
    decide it."""
    return [f"{label}: {name} {v['delta_pct']:+.1f} % (95 % CI of the ratio {v['ci'][0]:.2f}–{v['ci'][1]:.2f}, "
            f"p {v['p']:.2g}; {_runs_to_decide(v['repetitions_to_decide'])})"
            for label, t in sorted(metrics.items()) for name, v in sorted(t.items()) if v["verdict"] == verdict]


def add_runs_while_undecided(base: "session.Side", head: "session.Side", workloads: list["session.Workload"],
                             repetitions: int, most: int, out: Path, threshold: float,
                             say: Callable[[str], None]) -> int:
    """More interleaved runs, in batches of half the first count, for the workloads whose timings are undecided,
    until none is or `most` runs a side are made (Pinpoint's way of adding repeats before a verdict). Returns
    the runs a side made of the workloads that needed the most."""
    from ..compare import session, verdicts
    done = repetitions
    batch = max(2, repetitions // 2)
    while done < most:
        undecided = verdicts.undecided_workloads(session.metric_verdicts(base, head, threshold, SEED))
        if not undecided:
            break
        more = min(batch, most - done)
        say(f"undecided timings on {', '.join(undecided)}: {more} more runs a side there, interleaved "
            f"({done + more} of at most {most})")
        units = {(label, rep) for label in undecided for rep in range(done + 1, done + more + 1)}
        session.run_interleaved([base, head], [w for w in workloads if w.label in undecided], done + more, out,
                                say, units=units)
        done += more
    return done


def run(args: argparse.Namespace) -> int:
    from ..compare import report, session, verdicts
    from ..runs import environment
    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    if args.repetitions < verdicts.MIN_REPETITIONS:
        print(f"itchbench: --repetitions must be at least {verdicts.MIN_REPETITIONS}", file=sys.stderr)
        return 2
    if args.max_repetitions is not None and args.max_repetitions < args.repetitions:
        print(f"itchbench: --max-repetitions {args.max_repetitions} is below --repetitions {args.repetitions}: "
              "runs a side at most, at least as many as --repetitions (equal to it: no runs added)", file=sys.stderr)
        return 2
    if args.repetitions < verdicts.timing_repetitions():
        say(f"note: {args.repetitions} repetitions a side cannot reach p < {verdicts.ALPHA}: timings are shown, not "
            f"judged (at least {verdicts.timing_repetitions()} for a timing verdict; 9 by default)")
    from ..compare import sharded
    from ..runs import shards
    try:
        shard = shards.requested(args.shard)
    except shards.ShardError as e:
        print(f"itchbench: {e}", file=sys.stderr)
        return 2
    folders = [spec for spec in (args.base, args.head) if _is_run_folder(spec)]
    if shard and folders and not args.merge:  # refused before an --out is made: nothing was to be run
        print(f"itchbench: a sharded compare runs two revisions a part at a time, and {' and '.join(folders)} "
              f"{'is a run directory' if len(folders) == 1 else 'are run directories'}, whose runs are made: "
              "compare them without --shard", file=sys.stderr)
        return 2
    if not args.merge and not (_is_run_folder(args.base) and _is_run_folder(args.head)):
        from ..gateways import revisions
        try:  # refused before a report is written: there is nothing to compare
            revisions.require_repository(args.repo)
        except revisions.RevisionError as e:
            print(f"itchbench: compare: {e}", file=sys.stderr)
            return 2
    out = args.out or paths.repo_root() / "reports" / "compare" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)

    def not_comparable(e: Exception) -> int:
        print(f"itchbench: not comparable: {e}", file=sys.stderr)
        if made and not any(out.iterdir()):
            out.rmdir()  # refused before anything was written: no empty folder left to look like a compare
        return 2

    if args.merge:
        try:
            base, head = sharded.merged_compare_sides(args.merge, args.repo, args.base, args.head)
        except (shards.ShardError, session.NotComparable) as e:
            return not_comparable(e)
        args.no_instructions = True  # exact counts are measured once, unsharded: shards hold timings and outputs
    else:
        say(f"compare {args.base} -> {args.head}: preparing each side (a revision built, run directories read)")
        try:
            benchmarks = bool(args.scenario) and session.wants_benchmarks(session.scenario_workloads(args.scenario))
            early = "" if args.gateway else _flags_difference(args.repo, args.base, args.head, say)
            if early:
                base, head = session.Side("base", args.base), session.Side("head", args.head, problem=early)
            else:
                base = _side("base", args.base, args.repo, say, benchmarks, args.gateway)
                head = _side("head", args.head, args.repo, say, benchmarks, args.gateway)
                shared = session.runs_on_both_sides(base, head)
                if shared:
                    raise session.NotComparable(shared)
        except session.NotComparable as e:
            return not_comparable(e)
    to_run = [s for s in (base, head) if s.gateway is not None or s.prepared is not None]
    not_run: list[tuple[session.Workload, str]] = []  # workloads whose input the brought gateway does not take
    if args.gateway and to_run:
        # Both sides' runs name the same contract path, so their scenario hashes agree; each runs its own
        # revision's copy (Side.prepared).
        workloads = gateway_workloads(args.scenario, (args.repo / args.gateway).resolve(), say, not_run)
    else:
        workloads = (session.scenario_workloads(args.scenario) if args.scenario else session.default_workloads()) \
            if to_run else []
    if shard and not args.merge:
        if any(s.problem for s in (base, head)) or len(to_run) != 2 or not base.revision or not head.revision:
            print("itchbench: a sharded compare needs two revisions that build: "
                  + "; ".join(s.problem for s in (base, head) if s.problem), file=sys.stderr)
            return 2
        record, kept = sharded.run_compare_shard(shard, base, head, workloads, args.repetitions, args.scenario, out,
                                                 say)
        print(f"{shard.name}: {kept} runs; record {record}\njudge every shard together: itchbench compare "
              f"{args.base} {args.head} --merge DIR... (each shard's --out)")
        return 2 if any(s.problem for s in (base, head)) else 0
    if args.profile:
        for w in workloads:
            w.values["profile"]["enabled"] = True
    repetitions_made = args.repetitions
    if to_run and not any(s.problem for s in (base, head)):
        say(f"running {len(workloads)} workload(s), {args.repetitions} repetitions a side, interleaved")
        session.run_interleaved(to_run, workloads, args.repetitions, out, say)
        most = args.max_repetitions if args.max_repetitions is not None else 2 * args.repetitions
        if len(to_run) == 2 and not any(s.problem for s in (base, head)):
            repetitions_made = add_runs_while_undecided(base, head, workloads, args.repetitions,
                                                        max(most, args.repetitions), out, args.threshold / 100, say)
        if not args.no_instructions:
            session.measure_instructions(to_run, workloads, say)
    problems = [f"{s.name} ({s.spec}): {s.problem}" for s in (base, head) if s.problem]
    problems += session.identity_differences(base, head)
    metrics = session.metric_verdicts(base, head, args.threshold / 100, SEED) if not problems else {}
    outs, not_compared = session.output_differences(base, head) if not problems else ({}, {})
    noise = session.noise_differences(base, head) if not problems else {}
    def named(verdict: str) -> dict[str, list[str]]:
        """The metrics with this verdict, grouped by the words their kind uses (SLOWER, MORE instructions …)."""
        out: dict[str, list[str]] = {}
        for label, t in sorted(metrics.items()):
            for name, v in sorted(t.items()):
                if v["verdict"] == verdict:
                    out.setdefault(verdicts.words(name, verdict), []).append(f"{label}: {name}")
        return out

    def listing(groups: dict[str, list[str]], most: int) -> str:
        return "; ".join(f"{len(ms)} {w}: {', '.join(ms[:most])}{' …' if len(ms) > most else ''}"
                         for w, ms in groups.items())

    slower, faster = named(verdicts.WORSE), named(verdicts.BETTER)
    undecided = named(verdicts.INCONCLUSIVE)
    noisy = named(verdicts.NOISY)
    bbo_differs = [label for label, o in outs.items() if not o["bbo"]["equal"]]
    depth_differs = [label for label, o in outs.items() if o.get("depth") and not o["depth"]["equal"]]
    differ = bbo_differs + depth_differs
    same = ("BBO output SAME" if not not_compared else
            f"BBO output not compared on {', '.join(not_compared)} ({session.NOT_COMPARED_WHY})"
            + (", SAME elsewhere" if outs else ""))
    # A workload on which no speed metric was judged (nothing timed, too few runs, no instructions) says nothing
    # about speed: never a pass.
    unmeasured = sorted(label for label, t in metrics.items()
                        if not any(v["verdict"] in verdicts.JUDGED for v in t.values()))
    dirty = any(s.revision and s.revision.dirty for s in (base, head))
    unjudged = sorted({label for label, t in metrics.items() for v in t.values()
                       if "cannot reach" in v.get("reason", "")})
    few_runs = (f" (timings not judged on {', '.join(unjudged)}: too few runs a side to reach p < "
                f"{verdicts.ALPHA}; use --repetitions {verdicts.timing_repetitions()} or more)") if unjudged else ""
    one_sided = sorted(f"{label}: {name} ({v['reason']})" for label, t in metrics.items() for name, v in t.items()
                       if v.get("one_side"))
    if problems:
        headline, status = "NOT COMPARABLE: " + "; ".join(p.splitlines()[0] for p in problems), 2
    elif one_sided and not (slower or differ):
        headline = (f"NOT COMPARABLE: {len(one_sided)} metric(s) measured on one side only, so a change there "
                    f"cannot be seen: {'; '.join(one_sided[:3])}{' …' if len(one_sided) > 3 else ''}")
        status = 2
    elif slower or differ:
        parts = ([f"BBO OUTPUT DIFFERS on {', '.join(bbo_differs)}"] if bbo_differs else []) + \
                ([f"DEPTH OUTPUT DIFFERS on {', '.join(depth_differs)}"] if depth_differs else []) + \
                ([listing(slower, 4)] if slower else [])
        headline, status = "REGRESSION: " + "; ".join(parts) + few_runs, 1
    elif unmeasured and not args.bbo_only:
        headline = (f"NOT COMPARABLE: no speed metric judged on {', '.join(unmeasured)} ({same}; "
                    "judge the output alone with --bbo-only)" + few_runs)
        status = 2
    elif unjudged_output := [label for label in unmeasured if label in not_compared]:
        # --bbo-only, and the output not compared either: nothing at all was judged there.
        headline, status = f"NOT COMPARABLE: nothing judged on {', '.join(unjudged_output)} ({same})" + few_runs, 2
    elif undecided:
        headline = (f"INCONCLUSIVE: {same}, no regression shown; {listing(undecided, 3)} — "
                    + "; ".join(inconclusive_words(metrics)))
        status = 0 if args.allow_inconclusive else 1
    else:
        headline = f"NO REGRESSION: {same}" + (f"; {listing(faster, 3)}" if faster else "; nothing better")
        if noisy:
            headline += (f"; {sum(map(len, noisy.values()))} too noisy to decide at this size (no change shown, "
                         f"none ruled out): {'; '.join(inconclusive_words(metrics, verdicts.NOISY)[:3])}"
                         f"{' …' if sum(map(len, noisy.values())) > 3 else ''}")
        if args.bbo_only and unmeasured:
            headline += f" (BBO only: no speed judged on {', '.join(unmeasured)})"
        headline += few_runs
        status = 0
    from ..capacity import targets
    from ..compare import profiles
    judged = _targets(base, head)
    misses = [f"{label}: {t['head_headline']}" for label, t in judged.items()
              if not targets.passed(t["head_judged"], args.allow_inconclusive)]
    # A workload not run judges nothing: its targets are NOT MEASURED, as `itchbench run` says of them.
    misses += [f"{w.label}: {targets.not_run_headline(unmeasured, why)}" for w, why in not_run
               if (unmeasured := targets.not_run(w.values))]
    if not_run and not problems:
        headline += (f"; {len(not_run)} workload(s) not run, the gateway taking none of their input: "
                     f"{', '.join(w.label for w, _ in not_run)}")
    if misses and not problems:
        headline += " | HEAD " + "; ".join(misses)
        status = max(status, 1)
    for side in (base, head):
        if side.failed and not problems:
            headline += (f" | {side.name.upper()} RUNS DID NOT PASS on "
                         + "; ".join(f"{label}: {h}" for label, h in sorted(side.failed.items())))
            status = max(status, 1)
    machine = sum(1 for t in metrics.values() for v in t.values() if v.get("machine"))
    one_build = session.same_build(base, head) if not problems else None
    if one_build:
        headline += (f" (base and head are one build, {one_build}: "
                     + (f"{machine} timing difference(s) the statistics found are the machine's, shown and not judged)"
                        if machine else "none of its timings called slower or faster)"))
    if noise:
        headline += f" (noise differed on {', '.join(noise)}: see compare.md)"
    host_diffs = session.host_differences(base, head) if not problems else []
    if host_diffs:
        headline += f" (the hosts differ in {len(host_diffs)} setting(s): see compare.md)"
    if dirty:
        headline += " [dirty working tree]"
    plot = None
    main = next(iter(sorted(set(base.runs) & set(head.runs))), None)
    if main and not problems and report.plot_percentiles(out / "percentiles.png", base.runs[main], head.runs[main], main):
        plot = "percentiles.png"
    result = {
        "headline": headline, "exit_status": status, "repetitions": args.repetitions,
        "repetitions_made": repetitions_made,
        "threshold_pct": args.threshold, "alpha": verdicts.ALPHA, "seed": SEED,
        "base": {"name": "base", "label": base.revision.label if base.revision else args.base, **base.describe()},
        "head": {"name": "head", "label": head.revision.label if head.revision else args.head, **head.describe()},
        "not_comparable": problems, "metrics": metrics, "outputs": outs,
        "outputs_not_compared": not_compared, "noise": noise,
        "black_box": bool(args.gateway), "itchbench": environment.git_state(),
        "instructions": {"base": base.instructions, "head": head.instructions},
        "runs": {s.name: {k: [str(p) for p in v] for k, v in s.runs.items()} for s in (base, head)},
        "runs_not_passing": {s.name: s.failed for s in (base, head) if s.failed},
        "plot": plot,
        "targets": {label: {k: v for k, v in t.items() if not k.endswith("_judged")} for label, t in judged.items()},
        "host_differences": host_diffs,
        "workloads_not_run": {w.label: why for w, why in not_run},
        "profiles": {label: moved for label in sorted(set(base.runs) & set(head.runs))
                     if (moved := profiles.moved(base.runs[label], head.runs[label], out, label))},
    }
    report.write_json(out / "compare.json", result)
    report.write_markdown(out / "compare.md", result)
    say(f"report: {out / 'compare.md'}")
    print(headline)
    return status
