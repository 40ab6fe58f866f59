"""The af_xdp source: the feed taken at the XDP hook by our own program
(gateway/source/xdp/feed_redirect.bpf.c), everything else left to the
kernel. Its BBO stream equals the fixture's golden digest (recorded in
fixtures/manifest.json, not computed here); ARP and other traffic pass; a
gateway without the privilege refuses by name, never falls back to UDP."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from itchbench import paths
from itchbench.captures import fixtures
from itchbench.runs import runner
from itchbench.runs.scenario import ScenarioError, load

from live_helpers import config, leftover_processes, summary_of

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="XDP and network namespaces need root")
SEED = fixtures.load_manifest()[0]


@pytest.mark.parametrize("sender", ["udp-replay", "tcpreplay"])
def test_af_xdp_run_gives_the_golden_bbo_stream(tmp_path, sender):
    values = config(SEED.path, "udp", replay={"sender": sender, "rate": "pps", "pps": 20000},
                    gateway={"source": "af_xdp"})
    run = runner.execute(values, "af_xdp", root=tmp_path, echo=False)
    s = summary_of(run)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    assert s["bbo"]["digest"] == SEED.golden["bbo_digest"] and s["bbo"]["events"] == SEED.golden["bbo_events"]
    hop = s["reconciliation"]["udp"]
    assert hop["source"] == "af_xdp" and hop["hook_feed_frames"] == hop["sender_sent"] == 7001
    xdp = s["gateway"]["af_xdp"]
    # Loopback has no native XDP and no zero-copy: the automatic choice falls back, and says so.
    assert (xdp["attach_mode"], xdp["bind_mode"]) == ("skb", "copy")
    assert xdp["hook_stamps"] == xdp["datagrams"] == 7001  # every frame stamped at the hook: the kernel stamp
    # Nothing of the feed reached the kernel's UDP stack.
    assert s["transport_details"]["kernel"]["UdpInDatagrams"] == 0
    assert leftover_processes() == []


def _netns() -> subprocess.Popen:
    return subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"])


def _in(ns: subprocess.Popen, *cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["nsenter", f"--net=/proc/{ns.pid}/ns/net", "--", *cmd], check=True, capture_output=True,
                          text=True, **kw)


# Sent from the other end: a datagram to another port, then five heartbeats and the end of session to the feed's.
SEND = """
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"not the feed", ("10.77.0.2", 9999))       # needs ARP first: B's MAC
for i in range(5):
    s.sendto(b"SESSION001" + struct.pack(">QH", 1, 0), ("10.77.0.2", 26477))
s.sendto(b"SESSION001" + struct.pack(">QH", 1, 0xFFFF), ("10.77.0.2", 26477))
"""

RECEIVE = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.77.0.2", 9999))
s.settimeout(10)
print(s.recv(100).decode(), flush=True)
"""


def test_on_a_veth_pair_arp_and_other_ports_still_reach_the_kernel(tmp_path):
    a, b = _netns(), _netns()
    try:
        time.sleep(0.2)
        _in(a, "ip", "link", "add", "xa", "type", "veth", "peer", "name", "xb", "netns", f"/proc/{b.pid}/ns/net")
        _in(a, "ip", "addr", "add", "10.77.0.1/24", "dev", "xa")
        _in(b, "ip", "addr", "add", "10.77.0.2/24", "dev", "xb")
        for ns, dev in ((a, "xa"), (b, "xb")):
            _in(ns, "ip", "link", "set", dev, "up")
            _in(ns, "ip", "link", "set", "lo", "up")
        out = tmp_path / "gw"
        out.mkdir()
        nsb = ["nsenter", f"--net=/proc/{b.pid}/ns/net", "--"]
        gw = subprocess.Popen([*nsb, str(paths.tool("itch-gateway")), "--source", "af_xdp", "--interface", "xb",
                               "--port", "26477", "--out", str(out), "--idle-exit-ms", "3000"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert gw.stdout is not None and "LISTENING" in gw.stdout.readline()
        assert "READY" in gw.stdout.readline()
        listener = subprocess.Popen([*nsb, "python3", "-c", RECEIVE], stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        _in(a, "python3", "-c", SEND)
        assert listener.communicate(timeout=15)[0].strip() == "not the feed"  # ARP answered, other port passed
        assert gw.wait(15) == 0, gw.stderr.read() if gw.stderr else ""
    finally:
        for ns in (a, b):
            ns.kill()
            ns.wait()
    g = json.loads((out / "gateway.json").read_text())
    x = g["af_xdp"]
    assert g["stop_reason"] == "end of session" and x["attach_mode"] in ("drv", "skb") and x["bind_mode"] == "copy"
    assert x["datagrams"] == x["hook_feed_frames"] == 6 and g["mold"]["heartbeats"] == 5
    assert x["hook_other_frames"] >= 2  # at least the ARP request and the datagram to port 9999


def test_without_the_privilege_the_gateway_refuses_and_names_it(tmp_path):
    # Root without CAP_NET_ADMIN, CAP_BPF, CAP_SYS_ADMIN, CAP_NET_RAW and CAP_PERFMON: what an unprivileged user has.
    proc = subprocess.run(["unshare", "--net", "--", "setpriv", "--bounding-set",
                           "-net_admin,-bpf,-sys_admin,-net_raw,-perfmon", "--inh-caps", "-all",
                           str(paths.tool("itch-gateway")), "--source", "af_xdp", "--port", "26477",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "LISTENING" not in proc.stdout
    assert "af_xdp:" in proc.stderr and "needs root, or CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW" in proc.stderr


def test_af_xdp_needs_the_udp_transport(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text(f'name = "s"\ntransport = "serial"\ncapture = "{SEED.path}"\n[gateway]\nsource = "af_xdp"\n')
    with pytest.raises(ScenarioError, match=r'gateway.source = "af_xdp" receives the udp transport'):
        load(scen)
