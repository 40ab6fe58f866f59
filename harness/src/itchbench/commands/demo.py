"""itchbench demo: the README's main job."""

from __future__ import annotations

import argparse

from .. import paths
from . import fixtures as fixtures_command
from .common import run_line, verdict_of


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("demo", help="the README's main job: verify the fixtures, run scenarios/demo.toml "
                       "(sim, UDP, serial), compare",
                       description="Verify every fixture (recipe sha256 and golden BBO digest), run "
                       "scenarios/demo.toml — the seed workload in simulation, over UDP (tcpreplay in a private "
                       "network namespace) and over a virtual serial line (socat) — and write a comparison "
                       "report. Exit 0 only if every fixture verifies and every run is lossless.")
    d.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis import summary_index
    from ..captures import fixtures
    from ..runs import runner, scenario, verdict
    fxs = fixtures.load_manifest()
    print(f"[1/3] verifying {len(fxs)} fixtures: recipe sha256 and golden BBO digest in simulation", flush=True)
    ok = fixtures_command.verify_all("  ")
    configs = scenario.load(paths.repo_root() / "scenarios" / "demo.toml")
    print(f"[2/3] running scenarios/demo.toml: {', '.join(c.transport for c in configs)}", flush=True)
    runs, statuses = [], []
    for i, config in enumerate(configs, 1):
        print(f"  ({i}/{len(configs)}) {config.transport}", flush=True)
        run_dir = runner.execute(config.values, config.label)
        summary, v = verdict_of(run_dir)
        headline = v["headline"].replace("\n", "\n    ")
        print(f"    {run_line(summary)}\n    {headline}", flush=True)
        statuses.append(v["status"])
        runs.append(run_dir)
    golden = {str(fx.path.resolve()): fx.golden.get("bbo_digest") for fx in fxs}
    print("[3/3] writing the comparison", flush=True)
    index = summary_index.write(runs, golden, title="itchbench demo: the seed workload through every transport")
    print(verdict.closing_line(statuses) + ("" if ok else "; FIXTURES DO NOT VERIFY"))
    print(f"report: {index}")
    return 1 if not ok else verdict.exit_status(statuses)
