"""udp: tcpreplay or udp-replay -> loopback of the run's private network namespace -> gateway.

tcpreplay (the default: users know it) sends a capture rewritten for the
namespace's loopback and stamps nothing; udp-replay sends the capture's UDP
payloads from a socket, in sendmmsg batches, and writes every packet's
intended and actual send time to send.log (gateway/log/FORMAT.md)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ... import paths
from ...captures.inspect import facts_of
from ...captures.loopback import RewriteError, loopback_capture
from ..deadlines import udp_sender_seconds
from ..failure import RunError, describe_exit, stopped_from_outside
from ..netns import NetnsError, PrivateNetns
from .live import capture_ended_early, off_the_gateway_cpu, sender_failure, wait_for_sender

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

UDP_PORT = 26477  # inside the run's own namespace: no clash with anything
UDP_PORT_B = UDP_PORT + 2  # the B line's, when it is unicast (26478 is the re-request server's)
LINE_FAULTS = "line-faults.json"  # what each line lost, by sequence (udp-replay --line-faults)


def line_b(values: dict[str, Any]) -> tuple[str, int] | None:
    """Where the B line goes: its group (multicast) or loopback on its own port; None without a B line."""
    lines = values["lines"]
    if not lines["b"]:
        return None
    return (lines["b_group"], UDP_PORT) if lines["b_group"] else ("127.0.0.1", UDP_PORT_B)


def line_args(values: dict[str, Any], out: Path) -> list[str]:
    """udp-replay's options for the scenario's [lines]: the B line and each line's faults."""
    lines, args = values["lines"], []
    b = line_b(values)
    if b:
        args += ["--line-b", b[0], "--line-b-port", str(b[1]), "--b-skew-us", str(lines["skew_us"])]
    for line in ("a", "b") if b else ("a",):
        if lines[f"{line}_drop"]:
            args += [f"--drop-{line}", str(lines[f"{line}_drop"])]
        if lines[f"{line}_burst_drop"]:
            args += [f"--burst-drop-{line}", lines[f"{line}_burst_drop"]]
        if lines[f"{line}_silent"]:
            args += [f"--silent-{line}", lines[f"{line}_silent"]]
        for fault in ("duplicate", "reorder"):
            if lines[f"{line}_{fault}"]:
                args += [f"--{fault}-{line}", str(lines[f"{line}_{fault}"])]
        if lines[f"{line}_delay_us"]:
            args += [f"--delay-{line}-us", str(lines[f"{line}_delay_us"])]
    return [*args, "--line-seed", str(lines["seed"]), "--line-faults", str(out / LINE_FAULTS)]


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


# What tcpreplay prints on every run on loopback, whatever happens after: not a reason for its failure.
_TCPREPLAY_CHATTER = re.compile(r"^(Warning in sendpacket\.c:.*|Unsupported physical layer type .*|"
                                r"File Cache is enabled)$", re.M)


def _said_on_failure(text: str) -> str:
    """A sender's output as the reason it failed: its last 500 characters, tcpreplay's chatter left out."""
    return "\n".join(line for line in _TCPREPLAY_CHATTER.sub("", text).splitlines() if line.strip())[-500:]


def parse_tcpreplay(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, pattern in _TCPREPLAY_FIELDS.items():
        m = re.search(pattern, text)
        if m:
            out[key] = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    return out


def udp_replay_args(replay: dict[str, Any]) -> list[str]:
    rate = replay["rate"]
    flags = {"capture": ["--rate", "capture"], "multiplier": ["--rate", "capture", "--multiplier", str(replay["multiplier"])],
             "pps": ["--rate", "pps", "--pps", str(replay["pps"])], "topspeed": ["--rate", "topspeed"]}[rate]
    return [*flags, "--loops", str(replay["loops"]), "--batch", str(replay["batch"]),
            "--heartbeat-ms", str(replay["heartbeat_ms"]), "--end-of-session-ms", str(replay["end_of_session_ms"])]


def private_netns(run: "Run", group: "ProcessGroup") -> PrivateNetns:
    try:
        ns = PrivateNetns(group)
        if run.values["replay"]["multicast"]:
            ns.carry_multicast()
    except NetnsError as e:
        raise RunError("setup", str(e)) from e
    run.extras["netns_holder_pid"] = ns.holder_pid
    return ns


def replay_udp(run: "Run", group: "ProcessGroup", ns: PrivateNetns,
               gateway_gone: Callable[[float], RunError | None]) -> None:
    """Send the capture to UDP_PORT on the namespace's loopback with the scenario's sender, watching the
    gateway as it goes (live.wait_for_sender); the sender's and the kernel's counts go into run.extras."""
    capture = Path(run.values["capture"])
    replay = run.values["replay"]
    tcpreplay = replay["sender"] == "tcpreplay"
    facts = facts_of(capture, run.values["feed"])
    try:
        rewritten = loopback_capture(capture, UDP_PORT, run.values["feed"]) if tcpreplay else capture
    except RewriteError as e:
        raise capture_ended_early(facts, "tcpreplay's copy of it could not be made: nothing sent") or \
            RunError("setup", str(e)) from e
    if tcpreplay and facts["kind"] != "pcap":  # a binary ITCH file goes as the packets itch2pcap made of it
        facts = {**facts, "datagrams": facts_of(rewritten)["datagrams"]}
    run.extras["replayed_datagrams"] = facts["datagrams"]
    expected_s = udp_sender_seconds(run.values, facts)
    sender = replay["sender"]
    run.say(f"  {sender}: {facts['datagrams'] * replay['loops']:,} packets, rate {replay['rate']}")
    out_name = "tcpreplay.txt" if tcpreplay else "udp-replay.stderr"
    out = open(run.dir / out_name, "wb")
    group.on_close(out.close)
    if tcpreplay:
        cmd = ["tcpreplay", "-i", "lo", *tcpreplay_flags(replay), str(rewritten)]
        tr = group.start(sender, ns.wrap(off_the_gateway_cpu(run, cmd)), stdout=out, stderr=subprocess.STDOUT)
    else:
        to = ["--address", replay["multicast"]] if replay["multicast"] else []
        cmd = [str(paths.tool("udp-replay")), str(capture), "--port", str(UDP_PORT), *to, *udp_replay_args(replay),
               *(["--feed", run.values["feed"]] if run.values["feed"] else []), *line_args(run.values, run.dir),
               *(["--from-seq", str(run.extras["join"]["from_seq"])] if "join" in run.extras else []),
               "--send-log", str(run.dir / "send.log"), "--report", str(run.dir / "udp-replay.json")]
        tr = group.start(sender, ns.wrap(off_the_gateway_cpu(run, cmd)), stdout=subprocess.DEVNULL, stderr=out)
    try:
        wait_for_sender(run, group, tr, sender, expected_s, gateway_gone)
    finally:
        out.flush()
        text = (run.dir / out_name).read_text(errors="replace")
        if tcpreplay:
            run.extras["tcpreplay"] = parse_tcpreplay(text)
        elif (run.dir / "udp-replay.json").is_file():
            run.extras["udp_replay"] = json.loads((run.dir / "udp-replay.json").read_text())
            if "join" in run.extras:  # a feed joined mid-session: the capture's packets from the join on
                run.extras["replayed_datagrams"] = run.extras["udp_replay"]["capture_datagrams"]
        run.extras["sender_exit"] = tr.returncode
        try:
            run.extras["kernel"] = ns.udp_counters()
        except NetnsError:
            pass
    if tr.returncode != 0:
        ur = run.extras.get("udp_replay", {})
        outside = stopped_from_outside(sender, ur)
        if outside is not None:
            raise outside
        said = _said_on_failure(text) or (f"{ur['failed']:,} of {ur['packets']:,} packets not sent (first error: "
                                       f"{ur.get('first_error') or 'none named'})" if ur.get("failed") else
                                       "nothing said but its usual notices" if text.strip() else "no output")
        raise sender_failure(sender, facts, f"{sender} {describe_exit(tr.returncode)}: {said}")
