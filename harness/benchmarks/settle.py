"""What every timed run of a benchmark script starts from: the page cache's
dirty pages written back, and the capture cached as a file read from disk is.

Without the sync, a run pays for writing back the logs of the run before it.
Without the read, whichever run comes first after a pause pays for the disk:
these VMs page out memory left idle for about half a minute (DAMON
reclamation, page cache included), and a first round of a 3 M-message
capture was seen at a quarter of the speed of the rounds after it.

The capture is dropped from the page cache before it is read back. A file
just written (by itch-synth, by a copy) sits in the page cache in its
writer's small folios; read from disk (8 MiB readahead here) it comes back
mostly in 2 MiB folios, which a mapping takes whole. Which of the two a run
found was chance, whether the VM had reclaimed the file since it was
generated, and it moved both sides: on nasdaq-day 5 M the gateway's loop
spent about 10 % mapping and releasing 4 KiB pages of the capture
(MADV_POPULATE_READ, MADV_DONTNEED; perf, the timed loop only) and under
1 % with large folios, and the peer's faults shrank too. Dropping first
makes every run find the capture as any file read from disk: a user's
capture, not one just generated.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_CHUNK = 1 << 20


def settle(capture: Path) -> None:
    """Sync, drop the capture from the page cache, and read it back through once."""
    os.sync()
    with capture.open("rb", buffering=0) as f:
        drop_cached(f.fileno())
        buf = bytearray(_CHUNK)
        while f.readinto(buf):
            pass


def drop_cached(fd: int) -> None:
    """Drop a regular file's clean pages from the page cache (the sync wrote back any dirty ones; pages another
    process maps stay). Anything else, a pipe standing in for a capture, has no pages to drop."""
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
