"""The harness's own TCP subscriber stopped while it ends by itself: it must still end with status 0 and whole logs
(a slow or reconnecting subscriber is stopped with SIGTERM at the end of every run that has one, and a stop that
met the gateway's close once turned a LOSSLESS run into NOT BALANCED, 'killed by SIGTERM').

FRAMES frames, then the close, then SIGTERM every half millisecond until the subscriber has exited."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np

from itchbench.analysis import logs

FRAMES = 3


def test_a_stop_that_comes_while_the_subscriber_ends_leaves_it_exiting_cleanly_with_whole_logs(tmp_path):
    frames = np.zeros(FRAMES, dtype=logs.BBO_DTYPE)
    frames["seq"] = [5, 9, 12]
    frames["stock_locate"] = [1, 2, 1]
    out = tmp_path / "subscriber-0.bbo"
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "itchbench.runs.subscriber", "--port", str(port),
                                 "--out", str(out), "--mode", "fast"], stderr=subprocess.PIPE)
        try:
            conn, _ = server.accept()
            conn.sendall(frames.tobytes())
            conn.close()  # the gateway's close: the subscriber ends by itself, and is stopped while it does
            deadline = time.monotonic() + 30
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    break
                time.sleep(0.0005)
            status = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert status == 0, proc.stderr.read().decode()
    # Stopped before it read them all, it has fewer frames: what it kept is the stream's start, and its receive
    # log, closed whole, stamps whole frames of that start.
    got = out.read_bytes()
    assert got == frames.tobytes()[:len(got)]
    received = logs.read_log(out.with_suffix(".recv"), logs.KIND_SUBSCRIBER).records
    assert len(received) <= len(got) // frames.itemsize
    assert received["seq"].tolist() == frames["seq"][:len(received)].tolist()
