"""The compiled scan of a latency log (gateway/log/latency_scan.hpp) against the numpy reader it stands in for
(analysis/latency_pass.py with compiled=False): for every run it covers, every histogram, count, bin, hop table
and kept slow message equal — on real runs of the gateway (compact and wide logs, with and without a warm-up) and
on logs written by hand with what a run rarely has (rejected messages, stamps running backwards, values far
beyond the dense arrays, u64 wrap-around), read through both log versions; and on a live run, the send log's and
the subscribers' stamps joined to the gateway's by seq."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itchbench.analysis import latency_pass, logs, native, outliers
from itchbench.captures import fixtures
from itchbench.runs import runner

from live_helpers import config, make_capture
from test_compact_log import _wide_log, compact, gateway_run, nasdaq_day_itch  # noqa: F401 (a fixture)


def assert_same(run: Path, warmup: int = 0, breakdowns: bool = True, threads: int = 0) -> latency_pass.RunLatency:
    got = latency_pass.scan(run, warmup, breakdowns=breakdowns, threads=threads)
    return assert_equal(got, latency_pass.scan(run, warmup, breakdowns=breakdowns, compiled=False))


def assert_equal(got: latency_pass.RunLatency, want: latency_pass.RunLatency) -> latency_pass.RunLatency:
    """Every figure of two scans equal (the trends' float sums within rounding)."""
    assert got.stages == want.stages
    for name, _ in want.stages:
        for mine, theirs in ((got.stage[name], want.stage[name]), (got.warmup[name], want.warmup[name])):
            assert all(np.array_equal(a, b) for a, b in zip(mine.table(), theirs.table())), name
    for what in ("by_type", "by_symbol", "over_time"):
        assert all(np.array_equal(a, b) for a, b in zip(getattr(got, what).table(), getattr(want, what).table())), what
    assert np.array_equal(got.throughput_counts, want.throughput_counts)
    assert np.array_equal(got.time_edges_s, want.time_edges_s) and got.span_ns == want.span_ns
    assert (got.messages, got.warmup_messages, got.rejected, got.sender, got.stamped, got.subscribers) == (
        want.messages, want.warmup_messages, want.rejected, want.sender, want.stamped, want.subscribers)
    assert (got.hop_tables is None) == (want.hop_tables is None)
    if want.hop_tables is not None:
        assert got.hop_tables.chains == want.hop_tables.chains
        for to in want.hop_tables.chains:
            assert got.hop_tables.table(to).equals(want.hop_tables.table(to)), to
        # The trends' slopes are sums of floats, added in another order: equal within rounding; the rest exactly.
        mine, theirs = got.hop_tables.coordinated_omission(), want.hop_tables.coordinated_omission()
        pd.testing.assert_frame_equal(mine, theirs, check_exact=False, rtol=1e-6)
        floats = ["slope_us_per_s"]
        assert mine.drop(columns=floats).equals(theirs.drop(columns=floats))
        kept = lambda o: sorted(zip(o.total.tolist(), o.seq.tolist(), o.start.tolist(),  # noqa: E731
                                    map(tuple, o.hops.tolist()), o.type.tolist()))
        assert kept(got.outliers) == kept(want.outliers)
        p999 = float(np.quantile(got.outliers.total, 0.5)) if got.outliers.total.size else 0.0
        assert got.outliers.result(p999, [0.0] * (len(got.outliers.chain) - 1)) == \
            want.outliers.result(p999, [0.0] * (len(want.outliers.chain) - 1))
    return got


@pytest.mark.parametrize("source", ["seed-workload", "itch-file"])
@pytest.mark.parametrize("layout", ["compact", "wide"])
def test_a_gateway_run_is_counted_the_same_by_both_readers(tmp_path, source, layout, nasdaq_day_itch):
    capture = nasdaq_day_itch if source == "itch-file" else next(f.path for f in fixtures.load_manifest()
                                                          if f.name == source)
    run = gateway_run(capture, tmp_path / "run", "--latency-format", layout).parent
    lat = logs.read_latency(run / "latency.lat")
    assert lat.header["version"] == (5 if layout == "compact" else 4)
    # The compiled first pass takes the gateway's index of the log: a block of 65,536 messages a record.
    blocks = latency_pass._index_of(run, lat)
    assert blocks is not None and len(blocks) == -(-lat.count // 65536)
    full = assert_same(run, threads=1)
    assert full.hop_tables is not None and full.outliers.total.size > 0 and full.by_symbol.count() > 0
    assert full.stage["receive_to_book"].count() == full.messages
    for threads in (2, 3):  # the log counted in parts, each from a checkpoint of the first pass, and added
        assert_same(run, threads=threads)
        assert_same(run, warmup=100_000, threads=threads)  # the warm-up ends in a later part
    assert_same(run, warmup=1000)
    assert_same(run, warmup=10**9)  # every message in the warm-up: nothing after it
    assert_same(run, breakdowns=False)


def test_an_index_that_is_not_its_logs_is_set_aside_and_the_log_read(tmp_path, nasdaq_day_itch):
    """Another run's index, one its gateway never closed, and one whose counts were changed: each left out (the
    last said), and every figure still the numpy reader's, which never reads an index."""
    run = gateway_run(nasdaq_day_itch, tmp_path / "run", "--run-id", "mine").parent
    other = gateway_run(nasdaq_day_itch, tmp_path / "other", "--run-id", "theirs").parent
    lat = logs.read_latency(run / "latency.lat")
    index = (run / "latency.idx").read_bytes()
    assert latency_pass._index_of(run, lat) is not None

    shutil.copy(other / "latency.idx", run / "latency.idx")
    assert latency_pass._index_of(run, lat) is None
    assert_same(run, warmup=70_000)

    unclosed = bytearray(index)
    unclosed[logs.HEADER_DTYPE.fields["flags"][1]] &= ~logs.FLAG_FINALIZED
    (run / "latency.idx").write_bytes(bytes(unclosed))
    assert latency_pass._index_of(run, lat) is None

    whole = np.frombuffer(index, logs.LATENCY_BLOCK_DTYPE, offset=logs.HEADER_SIZE)
    blocks = whole.copy()
    blocks["accepted"][1] -= 1  # the blocks after it no longer follow
    (run / "latency.idx").write_bytes(index[:logs.HEADER_SIZE] + blocks.tobytes())
    with pytest.warns(latency_pass.IndexSetAsideWarning, match="does not follow the block before it"):
        assert_same(run, warmup=70_000)

    # What the blocks' order cannot show, the second pass finds where it reads the log: a largest locate the log
    # exceeds, checkpoints whose coder state is not where reading up to them ends.
    for field, value, said in (("max_locate", 1, "above the first pass's largest"),
                               ("next_seq", 12345, "the decoder's state")):
        blocks = whole.copy()
        blocks[field][1:] = value
        if field == "max_locate":
            blocks[field][0] = value
        (run / "latency.idx").write_bytes(index[:logs.HEADER_SIZE] + blocks.tobytes())
        with pytest.warns(latency_pass.IndexSetAsideWarning, match=said):
            assert_same(run, warmup=70_000, threads=2)


def test_a_clock_moved_onto_monotonic_and_few_slow_messages_kept(tmp_path, nasdaq_day_itch, monkeypatch):
    run = gateway_run(nasdaq_day_itch, tmp_path / "run").parent
    gateway = json.loads((run / "gateway.json").read_text())
    clock = gateway["clock"]
    assert clock.get("offset_from_monotonic_ns_at_end") is not None  # the run measured its drift: moved
    clock["offset_from_monotonic_ns_at_end"] = 987_654  # a drift large enough to move stamps by many ns
    (run / "gateway.json").write_text(json.dumps(gateway))
    monkeypatch.setattr(outliers, "KEPT", 7)  # many messages tie at the 7th largest: the same 7 kept
    got = assert_same(run, warmup=500)
    assert got.outliers.total.size == 7


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_a_live_run_joined_with_its_send_log_and_subscribers_is_counted_the_same(tmp_path):
    # udp-replay's send log and three subscribers (one slow: it misses frames, so its chain has fewer events):
    # the chains to the book from the intended send and to each subscriber, the coordinated-omission table and
    # its trends.
    # 150,000 messages: more than two reads of the log, so its parts (and their trends) are added too.
    day = make_capture(tmp_path, "day.pcap", "--profile", "nasdaq-day", "--messages", "150000", "--symbol-count",
                       "20", "--seed", "11")
    values = config(day, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 20000}, subscribers=3,
                    subscriber_modes=["slow"])
    run = runner.execute(values, "joined", root=tmp_path / "runs", echo=False)
    assert (run / "send.log").is_file() and len(list(run.glob("subscriber-*.recv"))) == 3
    for threads in (1, 2, 3):
        got = assert_same(run, threads=threads)
        assert set(got.hop_tables.chains) == {"t_book", *got.subscribers}
        assert got.hop_tables.chains["t_book"][0] == "t_intended"


def test_a_damaged_compact_log_is_refused_with_the_slot_named(tmp_path):
    wide = _wide_log(tmp_path / "w.lat", 0b11110, [(1, 0, [10**15, 10**15 + 1, 10**15 + 2, 0])])
    run = tmp_path / "run"
    run.mkdir()
    assert compact(wide, run / "latency.lat").returncode == 0
    data = bytearray((run / "latency.lat").read_bytes())
    data[160 + 8] = 99  # the first slot is an escape (the base moves to 10^15): its kind byte
    (run / "latency.lat").write_bytes(bytes(data))
    with pytest.raises(logs.LogFormatError, match=r"latency.lat: escape slot 0 has kind 99"):
        latency_pass.scan(run)


# Rows of (seq, origin, stamps), every stage of a UDP run: stamps a few ns to far apart, running backwards now and
# then, zero where a stage did not happen; flags with rejected and BBO-event messages.
_DELTA = st.one_of(st.integers(0, 400), st.integers(-300, -1), st.integers(60_000, 70_000),
                   st.sampled_from([2**20, 2**33, -(2**33)]))
_ROW = st.tuples(st.lists(st.one_of(st.just(None), _DELTA), min_size=5, max_size=5), st.integers(0, 7))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_ROW, min_size=1, max_size=120), stages=st.sampled_from([0b11111, 0b11110, 0b01010, 0b00110]),
       warmup=st.integers(0, 30))
def test_any_log_is_counted_the_same_by_both_readers(tmp_path_factory, rows, stages, warmup):
    n = bin(stages).count("1")
    wide_rows, t = [], 10**15
    for i, (deltas, _) in enumerate(rows):
        stamps = []
        for d in deltas[:n]:
            t = (t + (d or 0)) % 2**64
            stamps.append(0 if d is None else t)
        wide_rows.append((i + 1, 1000 * i, stamps))
    base = tmp_path_factory.mktemp("any")
    wide = base / "wide"
    wide.mkdir()
    path = _wide_log(wide / "latency.lat", stages, wide_rows)
    data = bytearray(path.read_bytes())
    record = 24 + 8 * n
    for i, (_, flags) in enumerate(rows):  # flags: BBO event (1), unknown reference (2), rejected (4); written
        data[160 + i * record + 19] = 0x80 | flags
    path.write_bytes(bytes(data))
    small = base / "compact"
    small.mkdir()
    assert compact(path, small / "latency.lat").returncode == 0
    for run in (wide, small):
        assert_same(run, warmup, threads=1)
    shutil.rmtree(base)


def test_a_library_whose_structures_differ_is_refused_before_any_call(monkeypatch):
    # A harness and a libitchlog.so from other sources (a struct grown on one side only) would misread every field
    # of every call: the layouts are checked against the library's own sizes when it is loaded.
    class Grown(native.TrendSums):
        _fields_ = [("extra", ctypes.c_uint64)]
    monkeypatch.setattr(native, "TrendSums", Grown)
    native._scan_library.cache_clear()
    try:
        with pytest.raises(native.NativeScanError, match=r"libitchlog.so: its structures are .*rebuild"):
            native._scan_library()
    finally:
        monkeypatch.undo()
        native._scan_library.cache_clear()
    native._scan_library()  # the harness's own layouts load
