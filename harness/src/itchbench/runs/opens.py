"""Who opened a file while a gateway ran: fanotify on the file's inode, each opener's chain of parents
read from /proc as its event comes. A gateway that reads its capture itself ({capture}) and never opens it made
its output from something else (a recording of the session): its output equals the simulation, and nothing else
of the run could tell.

Each open is a permission event (FAN_OPEN_PERM): the opener waits, for as long as it takes to read its parents,
until the watch allows it, so even a short `cat` is placed while it lives, and no other process opening the same
file at the same moment can pass for the gateway. A kernel without permission events
(CONFIG_FANOTIFY_ACCESS_PERMISSIONS) is watched with plain notifications instead: an opener gone before its event
is read is then counted apart. fanotify needs CAP_SYS_ADMIN (itchbench runs as root); without it nothing is watched
and the watch says why.

The watch is a process of its own (`python -m itchbench.runs.opens PATH`), never a thread of the harness: a
harness thread that opened the file while holding Python's lock would wait on a watch that waits for that lock."""
from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import os
import select
import signal
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_FAN_CLASS_NOTIF, _FAN_CLASS_CONTENT, _FAN_CLOEXEC, _FAN_NONBLOCK = 0x0, 0x4, 0x1, 0x2
_FAN_MARK_ADD = 0x1
_FAN_OPEN, _FAN_OPEN_PERM = 0x20, 0x10000
_FAN_ALLOW = 0x1
_AT_FDCWD = -100
_EVENT = struct.Struct("=IBBHQii")  # struct fanotify_event_metadata: event_len, vers, reserved, metadata_len, mask,
# fd, pid
_RESPONSE = struct.Struct("=iI")  # struct fanotify_response: fd, response

_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]


def parents(pid: int) -> list[int] | None:
    """pid and its parents up to init, from /proc; None when pid is gone before it could be read."""
    chain = []
    while pid > 1 and len(chain) < 64:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return chain or None  # a parent that ended since: the chain so far is all there is
        chain.append(pid)
        pid = int(stat[stat.rindex(")") + 2:].split()[1])  # the field after the state: ppid
    return chain


@dataclass
class Opens:
    """What a watch saw: each opener's chain of parents (itself first), and openers that could not be placed."""
    chains: list[list[int]] = field(default_factory=list)
    unplaced: int = 0
    error: str = ""  # the watch could not be set (nothing was seen)
    held: bool = False  # each opener waited until placed (permission events)

    def by(self, ancestor: int) -> int:
        """How many opens were made by ancestor or a process under it."""
        return sum(ancestor in chain for chain in self.chains)


class OpenWatch:
    """Watches one file for opens from start() until stop(), in a watcher process (main below)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.seen = Opens()
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> "OpenWatch":
        # Ended with the harness (procs.popen): its descriptor then closes, and the kernel lets any held opener go.
        from .procs import popen
        self._proc = popen([sys.executable, "-m", "itchbench.runs.opens", str(self.path)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        said = self._proc.stdout.readline().strip()  # "watching", once the mark is set, or why not
        if said != "watching":
            self.stop()
            self.seen.error = self.seen.error or said or "the watch ended before it began"
        return self

    def stop(self) -> Opens:
        if self._proc is None:
            return self.seen
        proc, self._proc = self._proc, None
        out, _ = proc.communicate()  # its stdin closed: it lets go of what it holds, and says what it saw
        lines = out.strip().splitlines()
        try:
            self.seen = Opens(**json.loads(lines[-1]))
        except (IndexError, ValueError, TypeError):
            self.seen.error = f"the watch ended without its account (exit status {proc.returncode})"
        return self.seen

    def __enter__(self) -> "OpenWatch":
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def _mark(path: Path, seen: Opens) -> int:
    """A fanotify descriptor marked for the file's opens (permission events where the kernel has them), or -1 with
    seen.error set."""
    for group, mask in ((_FAN_CLASS_CONTENT, _FAN_OPEN_PERM), (_FAN_CLASS_NOTIF, _FAN_OPEN)):
        fd = _libc.fanotify_init(group | _FAN_CLOEXEC | _FAN_NONBLOCK, os.O_RDONLY | os.O_CLOEXEC)
        if fd < 0:
            seen.error = f"fanotify_init: {os.strerror(ctypes.get_errno())}"
            continue
        if _libc.fanotify_mark(fd, _FAN_MARK_ADD, mask, _AT_FDCWD, os.fsencode(path)) == 0:
            seen.error, seen.held = "", mask == _FAN_OPEN_PERM
            return fd
        seen.error = f"fanotify_mark {path}: {os.strerror(ctypes.get_errno())}"
        os.close(fd)
    return -1


def _drain(fd: int, seen: Opens) -> None:
    """Every event waiting: each opener placed, then let go."""
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                return
            raise
        at = 0
        while at + _EVENT.size <= len(data):
            length, _, _, _, mask, event_fd, pid = _EVENT.unpack_from(data, at)
            try:
                chain = parents(pid)  # the opener still waits on a permission event: placed while it lives
            except (ValueError, IndexError):  # a /proc/PID/stat not as expected
                chain = None
            finally:  # whatever came of placing it, the opener is let go: it must never hang on the watch
                if event_fd >= 0:
                    if mask & _FAN_OPEN_PERM:
                        os.write(fd, _RESPONSE.pack(event_fd, _FAN_ALLOW))
                    os.close(event_fd)  # the event's own descriptor of the file: not used
            if chain is None:
                seen.unplaced += 1
            else:
                seen.chains.append(chain)
            at += max(length, _EVENT.size)


def main(argv: list[str]) -> int:
    """The watcher: marks the file, says "watching", places openers until its stdin closes, then prints what it saw
    as one JSON line."""
    # A Ctrl-C reaches the whole process group: the harness ends the watch as it stops the run (or, if the harness
    # dies, PR_SET_PDEATHSIG does), never a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    seen = Opens()
    fd = _mark(Path(argv[0]), seen)
    if fd < 0:
        print(seen.error, flush=True)
        return 1
    print("watching", flush=True)
    waiting = select.poll()  # not select(): descriptors past FD_SETSIZE are possible in a busy harness's children
    waiting.register(fd, select.POLLIN)
    waiting.register(0, select.POLLIN | select.POLLHUP)
    while True:
        events = dict(waiting.poll())
        if fd in events:
            _drain(fd, seen)
        if events.get(0):  # stdin closed (or written to): the watch ends
            break
    _drain(fd, seen)
    os.close(fd)
    print(json.dumps(dataclasses.asdict(seen)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
