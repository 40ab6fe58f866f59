"""The BBO log's digest taken while the gateway writes it.

Reconciliation holds a run to its BBO log's digest and to where its stale
flags lie (logs.digest_and_stale): read after the gateway has ended, that is
a pass over the whole log on the run's wall time (50 M nasdaq-day messages:
187 MB, 0.3 s). A thread follows the log instead, a look every few
milliseconds: a record is taken once an earlier look saw it whole (its flags'
written bit, which the writer stores last) and is read again after that look,
so that no field is taken from before the writer stored it. Once the gateway
has ended the rest is read from the closed log. Reconciliation takes the
result only when it covers exactly the records of the finalized log.
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
    """What the follower took: the digest and stale flags of the log's first `records` records."""
    digest: str
    stale: logs.StaleSeen
    records: int


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
        digesting = logs.Digesting()
        buf = np.empty(_CHUNK, logs.BBO_DTYPE)
        whole = 0  # records the last look saw whole: taken at the next read
        try:
            with _opened(self._path, self._ended) as fd:
                if fd is None:
                    return
                while not self._ended.is_set():
                    whole = self._take(fd, buf, digesting, whole)
                    time.sleep(_POLL_S)
                # The gateway has exited and closed the log (its header says how many records it holds, the file
                # cut to them): every record in it is whole.
                head = logs.read_log(self._path, logs.KIND_BBO, header_only=True)
                count = int(head.header["record_count"])
                if not head.finalized or os.fstat(fd).st_size != logs.HEADER_SIZE + count * buf.itemsize \
                        or count < digesting.records:
                    return
                self._take(fd, buf, digesting, count, look=False)
                self._result = FollowedDigest(*digesting.result(), digesting.records)
        except (OSError, logs.LogFormatError):
            self._result = None

    @staticmethod
    def _take(fd: int, buf: np.ndarray, digesting: logs.Digesting, whole: int, *, look: bool = True) -> int:
        """The records after those taken, up to `whole`, read now and taken into the digest. With look, reads on
        and returns how far the records are whole now (for the next call: a record is taken after a look that
        saw it whole); without, returns whole."""
        at = digesting.records
        piece = buf[:_LOOK] if look else buf
        while True:
            got = os.preadv(fd, [piece.view(np.uint8)], logs.HEADER_SIZE + at * buf.itemsize) // buf.itemsize
            part = buf[:got]
            take = min(max(whole - at, 0), got)
            if take:
                digesting.add(part[:take])
            if look:
                unwritten = np.flatnonzero((part["flags"] & logs.WRITTEN) == 0)
                if unwritten.size:
                    return max(at + int(unwritten[0]), whole)
            at += got
            if got < len(piece) or (not look and at >= whole):
                return max(at, whole) if look else whole


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
