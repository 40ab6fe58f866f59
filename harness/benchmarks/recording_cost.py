"""What recording the latency log costs the gateway's simulation, per message:
runs without the log and with it (once per stamp set given) interleaved round
by round on the same capture, the hot thread pinned.

    .venv/bin/python harness/benchmarks/recording_cost.py FILE [--rounds 9] [--cpu 1] \\
        [--stamps book --stamps all] [--out-parent DIR]

Each round runs every variant once, in an order that rotates from round to
round, each a fresh gateway process (`--source sim`, BBO log on) whose rate is
its own `messages_per_s` (gateway.json). Before every run the page cache's
dirty pages are written back (sync): a run otherwise pays for writing back
the logs of the one before it, and the variant that follows a recorded run
would carry the cost; and the capture is read through once, so that no run
reads it from disk (settle.py). --cpu pins the gateway's hot thread (its own --cpu);
the log's provisioning thread runs elsewhere, as in use. --out-parent puts the
run directories on another file system (a tmpfs shows the hot path without
the disk). Prints each round's ns a message per variant, then per variant the
median of its per-round differences from the unrecorded run, with their range.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from itchbench import paths
from settle import settle

UNRECORDED = "off"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("capture", type=Path, metavar="FILE")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--cpu", type=int, default=None, help="pin the gateway's hot thread to this CPU (--cpu)")
    p.add_argument("--stamps", action="append", default=None,
                   help="a stamp set to record with (the gateway's --stamps); repeat for several (default: all)")
    p.add_argument("--out-parent", type=Path, default=None, help="where the run directories go (default: $TMPDIR)")
    args = p.parse_args()
    if not args.capture.is_file():
        raise SystemExit(f"recording_cost: no such file: {args.capture}")
    if args.rounds < 1:
        raise SystemExit("recording_cost: --rounds must be at least 1")
    variants = [UNRECORDED, *(args.stamps or ["all"])]
    print(f"gateway: {paths.tool('itch-gateway')}, capture {args.capture.name}, "
          f"{'hot thread on CPU %d' % args.cpu if args.cpu is not None else 'not pinned'}, "
          f"run directories in {args.out_parent or tempfile.gettempdir()}")
    print(f"{'round':>5} " + " ".join(f"{_label(v):>14}" for v in variants) + "   (ns a message)")
    ns: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(args.rounds):
        shift = r % len(variants)
        for v in variants[shift:] + variants[:shift]:
            ns[v].append(ns_per_message(args.capture, v, args.cpu, args.out_parent))
        print(f"{r + 1:>5} " + " ".join(f"{ns[v][-1]:>14.1f}" for v in variants), flush=True)
    print(f"{'median':>5} " + " ".join(f"{statistics.median(ns[v]):>14.1f}" for v in variants))
    for v in variants[1:]:
        diffs = [rec - off for rec, off in zip(ns[v], ns[UNRECORDED])]
        print(f"{_label(v)}: {statistics.median(diffs):+.1f} ns a message over {_label(UNRECORDED)} "
              f"(median of {len(diffs)} per-round differences, {min(diffs):+.1f} to {max(diffs):+.1f})")
    return 0


def _label(variant: str) -> str:
    return "no latency log" if variant == UNRECORDED else f"stamps {variant}"


def ns_per_message(capture: Path, variant: str, cpu: int | None, out_parent: Path | None) -> float:
    """One gateway run of a variant: its processing loop's nanoseconds a message."""
    settle(capture)
    with tempfile.TemporaryDirectory(prefix="recording-cost-", dir=out_parent) as tmp:
        cmd = [str(paths.tool("itch-gateway")), "--source", "sim", "--capture", str(capture), "--out", tmp]
        cmd += ["--no-latency-log"] if variant == UNRECORDED else ["--stamps", variant]
        if cpu is not None:
            cmd += ["--cpu", str(cpu)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"recording_cost: {' '.join(cmd)} exited with {proc.returncode}: "
                             f"{proc.stderr.strip()[-500:]}")
        rate = float(json.loads((Path(tmp) / "gateway.json").read_text())["messages_per_s"])
        return 1e9 / rate


if __name__ == "__main__":
    sys.exit(main())
