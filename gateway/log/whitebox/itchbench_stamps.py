"""itchbench white box for a gateway written in Python: per-message stage
stamps in itchbench's latency-log format (gateway/log/FORMAT.md, kind 1,
version 3, CLOCK_MONOTONIC ns), the same file gateway/log/whitebox/
itchbench_stamps.h writes. One file, standard library only: copy it into
your gateway, write "{out}/latency.lat" (or $ITCHBENCH_OUT/latency.lat) and
set white_box = true in your itchbench.toml (docs/gateway-contract.md).

    log = LatencyLog(path, READ | DECODED | BOOK)
    log.record(seq, msg[0:1], stock_locate, BBO_EVENT if changed else 0, (t_read, t_decoded, t_book))
    log.close()   # exact count, finalized

now_ns() is CLOCK_MONOTONIC, the clock itchbench's senders and collectors
stamp. Records are buffered: a crash loses at most the buffer, and the log
reads as not finalized.
"""

from __future__ import annotations

import struct
import time
from typing import BinaryIO, Sequence

KERNEL, READ, DECODED, BOOK, PUBLISHED = 1, 2, 4, 8, 16
BBO_EVENT, UNKNOWN_REF, REJECTED = 0x01, 0x02, 0x04
_WRITTEN = 0x80
_HEADER = struct.Struct("<8sHHHHHHIQQ32s48sB7x")
_HEAD = struct.Struct("<QQHcB4x")


def now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class LatencyLog:
    def __init__(self, path: str, stages: int, run_id: str = "", commit: str = "") -> None:
        self.stages = stages & 31
        self.count = bin(self.stages).count("1")
        self.records = 0
        self._ids = (run_id.encode()[:31], commit.encode()[:47])
        self._stamps = struct.Struct(f"<{self.count}Q")
        self._file: BinaryIO = open(path, "wb")
        self._file.write(self._header(finalized=False))

    def _header(self, finalized: bool) -> bytes:
        return _HEADER.pack(b"ITCHBLOG", 3, 128, 24 + 8 * self.count, 1, 1, 0, 1 if finalized else 0,
                            self.records if finalized else 0, 0, *self._ids, self.stages)

    def record(self, seq: int, msg_type: bytes, stock_locate: int, flags: int, stamps: Sequence[int]) -> None:
        """One message; stamps: one CLOCK_MONOTONIC ns value per stage of the log, in stage order (kernel,
        read, decoded, book, published), 0 where the stage did not happen."""
        self._file.write(_HEAD.pack(seq, 0, stock_locate, msg_type[:1], flags | _WRITTEN) + self._stamps.pack(*stamps))
        self.records += 1

    def close(self) -> None:
        self._file.seek(0)
        self._file.write(self._header(finalized=True))
        self._file.close()
