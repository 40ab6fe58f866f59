"""An optimisation journey: revisions one after another, each built and run
with the comparison machinery (cached builds, interleaved runs, verdicts),
judged step by step and from the first to the last (docs/documents.md)."""

from __future__ import annotations

import json
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..compare import session, verdicts
from ..compare.instructions import STAGES as INSTRUCTION_STAGES
from . import figures, render
from .collect import DocumentError

SEED = 20261122
# The rows of a step's table, when measured: headline latency, throughput, memory, exact instructions.
STEP_METRICS = ("receive_to_book.p50", "receive_to_book.p99", "wire_to_wire.p50", "wire_to_wire.p99",
                "throughput_msg_s", "peak_rss_kib", *(f"instructions.{s}" for s in INSTRUCTION_STAGES))
# The cumulative figure: each relative to the first revision (wire to wire: a gateway brought by its contract).
CUMULATIVE = {"receive_to_book.p50": "receive → book p50", "wire_to_wire.p50": "wire-to-wire p50",
              "throughput_msg_s": "throughput", "instructions.message_path": "instructions / message",
              "peak_rss_kib": "peak RSS"}


def expand(repo: Path, specs: list[str]) -> list[str]:
    """REV1 REV2 … as given; A..B is A and then every commit after it up to B, oldest first."""
    out: list[str] = []
    for spec in specs:
        if ".." in spec and spec != "..":
            first, last = spec.split("..", 1)
            proc = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "--first-parent", spec],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise DocumentError(f"{spec}: not a range of {repo}: {proc.stderr.strip()}")
            out += [first] + proc.stdout.split()
        else:
            out.append(spec)
    if len(out) < 2:
        raise DocumentError("a journey needs at least two revisions (REV1 REV2 … or A..B)")
    return out


@dataclass
class Journey:
    sides: list[session.Side]
    workloads: list[session.Workload]
    steps: list[dict[str, Any]]        # consecutive pairs
    overall: dict[str, Any]            # first -> last
    not_run: list[tuple[str, str]] = field(default_factory=list)  # configurations left out, and why


def _judge(a: session.Side, b: session.Side, threshold: float) -> dict[str, Any]:
    problems = session.identity_differences(a, b)
    outputs, not_compared = session.output_differences(a, b) if not problems else ({}, {})
    return {"metrics": session.metric_verdicts(a, b, threshold, SEED) if not problems else {},
            "outputs": outputs, "outputs_not_compared": not_compared, "not_comparable": problems}


def run(repo: Path, specs: list[str], workloads: list[session.Workload], repetitions: int, threshold: float,
        out: Path, say: Callable[[str], None], instructions: bool = True,
        contract_rel: Path | None = None, not_run: list[tuple[str, str]] | None = None) -> Journey:
    """contract_rel: a gateway brought through its contract (its itchbench.toml, relative to repo); not_run: the
    scenario's configurations it does not take (label, why), said in the document."""
    sides = [session.Side(f"step{i}", spec) for i, spec in enumerate(specs)]
    benchmarks = session.wants_benchmarks(workloads)
    for side in sides:
        session.prepare_revision(side, repo, say, benchmarks=benchmarks, contract_rel=contract_rel)
    broken = [f"{s.spec}: {s.problem}" for s in sides if s.problem]
    if broken:
        raise DocumentError("cannot build every revision of the journey:\n" + "\n".join(broken))
    say(f"running {len(workloads)} workload(s) on {len(sides)} revisions, {repetitions} repetitions each, interleaved")
    session.run_interleaved(sides, workloads, repetitions, out, say)
    if instructions:
        session.measure_instructions(sides, workloads, say)
    broken = [f"{s.spec}: {s.problem}" for s in sides if s.problem]
    if broken:
        raise DocumentError("a revision could not run the workloads:\n" + "\n".join(broken))
    steps = [_judge(a, b, threshold) for a, b in zip(sides, sides[1:])]
    return Journey(sides, workloads, steps, _judge(sides[0], sides[-1], threshold), list(not_run or []))


def _side_value(side: session.Side, label: str, metric: str) -> float | None:
    """The figure of one revision: the median of its runs (timings) or the exact count (instructions)."""
    if metric.startswith("instructions."):
        return side.instructions.get(label, {}).get("per_message", {}).get(metric.split(".", 1)[1])
    values = [m[metric] for m in (session.summary_metrics(r) for r in side.runs.get(label, [])) if metric in m]
    return statistics.median(values) if values else None


def _rows(judged: dict[str, Any], label: str) -> list[dict[str, Any]]:
    table = judged["metrics"].get(label, {})
    names = [m for m in STEP_METRICS if m in table] + sorted(m for m in table if m.startswith("microbench."))
    return [{"metric": m, **table[m], "mark": verdicts.words(m, table[m]["verdict"])} for m in names]


def write(j: Journey, out: Path, title: str | None, threshold_pct: float, repetitions: int) -> tuple[Path, Path]:
    fig_dir = out / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    labels = [w.label for w in j.workloads]
    steps = []
    for i, (judged, a, b) in enumerate(zip(j.steps, j.sides, j.sides[1:]), 1):
        steps.append({"index": i, "before": a.revision.as_dict() if a.revision else {},
                      "after": b.revision.as_dict() if b.revision else {},
                      "workloads": [{"label": w, "rows": _rows(judged, w), **_bbo_of(judged, w),
                                     "runs": [render.relative_link(r / "report.md", out) for r in b.runs.get(w, [])]}
                                    for w in labels],
                      "not_comparable": judged["not_comparable"]})
    revisions = [s.revision.as_dict() if s.revision else {"label": s.spec, "subject": ""} for s in j.sides]
    cumulative = {}
    for w in labels:
        series = {}
        for metric, name in CUMULATIVE.items():
            values = [_side_value(s, w, metric) for s in j.sides]
            if values[0]:
                series[name] = [v / values[0] if v is not None else None for v in values]
        path = f"figures/cumulative-{''.join(c if c.isalnum() or c in '-_.' else '-' for c in w)}.png"
        if figures.steps(out / path, [r["label"][:12] for r in revisions], series, "relative to the first revision",
                         f"{w}: each metric relative to {revisions[0]['label'][:12]}"):
            cumulative[w] = path
    overall = {"workloads": [{"label": w, "rows": _rows(j.overall, w), **_bbo_of(j.overall, w)} for w in labels],
               "not_comparable": j.overall["not_comparable"]}
    context = {"title": title or f"Optimisation journey: {revisions[0]['label'][:12]} → {revisions[-1]['label'][:12]}",
               "revisions": revisions, "steps": steps, "overall": overall, "cumulative": cumulative,
               "workloads": labels, "threshold_pct": threshold_pct, "repetitions": repetitions,
               "alpha": verdicts.ALPHA, "seed": SEED,
               "not_run": [{"label": label, "why": why} for label, why in j.not_run]}
    (out / "journey.json").write_text(json.dumps({k: v for k, v in context.items()}, indent=2, sort_keys=True,
                                                 default=str) + "\n")
    return render.write(out, "journey.md.j2", context, context["title"])


def _bbo_of(judged: dict[str, Any], label: str) -> dict[str, Any]:
    """A workload's output verdict for the document: the BBO comparison, or why it was not compared."""
    return {"bbo": judged["outputs"].get(label, {}).get("bbo"),
            "bbo_not_compared": judged["outputs_not_compared"].get(label)}


def step_lines(j: Journey) -> list[str]:
    """One line a step (and one for the whole journey): what got faster, what slower, whether the output held."""
    def line(name: str, judged: dict[str, Any]) -> str:
        if judged["not_comparable"]:
            return f"{name}: NOT COMPARABLE: {judged['not_comparable'][0]}"
        marks: dict[str, list[str]] = {}  # the metrics that moved, by their words (FASTER, MORE instructions …)
        for label, table in judged["metrics"].items():
            for metric, v in table.items():
                if v["verdict"] in (verdicts.BETTER, verdicts.WORSE):
                    marks.setdefault(verdicts.words(metric, v["verdict"]), []).append(
                        f"{label}: {metric} {v['delta_pct']:+.1f}%")
        differ = [label for label, o in judged["outputs"].items() if not o["bbo"]["equal"]]
        moved = "; ".join(f"{len(ms)} {w} ({', '.join(ms[:3])})" for w, ms in marks.items()) or "no change"
        unseen = judged["outputs_not_compared"]
        return (f"{name}: {moved}"
                + (f"; BBO DIFFERENT on {', '.join(differ)}" if differ else "; BBO SAME" if judged["outputs"] else "")
                + (f"; BBO not compared on {', '.join(unseen)} ({session.NOT_COMPARED_WHY})" if unseen else ""))
    out = [line(f"step {i} {b.revision.label if b.revision else b.spec} "
                f"{b.revision.subject[:50] if b.revision else ''}", judged)
           for i, (judged, b) in enumerate(zip(j.steps, j.sides[1:]), 1)]
    return (out + [line("first -> last", j.overall)]
            + [f"not run: {label}: {why}" for label, why in j.not_run])
