"""Reports at scale: exact statistics from streamed histograms, and memory
that does not grow with the number of records. The reference figures come
from numpy over the whole latency log in memory (np.quantile, np.std), not
from the histograms under test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from itchbench.analysis import latency_pass, logs
from itchbench.analysis.histogram import KeyedHistogram, describe_counts
from itchbench.analysis.stats import PERCENTILES
from itchbench.runs.sim import run_sim

from live_helpers import make_capture
from stamps_in_ns import stamps_in_ns


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> dict[int, Path]:
    tmp = tmp_path_factory.mktemp("scale")
    out = {}
    for n in (200_000, 2_000_000):
        day = make_capture(tmp, f"day{n}.itch", "--profile", "nasdaq-day", "--messages", str(n), "--seed", "5",
                           "--format", "itch")
        out[n] = run_sim(day, tmp / f"run{n}", echo=False)
    return out


def _reference(run: Path, start: str, end: str) -> np.ndarray:
    rec = logs.read_latency(run / "latency.lat").records
    rec = rec[(rec["flags"] & logs.FLAG_REJECTED) == 0]
    return stamps_in_ns(run / "latency.lat", rec[end]) - stamps_in_ns(run / "latency.lat", rec[start])


def test_streamed_statistics_equal_numpy_over_the_whole_log(runs):
    run = runs[200_000]
    # Small chunks, so that many chunk boundaries and the sparse tail are crossed.
    lat = latency_pass.scan(run, chunk=1_000)
    for name, start, end in (("book", "t_decoded", "t_book"), ("receive_to_book", "t_read", "t_book")):
        ref = _reference(run, start, end)
        got = describe_counts(*lat.stage[name].values_counts())
        assert got["count"] == ref.size == 200_000
        for key, p in PERCENTILES.items():
            assert got[key] == np.quantile(ref, p, method="higher"), key
        assert got["min"] == ref.min() and got["max"] == ref.max()
        assert got["mean"] == pytest.approx(ref.mean(), rel=1e-12)
        assert got["stddev"] == pytest.approx(ref.std(), rel=1e-9)


def test_keyed_histograms_keep_a_tail_beyond_the_dense_range_exactly():
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 5, 50_000)
    values = np.concatenate([rng.integers(0, 100, 40_000), rng.integers(10**6, 10**12, 9_990), -rng.integers(1, 5, 10)])
    h = KeyedHistogram(5, dense=128)
    for k, v in zip(np.array_split(keys, 9), np.array_split(values, 9)):
        h.add(v, k)
    for key in range(5):
        ref = np.sort(values[keys == key])
        v, c = h.values_counts(key)
        assert np.array_equal(np.repeat(v, c), ref)


def _report_rss_mib(run: Path) -> int:
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "itchbench.cli", "report", str(run)],
                          capture_output=True, text=True, check=True)
    return int(proc.stderr.strip().splitlines()[-1]) // 1024


def test_report_memory_does_not_grow_with_the_log(runs):
    small, large = _report_rss_mib(runs[200_000]), _report_rss_mib(runs[2_000_000])
    grown = (runs[2_000_000] / "latency.lat").stat().st_size >> 20  # 115 MiB more of log
    # An in-memory report holds ~200 bytes a record (~340 MiB more here); a streamed one holds chunks.
    assert large - small < 48, (small, large, grown)
