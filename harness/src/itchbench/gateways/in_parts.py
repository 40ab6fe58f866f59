"""A brought gateway's output held to the simulation a part at a time: the exact check of blackbox.check, taken in
windows of whole sequence numbers of both streams, so that a day's output is judged in the memory of a part whatever
its length, and whatever it got wrong (docs/gateway-contract.md, "Reading the output").

Read whole, a day is out of reach: the example C++ gateway's depth stream of nasdaq-day 50 M at 5 levels (20 M
events) took 10.5 GB to judge when right and 12.6 GB with one share wrong; a 270 M-message day would take five
times that. Each part is read as the whole output would be (blackbox.events_of): its malformed lines are counted on
the way. An output whose seqs go back (a gateway that publishes out of order), a run held to a recovery or a late
join, and `check = "state"` are left to the whole check: `judged` then says None, and nothing is judged here."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from ..analysis import logs, native
from . import blackbox

# Bytes of the output read at a time: parts large enough that a call's overhead is nothing.
OUTPUT_BYTES_AT_ONCE = 32 << 20
REFERENCE_RECORDS_AT_ONCE = 1 << 18


class LineTooLong(Exception):
    """A part of an output with no line end in it: no event's line is that long."""


@dataclass(frozen=True)
class Judged:
    """An output held to the reference a part at a time: blackbox.check's exact figures, for the whole streams."""
    events: int
    reference_events: int
    counts: dict[str, int]            # of blackbox.DIFFERENCES
    first: dict[str, Any] | None      # the first difference, in stream order (blackbox.check's first_difference)
    last_seq: int            # the output's last event's (0: no event): its highest
    reference_last_seq: int  # the reference's
    stamps: np.ndarray   # (seq, t_recv) of the events received with a stamp, when asked for: int64, 2 columns
    malformed: int       # lines that are not an event
    examples: list[str]  # the first of them

    @property
    def equal(self) -> bool:
        return not any(self.counts.values())


def judged(output: Path, bbo: dict[str, Any], reference: blackbox.ReferenceRun, stale: bool,
           keep_stamps: bool, read: Callable[[int], None] | None = None) -> Judged | None:
    """The output (its contract's [bbo] table `bbo`) held to the reference run's events exactly, read a part at a
    time, or None: it cannot be judged so (the whole check judges it). stale: the BBO events' stale flags are held
    too. keep_stamps: keep the receive stamps (wire to wire). `read` is told the output's bytes read so far.

    Both streams are taken in windows of whole sequence numbers: every event of a seq below the lower of the two
    streams' last seqs read so far. A window the same in both is equal; any other is judged as the whole check
    judges it, by key. An output whose seqs go back (a stock's events out of order, or stocks interleaved otherwise
    than by seq) cannot be cut so and is left to the whole check; so is a reference that does."""
    readable = output_parts(output, bbo, reference.symbols, stale, read)
    if readable is None:
        return None
    parts, text = readable
    stamped = text is not None and text.stamped
    cols = blackbox.columns(bbo.get("levels", 0))
    width = len(cols) + stale
    names = [*cols, blackbox.STALE] if stale else cols
    key = blackbox.event_key(cols)
    fields = tuple(c for c in names if c not in key)
    streams = [_Stream(parts, width), _Stream(_one_ahead(_log_parts(reference.events_log, stale)), width)]
    counts = dict.fromkeys(blackbox.DIFFERENCES, 0)
    first: dict[str, Any] | None = None
    stamps: list[np.ndarray] = []
    try:
        while True:
            window = _window(streams)
            if window is None:
                return None  # a stream whose seqs go back
            got, want = window
            if not len(got) and not len(want):
                break
            if keep_stamps and stamped and len(got):
                stamps.append(got[got[:, -1] > 0][:, [0, -1]].copy())
            body = got[:, :width]
            if len(body) != len(want) or not np.array_equal(body, want):
                found, difference = blackbox.exact(pd.DataFrame(body, columns=names),
                                                   pd.DataFrame(want, columns=names), reference, fields, key,
                                                   streams[0].before, streams[1].before, name_first=first is None)
                counts = {k: counts[k] + found[k] for k in counts}
                first = first or difference
            streams[0].taken(len(got))
            streams[1].taken(len(want))
    except (logs.LogFormatError, LineTooLong):
        return None  # a log that does not read back, or a line past a part: the whole check says what it holds
    return Judged(streams[0].before, streams[1].before, counts, first, streams[0].last_seq, streams[1].last_seq,
                  np.concatenate(stamps) if stamps else np.zeros((0, 2), np.int64),
                  text.malformed if text else 0, text.examples if text else [])


class _Stream:
    """Events of one stream read ahead, a part at a time: those not yet judged, how many were, and whether its seqs
    ever went back."""

    def __init__(self, parts: Iterator[np.ndarray], width: int) -> None:
        self._parts, self.ended, self.goes_back = parts, False, False
        self.ahead = np.zeros((0, width), np.int64)  # a part's width once one is read (the output's: then t_recv)
        self.before, self.last_seq = 0, 0  # events judged; the last judged event's seq

    @property
    def last_read(self) -> int:
        """The seq of the last event read (not ended, something ahead)."""
        return int(self.ahead[-1, 0])

    def read(self) -> None:
        """One more part onto what is ahead (a copy: a part's buffer is reused), or the stream's end."""
        for part in self._parts:
            if len(part):
                seqs = part[:, 0]
                previous = self.last_read if len(self.ahead) else self.last_seq
                self.goes_back |= bool(seqs[0] < previous or (np.diff(seqs) < 0).any())
                self.ahead = np.concatenate((self.ahead, part)) if len(self.ahead) else part.copy()
                return
        self.ended = True

    def taken(self, n: int) -> None:
        if n:
            self.last_seq = int(self.ahead[n - 1, 0])
        self.ahead, self.before = self.ahead[n:], self.before + n


def _window(streams: list[_Stream]) -> tuple[np.ndarray, np.ndarray] | None:
    """The next events of both streams whose seqs are all below the lower of the not ended streams' last seqs read
    (when both have ended: all that is left); None when a stream's seqs go back. Both empty: nothing is left."""
    while True:
        for s in streams:
            if not len(s.ahead) and not s.ended:
                s.read()
        if any(s.goes_back for s in streams):
            return None
        going = [s.last_read for s in streams if not s.ended]
        if not going:
            return streams[0].ahead, streams[1].ahead
        bound = min(going)
        cut = [int(np.searchsorted(s.ahead[:, 0], bound)) for s in streams]
        if any(cut):
            return streams[0].ahead[:cut[0]], streams[1].ahead[:cut[1]]
        # Every event ahead is of the bound's seq, which may go on in the next part: read it.
        for s in streams:
            if not s.ended and s.last_read == bound:
                s.read()


def output_parts(output: Path, bbo: dict[str, object], symbols: dict[str, int], stale: bool = False,
                 read: Callable[[int], None] | None = None) -> tuple[Iterator[np.ndarray], TextParts | None] | None:
    """A contract output's events (its [bbo] table `bbo`) as int64 blocks of blackbox.columns(N), a part at a time:
    a csv or jsonl output's rows (then t_recv), read by the TextParts also given, or a gateway's own log's events
    (stale: then its stale flags); None when there is no output. A yielded block is valid until the next one is
    read."""
    fmt, stamped = bbo.get("format", "csv"), bbo.get("via", "tcp") != "file"
    if not output.is_file():
        return None
    if fmt == "itchbench" and not stamped:  # only a gateway's own log carries stale flags
        return _log_parts(output, stale), None
    # `itchbench` records the collector stamped are written as csv.
    levels = bbo.get("levels", 0)
    text = TextParts(output, "jsonl" if fmt == "jsonl" else "csv", blackbox.columns(levels),  # type: ignore[arg-type]
                     stamped, symbols, read)
    return iter(text), text


def _log_parts(path: Path, stale: bool) -> Iterator[np.ndarray]:
    """A BBO or depth log's events as int64 blocks (blackbox.event_block), a part at a time."""
    for rec in logs.iter_records(logs.read_log(path), REFERENCE_RECORDS_AT_ONCE):
        yield blackbox.event_block(rec, stale)


def _one_ahead(parts: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    """parts, the next made on a thread while the caller works on this one: the reference's events are rebuilt
    while the output is parsed (both let go of the GIL). Each part must be an array of its own."""
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="reference-parts") as pool:
        coming = pool.submit(next, parts, None)
        while (part := coming.result()) is not None:
            coming = pool.submit(next, parts, None)
            yield part


class TextParts:
    """A csv or jsonl output's events (blackbox.events_of's rows: cols, then t_recv, each stock a locate), read
    OUTPUT_BYTES_AT_ONCE at a time into one buffer, each part cut after its last line end (the rest begins the next);
    its malformed lines counted, the first kept. LineTooLong for a part with no line end: the output is left to the
    whole check. A yielded array is valid until the next one is read."""

    def __init__(self, path: Path, fmt: str, cols: list[str], stamped: bool, symbols: dict[str, int],
                 read: Callable[[int], None] | None) -> None:
        self.path, self.fmt, self.cols, self.stamped, self.symbols, self.read = path, fmt, cols, stamped, symbols, read
        self.malformed = 0
        self.examples: list[str] = []

    def __iter__(self) -> Iterator[np.ndarray]:
        buf = np.empty(OUTPUT_BYTES_AT_ONCE, np.uint8)
        room = native.plain_csv_room(native.plain_csv_rows_at_most(len(buf), len(self.cols)), len(self.cols))
        done, rest = 0, 0
        with open(self.path, "rb") as f:
            while True:
                got = f.readinto(memoryview(buf)[rest:])
                size = rest + got
                cut = _after_last_line_end(buf[:size]) if got else size  # at the end, the last line needs no end
                if not cut and size == len(buf):
                    raise LineTooLong(self.path)
                rows, bad = blackbox.events_of(buf[:cut], self.fmt, self.cols, self.stamped, self.symbols, room)
                self.malformed += int(bad.size)
                self.examples = (self.examples + bad.head(3).tolist())[:3]
                yield rows
                done += cut
                if self.read is not None:
                    self.read(done)
                if not got:
                    return
                rest = size - cut
                buf[:rest] = buf[cut:size].copy()


def _after_last_line_end(data: np.ndarray) -> int:
    """Where the bytes after the last \\n begin; 0 when there is none. Looked for near the end first: lines are
    short."""
    for start in (max(0, len(data) - (64 << 10)), 0):
        ends = np.flatnonzero(data[start:] == ord("\n"))
        if len(ends):
            return start + int(ends[-1]) + 1
    return 0
