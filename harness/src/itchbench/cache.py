"""What itchbench keeps under reports/cache/, all of it made again on demand:

    builds/     revisions of the built-in gateway, each a git worktree of this repository, built (compare, bisect)
    contract/   revisions of brought gateways: per repository, per commit a `git clone --shared` of it, built
    ccache/     the compiler's cache for those builds (ccache, when installed)
    facts/      what reading a whole capture told (its SHA-256, its count), per version of the file
                (captures/remembered.py)
    the rest    captures rewritten for a run's loopback, decompressed captures, generated sessions
    .locks/     a lock file per entry, held shared by each process that uses the entry until it ends, and
                exclusively by prune while it removes the entry; and a make lock per build, held while it is made

`itchbench cache` lists it; `itchbench cache prune` removes it (all, or what was not used for some days), except
what a running process holds, and drops the worktree records of removed builds from this repository."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import glob
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from . import atomic, paths

NESTED = ("builds", "contract")  # folders whose entries are listed (and pruned) one by one
COMPILER_CACHE = "ccache"  # ccache's objects for every build of a gateway (gateways/compiler_cache.py)
FACTS = "facts"  # what reading a capture told, per version of it (captures/remembered.py)
LOCKS = ".locks"  # a lock file per entry in use or being made (made_once, locked)


@dataclass(frozen=True)
class Entry:
    path: Path
    bytes: int
    used: float  # the newest modification time inside it (epoch seconds)

    @property
    def kind(self) -> str:
        parent = self.path.parent.name
        if parent in NESTED:
            return parent
        return self.path.name if self.path.name in (COMPILER_CACHE, FACTS) else "capture"


def root() -> Path:
    return paths.cache_dir()


# Every entry this process has used, its lock file open and held shared until the process ends: `cache prune`
# removes only an entry whose lock it can take exclusively, so a compare's builds or a run's rewritten capture are
# never removed under it, however long it runs.
_held: dict[Path, IO[str]] = {}


@atexit.register
def _close_held() -> None:
    """The held locks closed as the process ends (its end would release them anyway): left to the interpreter's
    teardown, each was a ResourceWarning at the end of the tests' output."""
    for lock in _held.values():
        lock.close()
    _held.clear()


def _lock_path(entry: Path, suffix: str = ".lock") -> Path:
    """A lock in one folder of locks (the entries' own folders hold only what they are): ".lock", of the entry that
    holds path (a build's folder, a brought gateway's checkouts, a capture, the facts' folder: what prune removes
    as one); ".make", held while path itself (one revision's build or checkout) is made, so builds of other
    revisions of one gateway go on at once. Outside the cache (a test's builds), beside it."""
    try:
        relative = entry.resolve().relative_to(root().resolve()).parts
    except ValueError:
        return entry.parent / LOCKS / (entry.name + suffix)
    if suffix == ".lock":
        relative = relative[:2] if relative[0] in NESTED else relative[:1]
    return root() / LOCKS / ("%".join(relative) + suffix)


def _flocked(path: Path, how: int) -> IO[str]:
    """path opened and locked as flock's how asks. A prune removes an entry's lock file with the entry: a lock
    taken on the file it removed would guard nothing, so the file is opened again until the lock is on the one in
    place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        lock = open(path, "a")
        fcntl.flock(lock, how)
        try:
            if os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino:
                return lock
        except FileNotFoundError:
            pass
        lock.close()


def _use(entry: Path) -> None:
    """Holds entry shared until this process ends (a prune leaves it). Never exclusive: a process that held it so
    would wait for every other user's end, and one of them may be waiting for it (a test's worker for the command
    it started)."""
    path = _lock_path(entry)
    if path not in _held:
        _held[path] = _flocked(path, fcntl.LOCK_SH)


def made_once(out: Path, make: Callable[[Path], None]) -> Path:
    """out, made by make(partial) when missing, and held by this process until it ends (`cache prune` leaves it).
    Several processes may ask for the same entry at once (runs side by side, a Slurm array's tasks on one node,
    the tests' workers): each writes under a name of its own and renames it into place only when whole, so none
    ever reads a partial file or has its own cut from under it, and the same inputs giving the same bytes,
    whichever rename lands last leaves the same file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _use(out)
    if out.is_file():
        return out
    with atomic.replaced_when_whole(out, keep_suffix=True) as partial:
        make(partial)
    return out


@contextlib.contextmanager
def locked(entry: Path) -> Iterator[None]:
    """Holds entry's make lock while a folder entry is checked and made: a second process making the same build
    waits for the first and then finds it made, rather than removing it half-built. The entry is held (shared)
    first, until this process ends, as made_once's are."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    _use(entry)
    with _flocked(_lock_path(entry, ".make"), fcntl.LOCK_EX):
        yield


def _measure(path: Path) -> tuple[int, float]:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
    sizes = [(p.stat().st_size, p.stat().st_mtime) for p in files]
    return sum(s for s, _ in sizes), max((m for _, m in sizes), default=path.stat().st_mtime)


def entries() -> list[Entry]:
    out = []
    if not root().is_dir():
        return out
    for top in sorted(root().iterdir()):
        for p in sorted(top.iterdir()) if top.name in NESTED and top.is_dir() else [top]:
            if p.name.startswith("."):  # a lock, or an entry being made (made_once, locked)
                continue
            size, used = _measure(p)
            out.append(Entry(p, size, used))
    return out


@dataclass(frozen=True)
class Pruned:
    removed: list[Entry]  # (a dry run: what would be)
    in_use: list[Entry]  # held by a running itchbench (a compare's builds, a run's capture): left


def prune(older_than_days: float | None = None, dry_run: bool = False) -> Pruned:
    """Remove the entries last used more than older_than_days ago (None: every one), except those a running
    process holds (it takes them before it makes them)."""
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    removed, in_use = [], []
    for e in entries():
        if cutoff is not None and e.used >= cutoff:
            continue
        lock_path = _lock_path(e.path)
        with _taken_at_once(lock_path, make=not dry_run) as free:
            if not free:
                in_use.append(e)
                continue
            removed.append(e)
            if dry_run:
                continue
            if e.path.is_dir():
                shutil.rmtree(e.path)
            else:
                e.path.unlink()
            # While held: a process waiting on it takes the lock of a new file (_flocked). The entry's make locks go
            # too: a process makes an entry only once it holds it.
            for path in [lock_path, *_make_locks_of(e.path)]:
                path.unlink(missing_ok=True)
    if not dry_run and any(e.kind == "builds" for e in removed):  # their worktree records go with them
        subprocess.run(["git", "-C", str(paths.repo_root()), "worktree", "prune"], capture_output=True)
    return Pruned(removed, in_use)


def _make_locks_of(entry: Path) -> list[Path]:
    """The make locks of entry and of everything in it (a brought gateway's revisions)."""
    name = _lock_path(entry, ".make").name.removesuffix(".make")
    return [*(root() / LOCKS).glob(glob.escape(name) + ".make"), *(root() / LOCKS).glob(glob.escape(name) + "%*.make")]


@contextlib.contextmanager
def _taken_at_once(path: Path, make: bool) -> Iterator[bool]:
    """Whether the lock file could be locked exclusively without waiting; held so while the block runs. Without
    make (a dry run, which leaves no file behind) a lock file not there is free: no process holds the entry."""
    if not make and not path.exists():
        yield True
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
