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
CHUNK_RECORDS = 1 << 16   # 4 MiB of version-2 records at a time: a chunk's fields are read from cache
TIME_BINS = 100           # throughput and latency over time
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
    time_edges_s: np.ndarray                       # TIME_BINS + 1 edges, seconds since the first receive stamp
    throughput_counts: np.ndarray                  # messages per time bin
    hop_tables: hops.HopTables | None
    outliers: outliers.Outliers | None
    sender: str
    stamped: list[str]                             # the stamp columns the log holds (its header's stages)
    subscribers: list[str] = field(default_factory=list)


def _receive(rec: np.ndarray) -> np.ndarray:
    """The receive stamp: the kernel's where the transport has one, else the read's (a version-1 log's only one)."""
    if "t_receive" in rec.dtype.names:
        return logs.stamp(rec, "t_receive")
    kernel = logs.stamp(rec, "t_kernel")
    return np.where(kernel != 0, kernel, logs.stamp(rec, "t_read"))


def _chunks(lat: logs.LogFile, size: int):
    for part in logs.iter_records(lat, size):
        yield hops.accepted(part)


def _stage_list(lat: logs.LogFile) -> list[tuple[str, str, str, str, bool]]:
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
         threads: int = 0) -> RunLatency:
    """The run's latency histograms. breakdowns=False leaves out what only a run's own report shows (by type, by
    symbol, over time, hop by hop): stages and warm-up are enough for comparisons and documents. progress(pass,
    records) is told after each chunk of the two passes over the log (pass: FIRST_PASS, FIRST_PASS_INDEXED or
    SECOND_PASS). compiled: let the C++ reader count what it covers (_compiled_scan_reads); False: numpy here
    counts everything (the reference the tests hold it to).
    threads: the compiled second pass's (0: one a CPU, at most 4)."""
    run_dir = Path(run_dir)
    lat = logs.read_latency(run_dir / "latency.lat")
    stages = _stage_list(lat)
    if compiled and csv is None and _compiled_scan_reads(lat):
        try:
            return _compiled_scan(run_dir, lat, stages, warmup_messages, breakdowns, progress, threads)
        except native.NativeScanError as e:
            raise logs.LogFormatError(str(e)) from None

    # Pass 1: the receive-stamp span after the warm-up, the largest locate, the stamps that are ever set and the
    # stages that have a value (a stage no message has is left out, as a column of the CSV too).
    accepted_total, t_lo, t_hi, max_locate = 0, None, None, 0
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
            t_lo = int(t.min()) if t_lo is None else min(t_lo, int(t.min()))
            t_hi = int(t.max()) if t_hi is None else max(t_hi, int(t.max()))
    # Time bins in integer arithmetic: bin = (t - first) * TIME_BINS // span, the last stamp in the last bin.
    t_lo = t_lo if t_lo is not None else 0
    span_ns = max((t_hi or 0) - t_lo, 0) + 1
    edges = np.linspace(0.0, span_ns / 1e9, TIME_BINS + 1)

    reader = hops.ChainReader(run_dir)
    present = {"t_read" if n == "t_receive" else n for n in set_fields}
    if reader.send is not None and reader.send[1].any():
        present |= {"t_intended", "t_sent"}
    # Hop by hop needs a stamp before the book's (a run that stamped the book alone has no hop).
    hop_tables = (hops.HopTables(sorted(present), reader.subscribers)
                  if len(hops.chain_to_book(present)) >= 2 and breakdowns else None)
    slowest = outliers.Outliers(hop_tables.chains["t_book"]) if hop_tables is not None else None

    stages = [s for s in stages if s[0] in found]
    stage_h = {s[0]: KeyedHistogram() for s in stages}
    warm_h = {s[0]: KeyedHistogram(dense=1 << 12) for s in stages}
    by_type = KeyedHistogram(_TYPE_KEYS if breakdowns else 1, _TYPE_BINS)
    symbol_bins = int(2 ** np.clip(np.floor(np.log2(_SYMBOL_CELLS / (max_locate + 1))), 6, 10))
    by_symbol = KeyedHistogram(max_locate + 1 if breakdowns else 1, symbol_bins)
    over_time = KeyedHistogram(TIME_BINS, 1 << 12)
    throughput = np.zeros(TIME_BINS, np.int64)
    seen, wrote_csv = 0, False

    # Pass 2: every histogram, the hop tables, and the CSV.
    for rec in _chunks(lat, chunk):
        split = max(0, min(len(rec), warmup_messages - seen))
        seen += len(rec)
        if progress is not None:
            progress(SECOND_PASS, seen)
        stamps = _stamps(rec)
        bbo = (rec["flags"] & logs.FLAG_BBO_EVENT) != 0
        time_bin = np.clip((stamps["t_receive"][split:] - t_lo) * TIME_BINS // span_ns, 0, TIME_BINS - 1)
        throughput += np.bincount(time_bin, minlength=TIME_BINS)
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
        time_edges_s=edges, throughput_counts=throughput, hop_tables=hop_tables, outliers=slowest,
        sender=reader.sender,
        stamped=lat.header["stages"], subscribers=reader.subscribers)


# The compiled scan's numbers for the stamps (gateway/log/latency_scan.hpp Stamp): the stages in the log's order,
# then the receive stamp and the origin.
_STAMP_IDS = {**{name: i for i, name in enumerate(logs.STAGE_STAMPS)},
              "t_receive": len(logs.STAGE_STAMPS), "t_origin": len(logs.STAGE_STAMPS) + 1}


def _compiled_scan_reads(lat: logs.LogFile) -> bool:
    """Whether the compiled scan computes this run's report: a latency log of version 3 to 5 (the per-message CSV
    stays numpy's, and so do logs of versions 1 and 2)."""
    return lat.header["version"] in (*logs.STAGE_LAYOUT_VERSIONS, logs.LATENCY_COMPACT_VERSION)


def _scan_source(lat: logs.LogFile) -> native.ScanSource:
    stages = lat.compact_stages if lat.compact_stages is not None else sum(
        1 << i for i, name in enumerate(logs.STAGE_STAMPS) if name in lat.stored.dtype.names)
    line = lat.clock_line.native if lat.clock_line is not None else native.ClockLine()
    return native.ScanSource(lat.header_size, len(lat.stored), stages, lat.compact_stages is not None,
                             lat.clock_line is not None, (ctypes.c_uint8 * 5)(), line)


def _compiled_scan(run_dir: Path, lat: logs.LogFile, stages: list[tuple[str, str, str, str, bool]],
                   warmup_messages: int, breakdowns: bool,
                   progress: Callable[[str, int], None] | None, threads: int) -> RunLatency:
    """scan() by the C++ reader (gateway/log/latency_scan.hpp): the same two passes and the same integer
    arithmetic, so the same figures, at the speed of compiled code. The choices (stages, chain, bins) are made
    here, as scan() makes them."""
    source = _scan_source(lat)
    specs = [native.ScanStage(_STAMP_IDS[start], _STAMP_IDS[end], bbo_only) for _, _, start, end, bbo_only in stages]
    index = _index_of(run_dir, lat)
    try:
        return _both_passes(run_dir, lat, source, stages, specs, warmup_messages, breakdowns, progress, threads,
                            index)
    except native.NativeScanError as e:
        if index is None:
            raise
        # The log is the record: an index that does not follow it (its blocks, or the counts and checkpoints the
        # passes found wrong) is set aside, said, and the log read instead.
        warnings.warn(f"{run_dir / 'latency.idx'} set aside: {e}", IndexSetAsideWarning, stacklevel=2)
        return _both_passes(run_dir, lat, source, stages, specs, warmup_messages, breakdowns, progress, threads,
                            None)


def _both_passes(run_dir: Path, lat: logs.LogFile, source: native.ScanSource,
                 stages: list[tuple[str, str, str, str, bool]], specs: list[native.ScanStage], warmup_messages: int,
                 breakdowns: bool, progress: Callable[[str, int], None] | None, threads: int,
                 index: np.ndarray | None) -> RunLatency:
    first_pass = FIRST_PASS if index is None else FIRST_PASS_INDEXED
    if progress is not None:
        progress(first_pass, 0)
    pass1 = native.First(str(lat.path), source, warmup_messages, specs, index)
    try:
        first = pass1.found
        if progress is not None:
            progress(first_pass, int(first.accepted))
            progress(SECOND_PASS, 0)
        return _second_pass(run_dir, lat, source, stages, specs, warmup_messages, breakdowns, progress, threads,
                            pass1)
    finally:
        pass1.close()


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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", logs.TruncatedLogWarning)
            index = logs.read_latency_index(path)
    except logs.LogFormatError:
        return None
    same_run = (index.header["run_id"], index.header["commit"]) == (lat.header["run_id"], lat.header["commit"])
    return np.asarray(index.stored) if index.complete and same_run and len(index.stored) else None


def _second_pass(run_dir: Path, lat: logs.LogFile, source: native.ScanSource,
                 stages: list[tuple[str, str, str, str, bool]], specs: list[native.ScanStage], warmup_messages: int,
                 breakdowns: bool, progress: Callable[[str, int], None] | None, threads: int,
                 pass1: native.First) -> RunLatency:
    path, first = str(lat.path), pass1.found
    t_lo = int(first.t_lo) if first.any_after_warmup else 0
    span_ns = max(int(first.t_hi) - t_lo, 0) + 1 if first.any_after_warmup else 1
    found = [i for i in range(len(stages)) if first.found_stages >> i & 1]
    stages = [stages[i] for i in found]
    specs = [specs[i] for i in found]
    # The hop chains, as scan() makes them: the stamps some message has, the send log's when it holds any.
    reader = hops.ChainReader(run_dir)
    present = {name for name, i in _STAMP_IDS.items() if name != "t_receive" and first.set_stamps >> i & 1}
    if reader.send is not None and reader.send[1].any():
        present |= {"t_intended", "t_sent"}
    hop_tables = (hops.HopTables(sorted(present), reader.subscribers)
                  if len(hops.chain_to_book(present)) >= 2 and breakdowns else None)
    chains = hop_tables.chains if hop_tables is not None else {}
    co_starts = [start for _, start in hops.CO_MEASURES if start in present] if hop_tables is not None else []
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

    clock = hops.gateway_clock(run_dir)
    move = [clock.get(k) for k in ("anchor_ns", "offset_measured_at_ns", "offset_from_monotonic_ns_at_end")]
    params = native.ScanParams(
        warmup=warmup_messages, max_locate=int(first.max_locate), t_lo=t_lo, span_ns=span_ns,
        anchor=int(move[0] or 0), at=int(move[1] or 0), offset=int(move[2] or 0), n_stages=len(specs),
        headline=[s[0] for s in stages].index(HEADLINE) if HEADLINE in [s[0] for s in stages] else -1,
        breakdowns=breakdowns, time_bins=TIME_BINS, n_co=len(co_starts), kept=outliers.KEPT,
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
    book_chain = chains.get("t_book", [])
    done = native.Scan(path, source, params, pass1, len(book_chain))
    try:
        if progress is not None:
            progress(SECOND_PASS, int(first.accepted))
        table = lambda t, keys=1: KeyedHistogram.from_table(*done.table(t), n_keys=keys)  # noqa: E731
        slowest = None
        if hop_tables is not None:
            counted = {}
            for c, (to, stamps) in enumerate(chains.items()):
                pairs = [(table(native.TABLE_HOP + 16 * c + i), table(native.TABLE_CUMULATIVE + 16 * c + i))
                         for i in range(len(stamps) - 1)]
                counted[to] = [(pairs[0][0], pairs[0][0])] + pairs[1:]  # the first hop is its own cumulative
            trend, served_trend, served = done.trends()
            as_trend = lambda t: Trend.of_sums(t.origin if t.any else None, t.n, t.sx, t.sy, t.sxx, t.sxy,  # noqa: E731
                                               t.lo, t.hi)
            hop_tables.counted(counted, {s: table(native.TABLE_CO + i) for i, s in enumerate(co_starts)},
                               as_trend(trend), as_trend(served_trend), served)
            kept = done.slowest()
            slowest = outliers.Outliers.kept_from(book_chain, kept["total"], kept["start"], kept["hops"],
                                                  kept["seq"], kept["type"])
        names = [s[0] for s in stages]
        return RunLatency(
            stages=[(s[0], s[1]) for s in stages],
            stage={n: table(native.TABLE_STAGE + i) for i, n in enumerate(names)},
            warmup={n: table(native.TABLE_WARMUP + i) for i, n in enumerate(names)},
            messages=max(0, int(first.accepted) - warmup_messages),
            warmup_messages=min(warmup_messages, int(first.accepted)),
            rejected=int(first.messages) - int(first.accepted),
            by_type=table(native.TABLE_BY_TYPE, _TYPE_KEYS if breakdowns else 1),
            by_symbol=table(native.TABLE_BY_SYMBOL, int(first.max_locate) + 1 if breakdowns else 1),
            over_time=table(native.TABLE_OVER_TIME, TIME_BINS),
            time_edges_s=np.linspace(0.0, span_ns / 1e9, TIME_BINS + 1), throughput_counts=done.throughput(),
            hop_tables=hop_tables, outliers=slowest, sender=reader.sender,
            stamped=lat.header["stages"], subscribers=reader.subscribers)
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
