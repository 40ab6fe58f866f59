"""Runs the mutant zoo (selftest/zoo.py): each mutant, and each unchanged example it is a copy of, on its
scenario through the one contract adapter, as a user's gateway would be; then the table and the mutation score.

A mutant is caught when none of its runs passes (every verdict exits non-zero); it is as expected when its verdict
is the class the zoo names. A control (an unchanged example) must pass with its expected verdict: a scenario on
which even the correct gateway fails would "catch" every mutant and prove nothing, so a failed control fails the
selftest too.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import rundir
from ..runs import runner, scenario
from ..runs.verdict import EXIT
from . import zoo


@dataclass
class Outcome:
    name: str            # the mutant's name, or "<example> (unchanged)" for a control
    defect: str
    example: str
    scenario: str
    expect: str
    got: str             # the verdict status, or "error" when the run could not be made
    headline: str
    run_dir: str
    seconds: float
    control: bool

    @property
    def passed_run(self) -> bool:
        """The verdict exits 0: a pass, the thing a mutant must never get."""
        return self.got in EXIT and EXIT[self.got] == 0

    @property
    def ok(self) -> bool:
        """A control: passed with its expected verdict. A mutant: caught, with its expected verdict."""
        return self.got == self.expect and (self.passed_run if self.control else not self.passed_run)


def _run_one(example: str, edits: tuple[zoo.Edit, ...], scen: str, label: str, work: Path,
             out: Path) -> tuple[str, str, str]:
    """(status, headline, run directory) of one gateway on one zoo scenario."""
    gateway = zoo.materialise(example, edits, work / label)
    configs = scenario.load(zoo.scenario_path(scen))
    (config,) = configs
    values = {**config.values, "gateway_file": str(gateway / "itchbench.toml")}
    run_dir = runner.execute(values, label, root=out, echo=False, command="itchbench selftest")
    verdict = rundir.read_json(run_dir / "summary.json")["verdict"]
    return verdict["status"], verdict["headline"], str(run_dir)


def run(mutants: list[zoo.Mutant], controls: list[zoo.Control], out: Path,
        say: Callable[[str], None] = print) -> list[Outcome]:
    """Every control, then every mutant, one run each; progress said one line a run."""
    outcomes: list[Outcome] = []
    plan: list[tuple[str, str, str, tuple[zoo.Edit, ...], str, str, bool]] = [
        (f"{c.example} (unchanged)", "none (the control)", c.example, (), c.scenario, c.expect, True) for c in controls]
    plan += [(m.name, m.defect, m.example, m.edits, m.scenario, m.expect, False) for m in mutants]
    with tempfile.TemporaryDirectory(prefix="itchbench-zoo-") as tmp:
        for i, (name, defect, example, edits, scen, expect, control) in enumerate(plan, 1):
            label = f"{'control-' + example if control else name}-{scen}"
            t0 = time.monotonic()
            try:
                got, headline, run_dir = _run_one(example, edits, scen, label, Path(tmp), out)
            except (zoo.ZooError, scenario.ScenarioError, OSError) as e:
                got, headline, run_dir = "error", f"{type(e).__name__}: {e}", ""
            o = Outcome(name, defect, example, scen, expect, got, headline, run_dir, time.monotonic() - t0, control)
            outcomes.append(o)
            mark = "ok" if o.ok else "PASSED (not caught)" if not control and o.passed_run else "UNEXPECTED"
            say(f"[{i}/{len(plan)}] {name} on {scen}: {got} ({o.seconds:.1f} s) — {mark}")
    return outcomes


def score(outcomes: list[Outcome]) -> dict[str, int]:
    mutants = [o for o in outcomes if not o.control]
    return {"mutants": len(mutants), "caught": sum(not o.passed_run and o.got != "error" for o in mutants),
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
