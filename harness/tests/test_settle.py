"""harness/benchmarks/settle.py: the capture is read through to its end before
a timed run. A FIFO stands in for the file, so what was read can be counted:
its writer finishes only if every byte it writes is taken."""

from __future__ import annotations

import os
import sys
import threading

from itchbench import paths

sys.path.insert(0, str(paths.repo_root() / "harness" / "benchmarks"))
from settle import settle  # noqa: E402

SIZE = 3 * (1 << 20) + 12345  # more than one read, not a whole number of them


def test_the_capture_is_read_to_its_end(tmp_path):
    fifo = tmp_path / "capture.pcap"
    os.mkfifo(fifo)
    written: list[int] = []

    def write() -> None:
        with open(fifo, "wb") as f:
            written.append(f.write(b"\x5a" * SIZE))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    settle(fifo)  # returns at end of file: the writer closed after its last byte was taken
    writer.join(timeout=10)
    assert not writer.is_alive() and written == [SIZE]
