"""What itchbench can check of any gateway from outside: its BBO stream
against the simulation's of the same capture, and wire-to-wire latency from
the sender's stamps to the collector's (docs/gateway-contract.md).

    exact  every event equal to the reference, each stock's in the reference's
           order (docs/book-and-bbo.md)
    state  each reported event equals the reference book of its stock at its
           seq (for gateways that conflate, or emit on every touch); a stock
           whose last reported state is not the reference's last is missing, and
           a state older than one already reported for its stock is out of order
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import hops, logs, native
from ..analysis.dump import depth_columns
from ..analysis.trend import Trend
from ..captures.inspect import gateway_feed_args
from ..depth_levels import ALL_LEVELS, Levels
from ..tools import run_tool
from . import white_box

COLUMNS = ["seq", "stock", "bid_px", "bid_qty", "ask_px", "ask_qty"]
# The stale flag of an `itchbench`-format BBO record (FORMAT.md 0x01; docs/faults.md): judged beside the book, for a
# gateway whose output carries it. Named "flags" so that a wrong event's words show it as the run's flags.
STALE = "flags"


# levels = all (docs/book-and-bbo.md, "Every level"): an event a level a message changed. The side is its byte
# (B 66, S 83), so that an event's columns stay integers.
LEVEL_CHANGE_COLUMNS = ["seq", "stock", "side", "price", "shares"]
SIDE_BYTES = {"B": ord("B"), "S": ord("S")}

# A malformed line is kept as an example this long at most: a gateway that wrote 400 MB with no line end had it
# kept whole, in summary.json and report.json (400 MB each).
EXAMPLE_CHARS = 200


def example_of(line: str) -> str:
    """A malformed line as kept and shown: cut to EXAMPLE_CHARS, with "…" where it was cut."""
    return line if len(line) <= EXAMPLE_CHARS else line[:EXAMPLE_CHARS] + "…"


def examples_of(bad: pd.Series, n: int = 3) -> list[str]:
    """The first n malformed lines' bodies (events_of's), each as example_of keeps it."""
    return [example_of(line) for line in bad.head(n).tolist()]


def columns(levels: Levels = 0) -> list[str]:
    """An event's columns: the BBO's (levels 0), depth's of N levels a side (docs/book-and-bbo.md, "Depth"), or a
    level change's (all)."""
    if levels == ALL_LEVELS:
        return LEVEL_CHANGE_COLUMNS
    return COLUMNS if levels == 0 else depth_columns(int(levels))


def event_key(cols: list[str]) -> list[str]:
    """The columns that name an event: (seq, stock), as a stock has at most one BBO or depth event a message; a
    level change's side and price too, as a replace changes two levels of its stock."""
    return cols[:4] if cols == LEVEL_CHANGE_COLUMNS else cols[:2]


@functools.lru_cache(maxsize=70)
def _csv_line(numbers: int, side: bool = False) -> re.Pattern[str]:
    """seq, stock (its locate, or its symbol: letters first), a side letter (B or S) when `side`, then `numbers`
    numbers."""
    # [0-9], not \d: "\u0665" is a digit to Python's re and int() (5), and no number of an event.
    return re.compile(r"^\s*[0-9]+\s*,\s*(?:[0-9]+|[A-Za-z][A-Za-z0-9 .+/-]*?)\s*" + (r",\s*[BS]\s*" if side else "")
                      + r",\s*[0-9]+\s*" * numbers + "$")
PERCENTILES = {"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9, "p9999": 99.99, "max": 100}
# Stage names a contract run's summary gives its wire-to-wire figures under (summary.json latency.stages), so that
# documents and compare read them as they read the built-in gateway's stages.
STAGES = {"wire_to_wire": ("from_intended", "wire to wire: intended send -> BBO event received (black box)"),
          "wire_to_wire_from_sent": ("from_sent", "wire to wire: send called -> BBO event received (black box)")}


class MessageTypes:
    """The type of every message of a capture, by seq (its MoldUDP64 sequence number, or its 1-based position
    in a binary ITCH file): sorted seqs and their type bytes, 9 bytes a message."""

    def __init__(self, seq: np.ndarray, kind: np.ndarray) -> None:
        order = np.argsort(seq, kind="stable")
        self.seq, self.kind = seq[order].astype(np.uint64), kind[order]

    def get(self, seq: int, default: str = "?") -> str:
        at = int(np.searchsorted(self.seq, np.uint64(seq)))
        if at < self.seq.size and int(self.seq[at]) == seq:
            return bytes(self.kind[at]).decode(errors="replace")
        return default


REFERENCE_PREFIX = "itchbench-reference-"


class ReferenceRun:
    """The simulation of a capture (`itch-gateway --source sim`), its logs kept on disk while the process needs them
    (deleted when it is dropped, or at exit): read whole to name a difference, a part at a time to hold a day's
    output to it (gateways/in_parts.py). Its folder is named after the process, so that one a killed process left
    behind (a day's logs at 5 levels are about 2 GB) is removed by the next that makes one."""

    def __init__(self, capture: str, feed_args: str, levels: Levels) -> None:
        remove_left_behind(Path(tempfile.gettempdir()))
        self._folder = tempfile.TemporaryDirectory(prefix=f"{REFERENCE_PREFIX}{os.getpid()}-")
        self.dir, self.levels = Path(self._folder.name), levels
        run_tool("itch-gateway", ["--source", "sim", "--capture", capture, "--out", str(self.dir), "--stamps", "book",
                                  "--levels", str(levels), *feed_args.split()], ok_codes=(0, 1))
        ran = json.loads((self.dir / "gateway.json").read_text())
        # The stock directory as the session's R messages give it: symbol (trailing spaces removed) -> locate.
        self.symbols = {name.strip(): int(locate) for locate, name in ran.get("symbols", {}).items()}
        # Why the simulation stopped before the capture's end (a truncated or malformed capture: it then holds the
        # messages before the fault); empty when it read the capture to its end.
        self.ended_early: str = "" if ran.get("complete", True) else (ran.get("error") or "it did not reach the end")

    @property
    def events_log(self) -> Path:
        """The log of its events: depth of the top N (levels N), or BBO."""
        return self.dir / ("depth.dep" if self.levels else "bbo.bbo")

    @property
    def latency_log(self) -> Path:
        return self.dir / "latency.lat"

    def get(self, seq: int, default: str = "?") -> str:
        """The type of the message of sequence number seq, looked up in the latency log a part at a time (Kinds, for
        the few messages a difference names; MessageTypes holds every one: 450 MB for 50 M messages)."""
        for part in logs.iter_records(logs.read_latency(self.latency_log), 1 << 20):
            at = np.flatnonzero(part["seq"] == np.uint64(seq))
            if len(at):
                return bytes(part["msg_type"][at[0]]).decode(errors="replace")
        return default

    def messages_after(self, seq: int) -> int:
        """The session's messages of a sequence number above seq, read a part at a time (MessageTypes holds them
        all: 450 MB for 50 M messages)."""
        return sum(int(np.count_nonzero(part["seq"] > np.uint64(seq)))
                   for part in logs.iter_records(logs.read_latency(self.latency_log), 1 << 20))


def remove_left_behind(parent: Path, prefix: str = REFERENCE_PREFIX) -> list[Path]:
    """Folders under parent named `prefix`, a PID, "-" (a reference's, or buckets of stocks') whose process has ended
    (killed before it could remove them): removed; which."""
    gone = []
    for folder in parent.glob(f"{prefix}*-*"):
        pid = folder.name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        gone.append(folder)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


# Two kept on disk: a scenario's configurations mostly share a capture. A 270 M-message day's logs at 5 levels take
# about 2 GB.
@functools.lru_cache(maxsize=2)
def _reference_run(capture: str, mtime_ns: int, feed_args: str, levels: Levels) -> ReferenceRun:
    return ReferenceRun(capture, feed_args, levels)


def reference_run(capture: Path, feed: str = "", levels: Levels = 0) -> ReferenceRun:
    """The simulation of the capture as a gateway fed `feed` sees it, run once for the process."""
    return _reference_run(str(capture), capture.stat().st_mtime_ns, " ".join(gateway_feed_args(capture, feed)), levels)


def event_block(rec: np.ndarray, stale: bool = False) -> np.ndarray:
    """Records of a BBO log, whole events of a depth log of the top N, or level change records (FORMAT.md), as one
    int64 block of columns(N); stale: a BBO block ends with STALE, the record's stale flag."""
    if rec.dtype == logs.LEVEL_CHANGE_DTYPE:
        out = np.empty((len(rec), len(LEVEL_CHANGE_COLUMNS)), np.int64)
        out[:, 0], out[:, 1], out[:, 2] = rec["seq"], rec["stock_locate"], rec["side"].view(np.uint8)
        out[:, 3], out[:, 4] = rec["px"], rec["qty"]
        return out
    if rec.dtype == logs.BBO_DTYPE:
        out = np.empty((len(rec), len(COLUMNS) + stale), np.int64)
        for i, field in enumerate(("seq", "stock_locate", "bid_px", "bid_qty", "ask_px", "ask_qty")):
            out[:, i] = rec[field]
        if stale:
            out[:, -1] = rec["flags"] & logs.FLAG_BOOK_MAY_BE_STALE
        return out
    # Filled column by column: a frame built from the records' strided fields, then made int64, copied 3.55 M events
    # of 5 levels twice over (2.7 s).
    levels = rec.dtype["bids"].shape[0]
    out = np.empty((len(rec), 2 + 4 * levels), np.int64)
    out[:, 0], out[:, 1] = rec["seq"], rec["stock_locate"]
    for k, side in enumerate(("bids", "asks")):
        at = 2 + 2 * levels * k
        out[:, at:at + 2 * levels:2], out[:, at + 1:at + 2 * levels:2] = rec[side]["px"], rec[side]["qty"]
    return out


@functools.lru_cache(maxsize=8)
def _reference(capture: str, mtime_ns: int, feed_args: str,
               levels: Levels) -> tuple[pd.DataFrame, MessageTypes]:
    run = _reference_run(capture, mtime_ns, feed_args, levels)
    lat = logs.read_latency(run.latency_log).records
    if levels:
        ref = depth_frame(logs.read_depth(run.events_log).records)
    else:
        ref = pd.DataFrame(event_block(logs.read_bbo(run.events_log).records, stale=True), columns=[*COLUMNS, STALE],
                           copy=False)
    return ref.astype(np.int64, copy=False), MessageTypes(np.asarray(lat["seq"]), np.asarray(lat["msg_type"]))


def depth_frame(rec: np.ndarray) -> pd.DataFrame:
    """Depth records (FORMAT.md, kind 6) as columns(N): seq, stock locate, bid1_px … askN_qty; level change
    records as LEVEL_CHANGE_COLUMNS."""
    cols = LEVEL_CHANGE_COLUMNS if rec.dtype == logs.LEVEL_CHANGE_DTYPE else columns(rec.dtype["bids"].shape[0])
    return pd.DataFrame(event_block(rec), columns=cols, copy=False)


def reference(capture: Path, feed: str = "", levels: Levels = 0, stale: bool = False) -> tuple[pd.DataFrame,
                                                                                          MessageTypes]:
    """The simulation's events of the capture (columns(levels): BBO, or depth of N levels a side), and the type of
    every message in it. stale: BBO events carry STALE too, the simulation's stale flag (FORMAT.md 0x01)."""
    ref, kinds = _reference(str(capture), capture.stat().st_mtime_ns, " ".join(gateway_feed_args(capture, feed)),
                            levels)
    return (ref if stale or STALE not in ref.columns else ref.drop(columns=[STALE])), kinds


def stock_directory(capture: Path, feed: str = "", levels: Levels = 0) -> dict[str, int]:
    """Symbol -> stock locate, from the session's stock directory (R messages): taken from the reference of
    `levels` (the one the run is judged against), not from a simulation of its own."""
    return reference_run(capture, feed, levels).symbols


def read_events(path: Path, fmt: str, stamped: bool, symbols: dict[str, int] | None = None,
                levels: Levels = 0) -> tuple[pd.DataFrame, int, list[str]]:
    """(events with t_recv, malformed line count, the first malformed lines) of a gateway's BBO output: the
    collector's `<t_recv> <line>` file, or (stamped False) the gateway's own file of lines. `stock` is the stock
    locate, or its symbol mapped through `symbols` (the session's stock directory); a symbol it does not name is
    a malformed line. levels N: depth events, columns(N)."""
    symbols = symbols or {}
    cols = columns(levels)
    if fmt == "itchbench" and not stamped:  # the gateway's own log (gateway/log/FORMAT.md), no receive stamps
        cut = own_log_not_whole(path, {"format": fmt, "via": "file"})
        bad = (1, [cut]) if cut else (0, [])
        if levels:
            rec = logs.read_log(path, logs.KIND_DEPTH, quiet=True).records if path.is_file() else \
                np.zeros(0, logs.depth_dtype(levels))
            return depth_frame(rec).assign(t_recv=0).astype(np.int64), *bad
        rec = logs.read_log(path, logs.KIND_BBO, quiet=True).records if path.is_file() else np.zeros(0, logs.BBO_DTYPE)
        return pd.DataFrame(event_block(rec, stale=True), columns=[*COLUMNS, STALE]).assign(t_recv=0), *bad
    rows, bad = events_of(path.read_bytes() if path.is_file() else b"", fmt, cols, stamped, symbols)
    return pd.DataFrame(rows, columns=[*cols, "t_recv"], copy=False), int(bad.size), examples_of(bad)


def not_a_file(path: Path) -> str:
    """'' when path is a regular file (itself, or through links) or is not there; else what it is: a gateway's output
    that is no file is not read (a FIFO would hold its reader forever, a link to /dev/zero fill the memory: the
    harness was killed by the kernel at 23 GB)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "" if not path.is_symlink() else "a link to nothing"
    for test, what in ((stat.S_ISREG, ""), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a file"


def own_log_not_whole(path: Path, bbo: dict[str, Any]) -> str:
    """'' unless the output is the gateway's own itchbench log (a file in the `itchbench` format) and does not read
    whole (a record cut, a count its header does not match, never closed): then what is wrong, said as one
    malformed line of its output, as a partial last line of text is."""
    if bbo.get("format") != "itchbench" or bbo.get("via", "tcp") != "file" or not path.is_file():
        return ""
    try:
        notes = logs.read_log(path, quiet=True).notes
    except logs.LogFormatError:
        return ""  # not a log at all: the whole check says so
    return f"{path.name}: {'; '.join(notes)}" if notes else ""


def events_of(data: bytes | np.ndarray, fmt: str, cols: list[str], stamped: bool, symbols: dict[str, int],
              room: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, pd.Series]:
    """The events of an output's lines (bytes, or a uint8 array, of whole lines): rows of cols then t_recv, int64,
    in the output's order; and the malformed lines' bodies, in order. Read at once where lines parse: a depth
    stream of 5 M nasdaq-day messages at 5 levels, 3.55 M lines of 22 numbers, took 86 s and 10 GB line by line.
    A csv output's other lines are read line by line in their places; a jsonl output's, with the few lines around
    each (_jsonl_in_parts). room: native.parse_plain_csv's, reused from one part of an output to the next."""
    if fmt == "jsonl":
        return _jsonl_in_parts(data if isinstance(data, bytes) else data.tobytes(), cols, stamped, symbols)
    mixed = _csv_mixed(data, cols, stamped, symbols, room)
    if mixed is not None:
        return mixed
    return _rows_line_by_line(data if isinstance(data, bytes) else data.tobytes(), fmt, cols, stamped, symbols)


def _rows_line_by_line(data: bytes, fmt: str, cols: list[str], stamped: bool,
                       symbols: dict[str, int]) -> tuple[np.ndarray, pd.Series]:
    """events_of's rows and malformed lines of whole lines read one by one (_line_by_line)."""
    lines = pd.Series(data.decode(errors="replace").splitlines(), dtype=object)
    events, bad = _line_by_line(lines, fmt, cols, stamped, symbols)
    return events[[*cols, "t_recv"]].to_numpy(np.int64), bad


_NO_LINES = pd.Series([], dtype=object)

# A jsonl part of this many lines or fewer that pyarrow cannot read whole is read line by line (json.loads a line:
# about 5 us, pyarrow's call about 0.1 ms); and, once this many parts could not be read whole, any such part.
JSONL_LINE_BY_LINE_LINES = 256
JSONL_HALVINGS = 64


def _jsonl_in_parts(data: bytes, cols: list[str], stamped: bool, symbols: dict[str, int]) -> tuple[np.ndarray,
                                                                                                  pd.Series]:
    """events_of a jsonl output: read at once (pyarrow) where it can be, and where it cannot (a malformed line, a
    field that is not a whole number), halved until the parts that read whole are read at once and the few lines
    around each line that does not are read one by one. One malformed line in 1 M had sent all 1 M through
    json.loads: 5.9 s; now 2.6 s, against 0.9 s with none. An output with malformed lines all through stops
    halving after JSONL_HALVINGS parts it could not read and reads the rest's such parts line by line (one line in
    1,000 malformed: 6.7 s, against 5.9 s when every line was read so)."""
    at_once = _jsonl_at_once(data, cols, stamped, symbols)  # the usual output, read with no split into lines
    if at_once is not None:
        return at_once, _NO_LINES
    lines = [line for line in data.split(b"\n") if line.strip()]
    rows: list[np.ndarray] = []
    bad: list[pd.Series] = []
    failed = 1  # the whole output

    def read(part: list[bytes]) -> None:
        nonlocal failed
        if not part:
            return
        whole = b"\n".join(part)
        at_once = _jsonl_at_once(whole, cols, stamped, symbols)
        if at_once is not None:
            rows.append(at_once)
            return
        failed += 1
        if len(part) <= JSONL_LINE_BY_LINE_LINES or failed > JSONL_HALVINGS:
            part_rows, malformed = _rows_line_by_line(whole, "jsonl", cols, stamped, symbols)
            rows.append(part_rows)
            bad.append(malformed)
            return
        read(part[:len(part) // 2])
        read(part[len(part) // 2:])

    read(lines)
    return (np.concatenate(rows) if rows else np.zeros((0, len(cols) + 1), np.int64),
            pd.concat(bad, ignore_index=True) if bad else _NO_LINES)


def _line_by_line(lines: pd.Series, fmt: str, cols: list[str], stamped: bool,
                  symbols: dict[str, int]) -> tuple[pd.DataFrame, pd.Series]:
    """Lines of an output read one by one, which tells each that does not parse apart: (the events, int64 with
    t_recv, indexed as their lines; the malformed lines' bodies). Blank lines are neither."""

    def locate(v: Any) -> int:
        """A locate as it is, a symbol through the directory (KeyError: unknown)."""
        if isinstance(v, str) and _digits(v.strip()):
            return int(v)
        return _json_whole(v) if not isinstance(v, str) else symbols[v.strip()]

    lines = lines[lines.str.strip() != ""] if lines.size else lines
    if stamped:
        parts = lines.str.split(" ", n=1, expand=True).reindex(columns=[0, 1])
        stamp = parts[0].fillna("").astype(str).str.strip()  # str even when no line holds one
        t_recv = pd.to_numeric(stamp.mask(_past_int64(stamp)), errors="coerce").fillna(0).astype(np.int64)
        body = parts[1].fillna("")
    else:
        t_recv, body = pd.Series(0, index=lines.index, dtype=np.int64), lines
    if fmt == "jsonl":
        rows, ok = [], []
        for line in body:  # JSON lines have no vectorised parser that survives a garbage line
            try:
                d = json.loads(line)
                rows.append([locate(d[c]) if c == "stock" else SIDE_BYTES[d[c]] if c == "side" else _json_whole(d[c])
                             for c in cols])
                ok.append(True)
            except (ValueError, KeyError, TypeError):
                ok.append(False)
        good = pd.Series(ok, index=body.index, dtype=bool)
        values = pd.DataFrame(rows, columns=cols, index=body.index[good.to_numpy()])
    else:  # csv, and itchbench records the collector wrote as csv
        body = body.astype(str)
        sided = cols == LEVEL_CHANGE_COLUMNS
        good = (body.str.match(_csv_line(len(cols) - 2 - sided, sided)).astype(bool) if body.size
                else pd.Series(dtype=bool))
        values = pd.DataFrame(columns=cols, dtype=np.int64)
        if good.any():
            fields = body[good].str.split(",", expand=True).reindex(columns=range(len(cols)))
            fields = fields.apply(lambda col: col.str.strip())
            big = fields.apply(_past_int64).any(axis=1)  # malformed: a number no event field holds
            good.loc[big[big].index] = False
            fields = fields.loc[~big]
            named = ~fields[1].str.isdigit()
            if named.any():  # symbols: mapped through the stock directory, the unknown ones malformed
                mapped = fields.loc[named, 1].map(symbols)
                good.loc[mapped[mapped.isna()].index] = False
                fields = fields.loc[good[good].index]
                fields[1] = fields[1].where(fields[1].str.isdigit(), fields[1].map(symbols))
            if sided:
                fields[2] = fields[2].map(SIDE_BYTES)
            values = fields.astype(np.int64)
            values.columns = cols
    events = values.assign(t_recv=t_recv[good])
    return events.astype(np.int64), body[~good]


def _csv_mixed(data: bytes | np.ndarray, cols: list[str], stamped: bool, symbols: dict[str, int],
               room: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, pd.Series] | None:
    """events_of a csv output: its plain lines in one compiled pass (gateway/log/plain_csv.hpp), the others set
    aside and read line by line, each event in its line's place. None when not one line is plain, or a plain line
    names a symbol the directory does not (line by line, which shows the line)."""
    plain = native.parse_plain_csv(data, len(cols), stamped, room, set_aside=True, sided=cols == LEVEL_CHANGE_COLUMNS)
    if plain is None or not len(plain.rows):
        return None
    rows = _plain_rows(plain, symbols)
    if rows is None:
        return None
    if not len(plain.others):
        return rows, _NO_LINES
    events, bad, before = _lines_set_aside(data, plain.others, cols, stamped, symbols)
    # In place: the events of the lines set aside before plain row r come before it, in their order; the j-th of
    # them has j before it. (A concat and a sort of the frames took 8 s for 3.55 M events of 5 levels.)
    out = np.empty((len(rows) + len(events), rows.shape[1]), np.int64)
    placed = before + np.arange(len(events))
    theirs = np.zeros(len(out), bool)
    theirs[placed] = True
    out[placed] = events[[*cols, "t_recv"]].to_numpy()
    out[~theirs] = rows
    return out, bad


def _lines_set_aside(data: bytes | np.ndarray, others: np.ndarray, cols: list[str], stamped: bool,
                    symbols: dict[str, int]) -> tuple[pd.DataFrame, pd.Series, np.ndarray]:
    """The lines a compiled pass set aside (native.PlainCsv.others) read line by line: (their events; the malformed
    lines' bodies; for each event, the plain rows before its line). A line set aside ends at its \\n; read line by
    line it may be more than one (splitlines splits at \\r too)."""
    owner, texts = [], []
    for before_row, begin, end in others.tolist():
        segment = data[begin:end]
        text = (segment if isinstance(segment, bytes) else segment.tobytes()).decode(errors="replace")
        for line in text.splitlines():
            owner.append(before_row)
            texts.append(line)
    events, bad = _line_by_line(pd.Series(texts, dtype=object), "csv", cols, stamped, symbols)
    return events, bad, np.asarray(owner, np.int64)[events.index.to_numpy()]


def _plain_rows(plain: native.PlainCsv, symbols: dict[str, int]) -> np.ndarray | None:
    """A compiled pass's rows (cols, then t_recv) with each stock named by its symbol as its locate, each distinct
    symbol looked up once; None when the directory does not name one."""
    rows = plain.rows
    named = rows[:, 1] < 0
    if named.any():
        distinct, at = np.unique(plain.symbols[named], return_inverse=True)
        rows[named, 1] = np.array([symbols.get(n.decode(), -1) for n in distinct], np.int64)[at]
    return None if (rows[:, 1] < 0).any() else rows


def _jsonl_at_once(data: bytes, cols: list[str], stamped: bool, symbols: dict[str, int]) -> np.ndarray | None:
    """events_of's rows of a jsonl output whose every line is an object with each field an integer (the stock
    also a symbol the directory names, a side "B" or "S"), read by pyarrow's JSON reader; None for any other: a
    line it cannot read fails the whole read, and the lines are then read one by one. 400,000 lines of 5 levels:
    1.7 s, where one by one took 7.2 s."""
    import pyarrow as pa
    import pyarrow.json as pj
    lines = [line for line in data.split(b"\n") if line.strip()]
    if not lines:
        return None
    t_recv = np.zeros(len(lines), np.int64)
    if stamped:
        split = [line.partition(b" ") for line in lines]
        try:
            t_recv = np.array([stamp for stamp, _, _ in split]).astype(np.int64)
        except (ValueError, OverflowError):
            return None
        lines = [body for _, space, body in split if space]
        if len(lines) != len(t_recv):
            return None
    try:
        table = pj.read_json(pa.BufferReader(b"\n".join(lines)))
    except pa.ArrowException:
        return None
    if table.num_rows != len(lines) or not set(cols) <= set(table.column_names):
        return None
    out = np.empty((len(lines), len(cols) + 1), np.int64)
    out[:, -1] = t_recv
    for i, c in enumerate(cols):
        column = table.column(c)
        if column.null_count:
            return None
        if c != "side" and pa.types.is_integer(column.type) and not (  # a side is "B" or "S", never a number
                pa.types.is_unsigned_integer(column.type) and column.type.bit_width == 64):
            out[:, i] = column.to_numpy()
            if (out[:, i] < 0).any():  # no event field is negative: those lines are malformed, read one by one
                return None
        elif pa.types.is_string(column.type) and c in ("stock", "side"):
            at, words = pd.factorize(column.to_pandas())
            value = ([SIDE_BYTES.get(w, -1) for w in words] if c == "side" else
                     [int(w) if _digits(w.strip()) else symbols.get(w.strip(), -1) for w in words])
            if min(value, default=0) < 0:
                return None
            out[:, i] = np.asarray(value, np.int64)[at]
        else:
            return None
    return out


_INT64_MAX = str(np.iinfo(np.int64).max)


def _past_int64(col: pd.Series) -> pd.Series:
    """Which strings of digits are a number past int64 (that no field of an event holds)."""
    digits = col.str.lstrip("0")
    n = digits.str.len()
    return col.str.isdigit() & ((n > len(_INT64_MAX)) | ((n == len(_INT64_MAX)) & (digits > _INT64_MAX)))


def _digits(text: str) -> bool:
    """Whether text is ASCII digits 0-9 (str.isdigit also takes "٥", which int() reads as 5, and "²")."""
    return text.isascii() and text.isdigit()


def _json_whole(v: Any) -> int:
    """A JSON value as an event field: an integer from 0 to int64's largest, or a string of its digits, as a csv
    field is; ValueError for any other (a malformed line). int() had taken 196.79 as 196 and true as 1: a
    gateway's shares off by a fraction were judged equal to the simulation's."""
    x = int(v) if isinstance(v, str) and _digits(v.strip()) else v
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < 2**63:
        raise ValueError(f"{v!r} is not a whole number of an event field")
    return x


def why_malformed(line: str, fmt: str, cols: list[str], symbols: dict[str, int]) -> str:
    """What makes a malformed line of a csv or jsonl output one (its body, as example_of keeps it), in words: the
    first field that is wrong, or how many fields it has; '' when that cannot be told from the line as kept (cut
    short) or nothing in it is wrong taken alone."""
    if len(line) > EXAMPLE_CHARS:
        return ""
    if fmt == "jsonl":
        try:
            d = json.loads(line)
        except ValueError:
            return "not a JSON object"
        if not isinstance(d, dict):
            return "not a JSON object"
        missing = [c for c in cols if c not in d]
        if missing:
            return f"no {', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}"
        fields = [(c, d[c]) for c in cols]
    elif fmt == "csv":
        parts = [f.strip() for f in line.split(",")]
        if len(parts) != len(cols):
            fields_said = f"{len(parts)} field{'s' if len(parts) != 1 else ''}"
            return f"{fields_said} where {len(cols)} are due ({', '.join(cols[:3])}, …)"
        fields = list(zip(cols, parts))
    else:
        return ""

    def shown(v: Any) -> str:
        """A field's value as the line has it: JSON's true and "7", csv's text quoted."""
        return json.dumps(v, ensure_ascii=False) if fmt == "jsonl" else repr(v)

    for c, v in fields:
        if c == "stock":
            text = str(v).strip() if isinstance(v, str) else ""
            if text and not _digits(text) and text not in symbols:
                return f"stock {text!r} is neither a locate nor a symbol of the session's stock directory"
            if text:
                continue
        if c == "side":
            if v not in SIDE_BYTES:
                return f"side {shown(v)} is neither B nor S"
            continue
        try:
            _json_whole(v)
        except ValueError:
            price = " (a price is a whole number of 1/10,000 dollars)" if c.endswith("_px") or c == "price" else ""
            return f"{c} {shown(v)} is not a whole number from 0 to 2^63 - 1{price}"
    return ""


def judges_stale(bbo: dict[str, Any]) -> bool:
    """Whether a contract's BBO output carries the stale flag: `itchbench` BBO records the gateway writes itself."""
    return bbo.get("format") == "itchbench" and bbo.get("via") == "file" and not bbo.get("levels", 0)


def read_output(run_dir: Path, output: str, bbo: dict[str, Any],
                symbols: dict[str, int] | None = None) -> tuple[pd.DataFrame, int, list[str]]:
    """read_events of a contract run's BBO output (`output`, relative to the run directory or absolute) as its
    contract's [bbo] table describes it: a file the gateway wrote itself carries no receive stamps."""
    return read_events(run_dir / output, bbo.get("format", "csv"), stamped=bbo.get("via", "tcp") != "file",
                       symbols=symbols, levels=bbo.get("levels", 0))


Kinds = Any  # MessageTypes, or any mapping with get(seq, default) -> type


def _event_words(row: Any, kinds: Kinds) -> str:
    v = {k: int(row[k]) for k in row.index}  # by key: a Series' .flags is pandas' own attribute
    flags = f", flags {v['flags']}{' (stale)' if v['flags'] & 1 else ''}" if "flags" in v else ""
    head = f"seq {v['seq']:,} (message {kinds.get(v['seq'], '?')}), stock {v['stock']}: "
    if "side" in v:
        return f"{head}{side_word(v['side'])} {v['price']}: {v['shares']:,} shares{flags}"
    if "bid_px" in v:
        return f"{head}bid {v['bid_px']} × {v['bid_qty']}, ask {v['ask_px']} × {v['ask_qty']}{flags}"
    levels = sum(1 for k in v if k.startswith("bid") and k.endswith("_px"))
    sides = [f"{side} " + " ".join(f"{v[f'{side}{i}_px']}×{v[f'{side}{i}_qty']}" for i in range(1, levels + 1))
             for side in ("bid", "ask")]
    return f"{head}{sides[0]}; {sides[1]}{flags}"


def side_word(side: int) -> str:
    """A level change's side byte in words: bid, ask."""
    return "bid" if side == SIDE_BYTES["B"] else "ask" if side == SIDE_BYTES["S"] else f"side {side}"


def level_words(row: Any, fields: tuple[str, ...]) -> str:
    """A wrong depth event's first differing level, "bid level 3: 1,200 shares at 1020300, expected 1,100 shares
    at 1020300" (an empty one is "no level"); a wrong level change's, "bid 1020300: 1,200 shares, expected 1,100";
    "" for a BBO event. row: each field of fields as f"{field}_got" and f"{field}_ref" (a level change's side and
    price as they are: they name it)."""
    if "shares" in fields:
        return (f"{side_word(int(row['side']))} {int(row['price'])}: {int(row['shares_got']):,} shares, expected "
                f"{int(row['shares_ref']):,}")
    for f in fields:
        if not f.endswith("_px") or f == "bid_px" or f == "ask_px":
            continue
        name = f[:-3]
        got = (int(row[f"{name}_px_got"]), int(row[f"{name}_qty_got"]))
        want = (int(row[f"{name}_px_ref"]), int(row[f"{name}_qty_ref"]))
        if got != want:
            said = lambda px, qty: f"{qty:,} shares at {px}" if (px, qty) != (0, 0) else "no level"  # noqa: E731
            return f"{name[:3]} level {name[3:]}: {said(*got)}, expected {said(*want)}"
    return ""


DIFFERENCES = ("missing", "extra", "wrong", "out_of_order")


def _late(stocks: np.ndarray, at_ref: np.ndarray) -> np.ndarray:
    """Matched events in the order received (their stocks, their places in the reference): for each, the reference
    place of the latest event of its stock received before it, where that one comes later in the reference (the
    event arrived after a later event of its stock), -1 elsewhere. Events of different stocks may interleave
    freely; a stock's own must keep the reference's order."""
    late = np.full(len(stocks), -1, np.int64)
    if len(stocks) < 2:
        return late
    # Ordered by stock (each stock's in the order received), a running maximum of the places, each stock's raised
    # above every place of the stocks before it: a place below the maximum before it is late.
    by_stock = _by_stock(stocks)
    ordered = stocks[by_stock]
    raised = np.r_[0, np.cumsum(ordered[1:] != ordered[:-1])] * (int(at_ref.max()) + 1)
    lifted = raised + at_ref[by_stock]
    before = np.maximum.accumulate(lifted)[:-1]
    is_late = before > lifted[1:]
    late[by_stock[1:][is_late]] = (before - raised[1:])[is_late]
    return late


def _columns(frame: pd.DataFrame, names: list[str]) -> np.ndarray:
    """The frame's columns as one array: a view when they are its columns in order, or a run of them (one block)."""
    columns = frame.columns.tolist()
    at = columns.index(names[0]) if names and names[0] in columns else -1
    if at >= 0 and columns[at:at + len(names)] == names:
        return frame.to_numpy()[:, at:at + len(names)]
    return frame[names].to_numpy()


# Matched events whose fields are compared at a time (their rows gathered from both streams).
COMPARED_AT_ONCE = 1 << 20


# Where the events given stand in their whole stream (0-based): the number of events before them, when they are a
# run of it (a window of both streams); each one's place, when they are picked from it (a bucket of stocks).
Places = int | np.ndarray


def _place(places: Places, at: Any) -> Any:
    """The place in the whole stream of the event (or events) at `at` among those given."""
    return places + at if isinstance(places, int) else places[at]


def _from(places: Places, i: int) -> Places:
    """The places of the events given from the i-th on."""
    return places + i if isinstance(places, int) else places[i:]


def exact(got: pd.DataFrame, ref: pd.DataFrame, kinds: Kinds, fields: tuple[str, ...], key: list[str],
          got_places: Places = 0, ref_places: Places = 0, name_first: bool = True) -> tuple[dict[str, int],
                                                                                        dict[str, Any] | None]:
    """Events matched by key (event_key: seq and stock, a level change's side and price too) — and their order
    among events of the same key —, never by position: one event missing is one missing; a matched one is wrong
    when any of `fields` differs, and out of order when it arrives after a later event of its own stock. (counts
    of DIFFERENCES, the first difference in stream order). got_places, ref_places: where the events of each stand
    in their whole stream (a part of both, gateways/in_parts.py): the first difference is ordered and numbered in
    the whole stream; name_first False: not named (a part after the one that named it: naming looks up its
    message's type)."""
    if len(got) == len(ref):
        mine, theirs = _columns(got, [*key, *fields]), _columns(ref, [*key, *fields])
        if np.array_equal(mine, theirs):
            return dict.fromkeys(DIFFERENCES, 0), None  # the reference's events in its order: nothing to match
        if np.array_equal(mine[:, :len(key)], theirs[:, :len(key)]):
            # The same events in the same order, some fields wrong (a broken book): each event is matched with its
            # place's, none missing, extra or out of order; counted row by row, the first in stream order named
            # alone (5 M messages at 5 levels, every 100th event wrong: merged by key 11.1 s, a part at a time 20 s).
            wrong = np.flatnonzero((mine[:, len(key):] != theirs[:, len(key):]).any(axis=1))
            counts = {**dict.fromkeys(DIFFERENCES, 0), "wrong": len(wrong)}
            if not name_first:
                return counts, None
            i = int(wrong[np.lexsort((_place(ref_places, wrong), mine[wrong, 0]))[0]])  # by seq, then place
            return counts, _by_key(got.iloc[i:i + 1], ref.iloc[i:i + 1], kinds, fields, key, _from(got_places, i),
                                   _from(ref_places, i), True)[1]
    return _by_key(got, ref, kinds, fields, key, got_places, ref_places, name_first)


def _stock_seq_keys(ref_stocks: np.ndarray, ref_seqs: np.ndarray, got_stocks: np.ndarray,
                    got_seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One integer an event that orders both streams' events by stock, then seq: the two side by side when they
    fit 64 bits (a stock below 2^23, a seq below 2^40), else their ranks among both streams' values."""
    stocks, seqs = np.concatenate([ref_stocks, got_stocks]), np.concatenate([ref_seqs, got_seqs])
    if len(stocks) and not (0 <= stocks.min() and stocks.max() < 1 << 23 and 0 <= seqs.min() and seqs.max() < 1 << 40):
        stocks, seqs = (np.unique(values, return_inverse=True)[1].astype(np.int64) for values in (stocks, seqs))
    keys = stocks << 40 | seqs
    return keys[:len(ref_stocks)], keys[len(ref_stocks):]


def _by_stock(stocks: np.ndarray) -> np.ndarray:
    """The events' order by stock, each stock's in stream order: a radix sort for stocks that fit 16 bits (locates
    do; 7 times as fast as a merge sort of 64-bit values)."""
    small = len(stocks) == 0 or (0 <= stocks.min() and stocks.max() < 1 << 16)
    return np.argsort(stocks.astype(np.uint16) if small else stocks, kind="stable")


def _ascending(values: np.ndarray) -> bool:
    return bool(np.all(values[1:] >= values[:-1]))


def _last_of_each(stocks: np.ndarray, by_stock: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stocks, ascending, and where each one's last event stands (by_stock: _by_stock's order)."""
    ordered = stocks[by_stock]
    ends = np.flatnonzero(np.r_[ordered[1:] != ordered[:-1], True]) if len(ordered) else np.zeros(0, np.int64)
    return ordered[ends], by_stock[ends]


def state(got: pd.DataFrame, ref: pd.DataFrame, kinds: Kinds, fields: tuple[str, ...],
          got_places: Places = 0) -> tuple[dict[str, int], dict[str, Any] | None]:
    """The state check (counts of DIFFERENCES, the first difference in stream order): each event received must
    equal the reference's book of its stock (`fields`) at its seq, wrong otherwise; a stock whose last state
    received is not the reference's last counts as one missing; a state older than one of its stock received
    before it is out of order. Nothing is extra. Every figure is a stock's own, so streams may be judged a few
    stocks at a time (gateways/in_parts.py): got_places, where the events received stand in their whole stream."""
    # In numpy, each stream ordered by stock once (a radix sort), the received events looked up in that order: merged
    # as-of by stock in pandas (the received events sorted by seq, every field of both in the merge), a bucket of
    # 2 M events took 2.3 s.
    book = list(fields)
    ref_stocks, ref_seqs = ref["stock"].to_numpy(np.int64), ref["seq"].to_numpy(np.int64)
    got_stocks, got_seqs = got["stock"].to_numpy(np.int64), got["seq"].to_numpy(np.int64)
    ref_keys, got_keys = _stock_seq_keys(ref_stocks, ref_seqs, got_stocks, got_seqs)
    mine, theirs = _columns(got, book), _columns(ref, book)
    ref_by_stock, got_by_stock = _by_stock(ref_stocks), _by_stock(got_stocks)
    # Each event received against its stock's last reference event at or before its seq (the last of equal ones
    # in stream order), or against an empty book when there is none. The reference is in seq order, as the
    # simulation writes it, or is sorted so.
    by_key, sorted_keys = ref_by_stock, ref_keys[ref_by_stock]
    if not _ascending(sorted_keys):
        by_key = np.argsort(ref_keys, kind="stable")
        sorted_keys = ref_keys[by_key]
    at = np.empty(len(got), np.int64)
    at[got_by_stock] = np.searchsorted(sorted_keys, got_keys[got_by_stock], side="right") - 1
    held = at >= 0
    held[held] = ref_stocks[by_key[at[held]]] == got_stocks[held]
    bad = np.empty(len(got), bool)
    for start in range(0, len(got), COMPARED_AT_ONCE):
        part = slice(start, start + COMPARED_AT_ONCE)
        expected = np.zeros((len(mine[part]), len(book)), mine.dtype)
        expected[held[part]] = theirs[by_key[at[part][held[part]]]]
        bad[part] = (mine[part] != expected).any(axis=1)
    # A stock's last state, each stream's last event of it in stream order.
    ref_stock, ref_last = _last_of_each(ref_stocks, ref_by_stock)
    got_stock, got_last = _last_of_each(got_stocks, got_by_stock)
    k = np.minimum(np.searchsorted(got_stock, ref_stock), max(len(got_stock) - 1, 0))
    found = (got_stock[k] == ref_stock) if len(got_stock) else np.zeros(len(ref_stock), bool)
    differs = np.ones(len(ref_stock), bool)
    differs[found] = (theirs[ref_last[found]] != mine[got_last[k[found]]]).any(axis=1)
    # Out of order: a seq below the highest of its stock's events received before it. Ordered by stock, a running
    # maximum of the keys restarts at each stock, whose keys are all above the stock's before.
    keys, stocks = got_keys[got_by_stock], got_stocks[got_by_stock]
    running = np.maximum.accumulate(keys) if len(keys) else keys
    late = np.zeros(len(got), bool)
    late[got_by_stock[1:]] = (stocks[1:] == stocks[:-1]) & (keys[1:] < running[:-1])
    counts = {"missing": int(differs.sum()), "extra": 0, "wrong": int(bad.sum()), "out_of_order": int(late.sum())}
    first_late = int(np.flatnonzero(late)[0]) if late.any() else None
    first_bad = int(np.flatnonzero(bad)[0]) if bad.any() else None
    if first_late is None and first_bad is None:
        return counts, None
    is_late = first_bad is None or (first_late is not None and first_late < first_bad)
    at = first_late if is_late else first_bad
    row = got.iloc[at]
    place = int(_place(got_places, at))
    first = {"kind": "out of order" if is_late else "wrong", "seq": int(row["seq"]), "stock": int(row["stock"]),
             "message": kinds.get(int(row["seq"]), "?"), "stream": "received", "index": place, "event": place + 1,
             "expected": "the stock's states in seq order" if is_late else
             "the reference book of its stock at its seq",
             "got": _event_words(row, kinds) + (", after a state of the stock at a later seq" if is_late else "")}
    return counts, first


def _one_key(keys: np.ndarray) -> np.ndarray:
    """Rows of key columns as one int64 each, in the same order: the columns side by side when they fit 63 bits (a
    BBO or depth event's seq and stock), else the rows' ranks (a level change's price too, on a long day)."""
    if not len(keys):
        return np.zeros(0, np.int64)
    low, high = keys.min(axis=0), keys.max(axis=0)
    bits = [int(h - lo).bit_length() for lo, h in zip(low.tolist(), high.tolist())]
    if sum(bits) > 63:
        return np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
    one = np.zeros(len(keys), np.int64)
    for column, lo, width in zip(keys.T, low, bits):
        one = one << width | (column - lo)
    return one


def _matched(ref_keys: np.ndarray, got_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both streams' events matched by key and their order among events of that key (the n-th of a key received is
    the reference's n-th), as an outer join: each joined row's place in the reference and in what was received (-1:
    not in it), the rows ordered by key, then that order."""
    keys = _one_key(np.concatenate([ref_keys, got_keys]))
    if not len(keys):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # A stable sort: a key's reference events first, then those received, each in stream order (both streams are
    # mostly in key order already: runs that the sort merges).
    order = np.argsort(keys, kind="stable")
    ordered, of_ref = keys[order], order < len(ref_keys)
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(keys)])
    in_ref = np.add.reduceat(of_ref, starts)
    # A key's n-th event of either stream is its n-th joined row (as many rows as the larger of its two counts).
    rows = np.maximum(in_ref, sizes - in_ref)
    first_row = np.cumsum(rows) - rows
    n = np.arange(len(keys)) - np.repeat(starts, sizes) - np.where(of_ref, 0, np.repeat(in_ref, sizes))
    row = np.repeat(first_row, sizes) + n
    at_ref, at_got = np.full(int(rows.sum()), -1, np.int64), np.full(int(rows.sum()), -1, np.int64)
    at_ref[row[of_ref]] = order[of_ref]
    at_got[row[~of_ref]] = order[~of_ref] - len(ref_keys)
    return at_ref, at_got


def _by_key(got: pd.DataFrame, ref: pd.DataFrame, kinds: Kinds, fields: tuple[str, ...], key: list[str],
            got_places: Places, ref_places: Places, name_first: bool) -> tuple[dict[str, int], dict[str, Any] | None]:
    """exact's matching of events by key, and the first difference's words."""
    # In numpy: matched by their keys alone (one sort of both), each event's fields then compared through its place
    # in its stream, a part at a time. As an outer merge in pandas (by key and each key's cumcount), a few dozen
    # events took 21 ms where this takes 1, and 3 M BBO events with two missing 8.6–10.6 s where this takes 2.7
    # (with every field in the merge, 3.55 M depth events of 5 levels took 8.7 GB).
    ref_keys, got_keys = _columns(ref, key).astype(np.int64), _columns(got, key).astype(np.int64)
    at_ref, at_got = _matched(ref_keys, got_keys)
    is_missing, is_extra = at_got < 0, at_ref < 0
    values_ref, values_got = _columns(ref, list(fields)), _columns(got, list(fields))
    is_wrong = np.zeros(len(at_ref), bool)
    matched = np.flatnonzero(~is_missing & ~is_extra)
    for start in range(0, len(matched), COMPARED_AT_ONCE):
        i = matched[start:start + COMPARED_AT_ONCE]
        is_wrong[i] = (values_ref[at_ref[i]] != values_got[at_got[i]]).any(axis=1)
    late_after = np.full(len(at_ref), -1, np.int64)
    received = matched[np.argsort(at_got[matched])]
    late_after[received] = _late(got_keys[at_got[received], 1], at_ref[received])  # key: seq, stock, …
    is_late = late_after >= 0
    counts = {"missing": int(is_missing.sum()), "extra": int(is_extra.sum()), "wrong": int(is_wrong.sum()),
              "out_of_order": int(is_late.sum())}
    differs = np.flatnonzero(is_missing | is_extra | is_wrong | is_late)
    if not len(differs) or not name_first:
        return counts, None
    # Stream order: by seq, then where it stands in the whole reference (or, for an extra event, in all that was
    # received), then by key.
    extra = is_extra[differs]
    in_stream, seqs = np.empty(len(differs), np.int64), np.empty(len(differs), np.int64)
    in_stream[extra], seqs[extra] = _place(got_places, at_got[differs[extra]]), got_keys[at_got[differs[extra]], 0]
    in_stream[~extra] = _place(ref_places, at_ref[differs[~extra]])
    seqs[~extra] = ref_keys[at_ref[differs[~extra]], 0]
    j = int(np.lexsort((in_stream, seqs))[0])
    i, where = int(differs[j]), int(in_stream[j])
    # The event as each stream that holds it has it: its key, then each field as f"{field}_ref" and f"{field}_got".
    keys = (got_keys[at_got[i]] if is_extra[i] else ref_keys[at_ref[i]]).tolist()
    row = {**dict(zip(key, keys)), **{f"{c}_{side}": int(values[at[i], k]) for side, values, at in
                                      (("ref", values_ref, at_ref), ("got", values_got, at_got)) if at[i] >= 0
                                      for k, c in enumerate(fields)}}
    what = ("missing" if is_missing[i] else "extra" if is_extra[i] else "wrong" if is_wrong[i] else "out of order")
    stream = "received" if what == "extra" else "reference"
    shown = lambda side: pd.Series({**{k: row[k] for k in key},  # noqa: E731
                                    **{c: row[f"{c}_{side}"] for c in fields}})
    expected = "(none: the reference has no such event)" if what == "extra" else _event_words(shown("ref"), kinds)
    received_words = "(none: never received)" if what == "missing" else _event_words(shown("got"), kinds)
    if what == "out of order":
        later = int(ref_keys[late_after[i], 0])
        expected += " before the stock's later events"
        received_words += (f", received as event #{int(_place(got_places, int(at_got[i]))) + 1:,}, after the "
                           f"stock's event of seq {later:,} (message {kinds.get(later, '?')})")
    first = {"kind": what, "seq": int(row["seq"]), "stock": int(row["stock"]),
             "message": kinds.get(int(row["seq"]), "?"), "stream": stream, "index": where, "event": where + 1,
             "expected": expected, "got": received_words}
    level = level_words(row, fields) if what == "wrong" else ""
    if level:
        first["level"] = level
    return counts, first


def check(events: pd.DataFrame, ref: pd.DataFrame, kinds: Kinds, mode: str,
          also: tuple[str, ...] = ()) -> dict[str, Any]:
    """missing, extra, wrong and (exact mode) out-of-order events counted apart, and the first difference in
    words (a wrong depth event: the first level that differs). The events are the reference's kind: BBO, or
    depth of N levels (columns(N)). also: columns beyond those that must agree too (exact mode; two builds' own
    BBO logs: their flags)."""
    cols = [c for c in ref.columns if c not in also]
    key = event_key(cols)
    book = tuple(c for c in cols if c not in key)
    names = [*cols, *also]
    # The events' columns read in place where they lead its columns (the compiled reader's: a depth stream's
    # 3.55 M events of 5 levels copied took 1.5 s).
    got = events.iloc[:, :len(names)] if events.columns.tolist()[:len(names)] == names else events[names]
    if not got.index.equals(pd.RangeIndex(len(got))):
        got = got.reset_index(drop=True)
    first: dict[str, Any] | None = None
    out_of_order = 0
    if mode == "exact":
        counts, first = exact(got, ref, kinds, (*book, *also), key)
        missing, extra, wrong, out_of_order = (counts[k] for k in DIFFERENCES)
    else:
        counts, first = state(got, ref, kinds, book)
        missing, extra, wrong, out_of_order = (counts[k] for k in DIFFERENCES)
    out: dict[str, Any] = {"mode": mode, "reference_events": len(ref), "events": len(got), "missing": missing,
                           "extra": extra, "wrong": wrong, "out_of_order": out_of_order,
                           "equal": missing == extra == wrong == out_of_order == 0}
    if first is not None:
        out["first_difference"] = first
    return out


def _stats(d: np.ndarray) -> dict[str, float]:
    """ns percentiles as the reports take them (the value at or above the rank: method "higher"), and the mean."""
    if not d.size:
        return {}
    out: dict[str, float] = {k: float(np.percentile(d, q, method="higher")) for k, q in PERCENTILES.items()}
    out.update({"count": int(d.size), "mean": float(d.mean()), "min": float(d.min()), "stddev": float(d.std())})
    return out


# The hops of a black-box run, in path order: what itchbench cannot see inside the gateway is one hop.
HOPS = (("sender", "sender: due -> send called"),
        ("gateway", "send called -> BBO event received (the gateway and the network: inside not seen)"))


# An event cannot arrive before the message that makes it was sent. The collector's arrival stamps are the kernel's
# CLOCK_REALTIME moved onto CLOCK_MONOTONIC by their difference measured when read (gateways/collector.py): a clock
# slewed by NTP meanwhile (500 ppm, a read two seconds after the arrival) moves a stamp by up to this much.
RECEIVED_EARLY_SLACK_NS = 1_000_000
AFTER_THE_SEND = "each BBO event received after its message was sent (itchbench's stamps on both sides)"


def after_the_send(before: dict[str, Any]) -> dict[str, bool]:
    """The check of a run's balance that its BBO events came after what makes them (before_the_send's count): an
    event received before its message was sent was not made from the feed the run sent — a recorded output played
    back, the capture read from disk — and its latency is not the gateway's. Named as NOT BALANCED says it."""
    by_read = before.get("held_by_read", 0)
    how = (f" ({by_read:,} of the {before['held']:,} events held by when the collector read them: CLOCK_REALTIME was "
           "set while they waited)" if by_read else "")
    if not before["events"]:
        return {AFTER_THE_SEND + how: True}
    return {f"{AFTER_THE_SEND}: {before['events']:,} of {before['held']:,} events received before their message was "
            f"sent (first: seq {before['first_seq']:,}, {hops.span_words(before['first_by_ns'])} before): not made "
            f"from the feed it was sent{how}": False}


def before_the_send(events: pd.DataFrame, stamps: tuple[np.ndarray, np.ndarray, np.ndarray],
                    after: int = 0) -> dict[str, Any] | None:
    """Of the events that can be held to the send of what makes them (stamps: hops.send_stamps), those received
    before it was sent: an event stamped with its arrival by that; one whose arrival the collector left out (a set
    of CLOCK_REALTIME while it waited: stamped minus when its read returned, collector.left_out_stamp) by that bound,
    which it came before — never wrongly early, and early whenever it was read before the send. {events (early),
    first_seq, first_by_ns, held, held_by_read (when some)}; None when no event can be held (none stamped or none
    of a message sent). after: as wire_to_wire's."""
    seq, _, sent = stamps
    e = events[(events["t_recv"] != 0) & (events["seq"] > after)]
    event_seq = e["seq"].to_numpy()
    at = np.searchsorted(seq, event_seq)
    found = (at < seq.size) & (seq[np.minimum(at, seq.size - 1)] == event_seq)
    if not found.any():
        return None
    t = e["t_recv"].to_numpy()[found]
    called = sent[at[found]]
    early = (np.abs(t) - called) < -RECEIVED_EARLY_SLACK_NS
    by_read = int((t < 0).sum())
    first = int(np.argmax(early))
    return {"events": int(early.sum()), "held": int(found.sum()),
            **({"first_seq": int(event_seq[found][first]), "first_by_ns": int(called[first] - abs(t[first]))}
               if early.any() else {}),
            **({"held_by_read": by_read} if by_read else {})}


def wire_to_wire(events: pd.DataFrame, send_log: Path, after: int = 0) -> dict[str, Any] | None:
    """Per BBO event: collector receive − the send of the packet (or line) that carried its seq, from the
    intended time (free of coordinated omission) and from the actual send; ns percentiles. Its hops add up:
    their means to the mean from the intended time. after: a late join's last message covered by its snapshot,
    whose events (seq at or below it) were made by the snapshot, not by a message sent: left out."""
    if not send_log.is_file() or events.empty or not (events["t_recv"] > 0).any():
        return None
    stamps = hops.send_stamps(send_log)
    seq, intended, sent = stamps
    e = events[(events["t_recv"] > 0) & (events["seq"] > after)]
    event_seq = e["seq"].to_numpy()
    at = np.searchsorted(seq, event_seq)
    found = (at < seq.size) & (seq[np.minimum(at, seq.size - 1)] == event_seq)
    t = e["t_recv"].to_numpy()[found]
    due, called = intended[at[found]], sent[at[found]]
    trend, served = Trend(), Trend()  # latency growth from the intended and from the actual send, against due
    trend.add(due, t - due)
    served.add(due, t - called)
    return {"events": int(found.sum()), "not_matched": int((~found).sum()),
            "before_sent": before_the_send(events, stamps, after),
            "from_intended": {**_stats(t - due), **trend.result()},
            "from_sent": {**_stats(t - called), **served.result()},
            "first_due_ns": int(intended.min()) if intended.size else 0, "last_received_ns": int(t.max()) if t.size else 0,
            "hops": [{"hop": name, "words": words, **_stats(d)}
                     for (name, words), d in zip(HOPS, (called - due, t - called))]}
