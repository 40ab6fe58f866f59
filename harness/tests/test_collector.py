"""The BBO collector over UDP, told to stop while datagrams wait for it: it takes what the kernel holds, and counts
what its socket dropped. Each datagram is sent by this test on loopback while the collector is stopped (SIGSTOP), so
what waits is known without any timing."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def _collector(out: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "itchbench.gateways.collector", "--via", "udp", "--format", "csv",
                             "--out", str(out)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline().split()[1])  # LISTENING <port>


def _queued_bytes(port: int) -> int:
    """What the kernel holds unread for the UDP socket bound to port (rx_queue of /proc/net/udp)."""
    for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port:
            return int(fields[4].split(":")[1], 16)
    return 0


def _send_while_stopped(proc: subprocess.Popen, port: int, datagrams: list[bytes]) -> dict:
    """The datagrams sent to the stopped collector, then SIGTERM and SIGCONT: how it says it ended."""
    proc.send_signal(signal.SIGSTOP)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for data in datagrams:
            sock.sendto(data, ("127.0.0.1", port))
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGCONT)
    assert proc.wait(30) == 0
    return json.loads(Path(proc.args[-1] + ".json").read_text())


def test_what_waits_for_the_collector_when_it_is_told_to_stop_is_taken(tmp_path):
    out = tmp_path / "bbo.received"
    proc, port = _collector(out)
    lines = [f"{seq},1,100,{seq},101,1\n".encode() for seq in range(1, 501)]
    ended = _send_while_stopped(proc, port, lines)
    assert ended["ended"] == "sigterm" and ended["reads"] == 500 and ended["socket_drops"] == 0
    received = [line.split(" ", 1)[1] + "\n" for line in out.read_text().splitlines()]
    assert received == [line.decode() for line in lines]


def test_datagrams_its_full_socket_dropped_are_counted(tmp_path):
    # 20,000 datagrams of 1 KiB, far beyond the 8 MiB its socket may hold: those the kernel kept are read, the rest
    # counted as the socket's drops, and the two add up to what was sent.
    out = tmp_path / "bbo.received"
    proc, port = _collector(out)
    ended = _send_while_stopped(proc, port, [b"x" * 1023 + b"\n"] * 20_000)
    assert ended["socket_drops"] > 0 and ended["reads"] > 0
    assert ended["reads"] + ended["socket_drops"] == 20_000
    assert len(out.read_text().splitlines()) == ended["reads"]


def test_an_empty_datagram_does_not_end_the_collection(tmp_path):
    # Over UDP an empty datagram is a datagram, not the end of a stream: what comes after it is collected too
    # (the collector took it for an end, and what followed was lost).
    out = tmp_path / "bbo.received"
    proc, port = _collector(out)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for data in (b"1,1,100,1,101,1\n", b"", b"2,1,100,2,101,1\n"):
            sock.sendto(data, ("127.0.0.1", port))
    deadline = time.monotonic() + 30
    while _queued_bytes(port) and proc.poll() is None and time.monotonic() < deadline:  # until it has read them
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    ended = json.loads(Path(str(out) + ".json").read_text())
    assert ended["ended"] == "sigterm" and ended["reads"] == 3
    assert [line.split(" ", 1)[1] for line in out.read_text().splitlines()] == ["1,1,100,1,101,1", "2,1,100,2,101,1"]
