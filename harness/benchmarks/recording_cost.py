"""What recording the latency log costs the gateway's simulation, per message:
runs without the log and with it (once per variant given) interleaved round
by round on the same capture, the hot thread pinned, measured two ways.

    .venv/bin/python harness/benchmarks/recording_cost.py FILE [--rounds 9] [--cpu 1] \\
        [--stamps all] [--variant 'wide=--latency-format wide'] [--gateway base=PATH] \\
        [--relative-to LABEL] [--mode settled|as-users-run|both] [--out-parent DIR] [--json FILE]

Variants: each `--stamps S` is the gateway's `--stamps S`; each `--variant
LABEL=FLAGS` adds FLAGS to the gateway's command line (default: `--stamps
all`). Each `--gateway LABEL=PATH` is another build run with every variant
its flags make sense for (a variant is left out for a build whose --help
does not name every option it gives); every gateway also runs unrecorded (`--no-latency-log`),
and a variant's cost is its ns a message minus its own gateway's unrecorded
run of the same round.

Two ways of measuring, each every round (`--mode both`, the default):

- settled: before every run the page cache's dirty pages are written back
  (sync) and the capture is dropped from the page cache and read back
  (settle.py), so a run pays neither for the logs of the run before it nor
  for reading the capture: the hot path's own cost.
- as-users-run: the same runs back to back as a user runs them, each a
  fresh process writing to the real disk (`--out-parent`, default a
  directory beside the build, never a tmpfs), nothing settled between them:
  a run pays for the write-back and page allocation its neighbours cause.

Each round runs every variant once per mode, in an order that rotates from
round to round; a run's rate is its own `messages_per_s` (gateway.json).
Prints each round's ns a message, then per mode and variant the median of
its per-round differences from its unrecorded run, with their range, and
the noise the runs saw (median steal share of the CPUs, the hot thread's
involuntary switches). For a build that counts its stage-clock reads
(gateway.json `clock.stage_reads`), a recorded variant's line also gives the
least those reads cost a message: reads a message times one read back to
back (`clock.timer_overhead_ns`). Amid the pipeline a read costs more; what
recording costs beyond that floor is the record, its bytes and the reads'
extra cost where they meet the book's memory traffic. `--relative-to LABEL`
sets each recorded variant against another round by round: with a variant
of `--latency-histogram` (per-stage histograms of the same stamps, no
per-message record), what the per-message log costs beyond a histogram.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from itchbench import paths
from itchbench.runs import noise
from settle import settle

MODES = ("settled", "as-users-run")


@dataclass(frozen=True)
class Variant:
    label: str
    gateway: str            # label of its gateway
    flags: tuple[str, ...]  # () with recorded False: the gateway's unrecorded run
    recorded: bool


@dataclass
class Measure:
    ns: float
    steal_share: float
    involuntary: int
    reads: float | None    # stage-clock reads a message (gateway.json clock.stage_reads; None: a build that omits it)
    read_ns: float | None  # one read back to back (clock.timer_overhead_ns)

    @property
    def clock_floor_ns(self) -> float | None:
        """The least the stamps' own clock reads cost a message: each as cheap as back to back."""
        return None if self.reads is None or self.read_ns is None else self.reads * self.read_ns


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("capture", type=Path, metavar="FILE")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--cpu", type=int, default=None, help="pin the gateway's hot thread to this CPU (--cpu)")
    p.add_argument("--stamps", action="append", default=[], help="a stamp set to record with (--stamps); repeat")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL=FLAGS",
                   help="a recorded variant: the gateway's flags (e.g. 'wide=--latency-format wide'); repeat")
    p.add_argument("--gateway", action="append", default=[], metavar="LABEL=PATH",
                   help="another itch-gateway build to run every variant with (default: this build only)")
    p.add_argument("--relative-to", default=None, metavar="LABEL",
                   help="also give each recorded variant's cost over this variant's, round by round (e.g. a "
                        "histogram variant: what the per-message log costs beyond a histogram of the same stamps)")
    p.add_argument("--mode", choices=(*MODES, "both"), default="both")
    p.add_argument("--out-parent", type=Path, default=None,
                   help="where the run directories go (default: settled $TMPDIR, as-users-run build/recording-cost)")
    p.add_argument("--json", type=Path, default=None, help="also write every run's figures here")
    args = p.parse_args()
    if not args.capture.is_file():
        raise SystemExit(f"recording_cost: no such file: {args.capture}")
    if args.rounds < 1:
        raise SystemExit("recording_cost: --rounds must be at least 1")
    gateways = {"head": paths.tool("itch-gateway")}
    for label, path in (_pair(g, "--gateway") for g in args.gateway):
        if label in gateways:
            raise SystemExit(f"recording_cost: --gateway {label}: that label is taken"
                             f"{' (head is this build)' if label == 'head' else ''}")
        gateways[label] = Path(path)
    for label, path in gateways.items():
        if not Path(path).is_file():
            raise SystemExit(f"recording_cost: gateway {label}: no such file: {path}")
    recorded = [(f"stamps {s}", ("--stamps", s)) for s in args.stamps]
    recorded += [(label, tuple(flags.split())) for label, flags in (_pair(v, "--variant") for v in args.variant)]
    variants = _variants(gateways, recorded or [("stamps all", ("--stamps", "all"))])
    if args.relative_to is not None and not any(v.recorded and v.label == args.relative_to for v in variants):
        raise SystemExit(f"recording_cost: --relative-to {args.relative_to}: no recorded variant has that label "
                         f"(labels: {', '.join(sorted({v.label for v in variants if v.recorded}))})")
    modes = MODES if args.mode == "both" else (args.mode,)
    parents = {"settled": args.out_parent, "as-users-run": args.out_parent or paths.build_dir() / "recording-cost"}
    print(f"capture {args.capture.name}, {'hot thread on CPU %d' % args.cpu if args.cpu is not None else 'not pinned'}"
          f", gateways: " + ", ".join(f"{k} {v}" for k, v in gateways.items()))
    for mode in modes:
        print(f"{mode}: run directories in {parents[mode] or tempfile.gettempdir()}")
    got: dict[tuple[str, Variant], list[Measure]] = {(m, v): [] for m in modes for v in variants}
    width = max(len(_name(v)) for v in variants) + 2
    for r in range(args.rounds):
        for mode in modes:
            shift = r % len(variants)
            for v in variants[shift:] + variants[:shift]:
                got[(mode, v)].append(run_once(args.capture, gateways[v.gateway], v, args.cpu, mode, parents[mode]))
            print(f"round {r + 1:>2} {mode:<13} " + "  ".join(f"{_name(v)} {got[(mode, v)][-1].ns:.1f}"
                                                          for v in variants) + "  (ns a message)", flush=True)
    for mode in modes:
        print(f"\n{mode}:")
        for v in variants:
            mine = got[(mode, v)]
            line = (f"  {_name(v):<{width}} {statistics.median(m.ns for m in mine):>7.1f} ns a message "
                    f"(range {min(m.ns for m in mine):.1f}-{max(m.ns for m in mine):.1f})")
            if v.recorded:
                off = got[(mode, next(u for u in variants if u.gateway == v.gateway and not u.recorded))]
                diffs = [a.ns - b.ns for a, b in zip(mine, off)]
                line += (f", recording {statistics.median(diffs):+.1f} ns a message "
                         f"(median of {len(diffs)} per-round differences, {min(diffs):+.1f} to {max(diffs):+.1f})")
                floors = [m.clock_floor_ns for m in mine]
                if all(f is not None for f in floors):
                    line += (f", of which the stamps' {statistics.median(m.reads for m in mine):.2f} clock reads a "
                             f"message take at least {statistics.median(floors):.1f} ns "
                             f"({statistics.median(m.read_ns for m in mine):.1f} ns each, back to back)")
                ref = next((u for u in variants if u.gateway == v.gateway and u.recorded
                            and u.label == args.relative_to), None)
                if ref is not None and ref is not v:
                    over = [a.ns - b.ns for a, b in zip(mine, got[(mode, ref)])]
                    line += (f", {statistics.median(over):+.1f} ns a message over {ref.label} "
                             f"({min(over):+.1f} to {max(over):+.1f})")
            line += (f"; steal {100 * statistics.median(m.steal_share for m in mine):.1f} %, hot thread "
                     f"{statistics.median(m.involuntary for m in mine):.0f} involuntary switches")
            print(line)
    if args.json:
        args.json.write_text(json.dumps({
            "capture": args.capture.name, "cpu": args.cpu, "gateways": {k: str(v) for k, v in gateways.items()},
            "runs": [{"mode": mode, "gateway": v.gateway, "variant": v.label if v.recorded else "off",
                      "flags": list(v.flags), "ns": [m.ns for m in ms], "steal_share": [m.steal_share for m in ms],
                      "involuntary_switches": [m.involuntary for m in ms],
                      "clock_reads_per_message": [m.reads for m in ms], "clock_read_ns": [m.read_ns for m in ms]}
                     for (mode, v), ms in got.items()],
        }, indent=1) + "\n")
    return 0


def _pair(text: str, option: str) -> tuple[str, str]:
    label, sep, value = text.partition("=")
    if not sep or not label:
        raise SystemExit(f"recording_cost: {option} takes LABEL=VALUE, not {text!r}")
    return label, value


def _variants(gateways: dict[str, Path], recorded: list[tuple[str, tuple[str, ...]]]) -> list[Variant]:
    out = []
    for g, path in gateways.items():
        out.append(Variant("off", g, ("--no-latency-log",), False))
        help_text = subprocess.run([str(path), "--help"], capture_output=True, text=True).stdout
        out += [Variant(label, g, flags, True) for label, flags in recorded if _knows(help_text, flags)]
    return out


def _knows(help_text: str, flags: tuple[str, ...]) -> bool:
    """Whether a build's --help names every option of flags: an older build lacks the newer ones
    (--latency-format came with compact logs, --latency-histogram after), and its runs leave such variants out."""
    return all(re.search(rf"{re.escape(f.split('=')[0])}\b", help_text) for f in flags if f.startswith("--"))


def _name(v: Variant) -> str:
    return f"{v.gateway}:{'no latency log' if not v.recorded else v.label}"


def run_once(capture: Path, gateway: Path, v: Variant, cpu: int | None, mode: str, parent: Path | None) -> Measure:
    """One gateway run: its processing loop's ns a message, and the noise it saw."""
    if mode == "settled":
        settle(capture)
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="recording-cost-", dir=parent))
    try:
        cmd = [str(gateway), "--source", "sim", "--capture", str(capture), "--out", str(out), *v.flags]
        if cpu is not None:
            cmd += ["--cpu", str(cpu)]
        before = noise.cpu_times()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        cpus = noise.cpu_noise(before, noise.cpu_times())
        if proc.returncode != 0:
            raise SystemExit(f"recording_cost: {' '.join(cmd)} exited with {proc.returncode}: "
                             f"{proc.stderr.strip()[-500:]}")
        report = json.loads((out / "gateway.json").read_text())
        hot = noise.hot_thread(report.get("noise", {}).get("threads", [])) or {}
        steal = statistics.median(c["steal_share"] for c in cpus.values()) if cpus else 0.0
        clock = report.get("clock", {})
        received = int(report["messages_received"])
        reads = clock["stage_reads"] / received if "stage_reads" in clock and received else None
        return Measure(1e9 / float(report["messages_per_s"]), steal, int(hot.get("involuntary_switches", 0)), reads,
                       clock.get("timer_overhead_ns"))
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
