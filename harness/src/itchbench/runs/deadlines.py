"""How long each wait of a run may last, from the capture and the scenario.

Every wait has a deadline (docs/verdicts.md): a sender that hangs, a gateway
that never drains, a subscriber that never closes end the run as
`deadline`, never a harness that waits for ever. Each deadline is the
expected time, doubled, plus a fixed margin for start-up on a loaded
machine; the expected time comes from the capture's own duration and size.
"""

from __future__ import annotations

from typing import Any

MARGIN_S = 30.0
TOPSPEED_FLOOR_PPS = 20_000   # far below what tcpreplay reaches here (~200-320 k pkt/s)
SIM_FLOOR_MSG_S = 50_000      # far below the gateway's simulation rate, even under ASan
SERIAL_LINE_BYTES = 110       # a generous average ITCH serial line (docs/serial-line.md)
SUBSCRIBER_DRAIN_S = 15.0
DEAD_BROKER_DRAIN_S = 1.0       # a subscriber of a broker that died: what it has read is all it can get
COMPRESSION_BOUND = 20        # gzip and zstd shrink ITCH 2-4x: a bound, not a guess


def capture_seconds(facts: dict[str, Any]) -> float:
    span = facts.get("max_timestamp_ns", 0) - facts.get("first_timestamp_ns", 0)
    return max(0.0, span / 1e9)


def udp_sender_seconds(values: dict[str, Any], facts: dict[str, Any]) -> float:
    """Expected time for the UDP sender to send everything."""
    replay = values["replay"]
    packets = facts["datagrams"] * replay["loops"]
    rate = replay["rate"]
    if rate == "capture":
        return capture_seconds(facts) * replay["loops"]
    if rate == "multiplier":
        return capture_seconds(facts) * replay["loops"] / replay["multiplier"]
    if rate == "pps":
        return packets / replay["pps"]
    return packets / TOPSPEED_FLOOR_PPS


def serial_sender_seconds(values: dict[str, Any], facts: dict[str, Any]) -> float:
    s = values["serial"]
    wire = facts["messages"] * SERIAL_LINE_BYTES * 10 / s["baud"]
    if s["timing"] == "capture":
        return max(wire, capture_seconds(facts) / s["multiplier"])
    return wire


def within(expected_s: float) -> float:
    return 2 * expected_s + MARGIN_S


def sim_seconds(capture_bytes: int, compressed: bool) -> float:
    """From the capture's size, without reading it (a full day needs no pass of its own): every message takes 14
    bytes or more of a plain file, and gzip or zstd shrink ITCH far less than COMPRESSION_BOUND times."""
    messages = capture_bytes * (COMPRESSION_BOUND if compressed else 1) / 14
    return within(messages / SIM_FLOOR_MSG_S)
