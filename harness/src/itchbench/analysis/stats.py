"""Latency statistics, vectorised: one sort per breakdown, no loop over records.

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

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import logs

PERCENTILES: dict[str, float] = {
    "p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99, "p999": 0.999, "p9999": 0.9999,
}
STAT_KEYS = ["count", "mean", "min", "max", *PERCENTILES, "stddev"]
HIGHER = "higher"
NEAREST_RANK = "nearest_rank"
DEFAULT_METHOD = HIGHER
METHODS = [HIGHER, NEAREST_RANK, "linear", "lower", "midpoint", "inverted_cdf", "closest_observation"]
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


_KEY_SHIFT = 47  # packed sort: key in the top 16 bits, value offset in the low 47 (39 hours of ns)


def _sorted_by_key_then_value(keys: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """keys and values ordered by (key, value). Integral values with small
    non-negative integer keys are packed into one int64 and sorted in place
    (one plain sort, much cheaper than argsort); anything else falls back to
    argsort plus a stable radix sort of the keys."""
    integral = keys.dtype.kind in "ub" and keys.dtype.itemsize <= 2
    if integral:
        lo, hi = v.min(), v.max()
        integral = hi - lo < 2**_KEY_SHIFT and bool(np.all(v == np.floor(v)))
    if integral:
        packed = (keys.astype(np.int64) << _KEY_SHIFT) | (v - lo).astype(np.int64)
        packed.sort()
        return packed >> _KEY_SHIFT, (packed & ((1 << _KEY_SHIFT) - 1)).astype(np.float64) + lo
    order = np.argsort(v, kind="quicksort")
    order = order[np.argsort(keys[order], kind="stable")]
    return keys[order], v[order]


def grouped(keys: np.ndarray, values: np.ndarray, method: str = DEFAULT_METHOD) -> pd.DataFrame:
    """STAT_KEYS for each distinct key, from one sort for all groups. Empty
    input gives an empty frame."""
    _check_method(method)
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return pd.DataFrame(columns=STAT_KEYS)
    k, v = _sorted_by_key_then_value(np.asarray(keys), values)
    start = np.concatenate(([0], np.flatnonzero(k[1:] != k[:-1]) + 1))
    count = np.diff(np.append(start, k.size))
    uniq = k[start]
    mean = np.add.reduceat(v, start) / count
    sq = np.add.reduceat((v - np.repeat(mean, count)) ** 2, start)
    out = {"count": count, "mean": mean, "min": v[start], "max": v[start + count - 1]}
    for name, p in PERCENTILES.items():
        if method in _RANKED:
            out[name] = v[start + rank_index(count, p, method)]
        else:  # per group, on the already sorted slices: a loop over groups, not records
            out[name] = np.array([np.percentile(v[s:s + c], p * 100, method=method) for s, c in zip(start, count)])
    out["stddev"] = np.sqrt(sq / count)  # population standard deviation
    return pd.DataFrame(out, index=uniq)[STAT_KEYS]


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


def percentile_points(values: np.ndarray, points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """(p, value) at `points` percentiles spaced towards the tail, exact by
    the default method: a percentile curve without plotting every record."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n == 0:
        return np.array([]), np.array([])
    tail = np.linspace(0, np.log10(n), points)
    p = np.unique(1.0 - 10.0 ** -tail)
    idx = np.unique(np.minimum(np.ceil((n - 1) * p), n - 1).astype(np.int64))  # `higher`, in float: a plot's tail needs p finer than 1e-6
    part = np.partition(v, idx)
    return (idx + 0.5) / n, part[idx]


@dataclass
class Latencies:
    """Per-message stage latencies (ns) of the records that count."""

    frame: pd.DataFrame  # seq, type, locate, t_receive, and one column per stage (NaN where not applicable)
    stages: list[tuple[str, str]]  # (name, description) present
    warmup: pd.DataFrame
    rejected: int


def latencies(lat: logs.LogFile, warmup_messages: int = 0) -> Latencies:
    """Stage latencies from a latency log; rejected messages and the warm-up
    window are set apart. The log's memory map is read, not copied, unless
    rejected records must be left out."""
    rec = lat.records
    ok = (rec["flags"] & logs.FLAG_REJECTED) == 0
    rejected = int(rec.size - np.count_nonzero(ok))
    if rejected:
        rec = rec[ok]
    bbo = (rec["flags"] & logs.FLAG_BBO_EVENT) != 0
    stamps = {name: rec[name] for name in rec.dtype.names if name.startswith("t_")}
    if "t_receive" not in stamps:  # version 2: the kernel's stamp where there is one, else the read's
        stamps["t_receive"] = np.where(rec["t_kernel"] != 0, rec["t_kernel"], rec["t_read"])
    columns: dict[str, Any] = {
        "seq": rec["seq"], "type": rec["msg_type"].view(np.uint8), "locate": rec["stock_locate"],
        "t_receive": stamps["t_receive"].astype(np.int64),
    }
    stages = [s for s in STAGES if s[2] in stamps and s[3] in stamps]
    if lat.header["origin_clock"] == "sender-monotonic":
        stages.insert(0, ONE_WAY)
    present = []
    for name, desc, start, end, bbo_only in stages:
        a, b = stamps[start], stamps[end]
        valid = (a != 0) & (b != 0)
        if bbo_only:
            valid &= bbo
        if not valid.any():
            continue
        d = b.astype(np.float64)
        d -= a
        d[~valid] = np.nan
        columns[name] = d
        present.append((name, desc))
    frame = pd.DataFrame(columns, copy=False)
    n_warm = min(warmup_messages, len(frame))
    return Latencies(frame.iloc[n_warm:], present, frame.iloc[:n_warm], rejected)


TYPE_NAMES = {ord(t): t for t in "SRHYLVWKJhAFECXDUPQBINO"}


def by_stage(lat: Latencies, method: str = DEFAULT_METHOD, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    frame = lat.frame if frame is None else frame
    rows = {}
    for name, _ in lat.stages:
        v = frame[name].to_numpy()
        rows[name] = describe(v[~np.isnan(v)], method)
    return pd.DataFrame.from_dict(rows, orient="index", columns=STAT_KEYS)


def by_key(lat: Latencies, key: str, stage: str, method: str = DEFAULT_METHOD) -> pd.DataFrame:
    v = lat.frame[stage].to_numpy()
    keep = ~np.isnan(v)
    return grouped(lat.frame[key].to_numpy()[keep], v[keep], method)


def throughput(t_ns: np.ndarray, bins: int = 100) -> pd.DataFrame:
    """Messages per second over the run, in equal time bins."""
    if len(t_ns) == 0:
        return pd.DataFrame(columns=["t_s", "messages_per_s"])
    t = (t_ns.astype(np.int64) - int(t_ns.min())).astype(np.float64) / 1e9
    span = max(float(t.max()), 1e-9)
    counts, edges = np.histogram(t, bins=bins, range=(0.0, span))
    width = edges[1] - edges[0]
    return pd.DataFrame({"t_s": edges[:-1], "messages_per_s": counts / width})
