"""Feeds sent to a multicast group, as exchanges send them: inside the run's own network namespace (multicast on
its loopback, a route for 224.0.0.0/4), udp-replay sends to the group out of lo with TTL 0, and each gateway joins
the group itself. A gateway that does not join gets nothing: the packets really go to the group."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths, rundir
from itchbench.analysis import logs
from itchbench.runs import runner
from itchbench.runs.scenario import ScenarioError, defaults

from live_helpers import config, make_capture

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
GROUP = "239.1.1.7"
EXAMPLES = paths.repo_root() / "examples"


@pytest.fixture(scope="session")
def capture(tmp_path_factory) -> Path:
    return make_capture(tmp_path_factory.mktemp("multicast"), "seed.pcap", "--messages", "1500")


def _run(capture: Path, gateway: Path | None, tmp_path: Path) -> dict:
    values = {**config(capture, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000,
                                               "multicast": GROUP}), "subscribers": 0}
    if gateway is not None:
        values["gateway_file"] = str(gateway)
    run = runner.execute(values, "multicast", root=tmp_path / "runs", echo=False)
    return rundir.read_json(run / "summary.json") | {"dir": str(run)}


@needs_root
@pytest.mark.parametrize("gateway", [None, EXAMPLES / "py-gateway" / "itchbench.toml",
                                     EXAMPLES / "cpp-gateway" / "itchbench.toml"],
                         ids=["built-in", "py-gateway", "cpp-gateway"])
def test_every_gateway_joins_the_group_and_is_lossless(capture, tmp_path, gateway):
    s = _run(capture, gateway, tmp_path)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    if gateway is None:
        assert rundir.read_json(Path(s["dir"]) / "gateway.json")["udp"]["multicast_group"] == GROUP


@needs_root
def test_a_gateway_that_does_not_join_receives_nothing(capture, tmp_path):
    # The cpp example told to bind 127.0.0.1 (unicast), not the group: every BBO event is missing, and the
    # kernel delivered none of what was sent (no member of the group): LOST, each datagram up to the session's last
    # message counted as the kernel's (those after it, ends of session, may be a gateway's that ended).
    contract = tmp_path / "itchbench.toml"
    example = EXAMPLES / "cpp-gateway"
    contract.write_text((example / "itchbench.toml").read_text().replace("{worktree}", shlex.quote(str(example)))
                        .replace("--udp {feed_addr}:{feed_port}", "--udp 127.0.0.1:{feed_port}"))
    s = _run(capture, contract, tmp_path)
    check = s["reconciliation"]["bbo_check"]
    assert check["events"] == 0 and check["missing"] == check["reference_events"] > 0
    send = logs.read_log(Path(s["dir"]) / "send.log", logs.KIND_SEND).records
    up_to_last = int(np.flatnonzero(send["count"] > 0)[-1]) + 1  # the packets up to the last that carried messages
    udp = s["reconciliation"]["udp"]
    assert udp["kernel_delivered"] == 0 and udp["kernel_no_group_member"] + udp["kernel_no_port"] == len(send)
    assert udp["kernel_no_socket"] == len(send)
    assert s["verdict"]["status"] == "lost" and s["verdict"]["headline"].startswith(
        f"LOST: the kernel found no socket for at least {up_to_last:,} datagrams sent up to the session's last "
        "message"), s["verdict"]["headline"]


def test_multicast_is_refused_where_it_cannot_go():
    with pytest.raises(ScenarioError, match="must be a multicast group"):
        defaults(name="x", transport="udp", capture="c", replay={"sender": "udp-replay", "multicast": "10.0.0.1"})
    with pytest.raises(ScenarioError, match="needs replay.sender"):
        defaults(name="x", transport="udp", capture="c", replay={"multicast": GROUP})
