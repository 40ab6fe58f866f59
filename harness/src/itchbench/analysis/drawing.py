"""The report's plots drawn in a process of their own while the caller writes the rest of its report: Agg's drawing
holds the GIL, so a thread would only take turns with the caller.

The process is a fresh interpreter, never a fork of the caller: the caller runs threads (the log follower, the
report's import, the BBO digest, pytest-xdist's own), and a fork copies any lock one of them holds, held for ever
in the child (a CI worker hung on one for 19 minutes). It is started early (start_drawer) and imports
analysis/plots.py (matplotlib) while it waits, so that import is out of the way when the figures' data is ready;
the caller names the plots by function and never imports matplotlib itself. This module is light to import, so a
thread can start the process at once.

The process draws one batch after another: when a batch is drawn it says so and waits for the next, so a session of
many runs (compare's, a scenario's repetitions, the tests') imports matplotlib once, not once a run (0.9 s of CPU
each). Each batch carries the CPUs and niceness of the thread that hands it over, taken on in the process before
it draws, as a process started by that thread would inherit them. A batch's draws are made at once when it has
more than one CPU, each but the first in a child the drawing process forks: that process runs one Python thread,
the one that forks, so a child holds no lock another thread held, and starts drawing with matplotlib imported
(_draw_batch)."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, NamedTuple

PLOTS = f"{__package__}.plots"


class DrawingError(RuntimeError):
    """The drawing process failed or died: the report's plots are not all there, so its report is not written."""


class Draw(NamedTuple):
    """One call in the drawing process: module.function(*args), its arguments pickled there."""
    module: str
    function: str
    args: tuple[Any, ...]


def plot(function: str, *args: Any) -> Draw:
    """A call of one of analysis/plots.py's functions."""
    return Draw(PLOTS, function, args)


def start_drawer() -> None:
    """Starts the process the next Drawing hands its draws to, unless one waits; one that waits is moved to the
    calling thread's CPUs, as one it started would have them (a run starts the process before its gateway's CPU
    is chosen, and its follower, which keeps off that CPU, calls this again). Safe to call more than once: one
    process waits at a time, and one that died is replaced."""
    global _waiting
    with _waiting_lock:
        if _waiting is None or _waiting.poll() is not None:
            # This package first on the path: the process imports the same code as the caller.
            path = os.pathsep.join(filter(None, (_PACKAGE_PARENT, os.environ.get("PYTHONPATH"))))
            _waiting = subprocess.Popen([sys.executable, "-c", f"import {PLOTS}; import {__name__} as d; d._serve()"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env={**os.environ, "PYTHONPATH": path})
        else:
            with contextlib.suppress(ProcessLookupError):  # it ended just now: the next Drawing replaces it
                os.sched_setaffinity(_waiting.pid, os.sched_getaffinity(0))


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
        # The CPUs and niceness of this thread, as a process it started would have them.
        batch = pickle.dumps((os.sched_getaffinity(0), os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
                              draws), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            child.stdin.write(struct.pack("<Q", len(batch)) + batch)
            child.stdin.flush()
        except BrokenPipeError:
            pass  # the process died before reading: wait() says how

    def wait(self) -> None:
        """Once every draw is made; raises if one failed (the process printed why). The process then waits for the
        next Drawing's draws."""
        global _waiting
        child = self._child
        assert child.stdout is not None
        if child.stdout.read(1) != _DRAWN:
            _close(child)
            raise DrawingError(f"drawing the report's plots failed (the drawing process {_ended(child.wait())})")
        with _waiting_lock:
            if _waiting is None:
                _waiting, child = child, None
        if child is not None:  # another waits already (started while this one drew): one is enough
            _close(child)
            child.wait()


_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_DRAWN = b"\x00"  # what the process writes when a batch is drawn
_waiting: subprocess.Popen[bytes] | None = None
_waiting_lock = threading.Lock()


def _close(child: subprocess.Popen[bytes]) -> None:
    for pipe in (child.stdin, child.stdout):
        if pipe is not None:
            pipe.close()


@atexit.register
def stop_waiting() -> None:
    """Ends the process that waits for draws (a run that failed, a follower whose run made no report, the last
    run's): at exit, or before the environment the next one should start in changes."""
    global _waiting
    with _waiting_lock:
        child, _waiting = _waiting, None
    if child is not None:
        child.kill()
        child.wait()
        _close(child)


def _ended(code: int) -> str:
    return f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"


def _serve() -> None:
    """The drawing process: batches of draws, each its length and then pickled, on stdin; a byte on stdout once each
    is drawn (what the plots print goes to stderr). Ends at the end of stdin, or with the exception of a draw that
    fails: one line for a file that could not be written (a full disk is the machine's state, not a defect), the
    traceback for anything else. Its caller ends it (a Ctrl-C in a terminal reaches the whole process group; the
    caller says it was interrupted, and a traceback from here would only bury that); a caller gone before a batch
    is drawn leaves no one to tell."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    while len(head := sys.stdin.buffer.read(8)) == 8:
        cpus, nice, draws = pickle.loads(sys.stdin.buffer.read(struct.unpack("<Q", head)[0]))
        os.sched_setaffinity(0, cpus)
        with contextlib.suppress(PermissionError):  # lowered again needs root
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        _draw_batch(draws)
        sys.stderr.flush()
        try:
            replies.write(_DRAWN)
        except BrokenPipeError:
            break
    os._exit(0)  # every PNG is closed: tearing down matplotlib and pandas would add 0.1 s to the caller's wait


def _draw_batch(draws: list[Draw]) -> None:
    """Every draw of a batch, all at once when the batch has more than one CPU: the first here, each other in a
    child forked for it (this process has one thread and matplotlib imported, so a child starts drawing at once).
    The 50 M-message day's three plots took 0.22 s one after the other, the last thing its run waited for. A draw
    that cannot write its file ends this process with 1 once the others are done."""
    children: list[tuple[int, Draw]] = []
    here = draws[:1] if len(os.sched_getaffinity(0)) > 1 else list(draws)  # a list of its own: it may grow
    for draw in draws[len(here):]:
        try:
            pid = os.fork()
        except OSError:  # no process to be had (a limit reached): drawn here after the first
            here.append(draw)
            continue
        if pid == 0:
            _draw_in_child(draw)
        children.append((pid, draw))
    failed = not all([_drawn(draw) for draw in here])
    for pid, draw in children:
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if code != 0:
            print(f"itchbench: drawing {draw.function}: its process {_ended(code)}", file=sys.stderr, flush=True)
            failed = True
    if failed:
        os._exit(1)


def _drawn(draw: Draw) -> bool:
    """Whether the draw was made; False, said on stderr, for a file that could not be written."""
    try:
        getattr(importlib.import_module(draw.module), draw.function)(*draw.args)
    except OSError as e:
        print(f"itchbench: drawing {draw.function}: {e}", file=sys.stderr, flush=True)
        return False
    return True


def _draw_in_child(draw: Draw) -> None:
    """A forked child's one draw; it never returns (nor unwinds into its parent's loop)."""
    try:
        code = 0 if _drawn(draw) else 1
    except BaseException:  # noqa: BLE001 - its traceback here, its exit status in the parent
        traceback.print_exc()
        code = 2
    sys.stderr.flush()
    os._exit(code)
