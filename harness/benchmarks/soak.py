"""A UDP soak: minutes of replay with three subscribers (fast, slow, one
that disconnects and reconnects every 3 s), the gateway's RSS sampled every
second and plotted, every counter reconciled. Not part of CI.

    .venv/bin/python harness/benchmarks/soak.py [--minutes 10] [--msg-rate 100000] [--per-packet 16] [--out DIR]

The capture is generated (nasdaq-day, seed 1) to last --minutes at
--msg-rate; tcpreplay preloads it, so its size bounds the rate x duration.
Writes DIR/soak.json (verdict, RSS samples, growth) and DIR/soak-rss.png;
exits with the run's verdict status.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from itchbench import paths, rundir  # noqa: E402
from itchbench.captures.inspect import facts_of  # noqa: E402
from itchbench.runs import runner, scenario  # noqa: E402


def rss_kib(pid: int) -> tuple[int, int] | None:
    """(VmRSS, RssAnon) in KiB: all resident memory, and the part that is not
    a mapped file (the logs' pages count in the first only)."""
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        return int(fields["VmRSS"].split()[0]), int(fields["RssAnon"].split()[0])
    except (OSError, KeyError, ValueError):
        return None


def sample_gateway(root: Path, samples: list[tuple[float, int, int]], stop: threading.Event) -> None:
    """(seconds since the gateway was first seen, RSS KiB, anonymous RSS KiB), once a second."""
    pid = None
    start = 0.0
    while not stop.is_set():
        if pid is None:
            found = subprocess.run(["pgrep", "-f", f"itch-gateway --out {root}"], capture_output=True, text=True)
            pid = int(found.stdout.split()[0]) if found.stdout.split() else None
            start = time.monotonic()
        if pid is not None:
            kib = rss_kib(pid)
            if kib is None:
                break  # the gateway has exited
            samples.append((time.monotonic() - start, *kib))
        stop.wait(1.0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--msg-rate", type=int, default=100_000, help="messages per second (default %(default)s)")
    p.add_argument("--per-packet", type=int, default=16, help="messages per MoldUDP64 packet (default %(default)s)")
    p.add_argument("--out", type=Path, default=paths.repo_root() / "reports" / "soak")
    args = p.parse_args()
    messages = int(args.minutes * 60 * args.msg_rate)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="itchbench-soak-") as tmp:
        cap = Path(tmp) / "soak.pcap"
        print(f"generating {messages:,} messages ({args.per_packet} per packet)", flush=True)
        subprocess.run([str(paths.tool("itch-synth")), "--profile", "nasdaq-day", "--seed", "1", "--messages",
                        str(messages), "--per-packet", str(args.per_packet), "--batch-window-ns", "1000000000",
                        "--out", str(cap)], check=True, capture_output=True)
        # The packet rate that spreads the capture's packets over the duration.
        pps = max(1, round(facts_of(cap)["datagrams"] / (args.minutes * 60)))
        values = scenario.defaults(name="soak", transport="udp", capture=str(cap), subscribers=3,
                                   subscriber_modes=["fast", "slow", "reconnect"])
        values["replay"].update({"rate": "pps", "pps": pps})
        values["gateway"].update({"latency_log": False, "expected_orders": 1 << 20})
        root = Path(tmp) / "runs"
        samples: list[tuple[float, int, int]] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_gateway, args=(root, samples, stop), daemon=True)
        sampler.start()
        print(f"replaying at {pps:,} packets/s (~{args.msg_rate:,} msg/s) for ~{args.minutes:g} min", flush=True)
        run = runner.execute(values, "soak", root=root, echo=True)
        stop.set()
        sampler.join(5)
        summary = rundir.read_json(run / "summary.json")
    # After the first tenth of the run (start-up, first book growth).
    steady = [(rss, anon) for t, rss, anon in samples if t >= 0.1 * samples[-1][0]] if samples else []
    growth = (steady[-1][0] - steady[0][0]) / 1024 if len(steady) > 1 else None
    anon_growth = (steady[-1][1] - steady[0][1]) / 1024 if len(steady) > 1 else None
    result = {
        "verdict": summary["verdict"], "messages": messages, "packets_per_s": pps,
        "subscribers": summary.get("reconciliation", {}).get("subscribers", []),
        "checks": summary.get("reconciliation", {}).get("checks", {}),
        "rss_mib_first_steady": steady[0][0] / 1024 if steady else None,
        "rss_mib_last": steady[-1][0] / 1024 if steady else None, "rss_growth_mib_after_warmup": growth,
        "anon_rss_growth_mib_after_warmup": anon_growth,
        "rss_samples_kib": samples,
    }
    (args.out / "soak.json").write_text(json.dumps(result, indent=2) + "\n")
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot([t for t, _, _ in samples], [k / 1024 for _, k, _ in samples], lw=1.2, label="RSS")
    ax.plot([t for t, _, _ in samples], [a / 1024 for _, _, a in samples], lw=1.2, label="anonymous RSS (not the logs)")
    ax.legend(loc="lower right")
    ax.set_xlabel("seconds since the gateway started")
    ax.set_ylabel("gateway RSS (MiB)")
    ax.set_ylim(0, max((k for _, k, _ in samples), default=1024) / 1024 * 1.2)
    ax.set_title(f"UDP soak: {messages:,} messages at {pps:,} pkt/s, 3 subscribers")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out / "soak-rss.png", dpi=110)
    print(summary["verdict"]["headline"])
    for sub in result["subscribers"]:
        print(f"  subscriber {sub['index']} ({sub['mode']}): {sub['frames']:,} frames, "
              f"{sub['frames_dropped']:,} dropped to it, connections {len(sub['local_ports'])}, "
              f"identical: {sub['identical_to_bbo_log']}")
    print(f"RSS after warm-up: {result['rss_mib_first_steady']:.1f} -> {result['rss_mib_last']:.1f} MiB "
          f"(growth {growth:+.1f} MiB, anonymous {anon_growth:+.1f} MiB); {args.out / 'soak-rss.png'}")
    return int(summary["verdict"]["exit_status"])


if __name__ == "__main__":
    sys.exit(main())
