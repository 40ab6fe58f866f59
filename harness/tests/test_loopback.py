"""A capture rewritten for tcpreplay (captures/loopback.py), read back by tshark, another program: every datagram of
the feed to 127.0.0.1 on the gateway's port, from 127.0.0.2, its UDP checksum right — the port given here is not the
capture's own (26477), so the feed's port must have been mapped."""

from __future__ import annotations

import subprocess

from itchbench import paths
from itchbench.captures import loopback

SEED = paths.repo_root() / "fixtures" / "seed-workload.pcap"


def test_the_feeds_port_is_mapped_to_the_gateways_and_checksums_are_fixed(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path)
    out = loopback.loopback_capture(SEED, 30011)
    fields = subprocess.run(["tshark", "-r", str(out), "-o", "udp.check_checksum:TRUE", "-T", "fields",
                             "-e", "ip.src", "-e", "ip.dst", "-e", "udp.dstport", "-e", "udp.checksum.status"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(fields) == 7001  # every datagram of the capture's feed (itch-inspect: 7,001)
    assert set(fields) == {"127.0.0.2\t127.0.0.1\t30011\t1"}  # 1: tshark found the checksum good
