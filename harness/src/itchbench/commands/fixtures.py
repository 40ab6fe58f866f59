"""itchbench fixtures verify|regenerate: the committed fixtures against their
recipes, sha256 and golden BBO digests."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser("fixtures", help="check or rebuild the committed fixtures from their recipes",
                       description="verify: regenerate each fixture from its recipe and compare sha256 with the "
                       "committed file and the manifest, then replay the committed file in simulation and "
                       "compare its BBO digest and event count with the golden ones. regenerate: rewrite "
                       "the files, their sha256 and golden digests. ensure: make the fixtures that are not "
                       "committed (too large) from their recipes, checked against the manifest's sha256 (set-up "
                       "runs it).")
    f.add_argument("action", choices=["verify", "regenerate", "ensure"])
    f.set_defaults(func=run)


def verify_all(indent: str = "") -> bool:
    from ..captures import fixtures
    ok = True
    for fx in fixtures.load_manifest():
        verdict = fixtures.verify(fx)
        print(indent + verdict.explain(), flush=True)
        ok &= verdict.ok
    return ok


def run(args: argparse.Namespace) -> int:
    from ..captures import fixtures
    if args.action == "verify":
        return 0 if verify_all() else 1
    if args.action == "ensure":
        for fx in fixtures.load_manifest():
            if not fx.committed:
                made = fixtures.ensure(fx)
                print(f"{fx.file}: {'made from its recipe' if made else 'present'} (sha256 {fx.sha256[:16]}…)")
        return 0
    updated = []
    for fx in fixtures.load_manifest():
        fixtures.regenerate(fx, fx.path)
        sha = fixtures.sha256_of(fx.path)
        golden = fixtures.golden_of(fx.path)
        changed = sha != fx.sha256 or golden != fx.golden
        print(f"{fx.file}: {sha} {golden['bbo_digest']}{'  (changed)' if changed else ''}")
        updated.append(fixtures.Fixture(**{**fx.__dict__, "sha256": sha, "golden": golden}))
    fixtures.save_manifest(updated)
    return 0
