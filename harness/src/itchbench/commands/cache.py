"""itchbench cache [prune]: what is cached under reports/cache/, and removing it."""

from __future__ import annotations

import argparse
import time

from .common import UserError


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("cache", help="list or prune what is cached (revision builds, brought gateways' checkouts, "
                                     "rewritten captures) under reports/cache",
                       description="Without an action: list every cached entry, its kind, size and when it was "
                       "last used. prune: remove them (all, or --older-than DAYS), except those a running itchbench "
                       "uses (a compare's builds, a run's capture), which are named and left; the built-in "
                       "gateway's revision worktrees are dropped from this repository's git worktree list too. "
                       "Everything cached is made again when needed.")
    c.add_argument("action", nargs="?", choices=("list", "prune"), default="list")
    c.add_argument("--older-than", type=float, metavar="DAYS", help="prune only what was not used for DAYS days")
    c.add_argument("--dry-run", action="store_true", help="prune: say what would go, remove nothing")
    c.set_defaults(func=run)


def _line(e) -> str:
    used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.used))
    return f"{e.kind:8} {e.bytes / 2**20:10,.1f} MiB  last used {used}  {e.path}"


def run(args: argparse.Namespace) -> int:
    from .. import cache
    # `not >= 0`: nan as well, which no age matches (prune would say it removed nothing)
    if args.older_than is not None and (args.action != "prune" or not args.older_than >= 0):
        raise UserError("cache: --older-than takes a number of days (0 or more), with prune")
    if args.action == "list":
        found = cache.entries()
        for e in found:
            print(_line(e))
        print(f"{len(found)} entries, {sum(e.bytes for e in found) / 2**20:,.1f} MiB in {cache.root()}")
        return 0
    pruned = cache.prune(args.older_than, dry_run=args.dry_run)
    for e in pruned.removed:
        print(("would remove " if args.dry_run else "removed ") + _line(e))
    for e in pruned.in_use:
        print("in use, left " + _line(e))
    print(f"{'would remove' if args.dry_run else 'removed'} {len(pruned.removed)} entries, "
          f"{sum(e.bytes for e in pruned.removed) / 2**20:,.1f} MiB"
          + (f"; {len(pruned.in_use)} left, in use by a running itchbench" if pruned.in_use else ""))
    return 0
