"""A latency log's stage stamps in ns, mapped from raw TSC ticks by FORMAT.md's formula in Python's unbounded
integers, one stamp at a time: a reference for tests, independent of the reader's vectorised 64-bit halves."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

STAGE_CLOCK_OFFSET, LINE_OFFSET, TSC_TICKS = 16, 128, 3


def stamps_in_ns(log_path: Path, stamps: np.ndarray) -> np.ndarray:
    """The stamps (a column of the log at log_path) in ns; 0 stays 0. Stamps of a log that stored ns are returned
    as int64 unchanged."""
    raw = Path(log_path).read_bytes()[:LINE_OFFSET + 32]
    if struct.unpack_from("<H", raw, STAGE_CLOCK_OFFSET)[0] != TSC_TICKS:
        return stamps.astype(np.int64)
    tsc0, ns0, q32, _ = struct.unpack_from("<QQQQ", raw, LINE_OFFSET)
    return np.array([ns0 + ((t - tsc0) * q32 >> 32) if t else 0 for t in stamps.tolist()], np.int64)
