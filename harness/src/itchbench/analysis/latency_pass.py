"""Everything a run's report says about latency, from two passes over its
latency log in chunks: memory bounded whatever the number of records, time
linear in it.

Pass 1 reads a few fields (receive stamps, locates, which stamps are ever
set); pass 2 feeds exact integer histograms (analysis/histogram.py) for
every stage, the warm-up, the headline stage by message type, by symbol and
over time, the hop-by-hop tables, and optionally writes the per-message CSV.
No statistic is approximated: percentiles, min, max, mean and standard
deviation are those of the whole sample.

The same two passes run compiled (gateway/log/latency_scan.hpp, through
analysis/native.py) for every log of version 3 to 5: this module decides
what is counted either way, and its numpy passes stay the reference the
tests hold the compiled ones to, and the reader of the per-message CSV.
"""

from __future__ import annotations

import ctypes
import functools
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from . import hops, logs, native, outliers
from .histogram import KeyedHistogram
from .trend import Trend
from .stats import ONE_WAY, STAGES, TYPE_NAMES

HEADLINE = "receive_to_book"
# What scan() tells its progress callback each pass is (with the records it has read).
FIRST_PASS = "pass 1 of 2 over the latency log"
FIRST_PASS_INDEXED = "pass 1 of 2, from the gateway's index of the latency log"
SECOND_PASS = "pass 2 of 2 over the latency log"
SECOND_PASS_FOLLOWED = "pass 2 of 2, counted while the gateway wrote the latency log"
SET_ASIDE = -1  # told as the records of a pass set aside (the followed one): the log is read instead
CHUNK_RECORDS = 1 << 16   # 4 MiB of version-2 records at a time: a chunk's fields are read from cache
MAX_TIME_BINS = 128       # throughput and latency over time: bins of 2^k ns, the narrowest that hold the run
_TYPE_KEYS = 256          # the type byte is the key
_TYPE_BINS = 1024         # values below this (ns) counted densely per type; above, exactly but sparsely
_SYMBOL_CELLS = 1 << 24   # dense symbol x value cells (128 MiB): 1,024 values a symbol for up to 16,384 symbols


def stages_of(run_dir: Path, warmup_messages: int) -> RunLatency:
    """scan() without breakdowns, cached per log version: what documents and comparisons draw, several figures a
    run."""
    log = Path(run_dir) / "latency.lat"
    return _stages(str(run_dir), warmup_messages, log.stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _stages(run_dir: str, warmup_messages: int, _mtime_ns: int) -> RunLatency:
    return scan(Path(run_dir), warmup_messages, breakdowns=False)


@dataclass
class RunLatency:
    stages: list[tuple[str, str]]                  # (name, description) of stages with values
    stage: dict[str, KeyedHistogram]
    warmup: dict[str, KeyedHistogram]
    messages: int                                  # accepted, after the warm-up
    warmup_messages: int
    rejected: int
    by_type: KeyedHistogram
    by_symbol: KeyedHistogram
    over_time: KeyedHistogram                      # the headline stage, keyed by time bin
    time_edges_s: np.ndarray                       # the bins' edges, seconds since the first receive stamp
    throughput_counts: np.ndarray                  # messages per time bin
    span_ns: int                                   # first to last receive stamp after the warm-up, + 1 (0: none)
    hop_tables: hops.HopTables | None
    outliers: outliers.Outliers | None
    sender: str
    stamped: list[str]                             # the stamp columns the log holds (its header's stages)
    subscribers: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TimeBins:
    """The run's time bins: 2^shift ns each from the first receive stamp after the warm-up (an earlier stamp in the
    first bin), the narrowest of which at most MAX_TIME_BINS hold the last stamp (gateway/log/latency_scan.hpp
    time_shift_for): a pass that follows the log, learning the span as it goes, ends with the same bins."""
    origin: int
    shift: int
    count: int
    span_ns: int  # first to last stamp, + 1; 0: no message after the warm-up

    @classmethod
    def of(cls, t_first: int | None, t_last: int | None) -> TimeBins:
        if t_first is None or t_last is None:
            return cls(0, 0, 1, 0)
        span = max(t_last - t_first, 0)
        shift = max(span.bit_length() - (MAX_TIME_BINS.bit_length() - 1), 0)
        return cls(t_first, shift, (span >> shift) + 1, span + 1)

    def place(self, t: np.ndarray) -> np.ndarray:
        return np.clip((t - self.origin) >> self.shift, 0, self.count - 1)

    @property
    def edges_s(self) -> np.ndarray:
        return np.arange(self.count + 1, dtype=np.float64) * float(1 << self.shift) / 1e9


def _receive(rec: np.ndarray) -> np.ndarray:
    """The receive stamp: the kernel's where the transport has one, else the read's (a version-1 log's only one)."""
    if "t_receive" in rec.dtype.names:
        return logs.stamp(rec, "t_receive")
    kernel = logs.stamp(rec, "t_kernel")
    return np.where(kernel != 0, kernel, logs.stamp(rec, "t_read"))


def _chunks(lat: logs.LogFile, size: int):
    for part in logs.iter_records(lat, size):
        yield hops.accepted(part)


def stage_list(lat: logs.LogFile) -> list[tuple[str, str, str, str, bool]]:
    names = set(lat.dtype.names) | {"t_receive"}
    stages = [s for s in STAGES if s[2] in names and s[3] in names]
    if lat.header["origin_clock"] == "sender-monotonic":
        stages.insert(0, ONE_WAY)
    return stages


def _stamps(rec: np.ndarray) -> dict[str, np.ndarray]:
    out = {n: logs.stamp(rec, n) for n in rec.dtype.names if n.startswith("t_")}
    out["t_receive"] = _receive(rec)
    return out


def scan(run_dir: Path, warmup_messages: int = 0, *, csv: Path | None = None,
         symbol_names: np.ndarray | None = None, breakdowns: bool = True, chunk: int = CHUNK_RECORDS,
         progress: Callable[[str, int], None] | None = None, compiled: bool = True,
         threads: int = 0, followed: Callable[[], Followed | None] | None = None) -> RunLatency:
    """The run's latency histograms. breakdowns=False leaves out what only a run's own report shows (by type, by
    symbol, over time, hop by hop): stages and warm-up are enough for comparisons and documents. progress(pass,
    records) is told after each chunk of the two passes over the log (pass: FIRST_PASS, FIRST_PASS_INDEXED,
    SECOND_PASS_FOLLOWED — records SET_ASIDE when it is — or SECOND_PASS). compiled: let the C++ reader count what
    it covers (compiled_scan_reads); False: numpy here counts everything (the reference the tests hold it to).
    threads: the compiled second pass's (0: one a CPU, at most 4). followed: waits for the second pass counted
    while the gateway wrote the log (analysis/latency_follow.py) and returns it; taken instead of a pass over the
    log when it covered the whole log, as the first pass finds it, with the plan the first pass calls for."""
    run_dir = Path(run_dir)
    lat = logs.read_latency(run_dir / "latency.lat")
    stages = stage_list(lat)
    if compiled and csv is None and compiled_scan_reads(lat):
        try:
            return _compiled_scan(run_dir, lat, stages, warmup_messages, breakdowns, progress, threads, followed)
        except native.NativeScanError as e:
            raise logs.LogFormatError(str(e)) from None

    # Pass 1: the receive-stamp span after the warm-up, the largest locate, the stamps that are ever set and the
    # stages that have a value (a stage no message has is left out, as a column of the CSV too).
    accepted_total, t_first, t_hi, max_locate = 0, None, None, 0
    set_fields: set[str] = set()
    found: set[str] = set()
    for rec in _chunks(lat, chunk):
        skip = max(0, min(len(rec), warmup_messages - accepted_total))
        accepted_total += len(rec)
        if progress is not None:
            progress(FIRST_PASS, accepted_total)
        if len(rec):
            max_locate = max(max_locate, int(rec["stock_locate"].max()))
            set_fields |= {n for n in rec.dtype.names if n.startswith("t_") and n not in set_fields and rec[n].any()}
            if len(found) < len(stages):
                stamps = _stamps(rec)
                bbo = (rec["flags"] & logs.FLAG_BBO_EVENT) != 0
                for name, _, start, end, bbo_only in stages:
                    if name not in found and ((stamps[start] != 0) & (stamps[end] != 0) & (bbo | (not bbo_only))).any():
                        found.add(name)
        if skip < len(rec):
            t = _receive(rec[skip:])
            t_first = int(t[0]) if t_first is None else t_first
            t_hi = int(t.max()) if t_hi is None else max(t_hi, int(t.max()))
    bins = TimeBins.of(t_first, t_hi)

    reader = hops.ChainReader(run_dir)
    hop_tables = reader.hop_tables({"t_read" if n == "t_receive" else n for n in set_fields}) if breakdowns else None
    slowest = outliers.Outliers(hop_tables.chains["t_book"]) if hop_tables is not None else None

    stages = [s for s in stages if s[0] in found]
    stage_h = {s[0]: KeyedHistogram() for s in stages}
    warm_h = {s[0]: KeyedHistogram(dense=1 << 12) for s in stages}
    by_type = KeyedHistogram(_TYPE_KEYS if breakdowns else 1, _TYPE_BINS)
    symbol_bins = int(2 ** np.clip(np.floor(np.log2(_SYMBOL_CELLS / (max_locate + 1))), 6, 10))
    by_symbol = KeyedHistogram(max_locate + 1 if breakdowns else 1, symbol_bins)
    over_time = KeyedHistogram(bins.count, 1 << 12)
    throughput = np.zeros(bins.count, np.int64)
    seen, wrote_csv = 0, False

    # Pass 2: every histogram, the hop tables, and the CSV.
    for rec in _chunks(lat, chunk):
        split = max(0, min(len(rec), warmup_messages - seen))
        seen += len(rec)
        if progress is not None:
            progress(SECOND_PASS, seen)
        stamps = _stamps(rec)
        bbo = (rec["flags"] & logs.FLAG_BBO_EVENT) != 0
        time_bin = bins.place(stamps["t_receive"][split:])
        throughput += np.bincount(time_bin, minlength=bins.count)
        csv_cols: dict[str, Any] = {}
        for name, _, start, end, bbo_only in stages:
            a, b = stamps[start], stamps[end]
            valid = (a != 0) & (b != 0)
            if bbo_only:
                valid &= bbo
            d = b - a
            warm_h[name].add(d[:split][valid[:split]])
            main, ok = d[split:], valid[split:]
            stage_h[name].add(main[ok])
            if csv is not None:
                csv_cols[name] = np.where(ok, main.astype(np.float64), np.nan)
            if name == HEADLINE and breakdowns:
                v = main[ok]
                by_type.add(v, rec["msg_type"][split:].view(np.uint8)[ok])
                by_symbol.add(v, rec["stock_locate"][split:][ok])
                over_time.add(v, time_bin[ok])
        if hop_tables is not None and slowest is not None:
            cols = reader.columns(rec)
            hop_tables.add(cols)
            slowest.add(cols, rec["msg_type"].view(np.uint8))
        if csv is not None:
            _append_csv(csv, rec[split:], stamps["t_receive"][split:], csv_cols, symbol_names, header=not wrote_csv)
            wrote_csv = True

    kept = [(s[0], s[1]) for s in stages]
    return RunLatency(
        stages=kept, stage={n: stage_h[n] for n, _ in kept}, warmup={n: warm_h[n] for n, _ in kept},
        messages=max(0, accepted_total - warmup_messages), warmup_messages=min(warmup_messages, accepted_total),
        rejected=lat.count - accepted_total, by_type=by_type, by_symbol=by_symbol, over_time=over_time,
        time_edges_s=bins.edges_s, throughput_counts=throughput, span_ns=bins.span_ns, hop_tables=hop_tables,
        outliers=slowest,
        sender=reader.sender,
        stamped=lat.header["stages"], subscribers=reader.subscribers)


# The compiled scan's numbers for the stamps (gateway/log/latency_scan.hpp Stamp): the stages in the log's order,
# then the receive stamp and the origin.
_STAMP_IDS = {**{name: i for i, name in enumerate(logs.STAGE_STAMPS)},
              "t_receive": len(logs.STAGE_STAMPS), "t_origin": len(logs.STAGE_STAMPS) + 1}


def set_stamps_of(stamp_sets: list[int]) -> int:
    """The stamps (a bit per _STAMP_IDS number) that messages of these stamp sets have: an index block's sets
    (gateway/log/FORMAT.md: bits 0-4 the stages, 5 the origin, 6 a BBO event), as the first pass counts them."""
    bits = 0
    for m in stamp_sets:
        bits |= (m & 0x1F) | ((m >> 5 & 1) << _STAMP_IDS["t_origin"])
    return bits


def compiled_scan_reads(lat: logs.LogFile) -> bool:
    """Whether the compiled scan computes this run's report: a latency log of version 3 to 5 (the per-message CSV
    stays numpy's, and so do logs of versions 1 and 2)."""
    return lat.header["version"] in (*logs.STAGE_LAYOUT_VERSIONS, logs.LATENCY_COMPACT_VERSION)


def scan_source(lat: logs.LogFile) -> native.ScanSource:
    stages = lat.compact_stages if lat.compact_stages is not None else sum(
        1 << i for i, name in enumerate(logs.STAGE_STAMPS) if name in lat.stored.dtype.names)
    line = lat.clock_line.native if lat.clock_line is not None else native.ClockLine()
    return native.ScanSource(lat.header_size, len(lat.stored), stages, lat.compact_stages is not None,
                             lat.clock_line is not None, (ctypes.c_uint8 * 5)(), line)


def _compiled_scan(run_dir: Path, lat: logs.LogFile, stages: list[tuple[str, str, str, str, bool]],
                   warmup_messages: int, breakdowns: bool,
                   progress: Callable[[str, int], None] | None, threads: int,
                   followed: Callable[[], Followed | None] | None = None) -> RunLatency:
    """scan() by the C++ reader (gateway/log/latency_scan.hpp): the same two passes and the same integer
    arithmetic, so the same figures, at the speed of compiled code. The choices (stages, chain, bins) are made
    here, as scan() makes them."""
    source = scan_source(lat)
    specs = [native.ScanStage(_STAMP_IDS[start], _STAMP_IDS[end], bbo_only) for _, _, start, end, bbo_only in stages]
    index = _index_of(run_dir, lat)
    try:
        return _both_passes(run_dir, lat, source, stages, specs, warmup_messages, breakdowns, progress, threads,
                            index, followed)
    except native.NativeScanError as e:
        if index is None:
            raise
        # The log is the record: an index that does not follow it (its blocks, or the counts and checkpoints the
        # passes found wrong) is set aside, said, and the log read instead.
        warnings.warn(f"{run_dir / 'latency.idx'} set aside: {e}", IndexSetAsideWarning, stacklevel=2)
        return _both_passes(run_dir, lat, source, stages, specs, warmup_messages, breakdowns, progress, threads,
                            None, None)


def _both_passes(run_dir: Path, lat: logs.LogFile, source: native.ScanSource,
                 stages: list[tuple[str, str, str, str, bool]], specs: list[native.ScanStage], warmup_messages: int,
                 breakdowns: bool, progress: Callable[[str, int], None] | None, threads: int,
                 index: np.ndarray | None, followed: Callable[[], Followed | None] | None) -> RunLatency:
    first_pass = FIRST_PASS if index is None else FIRST_PASS_INDEXED
    if progress is not None:
        progress(first_pass, 0)
    pass1 = native.First(str(lat.path), source, warmup_messages, specs, index)
    counted: Followed | None = None
    try:
        first = pass1.found
        if progress is not None:
            progress(first_pass, int(first.accepted))
        bins = TimeBins.of(int(first.t_first), int(first.t_hi)) if first.any_after_warmup else TimeBins.of(None, None)
        plan = ScanPlan.of(run_dir, stages, warmup_messages, breakdowns, threads, bins,
                           found_stages=int(first.found_stages), set_stamps=int(first.set_stamps),
                           max_locate=int(first.max_locate))
        if followed is not None and index is not None:  # without a whole index, no followed pass covers the log
            if progress is not None:
                progress(SECOND_PASS_FOLLOWED, 0)
            counted = followed()  # once it has counted the blocks the gateway wrote last
            positions = _followed_positions(counted, plan, first, bins, lat, index) if counted is not None else None
            if counted is not None and counted.scan is not None and positions is not None:
                if progress is not None:
                    progress(SECOND_PASS_FOLLOWED, int(first.accepted))
                return plan.read_out(counted.scan, lat, first, warmup_messages, bins, positions)
            if progress is not None:
                progress(SECOND_PASS_FOLLOWED, SET_ASIDE)
        if progress is not None:
            progress(SECOND_PASS, 0)
        done = native.Scan.after(str(lat.path), source, plan.params, pass1, len(plan.book_chain))
        if progress is not None:
            progress(SECOND_PASS, int(first.accepted))
        return plan.read_out(done, lat, first, warmup_messages, bins, list(range(len(plan.stages))))
    finally:
        pass1.close()
        if counted is not None and counted.scan is not None:
            counted.scan.close()  # read out above, or set aside


@dataclass
class Followed:
    """A second pass counted while the gateway wrote its log (analysis/latency_follow.py): the plan it was made
    with (from the log's header and first block) and its scan, or why there is none."""
    plan: ScanPlan | None = None
    scan: native.Scan | None = None
    covered: native.Followed | None = None
    failed: str = ""


class FollowedSetAsideWarning(UserWarning):
    """The second pass counted during the run did not cover the log as the first pass found it: the log was read."""


def _followed_positions(followed: Followed, plan: ScanPlan, first: native.FirstPass, bins: TimeBins,
                        lat: logs.LogFile, index: np.ndarray | None) -> list[int] | None:
    """Where each stage of the plan is among those the followed pass counted, when that pass counted this plan over
    the whole log: every block of the index, the same messages, locates and bins as the first pass found, the same
    chains and joins. None otherwise (said, unless no pass followed)."""
    def set_aside(why: str) -> None:
        warnings.warn(f"{lat.path}: the second pass counted during the run is set aside ({why}); the log is read "
                      "again", FollowedSetAsideWarning, stacklevel=3)
    if followed.scan is None or followed.plan is None or followed.covered is None:
        if followed.failed:
            set_aside(followed.failed)
        return None
    c, theirs = followed.covered, followed.plan
    found = [(c.abandoned == 0, "abandoned"),
             (index is not None and c.blocks == len(index),
              f"{c.blocks} blocks counted, the index holds {0 if index is None else len(index)}"),
             ((c.slots, c.messages, c.accepted) == (len(lat.stored), first.messages, first.accepted),
              f"{c.messages:,} messages counted, the log holds {first.messages:,}"),
             (first.accepted == 0 or c.max_locate == first.max_locate, "another largest locate"),
             (not first.any_after_warmup or (c.time_origin, c.time_shift) == (bins.origin, bins.shift),
              "other time bins"),
             (theirs.joins == plan.joins, "other hop chains or joins: stamps the first block did not show"),
             ((theirs.params.warmup, theirs.params.breakdowns) == (plan.params.warmup, plan.params.breakdowns),
              "another warm-up"),
             # No headline found: the followed pass's (a stage no message had a value for) counted nothing by type.
             (theirs.headline == plan.headline or (plan.headline is None and theirs.headline not in
                                                   [s[0] for s in plan.stages]), "another headline stage")]
    wrong = [why for ok, why in found if not ok]
    if not wrong and all(s in theirs.stages for s in plan.stages):
        return [theirs.stages.index(s) for s in plan.stages]
    set_aside("; ".join(wrong) or "stages it did not count")
    return None


class IndexSetAsideWarning(UserWarning):
    """A run's latency index did not follow its latency log: the log was read instead."""


def _index_of(run_dir: Path, lat: logs.LogFile) -> np.ndarray | None:
    """The gateway's index of its latency log (latency.idx: what a first pass finds, a block of the log at a
    time), when it is whole and of this log: both closed by the gateway that wrote them, the same run. Else None,
    and the first pass reads the log itself (an older gateway's run, a crashed one, a brought gateway's)."""
    path = run_dir / "latency.idx"
    if not path.is_file() or not lat.complete:
        return None
    try:
        index = logs.read_latency_index(path, quiet=True)  # not whole: not used
    except logs.LogFormatError:
        return None
    same_run = (index.header["run_id"], index.header["commit"]) == (lat.header["run_id"], lat.header["commit"])
    return np.asarray(index.stored) if index.complete and same_run and len(index.stored) else None


@dataclass
class ScanPlan:
    """What the compiled second pass counts (the stages, the hop chains and what they join, the bins) and the
    parameters that tell it so; chosen from what the first pass found, or, for a pass that follows the log, from
    what its first block shows (checked against the first pass afterwards: _followed_positions)."""
    stages: list[tuple[str, str, str, str, bool]]   # those counted
    hop_tables: hops.HopTables | None
    chains: dict[str, list[str]]
    co_starts: list[str]
    reader: hops.ChainReader
    params: native.ScanParams
    kept_alive: list[Any]                           # arrays the params point into
    joins: tuple[Any, ...]                          # the chains and joins as counted, to compare two plans by

    @property
    def book_chain(self) -> list[str]:
        return self.chains.get("t_book", [])

    @property
    def headline(self) -> str | None:
        return self.stages[self.params.headline][0] if self.params.headline >= 0 else None

    @classmethod
    def of(cls, run_dir: Path, stages: list[tuple[str, str, str, str, bool]], warmup_messages: int,
           breakdowns: bool, threads: int, bins: TimeBins, *, found_stages: int, set_stamps: int,
           max_locate: int) -> ScanPlan:
        stages = [s for i, s in enumerate(stages) if found_stages >> i & 1]
        specs = [native.ScanStage(_STAMP_IDS[start], _STAMP_IDS[end], bbo_only)
                 for _, _, start, end, bbo_only in stages]
        # The hop chains, as scan() makes them from the stamps some message has.
        reader = hops.ChainReader(run_dir)
        stamped = {name for name, i in _STAMP_IDS.items() if name != "t_receive" and set_stamps >> i & 1}
        hop_tables = reader.hop_tables(stamped) if breakdowns else None
        chains = hop_tables.chains if hop_tables is not None else {}
        co_starts = hop_tables.co_starts if hop_tables is not None else []
        ids = {**{n: _STAMP_IDS[n] for n in logs.STAGE_STAMPS}, "t_intended": native.STAMP_INTENDED,
               "t_sent": native.STAMP_SENT,
               **{n: native.STAMP_SUBSCRIBER + k for k, n in enumerate(reader.subscribers)}}
        chain_stamps = np.array([ids[s] for c in chains.values() for s in c], np.uint16)
        chain_lengths = np.array([len(c) for c in chains.values()], np.uint32)
        chain_bbo_only = np.array([hops.bbo_events_only(to) for to in chains], np.uint8)
        send = reader.send if reader.send is not None else (np.zeros(0, np.int64),) * 3
        send = tuple(np.ascontiguousarray(a, np.int64) for a in send)
        subs = [(np.ascontiguousarray(keys, np.int64), np.ascontiguousarray(received, np.int64))
                for _, keys, received in reader.joined_subscribers()]
        sub_n = np.array([len(k) for k, _ in subs], np.uint64)
        sub_seq = (ctypes.c_void_p * max(len(subs), 1))(*[k.ctypes.data for k, _ in subs])
        sub_received = (ctypes.c_void_p * max(len(subs), 1))(*[r.ctypes.data for _, r in subs])
        sub_depth = np.array([hops.is_depth(name) for name, _, _ in reader.joined_subscribers()] or [0], np.uint8)

        # Stamps of other processes call for the gateway's moved onto CLOCK_MONOTONIC (analysis/hops.py).
        clock = hops.gateway_clock(run_dir) if reader.moves else {}
        move = [clock.get(k) for k in ("anchor_ns", "offset_measured_at_ns", "offset_from_monotonic_ns_at_end")]
        names = [s[0] for s in stages]
        params = native.ScanParams(
            warmup=warmup_messages, max_locate=max_locate, time_origin=bins.origin, anchor=int(move[0] or 0),
            at=int(move[1] or 0), offset=int(move[2] or 0), n_stages=len(specs),
            headline=names.index(HEADLINE) if HEADLINE in names else -1, breakdowns=breakdowns,
            time_shift=bins.shift, n_co=len(co_starts), kept=outliers.KEPT,
            monotonic=all(m is not None for m in move), threads=threads, n_chains=len(chains),
            chain_stamps=chain_stamps.ctypes.data, chain_lengths=chain_lengths.ctypes.data,
            chain_bbo_only=chain_bbo_only.ctypes.data, send_n=len(send[0]), send_seq=send[0].ctypes.data,
            send_intended=send[1].ctypes.data, send_sent=send[2].ctypes.data, n_subscribers=len(subs),
            subscriber_n=sub_n.ctypes.data, subscriber_seq=ctypes.cast(sub_seq, ctypes.c_void_p),
            subscriber_received=ctypes.cast(sub_received, ctypes.c_void_p), subscriber_depth=sub_depth.ctypes.data)
        for i, spec in enumerate(specs):
            params.stages[i] = spec
        for i, name in enumerate(co_starts):
            params.co_starts[i] = ids[name]
        joins = (tuple(chains.items()), tuple(co_starts), reader.subscribers, len(send[0]), bool(params.monotonic))
        return cls(stages, hop_tables, chains, co_starts, reader, params,
                   [chain_stamps, chain_lengths, chain_bbo_only, send, subs, sub_n, sub_seq, sub_received, sub_depth],
                   joins)

    def read_out(self, done: native.Scan, lat: logs.LogFile, first: native.FirstPass, warmup_messages: int,
                 bins: TimeBins, positions: list[int]) -> RunLatency:
        """The report's figures from a compiled scan's tables; positions: where each of this plan's stages is
        among those the scan counted."""
        try:
            table = lambda t, keys=1: KeyedHistogram.from_table(*done.table(t), n_keys=keys)  # noqa: E731
            slowest = None
            hop_tables = self.hop_tables
            if hop_tables is not None:
                counted = {}
                for c, (to, stamps) in enumerate(self.chains.items()):
                    pairs = [(table(native.TABLE_HOP + 16 * c + i), table(native.TABLE_CUMULATIVE + 16 * c + i))
                             for i in range(len(stamps) - 1)]
                    counted[to] = [(pairs[0][0], pairs[0][0])] + pairs[1:]  # the first hop is its own cumulative
                trend, served_trend, served = done.trends()
                as_trend = lambda t: Trend.of_sums(t.origin if t.any else None, t.n, t.sx, t.sy, t.sxx,  # noqa: E731
                                                   t.sxy, t.lo, t.hi)
                hop_tables.counted(counted, {s: table(native.TABLE_CO + i) for i, s in enumerate(self.co_starts)},
                                   as_trend(trend), as_trend(served_trend), served)
                kept = done.slowest()
                slowest = outliers.Outliers.kept_from(self.book_chain, kept["total"], kept["start"], kept["hops"],
                                                      kept["seq"], kept["type"])
            names = [s[0] for s in self.stages]
            return RunLatency(
                stages=[(s[0], s[1]) for s in self.stages],
                stage={n: table(native.TABLE_STAGE + positions[i]) for i, n in enumerate(names)},
                warmup={n: table(native.TABLE_WARMUP + positions[i]) for i, n in enumerate(names)},
                messages=max(0, int(first.accepted) - warmup_messages),
                warmup_messages=min(warmup_messages, int(first.accepted)),
                rejected=int(first.messages) - int(first.accepted),
                by_type=table(native.TABLE_BY_TYPE, _TYPE_KEYS if self.params.breakdowns else 1),
                by_symbol=table(native.TABLE_BY_SYMBOL, int(first.max_locate) + 1 if self.params.breakdowns else 1),
                over_time=table(native.TABLE_OVER_TIME, bins.count),
                time_edges_s=bins.edges_s, throughput_counts=done.throughput()[:bins.count], span_ns=bins.span_ns,
                hop_tables=hop_tables, outliers=slowest, sender=self.reader.sender,
                stamped=lat.header["stages"], subscribers=self.reader.subscribers)
        finally:
            done.close()


def _append_csv(path: Path, rec: np.ndarray, t_receive: np.ndarray, stage_cols: dict[str, np.ndarray],
                symbol_names: np.ndarray | None, *, header: bool) -> None:
    locate = rec["stock_locate"]
    frame = pd.DataFrame({"seq": rec["seq"], "type": pd.Series(rec["msg_type"].view(np.uint8)).map(TYPE_NAMES)})
    if symbol_names is not None:
        frame["symbol"] = symbol_names[locate]
    frame["locate"] = locate
    frame["t_receive"] = t_receive
    for name, col in stage_cols.items():
        frame[name] = col
    frame.to_csv(path, mode="w" if header else "a", header=header, index=False, lineterminator="\n",
                 float_format="%.0f")
