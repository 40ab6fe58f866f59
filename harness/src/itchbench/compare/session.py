"""One comparison: two sides (revisions built here, or existing run
directories), the same workloads, runs interleaved A B A B …, every run a
fresh gateway process driven by this checkout's harness."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import paths, rundir
from ..analysis import logs
from ..captures.fixtures import load_manifest
from ..captures.generated import session as generated_session
from ..runs import runner, scenario
from ..gateways import collector, contract
from ..host import differences as host
from ..gateways import provenance, revisions
from . import contract_revisions, instructions, outputs, verdicts

GENERATED_SESSION = ["--profile", "nasdaq-day", "--seed", "1", "--messages", "300000"]
STAGES = ("receive_to_book", "decode", "book", "publish")
PERCENTILES = ("p50", "p90", "p99", "p999", "max")
# What must be equal for runs to be compared at all, besides the workload their scenarios describe
# (_scenario_differences).
IDENTITY = {"capture_sha256": ("capture_sha256",),
            "cpu_model": ("environment", "cpu_model"), "kernel": ("environment", "kernel"),
            "build_type": ("environment", "build", "build_type"), "cxx_flags": ("environment", "build", "cxx_flags")}


PASSING_STATUSES = ("lossless", "faults_accounted", "recovered", "joined", "bbo_differs")


class NotComparable(RuntimeError):
    """The two sides cannot be compared; the message names what differs."""


@dataclass
class Workload:
    label: str
    values: dict[str, Any]


@dataclass
class Side:
    name: str                               # "base" or "head"
    spec: str
    revision: revisions.Revision | None = None
    gateway: Path | None = None
    runs: dict[str, list[Path]] = field(default_factory=dict)  # workload label -> run directories
    instructions: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str = ""                        # why this side is not comparable
    failed: dict[str, str] = field(default_factory=dict)  # workload label -> the first verdict that did not pass
    prepared: contract_revisions.Prepared | None = None  # a contract gateway's worktree (gateway stays None)
    sources_id: str | None = None            # the built-in gateway's: what its runs measured (measured_sources)
    executable_sha256: str | None = None     # the built-in gateway's: the digest of the binary its runs executed

    @property
    def runnable(self) -> bool:
        return (self.gateway is not None or self.prepared is not None) and not self.problem

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec, "revision": self.revision.as_dict() if self.revision else None,
                "gateway": str(self.gateway) if self.gateway else None, "problem": self.problem}


def default_workloads() -> list[Workload]:
    """Simulation of the bundled fixtures and of a larger generated session."""
    out = [Workload(fx.name, scenario.defaults(name=fx.name, transport="sim", capture=str(fx.path)))
           for fx in load_manifest() if fx.compare_workload]
    generated = generated_session(list(GENERATED_SESSION), "compare-nasdaq-day-300k.pcap")
    out.append(Workload("nasdaq-day-300k", scenario.defaults(name="nasdaq-day-300k", transport="sim",
                                                             capture=str(generated))))
    for w in out:
        w.values["gateway"]["latency_log"] = True
    return out


def scenario_workloads(path: Path) -> list[Workload]:
    return [Workload(c.label, c.values) for c in scenario.load(path)]


def load_run_dirs(side: Side, path: Path) -> None:
    """A run directory, or a folder of them (grouped by their label), each run once (rundir.distinct_runs)."""
    dirs = rundir.distinct_runs(rundir.find_run_dirs(path))
    if not dirs:
        raise NotComparable(f"{side.name} {path}: neither a git revision nor a folder of run directories")
    for d in dirs:
        summary = rundir.read_json(d / "summary.json")
        why = logs.not_whole(d, summary)
        if why:
            raise NotComparable(f"{side.name} {why}; nothing is judged from part of a run")
        # A log changed since its run would be judged as the build's output: BBO DIFFERS, for a disk's fault.
        changed = logs.changed_since_run(d, summary)
        if changed:
            raise NotComparable(f"{side.name} {changed}; its output is not judged as the build's")
        gone = outputs.outputs_gone(d)
        if gone:
            raise NotComparable(f"{side.name} {d}: {'; '.join(gone)} no longer there, which its summary counts: "
                                "compared without it, the run would read as one that published nothing")
        add_run(side, rundir.read_json(d / "manifest.json")["label"], d)


def runs_on_both_sides(base: Side, head: Side) -> str:
    """Why two sides of run directories cannot be compared because some run is on both (a folder given twice, one
    inside the other, or a copy of a run: its run_id), or "": a run is one build's measurement, and judged against
    itself it showed NO REGRESSION where nothing had been compared."""
    def ids(side: Side) -> dict[str, Path]:
        return {rundir.run_identity(d): d for runs in side.runs.values() for d in runs}
    in_base, in_head = ids(base), ids(head)
    both = sorted(in_base.keys() & in_head.keys())
    if not both:
        return ""
    a, b = in_base[both[0]], in_head[both[0]]
    run_id = rundir.read_json(a / "manifest.json")["run_id"]
    where = str(a) if a.resolve() == b.resolve() else f"{a} and {b}"
    return (f"{len(both)} run{' is' if len(both) == 1 else 's are'} on both sides (the first: {run_id}, {where}): a "
            "run is one build's measurement, never its own base")


def add_run(side: Side, label: str, run_dir: Path) -> None:
    """A kept run of the side's workload `label`. One that ended without passing (lost, rejected, not balanced,
    not joined) measured something other than the workload: it is compared, and remembered, so the compare
    never passes on it. BBO DIFFERS is judged apart, head's output against base's."""
    side.runs.setdefault(label, []).append(run_dir)
    summary = rundir.read_json(run_dir / "summary.json") if (run_dir / "summary.json").is_file() else {}
    verdict = summary.get("verdict", {})
    if verdict.get("status") not in PASSING_STATUSES:
        side.failed.setdefault(label, verdict.get("headline", "no verdict (no summary.json)"))


def wants_benchmarks(workloads: list[Workload]) -> bool:
    return any(w.values["microbench"]["binaries"] for w in workloads)


def prepare_revision(side: Side, repo: Path, say: Callable[[str], None], *, benchmarks: bool = False,
                     contract_rel: Path | None = None) -> None:
    """The side's revision built: the built-in gateway's binary, or (contract_rel: the gateway's contract file,
    relative to the repository) a worktree built with the contract's own build commands."""
    try:
        side.revision = revisions.resolve(repo, side.spec)
        if contract_rel is not None:
            side.prepared = contract_revisions.prepare(repo, side.revision, contract_rel, say)
        else:
            side.gateway = revisions.build(repo, side.revision, say, benchmarks=benchmarks)
            side.sources_id = revisions.measured_sources(repo, side.revision)
            side.executable_sha256 = provenance.file_sha256(side.gateway)
    except revisions.RevisionError as e:
        side.problem = str(e)


def run_interleaved(sides: list[Side], workloads: list[Workload], repetitions: int, out: Path,
                    say: Callable[[str], None],
                    units: set[tuple[str, int]] | None = None) -> list[tuple[str, int, str, Path]]:
    """One discarded warm-up a side, then the sides in counterbalanced order per workload — base, head; head, base;
    base, head; … (ABBA) —; with units (a shard's part, or added runs: (workload, repetition) pairs) only those,
    each workload warmed up first. Returns every run kept: workload, repetition, side, run directory.

    Counterbalanced, not base, head, base, head: in plain alternation here an unchanged build's head came out
    with 2.8 MB more peak RSS than its base in all 18 runs of a workload (p 1e-6) and 25 % less CPU a message, an
    effect of where a run stands in the sequence, not of the build; ABBA spreads such an effect over both sides."""
    live = [s for s in sides if s.runnable]
    wanted = {label for label, _ in units} if units is not None else None
    plan = [(w, rep, s) for w in workloads for rep in range(0, repetitions + 1)
            for s in (live if rep % 2 or rep == 0 else live[::-1])
            if units is None or (rep == 0 and w.label in wanted) or (w.label, rep) in units]
    kept: list[tuple[str, int, str, Path]] = []
    started = time.monotonic()
    for i, (w, rep, side) in enumerate(plan, 1):
        elapsed = time.monotonic() - started
        eta = f", ~{elapsed / (i - 1) * (len(plan) - i + 1):.0f} s left" if i > 1 else ""
        what = "warm-up" if rep == 0 else f"repetition {rep}/{repetitions}"
        say(f"  [{i}/{len(plan)}] {w.label}: {side.name} {side.revision.label if side.revision else ''} {what}{eta}")
        root = out / "runs" / side.name / ("warmup" if rep == 0 else w.label)
        if side.prepared is not None:
            assert side.revision is not None
            run_dir = runner.execute(w.values, w.label, root=root, echo=False, command="itchbench compare",
                                     under_test=side.prepared.under_test(side.revision))
        else:
            assert side.gateway is not None
            # The revision measured, for whoever reads the run later (a results store orders runs by it).
            measured = {"commit": side.revision.commit, "dirty": side.revision.dirty, "sources_id": side.sources_id,
                        "executable_sha256": side.executable_sha256, "prebuilt": True} if side.revision else None
            with paths.gateway_override(side.gateway):
                run_dir = runner.execute(w.values, w.label, root=root, echo=False, command="itchbench compare",
                                         under_test=measured)
        summary = rundir.read_json(run_dir / "summary.json")
        # A run that could not run makes its side not comparable; one that ended without passing is said (add_run).
        if summary["verdict"]["status"] == "incomplete" and not side.problem:
            side.problem = (f"its gateway could not run {w.label}: {summary['verdict']['headline']} "
                            f"({run_dir})")
        if rep > 0:
            add_run(side, w.label, run_dir)
            kept.append((w.label, rep, side.name, run_dir))
    return kept


def measure_instructions(sides: list[Side], workloads: list[Workload], say: Callable[[str], None]) -> None:
    """Exact instructions per message on every workload the gateway reads from a file: the built-in gateway's
    stages, or a contract gateway's whole process (its `file` command under callgrind)."""
    for w in workloads:
        if w.values["transport"] != "sim":
            continue
        for side in sides:
            if side.problem or (side.gateway is None and side.prepared is None):
                continue
            say(f"  instructions: {w.label} {side.name} (callgrind)")
            capture = Path(w.values["capture"])
            try:
                if side.prepared is not None:
                    c = contract.load(side.prepared.contract)
                    side.instructions[w.label] = instructions.contract_per_message(c, side.prepared.worktree, capture)
                else:
                    assert side.gateway is not None
                    side.instructions[w.label] = instructions.per_message(side.gateway, capture)
            except (instructions.InstructionError, contract.ContractError) as e:
                side.instructions[w.label] = {"error": str(e)}


def identity_differences(base: Side, head: Side) -> list[str]:
    """The identity fields (scenario, capture, machine, build) that differ between the sides' runs."""
    diffs = []
    for label in sorted(set(base.runs) & set(head.runs)):
        ma = rundir.read_json(base.runs[label][0] / "manifest.json")
        mb = rundir.read_json(head.runs[label][0] / "manifest.json")
        diffs += _scenario_differences(label, ma, mb)
        for name, keys in IDENTITY.items():
            va, vb = ma, mb
            for k in keys:
                va = va.get(k) if isinstance(va, dict) else None
                vb = vb.get(k) if isinstance(vb, dict) else None
            diffs += _field_differences(label, name, va, vb)
    return diffs


def _field_differences(label: str, name: str, va: Any, vb: Any) -> list[str]:
    """An identity field's values on the two sides: [] when equal; one not recorded is said unknown, not other."""
    if va == vb:
        return []
    if None in (va, vb):  # unknown is not another value: the run could not say
        side = "base" if va is None else "head"
        return [f"{label}: {name} not recorded by {side}'s run (the other: {va if vb is None else vb!r}), so not "
                "known to be the same"]
    return [f"{label}: {name} differs ({va!r} vs {vb!r})"]


def _scenario_differences(label: str, ma: dict[str, Any], mb: dict[str, Any]) -> list[str]:
    """The workload's keys that differ between two runs' scenarios, named with both values (the first
    rundir.KEYS_NAMED), as one difference; none when they ran the same workload wherever its capture lay
    (rundir.workload_differences). Of manifests that do not both hold their scenario: their scenario hashes."""
    a, b = ma.get("scenario"), mb.get("scenario")
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return _field_differences(label, "scenario_hash", ma.get("scenario_hash"), mb.get("scenario_hash"))
    differ = rundir.workload_differences(a, b)
    if not differ:
        return []
    shown = rundir.KEYS_NAMED
    named = "; ".join(f"{key} {va!r} vs {vb!r}" for key, va, vb in differ[:shown])
    more = f"; and {len(differ) - shown} more" if len(differ) > shown else ""
    return [f"{label}: the scenario differs ({named}{more})"]


def host_differences(base: Side, head: Side) -> list[str]:
    """The host facts (kernel command line, THP, sysctls, SMT, …) that differ between the sides' first runs:
    flagged, not refused (the machine class is the identity; these are settings on it)."""
    labels = sorted(set(base.runs) & set(head.runs))
    if not labels:
        return []
    ma = rundir.read_json(base.runs[labels[0]][0] / "manifest.json")
    mb = rundir.read_json(head.runs[labels[0]][0] / "manifest.json")
    return host.differences(ma.get("environment", {}).get("host"), mb.get("environment", {}).get("host"))


# A percentile is judged only where at least this many messages of every run lie beyond it: p99.9 of 7,000
# messages is the 7th slowest, one outlier's business, and two runs of one build differ there by tens of percent.
MIN_TAIL_MESSAGES = 50
_QUANTILE = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}


def percentile_populations(run_dir: Path) -> dict[str, int]:
    """Per latency figure (a stage, wire to wire): how many messages its percentiles were taken over."""
    s = rundir.read_json(run_dir / "summary.json")
    out = {stage: int(f["count"]) for stage, f in s.get("latency", {}).get("stages", {}).items()
           if isinstance(f, dict) and "count" in f}
    w2w = (s.get("wire_to_wire") or {}).get("from_intended") or {}
    if "count" in w2w:
        out["wire_to_wire"] = int(w2w["count"])
    return out


def _thin_tail(name: str, populations: list[dict[str, int]]) -> str:
    """Why a percentile metric is not judged (too few messages beyond it in some run), or ""."""
    figure, _, pct = name.rpartition(".")
    q = _QUANTILE.get(pct)
    counts = [p[figure] for p in populations if figure in p]
    if q is None or not counts or len(counts) < len(populations):
        return ""
    beyond = int(min(counts) * (1 - q))
    if beyond >= MIN_TAIL_MESSAGES:
        return ""
    return (f"only {beyond:,} messages lie beyond {pct} in the smallest run ({min(counts):,} messages); judging it "
            f"needs {MIN_TAIL_MESSAGES} (shown, not judged)")


def _stamped_when_read(name: str, run_dirs: list[Path]) -> str:
    """Why a wire-to-wire figure is not judged (some run's collector stamped events late by a wait not known), or
    ""."""
    if not name.startswith("wire_to_wire."):
        return ""
    unknown = [n for n in (collector.stamp_counts(rundir.read_json(r / "summary.json").get("wire_to_wire"))[0]
                           for r in run_dirs) if n]
    if not unknown:
        return ""
    return (f"the collector stamped {sum(unknown):,} events when it read them, for want of the kernel's arrival "
            f"stamp, in {len(unknown)} of the {len(run_dirs)} runs: wire to wire there holds its wait as well as the "
            "gateway's (shown, not judged)")


def summary_metrics(run_dir: Path) -> dict[str, float]:
    """Every figure of a run that compare judges: throughput (the built-in gateway's own, or a black box's
    messages over its wall time when it reads the capture itself), its process's CPU time a message and peak RSS
    (wait4, every gateway and input), wire to wire (a black box fed live), stage latencies, distribution, and
    micro-benchmarks."""
    s = rundir.read_json(run_dir / "summary.json")
    m: dict[str, float] = {}
    if "performance" in s:
        m["throughput_msg_s"] = s["performance"]["messages_per_s"]
    res = s.get("resources") or {}
    if res.get("cpu_ns_per_message"):
        m["cpu_ns_per_msg"] = res["cpu_ns_per_message"]
    rss = res.get("max_rss_kib") or s.get("transport_details", {}).get("gateway_max_rss_kib")
    if rss:
        m["peak_rss_kib"] = rss
    w2w = (s.get("wire_to_wire") or {}).get("from_intended")
    if w2w:
        m.update({f"wire_to_wire.{p}": w2w[p] for p in PERCENTILES})
    for stage in STAGES:
        figures = s.get("latency", {}).get("stages", {}).get(stage)
        if figures:
            for p in PERCENTILES:
                m[f"{stage}.{p}"] = figures[p]
    m.update(distribution_metrics(s))
    # A run's micro-benchmark figure is the median of its repetitions; the runs are the samples.
    for name, b in s.get("microbench", {}).get("benchmarks", {}).items():
        m[f"microbench.{name}.real_time_ns"] = b["real_time_ns"]
    return m


DISTRIBUTION_PERCENTILES = ("p50", "p99", "p999")


def distribution_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """Each subscriber's last hop (published -> received) as its own metric, named by how it received:
    distribution.tcp0.p50, distribution.shm1.p99, distribution.mqtt2.p50, distribution.kafka3.p50."""
    kinds = {str(x["index"]): x.get("kind", "tcp") for x in (summary.get("reconciliation") or {}).get("subscribers", [])}
    out: dict[str, float] = {}
    for key, rows in (summary.get("latency", {}).get("hops") or {}).get("to_subscriber", {}).items():
        hop = next((r for r in rows if str(r.get("hop", "")).startswith(f"subscriber {key} ")), None)
        if hop:
            out.update({f"distribution.{kinds.get(key, 'tcp')}{key}.{p}": hop[p] for p in DISTRIBUTION_PERCENTILES
                        if p in hop})
    return out


def _named_by_every_run(side: Side, key: str) -> str | None:
    """What every run of the side names as its gateway_under_test's key (its sources_id, its executable_sha256), or
    None when a run names none or two runs name different ones."""
    ids = {(rundir.read_json(r / "manifest.json").get("gateway_under_test") or {}).get(key)
           for runs in side.runs.values() for r in runs}
    return ids.pop() if len(ids) == 1 and None not in ids else None


def same_build(base: Side, head: Side) -> str | None:
    """How base and head are one build, when they are: the same sources (an A/A compare, or a head that changed
    only files the gateway's build does not read), or the same executable, byte for byte (a head that changed a
    comment, or a test or tool beside the gateway: its sources differ, the binary its runs executed does not); else
    None."""
    for key, said in (("sources_id", "sources {}"), ("executable_sha256", "the same executable, sha256 {:.16}…")):
        ids = _named_by_every_run(base, key), _named_by_every_run(head, key)
        if ids[0] is not None and ids[0] == ids[1]:
            return said.format(ids[0])
    return None


def metric_verdicts(base: Side, head: Side, threshold: float, seed: int) -> dict[str, dict[str, dict[str, Any]]]:
    """Per workload, per metric: the verdict. Where base and head are one build, a timing or memory figure that
    differs is shown, not judged: the difference is the machine's, not the code's (instructions, exact, are still
    judged)."""
    one_build = same_build(base, head)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for label in sorted(set(base.runs) | set(head.runs)):
        a = [summary_metrics(r) for r in base.runs.get(label, [])]
        b = [summary_metrics(r) for r in head.runs.get(label, [])]
        run_dirs = [*base.runs.get(label, []), *head.runs.get(label, [])]
        populations = [percentile_populations(r) for r in run_dirs]
        names = sorted({k for m in a + b for k in m})
        table: dict[str, dict[str, Any]] = {}
        for i, name in enumerate(names):
            table[name] = verdicts.timing([m[name] for m in a if name in m], [m[name] for m in b if name in m],
                                          higher_is_better=name == "throughput_msg_s", threshold=threshold,
                                          seed=seed + i)
            one_side = [side.name for side, ms in ((base, a), (head, b)) if ms and all(name in m for m in ms)]
            if len(one_side) == 1 and not any(name in m for m in (b if one_side == ["base"] else a)):
                # Measured on one side only (a head that stopped writing its latency log, say): never dropped
                # quietly, or a regression there would pass unseen.
                table[name].update(verdict=verdicts.NOT_COMPARABLE, one_side=one_side[0],
                                   reason=f"measured on {one_side[0]} only")
            thin = _stamped_when_read(name, run_dirs) or _thin_tail(name, populations)
            if one_build and table[name]["verdict"] in (verdicts.WORSE, verdicts.BETTER):
                thin = (f"{verdicts.words(name, table[name]['verdict'])} by the statistics, but base and head are "
                        f"one build ({one_build}): the difference is the machine's, not the code's (shown, "
                        "not judged)")
                table[name]["machine"] = True
            if name.endswith(".max") and table[name]["verdict"] != verdicts.NOT_COMPARABLE:
                table[name]["verdict"] = verdicts.SHOWN
            elif thin and table[name]["verdict"] != verdicts.NOT_COMPARABLE:
                table[name].update(verdict=verdicts.SHOWN, reason=thin)
            table[name]["words"] = verdicts.words(name, table[name]["verdict"])
        out[label] = table
        ia, ib = base.instructions.get(label), head.instructions.get(label)
        if ia is None and ib is None:
            continue  # not counted: not read from a file, or --no-instructions
        ia, ib = ia or {}, ib or {}
        why = "; ".join(f"{side.name}: {d['error'].strip().splitlines()[-1][:200]}"
                        for side, d in ((base, ia), (head, ib)) if "error" in d)
        black_box = base.prepared is not None or head.prepared is not None
        for stage in (instructions.CONTRACT_STAGE,) if black_box else instructions.STAGES:
            inlined = [f"{side.name} inlines it into the message path" for side, d in ((base, ia), (head, ib))
                       if stage in d.get("inlined_stages", [])]
            table[f"instructions.{stage}"] = verdicts.exact(ia.get("per_message", {}).get(stage),
                                                            ib.get("per_message", {}).get(stage),
                                                            why="; ".join(filter(None, [why, *inlined])))
            table[f"instructions.{stage}"]["words"] = verdicts.words(f"instructions.{stage}",
                                                                     table[f"instructions.{stage}"]["verdict"])
    return out


def _noise_of(run_dir: Path) -> tuple[float, float] | None:
    """(steal share of busy CPU time, hot-thread preemptions) of one run, or None where not recorded."""
    noise = rundir.read_json(run_dir / "summary.json").get("noise")
    if not noise:
        return None
    steal, busy = noise["steal_ms"], noise["busy_ms"]
    hot = noise.get("hot_thread") or {}
    return (steal / (steal + busy) if steal + busy else 0.0, float(hot.get("involuntary_switches", 0)))


# Noise that weakens a timing verdict: steal shares this far apart (absolute), or preemptions this many times as
# many (and at least MIN_PREEMPTIONS more).
STEAL_APART, PREEMPTION_RATIO, MIN_PREEMPTIONS = 0.01, 2.0, 10


def noise_differences(base: Side, head: Side) -> dict[str, str]:
    """Per workload whose two sides ran under different noise (medians of their runs), what differed."""
    out = {}
    for label in sorted(set(base.runs) & set(head.runs)):
        sides = [[n for n in map(_noise_of, side.runs[label]) if n is not None] for side in (base, head)]
        if not all(sides):
            continue
        (sa, pa), (sb, pb) = ((float(np.median([n[i] for n in ns])) for i in (0, 1)) for ns in sides)
        differs = abs(sa - sb) > STEAL_APART or (
            abs(pa - pb) >= MIN_PREEMPTIONS and max(pa, pb) > PREEMPTION_RATIO * max(min(pa, pb), 1))
        if differs:
            out[label] = (f"base and head ran under different noise (medians): steal {sa:.1%} vs {sb:.1%} of busy "
                          f"CPU time, hot-thread preemptions {pa:,.0f} vs {pb:,.0f} a run; timing verdicts here are "
                          "weaker than their p-values say")
    return out


# Why a workload's output was not compared, in a headline.
NOT_COMPARED_WHY = ("no run of a side has an output to judge: it lost messages, or recorded less than its gateway "
                    "published")


def output_unjudged(run: Path) -> str:
    """Why a run's output says nothing of its build, or "" when it does. One that lost messages (on the way, or
    never brought back) published what the loss left, whatever the build; one that recorded less of its output
    than the gateway published (a log full, a collector's socket overrun: runs/reconcile.py output_unrecorded)
    holds what the recording left. Any other verdict is the gateway's own doing."""
    summary = rundir.read_json(run / "summary.json") if (run / "summary.json").is_file() else {}
    if summary.get("verdict", {}).get("status") == "lost":
        return f"it lost messages: {summary['verdict']['headline']}"
    unrecorded = summary.get("reconciliation", {}).get("output_unrecorded")
    return f"it recorded less of the output than the gateway published: {'; '.join(unrecorded)}" if unrecorded else ""


def run_output_judged(runs: list[Path]) -> Path | None:
    """The first of a workload's runs whose output is the build's to judge (output_unjudged)."""
    return next((run for run in runs if not output_unjudged(run)), None)


def output_differences(base: Side, head: Side) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Per workload, head's output against base's, each side's first run whose output is the build's
    (output_unjudged); and the workloads whose output was not compared, with why: a side none of whose runs has
    (compared, its output would differ by what was lost, on a build that changed nothing)."""
    out, not_compared = {}, {}
    for label in sorted(set(base.runs) & set(head.runs)):
        ra, rb = run_output_judged(base.runs[label]), run_output_judged(head.runs[label])
        if ra is None or rb is None:
            sides = [s for s, r in ((base, ra), (head, rb)) if r is None]
            not_compared[label] = "; ".join(f"none of {s.name}'s {len(s.runs[label])} run(s) has an output to judge "
                                            f"(the first: {output_unjudged(s.runs[label][0])})" for s in sides)
            continue
        black_box = not (ra / "gateway.json").is_file()
        out[label] = {"bbo": outputs.compare_bbo(ra, rb),
                      "counters": {} if black_box else outputs.compare_counters(ra, rb)}
        depth = None if black_box else outputs.compare_depth(ra, rb)  # a brought gateway's depth is its "bbo"
        if depth is not None:
            out[label]["depth"] = depth
    return out, not_compared
