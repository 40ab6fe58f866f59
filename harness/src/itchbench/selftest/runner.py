"""Runs the mutant zoo (selftest/zoo.py): each mutant, and each unchanged example it is a copy of, on its
scenario through the one contract adapter, as a user's gateway would be; then the table and the mutation score.

A mutant is caught when none of its runs passes (every verdict exits non-zero); it is as expected when its verdict
is the class the zoo names. A mutant judged by compare (a slowdown: its runs pass, only their speed differs) is run
COMPARE_RUNS times, interleaved with the unchanged example at the same path (so the two sides are the same
workload to compare), and caught when compare does not say NO REGRESSION.

A control (an unchanged example) must pass with its expected verdict: a scenario on which even the correct gateway
fails would "catch" every mutant and prove nothing, so a failed control fails the selftest too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import rundir
from ..compare.statistics import EXACT_MAX
from ..compare.verdicts import undecided_workloads
from ..gateways import revisions
from ..runs import runner, scenario
from ..runs.verdict import EXIT, as_said
from . import zoo

# Runs a side for a compared mutant: compare judges a timing from 7 runs a side (p < 0.002 needs them); three more
# leave room for runs lost to the machine or blurred by its neighbours (with 8, a noisy host once left the
# half-speed mutant "too noisy to decide": p90 +281 %, its ratio's 95 % CI 1.06-6.94, ~10 a side asked for).
COMPARE_RUNS = 10
# Timings still undecided then get more runs, in batches of half as many, up to as many as the exact U test takes: what
# compare gives a change of two builds (--max-repetitions; commands/compare.py add_runs_while_undecided). With 10 a
# side only, a busy CI host left the half-speed mutant NO REGRESSION, its p90 +67.7 % "too noisy" (CI 1.13-1.81, p
# 0.0068; ~12 a side asked for); with 20, a VM whose neighbours had slowed the whole suite 1.4x left it so again (p90
# +93 %, CI 0.16-27.28, p 0.068; run again at once, 10 a side decided it): more runs outlast a burst of noise.
COMPARE_MOST = EXACT_MAX


@dataclass
class Outcome:
    name: str            # the mutant's name, or "<example> (unchanged)" for a control
    defect: str
    example: str
    scenario: str
    expect: str
    got: str             # the verdict status (compare's for a compared mutant), or "error": no run could be made
    headline: str
    run_dir: str
    seconds: float
    control: bool
    exit_status: int | None = None  # a run's verdict's exit status, or compare's; None: nothing was judged

    @property
    def passed_run(self) -> bool:
        """The verdict (or compare) exits 0: a pass, the thing a mutant must never get."""
        return self.exit_status == 0

    @property
    def ok(self) -> bool:
        """A control: passed with its expected verdict. A mutant: caught, with its expected verdict."""
        return self.got == self.expect and (self.passed_run if self.control else not self.passed_run)


def _run_one(example: str, edits: tuple[zoo.Edit, ...], scen: str, label: str, work: Path,
             out: Path, say: Callable[[str], None] = print) -> tuple[str, str, str, int]:
    """(status, headline, run directory, exit status) of one gateway on one zoo scenario."""
    code_edited = any(e.file != zoo.BUILT_IN_CONTRACT for e in edits)
    gateway = zoo.prepare(example, zoo.materialise(example, edits, work / label), code_edited, say)
    configs = scenario.load(zoo.scenario_path(scen))
    (config,) = configs
    values = {**config.values, "gateway_file": str(gateway / "itchbench.toml")}
    run_dir = runner.execute(values, label, root=out, echo=False, command="itchbench selftest")
    verdict = as_said(run_dir, rundir.read_json(run_dir / "summary.json"))  # a control without its report fails
    return verdict["status"], verdict["headline"], str(run_dir), EXIT[verdict["status"]]


# What compare's headline calls each kind of regression a compared mutant may be expected to get.
REGRESSION_WORDS = {"slower": "SLOWER", "more_memory": "MORE memory"}


def _compare_one(m: zoo.Mutant, work: Path, out: Path) -> tuple[str, str, str, int]:
    """(compare's verdict, its headline, its folder, its exit status): the unchanged example (base) against the
    mutant (head), COMPARE_RUNS runs a side, interleaved, each materialised at the same path; more, up to
    COMPARE_MOST, while compare passes it with timings undecided."""
    at = work / m.name
    sides = {"base": (), "head": m.edits}
    judged = out / m.name / "compare"
    made = 0
    while True:
        wanted = COMPARE_RUNS if not made else min(COMPARE_MOST, made + COMPARE_RUNS // 2)
        for _ in range(made, wanted):
            for side, edits in sides.items():
                shutil.rmtree(at, ignore_errors=True)
                _run_one(m.example, edits, m.scenario, m.name, work, out / m.name / side)
        made = wanted
        shutil.rmtree(judged, ignore_errors=True)
        proc = subprocess.run([sys.executable, "-m", "itchbench.cli", "compare", str(out / m.name / "base"),
                               str(out / m.name / "head"), "--max-repetitions", str(made), "--out", str(judged)],
                              capture_output=True, text=True)
        try:
            result = json.loads((judged / "compare.json").read_text())
        except (OSError, ValueError):
            return ("error", f"compare exited {proc.returncode}: {proc.stderr.strip()[-300:]}", str(judged),
                    proc.returncode)
        # INCONCLUSIVE exits 1 too, but more runs may decide it, as compare itself adds them while it is.
        if (result["headline"].startswith("REGRESSION") or made >= COMPARE_MOST
                or not undecided_workloads(result["metrics"])):
            break
    headline = result["headline"]
    status, _, said = headline.partition(":")
    # A regression is named by what it found: the mutant's own kind when compare found it among others.
    named = [got for got, words in REGRESSION_WORDS.items() if f" {words}" in said] if status == "REGRESSION" else []
    got = m.expect if m.expect in named else named[0] if named else status.lower().replace(" ", "_")
    return got, headline, str(judged), result["exit_status"]


def label_of(name: str, example: str, scen: str, control: bool, claims: bool) -> str:
    """A run's label, and its folder's: a control that makes a claim is named by it, so two claims on one scenario
    are two runs."""
    claim = "-" + re.sub(r"[^a-z0-9]+", "-", name.split("(", 1)[1].lower()).strip("-") if control and claims else ""
    return f"{'control-' + example if control else name}-{scen}{claim}"


def plan_of(mutants: list[zoo.Mutant], controls: list[zoo.Control]) -> list[tuple[str, str, str, tuple[zoo.Edit, ...],
                                                                                str, str, bool, zoo.Mutant | None]]:
    """The runs to make, controls first: (name, defect, example, edits, scenario, expected, control, mutant)."""
    plan: list[tuple[str, str, str, tuple[zoo.Edit, ...], str, str, bool, zoo.Mutant | None]] = [
        (f"{c.example} ({c.claim or 'unchanged'})", "none (the control)", c.example, c.edits, c.scenario, c.expect,
         True, None) for c in controls]
    return plan + [(m.name, m.defect, m.example, m.edits, m.scenario, m.expect, False, m) for m in mutants]


def run(mutants: list[zoo.Mutant], controls: list[zoo.Control], out: Path,
        say: Callable[[str], None] = print) -> list[Outcome]:
    """Every control, then every mutant, one run each; progress said one line a run."""
    outcomes: list[Outcome] = []
    plan = plan_of(mutants, controls)
    with tempfile.TemporaryDirectory(prefix="itchbench-zoo-") as tmp:
        for i, (name, defect, example, edits, scen, expect, control, mutant) in enumerate(plan, 1):
            label = label_of(name, example, scen, control, bool(edits))
            t0 = time.monotonic()
            exit_status: int | None = None
            try:
                if mutant is not None and mutant.compared:
                    got, headline, run_dir, exit_status = _compare_one(mutant, Path(tmp), out)
                else:
                    got, headline, run_dir, exit_status = _run_one(example, edits, scen, label, Path(tmp), out,
                                                                   say)
            except (zoo.ZooError, scenario.ScenarioError, revisions.RevisionError, OSError) as e:
                got, headline, run_dir = "error", f"{type(e).__name__}: {e}", ""
            o = Outcome(name, defect, example, scen, expect, got, headline, run_dir, time.monotonic() - t0, control,
                        exit_status)
            outcomes.append(o)
            mark = "ok" if o.ok else "PASSED (not caught)" if not control and o.passed_run else "UNEXPECTED"
            say(f"[{i}/{len(plan)}] {name} on {scen}: {got} ({o.seconds:.1f} s) — {mark}")
    return outcomes


def score(outcomes: list[Outcome]) -> dict[str, int]:
    mutants = [o for o in outcomes if not o.control]
    return {"mutants": len(mutants), "caught": sum(o.exit_status not in (None, 0) and o.got != "error"
                                                   for o in mutants),
            "as_expected": sum(o.ok for o in mutants), "controls": len(outcomes) - len(mutants),
            "controls_ok": sum(o.ok for o in outcomes if o.control)}


def table(outcomes: list[Outcome]) -> str:
    """Markdown: mutant, planted defect, scenario, expected verdict, verdict got, caught."""
    rows = ["| mutant | planted defect | scenario | expected | got | caught |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        if o.control:
            caught = "control: passes" if o.ok else "CONTROL FAILED"
        else:
            caught = ("yes" if o.ok else "yes, another verdict" if not o.passed_run and o.got != "error"
                      else "NO: it passed" if o.passed_run else "not run")
        rows.append(f"| {o.name} | {o.defect} | {o.scenario} | {o.expect} | {o.got} | {caught} |")
    return "\n".join(rows)


def closing_line(s: dict[str, int]) -> str:
    ok = s["as_expected"] == s["mutants"] and s["controls_ok"] == s["controls"]
    pct = 100.0 * s["caught"] / s["mutants"] if s["mutants"] else 0.0
    return (f"mutation score {s['caught']} of {s['mutants']} caught ({pct:.0f} %), {s['as_expected']} with the "
            f"expected verdict; controls {s['controls_ok']} of {s['controls']} passed — {'ok' if ok else 'FAILED'}")
