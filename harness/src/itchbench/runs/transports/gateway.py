"""The scenario's [gateway] settings as itchbench gateway flags: what fills
{itchbench_flags} in a contract's command (docs/gateway-contract.md). The
built-in gateway takes them; a gateway of another kind need not."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...captures.inspect import gateway_feed_args
from .. import environment
from .rerequest import PORT
from .snapshot import PORT as SNAPSHOT_PORT
from .snapshot import joins
from .udp import line_b

if TYPE_CHECKING:
    from ..run import Run


def shm_name(run: "Run") -> str:
    """The run's shared-memory BBO ring (POSIX shm: /dev/shm/itchbench-RUN_ID)."""
    return f"/itchbench-{run.run_id}"


def recovery_flags(values: dict) -> list[str]:
    """The B line, the re-request server and the snapshot service of a late join, for the built-in gateway's
    recovery stage (docs/exchange.md, docs/snapshot.md). The
    other line has four times its skew, and 1 ms at least, to fill a gap before it is asked for (or given up)."""
    b = line_b(values)
    args = ["--feed-b", f"{b[0]}:{b[1]}"] if b else []
    if values["rerequest"]["server"]:
        args += ["--rerequest", f"127.0.0.1:{PORT}"]
    if joins(values):
        args += ["--snapshot", f"127.0.0.1:{SNAPSHOT_PORT}", "--snapshot-login", values["join"]["login"]]
    if args:
        lines = values["lines"]
        args += ["--line-wait-us", str(lines["wait_us"] or max(1000, 4 * lines["skew_us"]))]
    return args


def asked_in_flags_alone(run: "Run", input_kind: str) -> list[str]:
    """The scenario's settings for input_kind that make a configuration what it is (pinned, real time, busy
    polling, AF_XDP; the capture looped, its ends of session to be gone through) and reach a gateway in
    {itchbench_flags} alone: of a contract whose command does not take them, none is applied."""
    g = run.values["gateway"]
    asked = [f"gateway.cpu = {g['cpu']}"] if g["cpu"] >= 0 else []
    if input_kind == "file":
        return asked
    asked += [f"gateway.publisher_cpu = {g['publisher_cpu']}"] if g["publisher_cpu"] >= 0 else []
    asked += [f"gateway.sched_fifo = {g['sched_fifo']}"] if g["sched_fifo"] > 0 else []
    asked += ["gateway.mlockall = true"] if g["mlockall"] else []
    if input_kind == "udp":
        asked += ["gateway.busy_poll = true"] if g["busy_poll"] else []
        asked += [f'gateway.source = "{g["source"]}"'] if g["source"] != "udp" else []
        loops = run.values["replay"]["loops"]
        asked += [f"replay.loops = {loops} (--ignore-end-of-session)"] if loops > 1 else []
    return asked


def itchbench_flags(run: "Run", input_kind: str) -> list[str]:
    """Flags for input_kind (udp, serial, file), each named only when the scenario asks for it where it can:
    the gateways of older revisions (compare, bisect) know fewer flags."""
    g = run.values["gateway"]
    args = ["--run-id", run.run_id, "--commit", environment.commit_label(run.env["git"]),
            "--expected-orders", str(g["expected_orders"])]
    if not g["latency_log"]:
        args.append("--no-latency-log")
    if run.values["levels"]:
        args += ["--levels", str(run.values["levels"])]
    if g["stamps"] != "all":
        args += ["--stamps", g["stamps"]]
    if g["latency_format"] != "compact":
        args += ["--latency-format", g["latency_format"]]
    if g["cpu"] >= 0:
        args += ["--cpu", str(g["cpu"])]
    if input_kind == "file":
        return [*args, "--progress", *gateway_feed_args(Path(run.values["capture"]), run.values["feed"])]
    args += ["--idle-exit-ms", str(g["idle_exit_ms"]), "--subscriber-queue", str(g["subscriber_queue"]),
             "--slow-subscriber", g["slow_subscriber"], "--wait-subscribers", str(run.values["subscribers"])]
    if run.values["levels"] and run.values["subscribers"]:
        args += ["--wait-depth-subscribers", "1"]  # the run's depth subscriber (transports/subscribers.py)
    if g["publisher_cpu"] >= 0:
        args += ["--publisher-cpu", str(g["publisher_cpu"])]
    if g["sched_fifo"] > 0:
        args += ["--sched-fifo", str(g["sched_fifo"])]
    if g["mlockall"]:
        args.append("--mlockall")
    if "mqtt" in run.values["publish"]:
        m = run.values["mqtt"]
        args += ["--publish-mqtt", f"127.0.0.1:{run.extras['brokers']['mqtt']['port']}", "--mqtt-topic", m["topic"],
                 "--mqtt-qos", str(m["qos"])]
    if "kafka" in run.values["publish"]:
        k = run.values["kafka"]
        args += ["--publish-kafka", f"127.0.0.1:{run.extras['brokers']['kafka']['port']}", "--kafka-topic", k["topic"],
                 "--kafka-acks", k["acks"], "--kafka-linger-ms", str(k["linger_ms"]), "--kafka-batch", str(k["batch"])]
    if run.values["shm_subscribers"]:
        args += ["--publish-shm", shm_name(run), "--shm-capacity", str(g["shm_capacity"]),
                 "--shm-policy", g["shm_policy"], "--wait-shm-subscribers", str(run.values["shm_subscribers"])]
        if run.values["levels"]:
            args += ["--wait-depth-shm-subscribers", "1"]  # the consumer of its depth ring NAME-depth
    if input_kind == "udp":
        # The source is named here, not in the contract's command: udp input reaches the built-in gateway's
        # UDP socket, or its AF_XDP socket at the namespace loopback's XDP hook.
        args += ["--source", g["source"]]
        if g["source"] == "af_xdp":
            args += ["--interface", "lo", "--xdp-attach", g["xdp_attach"], "--xdp-bind", g["xdp_bind"],
                     "--xdp-frames", str(g["xdp_frames"]), "--xdp-ring", str(g["xdp_ring"]),
                     "--xdp-batch", str(g["xdp_batch"])]
        else:
            args += ["--rcvbuf", str(g["rcvbuf"])]
            if run.values["replay"]["multicast"]:
                args += ["--join", run.values["replay"]["multicast"]]
            args += recovery_flags(run.values)
        if g["busy_poll"]:
            args.append("--busy-poll")
        if run.values["replay"]["loops"] > 1:
            args.append("--ignore-end-of-session")
    return args
