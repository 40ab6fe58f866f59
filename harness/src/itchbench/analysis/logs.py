"""Readers for the gateway's binary logs (format: gateway/log/FORMAT.md).

One numpy dtype per format; a file is memory-mapped, never parsed record by
record. A log cut short — by a crash, or a copy that stopped early — is read
to its last whole record with a warning; a file that is not such a log is an
error, never misread.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from .. import rundir
from ..depth_levels import ALL_LEVELS, MAX_DEPTH_LEVELS, Levels
from . import native

MAGIC = b"ITCHBLOG"
HEADER_SIZE = 128  # common to every kind; a version-4 latency log's is longer (LATENCY_V4_HEADER_SIZE)
KIND_LATENCY = 1
KIND_BBO = 2
KIND_SEND = 3
KIND_SUBSCRIBER = 4
KIND_REQUEST = 5
KIND_DEPTH = 6
DEPTH_LEVEL_CHANGES_VERSION = 2  # a depth log of level change records, N in the header (1: a whole event a record)
DEPTH_SLOTS_VERSION = 3  # level changes in 16-byte slots (the gateway's), read back into version-2 records
KIND_LATENCY_INDEX = 7
FLAG_FINALIZED = 1
WRITTEN = 0x80

FLAG_BBO_EVENT = 0x01
FLAG_UNKNOWN_REF = 0x02
FLAG_REJECTED = 0x04
FLAG_BOOK_MAY_BE_STALE = 0x01  # BBO record flag
FLAG_FROM_SNAPSHOT = 0x02  # BBO record flag: the book as a late joiner's snapshot left it
# Send record flags (FORMAT.md).
SEND_FAILED, SEND_LINE_B, SEND_DROPPED, SEND_DUPLICATE, SEND_CORRUPTED = 0x01, 0x02, 0x04, 0x08, 0x10

HEADER_DTYPE = np.dtype([
    ("magic", "S8"), ("version", "<u2"), ("header_size", "<u2"), ("record_size", "<u2"),
    ("kind", "<u2"), ("stage_clock", "<u2"), ("origin_clock", "<u2"), ("flags", "<u4"),
    ("record_count", "<u8"), ("dropped", "<u8"), ("run_id", "S32"), ("commit", "S48"),
    ("stages", "u1"), ("levels", "u1"), ("reserved", "V6"),
])
# Latency version 3: a head, then one u64 stamp per stage in the header's `stages` (bit i: STAGE_STAMPS[i]).
LATENCY_V3_HEAD = [("seq", "<u8"), ("t_origin", "<u8"), ("stock_locate", "<u2"), ("msg_type", "S1"), ("flags", "u1"),
                   ("reserved", "V4")]
STAGE_STAMPS = ("t_kernel", "t_read", "t_decoded", "t_book", "t_published")
ALL_STAGES = (1 << len(STAGE_STAMPS)) - 1
LATENCY_V2_DTYPE = np.dtype([
    ("seq", "<u8"), ("t_origin", "<u8"), ("t_kernel", "<u8"), ("t_read", "<u8"), ("t_decoded", "<u8"),
    ("t_book", "<u8"), ("t_published", "<u8"), ("stock_locate", "<u2"), ("msg_type", "S1"),
    ("flags", "u1"), ("reserved", "V4"),
])
LATENCY_V1_DTYPE = np.dtype([
    ("seq", "<u8"), ("t_origin", "<u8"), ("t_receive", "<u8"), ("t_decoded", "<u8"),
    ("t_book", "<u8"), ("t_published", "<u8"), ("stock_locate", "<u2"), ("msg_type", "S1"),
    ("flags", "u1"), ("reserved", "V4"),
])
SEND_DTYPE = np.dtype([
    ("seq", "<u8"), ("t_intended", "<u8"), ("t_sent", "<u8"), ("count", "<u2"), ("flags", "u1"),
    ("reserved", "V1"), ("bytes", "<u4"),
])
SUBSCRIBER_DTYPE = np.dtype([
    ("seq", "<u8"), ("t_received", "<u8"), ("stock_locate", "<u2"), ("flags", "u1"), ("reserved", "V5"),
])
REQUEST_DTYPE = np.dtype([
    ("seq", "<u8"), ("t", "<u8"), ("client_addr", ">u4"), ("client_port", "<u2"), ("count", "<u2"), ("flags", "u1"),
    ("outcome", "u1"), ("reserved", "V6"),
])
REQUEST_ANSWER, REQUEST_ANSWER_DROPPED = 1, 2  # RequestRecord flags (gateway/log/FORMAT.md)
REQUEST_OUTCOMES = ("served", "wrong_length", "wrong_session", "sequence_zero", "count_zero", "beyond_session",
                    "outside_retention", "rate_limited", "after_end_of_session")
BBO_DTYPE = np.dtype([
    ("seq", "<u8"), ("timestamp", "<u8"), ("bid_qty", "<u8"), ("ask_qty", "<u8"),
    ("bid_px", "<u4"), ("ask_px", "<u4"), ("stock_locate", "<u2"), ("flags", "u1"),
    ("reserved", "V5"),
])
# A depth event as a whole (FORMAT.md; a version-1 depth log's record): a 24-byte head, then N bid levels and N ask
# levels, best first; N from the record size. A version-2 log's level changes are read back into these.
DEPTH_LEVEL_DTYPE = np.dtype([("px", "<u4"), ("reserved", "V4"), ("qty", "<u8")])
DEPTH_HEAD_SIZE = 24


# A version-2 depth log's record (FORMAT.md): a level of a depth event, its new aggregate shares. levels = all: one
# for each level a message changed; the top N: one for each price whose shares in the top N changed (0: it left).
LEVEL_CHANGE_DTYPE = np.dtype([("seq", "<u8"), ("timestamp", "<u8"), ("stock_locate", "<u2"), ("flags", "u1"),
                               ("side", "S1"), ("px", "<u4"), ("qty", "<u8")])
assert LEVEL_CHANGE_DTYPE.itemsize == 32

# A version-3 depth log's slot (FORMAT.md, "Level change slot"): a level change in 16 bytes, its seq and timestamp
# offsets from the last anchor slot before it; read back into LEVEL_CHANGE_DTYPE records (compiled: native). Every
# kind's flags are its last byte, bits 0x30 its kind.
LEVEL_CHANGE_SLOT_DTYPE = np.dtype([("px", "<u4"), ("qty_low", "<u4"), ("timestamp_off", "<u4"),
                                    ("stock_locate", "<u2"), ("seq_off", "u1"), ("flags", "u1")])
assert LEVEL_CHANGE_SLOT_DTYPE.itemsize == 16
SLOT_KIND_MASK = 0x30
SLOT_HIGH_SHARES = 0x20  # its first four bytes: the next slot's shares >> 32


def depth_dtype(levels: Levels) -> np.dtype:
    if levels == ALL_LEVELS:
        return LEVEL_CHANGE_DTYPE
    return np.dtype([("seq", "<u8"), ("timestamp", "<u8"), ("stock_locate", "<u2"), ("flags", "u1"),
                     ("reserved", "V5"), ("bids", DEPTH_LEVEL_DTYPE, (levels,)), ("asks", DEPTH_LEVEL_DTYPE, (levels,))])


def depth_levels_of(record_size: int) -> Levels:
    """N of a depth log whose records are record_size bytes (ALL_LEVELS: level changes); 0 when no N gives that
    size."""
    if record_size == LEVEL_CHANGE_DTYPE.itemsize:
        return ALL_LEVELS
    levels, rest = divmod(record_size - DEPTH_HEAD_SIZE, 2 * DEPTH_LEVEL_DTYPE.itemsize)
    return levels if rest == 0 and 1 <= levels <= MAX_DEPTH_LEVELS else 0


def levels_of(dtype: np.dtype) -> Levels:
    """N of depth records of this dtype, or ALL_LEVELS."""
    return ALL_LEVELS if dtype == LEVEL_CHANGE_DTYPE else int(dtype["bids"].shape[0])


# Latency version 5: a 20-byte slot a message, its stamps as differences, and escape slots (ESCAPE_SLOT set) each
# carrying one whole value for the message slot after it (FORMAT.md).
COMPACT_SLOT_DTYPE = np.dtype([
    ("origin_delta", "<u4"), ("first", "<u4"), ("steps", "<u2", (4,)), ("stock_locate", "<u2"), ("msg_type", "S1"),
    ("flags", "u1"),
])
ESCAPE_DTYPE = np.dtype([("value", "<u8"), ("kind", "u1"), ("reserved", "V10"), ("flags", "u1")])
ESCAPE_SLOT = 0x40
LATENCY_COMPACT_VERSION = 5
assert COMPACT_SLOT_DTYPE.itemsize == ESCAPE_DTYPE.itemsize == 20
# The gateway's index of its latency log: a block of it a record (FORMAT.md, "Latency index record").
LATENCY_BLOCK_DTYPE = np.dtype([
    ("slot", "<u8"), ("messages_before", "<u8"), ("accepted_before", "<u8"), ("next_seq", "<u8"),
    ("prev_origin", "<u8"), ("base", "<u8"), ("receive_lo", "<u8"), ("receive_hi", "<u8"), ("stamp_sets", "<u8", (2,)),
    ("messages", "<u4"), ("accepted", "<u4"), ("slots", "<u4"), ("max_locate", "<u2"), ("flags", "u1"),
    ("reserved", "V1"),
])
assert LATENCY_BLOCK_DTYPE.itemsize == native.LATENCY_BLOCK_BYTES
# Latency version 4 (and 5): after the common header, the line that maps raw TSC ticks (stage_clock 3) to ns.
CLOCK_LINE_DTYPE = np.dtype([("tsc0", "<u8"), ("ns0", "<u8"), ("ns_per_tick_q32", "<u8"), ("reserved", "<u8")])
LATENCY_V4_HEADER_SIZE = HEADER_SIZE + CLOCK_LINE_DTYPE.itemsize
MAX_HEADER_SIZE = LATENCY_V4_HEADER_SIZE  # the longest header a kind has (header_size)
assert HEADER_DTYPE.itemsize == HEADER_SIZE
assert LATENCY_V2_DTYPE.itemsize == 64 and LATENCY_V1_DTYPE.itemsize == 56 and BBO_DTYPE.itemsize == 48
assert SEND_DTYPE.itemsize == 32 and SUBSCRIBER_DTYPE.itemsize == 24 and REQUEST_DTYPE.itemsize == 32

STAGE_CLOCK_TSC_TICKS = 3
STAGE_CLOCKS = {0: "none", 1: "monotonic", 2: "tsc", STAGE_CLOCK_TSC_TICKS: "tsc-ticks"}
ORIGIN_CLOCKS = {0: "none", 1: "capture-epoch", 2: "sender-monotonic", 3: "itch-timestamp"}
KIND_NAMES = {KIND_LATENCY: "latency", KIND_BBO: "bbo", KIND_SEND: "send", KIND_SUBSCRIBER: "subscriber",
              KIND_REQUEST: "request", KIND_DEPTH: "depth", KIND_LATENCY_INDEX: "latency index"}


def stage_indices(stages: int) -> list[int]:
    """The indices into STAGE_STAMPS of a header's stage bits, in the order records store their stamps."""
    return [i for i in range(len(STAGE_STAMPS)) if stages >> i & 1]


def latency_v3_dtype(stages: int) -> np.dtype:
    """The version-3 latency record of a log whose header names these stages."""
    return np.dtype(LATENCY_V3_HEAD + [(STAGE_STAMPS[i], "<u8") for i in stage_indices(stages)])


# (kind, version) -> record layout: every version a reader has met stays readable. A latency log of version 3 or
# 4 has the layout of its stages (latency_v3_dtype); this one is the layout with every stage.
FORMATS = {(KIND_LATENCY, 1): LATENCY_V1_DTYPE, (KIND_LATENCY, 2): LATENCY_V2_DTYPE,
           (KIND_LATENCY, 3): latency_v3_dtype(ALL_STAGES), (KIND_LATENCY, 4): latency_v3_dtype(ALL_STAGES),
           (KIND_LATENCY, LATENCY_COMPACT_VERSION): COMPACT_SLOT_DTYPE,
           (KIND_BBO, 1): BBO_DTYPE, (KIND_SEND, 1): SEND_DTYPE, (KIND_SUBSCRIBER, 1): SUBSCRIBER_DTYPE,
           (KIND_REQUEST, 1): REQUEST_DTYPE, (KIND_DEPTH, 1): depth_dtype(1),  # depth v1: its N from the header
           (KIND_DEPTH, DEPTH_LEVEL_CHANGES_VERSION): LEVEL_CHANGE_DTYPE,
           (KIND_DEPTH, DEPTH_SLOTS_VERSION): LEVEL_CHANGE_SLOT_DTYPE,
           (KIND_LATENCY_INDEX, 1): LATENCY_BLOCK_DTYPE}
# What LogWriter writes: the newest layout of fixed records (a latency log: version 4's; version 5 is the gateway's,
# as a depth log's version 3).
VERSIONS = {kind: max(v for k, v in FORMATS if k == kind and (k, v) not in ((KIND_LATENCY, LATENCY_COMPACT_VERSION),
                                                                               (KIND_DEPTH, DEPTH_SLOTS_VERSION)))
            for kind in KIND_NAMES}
STAGE_LAYOUT_VERSIONS = (3, 4)  # latency versions whose records hold only the stages their header names


def has_clock_line(kind: int, version: int) -> bool:
    """Whether the format puts a clock line after the common header (latency versions 4 and 5)."""
    return kind == KIND_LATENCY and version in (4, LATENCY_COMPACT_VERSION)


def header_size(kind: int, version: int) -> int:
    return LATENCY_V4_HEADER_SIZE if has_clock_line(kind, version) else HEADER_SIZE


@dataclass(frozen=True)
class ClockLine:
    """How a log's raw TSC stamps map to ns on CLOCK_MONOTONIC: ns0 + ((t - tsc0) * ns_per_tick_q32 >> 32)."""
    tsc0: int
    ns0: int
    ns_per_tick_q32: int

    @cached_property
    def native(self) -> native.ClockLine:
        return native.ClockLine(self.tsc0, self.ns0, self.ns_per_tick_q32, 0)

    def to_ns(self, stamps: np.ndarray) -> np.ndarray:
        """The stamps in ns, 0 (not stamped) kept 0; exactly the gateway's 128-bit product (the C++ reader's). A
        stamp before tsc0 maps to ns0."""
        out = np.array(stamps, dtype=np.uint64)
        native.ticks_to_ns(self.native, out)
        return out


class LogFormatError(ValueError):
    """The file is not a readable itchbench log."""


class TruncatedLogWarning(UserWarning):
    """The log was cut short; only its whole records were read."""


CompactState = native.CompactState  # what a compact slot is read against: the previous message's values, the base


@dataclass
class LogFile:
    path: Path
    kind: str
    header: dict[str, object]
    stored: np.ndarray  # as stored: fixed records, or a compact latency log's slots (messages and escapes)
    finalized: bool
    notes: list[str] = field(default_factory=list)  # what was wrong and how it was read
    header_size: int = HEADER_SIZE
    clock_line: ClockLine | None = None  # set when the stamps are raw TSC ticks
    compact_stages: int | None = None    # a compact latency log: the stages its slots encode
    depth_levels: int | None = None      # a depth log of the top N: N (its level changes read back as events)
    slots: bool = False                  # a version-3 depth log: stored holds its slots (level changes and anchors)

    @property
    def complete(self) -> bool:
        return self.finalized and not self.notes

    @cached_property
    def records(self) -> np.ndarray:
        """One record a message (an event, a packet): the stored records, or a compact log's slots decoded into
        the version-3 layout of its stages. Stamps as stored (raw ticks where the log holds raw ticks)."""
        if self.depth_levels is not None:
            return depth_events(self.path, self.changes, self.depth_levels)
        if self.compact_stages is None:
            return self.changes
        return decode_compact(self.path, self.stored, self.compact_stages, CompactState())[0]

    @cached_property
    def changes(self) -> np.ndarray:
        """A depth log's level change records (version 1: its events): a version-3 log's slots read back, refused
        with the slot named when they are out of their order (LogFormatError); any other log's stored records."""
        return decode_level_change_slots(self.path, self.stored, self.finalized)[0] if self.slots else self.stored

    @property
    def dtype(self) -> np.dtype:
        """The layout of `records`."""
        if self.depth_levels is not None:
            return depth_dtype(self.depth_levels)
        if self.slots:
            return LEVEL_CHANGE_DTYPE
        return self.stored.dtype if self.compact_stages is None else latency_v3_dtype(self.compact_stages)

    @cached_property
    def count(self) -> int:
        """Records (messages) in the log, without decoding it: a compact log's message slots, counted from plain
        reads a chunk at a time (memory stays a chunk, and no page of the log stays mapped)."""
        if self.compact_stages is None:
            return len(self.stored)
        return sum(int(np.count_nonzero((part["flags"] & ESCAPE_SLOT) == 0))
                   for part in _stored_chunks(self, 1 << 20))

    def record_bytes(self) -> memoryview:
        """The raw bytes of the records read (for digests)."""
        return memoryview(self.records.view(np.uint8).reshape(-1))


def read_log(path: Path | str, expect_kind: int | None = None, *, header_only: bool = False,
             quiet: bool = False) -> LogFile:
    """The log's header and records (header_only: no records, none looked at: a log still being written). What
    was not read whole (a log left open, a tail cut off) is in `notes`, and warned (TruncatedLogWarning) unless
    quiet: a reader that says it itself, or whose writer's end the run has named already."""
    path = Path(path)
    if header_only:  # the header's bytes alone: a log being written grows (and is cut to its data at the end)
        raw = np.fromfile(path, dtype=np.uint8, count=MAX_HEADER_SIZE)
    else:
        raw = np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else np.zeros(0, np.uint8)
    if raw.size < HEADER_SIZE:
        raise LogFormatError(f"{path}: {raw.size} bytes, shorter than the {HEADER_SIZE}-byte log header")
    hdr = raw[:HEADER_SIZE].view(HEADER_DTYPE)[0]
    if bytes(hdr["magic"]) != MAGIC:
        raise LogFormatError(f"{path}: not an itchbench log (magic {bytes(hdr['magic'])!r}, expected {MAGIC!r})")
    kind, version = int(hdr["kind"]), int(hdr["version"])
    if kind not in KIND_NAMES:
        raise LogFormatError(f"{path}: unknown log kind {kind}")
    if expect_kind is not None and kind != expect_kind:
        raise LogFormatError(f"{path}: a {KIND_NAMES[kind]} log, expected a {KIND_NAMES[expect_kind]} log")
    if (kind, version) not in FORMATS:
        known = ", ".join(str(v) for k, v in sorted(FORMATS) if k == kind)
        raise LogFormatError(f"{path}: {KIND_NAMES[kind]} log format version {version}, this reader knows {known}")
    name, dtype = KIND_NAMES[kind], FORMATS[(kind, version)]
    stages = int(hdr["stages"])
    compact = (kind, version) == (KIND_LATENCY, LATENCY_COMPACT_VERSION)
    if kind == KIND_LATENCY and (version in STAGE_LAYOUT_VERSIONS or compact):
        if stages & ~ALL_STAGES or (compact and not stages):
            raise LogFormatError(f"{path}: latency log names unknown stages (0x{stages:02x})")
        if not compact:
            dtype = latency_v3_dtype(stages)
    depth_levels = None
    if kind == KIND_DEPTH and version == 1:
        levels = depth_levels_of(int(hdr["record_size"]))
        if not levels:
            raise LogFormatError(f"{path}: depth log record size {int(hdr['record_size'])} is no 24 + 32 N "
                                 f"(N = 1 to {MAX_DEPTH_LEVELS} levels a side) nor a level change's 32")
        dtype = depth_dtype(levels)
    elif kind == KIND_DEPTH:
        depth_levels = int(hdr["levels"]) or None  # 0: every level, whose records are its events
        if depth_levels is not None and depth_levels > MAX_DEPTH_LEVELS:
            raise LogFormatError(f"{path}: depth log of {depth_levels} levels a side, more than {MAX_DEPTH_LEVELS}")
    head = header_size(kind, version)
    if int(hdr["record_size"]) != dtype.itemsize or int(hdr["header_size"]) != head:
        raise LogFormatError(
            f"{path}: record size {int(hdr['record_size'])} / header size {int(hdr['header_size'])} "
            f"do not match the {name} format ({dtype.itemsize} / {head})")
    if raw.size < head:
        raise LogFormatError(f"{path}: {raw.size} bytes, shorter than the {head}-byte {name} log header")
    line = _clock_line(path, raw, hdr) if int(hdr["stage_clock"]) == STAGE_CLOCK_TSC_TICKS else None

    header = {
        "version": int(hdr["version"]),
        "kind": name,
        "record_size": int(hdr["record_size"]),
        "stage_clock": STAGE_CLOCKS.get(int(hdr["stage_clock"]), str(int(hdr["stage_clock"]))),
        "origin_clock": ORIGIN_CLOCKS.get(int(hdr["origin_clock"]), str(int(hdr["origin_clock"]))),
        "record_count": int(hdr["record_count"]),
        "stages": ([STAGE_STAMPS[i] for i in stage_indices(stages)] if compact else
                   [n for n in dtype.names if n in STAGE_STAMPS] if name == "latency" else []),
        "dropped": int(hdr["dropped"]),
        "run_id": bytes(hdr["run_id"]).rstrip(b"\0").decode("ascii", "replace"),
        "commit": bytes(hdr["commit"]).rstrip(b"\0").decode("ascii", "replace"),
    }
    finalized = bool(int(hdr["flags"]) & FLAG_FINALIZED)
    if header_only:
        return LogFile(path, name, header, raw[head:head].view(dtype), finalized, [], head, line,
                       stages if compact else None, depth_levels)
    notes: list[str] = []
    # A compact latency log's or a version-3 depth log's header counts slots, escapes and anchors among them.
    unit = "slots" if compact or (kind, version) == (KIND_DEPTH, DEPTH_SLOTS_VERSION) else "records"
    body = raw.size - head
    whole = body // dtype.itemsize
    if body % dtype.itemsize:
        notes.append(f"file ends mid-record: {body % dtype.itemsize:,} trailing bytes ignored")
    records = raw[head:head + whole * dtype.itemsize].view(dtype)
    if finalized:
        count = int(hdr["record_count"])
        if count < whole:
            notes.append(f"{whole - count:,} {unit} beyond the header's count of {count:,} ignored")
            records = records[:count]
        elif count > whole:
            notes.append(f"header counts {count:,} {unit}, the file holds {whole:,}: read {whole:,}")
    else:
        unwritten = np.flatnonzero((records["flags"] & WRITTEN) == 0)
        n = int(unwritten[0]) if unwritten.size else whole
        records = records[:n]
        notes.append(f"log was never closed (writer crashed or still running): read {n:,} whole {unit}")
    if notes and not quiet:
        warnings.warn(f"{path}: " + "; ".join(notes), TruncatedLogWarning, stacklevel=2)

    return LogFile(path, name, header, records, finalized, notes, head, line, stages if compact else None, depth_levels,
                   (kind, version) == (KIND_DEPTH, DEPTH_SLOTS_VERSION))


def decode_level_change_slots(path: Path, slots: np.ndarray, finalized: bool, first: int = 0,
                              anchor: native.SlotAnchor | None = None,
                              out: np.ndarray | None = None) -> tuple[np.ndarray, native.SlotAnchor]:
    """A version-3 depth log's slots read back into level change records (FORMAT.md, "Level change slot"; compiled:
    gateway/log/level_change_slots.hpp): each level change's seq and timestamp its last anchor's plus its offsets,
    its shares' high 32 bits from a high-shares slot just before it. A log never closed may end with an anchor or
    high-shares slot whose change was not written; anything else out of that order is refused, naming the slot. The
    slots may be a part of the log: `first` the index of the first, `anchor` the last anchor before them (moved past
    them); `out` room for the records, reused from part to part (fresh memory is what reading a part costs most here:
    32 MB of records a million slots). Returns the records (a view of out) and the anchor, for the part after them."""
    anchor = anchor if anchor is not None else native.SlotAnchor()
    out = out if out is not None else np.empty(len(slots), LEVEL_CHANGE_DTYPE)
    n, consumed, fault = native.read_level_change_slots(np.ascontiguousarray(slots), anchor, out)
    at = first + consumed
    if fault == native.SLOT_FAULT_FLAGS:
        raise LogFormatError(f"{path}: depth slot {at} has flags 0x{int(slots['flags'][consumed]):02x}, no slot's")
    if fault == native.SLOT_FAULT_NO_ANCHOR:
        raise LogFormatError(f"{path}: depth slot {at} is a level change with no anchor before it")
    if fault == native.SLOT_FAULT_HIGH_SHARES_ALONE or (consumed < len(slots) and finalized):
        raise LogFormatError(f"{path}: depth slot {at} holds high shares, and no level change follows it")
    return out[:n], anchor


def _event_starts(changes: np.ndarray) -> np.ndarray:
    """Where each depth event begins among level change records: an event is the consecutive records of one seq
    and stock."""
    if not len(changes):
        return np.zeros(0, np.int64)
    seq, stock = changes["seq"], changes["stock_locate"]
    return np.flatnonzero(np.concatenate(([True], (seq[1:] != seq[:-1]) | (stock[1:] != stock[:-1]))))


def depth_events(path: Path, changes: np.ndarray, levels: int, builder: native.DepthEvents | None = None,
                 room: np.ndarray | None = None) -> np.ndarray:
    """Level change records of the top N (whole events) read back into whole events (depth_dtype(levels)) by the
    C++ reader, each stock's top N carried in builder from the records before (a fresh one: from empty books);
    written into room when it is large enough (a buffer reused part after part: its pages touched once)."""
    events = len(_event_starts(changes))
    out = room[:events] if room is not None and len(room) >= events else np.empty(events, depth_dtype(levels))
    builder = builder or native.DepthEvents(levels)
    try:
        written = builder.apply(np.ascontiguousarray(changes), out)
    except ValueError as e:
        raise LogFormatError(f"{path}: {e}") from None
    assert written == len(out)
    return out


def _clock_line(path: Path, raw: np.ndarray, hdr: np.void) -> ClockLine:
    """The line of a log whose stamps are raw TSC ticks; only a version-4 latency log carries one."""
    if not has_clock_line(int(hdr["kind"]), int(hdr["version"])):
        raise LogFormatError(f"{path}: stamps in raw TSC ticks, but no clock line in a version-{int(hdr['version'])} "
                             f"{KIND_NAMES[int(hdr['kind'])]} log")
    line = raw[HEADER_SIZE:LATENCY_V4_HEADER_SIZE].view(CLOCK_LINE_DTYPE)[0]
    q32 = int(line["ns_per_tick_q32"])
    if not 0 < q32 < 1 << 32:
        raise LogFormatError(f"{path}: clock line's ns per tick (q32) is {q32}, outside 1 .. 2^32-1")
    return ClockLine(int(line["tsc0"]), int(line["ns0"]), q32)


def decode_compact(path: Path, slots: np.ndarray, stages: int, state: CompactState,
                   line: ClockLine | None = None) -> tuple[np.ndarray, int, CompactState]:
    """Version-5 slots decoded into version-3 records of the stages (FORMAT.md) by the C++ reader
    (analysis/native.py); line maps the stamps to ns. Returns the records, the slots consumed (escapes after the
    last message are left for the slots that follow) and the state after them. Arithmetic is modulo 2^64, as the
    writer's."""
    slots = np.ascontiguousarray(slots)
    out = np.empty(len(slots), latency_v3_dtype(stages))
    after = native.CompactState(state.next_seq, state.prev_origin, state.base)
    written, consumed = native.decode_compact(slots, stages, line.native if line is not None else None, after, out)
    if written < 0:
        kind = int(slots.view(ESCAPE_DTYPE)["kind"][consumed])
        raise LogFormatError(f"{path}: escape slot {consumed} has kind {kind}, which a log of these stages does "
                             f"not hold")
    return out[:written], consumed, after


def in_ns(log: LogFile, records: np.ndarray) -> np.ndarray:
    """Records of the log with every stage stamp in ns: the records themselves when the log stored ns, else a copy
    converted with the log's clock line."""
    if log.clock_line is None:
        return records
    out = records.copy()
    _to_ns_in_place(log.clock_line, out)
    return out


def _to_ns_in_place(line: ClockLine, records: np.ndarray) -> None:
    for name in records.dtype.names:
        if name in STAGE_STAMPS:
            native.ticks_to_ns(line.native, records[name])


class LogWriter:
    """The harness's own writer (subscriber logs): header first, records as they come, and on close() the exact
    count and the finalized flag; a writer killed before close() leaves a log readers take to its last whole
    record."""

    def __init__(self, path: Path | str, kind: int, stage_clock: int) -> None:
        if stage_clock == STAGE_CLOCK_TSC_TICKS:
            raise ValueError("LogWriter writes no clock line: its stamps must be ns")
        self.kind, self.stage_clock, self.count = kind, stage_clock, 0
        self.dtype = FORMATS[(kind, VERSIONS[kind])]
        self._file = open(path, "wb")
        self._file.write(self._header(finalized=False))
        self._file.flush()

    def _header(self, finalized: bool) -> bytes:
        h = np.zeros(1, HEADER_DTYPE)
        h["magic"], h["version"] = MAGIC, VERSIONS[self.kind]
        h["header_size"] = header_size(self.kind, VERSIONS[self.kind])
        h["record_size"], h["kind"], h["stage_clock"] = self.dtype.itemsize, self.kind, self.stage_clock
        h["flags"], h["record_count"] = (FLAG_FINALIZED, self.count) if finalized else (0, 0)
        if self.kind == KIND_LATENCY:  # its layout has every stage: the header says so
            h["stages"] = sum(1 << i for i, n in enumerate(STAGE_STAMPS) if n in self.dtype.names)
        return h.tobytes().ljust(int(h["header_size"][0]), b"\0")  # a latency log's clock line: zero, ns stamps

    def append(self, records: np.ndarray) -> None:
        records = records.astype(self.dtype, copy=False)
        records["flags"] |= WRITTEN
        self._file.write(records.tobytes())
        self.count += len(records)

    def close(self) -> None:
        self._file.flush()
        self._file.seek(0)
        self._file.write(self._header(finalized=True))
        self._file.close()


def iter_records(log: LogFile, chunk: int) -> Iterator[np.ndarray]:
    """The log's records, about `chunk` at a time, read with plain reads into one
    reused buffer: memory stays one chunk whatever the log's size (a memory
    map keeps every page it has touched resident). Stamps are in ns (raw
    ticks converted in the buffer); a compact log's slots are decoded chunk
    by chunk, its state carried across. A yielded array is valid until the
    next one is read."""
    if log.depth_levels is not None:
        chunk = depth_chunk(log.depth_levels, chunk)
        yield from _iter_depth_events(log, _change_chunks(log, chunk), chunk)
        return
    if log.slots:
        yield from _change_chunks(log, chunk)
        return
    if log.compact_stages is None:
        for part in _stored_chunks(log, chunk):
            if log.clock_line is not None:
                _to_ns_in_place(log.clock_line, part)
            yield part
        return
    # A compact message takes up to 8 slots (7 escapes): a buffer of 16 always holds one whole.
    reader, state = _PartReader(log, max(chunk, 16)), CompactState()
    for part in reader:
        records, used, state = decode_compact(log.path, part, log.compact_stages, state, log.clock_line)
        if len(part) - used == reader.size:
            raise LogFormatError(f"{log.path}: {reader.size} escape slots in a row, no message after them")
        reader.carry(len(part) - used)  # escapes of a message whose slot is in the next part
        yield records


# Bytes of whole depth events built at a time, in reused buffers (64 levels a side: 2 KiB an event): parts large
# enough that a call's overhead is nothing, and memory the same whatever N.
DEPTH_EVENT_BYTES_AT_ONCE = 8 << 20


def depth_chunk(levels: int, chunk: int) -> int:
    """Level change records to read at a time, about `chunk`, fewer when their whole events of the top N would
    pass DEPTH_EVENT_BYTES_AT_ONCE."""
    return max(1, min(chunk, DEPTH_EVENT_BYTES_AT_ONCE // depth_dtype(levels).itemsize))


def _iter_depth_events(log: LogFile, parts: Iterator[np.ndarray], chunk: int) -> Iterator[np.ndarray]:
    """A depth log of the top N (version 2 or 3) as whole events, from its level change records given at most
    `chunk` at a time: a part's last event, which may go on in the next, is carried over to it. A yielded array is
    valid until the one after the next is made (two buffers in turn: one may be hashed while the next is built)."""
    assert log.depth_levels is not None
    levels = log.depth_levels
    builder = native.DepthEvents(levels)
    rooms = np.empty((2, chunk + 4 * levels), depth_dtype(levels))  # a part and the event carried into it
    carried = np.zeros(0, LEVEL_CHANGE_DTYPE)
    made = 0
    for part in parts:
        records = np.concatenate((carried, part)) if len(carried) else part
        last = int(_event_starts(records)[-1]) if len(records) else 0
        carried = records[last:].copy()
        yield depth_events(log.path, records[:last], levels, builder, rooms[made % 2])
        made += 1
    yield depth_events(log.path, carried, levels, builder, rooms[made % 2])


def _change_chunks(log: LogFile, chunk: int) -> Iterator[np.ndarray]:
    """A depth log's level change records (version 1: its events), about `chunk` at a time, from plain reads (memory
    stays a chunk, and no page of the log stays mapped): a version-3 log's slots read back part by part, the last
    anchor carried from one part to the next and a high-shares slot that ends a part moved to the next's start.
    A yielded array is valid until the next one is read."""
    if not log.slots:
        yield from _stored_chunks(log, chunk)
        return
    reader, anchor = _PartReader(log, max(chunk, 2)), None
    out = np.empty(reader.size, LEVEL_CHANGE_DTYPE)
    for part in reader:
        ends_high = reader.read < len(log.stored) and int(part["flags"][-1]) & SLOT_KIND_MASK == SLOT_HIGH_SHARES
        whole = part[:-1] if ends_high else part
        changes, anchor = decode_level_change_slots(log.path, whole, log.finalized, reader.read - len(part), anchor,
                                                    out)
        reader.carry(len(part) - len(whole))
        yield changes


class _PartReader:
    """A log's stored slots read with plain reads a part at a time into one buffer (memory stays a part, and no
    page of the log stays mapped); carry(n) makes a part's last n slots the start of the next (the escapes of a
    compact message, the high-shares slot of a level change, whose slot the next part holds)."""

    def __init__(self, log: LogFile, size: int) -> None:
        self.size, self.read = size, 0  # read: slots read so far
        self._log, self._buf, self._carried = log, np.empty(size, log.stored.dtype), 0
        self._part = self._buf[:0]

    def __iter__(self) -> Iterator[np.ndarray]:
        total = len(self._log.stored)
        with open(self._log.path, "rb") as f:
            f.seek(self._log.header_size)
            while self.read < total:
                self._part = self._buf[:self._carried + min(self.size - self._carried, total - self.read)]
                got = self._part[self._carried:]
                if f.readinto(got.view(np.uint8)) != got.nbytes:
                    raise LogFormatError(f"{self._log.path}: shorter than when it was opened")
                self.read += len(got)
                self._carried = 0
                yield self._part

    def carry(self, n: int) -> None:
        if n:
            self._buf[:n] = self._part[len(self._part) - n:].copy()
        self._carried = n


def _stored_chunks(log: LogFile, chunk: int) -> Iterator[np.ndarray]:
    """The log's records as stored, `chunk` at a time, read with plain reads into one reused buffer (memory stays
    a chunk, and no page of the log stays mapped). A yielded array is valid until the next one is read."""
    total = len(log.stored)
    buf = np.empty(min(chunk, max(total, 1)), log.stored.dtype)
    with open(log.path, "rb") as f:
        f.seek(log.header_size)
        for start in range(0, total, len(buf)):
            part = buf[:min(len(buf), total - start)]
            if f.readinto(part.view(np.uint8)) != part.nbytes:
                raise LogFormatError(f"{log.path}: shorter than when it was opened")
            yield part


def stamp(records: np.ndarray, name: str) -> np.ndarray:
    """A stamp column as int64, without a copy (stamps are below 2^63); zeros where the records have no such
    column (a version-3 log holds only the stages its run stamped), as a version-2 log held zeros."""
    if name in records.dtype.names:
        return records[name].view(np.int64)
    return np.zeros(len(records), np.int64)


def expand_runs(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Every sequence number of runs given as (first, count) — packets' messages —, laid end to end, as int64."""
    counts = counts.astype(np.int64)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts.astype(np.int64), counts) + within


def is_log(path: Path) -> bool:
    """A file that begins as an itchbench log does (its magic), whole or not."""
    with Path(path).open("rb") as f:
        return f.read(len(MAGIC)) == MAGIC


# The logs a run directory holds under these names, whichever of them its run wrote, and their kinds
# (gateway/log/FORMAT.md).
RUN_LOGS = {"latency.lat": KIND_LATENCY, "bbo.bbo": KIND_BBO, "depth.dep": KIND_DEPTH, "send.log": KIND_SEND,
            "requests.log": KIND_REQUEST}


def not_read_whole(run_dir: Path) -> list[str]:
    """Each of a run directory's logs (a latency log's index aside: one not whole is not used) that does not read
    whole, with why: a tail cut off, a count its header does not match, a log never closed; or one of the run's
    own logs that is no longer one (its start overwritten: found by its magic, it would be passed over) or not of
    its kind (another log in its place)."""
    out = []
    for path in sorted(p for p in Path(run_dir).iterdir() if p.is_file()):
        if not (path.stat().st_size >= HEADER_SIZE and is_log(path)):
            if path.name in RUN_LOGS:
                out.append(f"{path.name}: not an itchbench log (its first {len(MAGIC)} bytes are not {MAGIC!r})")
            continue
        try:
            log = read_log(path, RUN_LOGS.get(path.name), quiet=True)
        except LogFormatError as e:
            out.append(str(e))
            continue
        if log.kind != KIND_NAMES[KIND_LATENCY_INDEX] and not log.complete:
            out.append(f"{path.name}: {'; '.join(log.notes) or 'never closed'}")
    return out


def cut_since_complete(run_dir: Path, summary: dict) -> str:
    """'' for a run whose logs read as the run left them; else what is wrong: a run that ended complete (summary)
    left its logs whole, so one that is not whole now was cut after it, and figures from its part would be a
    partial result under the run's whole verdict."""
    cut = not_read_whole(run_dir) if summary.get("complete") else []
    return f"{run_dir}: the run ended complete, and its logs no longer read whole ({'; '.join(cut)})" if cut else ""


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, read now."""
    with open(path, "rb") as f:
        return "sha256:" + hashlib.file_digest(f, "sha256").hexdigest()


def changed_since_run(run_dir: Path, summary: dict, only: str = "") -> str:
    """'' when the built-in gateway's BBO and depth logs still hold the events whose digests the run recorded
    (summary), and a brought gateway's output the bytes it had when judged; else which do not, and how: a log whose
    middle changed after the run (a bad copy, a disk's fault, an edit) reads whole, and a report rebuilt over it
    would vouch, under the run's verdict, for events it no longer holds. One pass over each (a BBO log's 1 M events:
    0.04 s; a depth log's 1 M level changes: 0.1 s). only: "bbo" or "depth", that log alone."""
    changed = []
    bbo = summary.get("bbo") or {}
    output, recorded_bytes = bbo.get("output"), bbo.get("output_sha256")
    if output and recorded_bytes and not only and (Path(run_dir) / output).is_file():  # gone: outputs_gone says so
        now = file_digest(Path(run_dir) / output)
        if now != recorded_bytes:
            changed.append(f"{output}: its bytes' digest is {now}, the run recorded {recorded_bytes}")
    for name, key in (("bbo.bbo", "bbo"), ("depth.dep", "depth")):
        recorded, path = (summary.get(key) or {}).get("digest"), Path(run_dir) / name
        if not recorded or not path.is_file() or only not in ("", key):
            continue
        try:
            # quiet: a crashed run's log read as it left it (its digest was taken of that)
            log = read_log(path, KIND_BBO if key == "bbo" else KIND_DEPTH, quiet=True)
            now = bbo_digest(log) if key == "bbo" else depth_summary(log).digest
        except LogFormatError as e:
            changed.append(str(e))
            continue
        if now != recorded:
            changed.append(f"{name}: its events' digest is {now}, the run recorded {recorded}")
    return f"{run_dir}: its logs no longer hold the events the run recorded ({'; '.join(changed)})" if changed else ""


def not_whole(run_dir: Path, summary: dict) -> str:
    """'' for a finished run that can be read as whole; else why not: its logs cut since it ended complete
    (cut_since_complete), or its report not written (its summary without the report's figures)."""
    return cut_since_complete(run_dir, summary) or rundir.report_missing(run_dir, summary)


def read_bbo(path: Path | str) -> LogFile:
    return read_log(path, KIND_BBO)


def read_depth(path: Path | str) -> LogFile:
    return read_log(path, KIND_DEPTH)


def read_latency(path: Path | str, *, header_only: bool = False, quiet: bool = False) -> LogFile:
    return read_log(path, KIND_LATENCY, header_only=header_only, quiet=quiet)


def read_latency_index(path: Path | str, *, quiet: bool = False) -> LogFile:
    return read_log(path, KIND_LATENCY_INDEX, quiet=quiet)


def bbo_digest(log: LogFile) -> str:
    """SHA-256 of a log's records (BBO, depth): the run's deterministic fingerprint (read in chunks: bounded
    memory)."""
    return digest_and_stale(log)[0]


@dataclass(frozen=True)
class StaleSeen:
    """Where a BBO or depth log's stale flags (FLAG_BOOK_MAY_BE_STALE) lie, seen in the digest's pass: enough to
    tell whether they are exactly the events after a given seq without reading the log again."""
    flagged: int
    lowest_flagged_seq: int | None  # of the events flagged; None: none is
    highest_clear_seq: int | None   # of the events not flagged; None: every one is

    def exactly_after(self, after: int | None) -> bool:
        """Whether the events flagged are exactly those of seq above `after` (None: no event is flagged)."""
        if after is None:
            return self.flagged == 0
        return ((self.lowest_flagged_seq is None or self.lowest_flagged_seq > after)
                and (self.highest_clear_seq is None or self.highest_clear_seq <= after))


class Digesting:
    """bbo_digest and StaleSeen of records given a part at a time, in the log's order."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.records = 0
        self._flagged, self._lowest, self._highest = 0, None, None

    def add(self, part: np.ndarray) -> None:
        self._hash.update(part.view(np.uint8))
        self.records += len(part)
        stale = (part["flags"] & FLAG_BOOK_MAY_BE_STALE) != 0
        n = int(np.count_nonzero(stale))
        if n:
            low = int(part["seq"][stale].min())
            self._flagged, self._lowest = self._flagged + n, low if self._lowest is None else min(self._lowest, low)
        if n < len(part):
            high = int(part["seq"][~stale].max())
            self._highest = high if self._highest is None else max(self._highest, high)

    def result(self) -> tuple[str, StaleSeen]:
        return "sha256:" + self._hash.hexdigest(), StaleSeen(self._flagged, self._lowest, self._highest)


@dataclass(frozen=True)
class DepthSummary:
    """What a run's reconciliation asks of its depth log, taken in one pass over it (memory: a part of it)."""
    changes: int  # level change records (version 1: its whole events)
    events: int
    digest: str   # bbo_digest's


def depth_summary(log: LogFile, read: Callable[[int], None] | None = None) -> DepthSummary:
    """The depth log's records, events and digest, read once a part at a time (`read` told part by part how many
    level change records are read); raises LogFormatError where its records do not rebuild its events. Events of the
    top N are hashed on a thread while the next part's are built (hashlib lets go of the GIL): at 5 levels an event
    is 184 bytes, and hashing them took as long as reading the log back and building them."""
    hasher, changes, events = hashlib.sha256(), 0, 0

    def counted(parts: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        nonlocal changes
        for part in parts:
            changes += len(part)
            if read is not None:
                read(changes)
            yield part

    if log.depth_levels is None:  # every level (its records are its events), or version 1 (whole events)
        for part in counted(_change_chunks(log, 1 << 20)):
            hasher.update(part.view(np.uint8))
            events += len(part)
        return DepthSummary(changes, events, "sha256:" + hasher.hexdigest())
    chunk = depth_chunk(log.depth_levels, 1 << 20)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="depth-digest") as pool:
        hashing: concurrent.futures.Future | None = None
        for part in _iter_depth_events(log, counted(_change_chunks(log, chunk)), chunk):
            if hashing is not None:  # done before the part after this one is built where it lies
                hashing.result()
            hashing = pool.submit(hasher.update, part.view(np.uint8))
            events += len(part)
        if hashing is not None:
            hashing.result()
    return DepthSummary(changes, events, "sha256:" + hasher.hexdigest())


def digest_and_stale(log: LogFile) -> tuple[str, StaleSeen]:
    """bbo_digest and StaleSeen in one pass over the log."""
    digesting = Digesting()
    for part in iter_records(log, 1 << 20):
        digesting.add(part)
    return digesting.result()
