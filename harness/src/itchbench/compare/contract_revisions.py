"""Revisions of a gateway brought through its contract: each commit of the
user's repository checked out once in a copy of its own and built there with
the contract's build commands, cached under reports/cache/contract/ by
(repository, commit). The copy is a `git clone --shared` (it borrows the
repository's objects and registers nothing in it: no worktree of the team's
appears in its `git worktree list`). The gateway runs from that copy (an
interpreted gateway has no binary to keep). WORKTREE is the repository
itself, built each time."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import cache, paths
from ..gateways import adapter, contract
from ..runs.failure import RunError
from ..gateways import revisions


@dataclass(frozen=True)
class Prepared:
    worktree: Path
    contract: Path    # the revision's own contract file
    repository: Path  # the team's repository the worktree is a commit of
    build_log: Path   # the output of its build (cached with it)

    def under_test(self, rev: revisions.Revision) -> dict[str, object]:
        return {"worktree": self.worktree, "commit": rev.label, "prebuilt": True, "contract": self.contract,
                "repository": self.repository, "build_log": self.build_log}


def cache_root(repo: Path) -> Path:
    key = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:12]
    return paths.cache_dir() / "contract" / key


def prepare(repo: Path, rev: revisions.Revision, contract_rel: Path, say: Callable[[str], None]) -> Prepared:
    """The revision's worktree, built with its own contract's build commands. RevisionError names what failed."""
    if rev.dirty:
        home, worktree = cache_root(repo) / rev.label, repo.resolve()
    else:
        home = cache_root(repo) / rev.commit
        worktree = home / "src"
    with cache.locked(home):
        return _prepare_in(repo, rev, contract_rel, say, home, worktree)


def _prepare_in(repo: Path, rev: revisions.Revision, contract_rel: Path, say: Callable[[str], None], home: Path,
                worktree: Path) -> Prepared:
    # The gateway is built and run from its contract's folder, as `itchbench run` does (its {worktree}): the
    # repository's root only when the contract stands there, not in a monorepo's subfolder.
    gateway_dir = (worktree / contract_rel).parent
    ok = home / "ok"
    if not (ok.is_file() and (worktree / contract_rel).is_file()):
        if not rev.dirty:
            if home.exists():
                shutil.rmtree(home)
            home.mkdir(parents=True)
            revisions.git(home, "clone", "--quiet", "--shared", "--no-checkout", str(repo.resolve()), str(worktree))
            revisions.git(worktree, "checkout", "--quiet", "--detach", rev.commit)
        else:
            home.mkdir(parents=True, exist_ok=True)
        try:
            c = contract.load(worktree / contract_rel)
        except contract.ContractError as e:
            raise revisions.RevisionError(f"{rev.label}: {e}") from e
        say(f"  {rev.label}: building {c.name} ({rev.subject[:60]})")
        try:
            adapter.build(c, gateway_dir, commit=rev.commit, build_dir=home / "build", log=home / "build.log",
                          say=say)
        except RunError as e:
            raise revisions.BuildFailed(f"{rev.label} does not build: {e}") from e
        if not rev.dirty:
            ok.write_text(rev.commit + "\n")
    else:
        say(f"  {rev.label}: cached worktree and build ({home})")
    return Prepared(gateway_dir, worktree / contract_rel, repo.resolve(), home / "build.log")
