"""Verdicts per metric (docs/compare.md).

Timing metrics (throughput, latency, CPU time, peak RSS) are noisy: a verdict
needs an effect beyond the threshold, a Mann-Whitney p below ALPHA, and a
bootstrap confidence interval of the ratio of medians that lies wholly outside
the band 1 ± threshold. A significant p that the effect or the interval does
not carry beyond the band is INCONCLUSIVE: the runs show a change whose size
they do not establish. An effect beyond the threshold with p at or above ALPHA
is TOO NOISY: the runs do not show a change, and the noise at this number of
runs is too large to say there is none; compare adds runs to such metrics, and
what stays too noisy is shown with its interval and does not fail the gate
(an unchanged build compared with itself on a busy machine came out beyond ±5 %
on a third of its metrics, none of them with p < ALPHA). Neither is ever NO
CHANGE. Instruction counts are exact: any change beyond 0.5 % is reported,
with no repetitions needed.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from .statistics import bootstrap_ratio_ci, mann_whitney_u

ALPHA = 0.002          # as asv: a timing change needs p < 0.002 ...
INSTRUCTION_THRESHOLD = 0.005
MIN_REPETITIONS = 3    # fewer give no bootstrap interval; exact metrics (instructions, output) need no more
# ... which the exact two-sided Mann-Whitney test reaches only from 7 runs a side (smallest p: 2 / C(2n, n)).
BETTER, WORSE, SAME, NOT_COMPARABLE = "faster", "slower", "unchanged", "not comparable"
INCONCLUSIVE = "inconclusive"  # the runs show a change (p < ALPHA) whose size they do not establish
NOISY = "too noisy"  # beyond the threshold, p >= ALPHA: no change shown, none ruled out at this size
SHOWN = "shown, not judged"  # the max of a run is one sample: its changes are not verdicts

# What a verdict is called, by the kind of metric: instructions and memory are not time, so a step that adds
# instructions but runs faster is never "SLOWER". BBO output: SAME or DIFFERENT.
_WORDS = {"time": ("FASTER", "SLOWER", "NO CHANGE"), "instructions": ("FEWER instructions", "MORE instructions",
                                                                       "SAME instructions"),
          "memory": ("LESS memory", "MORE memory", "SAME memory")}
MEMORY_METRICS = ("peak_rss_kib",)
# Metrics that say how fast or how big: a compare that judged none of them on a workload judged no speed there.
JUDGED = (BETTER, WORSE, SAME, INCONCLUSIVE, NOISY)
UNDECIDED = (INCONCLUSIVE, NOISY)  # what more runs may decide


def undecided_workloads(metrics: dict[str, dict[str, dict]]) -> list[str]:
    """The workloads with a timing that more runs may decide (TOO NOISY or INCONCLUSIVE): per workload, its metrics'
    verdicts as compare judges them (and compare.json holds them)."""
    return sorted(label for label, t in metrics.items() if any(v["verdict"] in UNDECIDED for v in t.values()))


def metric_kind(metric: str) -> str:
    return "instructions" if metric.startswith("instructions.") else "memory" if metric in MEMORY_METRICS else "time"


def words(metric: str, verdict: str) -> str:
    """The words a report uses for a metric's verdict."""
    if verdict == NOT_COMPARABLE:
        return "NOT COMPARABLE"
    if verdict == SHOWN:
        return "SHOWN, NOT JUDGED"
    if verdict == INCONCLUSIVE:
        return "INCONCLUSIVE"
    if verdict == NOISY:
        return "TOO NOISY"
    better, worse, same = _WORDS[metric_kind(metric)]
    return {BETTER: better, WORSE: worse, SAME: same}[verdict]


def bbo_words(equal: bool) -> str:
    return "SAME" if equal else "DIFFERENT"


def timing(base: list[float], head: list[float], *, higher_is_better: bool, threshold: float,
           seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"base": statistics.median(base) if base else None,
                           "head": statistics.median(head) if head else None, "n": [len(base), len(head)]}
    if len(base) < MIN_REPETITIONS or len(head) < MIN_REPETITIONS or not out["base"]:
        return {**out, "verdict": NOT_COMPARABLE, "reason": f"needs {MIN_REPETITIONS} repetitions a side"}
    floor = smallest_p(len(base), len(head))
    if floor >= ALPHA:
        return {**out, "verdict": NOT_COMPARABLE, "reason": f"{len(base)} and {len(head)} runs cannot reach "
                f"p < {ALPHA} (the smallest possible p is {floor:.2g}): use --repetitions {timing_repetitions()} "
                "or more"}
    ratio = out["head"] / out["base"]
    lo, hi = bootstrap_ratio_ci(base, head, seed=seed)
    test = mann_whitney_u(base, head)
    beyond = ratio > 1 + threshold or ratio < 1 - threshold
    ci_outside = lo > 1 + threshold or hi < 1 - threshold
    verdict = SAME
    if beyond and ci_outside and test.p < ALPHA:
        up = ratio > 1
        verdict = BETTER if up == higher_is_better else WORSE
    elif test.p < ALPHA and (beyond or ci_outside):
        verdict = INCONCLUSIVE
    elif beyond:
        verdict = NOISY
    result = {**out, "ratio": ratio, "delta_pct": (ratio - 1) * 100, "ci": [lo, hi], "p": test.p,
              "p_method": test.method, "verdict": verdict}
    if verdict in UNDECIDED:
        result["repetitions_to_decide"] = repetitions_to_decide(len(base), len(head), ratio, lo, hi, threshold)
    return result


def repetitions_to_decide(n_base: int, n_head: int, ratio: float, lo: float, hi: float, threshold: float) -> int:
    """Runs a side that would likely decide an inconclusive change: the interval narrows as 1/sqrt(n), so its edge
    nearer 1 clears the band 1 ± threshold at n · (half-width / the effect's margin beyond the band)²; never
    fewer than the runs a side already made plus two. An effect inside the band (significant, interval outside)
    is decided by more runs alone."""
    n = max(n_base, n_head)
    margin = ratio - (1 + threshold) if ratio > 1 else (1 - threshold) - ratio
    half = ratio - lo if ratio > 1 else hi - ratio
    need = n + 2
    if margin > 0 and half > margin and math.isfinite(half):
        need = max(need, math.ceil(n * (half / margin) ** 2))
    return max(need, timing_repetitions())


def smallest_p(n1: int, n2: int) -> float:
    """The smallest two-sided p the exact Mann-Whitney test can give: all of one side below the other."""
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def timing_repetitions() -> int:
    """Fewest runs a side with which a timing verdict is possible at all."""
    n = MIN_REPETITIONS
    while smallest_p(n, n) >= ALPHA:
        n += 1
    return n


def exact(base: float | None, head: float | None, *, threshold: float = INSTRUCTION_THRESHOLD,
          why: str = "") -> dict[str, Any]:
    """Lower is better (instructions). `why`: what stopped a measurement, if one failed."""
    if base is None or head is None or not base or math.isnan(base) or math.isnan(head):
        return {"base": base, "head": head, "verdict": NOT_COMPARABLE,
                "reason": "not measured on both sides" + (f" ({why})" if why else "")}
    ratio = head / base
    verdict = SAME if abs(ratio - 1) <= threshold else (WORSE if ratio > 1 else BETTER)
    return {"base": base, "head": head, "ratio": ratio, "delta_pct": (ratio - 1) * 100, "verdict": verdict}
