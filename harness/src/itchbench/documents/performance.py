"""docs/performance.md, made from runs rather than written by hand.

The benchmarks it runs are the harness's own scripts (harness/benchmarks):
side_by_side.py (the gateway's simulation against a peer command, interleaved)
and recording_cost.py (what the latency log costs, settled and as users run
it), on ITCH files generated here from recorded seeds. The document is dated
by the runs and carries the machine, the commit and every round's noise, so
that it is regenerated, never edited.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import atomic, paths
from ..host import facts as host_facts
from ..runs import environment

@dataclass(frozen=True)
class Workload:
    """A file measured: itch-synth's profile, a share of --messages, the seed, a message mix of its own (empty: the
    profile's), its number of symbols (0: the profile's), and whether the latency log's cost is measured on it
    too."""
    name: str
    profile: str
    share: float
    seed: int
    mix: str = ""
    recording: bool = False
    symbols: int = 0


# nasdaq-day's proportions, a deep book, two sessions heavy in what moves orders rather than adds them (replace
# chains, and partial executions with cancels), and a few busy symbols whose books every message moves.
WORKLOADS = (Workload("nasdaq-day", "nasdaq-day", 1.0, 1, recording=True),
             Workload("deep-book", "deep-book", 0.6, 1, recording=True),
             Workload("replace-heavy", "nasdaq-day", 1.0, 1, "A=30,U=45,D=20,E=3,X=2"),
             Workload("exec-cancel-heavy", "nasdaq-day", 1.0, 1, "A=37,D=22,E=20,X=13,C=3,U=5"),
             Workload("few-symbols", "nasdaq-day", 1.0, 1, "A=34,U=25,D=21,E=12,X=6,C=2", symbols=8))
RECORDING_VARIANTS = (("every stamp", "--stamps all"), ("book stamp only", "--stamps book"),
                      ("every stamp, wide records", "--stamps all --latency-format wide"),
                      ("every stamp, histograms", "--stamps all --latency-histogram"))
# The per-message log set against per-stage histograms of the same stamps: what exactness costs beyond them.
LOG_AGAINST_HISTOGRAMS = ("every stamp", "every stamp, histograms")


# Depth of book against the BBO alone (`--levels N`: the top N levels a side logged per change; `--levels all`:
# each level's changes), every stamp recorded in each, set against the BBO-only run of the same round. Target:
# five levels within 15 % of the BBO-only throughput.
DEPTH_BASE = "BBO only"
# Each depth measured two ways: as the throughput table runs the gateway (no latency log: the BBO and depth logs
# only; against recording_cost.py's own unrecorded run, "off", BBO only), and as `itchbench sim` runs it (every
# stamp recorded), where the log's cost is on both sides and dilutes depth's.
DEPTH_UNRECORDED, UNRECORDED_BASE = ", no latency log", "off"
_DEPTHS = (("5 levels", "--levels 5"), ("10 levels", "--levels 10"), ("every level", "--levels all"))
DEPTH_VARIANTS = ((DEPTH_BASE, "--stamps all"), *((label, f"--stamps all {flags}") for label, flags in _DEPTHS),
                  *((label + DEPTH_UNRECORDED, f"--no-latency-log {flags}") for label, flags in _DEPTHS))
DEPTH_TARGET = ("5 levels", 0.85)  # judged as the throughput table runs the gateway
DEPTH_AGAINST_PEER = 5  # levels: the gateway with this depth against the peer's bare replay, which keeps no depth
# The file the peer command is first tried on (_check_peer). The public peer times a run in whole milliseconds: on
# an AMD EPYC VM it read 3,000 messages in less than one and printed "nan msg/s", failing the check; 200,000 take it
# several (5 to 10 ms at the 20-40 M msg/s it reaches) and are generated in a few.
PROBE_MESSAGES = 200_000


# A whole day, and how it is compressed for the runs on compressed input (fast levels: generating is not measured;
# decompressing costs about the same at any level).
DAY = WORKLOADS[0]
DAY_COMPRESSORS = ((".gz", ["pigz", "-1", "-c"]), (".zst", ["zstd", "-1", "-T0", "-q", "-c"]))


@dataclass
class Plan:
    messages: int
    rounds: int
    cpu: int | None
    peer: str | None      # a command with {file}; None: no side-by-side table
    work: Path            # generated files and the scripts' JSON
    day_messages: tuple[int, ...] = ()  # days' messages, each run end to end against the peer
    day_rounds: int = 1


def _script(name: str) -> Path:
    return paths.repo_root() / "harness" / "benchmarks" / name


def _run(cmd: list[str], what: str) -> None:
    print(f"performance: {what}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, stdout=sys.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit status {done.returncode}): {' '.join(cmd)}")


def measure(plan: Plan) -> dict[str, Any]:
    """Generate the files, run the benchmarks, return everything the document shows."""
    plan.work.mkdir(parents=True, exist_ok=True)
    started = time.time()
    if plan.peer:
        _check_peer(plan)
    files = []
    for w in WORKLOADS:
        n = int(plan.messages * w.share)
        files.append({"profile": w.profile + (f", mix {w.mix}" if w.mix else "")
                      + (f", {w.symbols} symbols" if w.symbols else ""), "messages": n, "seed": w.seed,
                      "path": _generated(plan, w, n), "recording": w.recording})
    cpu = ["--cpu", str(plan.cpu)] if plan.cpu is not None else []
    side = None
    if plan.peer:
        out = plan.work / "side_by_side.json"
        _run([sys.executable, str(_script("side_by_side.py")), *(str(f["path"]) for f in files), "--peer", plan.peer,
              "--rounds", str(plan.rounds), *cpu, "--json", str(out)], "side by side with the peer")
        side = json.loads(out.read_text())
    side_depth = None
    if plan.peer:  # the depth target's other half: five levels still ahead of the peer's bare replay
        out = plan.work / "side_by_side_depth.json"
        _run([sys.executable, str(_script("side_by_side.py")), *(str(f["path"]) for f in files), "--peer", plan.peer,
              "--rounds", str(plan.rounds), *cpu, "--gateway-flags", f"--levels {DEPTH_AGAINST_PEER}", "--json",
              str(out)], f"depth of {DEPTH_AGAINST_PEER} levels side by side with the peer")
        side_depth = json.loads(out.read_text())
    recording = []
    for f in (f for f in files if f["recording"]):
        out = plan.work / f"recording_cost-{f['path'].stem}.json"
        variants = [a for label, flags in RECORDING_VARIANTS for a in ("--variant", f"{label}={flags}")]
        _run([sys.executable, str(_script("recording_cost.py")), str(f["path"]), "--rounds", str(plan.rounds), *cpu,
              *variants, "--json", str(out)], f"recording cost on {f['path'].name}")
        recording.append(json.loads(out.read_text()))
    depth = []
    for f in files:
        out = plan.work / f"depth_cost-{f['path'].stem}.json"
        variants = [a for label, flags in DEPTH_VARIANTS for a in ("--variant", f"{label}={flags}")]
        _run([sys.executable, str(_script("recording_cost.py")), str(f["path"]), "--rounds", str(plan.rounds), *cpu,
              *variants, "--relative-to", DEPTH_BASE, "--mode", "settled", "--json", str(out)],
             f"depth of book's cost on {f['path'].name}")
        depth.append(json.loads(out.read_text()))
    days = [_whole_day(plan, n) for n in plan.day_messages] if plan.peer else []
    env = environment.snapshot()
    return {"started": started, "finished": time.time(), "plan": plan, "files": files, "side_by_side": side,
            "recording": recording, "depth": depth, "side_by_side_depth": side_depth, "days": days, "env": env}


def _check_peer(plan: Plan) -> None:
    """The peer command run once, as the benchmarks run it, on a file of PROBE_MESSAGES: a peer not built, or a
    command whose output has no rate, fails here, not after minutes of generating files (2 GB for the days)."""
    probe = _generated(plan, DAY, PROBE_MESSAGES)
    _run([sys.executable, str(_script("side_by_side.py")), str(probe), "--peer", str(plan.peer), "--rounds", "1"],
         f"checking the peer command on a file of {PROBE_MESSAGES:,} messages")


def _generated(plan: Plan, w: Workload, n: int) -> Path:
    path = plan.work / f"{w.name}-{n}-seed{w.seed}.itch"
    if not path.exists():
        _run([str(paths.tool("itch-synth")), "--profile", w.profile, "--messages", str(n), "--seed", str(w.seed),
              *(["--mix", w.mix] if w.mix else []), *(["--symbol-count", str(w.symbols)] if w.symbols else []),
              "--format", "itch", "--out", str(path)],
             f"generating {path.name}")
    return path


def _whole_day(plan: Plan, messages: int) -> dict[str, Any]:
    """harness/benchmarks/whole_day.py on a generated day, plain and compressed, against the peer."""
    day = _generated(plan, DAY, messages)
    compressed = []
    for suffix, cmd in DAY_COMPRESSORS:
        path = day.with_name(day.name + suffix)
        if not path.exists():
            print(f"performance: compressing {day.name} ({' '.join(cmd)})", file=sys.stderr, flush=True)
            with atomic.replaced_when_whole(path) as tmp, open(day, "rb") as src, open(tmp, "wb") as dst:
                if subprocess.run(cmd, stdin=src, stdout=dst).returncode != 0:
                    raise RuntimeError(f"{' '.join(cmd)} failed on {day}")
        compressed.append(path)
    out = plan.work / f"whole_day-{messages}.json"
    _run([sys.executable, str(_script("whole_day.py")), str(day), *map(str, compressed), "--peer", str(plan.peer),
          "--rounds", str(plan.day_rounds), "--work", str(plan.work), "--json", str(out)],
         f"a day of {messages:,} messages end to end")
    return {"messages": messages, "seed": DAY.seed, "profile": DAY.profile, **json.loads(out.read_text())}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"


def _clock_floor(run: dict) -> str:
    """Reads a message × one read back to back, from the runs' medians; a dash for a build that does not count."""
    reads = [r for r in run.get("clock_reads_per_message", []) if r is not None]
    each = [e for e in run.get("clock_read_ns", []) if e is not None]
    if not reads or not each:
        return "—"
    return (f"≥ {statistics.median(reads) * statistics.median(each):.1f} ({statistics.median(reads):.2f} × "
            f"{statistics.median(each):.1f})")


def _median_range(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def missed_by(value: float, target: float, decimals: int, *, percent: bool = False) -> str:
    """A figure that missed its target, with `decimals` places, or as many more as it takes not to read as the
    target itself (a share of 0.8496 against 0.85 is 0.8496, not 0.850; 25.04 % against 25 % is 25.04 %)."""
    scale, unit = (100.0, "%") if percent else (1.0, "")
    places = decimals
    while places < 9 and round(value * scale, places) == round(target * scale, places):
        places += 1
    return f"{value * scale:.{places}f}{unit}"


AHEAD_TARGET = 2.0  # ours / peer on every shape (issue 57)


def render(m: dict[str, Any], command: str) -> str:
    env, plan = m["env"], m["plan"]
    day = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(m["started"]))
    pinned = (f"CPU {plan.cpu}: against the peer, each run's whole process (the gateway's log thread shares the "
              f"CPU with its hot thread); recording costs, each run's hot thread" if plan.cpu is not None
              else "not pinned")
    lines = [
        "# Performance",
        "",
        f"Generated by `{command}` on {day} ({_duration(m['finished'] - m['started'])} of runs). Do not edit:",
        "run the command again. How each figure is measured: docs/benchmarks.md and the docstrings of",
        "`harness/benchmarks/side_by_side.py` and `recording_cost.py`.",
        "",
        "| machine | |",
        "|---|---|",
        f"| CPU | {env['cpu_model']}, {env['cpu_count']} CPUs, governor {env['cpu_governor']} |",
        f"| caches (CPU 0) | {dict(host_facts.describe(env.get('host'))).get('caches (CPU 0)', 'not recorded')} |",
        f"| kernel | {env['kernel']} ({env.get('os') or 'unknown OS'}), clocksource {env['clocksource']} |",
        f"| commit | {environment.commit_label(env['git'])} |",
        f"| pinned | {pinned} |",
        "",
        "Inputs, generated by `itch-synth` (the same arguments give the same bytes):",
        "",
        "| file | profile | messages | seed |",
        "|---|---|---|---|",
        *(f"| {f['path'].name} | {f['profile']} | {f['messages']:,} | {f['seed']} |" for f in m["files"]),
        "",
        "Figures are medians of interleaved rounds with their range; on a shared machine compare ratios taken in",
        "one run, not absolute figures across runs.",
        "",
        "## Throughput against the peer",
        "",
    ]
    side = m["side_by_side"]
    if side is None:
        lines += ["No peer command was given (`--peer`): no side-by-side figures in this run.", ""]
    else:
        lines += [
            f"Ours: the gateway's simulation (BBO log on, latency log off). Peer: `{side['peer']}`. "
            f"{plan.rounds} rounds, alternating which runs first, "
            + (f"each process whole on CPU {plan.cpu} (taskset), " if plan.cpu is not None else "")
            + "each run after a sync with its file dropped "
            "from the page cache and read back (harness/benchmarks/settle.py: as a capture read from disk is, in "
            "large folios); ratio = ours / peer, above 1 ours is faster.",
            "",
            "| file | ours msg/s | peer msg/s | ratio | best rounds' ratio | peak RSS ours / peer MiB |",
            "|---|---|---|---|---|---|",
        ]
        for f in side["files"]:
            lines.append(
                f"| {f['file']} | {statistics.median(f['ours_msg_per_s']) / 1e6:.2f} M | "
                f"{statistics.median(f['peer_msg_per_s']) / 1e6:.2f} M | {_median_range(f['ratios'], '.3f')} | "
                f"{max(f['ours_msg_per_s']) / max(f['peer_msg_per_s']):.3f} | "
                f"{statistics.median(f['ours_rss_kib']) / 1024:.1f} / "
                f"{statistics.median(f['peer_rss_kib']) / 1024:.1f} |")
        below = [f"{f['file']} {missed_by(statistics.median(f['ratios']), AHEAD_TARGET, 2)}" for f in side["files"]
                 if statistics.median(f["ratios"]) < AHEAD_TARGET]
        lines += ["", f"Target: at least {AHEAD_TARGET:g}× the peer on every file, on this machine — "
                  + (f"missed on {len(below)} of {len(side['files'])} ({'; '.join(below)}); where the time goes, "
                     "ours and the peer's: docs/benchmarks.md." if below else f"met on all {len(side['files'])}."),
                  ""]
    lines += _pipeline_section(m["days"], plan)
    lines += _depth_section(m.get("depth", []), m.get("side_by_side_depth"))
    lines += [
        "## What recording the latency log costs",
        "",
        "Each variant against the same build's run without the latency log in the same round, per message;",
        "settled: a sync and the capture dropped from the page cache and read back before every run; as users run",
        "it: back to back, run directories on the real disk, nothing settled. Steal: the median share of the CPUs'",
        "time the hypervisor took during the runs; switches: the hot thread's involuntary context switches. Clock",
        "reads: the stage stamps a message took (the gateway counts them) times what one costs back to back, the",
        "least the stamps themselves cost whatever the record; the rest of the recording cost is the record, its",
        "bytes, and the reads' extra cost amid the pipeline's memory traffic.",
        "",
        "| file | measured | variant | ns a message | recording costs, ns a message | clock reads, ns a message "
        "| steal | switches |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rec in m["recording"]:
        for run in rec["runs"]:
            base = next(r for r in rec["runs"] if r["mode"] == run["mode"] and r["gateway"] == run["gateway"]
                        and r["variant"] == "off")
            cost = "—" if run is base else _median_range([a - b for a, b in zip(run["ns"], base["ns"])], "+.1f")
            lines.append(
                f"| {rec['capture']} | {run['mode']} | {'no latency log' if run is base else run['variant']} | "
                f"{_median_range(run['ns'], '.1f')} | {cost} | {'—' if run is base else _clock_floor(run)} | "
                f"{100 * statistics.median(run['steal_share']):.1f} % | "
                f"{statistics.median(run['involuntary_switches']):.0f} |")
    lines += ["", "The per-message log against histograms of the same stamps (`--latency-histogram`: each stage's "
              "time counted, percentiles within 1/64, no per-message record), round by round:", ""]
    for rec in m["recording"]:
        for mode in ("settled", "as-users-run"):
            log, hist = (next((r for r in rec["runs"] if r["mode"] == mode and r["gateway"] == "head"
                               and r["variant"] == label), None) for label in LOG_AGAINST_HISTOGRAMS)
            if log and hist:
                over = _median_range([a - b for a, b in zip(log["ns"], hist["ns"])], "+.1f")
                lines.append(f"- {rec['capture']}, {mode}: {over} ns a message")
    lines += [
        "",
        "Where the time goes: a stage stamp is one TSC read, whose cost depends on the CPU (book_bench",
        "`BM_StageClockNow`, `BM_StageClockAmidMisses`); the book stamp alone is one read a message, every stamp",
        "three to four. The compact record's bytes are what the log writer's pages cost (gateway/log/FORMAT.md,",
        "version 5).",
        "",
    ]
    return "\n".join(lines)


def _depth_section(depth: list[dict[str, Any]], side_depth: dict[str, Any] | None = None) -> list[str]:
    """Each shape's ns a message BBO-only and with depth, and depth's throughput as a share of BBO-only's, per
    round in the same round (a ratio above 1 would be depth faster); with a peer, the gateway with depth against
    the peer's bare replay; the targets named, met or not, per shape."""
    if not depth:
        return []
    depths = [label for label, _ in _DEPTHS]
    rounds = len(depth[0]["runs"][0]["ns"])
    lines = ["## Depth of book", "",
             f"The gateway's simulation with `--levels N` (the top N levels a side logged on each change, "
             f"docs/book-and-bbo.md) and with `--levels all` (each level a message changed, one 16-byte slot a "
             f"level) against the same build BBO-only; {rounds} rounds, settled, the hot thread on its CPU, in an "
             f"order that rotates round by round. Throughput share: BBO-only's ns a message over the variant's, per "
             f"round (1 = no cost). Two ways: as the throughput table runs the gateway (no latency log: its BBO and "
             f"depth logs only), which the target is judged on, and as `itchbench sim` runs it (every stamp "
             f"recorded: the latency log's cost on both sides, depth's share of it smaller).", ""]
    target_label, target = DEPTH_TARGET
    missed: dict[str, list[str]] = {}
    for title, base_label, suffix in (("No latency log", UNRECORDED_BASE, DEPTH_UNRECORDED),
                                      ("Every stamp recorded", DEPTH_BASE, "")):
        lines += [f"{title}:", "",
                  "| file | BBO only, ns a message | " + " | ".join(f"{label}, ns a message" for label in depths)
                  + " | " + " | ".join(f"{label}: share of BBO-only throughput" for label in depths) + " |",
                  "|---|" + "---|" * (2 * len(depths) + 1)]
        missed[title] = []
        for d in depth:
            runs = {r["variant"]: r["ns"] for r in d["runs"] if r["gateway"] == "head"}
            base = runs[base_label]
            shares = {label: [b / v for b, v in zip(base, runs[label + suffix])] for label in depths}
            if statistics.median(shares[target_label]) < target:
                missed[title].append(f"{d['capture']} {missed_by(statistics.median(shares[target_label]), target, 3)}")
            lines.append(f"| {d['capture']} | {_median_range(base, '.1f')} | "
                         + " | ".join(_median_range(runs[label + suffix], ".1f") for label in depths) + " | "
                         + " | ".join(_median_range(shares[label], ".2f") for label in depths) + " |")
        lines.append("")

    def judged(files: list[str]) -> str:
        return (f"missed on {len(files)} of {len(depth)} files ({'; '.join(files)})" if files
                else f"met on all {len(depth)} files")

    lines += [f"Target: {target_label} at least {target:.2f} of BBO-only throughput, with no latency log — "
              f"{judged(missed['No latency log'])}. With every stamp recorded: "
              f"{judged(missed['Every stamp recorded'])}.", "",
              "With no latency log depth's cost is the hot thread's own, and it is not small against a 26 ns "
              "message path (2026-12-01, AMD EPYC VM, nasdaq-day, in the document's runs: BBO only 25.8 ns a "
              "message, 5 levels +14.1, every level +6.5, so the ranks and the top N's bookkeeping about 7.6 of the "
              "14). `perf record` of the hot thread alone (`--cpu 1`, 20 kHz, one run each of the same hour, the "
              "file in the page cache): the message path's samples (`Gateway::process`, decode and book inlined) "
              "went from 1,669 to 3,321 with 5 levels, spread over the book's telling of each touch, the plain "
              "touch's rank, the level change slots' stores and the depth log's cursor (its lines about 370 of the "
              "1,650 added), no source line above 6 % of the samples. Tried on that path the same day and left "
              "out: the touch's levels left uninitialised until told (0.985 of the build before, per-round median "
              "of 15 rounds, whole process on one CPU). Done since (2026-12-06, AMD EPYC VM), with the tracker's "
              "changes in fixed arrays and a message's timestamp read as one word: callgrind 13.3 instructions a "
              "message fewer with 5 levels (555.1 to 541.7 M on 1 M messages); whole process on CPU 1, 5 levels "
              "1.040 times as fast in one run of 11 rounds, 1.004 in another of 9 (docs/benchmarks.md).", "",
              "Where the time goes: an event is logged as the levels it changed, a 16-byte slot each, its seq and "
              "timestamp offsets from an anchor slot (gateway/log/FORMAT.md, depth version 3); on nasdaq-day at 5 "
              "levels, 1.06 level changes an event and an anchor every 190 slots: 12 bytes a message beside the "
              "BBO-only run's 32 (latency 20, BBO 12). Logging each event's whole top N instead (24 + 32 N bytes: "
              "131 a message) cost 90 ns a message over BBO-only there, the log's first-touched pages most of it; "
              "32 bytes a level change (version 2), 24 bytes a message, cost the whole process on one CPU (as "
              "against the peer) 52.5 ns a message where 16 cost 50.2 (BBO-only 29; 6 interleaved rounds, Intel VM "
              "of 2 vCPUs, 2026-11-30), and the hot thread, every stamp, +19.7 over BBO-only where 16 cost +18.4 "
              "(its provisioning runs on the other CPU there). The tracker keeps nothing per stock: the book tells "
              "what a message did to its levels as it applies it, and the touched level is ranked among its side's "
              "(docs/book-and-bbo.md, \"Depth events\"); against the tracker that kept each stock's last emitted "
              "levels (160 bytes a stock, read at random) 5 levels on nasdaq-day went from +25 to +17 ns a message "
              "over BBO-only, every stamp recorded. A touch is plain when its levels are neither made nor emptied: "
              "85 % of nasdaq-day's book messages, 97 % of replace-heavy's and deep-book's, all but 0.2 % of "
              "few-symbols'. A plain touch is ranked inline. On a side all on the ladder (every side of nasdaq-day) "
              "that is one population count of the ladder's bits above or below it, and the touch is logged with no "
              "branch on whether it changed the top N, a coin toss on nasdaq-day: 5 levels went from 92.0 to 85.0 ns "
              "a message there (BBO only 74.7 and 75.2; 5 rounds, 2026-12-01). On a side with levels off the ladder "
              "it is the ladder's count and one look at the off-ladder levels (whether the k-th best of them is "
              "better), logged with a branch: there most touches are below the top N. Taken inline rather than the "
              "general way, out of line, 5 levels on few-symbols went from 63.6 to 62.4 ns a message with no latency "
              "log (0.955 a round, 9 rounds, Intel VM, 2026-12-01; 2.5 fewer instructions a message, cachegrind) "
              "and replace-heavy 0.978. Where the share is below the target (`perf` of the hot thread, 5 levels "
              "against BBO only, no latency log, Intel VM, 2026-12-01): on replace-heavy 40 % of the messages "
              "replace to another price, two ranks each, and what depth adds is mostly inside the message path, "
              "into which the touch, the rank and the slots' writes are inlined (`Gateway::process` 33 % of the "
              "samples against 22 % BBO-only), spread thin: no instruction of it above 6 % of its samples. "
              "A population count is a "
              "dozen instructions on baseline x86-64, one where the CPU has POPCNT, asked at start-up "
              "(gateway/util/set_bits.hpp; a -mpopcnt build would differ in its flags from every earlier commit's, "
              "which `itchbench compare` refuses to compare): 5 levels, hot thread alone, no latency log, AMD EPYC "
              "VM, 2026-12-01, 5 rounds: nasdaq-day 38.8 to 37.3 ns a message, replace-heavy 51.9 to 50.8. Tried "
              "and left out: a plain touch of one level and one of two taken alike (nasdaq-day 87.3 against 94.4, "
              "replace-heavy 96.1 against 98.8), every touch's slot written unmarked when not kept (deep-book and "
              "few-symbols, where touches rarely change the top N, 3 to 4 ns slower), choosing between the two ways "
              "by the share of touches that changed it (no difference beyond the noise); earlier, the rank and the "
              "k-th best without branches or loops for every touch (bytes' set bits summed by a multiply, a table "
              "for the bit: 54.6 against 53.5 ns a message, whole process, 10 rounds), a level change stored in two "
              "16-byte stores or non-temporal ones, and the log written through a ring of reused pages with O_DIRECT "
              "in place of the page cache (54.3 against 52.7). Every level's changes come from the book's word alone "
              "(no read of the book, no rank): the cheapest depth on every file here.", "",
              "Branches that were coin tosses (2026-12-04, Intel Xeon VM family 6 model 207, L2 2 MiB a core): "
              "cachegrind's branch simulation (a model, not this CPU's predictor, which perf cannot count on these "
              "VMs) gave 5 levels 1.16 more mispredicted branches a message than BBO only on nasdaq-day (2.13 "
              "against 0.97 M in 1 M messages), where every level has none more; among them the side of the stock "
              "in a level change's count and in the ladder's rank, and each not-kept slot's marker, now masked "
              "rather than chosen: 5 "
              "levels 1.066 times as fast on nasdaq-day (per-round median, faster in 26 of 41 interleaved rounds, "
              "no latency log, settled, the hot thread on its CPU) and 1.044 on deep-book (25 of 41), on a VM whose "
              "rounds ranged 0.6 to 1.8. Tried and left out the same day: the ladder's count of better ticks "
              "without a branch (1.037 on nasdaq-day, 0.870 on deep-book), and one touched level on a side all on "
              "its ladder taken alike whether made, emptied or neither (0.8 fewer simulated mispredictions a "
              "message but 70 more instructions: 0.957).", ""]
    if side_depth:
        lines += [f"With {DEPTH_AGAINST_PEER} levels, against the peer (which keeps no depth): side by side as in "
                  f"the throughput table above, `--levels {DEPTH_AGAINST_PEER}`; ratio = ours / peer, above 1 ours "
                  "is faster.", "", "| file | ours msg/s | peer msg/s | ratio |", "|---|---|---|---|"]
        behind = []
        for f in side_depth["files"]:
            if statistics.median(f["ratios"]) < 1:
                behind.append(f"{f['file']} {missed_by(statistics.median(f['ratios']), 1.0, 2)}")
            lines.append(f"| {f['file']} | {statistics.median(f['ours_msg_per_s']) / 1e6:.2f} M | "
                         f"{statistics.median(f['peer_msg_per_s']) / 1e6:.2f} M | "
                         f"{_median_range(f['ratios'], '.3f')} |")
        lines += ["", f"Target: the gateway with {DEPTH_AGAINST_PEER} levels still ahead of the peer — "
                  + (f"behind on {len(behind)} of {len(side_depth['files'])} files ({'; '.join(behind)})."
                     if behind else f"ahead on all {len(side_depth['files'])} files."), ""]
    return lines


# The whole pipeline's targets (itchbench sim and its report against the peer's bare replay of the same file).
ALONE = "gateway alone: "  # harness/benchmarks/whole_day.py: a file's gateway-alone run in a round
REPORT_ON_TOP = 0.25      # the run's wall time beyond the gateway's own run alone, over that
OVER_PEER = 1.5           # ours over the peer's wall time, on the plain file
COMPRESSED_OVER_PLAIN = 1.3
PEAK_RSS_MIB = 512


def _pipeline_section(days: list[dict[str, Any]], plan: Plan) -> list[str]:
    lines = ["## The whole pipeline", ""]
    if not days:
        why = "no peer command was given (`--peer`)" if plan.day_messages else "`--day-messages 0`"
        return lines + [f"Not run: {why}.", ""]
    rounds = days[0]["rounds"]
    lines += [
        f"`itchbench sim` on days generated with the {days[0]['profile']} profile (seed {days[0]['seed']}), every "
        "stage stamped, the run's report included, against the peer's bare replay of the same plain file "
        f"(`{days[0]['peer']}`), {len(rounds)} round{'s' if len(rounds) > 1 else ''}, the peer first in odd rounds; "
        "each run after a sync with its file dropped from the page cache and read back "
        "(harness/benchmarks/whole_day.py). Ours in parts: the gateway's process from start to exit, the report's "
        "two passes after it (progress.log: the first from the gateway's index of its latency log, reading only "
        "the block where the first message after the warm-up is; the second counted while the gateway wrote the "
        "log, so only its last block after), and the rest (start-up, the "
        "input's digest and itch-inspect's count of it — remembered from its first run on, per version of the "
        "file —, reconciliation, the report's tables and plots); each in "
        "seconds and million messages a second. First run: ours once on each input before the rounds, the "
        "input's digest and count forgotten before it, as a new day's first run reads the file for them before its "
        "gateway starts (a compressed file's count runs beside it), its rest in brackets; not judged. The rounds "
        "are later runs, which read them back. Gateway alone: its binary with the "
        "flags `itchbench sim` gives it, "
        "nothing beside it, on the same file next to ours in each round. On top: ours beyond the gateway alone, "
        "over it (the gateway's process inside ours is slower by what runs beside it: the report's second pass "
        "follows the log as it is written, on the other CPU). Peak RSS: "
        "the largest process (the harness or the gateway), and the gateway's own. ours / peer: wall time over "
        f"wall time. Targets: on top at most {REPORT_ON_TOP:.0%}, ours / peer at most {OVER_PEER:g} on the plain "
        f"file, a compressed copy within {COMPRESSED_OVER_PLAIN:g}× the plain file's time, peak RSS at most "
        f"{PEAK_RSS_MIB} MiB.",
        "",
    ]
    for day in days:
        lines += _day_table(day)
    return lines + PIPELINE_PROFILE


# Where the whole pipeline's time went when its on-top target was missed, measured by hand (a profile is not
# regenerated): dated, with the machine and how.
PIPELINE_PROFILE = [
    "Where the time goes (2026-11-30, Intel Xeon VM of 2 vCPUs; 50 M nasdaq-day messages; `perf record -a` "
    "around `itchbench sim`; changes measured in rounds alternating with the build before): the run is CPU-bound, "
    "and a compressed input adds its decompression on the same two CPUs. On the .gz copy, 12.1 CPU-seconds in a "
    "6.3 s run: the gateway's hot thread 4.1, ISA-L's inflate on its read-ahead thread 3.0 (1.5 GB of output at "
    "0.5 GB/s), the report's second pass following the latency log 1.8 (`Counter::row` 47 %, `count_hops` 32 %), "
    "the harness's Python about 1.1, the logs' provisioning 0.3. Half of 12.1 is 6.05 s, 40 % over the gateway "
    "alone before any waiting. After the gateway's exit, two things were taken off the plain file's run: the BBO "
    "log's digest, now taken as the log is written (wall 4.98 to 4.66 s, median of 4 rounds), and the import of "
    "pandas in the drawing process for the plot over time (4.65 to 4.38 s). On the .zst copy (2026-11-30, "
    "later): the BBO log's follower read its log about six times over, 3 MiB a look every 5 ms into the zeros "
    "provisioned past the last record; it now looks in 192 KiB reads (12.8 to 12.5 CPU-seconds, wall 6.8 to "
    "6.6 s, 2 rounds each), and the second pass asks for a message's by-symbol cell eight messages before it "
    "counts it (8 MiB of counts touched at random, a third of `Counter::row`'s samples: the pass over a "
    "finished log 2.19 to 2.10 s, 4 rounds). Tried and left out then: counting a hop "
    "table once while a stage's counts are the same, tested row by row (5 of about 12 adds a message saved, but "
    "the pass took 3.35 CPU-seconds against 2.72; done since with the test made once for each set of stamps a "
    "row has, below), and pinning the hot thread to a CPU of its own (5.07 against 5.00 s). What would "
    "close it is fewer CPU-seconds beside the hot thread: a cheaper pass, a log whose new pages cost less to "
    "touch first (`copy_folio_from_iter_atomic`: `dd` of 1 GB writes 0.4 GB/s into memory this VM has handed "
    "back to its host, 5 GB/s into memory freed a moment before), or a third CPU.",
    "",
    "Later (2026-12-01, AMD EPYC VM of 2 vCPUs, the plain 50 M file): 6.3 CPU-seconds in a 3.3 s run, of which "
    "the gateway's hot thread 2.75 and its logs' provisioning 0.39, the second pass 1.7, the harness's Python "
    "0.67, the drawing process 0.58, "
    "and numpy's OpenBLAS threads 0.16, spinning after their start in each process that imports numpy: the "
    "harness now keeps OpenBLAS to one thread in its own processes (3.31 to 3.13 s, 4 rounds interleaved). The "
    "second pass's hop chains are read from the row where nothing is moved onto CLOCK_MONOTONIC (a simulation's: "
    "the pass over a finished log 1.48 to 1.40 s, 6 rounds); skipping `count_hops` outright bounds what is left "
    "there at 0.4 s. Tried and left out: counting the blocks left when the gateway ends in two halves at once "
    "(2.89-3.00 against 2.93-3.00 s, 5 rounds; with a CPU hog beside it 4.40-4.71 against 4.50-4.73): on an idle "
    "machine the pass is 0.1 s behind at the end, and on a busy one there is no CPU for a second half. Between two "
    "runs a minute apart (the second under `perf`) the logs' provisioning took 0.3 and 1.3 CPU-seconds, the "
    "difference `copy_folio_from_iter_atomic` (memory the VM had handed back to its host): the noise in this "
    "table. On the .gz copy the gateway alone is as slow as ISA-L's inflate on its read-ahead thread "
    "(`decode_huffman_code_block_stateless_04`, its AVX2 path: 57 % of the samples, 0.5 GB/s of this data); "
    "tried and left out, the read-ahead asking the decompressor for 1 MiB a call instead of stdio's 8 KiB: 3.03 "
    "against 2.99 s, 5 rounds, its user CPU unchanged (4.45-4.55 s).",
    "",
    "Later still (2026-12-04, AMD EPYC VM of 2 vCPUs, family 25 model 17, L2 1 MiB a core; the .gz copy of the 50 "
    "M day): 12.4 CPU-seconds in a 6.6 s run, of which the gateway's process 8.6. Alone, the gateway took 7.2-9.4 "
    "CPU-seconds in 3.9-5.4 s: it keeps both CPUs nearly busy by itself. `perf record -a`: ISA-L's inflate 21.5 % "
    "of the samples, the zeros provisioned into the logs' fresh pages 19 % (`copy_folio_from_iter_atomic`, about "
    "2.7 CPU-seconds), the hot thread about 22 %, the second pass 16 %. The second pass now tests whether a row "
    "has a stage's or a chain's stamps with one mask of the stamps the row has (a stage's own tests had been a "
    "fifth of `Counter::row`'s samples): over the finished log of that run, 2.35 to 2.08 CPU-seconds and wall "
    "1.23 to 1.06 s (medians of 6 runs each, alternating), its report byte-identical. Even so, the gateway alone "
    "and the pass need (8.3 + 2.1) / 2 = 5.2 s of the two CPUs, 33 % over the gateway alone, before Python, plots "
    "and reconciliation. The 25 % target leaves 1.45 CPU-seconds beside the gateway's 8.3 for the pass, the "
    "harness's Python, plots and reconciliation together (about 3 today): on this machine it needs a pass several "
    "times cheaper, or a third CPU.",
    "",
    "Then (2026-12-06, Intel Xeon VM of 2 vCPUs, family 6 model 207, L2 2 MiB a core): of the 12 adds the second "
    "pass made for a simulated message, 5 repeated another's value on the same rows (decode is parse without a "
    "kernel stamp; the book chain's hops, its cumulative and the read co-start are the parse, book and "
    "receive-to-book stages). Each row now follows a plan made once for its set of stamps, one add for each "
    "value: the pass over a finished 50 M log 2.26 to 1.70 s (8 rounds alternating, one thread), and `itchbench "
    "sim` of the .gz day spent 0.8 s after its gateway's exit instead of 1.9 (medians of 6 rounds each).",
    "",
]


def _day_table(day: dict[str, Any]) -> list[str]:
    rounds = day["rounds"]
    peer = [r["peer"]["wall_s"] for r in rounds]
    lines = [
        f"### {day['messages']:,} messages",
        "",
        "| input | bytes | ours, wall | first run, wall (rest) | gateway | report pass 1 | report pass 2 | rest | "
        "gateway alone, wall | on top | peak RSS MiB (gateway) | peer's bare replay, wall | peak RSS MiB | "
        "ours / peer |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    missed, walls = [], {}  # a miss said one digit finer than the table, or finer still (missed_by)
    for k, (name, size) in enumerate(day["bytes"].items()):
        ours = [r[name] for r in rounds]
        ratio = statistics.median(o["wall_s"] / p for o, p in zip(ours, peer))
        alone = [r[f"{ALONE}{name}"]["wall_s"] for r in rounds]
        on_top = statistics.median((o["wall_s"] - a) / a for o, a in zip(ours, alone))
        rss = statistics.median(o["rss_kib"] for o in ours) / 1024
        walls[name] = statistics.median(o["wall_s"] for o in ours)

        def part(label: str) -> str:
            secs = statistics.median(o["parts"][label]["seconds"] for o in ours)
            records = ours[0]["parts"][label]["records"]
            return f"{secs:.1f} s" + (f", {records / secs / 1e6:.1f} M/s" if records and secs > 0 else "")

        first = day.get("first_run", {}).get(name)
        lines.append(
            f"| {name} | {size / 2**30:.2f} GiB | {_median_range([o['wall_s'] for o in ours], '.1f')} s | "
            + (f"{first['wall_s']:.1f} s ({first['parts']['rest']['seconds']:.1f} s) | " if first else "— | ")
            + f"{part('gateway')} | {part('report pass 1')} | {part('report pass 2')} | {part('rest')} | "
            f"{_median_range(alone, '.1f')} s | {on_top:.0%} | "
            f"{rss:.0f} ({statistics.median(o['gateway_rss_kib'] for o in ours) / 1024:.0f}) | "
            f"{_median_range(peer, '.1f')} s | {statistics.median(r['peer']['rss_kib'] for r in rounds) / 1024:.0f} | "
            f"{_median_range([o['wall_s'] / p for o, p in zip(ours, peer)], '.2f')} |")
        if on_top > REPORT_ON_TOP:
            missed.append(f"{name} on top {missed_by(on_top, REPORT_ON_TOP, 1, percent=True)} "
                          f"(target {REPORT_ON_TOP:.0%})")
        if k == 0 and ratio > OVER_PEER:
            missed.append(f"{name} ours / peer {missed_by(ratio, OVER_PEER, 3)} (target {OVER_PEER:g})")
        if rss > PEAK_RSS_MIB:
            missed.append(f"{name} peak RSS {missed_by(rss, PEAK_RSS_MIB, 0)} MiB (target {PEAK_RSS_MIB})")
    plain = next(iter(walls.values()))
    for name, wall in list(walls.items())[1:]:
        if wall > COMPRESSED_OVER_PLAIN * plain:
            missed.append(f"{name} {missed_by(wall / plain, COMPRESSED_OVER_PLAIN, 3)}× the plain file's time "
                          f"(target {COMPRESSED_OVER_PLAIN:g}×)")
    return lines + ["", "Every target met." if not missed else "Targets missed: " + "; ".join(missed) + ".", ""]
