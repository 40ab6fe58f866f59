"""HdrHistogram interval log (.hlog) export, readable by the HdrHistogram
tools (HistogramLogProcessor, HdrHistogram plotters)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

LOWEST_NS = 1
HIGHEST_NS = 3_600_000_000_000  # an hour
SIGNIFICANT_DIGITS = 3


def _lowest_equivalent(v: np.ndarray) -> np.ndarray:
    """Values folded to their HdrHistogram bucket (3 significant digits:
    2048 sub-buckets), so each distinct bucket is recorded once with its count."""
    v = np.maximum(v.astype(np.int64), LOWEST_NS)
    magnitude = np.floor(np.log2(v.astype(np.float64))).astype(np.int64)
    shift = np.maximum(magnitude - 10, 0)  # 2^11 = 2048 sub-buckets
    return (v >> shift) << shift


def histogram_of(values_ns: np.ndarray) -> HdrHistogram:
    h = HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
    v = values_ns[np.isfinite(values_ns)]
    v = np.clip(v, LOWEST_NS, HIGHEST_NS)
    buckets, counts = np.unique(_lowest_equivalent(v), return_counts=True)
    for value, count in zip(buckets.tolist(), counts.tolist()):  # one call per bucket, not per record
        h.record_value(value, count)
    return h


def write(path: Path, values_ns: np.ndarray, start_s: float, length_s: float, comment: str) -> None:
    """One interval covering the run, values in ns. (The Python writer drops
    histogram tags, so each stage gets a file of its own.)"""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        w = HistogramLogWriter(f)
        w.output_comment(comment)
        w.output_log_format_version()
        # hdrh's output_start_time() is broken (ms taken as s): the standard line by hand.
        stamp = datetime.fromtimestamp(start_s, timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
        f.write(f"#[StartTime: {start_s:.3f} (seconds since epoch), {stamp}]\n")
        w.output_legend()
        w.output_interval_histogram(histogram_of(values_ns), start_s, start_s + length_s, max_value_unit_ratio=1.0)
    tmp.replace(path)
