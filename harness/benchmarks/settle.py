"""What every timed run of a benchmark script starts from: the page cache's
dirty pages written back, and the capture cached.

Without the sync, a run pays for writing back the logs of the run before it.
Without the read, whichever run comes first after a pause pays for the disk:
these VMs page out memory left idle for about half a minute (DAMON
reclamation, page cache included), and a first round of a 3 M-message
capture was seen at a quarter of the speed of the rounds after it.
"""

from __future__ import annotations

import os
from pathlib import Path

_CHUNK = 1 << 20


def settle(capture: Path) -> None:
    """Sync, then read the capture through once so that the run finds it in the page cache."""
    os.sync()
    buf = bytearray(_CHUNK)
    with capture.open("rb", buffering=0) as f:
        while f.readinto(buf):
            pass
