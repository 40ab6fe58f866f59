"""compare.md, compare.json and the overlaid percentile plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .. import atomic  # noqa: E402
from ..analysis import latency_pass, ticks  # noqa: E402
from ..analysis.histogram import quantiles  # noqa: E402
from ..capacity.record import STATUS_MARKS  # noqa: E402
from .verdicts import BETTER, INCONCLUSIVE, NOISY, NOT_COMPARABLE, SAME, SHOWN, WORSE, words  # noqa: E402

SIGN = {BETTER: "✅ ", WORSE: "❌ ", SAME: "· ", NOT_COMPARABLE: "⚠ ", SHOWN: "· ", INCONCLUSIVE: "❔ ", NOISY: "≈ "}


def mark(metric: str, verdict: str) -> str:
    """A verdict in its metric's words (FASTER, MORE instructions, …), signed."""
    return SIGN[verdict] + words(metric, verdict)
SCHEMA_VERSION = 1


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) < 1e6 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def write_json(path: Path, result: dict[str, Any]) -> None:
    atomic.write_text(path, json.dumps({"schema_version": SCHEMA_VERSION, **result}, indent=2, sort_keys=True) + "\n")


def write_markdown(path: Path, result: dict[str, Any]) -> None:
    base, head = result["base"], result["head"]
    md = [f"# itchbench compare: {base['label']} → {head['label']}", "", f"**{result['headline']}**", ""]
    for side in (base, head):
        rev = side.get("revision") or {}
        dirty = " — **DIRTY working tree: uncommitted changes are measured**" if rev.get("dirty") else ""
        md.append(f"- {side['name']}: `{side['spec']}` {rev.get('label', '')} {rev.get('subject', '')}{dirty}")
    harness = result.get("itchbench") or {}
    if harness:  # what ran the measurement, not what was measured
        md.append(f"- itchbench (the harness, not measured): `{harness.get('commit', '?')}`"
                  f"{' (dirty)' if harness.get('dirty') else ''}")
    for side in (base, head):  # the commit messages' bodies: why each side was made, what it measured
        body = (side.get("revision") or {}).get("body")
        if body:
            md += ["", f"{side['name']} `{side['revision']['label']}`:", ""]
            md += [f"> {line}".rstrip() for line in body.splitlines()]
    md += ["", f"Repetitions: {result['repetitions']} a side after one discarded warm-up, interleaved; "
           f"threshold ±{result['threshold_pct']:g} %; a timing verdict needs Mann-Whitney p < {result['alpha']} and "
           f"the 95 % bootstrap CI of the ratio of medians (head/base, seed {result['seed']}) outside 1 ± threshold. "
           "Instructions per message (callgrind, exact): any change beyond 0.5 %. See docs/compare.md.", ""]
    for problem in result["not_comparable"]:
        md += [f"> ⚠ not comparable: {problem}", ""]
    if result.get("black_box"):
        md += ["Black box: a gateway brought through its contract is timed from outside — wire to wire when fed "
               "live (the sender's stamps to the collector's), by its process's wall time from start to exit when "
               "it reads the capture itself, and on every input by its CPU time a message and peak RSS "
               "(process-meter, wait4). Reading a file, its whole process's instructions a message are counted "
               "exactly under callgrind. The stages inside it are not visible to itchbench "
               "(docs/gateway-contract.md).", ""]
    for label, why in result.get("workloads_not_run", {}).items():
        md += [f"> ⚠ {label}: not run on either side: {why}", ""]
    for label, words in result.get("noise", {}).items():
        md += [f"> ⚠ {label}: {words}", ""]
    if result.get("host_differences"):
        md += ["> ⚠ The two sides ran on hosts set differently (base vs head; docs/host.md):", ">"]
        md += [f"> - {d}" for d in result["host_differences"]] + [""]
    for label, table in result["metrics"].items():
        md += [f"## {label}", "", "| metric | base | head | Δ% | 95% CI of ratio | p | verdict |",
               "|---|---:|---:|---:|---|---:|---|"]
        for name, v in table.items():
            ci = f"{v['ci'][0]:.3f}–{v['ci'][1]:.3f}" if "ci" in v else ""
            p = f"{v['p']:.2g}" if "p" in v else ""
            delta = f"{v['delta_pct']:+.1f}" if "delta_pct" in v else ""
            md.append(f"| {name} | {_fmt(v.get('base'))} | {_fmt(v.get('head'))} | {delta} | {ci} | {p} | "
                      f"{mark(name, v['verdict'])} |")
        goals = (result.get("targets") or {}).get(label)
        if goals:
            md += ["", f"Targets (each side on the median of its runs, min–max as the interval; docs/capacity.md): "
                   f"head {goals['head_headline']}", "", "| Metric | Target | base achieved | base status | "
                   "head achieved | head status |", "|---|---|---|---|---|---|"]
            md += [f"| {b['metric']} | {b['target']} | {b['achieved']} | {STATUS_MARKS[b['status']]} | {h['achieved']} | "
                   f"{STATUS_MARKS[h['status']]} |" for b, h in zip(goals["base"], goals["head"])]
        moved = (result.get("profiles") or {}).get(label)
        if moved:
            md += ["", f"Where the time moved (perf, {moved['base_samples']:,} samples base, {moved['head_samples']:,} "
                   "head; own share of the samples)" + (f": [differential flame graph]({moved['flamegraph']}), red "
                                                        "grew, blue shrank" if moved["flamegraph"] else "") + ".", "",
                   "| function | base | head | moved |", "|---|---:|---:|---:|"]
            md += [f"| `{r['function'][:80]}` | {100 * r['base_share']:.1f} % | {100 * r['head_share']:.1f} % | "
                   f"{100 * r['moved']:+.1f} points |" for r in moved["functions"]]
        out = result["outputs"].get(label)
        unseen = result["outputs_not_compared"].get(label)
        if unseen:
            md += ["", f"**BBO output not compared**: {unseen}; a run that lost messages published what the loss "
                   "left, and one that recorded less than its gateway published holds what the recording left, "
                   "whatever the build."]
        if out:
            bbo = out["bbo"]
            if bbo["equal"]:
                md += ["", f"BBO output SAME: `{bbo['base_digest']}` ({bbo['base_events']:,} events)."]
            else:
                md += ["", f"**BBO output DIFFERENT** (head against base, base {bbo['base_events']:,} and head "
                       f"{bbo['head_events']:,} events, matched by seq and stock): {bbo['difference_words']}."]
            depth = out.get("depth")
            if depth and depth["equal"]:
                md += ["", f"Depth output SAME: `{depth['base_digest']}` ({depth['base_events']:,} events)."]
            elif depth:
                md += ["", f"**Depth output DIFFERENT** (head against base, base {depth['base_events']:,} and head "
                       f"{depth['head_events']:,} events, matched by seq and stock): {depth['difference_words']}."]
            if out["counters"]:
                md += ["", "| gateway counter | base | head |", "|---|---:|---:|"]
                md += [f"| {k} | {_fmt(a)} | {_fmt(b)} |" for k, (a, b) in out["counters"].items()]
        md.append("")
    if result.get("plot"):
        md += [f"![receive → book percentiles]({result['plot']})", ""]
    path.write_text("\n".join(md).rstrip() + "\n")


def plot_percentiles(path: Path, base_runs: list[Path], head_runs: list[Path], label: str) -> bool:
    """Latency (receive → book) percentile curves of the first run of each side."""
    if not base_runs or not head_runs:
        return False
    fig, ax = plt.subplots(figsize=(8, 4))
    qs = np.array([50, 75, 90, 95, 99, 99.5, 99.9, 99.99])
    for name, run in (("base", base_runs[0]), ("head", head_runs[0])):
        lat = run / "latency.lat"
        if not lat.is_file():
            plt.close(fig)
            return False
        stages = latency_pass.stages_of(run, 0).stage
        if "receive_to_book" not in stages or not stages["receive_to_book"].count():
            plt.close(fig)
            return False
        v, c = stages["receive_to_book"].values_counts()
        ax.plot(np.arange(qs.size), quantiles(v, c, qs / 100), marker="o", label=name)
    ax.set_xticks(np.arange(qs.size), [f"p{q:g}" for q in qs])
    ax.set_yscale("log")
    ticks.plain_ticks(ax.yaxis)
    ax.set_ylabel("receive → book (ns)")
    ax.set_title(f"{label}: receive → book, first run of each side")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
