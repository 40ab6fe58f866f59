"""A brought gateway's output held to the simulation a part at a time (judged), or any stream of events to another
(held: compare's head to its base): the exact check of blackbox.check, taken in windows of whole sequence numbers of
both streams, so that a day's output is judged in the memory of a part whatever its length, and whatever it got
wrong (docs/gateway-contract.md, "Reading the output").

Read whole, a day is out of reach: the example C++ gateway's depth stream of nasdaq-day 50 M at 5 levels (20 M
events) took 10.5 GB to judge when right and 12.6 GB with one share wrong; a 270 M-message day would take five
times that. Each part is read as the whole output would be (blackbox.events_of): its malformed lines are counted on
the way.

An output whose seqs go back (a gateway that publishes per stock, per thread or per partition: stocks interleaved
otherwise than by seq, or a stock's own events out of order) cannot be cut into windows of seqs. It is cut by stock
instead: both streams are written to disk in buckets of stocks, each event with its place in its stream, and each
bucket is judged alone, as no event can be matched, nor be out of order, across stocks. A log that does not read
back, or no room on the disk for the buckets: None, for the whole check (a line longer than a part is malformed,
counted in parts). (Recovery and late joins
use these too.) A gateway checked as states (`check = "state"`, blackbox.state) is judged in buckets of stocks from
the start: an event is held to its stock's last reference event before it, which may lie in any earlier window."""

from __future__ import annotations

import concurrent.futures
import os
import resource
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

import numpy as np
import pandas as pd

from ..analysis import logs, native
from ..depth_levels import Levels
from ..progress import Progress
from . import blackbox

# Bytes of the output read at a time: parts large enough that a call's overhead is nothing.
OUTPUT_BYTES_AT_ONCE = 32 << 20
REFERENCE_RECORDS_AT_ONCE = 1 << 18
# Buckets of stocks an output that cannot be cut by seq is split into: about BUCKET_BYTES of it a bucket, so that a
# bucket's events take some tens of MB (a stock is never split: one stock's events are a bucket's least).
BUCKET_BYTES, MOST_BUCKETS = 8 << 20, 256
BUCKETS_PREFIX = "itchbench-by-stock-"
# Room left on the buckets' disk: below it, buckets are not written and the whole check judges the output.
DISK_LEFT_FREE = 1 << 30
DISK_LOOK_BYTES = 64 << 20  # the buckets' disk is looked at again after this much is written to it
# Events of one seq an output may hold before it is judged a flood and read no further: this many, or FLOOD_TIMES the
# reference's events of that seq if more (a late join's snapshot gives one seq an event a stock). A window of seqs
# holds a seq's events whole: a gateway repeating one event in a loop (2.4 GB of one seq from a Python one in 30 s)
# had the harness hold them all, 9.4 GB of it.
ONE_SEQ_MOST, FLOOD_TIMES = 1 << 22, 4


@dataclass(frozen=True)
class Judged:
    """An output held to the reference a part at a time: blackbox.check's exact figures, for the whole streams."""
    events: int
    reference_events: int
    counts: dict[str, int]            # of blackbox.DIFFERENCES
    first: dict[str, Any] | None      # the first difference, in stream order (blackbox.check's first_difference)
    last_seq: int            # the output's last event's (0: no event): its highest
    reference_last_seq: int  # the reference's
    stamps: np.ndarray   # (seq, t_recv) of the events received with a stamp (negative: collector.left_out_stamp), when
    #                      asked for: int64, 2 columns
    malformed: int       # lines that are not an event
    examples: list[str]  # the first of them
    cut_by: str          # "seq": windows of whole seqs of both streams; "stock": buckets of stocks
    # Set when the output flooded: in windows of seqs, the seq that held more events than one may (ONE_SEQ_MOST), its
    # events read, the most, and the bytes of the output left unread (-1: not known), nothing after that seq judged
    # in either stream; in buckets of stocks, more events than the whole output may hold: its first `events`
    # judged against the whole reference.
    flood: dict[str, int] | None = None

    @property
    def equal(self) -> bool:
        return not any(self.counts.values()) and self.flood is None


# One stream to hold to another, read afresh from its start at each call (a judgement cut by stock reads both
# again): its events as int64 blocks of blackbox.columns(N) (then the stale flag, when held; then, read from text,
# t_recv), and the TextParts reading them when it is text. A block is valid until the next is read.
Parts = Callable[[], tuple[Iterator[np.ndarray], "TextParts | None"]]


def judged(output: Path, bbo: dict[str, Any], reference: blackbox.ReferenceRun, stale: bool,
           keep_stamps: bool, meter: Progress | None = None, kinds: blackbox.Kinds | None = None) -> Judged | None:
    """The output (its contract's [bbo] table `bbo`) held to the reference run's events as its check says, read a
    part at a time, or None: there is no output, or it cannot be judged so (the whole check judges it). stale: the BBO
    events' stale flags are held too. keep_stamps: keep the receive stamps (wire to wire). `meter` is told the
    output's bytes read so far (and, in buckets of stocks, the buckets judged), left for the caller to finish.
    kinds: the message types a difference is named with (the reference run's own by default)."""
    meter = meter or Progress("", None)  # says nothing
    if not output.is_file():
        return None

    def got() -> tuple[Iterator[np.ndarray], TextParts | None]:
        readable = output_parts(output, bbo, reference.symbols, stale, meter.update)
        assert readable is not None  # the output is a file
        return readable

    def ref() -> tuple[Iterator[np.ndarray], TextParts | None]:
        return log_parts(reference.events_log, stale), None
    judgement = held(got, ref, bbo.get("levels", 0), stale, kinds or reference, keep_stamps, meter, output.parent,
                     output.stat().st_size, str(bbo.get("check", "exact")))
    cut = blackbox.own_log_not_whole(output, bbo)
    if judgement is None or not cut:
        return judgement
    return replace(judgement, malformed=judgement.malformed + 1, examples=[cut, *judgement.examples][:3])


def held(got: Parts, ref: Parts, levels: Levels, stale: bool, kinds: blackbox.Kinds, keep_stamps: bool,
         meter: Progress, spill: Path, size: int, mode: str = "exact") -> Judged | None:
    """One stream's events (got) held to another's (ref: the simulation's, or a base run's) exactly (or as states:
    mode), a part at a time, as blackbox.check holds them read whole; None when they cannot be (a log that does not
    read back, no room for buckets). kinds: message types, to name the first difference.
    spill: a folder for the buckets of stocks; size: the bytes of the larger stream's file, for how many.

    Both streams are taken in windows of whole sequence numbers: every event of a seq below the lower of the two
    streams' last seqs read so far. A window the same in both is equal; any other is judged as the whole check
    judges it, by key. Streams whose seqs go back (a stock's events out of order, or stocks interleaved otherwise
    than by seq) cannot be cut so: they are judged again from their start in buckets of stocks (_by_stock).

    mode "state" (blackbox.state): an event is held to its stock's last reference event at or before its seq, which
    may lie in any window before its own; judged in buckets of stocks from the start."""
    if mode == "state":
        meter.next(meter.what, meter.total, meter.unit, how="states: read into buckets of stocks")
        return _by_stock(got, ref, levels, stale, kinds, keep_stamps, meter, spill, size, mode)
    try:
        return _by_seq(got, ref, levels, stale, kinds, keep_stamps)
    except _SeqsGoBack:
        pass  # what the windows held is let go before the buckets are made
    meter.next(meter.what, meter.total, meter.unit, how="its seqs go back: read again into buckets of stocks")
    return _by_stock(got, ref, levels, stale, kinds, keep_stamps, meter, spill, size)


class _SeqsGoBack(Exception):
    """A stream whose seqs go back: not to be cut into windows of seqs."""


def _by_seq(got: Parts, ref: Parts, levels: Levels, stale: bool, kinds: blackbox.Kinds,
            keep_stamps: bool) -> Judged | None:
    """held, in windows of whole seqs of both streams; _SeqsGoBack when they cannot be cut so."""
    parts, text = got()
    stamped = text is not None and text.stamped
    width, names, key, fields = _event_columns(levels, stale)
    streams = [_Stream(parts, width), _Stream(_one_ahead(_own(ref, width)), width)]
    counts = dict.fromkeys(blackbox.DIFFERENCES, 0)
    first: dict[str, Any] | None = None
    stamps: list[np.ndarray] = []
    try:
        while True:
            window = _window(streams)
            if window is None:
                raise _SeqsGoBack()
            mine, theirs = window
            if not len(mine) and not len(theirs):
                break
            if keep_stamps and stamped and len(mine):
                stamps.append(mine[mine[:, -1] != 0][:, [0, -1]].copy())
            body = mine[:, :width]
            if len(body) != len(theirs) or not np.array_equal(body, theirs):
                found, difference = blackbox.exact(pd.DataFrame(body, columns=names),
                                                   pd.DataFrame(theirs, columns=names), kinds, fields, key,
                                                   streams[0].before, streams[1].before, name_first=first is None)
                counts = {k: counts[k] + found[k] for k in counts}
                first = first or difference
            streams[0].taken(len(mine))
            streams[1].taken(len(theirs))
            if streams[0].flooded:
                break
    except logs.LogFormatError:
        return None  # a log that does not read back: the whole check says what it holds
    flood = None
    if streams[0].flooded:
        flood = {"seq": streams[0].last_seq, "events_of_seq": streams[0].flooded, "most": streams[0].most,
                 "events_read_after": streams[0].read_after_flood,
                 "bytes_not_read": text.bytes_not_read() if text else -1}
    return Judged(streams[0].before, streams[1].before, counts, first, streams[0].last_seq, streams[1].last_seq,
                  np.concatenate(stamps) if stamps else np.zeros((0, 2), np.int64),
                  text.malformed if text else 0, text.examples if text else [], "seq", flood)


def _own(parts: Parts, width: int) -> Iterator[np.ndarray]:
    """A stream's events, each block an array of its own (a text stream's blocks are its reader's buffer, reused
    for the next), of the event's columns alone."""
    blocks, text = parts()
    return (block[:, :width].copy() for block in blocks) if text is not None else blocks


def _event_columns(levels: Levels, stale: bool) -> tuple[int, list[str], list[str], tuple[str, ...]]:
    """An event's columns as judged (BBO, depth of N levels, or level changes; then the stale flag when held): how
    many, their names, those of its key, and the fields compared."""
    cols = blackbox.columns(levels)
    names = [*cols, blackbox.STALE] if stale else cols
    key = blackbox.event_key(cols)
    return len(names), names, key, tuple(c for c in names if c not in key)


def _by_stock(got: Parts, ref: Parts, levels: Levels, stale: bool, kinds: blackbox.Kinds, keep_stamps: bool,
              meter: Progress, spill: Path, size: int, mode: str = "exact") -> Judged | None:
    """held, for streams that cannot be cut by seq: both written to disk under `spill` in buckets of stocks (a
    stock's bucket: its locate modulo their number), each event with its place in its stream, then each bucket
    judged by key alone. Events of different stocks never match, nor is one out of order after another's, so the
    counts are the whole check's; the first difference is the earliest of the buckets' in stream order (by seq,
    its place, then its stock, as the whole check orders it), named once."""
    parts, text = got()
    width, names, key, fields = _event_columns(levels, stale)
    # Each stream holds a file open for each bucket it fills: as many as the process may open, some kept for the rest.
    open_at_most = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    count = int(np.clip(-(-size // BUCKET_BYTES), 1, max(1, min(MOST_BUCKETS, (open_at_most - 128) // 2))))
    stamps: list[np.ndarray] = []
    # Its seqs go back, so a flood is known by the whole output's events: more than FLOOD_TIMES the reference's and
    # ONE_SEQ_MOST (a stock's bucket is judged whole: a gateway replaying its last events in a loop would fill it).
    flood: dict[str, int] | None = None
    # Named after the process: a run killed while judging leaves gigabytes, removed by the next judgement there.
    blackbox.remove_left_behind(spill, BUCKETS_PREFIX)
    with tempfile.TemporaryDirectory(prefix=f"{BUCKETS_PREFIX}{os.getpid()}-", dir=spill) as folder:
        mine, theirs = (_Buckets(Path(folder) / name, count, width) for name in ("received", "reference"))
        try:
            # The reference's buckets written on a thread while the output is parsed (both let go of the GIL).
            with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="reference-buckets") as pool:
                reference_written = pool.submit(lambda: [theirs.add(block[:, :width]) for block in ref()[0]])
                for block in parts:
                    if mine.events + len(block) > FLOOD_TIMES * theirs.events + ONE_SEQ_MOST:
                        reference_written.result()  # the reference's whole count, before the output is called a flood
                        most = FLOOD_TIMES * theirs.events + ONE_SEQ_MOST
                        if mine.events + len(block) > most:
                            block = block[:most - mine.events]
                            flood = {"events": most, "reference_events": theirs.events,
                                     "bytes_not_read": text.bytes_not_read() if text else -1}
                    if keep_stamps and text is not None and text.stamped:
                        stamps.append(block[block[:, -1] != 0][:, [0, -1]])
                    mine.add(block[:, :width])
                    if flood:
                        break
                reference_written.result()
        except (logs.LogFormatError, _DiskFull):
            return None  # as held (or no room for the buckets): the whole check says what it holds
        finally:
            mine.close()
            theirs.close()
        counts = dict.fromkeys(blackbox.DIFFERENCES, 0)
        earliest: tuple[int, int, int, int] | None = None  # the first difference's seq, place, stock; its bucket
        meter.next(f"{meter.what}, bucket by bucket", count, "buckets of stocks", how="read into buckets")
        for b in range(count):
            meter.update(b)
            found, first = _bucket_judged(mine.read(b), theirs.read(b), names, fields, key, _Unnamed(), mode)
            counts = {k: counts[k] + found[k] for k in counts}
            if first is not None:
                earliest = min(earliest or (first["seq"], first["index"], first["stock"], b),
                               (first["seq"], first["index"], first["stock"], b))
        meter.update(count)
        named = None if earliest is None else _bucket_judged(mine.read(earliest[3]), theirs.read(earliest[3]), names,
                                                              fields, key, kinds, mode)[1]
    return Judged(mine.events, theirs.events, counts, named, mine.highest_seq, theirs.highest_seq,
                  np.concatenate(stamps) if stamps else np.zeros((0, 2), np.int64),
                  text.malformed if text else 0, text.examples if text else [], "stock", flood)


def _bucket_judged(got: tuple[np.ndarray, np.ndarray], ref: tuple[np.ndarray, np.ndarray], names: list[str],
                   fields: tuple[str, ...], key: list[str], kinds: blackbox.Kinds,
                   mode: str = "exact") -> tuple[dict[str, int], dict[str, Any] | None]:
    """A bucket's events of both streams (_Buckets.read) held by key (blackbox.exact) or as states (blackbox.state),
    numbered in the whole streams."""
    mine, theirs = pd.DataFrame(got[0], columns=names, copy=False), pd.DataFrame(ref[0], columns=names, copy=False)
    if mode == "state":
        return blackbox.state(mine, theirs, kinds, fields, got[1])
    return blackbox.exact(mine, theirs, kinds, fields, key, got[1], ref[1])


class _Unnamed:
    """Message types unknown: a bucket's first difference found, not yet named (naming looks its message's type up
    in the reference's log, a read of it each time: done once, for the earliest)."""

    def get(self, seq: int, default: str = "?") -> str:
        return default


class _DiskFull(Exception):
    """Less than DISK_LEFT_FREE would be left on the buckets' disk."""


class _Buckets:
    """Events of one stream written to files, a bucket of stocks each: each event's place in the stream, then its
    columns, as rows. A part whose values all fit 32 bits is written so (a day's events of 5 levels: 92 bytes an
    event, where 64 bits took 184), any other part as 64 bits, to a file of its own. A file is opened when it is
    first written: a stream holds one open a bucket it fills (256 at most), not one for each width."""

    _WIDTHS = (np.int32, np.int64)

    def __init__(self, stem: Path, count: int, width: int) -> None:
        self._paths = [[stem.with_name(f"{stem.name}-{b}.{np.dtype(t).itemsize * 8}") for t in self._WIDTHS]
                       for b in range(count)]
        self._files: dict[Path, Any] = {}
        self.events, self.highest_seq, self._width = 0, 0, width
        self._room = 0  # bytes that may be written before the disk is looked at again

    def add(self, block: np.ndarray) -> None:
        if not len(block):
            return
        # A bucket number is below 2^16: a stable sort of it is a radix sort (a tenth of a sort of int64).
        bucket = (block[:, 1] % len(self._paths)).astype(np.uint16)
        order = np.argsort(bucket, kind="stable")
        kind = 0 if -(1 << 31) <= int(block.min()) and max(int(block.max()), self.events + len(block)) < 1 << 31 else 1
        rows = np.concatenate(((order + self.events)[:, None], np.take(block, order, axis=0)), axis=1)
        rows = rows.astype(self._WIDTHS[kind], copy=False)
        if rows.nbytes > self._room:  # looked at again every DISK_LOOK_BYTES at most (statvfs a part was a tenth)
            free = shutil.disk_usage(self._paths[0][0].parent).free - DISK_LEFT_FREE
            self._room = min(free, DISK_LOOK_BYTES)
            if rows.nbytes > free:
                raise _DiskFull(self._paths[0][0].parent)
        self._room -= rows.nbytes
        counts = np.bincount(bucket, minlength=len(self._paths))
        ends = np.cumsum(counts)
        for b in np.flatnonzero(counts):  # the buckets this block has events of, not all 256
            path = self._paths[b][kind]
            if path not in self._files:
                self._files[path] = open(path, "wb")
            self._files[path].write(memoryview(rows[ends[b] - counts[b]:ends[b]]))
        self.events += len(block)
        self.highest_seq = max(self.highest_seq, int(block[:, 0].max()))

    def close(self) -> None:
        for f in self._files.values():
            f.close()

    def read(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Bucket b's events stock by stock, each stock's in the stream's order: their rows, and their places in the
        stream. (The stocks of a bucket interleave differently in two streams: taken so, an output right or with a
        broken book is judged without a merge by key.)"""
        narrow, wide = (np.fromfile(path, t).reshape(-1, self._width + 1) if path in self._files else
                        np.zeros((0, self._width + 1), t) for t, path in zip(self._WIDTHS, self._paths[b]))
        if len(wide):  # parts of both widths: back in the stream's order by their places
            rows = np.concatenate((narrow, wide))
            order = np.lexsort((rows[:, 0], rows[:, 2]))
        else:  # gathered at 32 bits, then widened: a bucket's 64-bit copy is made once
            rows, order = narrow, np.argsort(narrow[:, 2], kind="stable")
        rows = np.take(rows, order, axis=0).astype(np.int64)
        return rows[:, 1:], rows[:, 0]


class _Stream:
    """Events of one stream read ahead, a part at a time: those not yet judged, how many were, and whether its seqs
    ever went back."""

    def __init__(self, parts: Iterator[np.ndarray], width: int) -> None:
        self._parts, self.ended, self.goes_back = parts, False, False
        self.ahead = np.zeros((0, width), np.int64)  # a part's width once one is read (the output's: then t_recv)
        self.before, self.last_seq = 0, 0  # events judged; the last judged event's seq
        self.flooded = self.most = 0  # events of the one seq that flooded it, and the most it could hold (_window)
        self.read_after_flood = 0  # events read after those, not judged

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
            return _flood_within(streams, len(streams[0].ahead), len(streams[1].ahead))
        bound = min(going)
        cut = [int(np.searchsorted(s.ahead[:, 0], bound)) for s in streams]
        if any(cut):
            return _flood_within(streams, *cut)
        # Every event ahead is of the bound's seq, which may go on in the next part: read it.
        for s in streams:
            if not s.ended and s.last_read == bound:
                s.read()
        flood = _flood(streams, bound)
        if flood is not None:
            return flood


def _flood_within(streams: list[_Stream], mine_cut: int, theirs_cut: int) -> tuple[np.ndarray, np.ndarray]:
    """The window of the first mine_cut and theirs_cut events ahead, whose seqs are whole in both; or, when one of
    the output's seqs there has more events than a seq may (as _flood says), the window up to that seq's last, the
    output marked flooded: a flood read within one part is one as much as a flood that outran its parts."""
    mine, theirs = streams
    window = mine.ahead[:mine_cut, 0]
    if mine_cut > ONE_SEQ_MOST:
        starts = np.r_[0, np.flatnonzero(np.diff(window)) + 1]
        runs = np.diff(np.r_[starts, mine_cut])
        for at in np.flatnonzero(runs > ONE_SEQ_MOST):
            seq, end = int(window[starts[at]]), int(starts[at] + runs[at])
            upto = int(np.searchsorted(theirs.ahead[:theirs_cut, 0], seq, side="right"))
            most = max(ONE_SEQ_MOST, FLOOD_TIMES * int(np.count_nonzero(theirs.ahead[:upto, 0] == seq)))
            if runs[at] > most:
                mine.flooded, mine.most, mine.read_after_flood = int(runs[at]), most, len(mine.ahead) - end
                return mine.ahead[:end], theirs.ahead[:upto]
    return mine.ahead[:mine_cut], theirs.ahead[:theirs_cut]


def _flood(streams: list[_Stream], seq: int) -> tuple[np.ndarray, np.ndarray] | None:
    """When the first stream (the output) holds more of seq's events than a seq may (ONE_SEQ_MOST, or FLOOD_TIMES
    the second's): the last window, those events and the second stream's up to seq, the first marked flooded (and
    the events after them it read, judged no further, counted). Else None. Looked at when the first's events ahead
    began with seq and one more part was read: however the output's parts fall, the flood is seen by the count of
    its seq, whether or not the part that passed the most also holds where it ended (line lengths moved that
    boundary: the same output a flood, or read whole, by the machine's uptime in its stamps' digits)."""
    mine, theirs = streams
    if mine.goes_back or not len(mine.ahead):
        return None
    of_seq = int(np.searchsorted(mine.ahead[:, 0], seq, side="right"))  # ahead from seq on, in order
    if of_seq <= ONE_SEQ_MOST:
        return None
    while not theirs.ended and len(theirs.ahead) and theirs.last_read == seq:  # all the reference's events of seq
        theirs.read()
    upto = int(np.searchsorted(theirs.ahead[:, 0], seq, side="right")) if len(theirs.ahead) else 0
    most = max(ONE_SEQ_MOST, FLOOD_TIMES * int(np.count_nonzero(theirs.ahead[:upto, 0] == seq)))
    if of_seq <= most:
        return None
    mine.flooded, mine.most, mine.read_after_flood = of_seq, most, len(mine.ahead) - of_seq
    return mine.ahead[:of_seq], theirs.ahead[:upto]


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
        return log_parts(output, stale, quiet=True), None  # what it does not hold whole: own_log_not_whole
    # `itchbench` records the collector stamped are written as csv.
    levels = bbo.get("levels", 0)
    text = TextParts(output, "jsonl" if fmt == "jsonl" else "csv", blackbox.columns(levels),  # type: ignore[arg-type]
                     stamped, symbols, read)
    return iter(text), text


def log_parts(path: Path, stale: bool, quiet: bool = False) -> Iterator[np.ndarray]:
    """A BBO or depth log's events as int64 blocks (blackbox.event_block), a part at a time; quiet: what it does not
    hold whole is the caller's to say."""
    for rec in logs.iter_records(logs.read_log(path, quiet=quiet), REFERENCE_RECORDS_AT_ONCE):
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
    its malformed lines counted, the first kept. A line longer than a part is no event's: it is counted malformed,
    its start kept as the example, and the rest of it read past, so that memory stays a part however long it is
    (left to the whole check, which read the output whole, a 400 MB line with no end took the harness to 2.1 GB).
    A yielded array is valid until the next one is read."""

    def __init__(self, path: Path, fmt: str, cols: list[str], stamped: bool, symbols: dict[str, int],
                 read: Callable[[int], None] | None) -> None:
        self.path, self.fmt, self.cols, self.stamped, self.symbols, self.read = path, fmt, cols, stamped, symbols, read
        self.malformed = 0
        self.examples: list[str] = []
        self.done = 0  # bytes of the file read into parts so far

    def bytes_not_read(self) -> int:
        return max(0, self.path.stat().st_size - self.done)

    def __iter__(self) -> Iterator[np.ndarray]:
        buf = np.empty(OUTPUT_BYTES_AT_ONCE, np.uint8)
        room = native.plain_csv_room(native.plain_csv_rows_at_most(len(buf), len(self.cols)), len(self.cols))
        done, rest = 0, 0
        with open(self.path, "rb") as f:
            while True:
                got = f.readinto(memoryview(buf)[rest:])
                size = rest + got
                cut = _after_last_line_end(buf[:size]) if got else size  # at the end, the last line needs no end
                if not cut and size == len(buf):  # the buffer holds the start of one line longer than it
                    self._long_line(bytes(buf[:4 * blackbox.EXAMPLE_CHARS]))
                    rest, skipped = _past_line_end(f, buf)
                    done += size + skipped
                    continue
                rows, bad = blackbox.events_of(buf[:cut], self.fmt, self.cols, self.stamped, self.symbols, room)
                self.malformed += int(bad.size)
                self.examples = (self.examples + blackbox.examples_of(bad))[:3]
                done += cut
                self.done = done
                if self.read is not None:
                    self.read(done)
                yield rows
                if not got:
                    return
                rest = size - cut
                buf[:rest] = buf[cut:size].copy()


    def _long_line(self, start: bytes) -> None:
        """A line longer than a part, known by its first bytes (4 a character of its example at most): malformed."""
        text = start.decode(errors="replace")
        if self.stamped:  # the collector's receive stamp, then the line: the body is what is shown (events_of)
            text = text.split(" ", 1)[1] if " " in text else ""
        self.malformed += 1
        self.examples = (self.examples + [blackbox.example_of(text)])[:3]


def _past_line_end(f: BinaryIO, buf: np.ndarray) -> tuple[int, int]:
    """f read on into buf past the next line end: (how many bytes after it, now at buf's start; how many were read
    before them). At the file's end with no line end: (0, all read)."""
    read = 0
    while got := f.readinto(memoryview(buf)):
        ends = np.flatnonzero(buf[:got] == ord("\n"))
        if len(ends):
            after = int(ends[0]) + 1
            buf[:got - after] = buf[after:got].copy()
            return got - after, read + after
        read += got
    return 0, read


def _after_last_line_end(data: np.ndarray) -> int:
    """Where the bytes after the last \\n begin; 0 when there is none. Looked for near the end first: lines are
    short."""
    for start in (max(0, len(data) - (64 << 10)), 0):
        ends = np.flatnonzero(data[start:] == ord("\n"))
        if len(ends):
            return start + int(ends[-1]) + 1
    return 0
