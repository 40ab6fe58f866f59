"""Who opened a file while a gateway ran (runs/opens.py): fanotify's openers placed under the process that started
them, the check that catches a gateway reading a recording instead of its capture (the zoo's
file-output-from-a-recording)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from itchbench.runs.opens import OpenWatch, parents

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="fanotify needs CAP_SYS_ADMIN")


def test_a_process_s_parents_lead_to_this_one():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        chain = parents(child.pid)
        assert chain is not None and chain[0] == child.pid and os.getpid() in chain
    finally:
        child.kill()
        child.wait()
    assert parents(child.pid) is None  # gone: nothing to place


@needs_root
def test_opens_are_placed_under_the_process_that_made_them(tmp_path):
    watched, other = tmp_path / "capture.pcap", tmp_path / "recording.pcap"
    watched.write_bytes(b"x" * 100)
    other.write_bytes(b"x" * 100)
    reader = [sys.executable, "-c", "import sys, time; open(sys.argv[1], 'rb').read(); time.sleep(0.5)"]
    with OpenWatch(watched) as watch:
        opener = subprocess.Popen([*reader, str(watched)])
        elsewhere = subprocess.Popen([*reader, str(other)])  # reads another file with the same bytes
        opener.wait()
        elsewhere.wait()
    seen = watch.seen
    assert seen.error == "" and seen.by(opener.pid) == 1 and seen.by(elsewhere.pid) == 0
    assert seen.by(os.getpid()) == 1 and len(seen.chains) + seen.unplaced == 1


@needs_root
def test_an_opener_that_ends_at_once_is_still_placed(tmp_path):
    """A gateway reading through `cat {capture} | …`: the cat ends as soon as it has read. Held until placed
    (permission events), it is placed under the process that started it, not counted apart."""
    watched = tmp_path / "capture.pcap"
    watched.write_bytes(b"x" * 100)
    with OpenWatch(watched) as watch:
        starter = subprocess.Popen(["bash", "-c", f"cat {watched} > /dev/null; head -c 1 {watched} > /dev/null"])
        starter.wait()
    seen = watch.seen
    assert seen.error == "" and seen.held, "this kernel has fanotify permission events (checked in CI's VM)"
    assert seen.by(starter.pid) == 2 and seen.unplaced == 0


@needs_root
def test_the_harness_opening_the_file_while_holding_python_s_lock_does_not_hang(tmp_path):
    """The opener waits on the watch; a watch that was a thread of the harness needed Python's lock, which an open
    made from C without letting go of it (ctypes.PyDLL) held: the harness hung. The watch is a process of its
    own. Run in a child with a deadline, so that a hang fails the test instead of the suite."""
    watched = tmp_path / "capture.pcap"
    watched.write_bytes(b"x" * 100)
    code = ("import ctypes, os, sys\n"
            "from itchbench.runs.opens import OpenWatch\n"
            "with OpenWatch(sys.argv[1]) as w:\n"
            "    fd = ctypes.PyDLL(None).open(sys.argv[1].encode(), os.O_RDONLY)\n"
            "    os.close(fd)\n"
            "print(w.seen.by(os.getpid()), w.seen.unplaced)\n")
    done = subprocess.run([sys.executable, "-c", code, str(watched)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.split() == ["1", "0"], done.stdout + done.stderr
