"""The BBO log's digest taken while the gateway writes it.

Reconciliation holds a run to its BBO log's digest and to where its stale
flags lie (logs.digest_and_stale): read after the gateway has ended, that is
a pass over the whole log on the run's wall time (50 M nasdaq-day messages:
187 MB of version-1 records, 0.3 s). A thread follows the log instead, a look
every few milliseconds: a slot is taken once an earlier look saw it whole (its
flags' written bit, which the writer stores last) and is read again after that
look, so that no field is taken from before the writer stored it. A version-2
log's slots are read back into records as they are taken (the last anchor
carried on, a high-shares slot held for its event). Once the gateway has ended
the rest is read from the closed log. Reconciliation takes the result only
when it covers exactly the slots of the finalized log.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import logs

_POLL_S = 0.005
_CHUNK = 1 << 16  # records read at a time from the closed log: 3 MiB
# Records read at a time while looking: the gateway keeps tens of MiB of zeros provisioned past its last record,
# and a look reads on until it meets one. In 3 MiB reads a look every 5 ms read the 187 MB log of 50 M nasdaq-day
# messages about six times over (the writer adds about 0.5 MB a look); in 192 KiB reads, about once and a half.
_LOOK = 1 << 12
_NICE = 10


@dataclass(frozen=True)
class FollowedDigest:
    """What the follower took: the digest and stale flags of the log's first `records` records, stored in its first
    `slots` slots (a version-1 log: the records themselves)."""
    digest: str
    stale: logs.StaleSeen
    records: int
    slots: int


class BboDigestFollower:
    """Follows a BBO log from its first record on, on a thread of its own off the CPUs to avoid."""

    def __init__(self, path: Path, *, avoid_cpus: frozenset[int] = frozenset()) -> None:
        self._path = Path(path)
        self._avoid = avoid_cpus
        self._ended = threading.Event()
        self._result: FollowedDigest | None = None
        self._thread = threading.Thread(target=self._follow, name="bbo-digest-follower", daemon=True)
        self._thread.start()

    def writer_ended(self) -> None:
        """The gateway's process has exited: the follower reads what is left of the closed log, and ends."""
        self._ended.set()

    def result(self) -> FollowedDigest | None:
        """Once writer_ended: the digest of the whole log; None when the log was not a whole, closed BBO log."""
        self._ended.set()
        self._thread.join()
        return self._result

    def _follow(self) -> None:
        cpus = os.sched_getaffinity(0) - self._avoid
        if cpus:
            os.sched_setaffinity(0, cpus)  # this thread only
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _NICE)
        try:
            with _opened(self._path, self._ended) as fd:
                if fd is None:
                    return
                taking = self._taking(fd)
                if taking is None:
                    return
                buf = np.empty(_CHUNK, taking.layout)
                whole = 0  # slots the last look saw whole: taken at the next read
                while not self._ended.is_set():
                    whole = self._take(fd, buf, taking, whole)
                    time.sleep(_POLL_S)
                # The gateway has exited and closed the log (its header says how many slots it holds, the file cut
                # to them): every slot in it is whole.
                head = logs.read_log(self._path, logs.KIND_BBO, header_only=True)
                count = int(head.header["record_count"])
                if not head.finalized or os.fstat(fd).st_size != logs.HEADER_SIZE + count * buf.itemsize \
                        or count < taking.read or head.stored.dtype != taking.layout:
                    return
                self._take(fd, buf, taking, count, look=False)
                if len(taking.held):  # a high-shares slot with no event after it: not a whole log
                    return
                self._result = FollowedDigest(*taking.digesting.result(), taking.digesting.records, taking.slots)
        except (OSError, logs.LogFormatError):
            self._result = None

    def _taking(self, fd: int) -> _Taking | None:
        """How the log stores its events (from its header, once the writer has written it), or None when the writer
        ended first."""
        while True:
            head = os.pread(fd, logs.HEADER_SIZE, 0)
            if len(head) == logs.HEADER_SIZE and head[:len(logs.MAGIC)] == logs.MAGIC:
                return _Taking(self._path, logs.read_log(self._path, logs.KIND_BBO, header_only=True))
            if self._ended.is_set():
                return None
            time.sleep(_POLL_S)

    @staticmethod
    def _take(fd: int, buf: np.ndarray, taking: _Taking, whole: int, *, look: bool = True) -> int:
        """The slots after those taken, up to `whole`, read now and taken into the digest. With look, reads on
        and returns how far the slots are whole now (for the next call: a slot is taken after a look that saw it
        whole); without, returns whole."""
        at = taking.read
        piece = buf[:_LOOK] if look else buf
        while True:
            got = os.preadv(fd, [piece.view(np.uint8)], logs.HEADER_SIZE + at * buf.itemsize) // buf.itemsize
            part = buf[:got]
            take = min(max(whole - at, 0), got)
            if take:
                taking.add(part[:take])
            if look:
                unwritten = np.flatnonzero((part["flags"] & logs.WRITTEN) == 0)
                if unwritten.size:
                    return max(at + int(unwritten[0]), whole)
            at += got
            if got < len(piece) or (not look and at >= whole):
                return max(at, whole) if look else whole


class _Taking:
    """A BBO log's slots taken into its digest part by part: a version-2 log's read back into records, the last
    anchor carried from one part to the next and a high-shares slot that ends a part held for the next (taken with
    its event); a version-1 log's records as they are."""

    def __init__(self, path: Path, head: logs.LogFile) -> None:
        self.log, self.layout = head, head.stored.dtype
        self.digesting = logs.Digesting()
        self.read = 0   # slots read from the log
        self.slots = 0  # of them taken (a held high-shares slot is not)
        self.held = np.zeros(0, self.layout)
        self._anchor: np.ndarray | None = None

    def add(self, part: np.ndarray) -> None:
        self.read += len(part)
        if not self.log.slots:
            self.digesting.add(part)
            self.slots = self.read
            return
        part = np.concatenate((self.held, part)) if len(self.held) else part
        ends_high = int(part["flags"][-1]) & logs.SLOT_KIND_MASK == logs.SLOT_HIGH_SHARES
        whole = part[:-1] if ends_high else part
        records, self._anchor = logs.decode_slots(self.log, whole, self.slots, self._anchor)
        self.digesting.add(records)
        self.held = part[-1:].copy() if ends_high else part[:0]
        self.slots = self.read - len(self.held)


class _opened:
    """The log's file once the gateway has made it (None if the gateway ends first)."""

    def __init__(self, path: Path, ended: threading.Event) -> None:
        self._path, self._ended, self._fd = path, ended, -1

    def __enter__(self) -> int | None:
        while self._fd < 0:
            try:
                self._fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                if self._ended.is_set():
                    return None
                time.sleep(_POLL_S)
        return self._fd

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            os.close(self._fd)
