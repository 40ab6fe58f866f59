"""Progress of long work — a day-long simulation, then its report: how much is done, the rate and the time left,
said on the terminal at most every INTERVAL_S and appended line by line to a file (the run directory's
progress.log). A CI log can show the file; an interrupted run leaves it behind as the last thing it reached."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

INTERVAL_S = 5.0
HEAD_BYTES = 4 << 20  # read of a binary ITCH file to estimate its message count


class Progress:
    """One piece of work of `total` units (None: not known beforehand, no time left said)."""

    def __init__(self, what: str, total: int | None, *, estimated: bool = False,
                 say: Callable[[str], None] | None = None, log: Path | None = None, unit: str = "messages",
                 interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.what, self.total, self.estimated, self.say, self.log, self.unit = what, total, estimated, say, log, unit
        self.interval_s, self.clock = interval_s, clock
        self.started = clock()
        self.last_said = self.started
        self.done = 0
        self.finished = False

    def line(self, done: int, final: bool = False) -> str:
        elapsed = self.clock() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        text = f"{self.what}: {done:,}"
        if self.total:
            text += f" of {'~' if self.estimated else ''}{self.total:,} {self.unit} ({100 * min(done / self.total, 1):.0f} %)"
        else:
            text += f" {self.unit}"
        # Millions a second, or units a second where they come slowly (buckets, files).
        text += f", {rate / 1e6:.2f} M/s" if rate >= 1e4 or not done else f", {rate:.1f}/s"
        text += f", {elapsed:.{1 if final else 0}f} s"  # the end to a tenth: a part's time
        if self.total and rate > 0 and done < self.total and not final:
            text += f", about {(self.total - done) / rate:.0f} s left"
        return text

    def update(self, done: int) -> None:
        self.done = done
        now = self.clock()
        if now - self.last_said >= self.interval_s:
            self.last_said = now
            self._emit(self.line(done))

    def finish(self, done: int | None = None, how: str = "done") -> None:
        """Said once, whatever the interval; a second call says nothing."""
        if self.finished:
            return
        self.finished = True
        self.done = self.done if done is None else done
        self._emit(f"{self.line(self.done, final=True)} — {how}")

    def next(self, what: str, total: int | None, unit: str, how: str = "done") -> None:
        """This piece finished (`how`), and the next of the same work begun: counted afresh, said alike."""
        self.finish(how=how)
        self.what, self.total, self.unit, self.estimated = what, total, unit, False
        self.started = self.last_said = self.clock()
        self.done, self.finished = 0, False

    def _emit(self, text: str) -> None:
        if self.say is not None:
            self.say(f"  {text}")
        if self.log is not None:
            with open(self.log, "a") as f:
                f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {text}\n")


def estimated_itch_messages(path: Path) -> int | None:
    """A plain binary ITCH file's message count, estimated from its size and the mean length of the messages in its
    first HEAD_BYTES (2-byte big-endian length before each); None when the head holds no whole message."""
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    at = count = 0
    while at + 2 <= len(head):
        length = int.from_bytes(head[at:at + 2], "big")
        if length == 0 or at + 2 + length > len(head):
            break
        at += 2 + length
        count += 1
    if not count:
        return None
    size = path.stat().st_size
    return count if at >= size else round(size * count / at)


@dataclass(frozen=True)
class Finished:
    """A piece of work as its last line in a progress.log said it ended."""
    what: str
    done: int
    seconds: float
    how: str


# Progress.line() then " — how", after the log's UTC time: what finished, how much, in how long.
_FINISHED = re.compile(r"^\S+ (?P<what>.+?): (?P<done>[\d,]+)[^\n]*?, [\d.]+ ?M?/s, (?P<seconds>[\d.]+) s — (?P<how>.+)$")


def finished(log: Path) -> list[Finished]:
    """The pieces of work a progress.log says ended, in order (a piece still running, or cut off, is not one)."""
    out = []
    for text in log.read_text().splitlines() if log.is_file() else []:
        m = _FINISHED.match(text)
        if m:
            out.append(Finished(m["what"], int(m["done"].replace(",", "")), float(m["seconds"]), m["how"]))
    return out
