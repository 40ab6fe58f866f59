"""A gateway brought through its contract file (docs/gateway-contract.md),
over the same transports as the built-in one:

    udp     the scenario's sender -> the run's private namespace -> {feed_addr}:{feed_port}
    serial  serial-replay -> socat pty pair -> {serial} at {baud}
    sim     the gateway's file mode: {capture}

Its BBO output goes to a collector (TCP or UDP, inside the namespace) or to
a file in {out}; the run's summary checks it black box (gateways/blackbox).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ...gateways import adapter, contract
from ..failure import RunError
from .serial import pty_pair, replay_serial
from .udp import UDP_PORT, private_netns, replay_udp

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

INPUT_OF = {"udp": "udp", "serial": "serial", "sim": "file"}


def load_contract(run: "Run") -> contract.Contract:
    """The scenario's contract, or the revision's own copy of it (compare, bisect: run.under_test)."""
    try:
        return contract.load(run.under_test.get("contract") or run.values["gateway_file"])
    except contract.ContractError as e:
        raise RunError("setup", str(e)) from e


def run_contract(run: "Run", group: "ProcessGroup") -> None:
    c = load_contract(run)
    transport = run.values["transport"]
    under = run.under_test
    worktree = Path(under.get("worktree") or c.root)
    run.extras["gateway_contract"] = c.describe()
    if not under.get("prebuilt") and c.build:
        run.say(f"  building {c.name} in {worktree}")
        adapter.build(c, worktree, commit=str(under.get("commit", "WORKTREE")),
                      build_dir=run.dir / "gateway-build", log=run.dir / "build.log")
    if transport == "udp":
        ns = private_netns(run, group)
        driver = adapter.ContractGateway(c, run.dir, group, ns.wrap, worktree=worktree)
        started = driver.start("udp", feed_addr="127.0.0.1", feed_port=UDP_PORT)
        gw_ok = lambda: started.gateway.returncode == 0  # noqa: E731 - its own exit at the end of session
        replay_udp(run, group, ns, started.gateway, gw_ok)
        driver.stop()
        run.extras["kernel"] = ns.udp_counters()
    elif transport == "serial":
        gw_end, replay_end, socat = pty_pair(run, group)
        driver = adapter.ContractGateway(c, run.dir, group, lambda cmd: cmd, worktree=worktree)
        started = driver.start("serial", serial=gw_end, baud=run.values["serial"]["baud"])
        gw_ok = lambda: started.gateway.returncode == 0  # noqa: E731
        replay_serial(run, group, replay_end, started.gateway, gw_ok)
        driver.stop()
        group.stop(socat)
    else:
        driver = adapter.ContractGateway(c, run.dir, group, lambda cmd: cmd, worktree=worktree)
        t0 = time.monotonic()
        started = driver.start("file", capture=run.values["capture"])
        driver.stop()
        run.extras["elapsed_s"] = time.monotonic() - t0
    run.extras["gateway_stop"] = driver.how_it_ended
    output = driver.bbo_file()
    run.extras["bbo_output"] = str(output.relative_to(run.dir) if output.is_relative_to(run.dir) else output)
