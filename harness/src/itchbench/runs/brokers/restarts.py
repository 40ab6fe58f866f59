"""A broker restarted mid-run, as a fault the scenario asks for
([mqtt] / [kafka] restart_at_s): stopped that long after the replay began
and started again on the same port (Kafka: on its storage). When and how
long it was gone goes into the run (transport_details.brokers.KIND.restart);
what the subscribers lost, received twice or late is counted per subscriber
by the reconciliation, as for any run."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable

from ..failure import RunError
from . import kafka, mosquitto

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

RESTART = {"mqtt": mosquitto.restart, "kafka": kafka.restart}


def schedule(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]]) -> Callable[[], None]:
    """Start the asked-for restarts' clocks now (the replay's start); return what waits for them to be done."""
    cancel = threading.Event()
    threads = []
    for kind, brokers in run.extras.get("brokers", {}).items():
        at_s = float(run.values[kind].get("restart_at_s", 0))
        if at_s <= 0:
            continue

        def restart(kind: str = kind, at_s: float = at_s, info: dict = brokers) -> None:
            if cancel.wait(at_s):
                info["restart"] = {"at_s": at_s, "done": False, "why": "the replay ended first"}
                return
            t0 = time.monotonic()
            run.say(f"  fault: restarting the {kind} broker, {at_s:g} s into the replay")
            try:
                RESTART[kind](run, group, wrap)
                info["restart"] = {"at_s": at_s, "done": True, "back_after_s": round(time.monotonic() - t0, 3)}
            except RunError as e:
                info["restart"] = {"at_s": at_s, "done": False, "why": str(e)}
        t = threading.Thread(target=restart, name=f"restart-{kind}")
        t.start()
        threads.append(t)

    def done() -> None:
        cancel.set()
        for t in threads:
            t.join()
    return done
