"""Child processes of a run, torn down whatever happens.

Every child is started with PR_SET_PDEATHSIG(SIGKILL): if the harness dies
— even by SIGKILL — the kernel kills its children too, and a private network
namespace held only by them disappears with them. On a normal exit, an
error or Ctrl-C, ProcessGroup.close() stops each child (SIGTERM, then
SIGKILL) and runs the registered clean-ups, last first.

The kernel sends the parent-death signal when the *thread* that forked the
child ends, not its process: a child started from a short-lived thread (a
broker restarted as a fault, runs/brokers/restarts.py) would be killed the
moment that thread returns. So children are forked by the main thread, or,
asked from any other, by one forking thread that lives as long as the process.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _die_with_parent() -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


# Its one worker never ends while the process lives: the parent thread of every child forked off the main thread.
_forker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="forker")


def popen(cmd: list[str], **kwargs) -> subprocess.Popen:
    """A child that dies with this process (PR_SET_PDEATHSIG), forked off a thread that lives as long as it does.
    Its stdin is /dev/null unless given: inherited, a gateway reading it had waited on the user's terminal (never
    ready) where, under CI's /dev/null, the same build ran LOSSLESS."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(cmd, preexec_fn=_die_with_parent, **kwargs)
    return _forker.submit(subprocess.Popen, cmd, preexec_fn=_die_with_parent, **kwargs).result()


class ProcessGroup:
    def __init__(self) -> None:
        self._procs: list[tuple[str, subprocess.Popen]] = []
        self._cleanups: list[Callable[[], None]] = []

    def start(self, name: str, cmd: Sequence[str], **kwargs) -> subprocess.Popen:
        proc = popen(list(cmd), **kwargs)
        self._procs.append((name, proc))
        return proc

    def on_close(self, cleanup: Callable[[], None]) -> None:
        self._cleanups.append(cleanup)

    def pids(self) -> list[int]:
        return [p.pid for _, p in self._procs]

    def stop(self, proc: subprocess.Popen, timeout: float = 5.0, sig: signal.Signals = signal.SIGTERM) -> int | None:
        """sig (SIGTERM), then SIGKILL after timeout; returns the exit status."""
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def close(self) -> None:
        for _, proc in reversed(self._procs):
            self.stop(proc, timeout=3.0)
        self._procs.clear()
        while self._cleanups:
            try:
                self._cleanups.pop()()
            except Exception:  # a failed clean-up must not hide the others
                pass

    def __enter__(self) -> "ProcessGroup":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def wait_with_rusage(proc: subprocess.Popen, timeout: float) -> tuple[int, int]:
    """Wait for a child (at most timeout seconds: TimeoutExpired) and return
    (exit status as Popen gives it, peak RSS in KiB) from wait4."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, int(usage.ru_maxrss)
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        time.sleep(0.005)


class LineWaiter:
    """Reads a child's stdout without blocking and hands out the lines in
    order; a line that arrived together with an earlier one is not lost."""

    def __init__(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        self._proc = proc
        os.set_blocking(proc.stdout.fileno(), False)
        self._buf = ""
        self.lines: list[str] = []
        self._next = 0

    def wait_for(self, prefix: str, timeout: float) -> str:
        """The next line starting with prefix; TimeoutError if none comes."""
        deadline = time.monotonic() + timeout
        while True:
            while self._next < len(self.lines):
                line = self.lines[self._next]
                self._next += 1
                if line.startswith(prefix):
                    return line
            chunk = self._proc.stdout.read()  # type: ignore[union-attr]
            if chunk:
                self._buf += chunk.decode() if isinstance(chunk, bytes) else chunk
                *complete, self._buf = self._buf.split("\n")
                self.lines.extend(complete)
                continue
            if self._proc.poll() is not None or time.monotonic() >= deadline:
                raise TimeoutError(f"no '{prefix}' line within {timeout:.0f} s (exit status {self._proc.poll()})")
            time.sleep(0.01)


def children(pid: int) -> list[int]:
    """The processes whose parent pid is (none when it has ended)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    """pid and every process below it, however deep (none of those that have ended)."""
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo.extend(children(found[-1]))
    return found


def leaf_process(pid: int) -> int:
    """The process at the end of a chain of single children: the gateway a launcher (process-meter, a shell
    that execs) runs."""
    while len(below := children(pid)) == 1:
        pid = below[0]
    return pid
