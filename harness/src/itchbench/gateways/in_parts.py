"""A brought gateway's output held to the simulation a part at a time: the exact check of blackbox.check where the
two streams are the same events in the same order, read in parts of both, so that a day's output is judged in the
memory of a part whatever its length (docs/gateway-contract.md, "Reading the output").

Read whole, a day is out of reach: the example C++ gateway's depth stream of nasdaq-day 50 M at 5 levels (20 M
events) took 10.5 GB to judge, and a 270 M-message day would take about five times that. Each part is read as the
whole output would be (blackbox.events_of): its malformed lines are counted on the way. Whatever is not that case (a
difference of any kind, events of different stocks interleaved otherwise than the simulation's too, a run held to a
recovery or a late join) is left to the whole check, which counts and names the differences: `held` then says None,
and nothing is judged here."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..analysis import logs, native
from . import blackbox

# Bytes of the output read at a time: parts large enough that a call's overhead is nothing.
OUTPUT_BYTES_AT_ONCE = 32 << 20
REFERENCE_RECORDS_AT_ONCE = 1 << 18


class LineTooLong(Exception):
    """A part of an output with no line end in it: no event's line is that long."""


@dataclass(frozen=True)
class Held:
    """An output whose events equal the reference's, event for event and in its order."""
    events: int
    last_seq: int        # the last event's (0: no event)
    stamps: np.ndarray   # (seq, t_recv) of the events received with a stamp, when asked for: int64, 2 columns
    malformed: int       # lines that are not an event and hold none (a gateway's warning among its events)
    examples: list[str]  # the first of them


def held(output: Path, bbo: dict[str, object], reference: blackbox.ReferenceRun, stale: bool,
         keep_stamps: bool, read: Callable[[int], None] | None = None) -> Held | None:
    """The output (its contract's [bbo] table `bbo`) equal to the reference run's events, read a part at a time, or
    None: not shown equal that way (the whole check decides). stale: the BBO events' stale flags are held too.
    keep_stamps: keep the receive stamps (wire to wire). `read` is told the output's bytes read so far."""
    readable = output_parts(output, bbo, reference.symbols, stale, read)
    if readable is None:
        return None
    parts, text = readable
    stamped = text is not None and text.stamped
    width = len(blackbox.columns(bbo.get("levels", 0))) + stale  # type: ignore[arg-type]
    expected = _one_ahead(_log_parts(reference.events_log, stale))
    pending = np.zeros((0, width), np.int64)
    events, last_seq, stamps = 0, 0, []
    try:
        for part in parts:
            body = part[:, :width]
            at = 0
            while at < len(body):
                if not len(pending):
                    pending = next(expected, None)
                    if pending is None:
                        return None  # more events than the reference's
                n = min(len(pending), len(body) - at)
                if not np.array_equal(body[at:at + n], pending[:n]):
                    return None
                pending, at = pending[n:], at + n
            if len(part):
                events, last_seq = events + len(part), int(part[-1, 0])
                if keep_stamps and stamped:
                    stamps.append(part[part[:, -1] > 0][:, [0, -1]].copy())
    except (logs.LogFormatError, LineTooLong):
        return None  # a log that does not read back, or a line past a part: the whole check says what it holds
    if len(pending) or any(len(p) for p in expected):
        return None  # fewer events than the reference's
    return Held(events, last_seq, np.concatenate(stamps) if stamps else np.zeros((0, 2), np.int64),
                text.malformed if text else 0, text.examples if text else [])


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
