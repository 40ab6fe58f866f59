"""itchbench doc: a benchmark document from stored runs, or an optimisation
journey across revisions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..documents import benchmark
from .common import UserError


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("doc", help="write a benchmark document (Markdown + self-contained HTML) from runs, "
                       "or an optimisation journey across revisions",
                       description="From RUNS (run directories or folders of them, e.g. a scenario's --out): "
                       "DIR/report.md, DIR/report.html (one file: style and figures embedded) and DIR/figures/. "
                       "Runs with the same label are the repetitions of one configuration. The same runs give the "
                       "same bytes. With --journey: build and run each revision (the compare machinery: cached "
                       "builds, interleaved runs, verdicts) and write the journey document. See docs/documents.md.")
    d.add_argument("runs", nargs="*", metavar="RUNS", help="run directories or folders of them")
    d.add_argument("--out", type=Path, help="output folder (default: reports/docs/NAME, NAME from the title)")
    d.add_argument("--title", help="document title")
    d.add_argument("--baseline", metavar="LABEL", help="configuration the others are compared with (default: the "
                   "first configuration run)")
    d.set_defaults(func=run)


def _default_out(title: str | None, runs: list[str]) -> Path:
    from .. import paths

    name = title or Path(runs[0]).resolve().name
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-") or "document"
    return paths.repo_root() / "reports" / "docs" / slug


def run(args: argparse.Namespace) -> int:
    if not args.runs:
        raise UserError("doc needs RUNS (run directories or folders of them); see itchbench doc --help")
    out = args.out or _default_out(args.title, args.runs)
    try:
        md, html = benchmark.build([Path(r) for r in args.runs], out, title=args.title, baseline=args.baseline,
                                   run_args=args.runs)
    except benchmark.DocumentError as e:
        raise UserError(str(e)) from e
    print(f"wrote {md}\nwrote {html}\nfigures: {out / 'figures'}", file=sys.stderr)
    print(md)
    return 0
