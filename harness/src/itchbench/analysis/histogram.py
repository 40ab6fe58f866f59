"""Exact integer histograms that stream: latency statistics of any number of
records in bounded memory.

A KeyedHistogram counts integer values (nanoseconds) per small integer key
(one key for a stage; the message type, the symbol or a time bin for a
breakdown). Values in [0, dense) are counted in a dense key × value array
with one bincount a chunk; the rest (the tail, and anything negative) are
kept as sorted distinct (key, value, count) triples. Nothing is bucketed, so
every statistic is the one a sort of all the values would give: percentiles
by any method of analysis/stats.py, min, max, and mean and population
standard deviation computed from the exact counts.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .stats import HIGHER, NEAREST_RANK, PERCENTILES, STAT_KEYS, rank_index

if TYPE_CHECKING:
    import pandas as pd

_SHIFT = 47  # packed (key, value - low) in one int64: 16 bits of key, 47 of value span (39 hours of ns)
_COMPACT_ENTRIES = 1 << 22  # sparse parts are merged once they hold this many entries together


def _reduce(keys: np.ndarray, values: np.ndarray, counts: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """Distinct (key, value) pairs, sorted, with their summed counts (counts None: one each)."""
    if values.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo = int(values.min())
    if int(values.max()) - lo < (1 << _SHIFT) and int(keys.max(initial=0)) < (1 << 16):
        packed = (keys.astype(np.int64) << _SHIFT) | (values - lo)
        if counts is None:
            uniq, c = np.unique(packed, return_counts=True)
        else:
            order = np.argsort(packed, kind="stable")
            packed, counts = packed[order], counts[order]
            first = np.concatenate(([True], packed[1:] != packed[:-1]))
            uniq, c = packed[first], np.add.reduceat(counts, np.flatnonzero(first))
        return uniq >> _SHIFT, (uniq & ((1 << _SHIFT) - 1)) + lo, c.astype(np.int64)
    counts = np.ones(values.size, np.int64) if counts is None else counts
    order = np.lexsort((values, keys))  # beyond the packed range: slower, same result
    k, v, c = keys[order].astype(np.int64), values[order], counts[order]
    first = np.concatenate(([True], (k[1:] != k[:-1]) | (v[1:] != v[:-1])))
    return k[first], v[first], np.add.reduceat(c, np.flatnonzero(first))


class KeyedHistogram:
    """Exact counts of int64 values per key in [0, n_keys)."""

    def __init__(self, n_keys: int = 1, dense: int = 1 << 16) -> None:
        self.n_keys, self.dense_bins = n_keys, dense
        self._dense = np.zeros(n_keys * dense, np.int64)
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._part_entries = 0

    @classmethod
    def from_table(cls, keys: np.ndarray, values: np.ndarray, counts: np.ndarray, n_keys: int = 1) -> KeyedHistogram:
        """The histogram whose table() is (keys, values, counts): distinct pairs sorted by key then value, as the
        compiled scan gives them (analysis/native.py). Held as they come, not spread over a dense array."""
        h = cls(n_keys, dense=1)
        zero = values == 0
        h._dense[keys[zero]] = counts[zero]
        if not zero.all():
            h._parts = [(keys[~zero], values[~zero], counts[~zero])]
            h._part_entries = int((~zero).sum())
        return h

    def add(self, values: np.ndarray, keys: np.ndarray | None = None) -> None:
        values = np.asarray(values, np.int64)
        if values.size == 0:
            return
        if int(values.min()) >= 0 and int(values.max()) < self.dense_bins:  # the common case: no mask, no copy
            self._count(values if keys is None else np.asarray(keys, np.int64) * self.dense_bins + values, keys is None)
            return
        keys = np.zeros(values.size, np.int64) if keys is None else np.asarray(keys, np.int64)
        inside = (values >= 0) & (values < self.dense_bins)
        every = bool(inside.all())
        cells = keys * self.dense_bins + values if every else keys[inside] * self.dense_bins + values[inside]
        if cells.size:
            self._count(cells, self.n_keys == 1)
        if not every:
            part = _reduce(keys[~inside], values[~inside], None)
            self._parts.append(part)
            self._part_entries += part[0].size
            if len(self._parts) > 1 and self._part_entries > _COMPACT_ENTRIES:
                self._parts = [self._merged_parts()]
                self._part_entries = self._parts[0][0].size

    def _count(self, cells: np.ndarray, compact: bool) -> None:
        # One key's cells are a short range: a bincount as long as the largest. Many keys' cells are spread over
        # the whole array, where add.at touches only the cells hit.
        if compact:
            counted = np.bincount(cells)
            self._dense[:counted.size] += counted
        else:
            np.add.at(self._dense, cells, 1)

    def count(self) -> int:
        return int(self._dense.sum()) + sum(int(p[2].sum()) for p in self._parts)

    def _merged_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if len(self._parts) == 1:
            return self._parts[0]
        k, v, c = (np.concatenate(x) for x in zip(*self._parts))
        return _reduce(k, v, c)

    def table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(key, value, count) of every distinct pair, sorted by key then value."""
        nz = np.flatnonzero(self._dense)
        dk, dv, dc = nz // self.dense_bins, nz % self.dense_bins, self._dense[nz]
        if not self._parts:
            return dk, dv, dc
        sk, sv, sc = self._merged_parts()
        self._parts, self._part_entries = [(sk, sv, sc)], sk.size
        k, v, c = np.concatenate((dk, sk)), np.concatenate((dv, sv)), np.concatenate((dc, sc))
        order = np.lexsort((v, k))  # distinct pairs only: a small sort
        return k[order], v[order], c[order]

    def values_counts(self, key: int = 0) -> tuple[np.ndarray, np.ndarray]:
        k, v, c = self.table()
        sel = k == key
        return v[sel], c[sel]

    def stats(self, method: str = HIGHER) -> pd.DataFrame:
        """STAT_KEYS for each key that has values (index: the key)."""
        return weighted_stats(*self.table(), method)


def _order_statistics(method: str, n: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower index, upper index, fraction) into each group's sorted values for
    percentile p by `method`, as numpy's quantile defines them."""
    if method in (HIGHER, NEAREST_RANK):
        i = rank_index(n, p, method)
        return i, i, np.zeros(n.size)
    nf = n.astype(np.float64)
    last = np.maximum(n - 1, 0)
    if method in ("linear", "lower", "midpoint"):
        g = (nf - 1) * p
        lo = np.floor(g).astype(np.int64)
        hi = np.minimum(np.ceil(g).astype(np.int64), last)
        if method == "lower":
            return lo, lo, np.zeros(n.size)
        frac = np.where(hi > lo, 0.5 if method == "midpoint" else g - lo, 0.0)
        return lo, hi, frac
    index = nf * p - 1 - (0.5 if method == "closest_observation" else 0.0)
    prev = np.floor(index)
    at_boundary = index == prev
    if method == "closest_observation":
        at_boundary &= (prev % 2) == 1
    i = np.clip(np.where(at_boundary, prev, prev + 1), 0, last).astype(np.int64)
    return i, i, np.zeros(n.size)


def _percentile(vf: np.ndarray, cum: np.ndarray, base: np.ndarray, n: np.ndarray, p: float,
                method: str) -> np.ndarray:
    """Percentile p of each group (records base.. base+n of the cumulative counts cum over values vf)."""
    lo, hi, frac = _order_statistics(method, n, p)
    a = vf[np.searchsorted(cum, base + lo, side="right")]
    b = vf[np.searchsorted(cum, base + hi, side="right")]
    return np.where(frac > 0, a + frac * (b - a), a)


def weighted_stats(keys: np.ndarray, values: np.ndarray, counts: np.ndarray, method: str = HIGHER) -> pd.DataFrame:
    """STAT_KEYS per key from sorted distinct (key, value, count) triples: the
    statistics of the values repeated count times, without repeating them."""
    # Imported here: the report's drawing process imports this module for its percentile points and needs no
    # pandas (0.19 s of CPU beside the gateway's run).
    import pandas as pd
    if values.size == 0:
        return pd.DataFrame(columns=STAT_KEYS)
    start = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    end = np.append(start[1:], keys.size) - 1
    cum = np.cumsum(counts)
    n = np.add.reduceat(counts, start)
    base = cum[start] - counts[start]  # records before the group
    vf = values.astype(np.float64)
    mean = np.add.reduceat(vf * counts, start) / n
    dev = vf - np.repeat(mean, end - start + 1)
    out = {"count": n, "mean": mean, "min": vf[start], "max": vf[end]}

    for name, p in PERCENTILES.items():
        out[name] = _percentile(vf, cum, base, n, p, method)
    out["stddev"] = np.sqrt(np.add.reduceat(dev * dev * counts, start) / n)
    return pd.DataFrame(out, index=keys[start])[STAT_KEYS]


def describe_counts(values: np.ndarray, counts: np.ndarray, method: str = HIGHER) -> dict[str, float]:
    """STAT_KEYS of one histogram (empty: count 0, the rest NaN)."""
    if values.size == 0:
        return {k: (0 if k == "count" else math.nan) for k in STAT_KEYS}
    row = weighted_stats(np.zeros(values.size, np.int64), values, counts, method).iloc[0]
    return {k: (int(row[k]) if k == "count" else float(row[k])) for k in STAT_KEYS}


def quantiles(values: np.ndarray, counts: np.ndarray, ps: np.ndarray, method: str = HIGHER) -> np.ndarray:
    """The percentiles ps (fractions) of one histogram by `method`."""
    n, base, cum = np.array([int(counts.sum())]), np.zeros(1, np.int64), np.cumsum(counts)
    vf = values.astype(np.float64)
    return np.array([_percentile(vf, cum, base, n, float(p), method)[0] for p in ps])


def percentile_points(values: np.ndarray, counts: np.ndarray, points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """(p, value) at `points` percentiles spaced towards the tail, by the
    default method: stats.percentile_points for a histogram."""
    n = int(counts.sum())
    if n == 0:
        return np.array([]), np.array([])
    tail = np.linspace(0, np.log10(n), points)
    p = np.unique(1.0 - 10.0 ** -tail)
    idx = np.unique(np.minimum(np.ceil((n - 1) * p), n - 1).astype(np.int64))
    return (idx + 0.5) / n, values[np.searchsorted(np.cumsum(counts), idx, side="right")].astype(np.float64)
