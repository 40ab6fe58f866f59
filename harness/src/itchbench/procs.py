"""Child processes of a run, torn down whatever happens.

Every child is started with PR_SET_PDEATHSIG(SIGKILL): if the harness dies
— even by SIGKILL — the kernel kills its children too, and a private network
namespace held only by them disappears with them. On a normal exit, an
error or Ctrl-C, ProcessGroup.close() stops each child (SIGTERM, then
SIGKILL) and runs the registered clean-ups, last first.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from typing import Callable, Sequence

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _die_with_parent() -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ProcessGroup:
    def __init__(self) -> None:
        self._procs: list[tuple[str, subprocess.Popen]] = []
        self._cleanups: list[Callable[[], None]] = []

    def start(self, name: str, cmd: Sequence[str], **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(list(cmd), preexec_fn=_die_with_parent, **kwargs)
        self._procs.append((name, proc))
        return proc

    def on_close(self, cleanup: Callable[[], None]) -> None:
        self._cleanups.append(cleanup)

    def pids(self) -> list[int]:
        return [p.pid for _, p in self._procs]

    def stop(self, proc: subprocess.Popen, timeout: float = 5.0) -> int | None:
        """SIGTERM, then SIGKILL after timeout; returns the exit status."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
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


def wait_for_line(proc: subprocess.Popen, prefix: str, timeout: float, seen: list[str]) -> str:
    """Read proc's stdout until a line starting with prefix; collects lines read."""
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    deadline = time.monotonic() + timeout
    buf = ""
    while time.monotonic() < deadline:
        chunk = proc.stdout.read()
        if chunk:
            buf += chunk.decode() if isinstance(chunk, bytes) else chunk
            while "\n" in buf:
                line, buf = buf.split("\n", 1)
                seen.append(line)
                if line.startswith(prefix):
                    return line
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.01)
    raise TimeoutError(f"no '{prefix}' line within {timeout:.0f} s (exit status {proc.poll()})")
