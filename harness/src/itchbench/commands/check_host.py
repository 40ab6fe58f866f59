"""itchbench check-host: which recommended low-latency settings this host lacks, and the commands."""

from __future__ import annotations

import argparse

from .common import UserError


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("check-host", help="say which recommended low-latency host settings are missing (changes "
                       "nothing)",
                       description="Read the host (kernel command line and the isolation it got, THP, sysctls, SMT, "
                       "governor, irqbalance) and say which recommended settings for measuring a gateway are "
                       "missing, each with the command that would set it. Nothing is changed. Exit 0; with "
                       "--strict, 1 when a setting is missing. docs/host.md")
    c.add_argument("--cpus", default="", metavar="LIST",
                   help="the gateway's CPUs, e.g. 2-5: isolation is checked for them (default: any; the commands "
                        "then name every online CPU but the first)")
    c.add_argument("--strict", action="store_true", help="exit 1 when a recommended setting is missing")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..host import check, facts
    from ..runs import placement
    online = check.online_cpus()
    try:
        asked = placement.cpu_list(args.cpus) if args.cpus else set()
    except ValueError:
        raise UserError(f"check-host: --cpus takes a CPU list such as 2-5 or 1,3 (got {args.cpus!r})") from None
    if asked - online:
        raise UserError(f"check-host: --cpus {args.cpus} names CPUs this machine does not have: "
                        f"{check.cpu_list_text(asked - online)} (online: {check.cpu_list_text(online)})")
    found = check.checks(facts.snapshot(), args.cpus, online)
    for line in check.lines(found):
        print(line)
    return 1 if args.strict and any(c.ok is False for c in found) else 0
