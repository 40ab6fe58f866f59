"""itchbench check-host: which recommended low-latency settings this host lacks, and the commands."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("check-host", help="say which recommended low-latency host settings are missing (changes "
                       "nothing)",
                       description="Read the host (kernel command line and the isolation it got, THP, sysctls, SMT, "
                       "governor, irqbalance) and say which recommended settings for measuring a gateway are "
                       "missing, each with the command that would set it. Nothing is changed. Exit 0; with "
                       "--strict, 1 when a setting is missing. docs/host.md")
    c.add_argument("--cpus", default="", metavar="LIST",
                   help="the gateway's CPUs, e.g. 2-5: isolation is checked for them (default: any)")
    c.add_argument("--strict", action="store_true", help="exit 1 when a recommended setting is missing")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..host import check, facts
    found = check.checks(facts.snapshot(), args.cpus)
    for line in check.lines(found):
        print(line)
    return 1 if args.strict and any(c.ok is False for c in found) else 0
