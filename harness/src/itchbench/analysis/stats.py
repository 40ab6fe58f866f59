"""Latency statistics: the definitions every figure uses (percentile methods,
stages), and the statistics of one sample in memory (itchbench stats, an
external gateway's CSV). A run's own logs are summarised in bounded memory by
analysis/latency_pass.py over analysis/histogram.py, to the same definitions.

Percentiles are by numpy's `higher` method unless asked otherwise: the sorted
value at 0-based index ceil((n-1)*p), computed here with exact integer
arithmetic from one partition. For the reported percentiles (p = 1 - 1/m)
that index equals floor(n*p). It is not the textbook nearest rank, 1-based
ceil(n*p) (HdrHistogram's), which is one rank lower whenever n*p is whole:
`nearest_rank` computes that one. Any other numpy method ("linear",
"lower", ...) can be chosen; the method travels with the figures so that a
report always says how they were computed (method_text). Standard
deviations are the population one (divided by n).
"""

from __future__ import annotations

import numpy as np

from ..vocabulary import DEFAULT_METHOD, HIGHER, METHODS, NEAREST_RANK  # noqa: F401 (the methods this module computes)

PERCENTILES: dict[str, float] = {
    "p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99, "p999": 0.999, "p9999": 0.9999,
}
STAT_KEYS = ["count", "mean", "min", "max", *PERCENTILES, "stddev"]
_RANKED = (HIGHER, NEAREST_RANK)  # computed here from one partition; the rest by numpy
_P_DENOMINATOR = 1_000_000  # percentiles are exact fractions of this: integer index arithmetic, no float rounding

# Pipeline stages: (name, description, start stamp, end stamp, BBO-emitting messages only). t_receive is the
# receive stamp: the kernel's where the transport has one, else the read's (a version-1 log's only one).
STAGES: list[tuple[str, str, str, str, bool]] = [
    ("wakeup", "kernel receive -> read returned", "t_kernel", "t_read", False),
    ("parse", "read returned -> decoded (user-space receipt -> parse complete)", "t_read", "t_decoded", False),
    ("decode", "receive -> decoded", "t_receive", "t_decoded", False),
    ("book", "decoded -> book applied", "t_decoded", "t_book", False),
    ("publish", "book applied -> published", "t_book", "t_published", True),
    ("receive_to_book", "receive -> book applied", "t_receive", "t_book", False),
    ("receive_to_published", "receive -> published (BBO events)", "t_receive", "t_published", True),
]
ONE_WAY = ("one_way", "sender -> receive (one-way, same host)", "t_origin", "t_receive", False)


class StatsError(ValueError):
    pass


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise StatsError(f"unknown percentile method '{method}' (methods: {', '.join(METHODS)})")


def method_text(method: str) -> str:
    """What a percentile method is, for reports and tables."""
    if method == HIGHER:
        return ("numpy's `higher` method: the sorted value at 0-based index ⌈(n−1)·p⌉, for these percentiles "
                "the same as ⌊n·p⌋; one rank above the textbook nearest rank ⌈n·p⌉ (HdrHistogram's) when n·p "
                "is a whole number")
    if method == NEAREST_RANK:
        return "nearest rank: the sorted value at 1-based rank ⌈n·p⌉, as HdrHistogram reports it"
    return f"numpy's `{method}` method"


def rank_index(count: np.ndarray | int, p: float | np.ndarray, method: str = DEFAULT_METHOD) -> np.ndarray:
    """0-based index into the sorted sample of the `higher` or `nearest_rank`
    percentile p of count values, in integer arithmetic (p to 1e-6)."""
    n = np.asarray(count, dtype=np.int64)
    num = np.rint(np.asarray(p, dtype=np.float64) * _P_DENOMINATOR).astype(np.int64)
    if method == HIGHER:  # ceil((n-1) * p)
        idx = -((-(n - 1) * num) // _P_DENOMINATOR)
    else:                 # ceil(n * p) - 1
        idx = -((-n * num) // _P_DENOMINATOR) - 1
    return np.clip(idx, 0, np.maximum(n - 1, 0))


def describe(values: np.ndarray, method: str = DEFAULT_METHOD) -> dict[str, float]:
    """STAT_KEYS of one sample (empty: count 0, the rest NaN). Ranked
    percentiles come from one partition, O(n), not a sort."""
    _check_method(method)
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n == 0:
        return {k: (0 if k == "count" else float("nan")) for k in STAT_KEYS}
    mean = float(v.mean())
    out: dict[str, float] = {"count": n, "mean": mean, "min": float(v.min()), "max": float(v.max())}
    if method in _RANKED:
        idx = {name: int(rank_index(n, p, method)) for name, p in PERCENTILES.items()}
        part = np.partition(v, sorted(set(idx.values())))
        out.update({name: float(part[i]) for name, i in idx.items()})
    else:
        qs = np.percentile(v, [p * 100 for p in PERCENTILES.values()], method=method)
        out.update({name: float(q) for name, q in zip(PERCENTILES, qs)})
    out["stddev"] = float(np.sqrt(np.mean((v - mean) ** 2)))
    return {k: out[k] for k in STAT_KEYS}


TYPE_NAMES = {ord(t): t for t in "SRHYLVWKJhAFECXDUPQBINO"}
