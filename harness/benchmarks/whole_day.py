"""A whole day end to end against a peer's bare replay of the same file:
`itchbench sim` (the gateway's simulation with every stage stamped, then the
run's report) on the file as it is and on each compressed copy given, against
the peer command on the plain file, interleaved.

    .venv/bin/python harness/benchmarks/whole_day.py DAY.itch [DAY.itch.gz DAY.itch.zst] \\
        --peer '../shared/peers/itch-book.sh run {file} replay' [--rounds 1] [--json FILE]

Each round runs the peer first in odd rounds and last in even ones, every
run after a sync with the file dropped from the page cache and read back
once (settle.py), so none pays for another's write-back or for the disk.
Wall time is each command's own, start to exit; peak RSS the largest
process it ran (RUSAGE_CHILDREN in a fresh Python child, as
side_by_side.py). Ours is split into its parts: the gateway's process,
start to exit (gateway-usage.json), each pass of the report over the
latency log (the run directory's progress.log, read by progress.finished),
and the rest (start-up, hashing the input, reconciliation, the report's
tables and plots). The gateway is also run alone on each file (the
binary with the flags `itchbench sim` gives it, nothing beside it), next to
ours in the round: what the report costs on top is ours beyond that. ours /
peer is wall time over wall time.

What a run remembers of an input (its digest, itch-inspect's count: a whole
read each, captures/remembered.py) is forgotten, then ours runs once on each
input before the first round: its first run, as a new day's nightly run is,
kept apart (first_run in the JSON). The rounds are later runs, which read
them back, so that what they are judged on does not turn on how many rounds
were asked for.
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import isolated
from itchbench import paths, progress
from itchbench.analysis import latency_pass
from itchbench.captures import remembered
from itchbench.documents.performance import ALONE
from settle import settle

# Each part of the report and the names its pass may have in progress.log (the first pass takes the gateway's
# index of the latency log when it has written one, and reads the log otherwise; the second is counted while the
# gateway writes the log, or read after it).
PASSES = (((f"report, {latency_pass.FIRST_PASS}", f"report, {latency_pass.FIRST_PASS_INDEXED}"), "report pass 1"),
          ((f"report, {latency_pass.SECOND_PASS}", f"report, {latency_pass.SECOND_PASS_FOLLOWED}"),
           "report pass 2"))


def _timed(cmd: list[str]) -> tuple[float, int, str]:
    """(wall s, peak RSS KiB of the largest process, stdout), run in a fresh Python child (_isolated)."""
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"whole_day: {shlex.join(cmd)} exited with {proc.returncode}: {proc.stderr.strip()[-800:]}")
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, proc.stdout


def measure(a: dict) -> dict:
    """One run: the peer's command on the file, or ours (itchbench sim) with its parts."""
    capture = Path(a["file"])
    settle(capture)
    if a["who"] == "peer":
        wall, rss, _ = _timed(shlex.split(a["peer"].replace("{file}", shlex.quote(str(capture)))))
        return {"wall_s": wall, "rss_kib": rss}
    if a["who"] == "gateway":
        with tempfile.TemporaryDirectory(prefix="whole-day-", dir=a["work"]) as tmp:
            wall, rss, _ = _timed([str(paths.tool("itch-gateway")), "--source", "sim", "--capture", str(capture),
                                   "--out", tmp, "--progress"])
        return {"wall_s": wall, "rss_kib": rss}
    with tempfile.TemporaryDirectory(prefix="whole-day-", dir=a["work"]) as tmp:
        run = Path(tmp) / "run"
        wall, rss, _ = _timed([str(Path(sys.executable).parent / "itchbench"), "sim", str(capture), "--out", str(run)])
        ended = {f.what: f for f in progress.finished(run / "progress.log")}
        found = {label: next((ended[w] for w in names if w in ended), None) for names, label in PASSES}
        missing = [label for label, f in found.items() if f is None]
        if missing:
            raise SystemExit(f"whole_day: {run / 'progress.log'} does not say when {', '.join(missing)} ended")
        gateway = json.loads((run / "gateway-usage.json").read_text())
        took = json.loads((run / "gateway.json").read_text())["messages_received"]
        parts = {"gateway": {"seconds": gateway["wall_s"], "records": took}}
        parts |= {label: {"seconds": f.seconds, "records": f.done} for label, f in found.items() if f is not None}
        parts["rest"] = {"seconds": wall - sum(p["seconds"] for p in parts.values()), "records": None}
        return {"wall_s": wall, "rss_kib": rss, "gateway_rss_kib": gateway["max_rss_kib"], "parts": parts}


def _run(who: str, file: Path, peer: str, work: Path) -> dict:
    """One measured run (measure()) in a fresh Python child."""
    return isolated.call("whole_day", {"who": who, "file": str(file), "peer": peer, "work": str(work)})


def _said(got: dict) -> str:
    parts = "".join(f", {k} {v['seconds']:.1f} s" for k, v in got.get("parts", {}).items())
    return f"{got['wall_s']:.1f} s, peak RSS {got['rss_kib'] / 1024:.0f} MiB{parts}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("day", type=Path, metavar="DAY", help="the day as a binary ITCH file (the peer reads this one)")
    p.add_argument("compressed", nargs="*", type=Path, metavar="COMPRESSED",
                   help="the same day compressed (.gz, .zst): ours runs each as well")
    p.add_argument("--peer", required=True, help="peer command; {file} is replaced by the plain file")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--work", type=Path, default=None, help="where run directories go while measured (default: "
                   "the build folder; each is removed after its figures are read)")
    p.add_argument("--json", type=Path, default=None, help="also write every run's figures here")
    args = p.parse_args()
    for f in [args.day, *args.compressed]:
        if not f.is_file():
            raise SystemExit(f"whole_day: no such file: {f}")
    work = args.work or paths.build_dir() / "whole-day"
    work.mkdir(parents=True, exist_ok=True)
    inputs = [args.day, *args.compressed]
    record: dict = {"peer": args.peer, "day": args.day.name, "bytes": {f.name: f.stat().st_size for f in inputs},
                    "first_run": {}, "rounds": []}
    for f in inputs:
        remembered.forget(f)
        print(f"first run: {f.name} ...", file=sys.stderr, flush=True)
        record["first_run"][f.name] = got = _run("ours", f, args.peer, work)
        print(f"first run: {f.name}: {_said(got)}", file=sys.stderr, flush=True)
    for r in range(1, args.rounds + 1):
        # Each input's run beside its gateway alone; the peer first in odd rounds, last in even ones.
        ours = [(who, f) for f in inputs for who in ("ours", "gateway")]
        order = [("peer", args.day), *ours] if r % 2 else [*ours[::-1], ("peer", args.day)]
        runs: dict[str, dict] = {}
        for who, file in order:
            name = {"peer": "peer", "ours": file.name, "gateway": f"{ALONE}{file.name}"}[who]
            print(f"round {r}: {name} ...", file=sys.stderr, flush=True)
            runs[name] = _run(who, file, args.peer, work)
            print(f"round {r}: {name}: {_said(runs[name])}", file=sys.stderr, flush=True)
        record["rounds"].append(runs)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
