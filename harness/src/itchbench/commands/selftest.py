"""itchbench selftest: itchbench's verdicts tried on gateways broken on purpose (docs/selftest.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import UserError, folder_path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "selftest", help="run the mutant zoo: broken gateways that every verdict must catch, and a mutation score",
        description="Runs the mutant zoo on this machine: copies of the example gateways, each one planted defect "
        "away from the correct one, each on the scenario it applies to (UDP, serial, the file, A/B lines, the "
        "re-request server, a late join), and the unchanged examples on the same scenarios as controls. Prints a "
        "table (mutant, planted defect, expected verdict, verdict got, caught) and the mutation score. Exit 0 "
        "when every mutant is caught with its expected verdict and every control passes; 1 otherwise (a mutant "
        "that passes is named); 2 on bad arguments.")
    p.add_argument("--quick", action="store_true", help="a subset, one mutant of each kind of input (about a minute)")
    p.add_argument("--mutant", action="append", metavar="NAME", help="only this mutant (again for more)")
    p.add_argument("--list", action="store_true", help="list the zoo and exit")
    p.add_argument("--out", type=folder_path, metavar="DIR", help="where the runs go (default: reports/selftest)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..runs import runner as run_runner
    from ..selftest import runner, zoo
    if args.list:
        for m in zoo.MUTANTS:
            print(f"{m.name:28} {m.scenario:9} {m.expect:12} {'quick ' if m.quick else ''}{m.defect}")
        return 0
    try:
        mutants, controls = zoo.select(args.quick, args.mutant)
    except zoo.ZooError as e:
        raise UserError(str(e)) from e
    out = Path(args.out) if args.out else run_runner.default_root().parent / "selftest"
    print(f"selftest: {len(mutants)} mutant(s) and {len(controls)} control(s), runs in {out}", flush=True)
    outcomes = runner.run(mutants, controls, out, say=lambda line: print(line, flush=True))
    print()
    print(runner.table(outcomes))
    print()
    passed = [o.name for o in outcomes if not o.control and o.passed_run]
    if passed:
        print(f"mutants that PASSED (itchbench failed to catch them): {', '.join(passed)}", file=sys.stderr)
    s = runner.score(outcomes)
    print(runner.closing_line(s))
    return 0 if s["as_expected"] == s["mutants"] and s["controls_ok"] == s["controls"] else 1
