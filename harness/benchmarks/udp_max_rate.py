"""The highest rate at which the UDP path loses nothing, with each sender.

    .venv/bin/python harness/benchmarks/udp_max_rate.py [--senders tcpreplay,udp-replay] [--messages N]
        [--rates 50000,100000,...] [--rcvbuf BYTES] [--repetitions N]

Generates a nasdaq-day capture (seed 1), replays it at each packet rate (and
at topspeed) into the gateway in a private namespace with each sender, and
prints per rate: packets/s and messages/s the sender achieved, kernel drops,
messages lost. Each probe is a full run directory under reports/runs/.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from itchbench import paths, rundir
from itchbench.runs import runner, scenario


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--rates", default="50000,100000,200000,300000,400000,600000,topspeed")
    p.add_argument("--senders", default="tcpreplay,udp-replay")
    p.add_argument("--rcvbuf", type=int, default=8 << 20)
    p.add_argument("--repetitions", type=int, default=2)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cap = Path(tmp) / "day.pcap"
        subprocess.run([str(paths.tool("itch-synth")), "--profile", "nasdaq-day", "--messages", str(args.messages),
                        "--out", str(cap)], check=True, capture_output=True)
        print(f"{'sender':>10} {'rate':>10} {'rep':>3} {'pkt/s sent':>11} {'msg/s sent':>11} {'kernel drops':>12} "
              f"{'msgs lost':>9} {'lossless':>8}")
        for sender in args.senders.split(","):
            for rate in args.rates.split(","):
                for rep in range(1, args.repetitions + 1):
                    values = scenario.defaults(name="udp-max-rate", transport="udp", capture=str(cap))
                    values["replay"].update({"rate": "topspeed"} if rate == "topspeed" else
                                            {"rate": "pps", "pps": int(rate)})
                    values["replay"]["sender"] = sender
                    values["gateway"]["rcvbuf"] = args.rcvbuf
                    values["subscribers"] = 0
                    run = runner.execute(values, f"udp-max-rate-{sender}-{rate}", echo=False)
                    s = rundir.read_json(run / "summary.json")
                    udp = s["reconciliation"]["udp"]
                    details = s["transport_details"]
                    secs = (details["tcpreplay"].get("seconds", 0) if sender == "tcpreplay"
                            else details["udp_replay"].get("elapsed_s", 0)) or 1e-9
                    print(f"{sender:>10} {rate:>10} {rep:>3} {udp['sender_sent'] / secs:>11,.0f} "
                          f"{udp['expected_messages'] / secs:>11,.0f} {udp['kernel_dropped']:>12,} "
                          f"{s['reconciliation']['loss']['messages_not_applied']:>9,} {str(s['lossless']):>8}",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
