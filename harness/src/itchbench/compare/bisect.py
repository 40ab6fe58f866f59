"""Exact bisection: instruction counts and BBO digests are deterministic, so
one measurement per commit decides whether it is good or bad — no
repetitions, no statistics. Builds are shared with compare's cache."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import paths
from ..captures.digest import sim_bbo
from . import instructions, revisions, verdicts


class BisectError(RuntimeError):
    """Bisection cannot start or cannot go on; the message says why."""


@dataclass
class Step:
    revision: revisions.Revision
    value: Any
    bad: bool


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after GOOD up to BAD, oldest first, on the ancestry path."""
    proc = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BisectError(proc.stderr.strip())
    return proc.stdout.split()


def _measure(repo: Path, rev: revisions.Revision, metric: str, capture: Path, say: Callable[[str], None]) -> Any:
    gateway = revisions.build(repo, rev, say)
    if metric == "instructions":
        counts = instructions.per_message(gateway, capture)
        if "message_path" not in counts["per_message"]:
            raise BisectError(f"{rev.label}: its gateway has no Gateway::on_message to count")
        return counts["per_message"]["message_path"]
    with paths.gateway_override(gateway):
        return sim_bbo(capture)[0]


def bisect(repo: Path, good: str, bad: str, metric: str, capture: Path,
           say: Callable[[str], None]) -> tuple[Step, Step, list[Step]]:
    """(GOOD's step, the first bad commit's step, every step measured)."""
    good_rev, bad_rev = revisions.resolve(repo, good), revisions.resolve(repo, bad)
    commits = commits_between(repo, good_rev.commit, bad_rev.commit)
    if not commits:
        raise BisectError(f"{bad} does not descend from {good}: nothing to bisect")
    reference = _measure(repo, good_rev, metric, capture, say)

    def is_bad(value: Any) -> bool:
        if metric == "bbo":
            return value != reference
        return verdicts.exact(reference, value)["verdict"] == verdicts.WORSE

    steps: list[Step] = []

    def step(index: int) -> Step:
        rev = revisions.resolve(repo, commits[index])
        value = _measure(repo, rev, metric, capture, say)
        s = Step(rev, value, is_bad(value))
        steps.append(s)
        say(f"  {rev.label} {rev.subject[:50]!r}: {value if metric == 'bbo' else f'{value:.1f}'} -> "
            f"{'BAD' if s.bad else 'good'}")
        return s

    last = step(len(commits) - 1)
    if not last.bad:
        raise BisectError(f"{bad} is not bad by {metric} against {good}: nothing to find")
    lo, hi, first_bad = -1, len(commits) - 1, last  # commits[lo] good (or GOOD), commits[hi] bad
    while hi - lo > 1:
        mid = (lo + hi) // 2
        s = step(mid)
        if s.bad:
            hi, first_bad = mid, s
        else:
            lo = mid
    return Step(good_rev, reference, False), first_bad, steps
