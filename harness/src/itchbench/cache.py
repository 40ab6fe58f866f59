"""What itchbench keeps under reports/cache/, all of it made again on demand:

    builds/     revisions of the built-in gateway, each a git worktree of this repository, built (compare, bisect)
    contract/   revisions of brought gateways: per repository, per commit a `git clone --shared` of it, built
    ccache/     the compiler's cache for those builds (ccache, when installed)
    facts/      what reading a whole capture told (its SHA-256, its count), per version of the file
                (captures/remembered.py)
    the rest    captures rewritten for a run's loopback, decompressed captures, generated sessions

`itchbench cache` lists it; `itchbench cache prune` removes it (all, or what was not used for some days) and
drops the worktree records of removed builds from this repository."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from . import atomic, paths

NESTED = ("builds", "contract")  # folders whose entries are listed (and pruned) one by one
COMPILER_CACHE = "ccache"  # ccache's objects for every build of a gateway (gateways/compiler_cache.py)
FACTS = "facts"  # what reading a capture told, per version of it (captures/remembered.py)


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


def made_once(out: Path, make: Callable[[Path], None]) -> Path:
    """out, made by make(partial) when missing. Several processes may ask for the same entry at once (runs side by
    side, a Slurm array's tasks on one node, the tests' workers): each writes under a name of its own and renames it
    into place only when whole, so none ever reads a partial file or has its own cut from under it, and the same
    inputs giving the same bytes, whichever rename lands last leaves the same file."""
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replaced_when_whole(out, keep_suffix=True) as partial:
        make(partial)
    return out


@contextlib.contextmanager
def locked(entry: Path) -> Iterator[None]:
    """Holds entry's lock (.ENTRY.lock beside it) while a folder entry is checked and made: a second process making
    the same build waits for the first and then finds it made, rather than removing it half-built."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.with_name(f".{entry.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
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


def prune(older_than_days: float | None = None, dry_run: bool = False) -> list[Entry]:
    """Remove the entries last used more than older_than_days ago (None: every one); the removed (or, dry_run,
    the ones that would be)."""
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    gone = [e for e in entries() if cutoff is None or e.used < cutoff]
    if dry_run:
        return gone
    for e in gone:
        if e.path.is_dir():
            shutil.rmtree(e.path)
        else:
            e.path.unlink()
    if any(e.kind == "builds" for e in gone):  # their worktree records in this repository go with them
        subprocess.run(["git", "-C", str(paths.repo_root()), "worktree", "prune"], capture_output=True)
    return gone
