"""Scenarios: declarative run configurations in TOML (scenarios/*.toml).

A scenario names a transport, a capture and how to replay it. Several
configurations come from a [[configurations]] list (each a label and the keys
it changes, for sets that are not a product, e.g. UART vs UDP pinned) and/or
a [matrix] table (a product, e.g. transports x pinning).
Every key is checked: an unknown one is reported with the nearest valid
name, a bad value with what is allowed, a missing capture by its path.
"""

from __future__ import annotations

import copy
import difflib
import ipaddress
import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import paths, rundir, toml_types
from ..capacity import sweep as capacity_sweep
from ..capacity import targets as capacity_targets
from ..depth_levels import ALL_LEVELS, parse_levels
from ..captures import generated
from . import placement


class ScenarioError(ValueError):
    """The scenario file is not valid; the message says where and why."""


# key -> (type, default, check, description). Types: bool, int, float, str, list.
_Spec = tuple[type, Any, Any, str]


def _power_of_two(v: int) -> bool | str:
    return (v > 0 and v & (v - 1) == 0) or "must be a power of two"


def _multicast_group(v: str) -> bool | str:
    """"" or a dotted IPv4 multicast group."""
    if not v:
        return True
    try:
        return ipaddress.IPv4Address(v).is_multicast or "must be a multicast group (224.0.0.0/4)"
    except ValueError:
        return "must be a multicast group (224.0.0.0/4), e.g. 239.1.1.1"


def _choice(*options: str):
    return lambda v: v in options or f"must be one of {', '.join(options)}"


def _at_least(lo: float):
    return lambda v: v >= lo or f"must be at least {lo}"


def _finite_at_least(lo: float):
    return lambda v: lo <= v < math.inf or f"must be at least {lo}, and finite"


def _positive_finite(v: float) -> bool | str:
    # inf was taken, and handed to the sender as a speed-up: rate = topspeed says that
    return 0 < v < math.inf or "must be positive and finite (no pacing at all: rate = topspeed)"


def _modes(v: list) -> bool | str:
    bad = [m for m in v if m not in ("fast", "stuck", "slow", "reconnect")]
    return not bad or f"has unknown subscriber modes {bad} (fast, stuck, slow, reconnect)"


def _shm_modes(v: list) -> bool | str:
    bad = [m for m in v if m not in ("fast", "stuck", "slow")]
    return not bad or f"has unknown shared-memory subscriber modes {bad} (fast, stuck, slow)"


def _targets(v: list) -> bool | str:
    bad = [t for t in v if t not in ("tcp", "mqtt", "kafka")]
    return (not bad and "tcp" in v) or "must name tcp (always on) and maybe mqtt and kafka"


def _topic(v: str) -> bool | str:
    return (bool(v) and not set(v) & set("#+") and not v.startswith("$")) or "must be a plain topic (no #, +, $)"


def _broker_modes(v: list) -> bool | str:
    bad = [m for m in v if m not in ("fast", "slow", "reconnect")]
    return not bad or f"has unknown subscriber modes {bad} (fast, slow, reconnect)"


def _kafka_topic(v: str) -> bool | str:
    return bool(re.fullmatch(r"[A-Za-z0-9._-]{1,200}", v)) or "must be a Kafka topic name (letters, digits, . _ -)"


def _benchmarks(v: list) -> bool | str:
    bad = [b for b in v if b not in MICROBENCH_BINARIES]
    return not bad or f"names unknown benchmark binaries {bad} ({', '.join(MICROBENCH_BINARIES)})"


MICROBENCH_BINARIES = ("book_bench", "decode_bench")


def _feed(v: str) -> bool | str:
    if v == "":
        return True
    addr, _, port = v.rpartition(":")
    parts = addr.split(".")
    ok = (len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts)
          and port.isdigit() and 0 < int(port) < 65536)
    return ok or "must be ADDR:PORT (an IPv4 address and a UDP port), e.g. 233.54.12.111:26477"


def _stamps(v: str) -> bool | str:
    names = v.split(",")
    ok = v == "all" or (bool(v) and all(n in ("read", "decoded", "book", "published") for n in names))
    return ok or "must be all, or a comma-separated subset of read, decoded, book, published"


def _one_of(*choices: str):
    return lambda v: v in choices or "must be one of " + ", ".join(choices)


def _levels(v: Any) -> bool | str:
    try:
        parse_levels(v)
    except ValueError:
        return "must be 0 to 64 (levels a side) or \"all\""
    return isinstance(v, int) or v == ALL_LEVELS or "must be a number (levels a side) or \"all\""


def _between(lo: float, hi: float):
    return lambda v: lo <= v <= hi or f"must be between {lo} and {hi}"


SCHEMA: dict[str, _Spec | dict[str, _Spec]] = {
    "name": (str, None, lambda v: _name_problem(v) or True, "scenario name (required)"),
    "description": (str, "", None, "what the scenario measures"),
    "transport": (str, None, _choice("sim", "udp", "serial"), "sim, udp or serial (required)"),
    "capture": (str, None, None, "capture file, relative to the scenario file (required)"),
    "feed": (str, "", _feed, "the capture's feed flow ADDR:PORT (empty: the flow with the most MoldUDP64 "
             "messages); everything else in the capture is counted as not the feed and never replayed"),
    "gateway_file": (str, "", None, "the gateway under test: its contract file, itchbench.toml (relative to the "
                     "scenario file; docs/gateway-contract.md); empty: the built-in gateway"),
    "repetitions": (int, 1, _between(1, 1000), "runs of each configuration"),
    "warmup_messages": (int, 0, _at_least(0), "first messages left out of the latency statistics"),
    "levels": (object, 0, _levels, "depth events too (docs/book-and-bbo.md, \"Depth\"): after a book message, "
               "a stock's top N price levels a side (1 to 64) whenever any changed, or \"all\": each level the "
               "message changed, its new shares; logged to depth.dep (itchbench dump depth); 0: BBO only"),
    "subscribers": (int, 1, _between(0, 1000), "TCP subscribers attached during live runs (fast and stuck ones served "
                    "by one bbo-tcp-subscribers process, docs/capacity.md)"),
    "subscriber_modes": (list, [], _modes, "modes of the first subscribers (fast, stuck, slow, reconnect); "
                         "the rest are fast. Only fast ones must receive every frame"),
    "shm_subscribers": (int, 0, _between(0, 16), "live runs: consumers of the gateway's shared-memory BBO ring "
                        "(bbo-shm-subscriber), beside the TCP subscribers; docs/shm-ring.md"),
    "publish": (list, ["tcp"], _targets, "live runs: where the gateway publishes BBO: tcp (always on), mqtt (a "
                "Mosquitto broker the run starts), kafka (a one-node KRaft Kafka the run starts; "
                "docs/distribution.md)"),
    "lines": {
        "b": (bool, False, None, "udp-replay: send the session on a B line too, as exchanges do (docs/exchange.md)"),
        "b_group": (str, "", _multicast_group, "with replay.multicast: the B line's group (unicast B goes to the "
                    "feed port + 2)"),
        "skew_us": (int, 0, _between(0, 10_000_000), "how far B runs behind A"),
        "wait_us": (int, 0, _between(0, 60_000_000), "how long the built-in gateway waits for the other line to fill a "
                    "gap before it asks the re-request server for it, or gives it up (0: four times skew_us, at least "
                    "1 ms)"),
        "seed": (int, 1, _at_least(0), "seed of the lines' faults"),
        "a_drop": (float, 0.0, _between(0, 1), "line A: probability a packet is lost at send time"),
        "b_drop": (float, 0.0, _between(0, 1), "line B: the same"),
        "a_burst_drop": (str, "", lambda v: v == "" or "@" in v or "must be LEN@P", "line A: LEN@P bursts of losses"),
        "b_burst_drop": (str, "", lambda v: v == "" or "@" in v or "must be LEN@P", "line B: the same"),
        "a_silent": (str, "", lambda v: v == "" or ":" in v or "must be FROM:TO", "line A: silent FROM:TO seconds"),
        "b_silent": (str, "", lambda v: v == "" or ":" in v or "must be FROM:TO", "line B: the same"),
        "a_duplicate": (float, 0.0, _between(0, 1), "line A: probability a packet is sent twice"),
        "b_duplicate": (float, 0.0, _between(0, 1), "line B: the same"),
        "a_reorder": (float, 0.0, _between(0, 1), "line A: probability a packet is sent after the line's next one"),
        "b_reorder": (float, 0.0, _between(0, 1), "line B: the same"),
        "a_delay_us": (int, 0, _between(0, 10_000_000), "line A runs this much later (more than skew_us: B ahead "
                       "of A)"),
        "b_delay_us": (int, 0, _between(0, 10_000_000), "line B runs this much later, on top of skew_us"),
    },
    "join": {
        "at_seq": (int, 0, _at_least(0), "a late join (docs/snapshot.md): the gateway takes a snapshot of the session "
                   "after this message and the feed from the next on (0: no join)"),
        "at_share": (float, 0.0, _between(0, 1), "or: after this share of the session's messages"),
        "at_time": (str, "", lambda v: v == "" or v.count(":") == 2 or "must be HH:MM:SS",
                    "or: after the last message stamped before this time of day (HH:MM:SS, ITCH timestamps)"),
        "feed_lead": (int, 200, None, "the live feed starts this many messages before the join point, to be held and "
                      "partly dropped as covered (negative: after it, the messages between to be re-requested)"),
        "login": (str, "itch:bench", lambda v: ":" in v or "must be USER:PASSWORD", "the snapshot service's login"),
        "cut_after": (int, 0, _at_least(0), "a fault: the snapshot connection is cut after this many messages "
                      "(the gateway must log in again at the next)"),
        "messages_per_s": (int, 0, _at_least(0), "a fault: a slow snapshot, messages a second (0: as fast as it goes)"),
    },
    "rerequest": {
        "server": (bool, False, None, "udp: run the exchange's MoldUDP64 re-request server in the run's namespace, "
                   "holding the session before any fault (docs/exchange.md)"),
        "delay_ms": (int, 0, _at_least(0), "answer each request this long after it"),
        "max_messages": (int, 0, _at_least(0), "messages answered a request at most (0: as many as asked)"),
        "max_payload": (int, 1400, _between(22, 65507), "bytes of an answer packet, its header included"),
        "rate_limit": (int, 0, _at_least(0), "requests a second from one requester (0: no limit)"),
        "retention": (int, 0, _at_least(0), "messages held, the session's last ones (0: all)"),
        "drop_answers": (float, 0.0, _between(0, 1), "a fault: the share of answer packets not sent"),
        "seed": (int, 1, _at_least(0), "seed of the dropped answers"),
        "answer_after_end_ms": (int, -1, _at_least(-1), "after the sender's end, answer this long (-1: until the "
                                "gateway stops)"),
    },
    "mqtt": {
        "subscribers": (int, 1, _between(0, 16), "bbo-mqtt-subscriber processes on the broker"),
        "subscriber_modes": (list, [], _broker_modes, "modes of the first ones: fast, slow (1 ms a message), "
                             "reconnect (every second); the rest are fast. Only fast ones' loss is the run's"),
        "qos": (int, 1, _between(0, 2), "QoS of the gateway's messages and of the subscriptions"),
        "topic": (str, "itchbench/bbo", _topic, "the BBO topic (its end marker: TOPIC/end)"),
        "restart_at_s": (float, 0.0, _finite_at_least(0), "a fault: stop the broker this long into the replay and "
                         "start it again (0: never)"),
    },
    "kafka": {
        "subscribers": (int, 1, _between(0, 16), "bbo-kafka-subscriber processes on the broker"),
        "subscriber_modes": (list, [], _broker_modes, "modes of the first ones: fast, slow (1 ms a record), "
                             "reconnect (a new consumer every second); the rest are fast"),
        "acks": (str, "1", _choice("0", "1", "all"), "the producer's acks"),
        "linger_ms": (int, 0, _between(0, 10_000), "the producer's linger.ms"),
        "batch": (int, 10000, _between(1, 1_000_000), "the producer's batch.num.messages"),
        "topic": (str, "itchbench-bbo", _kafka_topic, "the BBO topic (one partition; its end marker: key \"end\")"),
        "restart_at_s": (float, 0.0, _finite_at_least(0), "a fault: stop the broker this long into the replay and "
                         "start it again on its storage (0: never)"),
    },
    "shm_subscriber_modes": (list, [], _shm_modes, "modes of the first ring consumers (fast, slow, stuck); the "
                             "rest are fast"),
    "replay": {
        "sender": (str, "tcpreplay", _choice("tcpreplay", "udp-replay"), "udp: tcpreplay, or udp-replay "
                   "(sendmmsg batches, every packet's intended and actual send time, rates past tcpreplay's)"),
        "rate": (str, "capture", _choice("capture", "multiplier", "pps", "topspeed"), "the sender's pacing"),
        "multiplier": (float, 1.0, _positive_finite, "with rate = multiplier"),
        "pps": (int, 10000, _at_least(1), "packets per second, with rate = pps"),
        "loops": (int, 1, _between(1, 1000), "times through the capture"),
        "batch": (int, 64, _between(1, 1024), "udp-replay: most packets a sendmmsg"),
        "heartbeat_ms": (int, 0, _between(0, 60_000), "udp-replay: heartbeats while the capture is idle this long, "
                         "as a MoldUDP64 server sends them (0: only the capture's own)"),
        "end_of_session_ms": (int, 0, _between(0, 60_000), "udp-replay: end-of-session packets for this long after "
                              "the last one (0: only the capture's own)"),
        "multicast": (str, "", _multicast_group, "udp-replay: send to this multicast group (224.0.0.0/4) in the run's "
                      "namespace instead of unicast; the gateway joins it (\"\": unicast)"),
    },
    "serial": {
        "baud": (int, 115200, _between(300, 100_000_000), "line rate (8N1: 10 bits a byte)"),
        "timing": (str, "baud", _choice("baud", "capture"), "back to back at the line rate, or at capture timing"),
        "multiplier": (float, 1.0, _positive_finite, "speed-up of capture timing"),
        "garbage_every": (int, 0, _at_least(0), "line noise before every Nth line (0: none)"),
        "corrupt_every": (int, 0, _at_least(0), "damage every Nth line (0: none)"),
    },
    "faults": {
        "seed": (int, 1, _at_least(0), "seed of the fault draw (recorded in the sidecar)"),
        "drop": (float, 0.0, _between(0, 1), "probability a packet is dropped"),
        "duplicate": (float, 0.0, _between(0, 1), "probability a packet is sent twice"),
        "reorder": (float, 0.0, _between(0, 1), "probability a packet moves later"),
        "reorder_window": (int, 4, _between(1, 64), "a reordered packet moves later by 1..K packets"),
        "truncate": (float, 0.0, _between(0, 1), "probability a packet's payload is cut short"),
        "corrupt": (float, 0.0, _between(0, 1), "probability one message of a packet is damaged"),
        "burst_drop": (str, "", lambda v: v == "" or "@" in v or "must be LEN@P", "LEN@P: bursts of drops"),
    },
    "gateway": {
        "cpu": (int, -1, _at_least(-1), "pin the receive thread (-1: no)"),
        "publisher_cpu": (int, -1, _at_least(-1), "pin the publisher thread (-1: no)"),
        "sched_fifo": (int, 0, _between(0, 99), "SCHED_FIFO priority of the receive thread (0: off)"),
        "mlockall": (bool, False, None, "lock the gateway's memory"),
        "rcvbuf": (int, 8 << 20, _at_least(0), "UDP receive buffer request, bytes (as root, past net.core.rmem_max)"),
        "busy_poll": (bool, False, None, "spin on the UDP socket (or the AF_XDP ring) instead of epoll (poll)"),
        "source": (str, "udp", _choice("udp", "af_xdp"), "udp transport: the gateway's UDP socket, or AF_XDP at the "
                   "XDP hook of the run namespace's loopback (kernel bypass, our own XDP program; needs root)"),
        "xdp_attach": (str, "auto", _choice("auto", "drv", "skb"), "af_xdp: native (drv) or generic (skb) XDP; "
                       "auto tries drv first; the granted mode is in the summary"),
        "xdp_bind": (str, "auto", _choice("auto", "zerocopy", "copy"), "af_xdp: zero-copy or copy socket; auto "
                     "tries zero-copy first"),
        "xdp_frames": (int, 4096, _power_of_two, "af_xdp: UMEM frames of 4 KiB"),
        "xdp_ring": (int, 2048, _power_of_two, "af_xdp: receive ring entries"),
        "xdp_batch": (int, 64, _between(1, 1024), "af_xdp: descriptors taken from the ring at a time"),
        "shm_capacity": (int, 65536, _power_of_two, "shared-memory BBO ring: entries (64 bytes each)"),
        "shm_policy": (str, "overrun", _choice("overrun", "wait"), "shared-memory BBO ring: a consumer a whole "
                       "ring behind loses events, counted (overrun), or holds the gateway up (wait)"),
        "expected_orders": (int, 1 << 20, _at_least(16), "order index pre-size: live orders beyond it make the index "
                            "grow, rehashing them all on the hot thread"),
        "subscriber_queue": (int, 8192, _at_least(1), "frames queued per subscriber"),
        "slow_subscriber": (str, "drop", _choice("drop", "disconnect"), "what a full subscriber queue does"),
        "idle_exit_ms": (int, 3000, _at_least(100), "gateway stops after this long without input"),
        "latency_log": (bool, True, None, "record per-message latency (stage stamps)"),
        "stamps": (str, "all", _stamps, "stages stamped: all, or some of read,decoded,book,published (each stamp "
                   "a TSC read; stages without both of their stamps are left out of the report)"),
        "latency_format": (str, "compact", _one_of("compact", "wide"),
                           "latency log records: compact (version 5, ~20 bytes a message) or wide (version 4, 24 "
                           "bytes and 8 a stamp; for tools that read version 4)"),
    },
    "targets": capacity_targets.schema(),
    "sweep": capacity_sweep.schema(),
    "placement": {
        "cpus": (str, "", placement.check_cpus, "every thread of the gateway's process on these CPUs, e.g. \"2-5\" "
                 "(\"\": as the harness runs; docs/host.md)"),
        "threads": (list, [], placement.check_threads, "per thread, by the name it carries: [{ name = "
                    "\"itch-gateway\", cpu = 2, fifo = 80 }, { name = \"bbo-publisher\", cpu = 3, fifo = 70 }]"),
    },
    "profile": {
        "enabled": (bool, False, None, "perf on the gateway while it runs (docs/profile.md)"),
        "samples": (bool, True, None, "sample it: a flame graph and its hottest functions in the run"),
        "scheduler": (bool, False, None, "record every context switch on every CPU: the slowest messages are tied "
                      "to the tasks that had the hot thread's CPU"),
        "frequency": (int, 999, _between(1, 20_000), "samples a second"),
        "event": (str, "cpu-clock", _choice("cpu-clock", "task-clock", "cycles", "instructions"),
                  "cpu-clock and task-clock are software events (every machine); cycles and instructions need "
                  "hardware counters"),
        "call_graph": (str, "dwarf", _choice("dwarf", "fp", "none"), "how stacks are unwound: dwarf (the build "
                       "has no frame pointers), fp, or none (leaf functions only)"),
    },
    "build": {
        "cxx_flags": (str, "", None, "the built-in gateway built from this checkout with these compiler flags after "
                      "Release's -O3 (\"-O2\", \"-march=native\"); each flavour built once and cached "
                      "(docs/builds.md)"),
        "lto": (bool, False, None, "link-time optimisation"),
        "pgo": (bool, False, None, "profile-guided optimisation: built instrumented, trained on pgo_training in "
                "simulation, built again with the profile"),
        "pgo_training": (str, "", None, "the PGO training capture, relative to the scenario file (empty: the "
                         "seed fixture)"),
    },
    "microbench": {
        "binaries": (list, [], _benchmarks, "Google Benchmark binaries of the gateway's own build, run after "
                     "the transport; their JSON goes into the run (microbench/)"),
        "filter": (str, "", None, "--benchmark_filter regex (empty: every benchmark)"),
        "repetitions": (int, 5, _between(1, 100), "repetitions of each benchmark (each one a sample)"),
    },
}
_TABLES = [k for k, v in SCHEMA.items() if isinstance(v, dict)]
_REQUIRED = ["name", "transport", "capture"]


@dataclass(frozen=True)
class Configuration:
    """One fully resolved configuration of a scenario."""

    scenario: str
    label: str  # scenario name plus matrix values
    values: dict[str, Any]
    source: Path
    step: int | None = None  # a sweep's step (0 the lightest), None outside a sweep
    base_label: str = ""     # a sweep step's configuration label without the step
    step_value: Any = None   # the swept key's value at this step

    @property
    def swept(self) -> str:
        """The configuration a sweep step belongs to (its own label outside a sweep)."""
        return self.base_label or self.label

    @property
    def capture(self) -> Path:
        return Path(self.values["capture"])

    @property
    def transport(self) -> str:
        return str(self.values["transport"])

    def hash(self) -> str:
        return rundir.scenario_hash(self.values)


def _nearest(key: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else f" (valid: {', '.join(sorted(valid))})"


def _check_value(where: str, spec: _Spec, value: Any) -> Any:
    typ, _, check, _ = spec
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
        raise ScenarioError(f"{where}: expected {toml_types.expected(typ)}, got {toml_types.got(value)}")
    if check is not None:
        verdict = check(value)
        if verdict is not True:
            raise ScenarioError(f"{where}: {value!r} {verdict}")
    return value


def _resolve(raw: dict[str, Any], origin: str) -> dict[str, Any]:
    """Defaults filled in, every key and value checked."""
    out: dict[str, Any] = {}
    for key in raw:
        if key not in SCHEMA:
            raise ScenarioError(f"{origin}: unknown key '{key}'{_nearest(key, list(SCHEMA))}")
    for key, spec in SCHEMA.items():
        if isinstance(spec, dict):
            table = raw.get(key, {})
            if not isinstance(table, dict):
                raise ScenarioError(f"{origin}: '{key}' must be a table")
            for sub in table:
                if sub not in spec:
                    raise ScenarioError(f"{origin}: unknown key '{key}.{sub}'{_nearest(sub, list(spec))}")
            out[key] = {sub: _check_value(f"{origin}: {key}.{sub}", s, table.get(sub, s[1])) for sub, s in spec.items()}
        elif key in raw:
            out[key] = _check_value(f"{origin}: {key}", spec, raw[key])
        elif key in _REQUIRED:
            raise ScenarioError(f"{origin}: missing required key '{key}'")
        else:
            out[key] = copy.deepcopy(spec[1])
    g = out["gateway"]
    if out["transport"] == "sim" and (g["publisher_cpu"] >= 0 or g["sched_fifo"] or g["mlockall"] or g["busy_poll"]):
        raise ScenarioError(f"{origin}: gateway.publisher_cpu, sched_fifo, mlockall and busy_poll apply to live "
                            "transports; simulation has no publisher thread and no receive wait (gateway.cpu pins it)")
    if g["source"] == "af_xdp" and out["transport"] != "udp":
        raise ScenarioError(f"{origin}: gateway.source = \"af_xdp\" receives the udp transport's packets; "
                            f"transport is {out['transport']}")
    if len(out["shm_subscriber_modes"]) > out["shm_subscribers"]:
        raise ScenarioError(f"{origin}: shm_subscriber_modes names {len(out['shm_subscriber_modes'])} consumers "
                            f"but shm_subscribers = {out['shm_subscribers']}")
    if out["shm_subscribers"] and out["transport"] == "sim":
        raise ScenarioError(f"{origin}: shm_subscribers apply to live transports (the simulation publishes nothing)")
    brokered = [t for t in out["publish"] if t != "tcp"]
    if brokered and out["transport"] == "sim":
        raise ScenarioError(f"{origin}: publish = {brokered} applies to live transports (the simulation publishes "
                            "nothing)")
    for broker in ("mqtt", "kafka"):
        if len(out[broker]["subscriber_modes"]) > out[broker]["subscribers"]:
            raise ScenarioError(f"{origin}: {broker}.subscriber_modes names {len(out[broker]['subscriber_modes'])} "
                                f"subscribers but {broker}.subscribers = {out[broker]['subscribers']}")
    lines = out["lines"]
    faulted_lines = (lines["a_drop"] or lines["a_burst_drop"] or lines["a_silent"] or lines["a_duplicate"]
                     or lines["a_reorder"] or lines["a_delay_us"] or lines["b"])
    if faulted_lines and (out["transport"] != "udp" or out["replay"]["sender"] != "udp-replay"):
        raise ScenarioError(f"{origin}: [lines] are udp-replay's: they need transport = \"udp\" and "
                            "replay.sender = \"udp-replay\"")
    if not lines["b"] and (lines["b_drop"] or lines["b_burst_drop"] or lines["b_silent"] or lines["skew_us"]
                           or lines["b_group"] or lines["b_duplicate"] or lines["b_reorder"] or lines["b_delay_us"]):
        raise ScenarioError(f"{origin}: the B line's keys need lines.b = true")
    if lines["b"] and bool(out["replay"]["multicast"]) != bool(lines["b_group"]):
        raise ScenarioError(f"{origin}: with replay.multicast the B line needs its own group (lines.b_group), and "
                            "only then")
    if lines["b"] and lines["b_group"] and lines["b_group"] == out["replay"]["multicast"]:
        raise ScenarioError(f"{origin}: lines.b_group must differ from replay.multicast (A's group)")
    join = out["join"]
    if sum(bool(join[k]) for k in ("at_seq", "at_share", "at_time")) > 1:
        raise ScenarioError(f"{origin}: join.at_seq, join.at_share and join.at_time name the same point: give one")
    if (join["at_seq"] or join["at_share"] or join["at_time"]) and (out["transport"] != "udp" or out["replay"]["sender"] != "udp-replay"
                                                 or out["replay"]["loops"] > 1):
        raise ScenarioError(f"{origin}: [join] needs transport = \"udp\", replay.sender = \"udp-replay\" (it starts "
                            "the feed mid-session) and one loop")
    if out["rerequest"]["server"] and out["transport"] != "udp":
        raise ScenarioError(f"{origin}: rerequest.server answers MoldUDP64 over UDP: it needs transport = \"udp\"")
    if out["replay"]["multicast"] and out["gateway"]["source"] == "af_xdp":
        raise ScenarioError(f"{origin}: replay.multicast with gateway.source = \"af_xdp\" is not supported: the XDP "
                            "program takes the feed's unicast frames")
    made = out["replay"]["heartbeat_ms"] or out["replay"]["end_of_session_ms"]
    if made and (out["replay"]["sender"] != "udp-replay" or out["replay"]["rate"] == "topspeed"):
        raise ScenarioError(f"{origin}: replay.heartbeat_ms and end_of_session_ms are udp-replay's, on a schedule "
                            "with time in it (rate capture, multiplier or pps)")
    if out["replay"]["multicast"] and out["replay"]["sender"] != "udp-replay":
        raise ScenarioError(f"{origin}: replay.multicast needs replay.sender = \"udp-replay\" (tcpreplay sends the "
                            "capture's frames rewritten for unicast to the namespace's loopback)")
    sweep, targets = out["sweep"], capacity_targets.set_targets(out)
    if sweep["key"] and set(targets) - {"saturation_msg_s"}:
        raise ScenarioError(f"{origin}: in a sweep, targets judge saturation_msg_s only (its steps are bounded by "
                            f"sweep.p99_us and sweep.max_slope_us_per_s); drop {sorted(set(targets) - {'saturation_msg_s'})}")
    if "saturation_msg_s" in targets and not sweep["key"]:
        raise ScenarioError(f"{origin}: targets.saturation_msg_s is judged on a sweep: it needs sweep.key")
    if len(out["subscriber_modes"]) > out["subscribers"]:
        raise ScenarioError(f"{origin}: subscriber_modes names {len(out['subscriber_modes'])} subscribers "
                            f"but subscribers = {out['subscribers']}")
    return out


def _set_path(values: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    target = values
    for p in parts[:-1]:
        target = target[p]
    target[parts[-1]] = value


def _matrix_keys() -> list[str]:
    keys = [k for k, v in SCHEMA.items() if not isinstance(v, dict) and k != "name"]
    keys += [f"{t}.{s}" for t in _TABLES for s in SCHEMA[t]]  # type: ignore[union-attr]
    return keys


INPUT_OF = {"udp": "udp", "serial": "serial", "sim": "file"}  # the gateway input each transport feeds


def input_not_taken(values: dict[str, Any], c: Any) -> str:
    """Why contract c cannot run this configuration ("" when it can): the input its transport needs."""
    need = INPUT_OF[values["transport"]]
    if need not in c.inputs:
        return f"transport {values['transport']} needs a gateway that takes {need} input; {c.path} lists {list(c.inputs)}"
    levels = values["levels"]
    # The gateway's own run files (the built-in one) carry the depth the scenario asks for; a black box publishes
    # what its contract says, and a scenario asking for other depth would judge nothing it asked.
    if levels and c.white_box != "run-files" and c.bbo_levels != levels:
        return (f"the scenario asks for depth of {levels} levels; {c.path} publishes "
                + (f"{c.bbo_levels} (bbo.levels)" if c.bbo_levels else "the BBO (bbo.levels = 0)"))
    return ""


def load_gateway_file(values: dict[str, Any]) -> Any:
    """The configuration's contract, or ScenarioError (a bad contract is bad input, exit 2)."""
    from ..gateways import contract
    try:
        return contract.load(values["gateway_file"])
    except contract.ContractError as e:
        raise ScenarioError(str(e)) from e


def check_gateway_file(values: dict[str, Any], origin: str) -> None:
    """The contract file is valid and takes the scenario's transport."""
    why = input_not_taken(values, load_gateway_file(values))
    if why:
        raise ScenarioError(f"{origin}: {why}")


def defaults(**top: Any) -> dict[str, Any]:
    """A resolved configuration from defaults and the given top-level keys."""
    return _resolve(dict(top), "itchbench")


def load(path: Path | str) -> list[Configuration]:
    """Read, validate and expand a scenario into its configurations."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(f"scenario not found: {path}")
    raw = toml_types.read(path, ScenarioError)[1]
    entries = _configuration_entries(raw.pop("configurations", None), path)
    matrix = raw.pop("matrix", {})
    if not isinstance(matrix, dict):
        raise ScenarioError(f"{path}: 'matrix' must be a table of lists")
    valid_matrix = _matrix_keys()
    for key, options in matrix.items():
        if key not in valid_matrix:
            raise ScenarioError(f"{path}: unknown matrix key '{key}'{_nearest(key, valid_matrix)}")
        if not isinstance(options, list) or not options:
            raise ScenarioError(f"{path}: matrix.{key} must be a non-empty list")

    configs = []
    keys = list(matrix)
    # Keys that act only beside another's value (_IN_EFFECT_WITH): one given at the top must be taken by some
    # configuration (the others may set the value that leaves it out); one a configuration, the matrix or the sweep
    # gives, by every run it makes.
    at_top, taken = _given(raw) & _IN_EFFECT_WITH.keys(), set()
    for entry_label, overrides in entries:
        merged = _merged(raw, overrides)
        base = _resolve(merged, f"{path}" + (f" [configuration {entry_label}]" if entry_label else ""))
        own = _given(overrides) | set(keys) | ({base["sweep"]["key"]} if base["sweep"]["key"] else set())
        for combo in itertools.product(*(matrix[k] for k in keys)) if keys else [()]:
            values = copy.deepcopy(base)
            for key, value in zip(keys, combo):
                _set_path(values, key, value)
            named = [part for part in [entry_label] + [f"{k}={v}" for k, v in zip(keys, combo)] if part]
            where = f"{path}" + (f" [{', '.join(named)}]" if named else "")
            values = _resolve(values, where)
            for key in sorted(own & _IN_EFFECT_WITH.keys()):
                if why := _ignored(values, key):
                    raise ScenarioError(f"{where}: {why}")
            _sweep_in_effect(values, where)
            taken |= {key for key in at_top if not _ignored(values, key)}
            capture = (path.parent / values["capture"]).resolve()
            if not capture.is_file():
                raise ScenarioError(f"{path}: capture not found: {capture}")
            values["capture"] = str(capture)
            if values["gateway_file"]:
                values["gateway_file"] = str((path.parent / values["gateway_file"]).resolve())
                check_gateway_file(values, str(path))
            _resolve_build(values, path)
            label = (entry_label or values["name"]) + "".join(f"-{k.split('.')[-1]}={_label_value(k, v)}"
                                                              for k, v in zip(keys, combo))
            configs.extend(_sweep_steps(Configuration(values["name"], label, values, path.resolve()), str(path)))
    for key in sorted(at_top - taken):
        if len(entries) == 1:
            raise ScenarioError(f"{path}: {_ignored(configs[0].values, key)}")
        needs, value = _IN_EFFECT_WITH[key]
        raise ScenarioError(f'{path}: {key} takes effect only with {needs} = "{value}", which no configuration '
                            f"sets: set it, or leave {key} out")
    return configs


# Keys that shape a run only beside another key's value. Given (in the file, a matrix or a sweep) without it, the
# runs would go as though they were not there, under labels, and in a sweep's curve, that say they were: a sweep of
# replay.pps at the capture's timing made the same run at each "offered rate".
_IN_EFFECT_WITH = {"replay.pps": ("replay.rate", "pps"), "replay.multiplier": ("replay.rate", "multiplier"),
                   "replay.batch": ("replay.sender", "udp-replay"),
                   "serial.multiplier": ("serial.timing", "capture")}


def _given(table: dict[str, Any]) -> set[str]:
    """The `table.key` names a scenario (or a configuration's changes) gives in its tables."""
    return {f"{name}.{key}" for name, value in table.items() if isinstance(value, dict) for key in value}


def _ignored(values: dict[str, Any], key: str) -> str:
    """Why a key of _IN_EFFECT_WITH changes nothing in a run of these values; "" when it takes effect."""
    needs, value = _IN_EFFECT_WITH[key]
    table, name = needs.split(".")
    if values[table][name] == value:
        return ""
    return f"{key} {toml_types.only_beside(key, needs, value, values[table][name])}"


def _sweep_in_effect(values: dict[str, Any], origin: str) -> None:
    """Refuses a sweep of a key its transport, or its publish list, does not take (the simulation serves no
    subscriber; only udp has a sender's pacing): each step would be the same run."""
    swept, transport = values["sweep"]["key"], values["transport"]
    live = swept not in capacity_sweep.GENERATED
    if swept and ((live and transport == "sim") or (swept.startswith("replay.") and transport != "udp")):
        raise ScenarioError(f"{origin}: sweep.key = {swept!r} shapes {'udp' if swept.startswith('replay.') else 'live'}"
                            f" runs, and transport = {transport!r} takes none of it: each step would be the same run")
    broker = swept.split(".")[0]
    if broker in ("mqtt", "kafka") and broker not in values["publish"]:
        raise ScenarioError(f"{origin}: sweep.key = {swept!r} steps the {broker} broker's subscribers, and publish = "
                            f"{values['publish']} has no {broker}: each step would be the same run")


def _name_problem(text: str) -> str:
    """Why a scenario's name or a configuration's label cannot name a run directory (each run's is
    TIME-LABEL-XXXX): "" when it can."""
    if not text.strip():
        return "must not be empty"
    if "/" in text or "\0" in text:
        return "must not hold '/' (it names each run's directory)"
    return ""


def _label_value(key: str, value: Any) -> Any:
    """A matrix value as a label shows it: a capture by its name."""
    return Path(value).name.split(".")[0] if key == "capture" else value


def _resolve_build(values: dict[str, Any], path: Path) -> None:
    """A [build] flavour is the built-in gateway's; its training capture resolved and present."""
    build = values["build"]
    if build["pgo_training"] and not build["pgo"]:
        raise ScenarioError(f"{path}: build.pgo_training names a training capture but build.pgo is false")
    if not (build["cxx_flags"] or build["lto"] or build["pgo"]):
        return
    if values["gateway_file"]:
        raise ScenarioError(f"{path}: [build] flavours build the built-in gateway; a brought gateway "
                            f"({values['gateway_file']}) is built by its own contract")
    if build["pgo"]:
        training = (path.parent / build["pgo_training"]).resolve() if build["pgo_training"] else \
            paths.fixtures_dir() / "seed-workload.pcap"
        if not training.is_file():
            raise ScenarioError(f"{path}: build.pgo_training not found: {training}")
        build["pgo_training"] = str(training)


def _sweep_steps(config: Configuration, origin: str) -> list[Configuration]:
    """The configuration itself, or one configuration a step of its sweep (label KEY=VALUE appended)."""
    sweep = config.values["sweep"]
    if not sweep["key"]:
        return [config]
    try:
        steps = capacity_sweep.values_of(sweep, f"{origin} [{config.label}]")
    except ValueError as e:
        raise ScenarioError(str(e)) from e
    out = []
    for i, value in enumerate(steps):
        values = copy.deepcopy(config.values)
        if sweep["key"] in capacity_sweep.GENERATED:
            symbols = int(value) if sweep["key"] == capacity_sweep.SYMBOLS else sweep["session_symbols"]
            mix = str(value) if sweep["key"] == capacity_sweep.MIX else ""
            try:
                values["capture"] = str(generated.for_sweep(sweep["session_profile"], sweep["session_seed"],
                                                            sweep["session_messages"], symbols, mix))
            except RuntimeError as e:
                raise ScenarioError(f"{origin} [{config.label}]: {e}") from e
        else:
            _set_path(values, sweep["key"], value)
        values = _resolve(values, f"{origin} [{config.label}, sweep step {sweep['key']}={value}]")
        label = f"{config.label}-{sweep['key'].split('.')[-1]}={value}"
        out.append(Configuration(config.scenario, label, values, config.source, i, config.label, value))
    return out


def _configuration_entries(entries: Any, path: Path) -> list[tuple[str, dict[str, Any]]]:
    """[(label, the keys it changes)] of a [[configurations]] list; one unnamed entry without one."""
    if entries is None:
        return [("", {})]
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ScenarioError(f"{path}: 'configurations' must be a non-empty list of tables ([[configurations]])")
    out: list[tuple[str, dict[str, Any]]] = []
    for i, entry in enumerate(entries, 1):
        entry = dict(entry)
        label = entry.pop("label", None)
        if not isinstance(label, str) or not label:
            raise ScenarioError(f"{path}: configuration {i} needs a label (a non-empty string)")
        if _name_problem(label):
            raise ScenarioError(f"{path}: configuration label {label!r} {_name_problem(label)}")
        if any(label == known for known, _ in out):
            raise ScenarioError(f"{path}: configuration label '{label}' is used twice")
        if "name" in entry:
            raise ScenarioError(f"{path}: configuration '{label}' cannot change the scenario's name")
        out.append((label, entry))
    return out


def _merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """base with overrides applied, tables merged key by key."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = copy.deepcopy(value)
    return out
