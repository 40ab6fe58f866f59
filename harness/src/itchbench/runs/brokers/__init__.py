"""Real message brokers a run starts for itself (docs/distribution.md):
started beside the gateway, waited for until a client round trip works,
stopped with the run; version, configuration and log kept in the run
directory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..failure import describe_exit

if TYPE_CHECKING:
    from ..run import Run


def record_deaths(run: "Run") -> set[str]:
    """The brokers (mqtt, kafka) that ended before the run stopped them, each one's end said in its
    transport_details entry ("died": "killed by SIGKILL"): nothing reaches their subscribers after that. Called
    once the gateway has ended, before the subscribers are drained; a restart (restarts.py) has by then replaced
    the broker it stopped."""
    dead = set()
    for kind, proc in run.broker_procs.items():
        rc = proc.poll()
        if rc is not None:
            run.extras["brokers"][kind]["died"] = describe_exit(rc)
            dead.add(kind)
    return dead
