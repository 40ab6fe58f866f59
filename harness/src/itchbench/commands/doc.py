"""itchbench doc: a benchmark document from stored runs, or an optimisation
journey across revisions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import paths
from .common import UserError, folder_path, percentage


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("doc", help="write a benchmark document (Markdown + self-contained HTML) from runs, "
                       "or an optimisation journey across revisions",
                       description="From RUNS (run directories or folders of them, e.g. a scenario's --out): "
                       "DIR/report.md, DIR/report.html (one file: style and figures embedded) and DIR/figures/. "
                       "Runs with the same label are the repetitions of one configuration. The same runs give the "
                       "same bytes. With --journey, the arguments are revisions (REV1 REV2 … or A..B): each is "
                       "built and run with the compare machinery (cached builds, interleaved runs, verdicts) and "
                       "the journey document is written. See docs/documents.md.")
    d.add_argument("runs", nargs="*", metavar="RUNS|REVS", help="run directories or folders of them; with "
                   "--journey, git revisions or a range A..B")
    d.add_argument("--out", type=folder_path, help="output folder (default: reports/docs/NAME)")
    d.add_argument("--title", help="document title")
    d.add_argument("--baseline", metavar="LABEL", help="configuration the others are compared with (default: the "
                   "first configuration run)")
    j = d.add_argument_group("journeys")
    j.add_argument("--journey", action="store_true", help="the arguments are revisions: build, run, judge each step")
    j.add_argument("--scenario", type=Path, help="workloads (default: as itchbench compare: simulation of the "
                   "bundled fixtures and of a 300k-message generated session)")
    j.add_argument("--repetitions", type=int, default=9, help="runs per revision and workload (default %(default)s)")
    j.add_argument("--threshold", type=percentage(), default=5.0, metavar="PCT",
                   help="smallest timing change that counts, percent (default %(default)s)")
    j.add_argument("--repo", type=Path, default=Path.cwd(), help="the git repository (default: the current folder)")
    j.add_argument("--no-instructions", action="store_true", help="skip the callgrind instruction counts")
    j.add_argument("--gateway", type=Path, metavar="FILE",
                   help="a journey of a gateway brought through its contract: its itchbench.toml, relative to "
                        "--repo; workloads default to scenarios/gateway.toml, timed wire to wire")
    d.set_defaults(func=run)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-") or "document"


def _journey(args: argparse.Namespace) -> tuple[Path, Path]:
    from ..compare import session, verdicts
    from ..documents import journey
    if args.repetitions < verdicts.MIN_REPETITIONS:
        raise UserError(f"--repetitions must be at least {verdicts.MIN_REPETITIONS}")
    specs = journey.expand(args.repo, args.runs)
    out = args.out or paths.repo_root() / "reports" / "docs" / _slug(args.title or f"journey-{specs[0]}-{specs[-1]}")

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    not_run: list[tuple[session.Workload, str]] = []  # a brought gateway's: configurations of inputs it does not take
    if args.gateway:
        from .compare import gateway_workloads
        workloads = gateway_workloads(args.scenario, (args.repo / args.gateway).resolve(), say, not_run)
        if not workloads:
            raise UserError(f"doc: the gateway takes none of the scenario's configurations ("
                            + "; ".join(f"{w.label}: {why}" for w, why in not_run) + ")")
    else:
        workloads = session.scenario_workloads(args.scenario) if args.scenario else session.default_workloads()
    out.mkdir(parents=True, exist_ok=True)
    say(f"journey over {len(specs)} revisions: {' '.join(specs)}")
    j = journey.run(args.repo, specs, workloads, args.repetitions, args.threshold / 100, out, say,
                    instructions=not args.no_instructions and not args.gateway, contract_rel=args.gateway,
                    not_run=[(w.label, why) for w, why in not_run])
    for line in journey.step_lines(j):
        say(line)
    return journey.write(j, out, args.title, args.threshold, args.repetitions)


def run(args: argparse.Namespace) -> int:
    from ..documents import benchmark
    from ..documents.collect import DocumentError
    from ..runs import shards
    if not args.runs:
        raise UserError("doc needs RUNS (run directories or folders of them), or --journey REV1 REV2 …; "
                        "see itchbench doc --help")
    try:
        if args.journey:
            md, html = _journey(args)
        else:
            out = args.out or paths.repo_root() / "reports" / "docs" / _slug(args.title or
                                                                           Path(args.runs[0]).resolve().name)
            runs = [Path(r) for r in args.runs]
            if (out / "manifest.json").is_file():
                raise UserError(f"doc: {out} is a run directory: its own report.md would be replaced by the "
                                "document; write it elsewhere")
            if shards.find_records(runs):  # the shards of one sharded run: all of them, and they belong together
                try:
                    runs = shards.merge(runs).run_dirs
                except shards.ShardError as e:
                    raise UserError(f"doc: {e}") from e
            md, html = benchmark.build(runs, out, title=args.title, baseline=args.baseline, run_args=args.runs)
    except DocumentError as e:
        raise UserError(str(e)) from e
    print(f"wrote {html}\nfigures: {md.parent / 'figures'}", file=sys.stderr)
    print(md)
    return 0
