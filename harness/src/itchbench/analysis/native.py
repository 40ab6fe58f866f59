"""The C++ log reader (gateway/log/log_reader_c.h, libitchlog.so), loaded
with ctypes: a compact latency log is a sequential state machine (escapes
carry values onto the slots after them), which compiled code decodes at
hundreds of millions of slots a second and numpy at a few million."""

from __future__ import annotations

import ctypes
import functools
from typing import NamedTuple

import numpy as np

from .. import paths


class ClockLine(ctypes.Structure):
    _fields_ = [("tsc0", ctypes.c_uint64), ("ns0", ctypes.c_uint64), ("ns_per_tick_q32", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64)]


class CompactState(ctypes.Structure):
    """What a compact slot is read against: the previous message's values and the base (a log's start: 1, 0, 0)."""
    _fields_ = [("next_seq", ctypes.c_uint64), ("prev_origin", ctypes.c_uint64), ("base", ctypes.c_uint64)]

    def __init__(self, next_seq: int = 1, prev_origin: int = 0, base: int = 0) -> None:
        super().__init__(next_seq, prev_origin, base)


class SlotAnchor(ctypes.Structure):
    """The last anchor of a version-3 depth log's slots read so far (held 0: none yet)."""
    _fields_ = [("seq", ctypes.c_uint64), ("timestamp", ctypes.c_uint64), ("held", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32)]


# read_level_change_slots's faults (gateway/log/level_change_slots.hpp SlotFault).
SLOT_FAULT_FLAGS, SLOT_FAULT_NO_ANCHOR, SLOT_FAULT_HIGH_SHARES_ALONE = 1, 2, 3


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(paths.library("libitchlog.so")))
    lib.itchlog_decode_compact.restype = ctypes.c_int64
    lib.itchlog_decode_compact.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint8,
                                           ctypes.POINTER(ClockLine), ctypes.POINTER(CompactState), ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_uint64)]
    lib.itchlog_ticks_to_ns.restype = None
    lib.itchlog_ticks_to_ns.argtypes = [ctypes.POINTER(ClockLine), ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]
    lib.itchlog_depth_events_new.restype = ctypes.c_void_p
    lib.itchlog_depth_events_new.argtypes = [ctypes.c_uint32]
    lib.itchlog_depth_events_apply.restype = ctypes.c_int64
    lib.itchlog_depth_events_apply.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
                                               ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64]
    lib.itchlog_depth_events_free.restype = None
    lib.itchlog_depth_events_free.argtypes = [ctypes.c_void_p]
    lib.itchlog_read_level_change_slots.restype = ctypes.c_int64
    lib.itchlog_read_level_change_slots.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(SlotAnchor),
                                                    ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                                    ctypes.POINTER(ctypes.c_uint32)]
    lib.itchlog_parse_plain_csv.restype = ctypes.c_int64
    lib.itchlog_parse_plain_csv.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32,
                                            ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64,
                                            ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]
    return lib


def decode_compact(slots: np.ndarray, stages: int, line: ClockLine | None, state: CompactState,
                   out: np.ndarray) -> tuple[int, int]:
    """Decodes the contiguous slots into out (room for len(slots) records of the stages' layout), moving state past
    them; line maps the stamps to ns. Returns (records written, slots consumed), or (-1, index of the slot) for an
    escape whose kind the stages cannot hold."""
    assert slots.flags.c_contiguous and out.flags.c_contiguous and len(out) >= len(slots)
    consumed = ctypes.c_uint64(0)
    written = _library().itchlog_decode_compact(slots.ctypes.data, len(slots), stages,
                                                 ctypes.byref(line) if line is not None else None,
                                                 ctypes.byref(state), out.ctypes.data, ctypes.byref(consumed))
    return int(written), int(consumed.value)


def read_level_change_slots(slots: np.ndarray, anchor: SlotAnchor, out: np.ndarray) -> tuple[int, int, int]:
    """A version-3 depth log's slots (contiguous, 16 bytes each) read back into level change records at out (room
    for as many), from anchor, which is moved past them (gateway/log/level_change_slots.hpp). Returns (records,
    slots consumed, 0): all of them, or all but a high-shares slot that ends them; or (-1, the slot refused, its
    SLOT_FAULT_*)."""
    assert slots.flags.c_contiguous and out.flags.c_contiguous and len(out) >= len(slots)
    assert slots.dtype.itemsize == 16 and out.dtype.itemsize == 32
    consumed, fault = ctypes.c_uint64(0), ctypes.c_uint32(0)
    n = _library().itchlog_read_level_change_slots(slots.ctypes.data, len(slots), ctypes.byref(anchor),
                                                   out.ctypes.data, ctypes.byref(consumed), ctypes.byref(fault))
    return int(n), int(consumed.value), int(fault.value)


class DepthEvents:
    """A version-2 depth log of the top N read back as whole events (gateway/log/depth_event_builder.hpp): each
    stock's top N levels kept from one apply to the next."""

    def __init__(self, levels: int) -> None:
        self._builder = _library().itchlog_depth_events_new(levels)
        if not self._builder:
            raise ValueError(f"no depth events of {levels} levels a side (1 to 64)")

    def apply(self, records: np.ndarray, out: np.ndarray) -> int:
        """The level change records (contiguous; whole events only) applied, an event written into out for each
        (room for as many as it holds). Returns how many; raises ValueError naming a malformed record."""
        assert records.flags.c_contiguous and out.flags.c_contiguous and records.dtype.itemsize == 32
        error = ctypes.create_string_buffer(512)
        n = _library().itchlog_depth_events_apply(self._builder, records.ctypes.data, len(records), out.ctypes.data,
                                                  len(out), error, len(error))
        if n < 0:
            raise ValueError(error.value.decode("utf-8", "replace"))
        return int(n)

    def close(self) -> None:
        if self._builder:
            _library().itchlog_depth_events_free(self._builder)
            self._builder = None

    def __del__(self) -> None:
        self.close()


class PlainCsv(NamedTuple):
    """parse_plain_csv's result: rows of fields + 1 int64 values (the fields, then t_recv: 0 when not stamped), a
    stock named by its symbol -1; each row's symbol (S16, read where the stock is -1); the lines set aside, uint64
    (the rows before each, its first byte, the byte after its \\n)."""
    rows: np.ndarray
    symbols: np.ndarray
    others: np.ndarray


def parse_plain_csv(data: bytes | np.ndarray, fields: int, stamped: bool,
                    room: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                    set_aside: bool = False, sided: bool = False) -> PlainCsv | None:
    """A csv output's lines of numbers alone, the stock a locate or a symbol (gateway/log/plain_csv.hpp); None when
    a line is anything else, unless set_aside: then such lines are set aside (`others`) for a line-by-line reader.
    data: bytes, or a uint8 array. room: arrays to fill (plain_csv_room), reused from one part of an output to the
    next (without it, a uint8 array's room is plain_csv_rows_at_most: more lines set aside than that refuse it).
    sided: the third field is a level change's side, B or S, given as its byte."""
    n = len(data)
    out, symbols, others = room or plain_csv_room(
        data.count(b"\n") + 1 if isinstance(data, bytes) else plain_csv_rows_at_most(n, fields), fields)
    found = ctypes.c_uint64(0)
    at = data if isinstance(data, bytes) else data.ctypes.data
    rows = _library().itchlog_parse_plain_csv(at, n, fields, int(stamped), int(sided), out.ctypes.data,
                                              symbols.ctypes.data, len(out), others.ctypes.data,
                                              len(others) if set_aside else 0, ctypes.byref(found))
    return None if rows < 0 else PlainCsv(out[:rows], symbols[:rows], others[:found.value])


def plain_csv_room(rows: int, fields: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrays for parse_plain_csv's rows, symbols and lines set aside, room for `rows`."""
    return np.empty((rows, fields + 1), np.int64), np.empty(rows, "S16"), np.empty((rows, 3), np.uint64)


def plain_csv_rows_at_most(size: int, fields: int) -> int:
    """The most plain lines `size` bytes hold: a line is at least `fields` digits and the commas between them, then
    its end (the last line may have none)."""
    return size // (2 * fields) + 1


def ticks_to_ns(line: ClockLine, column: np.ndarray) -> None:
    """Maps a u64 column (a field of a record array, any stride) from raw ticks to ns in place; 0 stays 0."""
    assert column.dtype.itemsize == 8 and column.ndim == 1
    if len(column):
        _library().itchlog_ticks_to_ns(ctypes.byref(line), column.ctypes.data, len(column), column.strides[0])


# A latency log's report in one compiled pass (gateway/log/latency_scan.hpp): analysis/latency_pass.py decides what
# to compute, the C++ side counts it.
_u8, _u32, _i32, _u64, _i64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_int64
MAX_STAGES = 8
TABLE_STAGE, TABLE_WARMUP, TABLE_BY_TYPE, TABLE_BY_SYMBOL, TABLE_OVER_TIME, TABLE_CO = 0, 16, 32, 33, 34, 80
TABLE_HOP, TABLE_CUMULATIVE = 0x10000, 0x20000  # + 16 * chain + hop
STAMP_INTENDED, STAMP_SENT, STAMP_SUBSCRIBER = 16, 17, 32  # a chain's stamps beyond the stages (0 .. 4)


class ScanSource(ctypes.Structure):
    _fields_ = [("data_offset", _u64), ("stored", _u64), ("stages", _u8), ("compact", _u8), ("has_line", _u8),
                ("reserved", _u8 * 5), ("line", ClockLine)]


class ScanStage(ctypes.Structure):
    _fields_ = [("start", _u8), ("end", _u8), ("bbo_only", _u8), ("reserved", _u8 * 5)]


class FirstPass(ctypes.Structure):
    _fields_ = [("messages", _u64), ("accepted", _u64), ("max_locate", _u64), ("t_first", _i64), ("t_hi", _i64),
                ("any_after_warmup", _u32), ("set_stamps", _u32), ("found_stages", _u32), ("reserved", _u32)]


class ScanParams(ctypes.Structure):
    _fields_ = [("warmup", _u64), ("max_locate", _u64), ("time_origin", _i64), ("anchor", _i64),
                ("at", _i64), ("offset", _i64), ("n_stages", _u32), ("headline", _i32), ("breakdowns", _u32),
                ("time_shift", _u32), ("n_co", _u32), ("kept", _u32), ("monotonic", _u32), ("threads", _u32),
                ("stages", ScanStage * MAX_STAGES), ("co_starts", ctypes.c_uint16 * MAX_STAGES),
                ("n_chains", _u32), ("chain_stamps", ctypes.c_void_p), ("chain_lengths", ctypes.c_void_p),
                ("chain_bbo_only", ctypes.c_void_p), ("send_n", _u64), ("send_seq", ctypes.c_void_p),
                ("send_intended", ctypes.c_void_p), ("send_sent", ctypes.c_void_p), ("n_subscribers", _u32),
                ("subscriber_n", ctypes.c_void_p), ("subscriber_seq", ctypes.c_void_p),
                ("subscriber_received", ctypes.c_void_p), ("subscriber_depth", ctypes.c_void_p)]


class TrendSums(ctypes.Structure):
    _fields_ = [("origin", _i64), ("n", _u64), ("sx", ctypes.c_double), ("sy", ctypes.c_double),
                ("sxx", ctypes.c_double), ("sxy", ctypes.c_double), ("lo", ctypes.c_double),
                ("hi", ctypes.c_double), ("any", _u32), ("reserved", _u32)]


class Followed(ctypes.Structure):
    """What a followed scan covered (itchlog_followed)."""
    _fields_ = [("blocks", _u64), ("slots", _u64), ("messages", _u64), ("accepted", _u64), ("max_locate", _u64),
                ("time_origin", _i64), ("time_shift", _u32), ("abandoned", _u32)]


class NativeScanError(RuntimeError):
    """The compiled scan could not read the log (the reason is its message)."""


@functools.lru_cache(maxsize=1)
def _scan_library() -> ctypes.CDLL:
    lib = _library()
    p = ctypes.POINTER
    lib.itchlog_first_pass.restype = ctypes.c_void_p
    lib.itchlog_first_pass.argtypes = [ctypes.c_char_p, p(ScanSource), _u64, p(ScanStage), _u32, ctypes.c_void_p,
                                       _u64, p(FirstPass), ctypes.c_char_p, _u64]
    lib.itchlog_first_pass_free.restype = None
    lib.itchlog_first_pass_free.argtypes = [ctypes.c_void_p]
    lib.itchlog_scan.restype = ctypes.c_void_p
    lib.itchlog_scan.argtypes = [ctypes.c_char_p, p(ScanSource), p(ScanParams), ctypes.c_void_p, ctypes.c_char_p,
                                 _u64]
    lib.itchlog_follow.restype = ctypes.c_void_p
    lib.itchlog_follow.argtypes = [ctypes.c_char_p, p(ScanSource), p(ScanParams), ctypes.c_char_p, p(_u32), p(_u64),
                                   p(Followed), ctypes.c_char_p, _u64]
    lib.itchlog_scan_table.restype = _i64
    lib.itchlog_scan_table.argtypes = [ctypes.c_void_p, _u32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, _u64]
    lib.itchlog_scan_throughput.restype = _i64
    lib.itchlog_scan_throughput.argtypes = [ctypes.c_void_p, ctypes.c_void_p, _u64]
    lib.itchlog_scan_slowest.restype = _i64
    lib.itchlog_scan_slowest.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 5 + [_u64]
    lib.itchlog_scan_trends.restype = None
    lib.itchlog_scan_trends.argtypes = [ctypes.c_void_p, p(TrendSums), p(TrendSums), p(_i64), p(_i64), p(_u32)]
    lib.itchlog_scan_free.restype = None
    lib.itchlog_scan_free.argtypes = [ctypes.c_void_p]
    lib.itchlog_struct_sizes.restype = _u32
    lib.itchlog_struct_sizes.argtypes = [ctypes.c_void_p, _u32]
    ours = [ctypes.sizeof(t) for t in (ScanSource, ScanStage, FirstPass, ScanParams, TrendSums)]
    ours += [LATENCY_BLOCK_BYTES, ctypes.sizeof(Followed)]
    theirs = np.zeros(len(ours), np.uint64)
    lib.itchlog_struct_sizes(theirs.ctypes.data, len(ours))
    if list(theirs) != ours:  # a library built from other sources than this harness: every call would misread
        raise NativeScanError(f"{paths.library('libitchlog.so')}: its structures are {list(map(int, theirs))} "
                              f"bytes, this harness's {ours}: rebuild (bash harness/bin/setup)")
    return lib


LATENCY_BLOCK_BYTES = 96  # a record of the gateway's latency index (logfmt::LatencyBlockRecord)


class First:
    """A finished first pass: what it found (`found`), and where a second pass may start reading; freed on
    close()."""

    def __init__(self, path: str, source: ScanSource, warmup: int, stages: list[ScanStage],
                 blocks: np.ndarray | None = None) -> None:
        """blocks: the log's index (logs.LATENCY_BLOCK_DTYPE records), whose counts stand for a read of the
        whole log; None: the log is read."""
        self.found, error = FirstPass(), ctypes.create_string_buffer(512)
        arr = (ScanStage * max(len(stages), 1))(*stages)
        self._lib = _scan_library()
        index = np.ascontiguousarray(blocks) if blocks is not None else None
        self.handle = self._lib.itchlog_first_pass(path.encode(), ctypes.byref(source), warmup, arr, len(stages),
                                                   index.ctypes.data if index is not None else None,
                                                   len(index) if index is not None else 0,
                                                   ctypes.byref(self.found), error, len(error))
        if not self.handle:
            raise NativeScanError(error.value.decode(errors="replace"))

    def close(self) -> None:
        if self.handle:
            self._lib.itchlog_first_pass_free(self.handle)
            self.handle = None


class Scan:
    """A finished compiled scan: its tables, read out as numpy arrays; freed on close()."""

    def __init__(self, handle: int, book_chain_len: int) -> None:
        self._lib = _scan_library()
        self._handle = handle
        self.chain_len = book_chain_len  # the stamps of the first chain, along which the slowest are kept

    @classmethod
    def after(cls, path: str, source: ScanSource, params: ScanParams, first: First, book_chain_len: int) -> Scan:
        """The second pass over a finished log, from its first pass."""
        error = ctypes.create_string_buffer(512)
        handle = _scan_library().itchlog_scan(path.encode(), ctypes.byref(source), ctypes.byref(params),
                                              first.handle, error, len(error))
        if not handle:
            raise NativeScanError(error.value.decode(errors="replace"))
        return cls(handle, book_chain_len)

    @classmethod
    def following(cls, path: str, source: ScanSource, params: ScanParams, index_path: str,
                  state: ctypes.c_uint32, followed: ctypes.c_uint64, book_chain_len: int) -> tuple[Scan, Followed]:
        """The second pass counted while the log is written, block by block as its index grows, until state is 1
        (the writer has ended) or 2 (abandoned); followed: the messages counted so far. Blocks the calling thread,
        which ctypes lets run without the GIL."""
        error, covered = ctypes.create_string_buffer(512), Followed()
        handle = _scan_library().itchlog_follow(path.encode(), ctypes.byref(source), ctypes.byref(params),
                                                index_path.encode(), ctypes.byref(state), ctypes.byref(followed),
                                                ctypes.byref(covered), error, len(error))
        if not handle:
            raise NativeScanError(error.value.decode(errors="replace"))
        return cls(handle, book_chain_len), covered

    def table(self, table: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, values, counts), sorted by key then value."""
        n = self._lib.itchlog_scan_table(self._handle, table, None, None, None, 0)
        if n < 0:
            raise KeyError(f"the scan has no table {table}")
        k, v, c = (np.empty(n, np.int64) for _ in range(3))
        self._lib.itchlog_scan_table(self._handle, table, k.ctypes.data, v.ctypes.data, c.ctypes.data, n)
        return k, v, c

    def throughput(self) -> np.ndarray:
        n = self._lib.itchlog_scan_throughput(self._handle, None, 0)
        out = np.empty(n, np.int64)
        self._lib.itchlog_scan_throughput(self._handle, out.ctypes.data, n)
        return out

    def slowest(self) -> dict[str, np.ndarray]:
        n = self._lib.itchlog_scan_slowest(self._handle, None, None, None, None, None, 0)
        total, start, seq = (np.empty(n, np.int64) for _ in range(3))
        kinds = np.empty(n, np.uint8)
        hops = np.empty((n, max(self.chain_len - 1, 0)), np.int64)
        self._lib.itchlog_scan_slowest(self._handle, total.ctypes.data, start.ctypes.data, seq.ctypes.data,
                                       kinds.ctypes.data, hops.ctypes.data, n)
        return {"total": total, "start": start, "seq": seq, "type": kinds, "hops": hops}

    def trends(self) -> tuple[TrendSums, TrendSums, list[int] | None]:
        """(from the intended time, from the actual send, [first intended time, last book stamp] or None)."""
        trend, served_trend = TrendSums(), TrendSums()
        first, last, any_ = _i64(), _i64(), _u32()
        self._lib.itchlog_scan_trends(self._handle, ctypes.byref(trend), ctypes.byref(served_trend),
                                      ctypes.byref(first), ctypes.byref(last), ctypes.byref(any_))
        return trend, served_trend, [first.value, last.value] if any_.value else None

    def close(self) -> None:
        if self._handle:
            self._lib.itchlog_scan_free(self._handle)
            self._handle = None
