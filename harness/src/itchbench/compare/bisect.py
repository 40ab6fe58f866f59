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


class CouldNotRun(BisectError):
    """A commit's gateway built, and its run could not be measured: it crashed, hung or never became ready.
    reason: what the run said, without the commit's label."""

    def __init__(self, label: str, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{label}: the gateway could not run: {reason}")


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
    untestable: str = ""  # why it could not be measured (its build failed, or its run): then neither good nor bad


class NotNarrowed(BisectError):
    """The first bad commit is one of `candidates`: the last of them measured bad, the ones before it could not be
    measured (not built, or not run with cannot_run "skip"), and the commit before them measured good (git bisect's
    "only skipped commits left")."""

    def __init__(self, good: Step, candidates: list[Step], steps: list[Step]) -> None:
        self.good, self.candidates, self.steps = good, candidates, steps
        super().__init__(f"the first bad commit is one of {len(candidates)}: {len(candidates) - 1} before "
                         f"{candidates[-1].revision.label} could not be measured")


# A commit's value when its build failed, or it could not run and --cannot-run skip, as a sharded bisect records it
# (JSON): the reason.
UNTESTABLE = "untestable"
# A commit's value when it could not run and --cannot-run bad: the reason; bad by any metric.
COULD_NOT_RUN = "could_not_run"


def untestable_reason(value: Any) -> str:
    """Why a commit's value is no measurement ("" for a measurement)."""
    return value.get(UNTESTABLE, "") if isinstance(value, dict) else ""


def could_not_run(value: Any) -> str:
    """Why a commit taken as bad could not run ("" for a measurement)."""
    return value.get(COULD_NOT_RUN, "") if isinstance(value, dict) else ""


def shown(value: Any, metric: str) -> str:
    """A commit's value in a line of progress or of the result."""
    if could_not_run(value):
        return f"could not run ({could_not_run(value)})"
    return str(value) if metric == "bbo" else f"{value:.1f}"


def measured_as(measure: Callable[[revisions.Revision], Any], rev: revisions.Revision, cannot_run: str) -> Any:
    """The commit's value; when its gateway could not run, with cannot_run "bad" {COULD_NOT_RUN: why} (the crash
    is the change looked for), with "skip" {UNTESTABLE: why}, with "stop" CouldNotRun raised."""
    try:
        return measure(rev)
    except CouldNotRun as e:
        if cannot_run == "bad":
            return {COULD_NOT_RUN: e.reason}
        if cannot_run == "skip":
            return {UNTESTABLE: f"could not run ({e.reason})"}
        raise


def measured_or_untestable(measure: Callable[[revisions.Revision], Any], rev: revisions.Revision,
                           cannot_run: str = "stop") -> Any:
    """The commit's value, or {UNTESTABLE: why} when it does not build (or could not run, cannot_run "skip"): a
    commit in the middle of a history that cannot be measured is stepped over, not the end of the bisect."""
    try:
        return measured_as(measure, rev, cannot_run)
    except revisions.BuildFailed as e:  # its first line, without the commit's label: "does not build (…)"
        return {UNTESTABLE: str(e).splitlines()[0].removeprefix(rev.label).strip(" :")}


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
        try:
            counts = instructions.per_message(gateway, capture)
        except instructions.GatewayFailed as e:
            raise CouldNotRun(rev.label, str(e)) from e
        except instructions.InstructionError as e:
            raise BisectError(f"{rev.label}: {e}") from e
        if "message_path" not in counts["per_message"]:
            raise BisectError(f"{rev.label}: its gateway has no Gateway::on_message to count")
        return counts["per_message"]["message_path"]
    with paths.gateway_override(gateway):
        try:
            bbo = sim_bbo(capture)[0]
        except ToolError as e:
            raise CouldNotRun(rev.label, str(e).splitlines()[0]) from e
        if not levels:
            return bbo
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
            except instructions.GatewayFailed as e:
                raise CouldNotRun(rev.label, str(e)) from e
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
                raise CouldNotRun(rev.label, f"{s['verdict']['headline']} ({run_dir})")
            if metric == "bbo":
                # A run that lost messages, or recorded less than the gateway published, holds what the loss left:
                # its digest would judge the loss.
                unjudged = session.output_unjudged(run_dir)
                if not unjudged:
                    return outputs.bbo_digest(run_dir)[0]
                lost.append(f"{unjudged} ({run_dir})")
                if len(lost) == BBO_ATTEMPTS:  # a commit that cannot be judged: --cannot-run says what then
                    raise CouldNotRun(rev.label, f"no output to judge in each of {BBO_ATTEMPTS} runs, so its BBO "
                                                 f"digest would judge what they lost: {lost[0]}")
                say(f"{rev.label}: no output to judge in the run ({unjudged[:100]}); running it again")
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
        if could_not_run(value):
            return True
        if metric == "bbo":
            return value != reference
        if metric == "latency":
            return value > reference * (1 + threshold)
        return verdicts.exact(reference, value)["verdict"] == verdicts.WORSE
    return is_bad


def _good_reference(good: str, value: Any) -> Any:
    if untestable_reason(value) or could_not_run(value):
        raise BisectError(f"{good} cannot be the good commit: "
                          f"{untestable_reason(value) or shown(value, 'bbo')}")
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
        if good_rev.commit == bad_rev.commit:
            raise BisectError(f"{good} and {bad} are one commit ({good_rev.commit[:12]}): nothing to bisect")
        raise BisectError(f"{bad} does not descend from {good}: nothing to bisect")
    return good_rev, bad_rev, commits


def _next_to_measure(lo: int, hi: int, untestable: set[int]) -> int | None:
    """The commit between lo and hi (exclusive) to measure next: the middle one, or the nearest to it whose build
    has not failed; None when none is left."""
    middle = (lo + hi) // 2
    left = [i for i in range(lo + 1, hi) if i not in untestable]
    return min(left, key=lambda i: (abs(i - middle), i)) if left else None


def _step(revision: revisions.Revision, value: Any, is_bad: Callable[[Any], bool]) -> Step:
    reason = untestable_reason(value)
    return Step(revision, value, not reason and is_bad(value), reason)


def _first_bad_of(good: Step, in_order: list[Step], measured: list[Step], metric: str,
                  sources_of: Callable[[str], str | None] | None) -> Step:
    """The last of in_order (commits in order, the last measured bad), when the commit before it measured good (or
    is GOOD); NotNarrowed when commits whose builds failed stand between. measured: every step taken."""
    at = since = len(in_order) - 1
    while since > 0 and in_order[since - 1].untestable:
        since -= 1
    if since < at:
        raise NotNarrowed(good, in_order[since:], measured)
    check_first_bad(metric, in_order[at - 1].revision if at else good.revision, in_order[at], sources_of)
    return in_order[at]


def bisect(repo: Path, good: str, bad: str, metric: str, capture: Path,
           say: Callable[[str], None], *, measure: Callable[[revisions.Revision], Any] | None = None,
           threshold: float = 0.5, sources_of: Callable[[str], str | None] | None = None, cannot_run: str = "stop"
           ) -> tuple[Step, Step, list[Step]]:
    """(GOOD's step, the first bad commit's step, every step measured, in the order measured). measure: how a
    revision is measured (default: the built-in gateway, exact); threshold: with metric latency, how far above GOOD
    is bad; sources_of: a commit's sources id (provenance.sources_id), to refuse a first bad commit that changed
    none of them; cannot_run: what a commit whose gateway cannot run is (measured_as). A commit between GOOD and
    BAD that does not build is stepped over; NotNarrowed when the first bad commit cannot be told from such commits
    just before it."""
    measure = measure or default_measure(repo, metric, capture, say)
    good_rev, bad_rev, commits = span(repo, good, bad)
    reference = _good_reference(good, measure(good_rev))  # GOOD and BAD must build: BuildFailed ends it
    is_bad = judge(metric, reference, threshold)
    measured: dict[int, Step] = {}

    def step(index: int) -> Step:
        rev = revisions.resolve(repo, commits[index])
        last = index == len(commits) - 1  # BAD: it must build, and run unless a commit that cannot is bad
        value = (measured_as(measure, rev, "bad" if cannot_run == "bad" else "stop") if last else
                 measured_or_untestable(measure, rev, cannot_run))
        s = measured[index] = _step(rev, value, is_bad)
        outcome = (f"{s.untestable} -> skipped" if s.untestable else
                   f"{shown(value, metric)} -> {'BAD' if s.bad else 'good'}")
        say(f"  {rev.label} {rev.subject[:50]!r}: {outcome}")
        return s

    if not step(len(commits) - 1).bad:
        raise BisectError(f"{bad} is not bad by {metric} against {good}: nothing to find")
    lo, hi = -1, len(commits) - 1  # commits[lo] good (or GOOD), commits[hi] bad
    untestable: set[int] = set()
    while (at := _next_to_measure(lo, hi, untestable)) is not None:
        s = step(at)
        if s.untestable:
            untestable.add(at)
        elif s.bad:
            hi = at
        else:
            lo = at
    good_step = Step(good_rev, reference, False)
    # From the last good commit to the first bad: every one measured, those between did not build.
    in_order = [measured[i] for i in range(max(lo, 0), hi + 1)]
    return good_step, _first_bad_of(good_step, in_order, list(measured.values()), metric, sources_of), \
        list(measured.values())


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
    steps = [_step(revisions.resolve(repo, c), measured[c], is_bad) for c in commits]
    if steps[-1].untestable:
        raise BisectError(f"{bad} cannot be the bad commit: {steps[-1].untestable}")
    if not steps[-1].bad:
        raise BisectError(f"{bad} is not bad by {metric} against {good}: nothing to find")
    at = next(i for i, s in enumerate(steps) if s.bad)
    good_step = Step(good_rev, measured[good_rev.commit], False)
    return good_step, _first_bad_of(good_step, steps[:at + 1], steps, metric, sources_of), steps
