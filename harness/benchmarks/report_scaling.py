"""Reading + statistics + report for N latency records: time and peak memory.

    .venv/bin/python harness/benchmarks/report_scaling.py [--messages 1000000,10000000]

For each size: generates a nasdaq-day capture, runs it in simulation (one
latency record per message), then times `itchbench report RUN_DIR` in a
fresh process and reads its peak RSS, so that memory can be compared with
the size of the latency log.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from itchbench import paths
from itchbench.runs import sim


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", default="1000000,10000000")
    args = p.parse_args()
    print(f"{'records':>11} {'log MB':>8} {'report s':>9} {'peak RSS MB':>12} {'RSS / log':>10}")
    for n in (int(x) for x in args.messages.split(",")):
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            cap = Path(tmp) / "day.pcap"
            subprocess.run([str(paths.tool("itch-synth")), "--profile", "nasdaq-day", "--messages", str(n),
                            "--out", str(cap)], check=True, capture_output=True)
            run = sim.run_sim(cap, Path(tmp) / "run", echo=False)
            log_mb = (run / "latency.lat").stat().st_size / 1e6
            t0 = time.monotonic()
            proc = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "itchbench.cli", "report",
                                   str(run)], capture_output=True, text=True, check=True)
            secs = time.monotonic() - t0
            rss_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
            print(f"{n:>11,} {log_mb:>8.0f} {secs:>9.2f} {rss_mb:>12.0f} {rss_mb / log_mb:>10.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
