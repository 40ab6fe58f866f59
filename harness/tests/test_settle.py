"""harness/benchmarks/settle.py: the capture is dropped from the page cache
and read through to its end before a timed run. A FIFO stands in for the
file where what was read is counted: its writer finishes only if every byte
it writes is taken. The page cache is looked at with mincore(2)."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import tempfile
import threading
from pathlib import Path

from itchbench import paths

sys.path.insert(0, str(paths.repo_root() / "harness" / "benchmarks"))
from settle import drop_cached, settle  # noqa: E402

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


def _cached_bytes(path: Path) -> int:
    """How much of the file the page cache holds (mincore over a private mapping of it, whose pages are the page
    cache's until written)."""
    size = path.stat().st_size
    pages = -(-size // mmap.PAGESIZE)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
    with path.open("rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) as m:
        vec = (ctypes.c_ubyte * pages)()
        anchor = ctypes.c_char.from_buffer(m)
        try:
            if libc.mincore(ctypes.addressof(anchor), size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore")
        finally:
            del anchor  # the mapping cannot close while a ctypes object points into it
    return sum(b & 1 for b in vec) * mmap.PAGESIZE


def test_a_file_just_written_is_dropped_then_read_back_whole():
    # On the build folder's disk, where benchmarks keep their captures: a tmpfs (a TMPDIR may be one) has no
    # backing store to drop its pages to.
    with tempfile.TemporaryDirectory(dir=paths.build_dir()) as tmp:
        capture = Path(tmp) / "capture.itch"
        capture.write_bytes(os.urandom(SIZE))  # its pages are in the page cache, as a generator leaves them
        whole = -(-SIZE // mmap.PAGESIZE) * mmap.PAGESIZE
        os.sync()
        assert _cached_bytes(capture) == whole
        with capture.open("rb") as f:
            drop_cached(f.fileno())
        assert _cached_bytes(capture) == 0
        settle(capture)
        assert _cached_bytes(capture) == whole
