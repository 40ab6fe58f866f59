"""The transports: how a capture reaches the gateway (docs/transports.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from . import serial, sim, udp

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

TRANSPORTS: dict[str, Callable[["Run", "ProcessGroup"], None]] = {
    "sim": sim.run_sim, "udp": udp.run_udp, "serial": serial.run_serial,
}
