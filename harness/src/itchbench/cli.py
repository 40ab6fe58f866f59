"""The itchbench command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Sequence

import tempfile

from . import __version__, dump, fixtures, logs, paths, rundir, sim
from .scenario import ScenarioError
from .stats import StatsError
from .tools import ToolError, inspect_capture, rejections


class UserError(RuntimeError):
    """Bad input from the user: printed without a traceback, exit 2."""


def _type_table(reports: dict[str, dict]) -> str:
    """Per-type message counts, one column per capture."""
    names = list(reports)
    width = max(12, *(len(n) for n in names))
    lines = ["type  " + "".join(f"{n:>{width + 2}}" for n in names)]
    types = list(next(iter(reports.values()))["decode"]["per_type"])
    for t in types:
        lines.append(f"{t:<6}" + "".join(f"{reports[n]['decode']['per_type'][t]:>{width + 2},}" for n in names))
    lines.append(f"{'total':<6}" + "".join(f"{reports[n]['messages']:>{width + 2},}" for n in names))
    return "\n".join(lines)


def cmd_fixtures(args: argparse.Namespace) -> int:
    fxs = fixtures.load_manifest()
    if args.action == "verify":
        bad = 0
        for fx in fxs:
            verdict = fixtures.verify(fx)
            print(verdict.explain())
            bad += not verdict.ok
        return 1 if bad else 0
    # regenerate: rewrite the files, their sha256 and golden BBO digests
    updated = []
    for fx in fxs:
        fixtures.regenerate(fx, fx.path)
        sha = fixtures.sha256_of(fx.path)
        golden = golden_of(fx.path)
        changed = sha != fx.sha256 or golden != fx.golden
        print(f"{fx.file}: {sha} {golden['bbo_digest']}{'  (changed)' if changed else ''}")
        updated.append(fixtures.Fixture(**{**fx.__dict__, "sha256": sha, "golden": golden}))
    fixtures.save_manifest(updated)
    return 0


def golden_of(capture: Path) -> dict[str, object]:
    """The BBO digest and event count of a simulation run, for the manifest."""
    with tempfile.TemporaryDirectory(prefix="itchbench-golden-") as tmp:
        run = sim.run_sim(capture, Path(tmp) / "run", echo=False, latency_log=False)
        summary = rundir.read_json(run / "summary.json")
    return {"bbo_digest": summary["bbo"]["digest"], "bbo_events": summary["bbo"]["events"]}


def cmd_inspect(args: argparse.Namespace) -> int:
    report = inspect_capture(Path(args.capture), args.port)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(_type_table({Path(args.capture).name: report}))
        rej = {k: v for k, v in rejections(report).items() if v}
        print(f"rejected: {rej or 'none'}")
        if not report["complete"]:
            print(f"ERROR: {report['error']}")
    return 0 if report["complete"] and report["rejected"] == 0 else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from . import runner, scenario, summary_index

    fxs = fixtures.load_manifest()
    print(f"[1/3] verifying {len(fxs)} fixtures against their recipes and golden BBO digests", flush=True)
    failed = False
    for fx in fxs:
        verdict = fixtures.verify(fx)
        print("  " + verdict.explain(), flush=True)
        failed |= not verdict.ok
    configs = scenario.load(paths.repo_root() / "scenarios" / "demo.toml")
    print(f"[2/3] running scenarios/demo.toml: {', '.join(c.transport for c in configs)}", flush=True)
    runs = []
    for i, config in enumerate(configs, 1):
        print(f"  ({i}/{len(configs)}) {config.transport}", flush=True)
        try:
            run = runner.execute(config.values, config.label)
        except runner.RunError as e:
            print(f"    FAILED: {e}")
            failed = True
            continue
        summary = rundir.read_json(run / "summary.json")
        print("    " + _run_line(summary), flush=True)
        failed |= not (summary["complete"] and summary["reconciliation"]["balanced"])
        runs.append(run)
    golden = {str(fx.path.resolve()): fx.golden.get("bbo_digest") for fx in fxs}
    print("[3/3] writing the comparison", flush=True)
    index = summary_index.write(runs, golden, title="itchbench demo: the seed workload through every transport")
    print(f"report: {index}")
    return 1 if failed else 0


def cmd_sim(args: argparse.Namespace) -> int:
    run = sim.run_sim(Path(args.capture), Path(args.out) if args.out else None, latency_log=not args.no_latency_log)
    summary = rundir.read_json(run / "summary.json")
    rec = summary["reconciliation"]
    print(f"{rec['received']:,} messages ({rec['decoded']:,} decoded, {rec['rejected']} rejected, "
          f"{rec['missing']} missing), {summary['bbo']['events']:,} BBO events, "
          f"{summary['performance']['messages_per_s'] / 1e6:.2f} M msg/s")
    print(f"BBO digest {summary['bbo']['digest']}")
    if not rec["balanced"]:
        print(f"RECONCILIATION FAILED: {rec['checks']}")
    print(f"run directory: {run}")
    return 0 if rec["balanced"] else 1


def _run_line(summary: dict) -> str:
    rec = summary.get("reconciliation", {})
    transport = summary["transport"]
    hop = rec.get(transport, {})
    parts = [f"{rec.get('received', 0):,} messages"]
    if transport == "udp":
        parts.append(f"sent {hop['tcpreplay_sent']:,} / kernel delivered {hop['kernel_delivered']:,} "
                     f"dropped {hop['kernel_dropped']:,}")
    if transport == "serial":
        util = hop.get("line_utilisation")
        parts.append(f"{hop['lines_good']:,} good lines, {hop['lines_bad']} bad, "
                     f"line utilisation {util * 100:.2f}%" if util is not None else "")
    parts.append(f"{rec.get('missing', 0)} missing, {rec.get('rejected', 0)} rejected")
    parts.append(f"{summary.get('bbo', {}).get('events', 0):,} BBO events")
    if "BBO digest = simulation's digest" in rec.get("checks", {}):
        parts.append("digest = simulation" if rec["checks"]["BBO digest = simulation's digest"] else "DIGEST DIFFERS")
    verdict = "balanced" if rec.get("balanced") else "NOT BALANCED: " + ", ".join(
        k for k, ok in rec.get("checks", {}).items() if not ok)
    return "; ".join(p for p in parts if p) + f" — {verdict}"


def cmd_run(args: argparse.Namespace) -> int:
    from . import runner, scenario

    configs = scenario.load(Path(args.scenario))
    root = Path(args.out) if args.out else runner.default_root()
    plan = [(c, r) for c in configs for r in range(1, c.values["repetitions"] + 1)]
    print(f"{Path(args.scenario).name}: {len(configs)} configuration(s), {len(plan)} run(s) -> {root}")
    failed = 0
    dirs = []
    for i, (config, rep) in enumerate(plan, 1):
        print(f"[{i}/{len(plan)}] {config.label} ({config.transport}) repetition {rep}/{config.values['repetitions']}",
              flush=True)
        try:
            run = runner.execute(config.values, config.label, root=root)
        except runner.RunError as e:
            print(f"  FAILED: {e}")
            failed += 1
            continue
        summary = rundir.read_json(run / "summary.json")
        print("  " + _run_line(summary))
        failed += not (summary["complete"] and summary["reconciliation"]["balanced"])
        dirs.append(run)
    for d in dirs:
        print(f"run directory: {d}")
    print(f"{len(plan) - failed} of {len(plan)} runs complete and balanced")
    return 1 if failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    from . import report

    run_dir = Path(args.run_dir)
    if not (run_dir / "manifest.json").is_file():
        raise UserError(f"{run_dir} is not a run directory (no manifest.json)")
    print(report.build(run_dir, method=args.method, csv=args.csv))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from . import external

    result = external.stats_of_csv(Path(args.file), args.column, args.method)
    if args.json:
        print(json.dumps(result.figures, indent=2))
    else:
        print(external.format_table(result))
    return 0


def cmd_dump(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "bbo.bbo").is_file():
        raise UserError(f"{run_dir} is not a run directory (no bbo.bbo)")
    dump.dump_bbo(run_dir, sys.stdout)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="itchbench",
        description="Deterministic ITCH 5.0 replay testbench: replay captures into a gateway, "
        "record latency and BBO output, and report.",
    )
    p.add_argument("--version", action="version", version=f"itchbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    d = sub.add_parser("demo", help="the README's main job: verify the fixtures, run scenarios/demo.toml (sim, UDP, serial), compare")
    d.set_defaults(func=cmd_demo)

    f = sub.add_parser("fixtures", help="check or rebuild the committed fixtures from their recipes")
    f.add_argument("action", choices=["verify", "regenerate"])
    f.set_defaults(func=cmd_fixtures)

    s = sub.add_parser("sim", help="run the gateway on a capture in deterministic simulation")
    s.add_argument("capture", help="pcap/pcapng of MoldUDP64 over UDP (any port), or a binary ITCH 5.0 file")
    s.add_argument("--out", metavar="RUN_DIR", help="new run directory (default: reports/runs/RUN_ID)")
    s.add_argument("--no-latency-log", action="store_true", help="record the BBO stream only")
    s.set_defaults(func=cmd_sim)

    r = sub.add_parser("run", help="run a scenario (sim, udp via tcpreplay, serial via socat) into run directories")
    r.add_argument("scenario", help="scenario file (TOML), e.g. scenarios/udp-baseline.toml")
    r.add_argument("--out", metavar="DIR", help="where run directories go (default: reports/runs)")
    r.set_defaults(func=cmd_run)

    from .stats import METHODS, NEAREST

    rp = sub.add_parser("report", help="(re)build a run's report.md, plots, HdrHistogram logs and summary latency")
    rp.add_argument("run_dir", metavar="RUN_DIR")
    rp.add_argument("--method", choices=METHODS, default=NEAREST, help="percentile method (default: nearest rank)")
    rp.add_argument("--csv", action="store_true", help="also write latency.csv, one row per message")
    rp.set_defaults(func=cmd_report)

    st = sub.add_parser("stats", help="latency statistics of an external CSV log (one latency in ns per line)")
    st.add_argument("file", help="CSV with a header row")
    st.add_argument("--column", help="the column holding latencies in ns (default: the only column)")
    st.add_argument("--method", choices=METHODS, default=NEAREST, help="percentile method (default: nearest rank)")
    st.add_argument("--json", action="store_true",
                    help="one JSON object: count, mean, min, max, p50, p90, p95, p99, p999, p9999, stddev")
    st.set_defaults(func=cmd_stats)

    dp = sub.add_parser("dump", help="a run's logs as CSV on stdout")
    dp.add_argument("what", choices=["bbo"], help="bbo: seq,stock,bid_px,bid_qty,ask_px,ask_qty")
    dp.add_argument("run_dir", metavar="RUN_DIR")
    dp.set_defaults(func=cmd_dump)

    i = sub.add_parser("inspect", help="per-type message counts and framing accounting of a capture")
    i.add_argument("capture", help="pcap/pcapng of MoldUDP64 over UDP, or a binary ITCH 5.0 file")
    i.add_argument("--port", type=int, help="only UDP datagrams to this port")
    i.add_argument("--json", action="store_true", help="print the full JSON report")
    i.set_defaults(func=cmd_inspect)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except UserError as e:
        print(f"itchbench: {e}", file=sys.stderr)
        return 2
    except (sim.CaptureError, rundir.RunDirError, logs.LogFormatError, ScenarioError, StatsError) as e:
        print(f"itchbench: {e}", file=sys.stderr)
        return 2
    except sim.IncompleteRun as e:
        print(f"itchbench: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except (ToolError, paths.ToolMissing, FileNotFoundError) as e:
        print(f"itchbench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("itchbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
