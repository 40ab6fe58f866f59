"""Real TCP subscribers on a gateway's BBO publisher (contract [subscribers]),
consumers of its shared-memory ring (shm_subscribers), and, in a run with
depth (levels = N), one more of each on its depth publisher and ring:
started as soon as the gateway names its port, drained after it ends. The
ring's object is removed with the run whatever happened to the gateway."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ... import paths, rundir
from ..brokers import record_deaths
from ..deadlines import DEAD_BROKER_DRAIN_S, SUBSCRIBER_DRAIN_S
from ..failure import RunError, describe_exit
from .gateway import shm_name
from .live import off_the_gateway_cpu

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run


def starter(run: "Run", group: "ProcessGroup",
            wrap: Callable[[list[str]], list[str]]) -> Callable[[int, int | None], None]:
    """What to call with the gateway's publisher ports (BBO, depth or None): starts the scenario's subscribers on
    them."""
    def start(port: int, depth_port: int | None) -> None:
        run.extras["publisher_port"] = port
        if run.values["levels"] and run.values["subscribers"]:
            _start_depth(run, group, wrap, depth_port)
        if run.values["levels"] and run.values["shm_subscribers"]:  # one consumer of the depth ring, fast
            out = run.dir / "depth-subscriber-shm.dep"
            cmd = [str(paths.tool("bbo-shm-subscriber")), "--name", shm_name(run) + "-depth", "--out", str(out)]
            run.depth_procs.append((group.start("depth-subscriber-shm", off_the_gateway_cpu(run, cmd)), out, "fast",
                                    "shm"))
        modes = run.values["subscriber_modes"]
        modes = [modes[i] if i < len(modes) else "fast" for i in range(run.values["subscribers"])]
        # Fast and stuck ones: one process, one epoll loop, however many (bbo-tcp-subscribers); slow and
        # reconnecting ones, whose pacing is their point, each a process of their own.
        pooled = [i for i, m in enumerate(modes) if m in POOLED_MODES]
        pool = None
        if pooled:
            cmd = [str(paths.tool("bbo-tcp-subscribers")), "--port", str(port), "--dir", str(run.dir),
                   "--numbers", ",".join(map(str, pooled)),
                   "--stuck", ",".join(str(i) for i in pooled if modes[i] == "stuck")]
            pool = group.start("tcp-subscribers", wrap(off_the_gateway_cpu(run, cmd)))
        for i, mode in enumerate(modes):
            out = run.dir / f"subscriber-{i}.bbo"
            if mode in POOLED_MODES:
                run.subscriber_procs.append((pool, out, mode))
                continue
            cmd = [sys.executable, "-m", "itchbench.runs.subscriber", "--port", str(port), "--out", str(out),
                   "--mode", mode]
            run.subscriber_procs.append((group.start(f"subscriber-{i}", wrap(off_the_gateway_cpu(run, cmd))), out,
                                         mode))
        first = run.values["subscribers"]
        shm_modes = run.values["shm_subscriber_modes"]
        for k in range(run.values["shm_subscribers"]):
            mode = shm_modes[k] if k < len(shm_modes) else "fast"
            out = run.dir / f"subscriber-{first + k}.bbo"
            cmd = [str(paths.tool("bbo-shm-subscriber")), "--name", shm_name(run), "--out", str(out), "--mode", mode]
            run.subscriber_procs.append((group.start(f"subscriber-{first + k}", off_the_gateway_cpu(run, cmd)), out,
                                         mode))
    if run.values["shm_subscribers"]:
        # Removed by the gateway at its exit; by the run if the gateway never got there (a crash, a kill).
        for ring in (shm_name(run), shm_name(run) + "-depth"):
            group.on_close(lambda ring=ring: _unlink(f"/dev/shm{ring}"))
    return start


def _start_depth(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]],
                 depth_port: int | None) -> None:
    """One fast subscriber of the gateway's depth stream (its depth log's records), numbered after every other."""
    if depth_port is None:
        raise RunError("setup", f"the scenario asks for depth (levels = {run.values['levels']}) with TCP subscribers; "
                                "the gateway named no depth port (contract subscribers.depth_port_pattern)")
    run.extras["depth_publisher_port"] = depth_port
    cmd = [str(paths.tool("bbo-tcp-subscribers")), "--levels", str(run.values["levels"]), "--port", str(depth_port),
           "--dir", str(run.dir), "--numbers", "0"]
    run.depth_procs.append((group.start("depth-subscriber", wrap(off_the_gateway_cpu(run, cmd))),
                            run.dir / "depth-subscriber-0.dep", "fast", "tcp"))


POOLED_MODES = ("fast", "stuck")
BROKER_SUBSCRIBE_TIMEOUT_S = 30.0
BROKERED = ("mqtt", "kafka")  # in the order their subscribers are numbered, after TCP and shared memory


def _first_index(run: "Run", kind: str) -> int:
    first = run.values["subscribers"] + run.values["shm_subscribers"]
    for earlier in BROKERED[:BROKERED.index(kind)]:
        if earlier in run.values["publish"]:
            first += run.values[earlier]["subscribers"]
    return first


def _broker_command(run: "Run", kind: str, out: Path, mode: str, depth: bool = False) -> list[str]:
    """A subscriber of the broker's BBO topic, or (depth) of the gateway's depth topic: TOPIC/depth (MQTT),
    TOPIC-depth (Kafka), whose messages are the depth log's level change records."""
    port = run.extras["brokers"][kind]["port"]
    levels = ["--levels", str(run.values["levels"])] if depth else []
    if kind == "mqtt":
        m = run.values["mqtt"]
        return [str(paths.tool("bbo-mqtt-subscriber")), "--port", str(port),
                "--topic", m["topic"] + ("/depth" if depth else ""), "--qos", str(m["qos"]), "--out", str(out),
                "--mode", mode, *levels]
    return [str(paths.tool("bbo-kafka-subscriber")), "--brokers", f"127.0.0.1:{port}",
            "--topic", run.values["kafka"]["topic"] + ("-depth" if depth else ""), "--out", str(out), "--mode", mode,
            *levels]


def start_brokered(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]], kind: str) -> None:
    """The scenario's subscribers of one broker (mqtt, kafka), numbered after the TCP and shared-memory ones and
    the brokers before it, and with depth (levels = N) one more on the depth topic; back once each has subscribed
    (the broker acknowledged it, or its partition is there)."""
    first = _first_index(run, kind)
    started = []
    modes = run.values[kind]["subscriber_modes"]
    for k in range(run.values[kind]["subscribers"]):
        out = run.dir / f"subscriber-{first + k}.bbo"
        mode = modes[k] if k < len(modes) else "fast"
        err = open(out.with_suffix(".stderr"), "wb")  # the client library's own complaints (a broker restarting)
        group.on_close(err.close)
        proc = group.start(f"subscriber-{first + k}",
                           wrap(off_the_gateway_cpu(run, _broker_command(run, kind, out, mode))), stderr=err)
        run.brokered_procs.append((proc, out, mode, kind))
        started.append((proc, out.with_suffix(".json")))
    if run.values["levels"] and run.values[kind]["subscribers"]:  # and one of the depth topic, fast
        out = run.dir / f"depth-subscriber-{kind}.dep"
        err = open(out.with_suffix(".stderr"), "wb")
        group.on_close(err.close)
        proc = group.start(f"depth-subscriber-{kind}",
                           wrap(off_the_gateway_cpu(run, _broker_command(run, kind, out, "fast", depth=True))),
                           stderr=err)
        run.depth_procs.append((proc, out, "fast", kind))
        started.append((proc, out.with_suffix(".json")))
    deadline = time.monotonic() + BROKER_SUBSCRIBE_TIMEOUT_S
    for proc, info in started:
        while not (info.exists() and rundir.read_json(info).get("subscribed")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RunError("setup", f"{kind} subscriber {info.stem} did not subscribe "
                                        f"({describe_exit(proc.poll()) if proc.poll() is not None else 'in time'})")
            time.sleep(0.02)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def finish(run: "Run", group: "ProcessGroup") -> None:
    """After the gateway has ended: each subscriber's end (a fast one has SUBSCRIBER_DRAIN_S to see the close; one
    of a broker that died, DEAD_BROKER_DRAIN_S to read what reached it before)."""
    results = []
    dead_brokers = record_deaths(run)
    first_shm = run.values["subscribers"]
    ours = [(proc, out, mode, "") for proc, out, mode in run.subscriber_procs]
    everyone = ours + run.brokered_procs + run.depth_procs
    # Those that end by themselves with the stream: fast ones, and any of the ring's or a broker's but a stuck one;
    # the pool of TCP ones when it holds a fast one (it ends when every reader has). Each process is waited for
    # once, before any is stopped: a pool is stopped only when its readers are done.
    ends_by_itself = {id(proc) for i, (proc, _, mode, _) in enumerate(everyone)
                      if mode == "fast" or (i >= first_shm and mode != "stuck")}
    timed_out_procs = set()
    drain_s = {id(p): DEAD_BROKER_DRAIN_S if kind in dead_brokers else SUBSCRIBER_DRAIN_S
               for p, _, _, kind in everyone}
    for proc in {id(p): p for p, _, _, _ in everyone}.values():
        if id(proc) in ends_by_itself:
            try:
                proc.wait(drain_s[id(proc)])
            except subprocess.TimeoutExpired:
                timed_out_procs.add(id(proc))
    depth_from = len(everyone) - len(run.depth_procs)
    for i, (proc, out, mode, kind) in enumerate(everyone):
        timed_out = id(proc) in timed_out_procs and mode != "stuck"
        group.stop(proc)
        info_path = out.with_suffix(".json")
        info = rundir.read_json(info_path) if info_path.exists() else {}
        entry = {"index": i, "file": out.name, "mode": mode, "bytes": out.stat().st_size if out.exists() else 0,
                 "exit": proc.returncode, "timed_out": timed_out, "local_ports": info.get("local_ports", [])}
        if i >= depth_from:  # a subscriber of the gateway's depth stream (levels = N)
            entry["depth"] = run.values["levels"]
        transport = kind or ("shm" if i >= first_shm else "")  # "": the scenario's own TCP ones
        if transport == "tcp":
            entry.update({"kind": transport, "ended": info.get("ended", "")})
        elif transport == "shm":
            entry.update({"kind": "shm", "slot": info.get("slot"), "read": info.get("read", 0),
                          "overruns": info.get("overruns", 0), "ended": info.get("ended", "")})
        elif kind:
            entry.update({"kind": kind, "read": info.get("received", 0), "announced": info.get("announced", 0),
                          "bad_size": info.get("bad_size", 0), "ended": info.get("ended", "")})
            entry["settings"] = ((f"QoS {run.values['mqtt']['qos']}" if kind == "mqtt"
                                  else f"acks {run.values['kafka']['acks']}") + ("" if mode == "fast" else f", {mode}"))
        results.append(entry)
    run.extras["subscribers"] = results
    pool = run.dir / "tcp-subscribers.json"
    if pool.is_file():  # what the pooled TCP subscribers cost the harness (bbo-tcp-subscribers' own rusage)
        run.extras["subscriber_pool"] = rundir.read_json(pool)
