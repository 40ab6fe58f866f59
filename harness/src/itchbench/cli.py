"""The itchbench command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Sequence

from . import __version__, fixtures, paths
from .tools import ToolError, inspect_capture, run_tool


class UserError(RuntimeError):
    """Bad input from the user: printed without a traceback, exit 2."""


def _type_table(reports: dict[str, dict]) -> str:
    """Per-type message counts, one column per capture."""
    names = list(reports)
    width = max(12, *(len(n) for n in names))
    lines = ["type  " + "".join(f"{n:>{width + 2}}" for n in names)]
    types = list(next(iter(reports.values()))["per_type"])
    for t in types:
        lines.append(f"{t:<6}" + "".join(f"{reports[n]['per_type'][t]:>{width + 2},}" for n in names))
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
    # regenerate: rewrite the files and the manifest's sha256 from the recipes
    updated = []
    for fx in fxs:
        fixtures.regenerate(fx, fx.path)
        sha = fixtures.sha256_of(fx.path)
        print(f"{fx.file}: {sha}{'' if sha == fx.sha256 else '  (changed)'}")
        updated.append(fixtures.Fixture(**{**fx.__dict__, "sha256": sha}))
    fixtures.save_manifest(updated)
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    report = inspect_capture(Path(args.capture), args.port)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(_type_table({Path(args.capture).name: report}))
        rej = {k: v for k, v in report["rejected"].items() if v}
        print(f"rejected: {rej or 'none'}")
        if not report["complete"]:
            print(f"ERROR: {report['error']}")
    return 0 if report["complete"] and not any(report["rejected"].values()) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    fxs = fixtures.load_manifest()
    print(f"[1/2] verifying {len(fxs)} fixtures against their recipes")
    failed = False
    for fx in fxs:
        verdict = fixtures.verify(fx)
        print("  " + verdict.explain())
        failed |= not verdict.ok
    print("[2/2] decoding the fixtures")
    reports = {fx.name: inspect_capture(fx.path) for fx in fxs}
    print(_type_table(reports))
    for name, rep in reports.items():
        mold = rep["mold"]
        rejected = sum(rep["rejected"].values())
        print(f"  {name}: {rep['messages']:,} messages in {mold['packets']:,} packets, "
              f"sequence {mold['first_sequence']}..{mold['last_sequence']}, "
              f"{mold['gap_messages']} missing, {rejected} rejected")
        failed |= rejected > 0 or not rep["complete"]
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="itchbench",
        description="Deterministic ITCH 5.0 replay testbench: replay captures into a gateway, "
        "record latency and BBO output, and report.",
    )
    p.add_argument("--version", action="version", version=f"itchbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    d = sub.add_parser("demo", help="verify and decode the bundled fixtures (the README's main job)")
    d.set_defaults(func=cmd_demo)

    f = sub.add_parser("fixtures", help="check or rebuild the committed fixtures from their recipes")
    f.add_argument("action", choices=["verify", "regenerate"])
    f.set_defaults(func=cmd_fixtures)

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
    except (ToolError, paths.ToolMissing, FileNotFoundError) as e:
        print(f"itchbench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("itchbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
