"""The report's second pass counted while the gateway runs.

A thread follows the gateway's latency log through its index (latency.idx:
a record a block of 65,536 messages, written after the block's slots) and
counts each block with the compiled pass as soon as the block is whole, on a
CPU the gateway's hot thread is not pinned to. The blocks it has not reached
when the gateway ends (a compressed day's decompression can leave it a CPU
short) are then counted in parts on as many threads as it has CPUs, at most
4, and added as the pass after the run adds its parts. When the gateway has
ended, the report takes these counts instead of reading the log again
(analysis/latency_pass.py takes them only if they cover the log the first
pass finds, with the plan that pass calls for; otherwise it says so and reads
the log). What the pass cannot know before the end is learnt as it goes: the
time bins widen as the span grows, to the bins a pass knowing the span
chooses; the largest locate only sizes the dense part of the by-symbol
counts; the stamps the hop chains join are those of the first block.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import drawing, logs

if TYPE_CHECKING:
    from . import latency_pass

# The by-symbol counts are dense up to at least this locate (more when the first block shows a larger one).
_LOCATES_GUESSED = 4095
_POLL_S = 0.002
_NICE = 10
_FLAGS_AT = logs.LATENCY_BLOCK_DTYPE.fields["flags"][1]


class LatencyFollower:
    """Follows run_dir's latency log from its first block on, on a thread of its own."""

    def __init__(self, run_dir: Path, warmup_messages: int, *, avoid_cpus: frozenset[int] = frozenset()) -> None:
        self._run_dir = Path(run_dir)
        self._warmup = warmup_messages
        self._avoid = avoid_cpus
        self._state = ctypes.c_uint32(0)    # 0: the gateway runs; 1: it has ended; 2: abandoned
        self._counted = ctypes.c_uint64(0)  # messages counted so far: the compiled pass keeps it up to date
        self._result: latency_pass.Followed | None = None
        self._thread = threading.Thread(target=self._follow, name="latency-follower", daemon=True)
        self._thread.start()

    def writer_ended(self) -> None:
        """The gateway's process has exited: the pass counts every block its index then holds, and ends."""
        self._state.value = 1

    def result(self) -> latency_pass.Followed | None:
        """Once the pass has ended (after writer_ended), what it counted; None: no index came."""
        self._thread.join()
        return self._result

    def abandon(self) -> None:
        """The run failed: the pass stops where it is and its counts are dropped."""
        self._state.value = 2
        self._thread.join()
        if self._result is not None and self._result.scan is not None:
            self._result.scan.close()
        self._result = None

    def _follow(self) -> None:
        cpus = os.sched_getaffinity(0) - self._avoid
        if cpus:
            os.sched_setaffinity(0, cpus)  # this thread only
        # The report's drawing process, started first so its import of matplotlib (0.5 s) runs beside the gateway,
        # on the CPUs this thread keeps to (a process inherits the thread's); not niced, or it would still be
        # importing when the gateway ends. One that cannot start is the report's to start, or to say it cannot.
        with contextlib.suppress(OSError):
            drawing.start_drawer()
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _NICE)
        # Imported here, on this thread: pandas and the rest take a second the run need not wait for.
        latency_pass = importlib.import_module(f"{__package__}.latency_pass")
        native = importlib.import_module(f"{__package__}.native")
        try:
            first = self._first_block()
            if first is None:
                return  # no index came: a gateway that writes none, or one that ended before its first block
            lat_path = self._run_dir / "latency.lat"
            lat = logs.read_latency(lat_path, header_only=True)
            if not latency_pass.compiled_scan_reads(lat):
                self._result = latency_pass.Followed(failed=f"a version-{lat.header['version']} latency log")
                return
            stages = latency_pass.stage_list(lat)
            sets = [m for m in range(128) if int(first["stamp_sets"][m >> 6]) >> (m & 63) & 1]
            plan = latency_pass.ScanPlan.of(
                self._run_dir, stages, self._warmup, True, 0, latency_pass.TimeBins.of(None, None),
                found_stages=(1 << len(stages)) - 1, set_stamps=latency_pass.set_stamps_of(sets),
                max_locate=max(int(first["max_locate"]), _LOCATES_GUESSED))
            scan, covered = native.Scan.following(str(lat_path), latency_pass.scan_source(lat), plan.params,
                                                  str(self._run_dir / "latency.idx"), self._state, self._counted,
                                                  len(plan.book_chain))
            self._result = latency_pass.Followed(plan, scan, covered)
        except (OSError, ValueError, native.NativeScanError) as e:  # LogFormatError is a ValueError
            self._result = latency_pass.Followed(failed=f"{type(e).__name__}: {e}")

    def _first_block(self) -> np.void | None:
        """The index's first record once it is written; None if the gateway ends (or the pass is abandoned)
        without one."""
        path = self._run_dir / "latency.idx"
        at = logs.HEADER_SIZE
        while True:
            ended = self._state.value != 0
            if self._state.value == 2:
                return None
            try:
                with open(path, "rb") as f:
                    f.seek(at)
                    raw = f.read(logs.LATENCY_BLOCK_DTYPE.itemsize)
            except FileNotFoundError:
                raw = b""
            if len(raw) == logs.LATENCY_BLOCK_DTYPE.itemsize and raw[_FLAGS_AT] & logs.WRITTEN:
                # Read again: the writer stores the flags last, so every field read after them is whole.
                with open(path, "rb") as f:
                    f.seek(at)
                    return np.frombuffer(f.read(len(raw)), logs.LATENCY_BLOCK_DTYPE)[0]
            if ended:
                return None
            time.sleep(_POLL_S)
