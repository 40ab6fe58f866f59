"""A full trading day end to end, and the curve up to it: generate, compress,
simulate, report — wall time, peak RSS and disk at each size.

    .venv/bin/python harness/benchmarks/report_scaling.py                       # 10 M, 50 M, 300 M
    .venv/bin/python harness/benchmarks/report_scaling.py --messages 10000000 --compress zstd

For each size: itch-synth writes a nasdaq-day session as a binary ITCH file
(seed 1), gzip -1 (or zstd) compresses it and the plain file is deleted —
NASDAQ distributes its days gzip-compressed; then `itchbench sim DAY.gz`
runs in a fresh process (the gateway reads the compressed file as a stream,
the harness reconciles and writes the report), and `itchbench report RUN`
runs again in another, so the report's own time and memory are seen apart.
Peak RSS is GNU time's %M: the largest resident set of the process tree
(harness and gateway). "gateway replay" is the gateway's own time through the
capture (gateway.json elapsed_s), the bar the report pass is held to. Needs
disk for the compressed day and the run (~80 bytes a message: the latency
log's 56 in simulation with every stage stamped, the BBO log's ~12, the
gzip -1 day's ~15).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from itchbench import paths

COMPRESSORS = {"gzip": (["gzip", "-1", "-c"], ".gz"), "zstd": (["zstd", "-1", "-q", "-c", "-T0"], ".zst")}


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """(wall s, peak RSS MiB of the process tree, stdout) of a command; its failure stops the benchmark."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    wall, rss_kib = proc.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss_kib) // 1024, proc.stdout


def du_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def one_size(n: int, work: Path, compress: str, keep: bool) -> dict[str, float]:
    plain = work / f"day-{n}.itch"
    packed = plain.with_name(plain.name + COMPRESSORS[compress][1])
    run = work / f"run-{n}"
    shutil.rmtree(run, ignore_errors=True)
    t0 = time.monotonic()
    if not packed.is_file():
        subprocess.run([str(paths.tool("itch-synth")), "--profile", "nasdaq-day", "--messages", str(n), "--seed", "1",
                        "--format", "itch", "--out", str(plain)], check=True, capture_output=True)
        generate_s = time.monotonic() - t0
        t0 = time.monotonic()
        with open(packed.with_suffix(".partial"), "wb") as out:
            subprocess.run([*COMPRESSORS[compress][0], str(plain)], stdout=out, check=True)
        packed.with_suffix(".partial").replace(packed)
        plain.unlink()
        compress_s = time.monotonic() - t0
    else:
        generate_s = compress_s = float("nan")  # reused from an earlier run of this script
    cli = [sys.executable, "-m", "itchbench.cli"]
    sim_s, sim_rss, _ = timed([*cli, "sim", str(packed), "--out", str(run)])
    gw = json.loads((run / "gateway.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    report_s, report_rss, _ = timed([*cli, "report", str(run)])
    row = {"messages": n, "compressed_gb": packed.stat().st_size / 1e9, "generate_s": generate_s,
           "compress_s": compress_s, "sim_wall_s": sim_s, "gateway_replay_s": gw["elapsed_s"],
           "gateway_rss_mb": summary["transport_details"]["gateway_max_rss_kib"] / 1024, "sim_peak_rss_mb": sim_rss,
           "report_s": report_s, "report_peak_rss_mb": report_rss, "run_dir_gb": du_bytes(run) / 1e9,
           "verdict": summary["verdict"]["headline"]}
    if not keep:
        shutil.rmtree(run)
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", default="10000000,50000000,300000000", help="sizes, comma-separated")
    p.add_argument("--compress", choices=sorted(COMPRESSORS), default="gzip")
    p.add_argument("--work", type=Path, default=Path("/tmp/itchbench-scaling"),
                   help="where captures and runs go (compressed captures are kept and reused)")
    p.add_argument("--keep", action="store_true", help="keep the run directories")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    cols = ["messages", "compressed_gb", "generate_s", "compress_s", "sim_wall_s", "gateway_replay_s",
            "gateway_rss_mb", "sim_peak_rss_mb", "report_s", "report_peak_rss_mb", "run_dir_gb"]
    print(" ".join(f"{c:>18}" for c in cols), flush=True)
    for n in (int(x) for x in args.messages.split(",")):
        row = one_size(n, args.work, args.compress, args.keep)
        print(" ".join(f"{row[c]:>18,.0f}" if c == "messages" else f"{row[c]:>18,.2f}" for c in cols), flush=True)
        print(f"{'':>18} {row['verdict']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
