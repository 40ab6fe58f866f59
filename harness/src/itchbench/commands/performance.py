"""itchbench performance: run the benchmarks and write docs/performance.md from them."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from .common import UserError, folder_path, given_path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "performance",
        help="run the benchmarks (throughput against a peer, recording cost) and write the performance document",
        description="Generate ITCH files from fixed seeds, run harness/benchmarks/side_by_side.py against the peer "
        "command (when given), recording_cost.py and whole_day.py (a day end to end, with the peer), and write a "
        "dated document of the figures, the machine and the noise. Takes minutes (the days: about fifteen, and "
        "30 GB of disk under --work): progress goes to stderr.")
    p.add_argument("--peer", default=None,
                   help="peer command, {file} replaced by each file, printing 'N msg/s' (e.g. "
                   "'../shared/peers/itch-book.sh run {file} replay'); without it, no side-by-side table")
    p.add_argument("--messages", type=int, default=5_000_000, help="nasdaq-day messages (deep-book: 0.6x)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds of each benchmark (default: 5)")
    p.add_argument("--day-messages", type=_counts, default=(50_000_000, 270_000_000), metavar="N[,N...]",
                   help="days run end to end (itchbench sim and its report, plain, gzip'd and zstd'd) against the "
                   "peer, one per count of messages (default: 50000000,270000000: 1.5 and 8 GB; 0: none; needs "
                   "--peer)")
    p.add_argument("--day-rounds", type=int, default=1, help="interleaved rounds of the whole day (default: 1)")
    p.add_argument("--cpu", type=int, default=1,
                   help="CPU for each run against the peer (its whole process) and each recording run's hot thread; "
                        "-1: not pinned (default: 1)")
    p.add_argument("--out", type=given_path, default=None, help="the document (default: docs/performance.md)")
    p.add_argument("--work", type=folder_path, default=None,
                   help="generated files and raw figures (default: build/performance)")
    p.set_defaults(func=run)


def _counts(text: str) -> tuple[int, ...]:
    """'50000000,270000000' -> (50000000, 270000000); '0' -> ()."""
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count or a comma-separated list of counts: {text!r}") from None
    return () if counts == (0,) else counts


def run(args: argparse.Namespace) -> int:
    from .. import atomic, paths, rundir
    from ..documents import performance

    if args.messages < 3000 or args.rounds < 1:  # a nasdaq-day file's stock directory alone is 500 messages
        raise UserError("performance: --messages must be at least 3000 and --rounds at least 1")
    if any(n < 3000 for n in args.day_messages) or args.day_rounds < 1:
        raise UserError("performance: --day-messages must be 0 or counts of at least 3000, and --day-rounds at "
                        "least 1")
    if args.cpu >= 0 and args.cpu not in os.sched_getaffinity(0):  # found before minutes of generating files
        raise UserError(f"performance: --cpu {args.cpu}: not a CPU this process may run on (CPUs "
                        f"{', '.join(map(str, sorted(os.sched_getaffinity(0))))}; -1: not pinned)")
    out = args.out or paths.repo_root() / "docs" / "performance.md"
    rundir.require_regular_output(out)  # found before minutes of benchmarks
    plan = performance.Plan(args.messages, args.rounds, None if args.cpu < 0 else args.cpu, args.peer,
                            args.work or paths.build_dir() / "performance", args.day_messages, args.day_rounds)
    try:
        measured = performance.measure(plan)
    except RuntimeError as e:
        print(f"itchbench: {e}; {out} left as it was", file=sys.stderr)
        return 1
    command = "itchbench performance " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    atomic.write_text(out, performance.render(measured, command.strip()))
    print(f"wrote {out}")
    return 0
