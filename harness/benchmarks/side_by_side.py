"""The gateway's simulation against any peer command on the same files,
interleaved, each process pinned to the same CPU: per-round ratios, medians,
peak RSS.

    .venv/bin/python harness/benchmarks/side_by_side.py FILE [FILE ...] \\
        --peer '../shared/peers/itch-book.sh run {file} replay' [--rounds 5] [--cpu 1] [--latency-log] \\
        [--gateway-flags '--levels 5'] [--json FILE]

    # decoding alone, ours against the peer's decode mode:
    .venv/bin/python harness/benchmarks/side_by_side.py FILE --cpu 1 \\
        --ours 'env ITCHBENCH_ITCH_FILE={file} build/gateway/bench/decode_bench --benchmark_filter=ItchFile' \\
        --ours-rate 'items_per_second=([\d.]+)([kMG]?)/s' --peer '../shared/peers/itch-book.sh run {file} decode'

Each round runs ours and the peer once per file, in alternating order (ours
first in odd rounds, the peer first in even ones), each a fresh process that
starts after a sync (the page cache's dirty pages written back), so that
neither pays for writing back the logs of the run before it, and with the file
dropped from the page cache and read back once, so that neither pays for
reading it from disk and both find it as a file read from disk (settle.py).
Throughput is what each reports of itself: the gateway's `messages_per_s`
(gateway.json: its processing loop, capture reading included, latency log
off unless --latency-log, BBO log on), and the peer's figure parsed from its
output with --peer-rate (a regex whose first group is messages per second).
Any other command of ours can stand in for the gateway's simulation
(--ours, its rate found by --ours-rate). A rate pattern's first group is a
number; a second group, if the pattern has one, an SI suffix (k, M, G).
Peak RSS is the process's own (wait4), the peer's wrapper script included
when it has one. The ratio is ours / peer: above 1, ours is faster; besides
the median of the per-round ratios, the ratio of each side's best round.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import isolated
from itchbench import paths
from itchbench.captures.inspect import inspect_capture
from settle import settle

# A command's rate is of the whole file only if the file at that rate fits in the time the command ran, with room
# for the clock's reading and a rate rounded in its print.
WALL_SLACK = 1.02
# Digits with thousands separators too: "15,000,000 msg/s" was read as its last group, 0 msg/s.
DEFAULT_PEER_RATE = r"(?<![\d,.])((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?) msg/s"


def _run(cmd: list[str], cpu: int | None) -> tuple[str, int, float]:
    """(stdout, peak RSS KiB, wall seconds). Called in a fresh Python child (_isolated): RUSAGE_CHILDREN's
    high-water mark is then the largest process this one command ran, a wrapper script's children included."""
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        ended = (f"was killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
                 else f"exited with {proc.returncode}")
        raise SystemExit(f"side_by_side: {shlex.join(cmd)} {ended}: {proc.stderr.strip()[-500:]}")
    return proc.stdout, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, wall


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.add_argument("--peer", required=True, help="peer command; {file} is replaced by the file")
    p.add_argument("--peer-rate", default=DEFAULT_PEER_RATE, help="regex, first group = messages per second")
    p.add_argument("--ours", default="", help="a command of ours instead of the gateway's simulation ({file})")
    p.add_argument("--ours-rate", default=DEFAULT_PEER_RATE, help="regex for --ours, as --peer-rate")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cpu", type=int, default=None, help="pin both to this CPU (taskset)")
    p.add_argument("--latency-log", action="store_true", help="the gateway records its latency log too")
    p.add_argument("--gateway-flags", default="", metavar="FLAGS",
                   help="more of the gateway's options, e.g. '--levels 5' (depth of book against the peer)")
    p.add_argument("--json", type=Path, default=None, help="also write every round's figures here")
    args = p.parse_args()
    re.compile(args.peer_rate)  # a bad pattern fails here, before any run
    re.compile(args.ours_rate)
    for f in args.files:
        if not f.is_file():
            raise SystemExit(f"side_by_side: no such file: {f}")
    if args.ours and args.gateway_flags:
        raise SystemExit("side_by_side: --gateway-flags is for the gateway's simulation, not an --ours command")
    print(f"ours: {args.ours}" if args.ours else
          f"ours: {paths.tool('itch-gateway')} {args.gateway_flags} (latency log {'on' if args.latency_log else 'off'}, "
          "BBO log on)")
    print(f"peer: {args.peer}")
    print(f"pinned to CPU {args.cpu}" if args.cpu is not None else "not pinned")
    record: dict = {"ours": args.ours or str(paths.tool("itch-gateway")), "peer": args.peer, "cpu": args.cpu,
                    "latency_log": args.latency_log, "gateway_flags": args.gateway_flags, "files": []}
    for f in args.files:
        # What a command's rate must be of (command_once); an empty file stands in for a capture in the tests.
        messages = int(inspect_capture(f)["messages"]) if f.stat().st_size else 0
        print(f"\n{f.name}: {args.rounds} rounds, alternating order")
        print(f"{'round':>5} {'ours msg/s':>14} {'peer msg/s':>14} {'ratio':>7} {'ours RSS MiB':>16} {'peer RSS MiB':>13}")
        ratios, gws, peers, gw_rss, peer_rss = [], [], [], [], []
        for r in range(1, args.rounds + 1):
            order = ("gw", "peer") if r % 2 else ("peer", "gw")
            results = {}
            for who in order:
                results[who] = _isolated(who, f, args, messages)
            g, gr = results["gw"]
            pr, prss = results["peer"]
            gws.append(g)
            peers.append(pr)
            gw_rss.append(gr)
            peer_rss.append(prss)
            ratios.append(g / pr)
            print(f"{r:>5} {g:>14,.0f} {pr:>14,.0f} {g / pr:>7.3f} {gr / 1024:>16.1f} {prss / 1024:>13.1f}", flush=True)
        print(f"{'median':>5} {statistics.median(gws):>14,.0f} {statistics.median(peers):>14,.0f} "
              f"{statistics.median(ratios):>7.3f} {statistics.median(gw_rss) / 1024:>16.1f} "
              f"{statistics.median(peer_rss) / 1024:>13.1f}")
        print(f"ratio range {min(ratios):.3f}–{max(ratios):.3f} (ours / peer; above 1 ours is faster)")
        # A neighbour on a shared machine only ever slows a run down: each side's best round is its least
        # disturbed one, a second reading beside the median.
        print(f"best rounds {max(gws):,.0f} and {max(peers):,.0f} msg/s: ratio {max(gws) / max(peers):.3f}")
        record["files"].append({"file": f.name, "ours_msg_per_s": gws, "peer_msg_per_s": peers, "ratios": ratios,
                                "ours_rss_kib": gw_rss, "peer_rss_kib": peer_rss})
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


def _isolated(who: str, capture: Path, args: argparse.Namespace, messages: int) -> tuple[float, int]:
    """One measurement in a fresh Python child, so that its peak RSS is that process's own."""
    value, rss = isolated.call("side_by_side", {
        "who": who, "file": str(capture), "messages": messages, "cpu": args.cpu, "latency_log": args.latency_log,
        "peer": args.peer,
        "rate": args.peer_rate, "ours": args.ours, "ours_rate": args.ours_rate, "gateway_flags": args.gateway_flags})
    return value, rss


def measure(a: dict) -> tuple[float, int]:
    """One side of a round: the gateway's simulation, or a command (ours or the peer's) and its rate pattern."""
    capture = Path(a["file"])
    settle(capture)
    if a["who"] == "gw" and not a["ours"]:
        return gateway_once(capture, a["cpu"], a["latency_log"], shlex.split(a["gateway_flags"]))
    template, rate = (a["ours"], a["ours_rate"]) if a["who"] == "gw" else (a["peer"], a["rate"])
    return command_once(template, capture, a["cpu"], re.compile(rate), a["messages"])


def gateway_once(capture: Path, cpu: int | None, latency_log: bool, flags: list[str]) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as tmp:
        cmd = [str(paths.tool("itch-gateway")), "--source", "sim", "--capture", str(capture), "--out", tmp, *flags]
        if not latency_log:
            cmd.append("--no-latency-log")
        _, rss, _ = _run(cmd, cpu)
        gw = json.loads((Path(tmp) / "gateway.json").read_text())
        return float(gw["messages_per_s"]), rss


def command_once(template: str, capture: Path, cpu: int | None, rate: re.Pattern[str],
                 messages: int) -> tuple[float, int]:
    """A command's rate, parsed from its output; refused when the file's messages at that rate would take longer
    than the command ran: a rate of part of the file, or a number the pattern took for one (a rate too low would
    inflate every ratio taken over it)."""
    cmd = shlex.split(template.replace("{file}", shlex.quote(str(capture))))
    out, rss, wall = _run(cmd, cpu)
    m = rate.search(out)
    if not m:
        raise SystemExit(f"side_by_side: no rate matching {rate.pattern!r} in the output of {template}:\n{out[-500:]}")
    scale = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2) or ""] if rate.groups >= 2 else 1.0
    value = float(m.group(1).replace(",", "")) * scale
    if not value > 0:  # a ratio over no rate at all is no figure
        raise SystemExit(f"side_by_side: {m.group(0)!r} in the output of {template} is no rate")
    if messages / value > wall * WALL_SLACK:
        raise SystemExit(f"side_by_side: {m.group(0)!r} in the output of {template} is no rate of the whole file: "
                         f"its {messages:,} messages at that rate take {messages / value:,.2f} s, and the command "
                         f"ran {wall:,.2f} s")
    return value, rss


if __name__ == "__main__":
    sys.exit(main())
