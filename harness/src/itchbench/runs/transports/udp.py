"""udp: tcpreplay -> loopback of the run's private network namespace -> gateway."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...captures.inspect import facts_of
from ...captures.loopback import RewriteError, loopback_capture
from ..deadlines import udp_sender_seconds
from ..failure import RunError, describe_exit
from ..netns import NetnsError, PrivateNetns
from .gateway import gateway_args
from .live import finish_gateway, start_gateway, wait_for_sender

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..runner import Run

UDP_PORT = 26477  # inside the run's own namespace: no clash with anything


def tcpreplay_flags(replay: dict[str, Any]) -> list[str]:
    rate = replay["rate"]
    flags = {"capture": [], "multiplier": [f"--multiplier={replay['multiplier']}"],
             "pps": [f"--pps={replay['pps']}"], "topspeed": ["--topspeed"]}[rate]
    return [*flags, f"--loop={replay['loops']}", "--preload-pcap"]


_TCPREPLAY_FIELDS = {
    "sent_packets": r"Actual: (\d+) packets",
    "sent_bytes": r"Actual: \d+ packets \((\d+) bytes\)",
    "seconds": r"sent in ([\d.]+) seconds",
    "rated_pps": r"Rated: [\d.]+ Bps, [\d.]+ Mbps, ([\d.]+) pps",
    "successful": r"Successful packets:\s+(\d+)",
    "failed": r"Failed packets:\s+(\d+)",
    "truncated": r"Truncated packets:\s+(\d+)",
    "retried_enobufs": r"Retried packets \(ENOBUFS\):\s+(\d+)",
    "retried_eagain": r"Retried packets \(EAGAIN\):\s+(\d+)",
}


def parse_tcpreplay(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, pattern in _TCPREPLAY_FIELDS.items():
        m = re.search(pattern, text)
        if m:
            out[key] = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    return out


def run_udp(run: "Run", group: "ProcessGroup") -> None:
    capture = Path(run.values["capture"])
    replay = run.values["replay"]
    try:
        rewritten = loopback_capture(capture, UDP_PORT)
        ns = PrivateNetns(group)
    except (RewriteError, NetnsError) as e:
        raise RunError("setup", str(e)) from e
    run.extras["netns_holder_pid"] = ns.holder_pid
    g = run.values["gateway"]
    cmd = [*gateway_args(run), "--source", "udp", "--port", str(UDP_PORT), "--rcvbuf", str(g["rcvbuf"])]
    if g["busy_poll"]:
        cmd.append("--busy-poll")
    if replay["loops"] > 1:
        cmd.append("--ignore-end-of-session")
    gw = start_gateway(run, group, cmd, ns.wrap)
    facts = facts_of(capture)
    expected_s = udp_sender_seconds(run.values, facts)
    run.say(f"  tcpreplay: {facts['datagrams'] * replay['loops']:,} packets, rate {replay['rate']}")
    out = open(run.dir / "tcpreplay.txt", "wb")
    group.on_close(out.close)
    tr = group.start("tcpreplay", ns.wrap(["tcpreplay", "-i", "lo", *tcpreplay_flags(replay), str(rewritten)]),
                     stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_sender(run, group, tr, gw, "tcpreplay", expected_s)
    finally:
        out.flush()
        text = (run.dir / "tcpreplay.txt").read_text(errors="replace")
        run.extras["tcpreplay"] = parse_tcpreplay(text)
        run.extras["tcpreplay_exit"] = tr.returncode
        try:
            run.extras["kernel"] = ns.udp_counters()
        except NetnsError:
            pass
    if tr.returncode != 0:
        raise RunError("sender_failed", f"tcpreplay {describe_exit(tr.returncode)}: {text.strip()[-500:]}")
    finish_gateway(run, group, gw)
    run.extras["kernel"] = ns.udp_counters()
