"""Verdicts per metric (docs/compare.md).

Timing metrics (throughput, latency, peak RSS) are noisy: a verdict needs an
effect beyond the threshold, a Mann-Whitney p below ALPHA, and a bootstrap
confidence interval of the ratio of medians that lies wholly outside the
band 1 ± threshold. Instruction counts are exact: any change beyond 0.5 % is
reported, with no repetitions needed.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from .statistics import bootstrap_ratio_ci, mann_whitney_u

ALPHA = 0.002          # as asv: a timing change needs p < 0.002 ...
INSTRUCTION_THRESHOLD = 0.005
MIN_REPETITIONS = 3    # fewer cannot reach ALPHA at all; 9 is the default
BETTER, WORSE, SAME, NOT_COMPARABLE = "faster", "slower", "unchanged", "not comparable"
SHOWN = "shown, not judged"  # the max of a run is one sample: its changes are not verdicts


def timing(base: list[float], head: list[float], *, higher_is_better: bool, threshold: float,
           seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"base": statistics.median(base) if base else None,
                           "head": statistics.median(head) if head else None, "n": [len(base), len(head)]}
    if len(base) < MIN_REPETITIONS or len(head) < MIN_REPETITIONS or not out["base"]:
        return {**out, "verdict": NOT_COMPARABLE, "reason": f"needs {MIN_REPETITIONS} repetitions a side"}
    ratio = out["head"] / out["base"]
    lo, hi = bootstrap_ratio_ci(base, head, seed=seed)
    test = mann_whitney_u(base, head)
    beyond = ratio > 1 + threshold or ratio < 1 - threshold
    ci_outside = lo > 1 + threshold or hi < 1 - threshold
    verdict = SAME
    if beyond and ci_outside and test.p < ALPHA:
        up = ratio > 1
        verdict = BETTER if up == higher_is_better else WORSE
    return {**out, "ratio": ratio, "delta_pct": (ratio - 1) * 100, "ci": [lo, hi], "p": test.p,
            "p_method": test.method, "verdict": verdict}


def exact(base: float | None, head: float | None, *, threshold: float = INSTRUCTION_THRESHOLD) -> dict[str, Any]:
    """Lower is better (instructions)."""
    if base is None or head is None or not base or math.isnan(base) or math.isnan(head):
        return {"base": base, "head": head, "verdict": NOT_COMPARABLE, "reason": "not measured on both sides"}
    ratio = head / base
    verdict = SAME if abs(ratio - 1) <= threshold else (WORSE if ratio > 1 else BETTER)
    return {"base": base, "head": head, "ratio": ratio, "delta_pct": (ratio - 1) * 100, "verdict": verdict}
