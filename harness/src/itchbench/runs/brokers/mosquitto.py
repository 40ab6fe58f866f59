"""Eclipse Mosquitto (Debian's `mosquitto`), one per run, on 127.0.0.1
(inside the run's namespace for the udp transport): no persistence,
anonymous clients, no limit to the messages it holds for a subscriber,
its log in the run directory (mosquitto.log)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..failure import RunError, tail

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

READY_TIMEOUT_S = 10.0


def version() -> str:
    proc = subprocess.run(["mosquitto", "-h"], capture_output=True, text=True)
    first = (proc.stdout or proc.stderr).splitlines()
    return first[0].strip() if first else "?"


def start(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]], port: int) -> dict[str, object]:
    """The broker, ready: a message published to it came back to a subscriber. RunError('setup') with its log's
    last lines when it does not start."""
    conf, log = run.dir / "mosquitto.conf", run.dir / "mosquitto.log"
    # No limit to what it holds for a subscriber that falls behind: its default keeps 1,000 QoS 1 messages a client
    # and drops the rest without a word, and a run would judge an output its own broker had lost.
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\n"
                    f"max_queued_bytes 0\nlog_dest file {log}\nlog_type error\nlog_type warning\nlog_type notice\n")
    log.touch()
    _launch(run, group, wrap, port)
    return {"kind": "mqtt", "broker": "mosquitto", "version": version(), "port": port,
            "config": conf.name, "log": log.name}


def restart(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]]) -> None:
    """Stop the run's broker (SIGTERM) and start it again on the same port: a fault (docs/distribution.md)."""
    group.stop(run.broker_procs["mqtt"])
    _launch(run, group, wrap, int(run.extras["brokers"]["mqtt"]["port"]))


def _launch(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]], port: int) -> None:
    conf, log = run.dir / "mosquitto.conf", run.dir / "mosquitto.log"
    proc = group.start("mosquitto", wrap(["mosquitto", "-c", str(conf)]), stdout=subprocess.DEVNULL,
                       stderr=subprocess.STDOUT)
    run.broker_procs["mqtt"] = proc
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _round_trip(wrap, port):
        if proc.poll() is not None or time.monotonic() > deadline:
            what = "exited" if proc.poll() is not None else f"did not answer within {READY_TIMEOUT_S:g} s"
            raise RunError("setup", f"the MQTT broker (mosquitto) {what}; its log ends: "
                                    f"{tail(_text(log), 6, 600) or '(empty)'}")
        time.sleep(0.05)


def _round_trip(wrap: Callable[[list[str]], list[str]], port: int) -> bool:
    sub = subprocess.Popen(wrap(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "itchbench/ready",
                                 "-C", "1", "-W", "2"]), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.1)
    subprocess.run(wrap(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-t", "itchbench/ready", "-m", "ok"]),
                   capture_output=True)
    try:
        out, _ = sub.communicate(timeout=3)
    except subprocess.TimeoutExpired:
        sub.kill()
        sub.wait()
        return False
    return sub.returncode == 0 and out.strip() == "ok"


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
