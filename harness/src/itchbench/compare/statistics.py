"""The statistics behind timing verdicts (docs/compare.md).

- Mann-Whitney U, two-sided: exact (the distribution of U enumerated by
  dynamic programming) when there are no ties and both samples are small,
  the normal approximation with tie and continuity corrections otherwise.
- A bootstrap confidence interval of the ratio of medians (head / base):
  percentile method, resampling each side independently, with an explicit
  seed so that the same samples give the same interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EXACT_MAX = 30  # exact U distribution up to this many observations per side


@dataclass(frozen=True)
class UTest:
    u: float        # U of the first sample
    p: float        # two-sided p-value
    method: str     # "exact" or "normal"


def _exact_cdf_table(n1: int, n2: int) -> np.ndarray:
    """counts[u] = number of rankings with U = u (no ties), by the recurrence
    f(n1, n2, u) = f(n1 - 1, n2, u - n2) + f(n1, n2 - 1, u)."""
    # table[j][u] for the current i, j = 0..n2
    prev = [np.zeros(1, dtype=float) + 1 for _ in range(n2 + 1)]  # i = 0: U = 0 once
    for i in range(1, n1 + 1):
        cur = [np.ones(1, dtype=float)]  # j = 0: U = 0 once
        for j in range(1, n2 + 1):
            size = i * j + 1
            row = np.zeros(size)
            a = prev[j]  # f(i-1, j, u - j)
            row[j: j + a.size] += a[: size - j]
            b = cur[j - 1]  # f(i, j-1, u)
            row[: b.size] += b
            cur.append(row)
        prev = cur
    return prev[n2]


def mann_whitney_u(a: np.ndarray, b: np.ndarray) -> UTest:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs observations on both sides")
    both = np.concatenate([a, b])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(both.size)
    sorted_vals = both[order]
    # Average ranks for ties.
    i = 0
    ties_term = 0.0
    while i < both.size:
        j = i
        while j + 1 < both.size and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i: j + 1]] = (i + j) / 2 + 1
        t = j - i + 1
        ties_term += t ** 3 - t
        i = j + 1
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    if ties_term == 0 and n1 <= EXACT_MAX and n2 <= EXACT_MAX:
        counts = _exact_cdf_table(n1, n2)
        total = counts.sum()
        k = int(round(min(u1, n1 * n2 - u1)))
        p = min(1.0, 2 * counts[: k + 1].sum() / total)
        return UTest(u1, p, "exact")
    mu = n1 * n2 / 2
    n = n1 + n2
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties_term / (n * (n - 1))))
    if sigma == 0:
        return UTest(u1, 1.0, "normal")
    z = (abs(u1 - mu) - 0.5) / sigma
    p = math.erfc(max(z, 0) / math.sqrt(2))
    return UTest(u1, min(1.0, p), "normal")


def bootstrap_ratio_ci(base: np.ndarray, head: np.ndarray, *, seed: int, resamples: int = 10_000,
                       confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of median(head) / median(base)."""
    rng = np.random.default_rng(seed)
    base = np.asarray(base, dtype=float)
    head = np.asarray(head, dtype=float)
    mb = np.median(base[rng.integers(0, base.size, (resamples, base.size))], axis=1)
    mh = np.median(head[rng.integers(0, head.size, (resamples, head.size))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = mh / mb
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return (math.nan, math.nan)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(ratios, [alpha, 1 - alpha])
    return (float(lo), float(hi))
