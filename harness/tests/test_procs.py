"""A run's children (runs/procs.py) die with the harness, but not with the thread that happened to start them: the
kernel sends the parent-death signal when the forking thread ends, and a broker restarted as a fault is started
from a thread that returns at once."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from itchbench.runs.procs import ProcessGroup, descendants


def _gone(tid: int) -> bool:
    return not os.path.exists(f"/proc/self/task/{tid}")


def test_a_child_started_from_a_thread_outlives_the_thread():
    with ProcessGroup() as group:
        started = {}

        def start() -> None:
            started["proc"] = group.start("sleeper", ["sleep", "infinity"])
            started["tid"] = threading.get_native_id()
        t = threading.Thread(target=start)
        t.start()
        t.join()
        deadline = time.monotonic() + 30  # the thread's task leaves /proc after the kernel has sent its children's
        while not _gone(started["tid"]):  # parent-death signals: from here, a SIGKILL would already be pending
            assert time.monotonic() < deadline, "the starting thread never ended"
            time.sleep(0.01)
        proc = started["proc"]
        # Alive to be stopped as asked: SIGTERM ends it, not the SIGKILL its starting thread's end would have sent.
        assert group.stop(proc) == -signal.SIGTERM


def test_a_child_started_from_the_main_thread_is_stopped_as_asked():
    with ProcessGroup() as group:
        proc = group.start("sleeper", ["sleep", "infinity"])
        assert group.stop(proc) == -signal.SIGTERM


def test_descendants_are_every_process_below_however_deep():
    # A shell with two children, one of them a shell with a child of its own: four processes, as ps sees them. In
    # a session of their own, killed together whatever the test finds: the sleeps would outlive their shells.
    with ProcessGroup() as group:
        top = group.start("tree", ["bash", "-c", "sleep infinity & bash -c 'sleep infinity & wait' & wait"],
                          start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while len(descendants(top.pid)) < 4:
                assert time.monotonic() < deadline, f"the tree never grew: {descendants(top.pid)}"
                time.sleep(0.01)
            ps = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split()
            parent = dict(zip(map(int, ps[0::2]), map(int, ps[1::2])))
            below = {top.pid}
            while grown := {p for p, pp in parent.items() if pp in below} - below:
                below |= grown
            assert sorted(descendants(top.pid)) == sorted(below) and len(below) == 4
        finally:
            os.killpg(top.pid, signal.SIGKILL)
