"""The tests' own check for leftover processes (live_helpers.leftover_processes) sees this test process's
descendants — orphans included, which come back to it as a child subreaper — and nothing else: a busy machine's
other programs (another checkout's build of itch-gateway, say) are not leftovers of ours."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from live_helpers import leftover_processes


def _listed(pid: int) -> bool:
    return any(line.split()[0] == str(pid) for line in leftover_processes())


def test_a_child_and_an_orphan_are_seen_until_they_end():
    child = subprocess.Popen(["sleep", "infinity"])
    # An orphan: its shell exits at once, and the sleep it started is reparented to this process.
    orphan = int(subprocess.run(["bash", "-c", "sleep infinity >/dev/null 2>&1 & echo $!"], capture_output=True,
                                text=True).stdout)
    deadline = time.monotonic() + 5
    while os.getpid() != int(open(f"/proc/{orphan}/stat").read().rsplit(")", 1)[1].split()[1]):
        assert time.monotonic() < deadline, "the orphan never came back to this process"
        time.sleep(0.01)
    assert _listed(child.pid) and _listed(orphan)
    child.kill()
    child.wait()
    os.kill(orphan, signal.SIGKILL)
    time.sleep(0.1)  # dead, not yet reaped: a zombie is not alive
    assert not _listed(child.pid) and not _listed(orphan)
    os.waitpid(orphan, 0)

