"""HdrHistogram interval log (.hlog) export, readable by the HdrHistogram
tools (HistogramLogProcessor, HdrHistogram plotters)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

from .. import atomic

LOWEST_NS = 1
HIGHEST_NS = 3_600_000_000_000  # an hour
SIGNIFICANT_DIGITS = 3


def _bucket_counts(v: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lowest equivalent value, count) of every non-empty HdrHistogram bucket
    at 3 significant digits (2048 sub-buckets), counted with one bincount.
    Below 2048 a value is its own bucket; above, shifting it right by
    (bit length - 11) leaves 1024..2047, and index = (v >> shift) + 1024 * shift
    lays the magnitudes out one after another."""
    v = np.maximum(v, LOWEST_NS)
    _, exponent = np.frexp(v)  # v = m * 2**exponent, m in [0.5, 1): exponent = bit length
    shift = np.maximum(exponent - 11, 0).astype(np.int64)
    index = (v.astype(np.int64) >> shift) + (shift << 10)
    counts = np.rint(np.bincount(index, weights=weights)).astype(np.int64)
    nonzero = np.flatnonzero(counts)
    shifts = np.maximum((nonzero >> 10) - 1, 0)
    return (nonzero - (shifts << 10)) << shifts, counts[nonzero]


def histogram_of(values_ns: np.ndarray, counts: np.ndarray) -> HdrHistogram:
    """An HdrHistogram of values (ns) seen counts times each."""
    h = HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
    keep = np.isfinite(values_ns)
    v = np.clip(values_ns[keep].astype(np.float64), LOWEST_NS, HIGHEST_NS)
    for value, count in zip(*(a.tolist() for a in _bucket_counts(v, counts[keep]))):  # one call a bucket, not a record
        h.record_value(value, count)
    return h


def write(path: Path, values_ns: np.ndarray, counts: np.ndarray, start_s: float, length_s: float,
          comment: str) -> None:
    """One interval covering the run, values in ns. (The Python writer drops
    histogram tags, so each stage gets a file of its own.)"""
    with atomic.replaced_when_whole(path) as tmp, open(tmp, "w") as f:
        w = HistogramLogWriter(f)
        w.output_comment(comment)
        w.output_log_format_version()
        # hdrh's output_start_time() is broken (ms taken as s): the standard line by hand.
        stamp = datetime.fromtimestamp(start_s, timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
        f.write(f"#[StartTime: {start_s:.3f} (seconds since epoch), {stamp}]\n")
        w.output_legend()
        w.output_interval_histogram(histogram_of(values_ns, counts), start_s, start_s + length_s, max_value_unit_ratio=1.0)
