"""What itchbench keeps under reports/cache/, all of it made again on demand:

    builds/     revisions of the built-in gateway, each a git worktree of this repository, built (compare, bisect)
    contract/   revisions of brought gateways: per repository, per commit a `git clone --shared` of it, built
    ccache/     the compiler's cache for those builds (ccache, when installed)
    facts/      what reading a whole capture told (its SHA-256, its count), per version of the file
                (captures/remembered.py)
    the rest    captures rewritten for a run's loopback, decompressed captures, generated sessions
    .locks/     a lock file per entry: held shared by each process that uses the entry, until it ends, and
                exclusively while the entry is made again or pruned; a build's make lock beside it

`itchbench cache` lists it; `itchbench cache prune` removes it (all, or what was not used for some days), except
what a running process holds, and drops the worktree records of removed builds from this repository."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import IO
from dataclasses import dataclass
from pathlib import Path

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


def _lock_path(entry: Path, suffix: str = ".lock") -> Path:
    """The lock of the entry that holds path (a build's folder, a capture, the facts' folder), in one folder of
    locks (the entries' own folders hold only what they are); outside the cache (a test's builds), beside it."""
    try:
        relative = entry.resolve().relative_to(root().resolve()).parts
    except ValueError:
        return entry.parent / LOCKS / (entry.name + suffix)
    parts = relative[:2] if relative[0] in NESTED else relative[:1]
    return root() / LOCKS / ("%".join(parts) + suffix)


def _flocked(path: Path, how: int, say: Callable[[str], None] | None = None,
             lock: IO[str] | None = None) -> IO[str]:
    """path opened (or lock, already open on it) and locked as flock's how asks, saying so when it must wait. A
    prune removes an entry's lock file with the entry: a lock taken on the file it removed would guard nothing, so
    the file is opened again until the lock is on the one in place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        lock = lock or open(path, "a")
        try:
            fcntl.flock(lock, how | fcntl.LOCK_NB)
        except BlockingIOError:
            if say:
                say(f"  waiting for the other itchbench processes using {path.stem.replace('%', '/')} to end")
            fcntl.flock(lock, how)
        try:
            if os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino:
                return lock
        except FileNotFoundError:
            pass
        lock.close()
        lock = None


def _use(entry: Path, exclusive: bool = False, say: Callable[[str], None] | None = None) -> None:
    """Holds entry until this process ends: shared, or exclusively while it is made again."""
    path = _lock_path(entry)
    _held[path] = _flocked(path, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, say, _held.get(path))


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
def locked(entry: Path, ready: Callable[[], bool], say: Callable[[str], None]) -> Iterator[None]:
    """A folder entry checked and made by one process at a time (its make lock): a second process making the
    same build waits for the first and then finds it made, rather than removing it half-built. The entry is
    held exclusively while it is made (when ready() says it is not made already; a process that must make
    again an entry others use, a build without the micro-benchmarks asked of it, waits for them to end), then
    shared until this process ends, as made_once's are."""
    with _flocked(_lock_path(entry, ".make"), fcntl.LOCK_EX):
        # Held only after the make lock: a process waiting for it holds no use of this entry, which the one
        # making it would wait for in turn.
        made = ready()
        _use(entry, exclusive=not made, say=say)
        try:
            yield
        finally:
            if not made:
                _use(entry)


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
    process holds or is making."""
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    removed, in_use = [], []
    for e in entries():
        if cutoff is not None and e.used >= cutoff:
            continue
        with contextlib.ExitStack() as held:
            locks = [_lock_path(e.path, ".make"), _lock_path(e.path)]
            if not all(held.enter_context(_taken_at_once(path)) for path in locks):
                in_use.append(e)
                continue
            removed.append(e)
            if dry_run:
                continue
            if e.path.is_dir():
                shutil.rmtree(e.path)
            else:
                e.path.unlink()
            for path in locks:  # while held: a process waiting on one takes the lock of a new file (_flocked)
                path.unlink()
    if not dry_run and any(e.kind == "builds" for e in removed):  # their worktree records go with them
        subprocess.run(["git", "-C", str(paths.repo_root()), "worktree", "prune"], capture_output=True)
    return Pruned(removed, in_use)


@contextlib.contextmanager
def _taken_at_once(path: Path) -> Iterator[bool]:
    """Whether the lock file could be locked exclusively without waiting; held so while the block runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
