"""Which build of a brought gateway ran: its repository and commit (and, for a working tree with changes, a
hash of the diff), its contract file's hash, the build commands and a digest of their output. Recorded in every
run's manifest (`gateway_under_test`), so that runs of two commits of a team's gateway can be told apart and a
document names the gateway's commit as the thing measured, itchbench's own apart."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any, Sequence

from . import contract as contract_mod
from .contract import Contract


def _git(repo: Path, *args: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    return proc.stdout.decode(errors="replace") if proc.returncode == 0 else None


def tree_diff_sha256(repo: Path, only: Sequence[str] = ()) -> str:
    """sha256 of the working tree's changes against HEAD (the diff, binary, and the names of untracked files), of
    the paths `only` names or of all; "" when there are none."""
    within = ["--", *only] if only else []
    diff = subprocess.run(["git", "-C", str(repo), "diff", "HEAD", "--binary", *within], capture_output=True).stdout
    untracked = subprocess.run(["git", "-C", str(repo), "ls-files", "--others", "--exclude-standard", "-z", *within],
                               capture_output=True).stdout
    return hashlib.sha256(diff + untracked).hexdigest() if (diff or untracked) else ""


def sources_id(repo: Path, commit: str, sources: Sequence[str] = (), *, working_tree: bool = False) -> str | None:
    """What a build of the commit reads, as one id: the git object ids of its `sources` (paths; a path the commit
    does not hold counts as absent), or of its whole tree. Two commits with the same id build the same gateway: a
    commit that changed only other files (documentation, tests) measures the build before it again. With
    working_tree, repo's uncommitted changes to the sources make the id their hash's. None: no such commit."""
    if _git(repo, "cat-file", "-e", f"{commit}^{{commit}}") is None:
        return None
    if working_tree:
        changed = tree_diff_sha256(repo, sources)
        if changed:
            return f"{commit[:12]}+dirty-{changed[:8]}"
    # ./path: relative to repo (a contract's folder), as the sources are named, wherever the git root is.
    ids = [(_git(repo, "rev-parse", f"{commit}:./{path}") or f"{path}:absent").strip() for path in sources] \
        or [(_git(repo, "rev-parse", f"{commit}^{{tree}}") or "").strip()]
    return "src-" + hashlib.sha256(" ".join(ids).encode()).hexdigest()[:16]


def identity_paths(c: Contract) -> tuple[str, ...]:
    """What a run of c measures, as paths for sources_id: its sources and the contract itself (its commands are
    how the gateway runs); () for the whole tree, the contract in it. The whole tree too when none of its sources
    is in its folder (misnamed, or a contract kept apart from the gateway it runs): absent at every commit, they
    made every commit's build the same, so that compare and history judged no timing between two commits."""
    if not any((c.root / source).exists() for source in c.sources):
        return ()
    return (*c.sources, c.path.name)


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def of(c: Contract, worktree: Path, *, source_repository: str | Path | None = None, build_log: Path | None = None,
       prebuilt: bool = False) -> dict[str, Any]:
    """What identifies the build of c in worktree. source_repository: the team's repository when worktree is a
    checkout of one of its commits (compare, bisect)."""
    top = _git(worktree, "rev-parse", "--show-toplevel")
    commit = _git(worktree, "rev-parse", "HEAD")
    # The commit's own time and depth, from its own repository: a results store orders a brought gateway's runs
    # by them (itchbench's repository does not have its commits).
    commit_time = (_git(worktree, "show", "-s", "--format=%cI", "HEAD") or "").strip() or None
    depth = (_git(worktree, "rev-list", "--count", "HEAD") or "").strip()
    subject = (_git(worktree, "show", "-s", "--format=%s", "HEAD") or "").strip() or None
    # Changes to what the build reads: a build's own outputs beside them (a __pycache__, an object file) are no
    # uncommitted change, and made every run of a clean checkout "dirty".
    identity = identity_paths(c)
    diff = tree_diff_sha256(worktree, identity) if top else ""
    values = {"commit": (commit or "").strip() or "WORKTREE", "worktree": worktree, "build_dir": "{build_dir}"}
    return {
        "name": c.name,
        "repository": str(source_repository) if source_repository else (top.strip() if top else None),
        "worktree": str(worktree),
        "commit": commit.strip() if commit else None,  # None: not a git repository
        "commit_time": commit_time,
        "commit_depth": int(depth) if depth.isdigit() else None,
        "commit_subject": subject,
        "dirty": bool(diff),
        "diff_sha256": diff,
        "sources": list(c.sources),
        "sources_id": sources_id(worktree, commit.strip(), identity, working_tree=True) if commit else None,
        "contract": str(c.path),
        "contract_sha256": file_sha256(Path(c.path)),
        "build": [contract_mod.fill(t, values) for t in c.build],
        "build_log_sha256": file_sha256(build_log) if build_log else None,
        "prebuilt": prebuilt,
    }


def label(under: dict[str, Any]) -> str:
    """The gateway's build in a few words: name, commit (12), dirty with its diff's hash."""
    commit = under.get("commit")
    if not commit:
        return f"{under.get('name', '?')} (not in git)"
    dirty = f"+dirty-{str(under.get('diff_sha256', ''))[:8]}" if under.get("dirty") else ""
    return f"{under.get('name', '?')} {str(commit)[:12]}{dirty}"
