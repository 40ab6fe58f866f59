"""The report's plots drawn in a process of their own while the caller writes the rest of its report: Agg's drawing
holds the GIL, so a thread would only take turns with the caller.

The process is a fresh interpreter, never a fork of the caller: the caller runs threads (the log follower, the
report's import, the BBO digest, pytest-xdist's own), and a fork copies any lock one of them holds, held for ever
in the child (a CI worker hung on one for 19 minutes). It is started early (start_drawer) and imports
analysis/plots.py (matplotlib) while it waits, so that import is out of the way when the figures' data is ready;
the caller names the plots by function and never imports matplotlib itself. This module is light to import, so a
thread can start the process at once."""

from __future__ import annotations

import atexit
import importlib
import os
import pickle
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, NamedTuple

PLOTS = f"{__package__}.plots"


class Draw(NamedTuple):
    """One call in the drawing process: module.function(*args), its arguments pickled there."""
    module: str
    function: str
    args: tuple[Any, ...]


def plot(function: str, *args: Any) -> Draw:
    """A call of one of analysis/plots.py's functions."""
    return Draw(PLOTS, function, args)


def start_drawer() -> None:
    """Starts the process the next Drawing hands its draws to. It inherits the calling thread's CPUs and
    niceness. Safe to call more than once: one process waits at a time, and one that died is replaced."""
    global _waiting
    with _waiting_lock:
        if _waiting is None or _waiting.poll() is not None:
            # This package first on the path: the process imports the same code as the caller.
            path = os.pathsep.join(filter(None, (_PACKAGE_PARENT, os.environ.get("PYTHONPATH"))))
            _waiting = subprocess.Popen([sys.executable, "-c", f"import {PLOTS}; import {__name__} as d; d._serve()"],
                                        stdin=subprocess.PIPE, env={**os.environ, "PYTHONPATH": path})


class Drawing:
    """The draws, made in the waiting process (started now if none waits). The PNGs are the bytes the caller would
    draw: 1 M messages' three plots pickle to 0.7 MB."""

    def __init__(self, draws: list[Draw]) -> None:
        global _waiting
        start_drawer()
        with _waiting_lock:
            child, _waiting = _waiting, None
        assert child is not None and child.stdin is not None
        self._child = child
        try:
            with child.stdin:
                pickle.dump(draws, child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        except BrokenPipeError:
            pass  # the process died before reading: wait() says how

    def wait(self) -> None:
        """Once every draw is made; raises if one failed (the process printed why)."""
        code = self._child.wait()
        if code != 0:
            raise RuntimeError(f"drawing the report's plots failed (the drawing process {_ended(code)})")


_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_waiting: subprocess.Popen[bytes] | None = None
_waiting_lock = threading.Lock()


@atexit.register
def stop_waiting() -> None:
    """Ends a process started for draws that have not come (a run that failed, a follower whose run made no
    report): at exit, or before the environment the next one should start in changes."""
    global _waiting
    with _waiting_lock:
        child, _waiting = _waiting, None
    if child is not None:
        child.kill()
        child.wait()
        if child.stdin is not None:
            child.stdin.close()


def _ended(code: int) -> str:
    return f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"


def _serve() -> None:
    """The drawing process: the draws, pickled on stdin; none if the caller left it unused."""
    data = sys.stdin.buffer.read()
    for draw in pickle.loads(data) if data else []:
        getattr(importlib.import_module(draw.module), draw.function)(*draw.args)
    sys.stderr.flush()
    os._exit(0)  # every PNG is closed: tearing down matplotlib and pandas would add 0.1 s to the caller's wait
