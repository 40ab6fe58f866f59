"""Bisection. On the built-in gateway, exact: instruction counts and BBO
digests are deterministic, so one measurement per commit decides whether it
is good or bad — no repetitions, no statistics. Builds are shared with
compare's cache. On a gateway brought through its contract (black box): the
BBO stream it sends (exact), or wire-to-wire latency (the median p50 of a few
runs, bad past a threshold: a timing, so only a clear step is found)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import paths, rundir
from ..analysis import logs
from ..captures.digest import sim_bbo, sim_depth
from ..depth_levels import Levels
from ..gateways import contract
from ..runs import runner
from ..tools import ToolError
from ..gateways import revisions
from . import contract_revisions, instructions, outputs, session, verdicts


class BisectError(RuntimeError):
    """Bisection cannot start or cannot go on; the message says why."""


# In a commit's BBO value: the depth log its gateway wrote does not hold together (a book that keeps a level with no
# shares writes one). That is a bad commit, named with the reader's reason; GOOD's own may not be so.
DEPTH_REFUSED = "depth log refused: "

# Runs of a commit made for its BBO digest before bisect gives up on runs that lose messages (on a busy machine).
BBO_ATTEMPTS = 3


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


def _measure(repo: Path, rev: revisions.Revision, metric: str, capture: Path, say: Callable[[str], None],
             levels: Levels = 0) -> Any:
    gateway = revisions.build(repo, rev, say)
    if metric == "instructions":
        counts = instructions.per_message(gateway, capture)
        if "message_path" not in counts["per_message"]:
            raise BisectError(f"{rev.label}: its gateway has no Gateway::on_message to count")
        return counts["per_message"]["message_path"]
    with paths.gateway_override(gateway):
        if not levels:
            return sim_bbo(capture)[0]
        bbo = sim_bbo(capture)[0]
        try:  # the depth stream beside the BBO: a bug below the top changes the one and perhaps never the other
            return f"{bbo} depth {sim_depth(capture, levels)[0]}"
        except ToolError as e:
            raise BisectError(f"{rev.label}: its gateway logs no depth of {levels} levels ({e})") from e
        except logs.LogFormatError as e:
            return f"{bbo} {DEPTH_REFUSED}{e}"


def contract_measure(repo: Path, contract_rel: Path, metric: str, values: dict[str, Any], runs: int, root: Path,
                     say: Callable[[str], None]) -> Callable[[revisions.Revision], Any]:
    """How a commit of a contract gateway is measured: its worktree built, then the digest of the BBO events it
    sent, its median wire-to-wire p50 (ns, the workload run `runs` times), or its instructions per message (exact:
    its file command under callgrind on the workload's capture)."""
    def measure(rev: revisions.Revision) -> Any:
        prepared = contract_revisions.prepare(repo, rev, contract_rel, say)
        if metric == "instructions":
            try:
                counts = instructions.contract_per_message(contract.load(prepared.contract), prepared.worktree,
                                                           Path(values["capture"]))
            except (instructions.InstructionError, contract.ContractError) as e:
                raise BisectError(f"{rev.label}: {e}") from e
            return counts["per_message"][instructions.CONTRACT_STAGE]
        p50s: list[float] = []
        lost: list[str] = []
        while len(p50s) < (runs if metric == "latency" else 1):
            run_dir = runner.execute(values, "bisect", root=root / rev.label, echo=False, command="itchbench bisect",
                                     under_test=prepared.under_test(rev))
            s = rundir.read_json(run_dir / "summary.json")
            if s["verdict"]["status"] == "incomplete":
                raise BisectError(f"{rev.label}: the gateway could not run: {s['verdict']['headline']} ({run_dir})")
            if metric == "bbo":
                # A run that lost messages published what the loss left: its digest would judge the loss.
                if session.run_not_lost([run_dir]):
                    return outputs.bbo_digest(run_dir)[0]
                lost.append(f"{s['verdict']['headline']} ({run_dir})")
                if len(lost) == BBO_ATTEMPTS:
                    raise BisectError(f"{rev.label}: each of {BBO_ATTEMPTS} runs lost messages, so its BBO digest "
                                      f"would judge what they lost: {lost[0]}")
                say(f"{rev.label}: the run lost messages ({s['verdict']['headline'][:80]}); running it again")
                continue
            if not (s.get("wire_to_wire") or {}).get("from_intended"):
                raise BisectError(f"{rev.label}: no wire-to-wire latency (a sender that stamps: udp-replay, serial)")
            p50s.append(s["wire_to_wire"]["from_intended"]["p50"])
        return float(np.median(p50s))
    return measure


def default_measure(repo: Path, metric: str, capture: Path, say: Callable[[str], None],
                    levels: Levels = 0) -> Callable[[revisions.Revision], Any]:
    """The built-in gateway, exact: instructions per message, or the BBO digest (and the depth digest of N levels
    with levels N)."""
    return lambda rev: _measure(repo, rev, metric, capture, say, levels)


def judge(metric: str, reference: Any, threshold: float) -> Callable[[Any], bool]:
    """Whether a commit's value is bad against GOOD's (reference); threshold: latency's allowance."""
    def is_bad(value: Any) -> bool:
        if metric == "bbo":
            return value != reference
        if metric == "latency":
            return value > reference * (1 + threshold)
        return verdicts.exact(reference, value)["verdict"] == verdicts.WORSE
    return is_bad


def _good_reference(good: str, value: Any) -> Any:
    if isinstance(value, str) and DEPTH_REFUSED in value:
        raise BisectError(f"{good} is not good: {value[value.index(DEPTH_REFUSED):]}")
    return value


def check_first_bad(metric: str, parent: revisions.Revision, first: Step,
                    sources_of: Callable[[str], str | None] | None) -> None:
    """A first bad commit that changed none of the gateway's sources ran the build its parent ran, which was good:
    not the code's step. By timing, the machine's (noise past the threshold); exactly, a gateway whose one build
    gives two answers. Either way no commit is to blame, and none is named."""
    if sources_of is None:
        return
    ids = sources_of(parent.commit), sources_of(first.revision.commit)
    if ids[0] is None or ids[0] != ids[1]:
        return
    why = ("the same build measured good and bad: the step is the machine's, not the code's (a wider --threshold, "
           "or more --runs, steadies it)" if metric == "latency" else
           f"the same build gave two {metric} values: the gateway is not deterministic there")
    raise BisectError(f"the first bad commit, {first.revision.label} {first.revision.subject!r}, changed none of "
                      f"the gateway's sources since {parent.label} (both {ids[0]}): {why}; no commit is named")


def span(repo: Path, good: str, bad: str) -> tuple[revisions.Revision, revisions.Revision, list[str]]:
    """GOOD, BAD and the commits after GOOD up to BAD (oldest first)."""
    good_rev, bad_rev = revisions.resolve(repo, good), revisions.resolve(repo, bad)
    commits = commits_between(repo, good_rev.commit, bad_rev.commit)
    if not commits:
        raise BisectError(f"{bad} does not descend from {good}: nothing to bisect")
    return good_rev, bad_rev, commits


def bisect(repo: Path, good: str, bad: str, metric: str, capture: Path,
           say: Callable[[str], None], *, measure: Callable[[revisions.Revision], Any] | None = None,
           threshold: float = 0.5, sources_of: Callable[[str], str | None] | None = None
           ) -> tuple[Step, Step, list[Step]]:
    """(GOOD's step, the first bad commit's step, every step measured). measure: how a revision is measured
    (default: the built-in gateway, exact); threshold: with metric latency, how far above GOOD is bad; sources_of:
    a commit's sources id (provenance.sources_id), to refuse a first bad commit that changed none of them."""
    measure = measure or default_measure(repo, metric, capture, say)
    good_rev, bad_rev, commits = span(repo, good, bad)
    reference = _good_reference(good, measure(good_rev))
    is_bad = judge(metric, reference, threshold)
    steps: list[Step] = []

    def step(index: int) -> Step:
        rev = revisions.resolve(repo, commits[index])
        value = measure(rev)
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
    check_first_bad(metric, revisions.resolve(repo, commits[lo]) if lo >= 0 else good_rev, first_bad, sources_of)
    return Step(good_rev, reference, False), first_bad, steps


def first_bad(repo: Path, good: str, bad: str, metric: str, measured: dict[str, Any],
              threshold: float = 0.5, sources_of: Callable[[str], str | None] | None = None
              ) -> tuple[Step, Step, list[Step]]:
    """The same answer from every commit measured (a sharded bisect: each shard measured a part): GOOD's value,
    the first commit after it that is bad, every step in commit order."""
    good_rev, bad_rev, commits = span(repo, good, bad)
    absent = [c for c in [good_rev.commit, *commits] if c not in measured]
    if absent:
        raise BisectError(f"{len(absent)} commit(s) of {good}..{bad} not measured by the shards, e.g. {absent[0]}")
    is_bad = judge(metric, _good_reference(good, measured[good_rev.commit]), threshold)
    steps = [Step(revisions.resolve(repo, c), measured[c], is_bad(measured[c])) for c in commits]
    if not steps[-1].bad:
        raise BisectError(f"{bad} is not bad by {metric} against {good}: nothing to find")
    at = next(i for i, s in enumerate(steps) if s.bad)
    check_first_bad(metric, steps[at - 1].revision if at else good_rev, steps[at], sources_of)
    return Step(good_rev, measured[good_rev.commit], False), steps[at], steps
