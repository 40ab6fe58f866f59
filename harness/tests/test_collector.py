"""The BBO collector: told to stop while datagrams wait for it, it takes what the kernel holds and counts what its
socket dropped; its stamps are the kernel's arrival times, whenever it read (over TCP, lines read with later bytes
counted and bounded). What waits is made by this test on loopback while the collector is stopped (SIGSTOP), or
avoided by sending only once the kernel shows the collector has read what came before and sleeps (/proc), so it is
known without any timing."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest



_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_collector_left():
    """A test that fails leaves no collector of its running (perhaps stopped)."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait(10)


def _collector(out: Path, via: str = "udp") -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "itchbench.gateways.collector", "--via", via, "--format", "csv",
                             "--out", str(out)], stdout=subprocess.PIPE, text=True)
    _STARTED.append(proc)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline().split()[1])  # LISTENING <port>


def _queued_bytes(port: int, table: str = "udp") -> int:
    """What the kernel holds unread for the socket bound to port (rx_queue of /proc/net/udp, or of /proc/net/tcp:
    the collector's connection, not its listening socket)."""
    for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and (table == "udp" or fields[3] == "01"):  # 01: established
            return int(fields[4].split(":")[1], 16)
    return 0


def _until(condition, proc: subprocess.Popen) -> None:
    """Waits until condition() holds (the collector still running); fails after 30 s."""
    deadline = time.monotonic() + 30
    while not condition():
        assert proc.poll() is None and time.monotonic() < deadline, "the collector ended, or never got there"
        time.sleep(0.005)


def _ended(proc: subprocess.Popen) -> dict:
    assert proc.wait(30) == 0
    return json.loads(Path(proc.args[-1] + ".json").read_text())


def _send_while_stopped(proc: subprocess.Popen, port: int, datagrams: list[bytes]) -> tuple[dict, int]:
    """The datagrams sent to the stopped collector, then SIGTERM and SIGCONT: how it says it ended, and when
    (CLOCK_MONOTONIC) it was continued."""
    proc.send_signal(signal.SIGSTOP)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for data in datagrams:
            sock.sendto(data, ("127.0.0.1", port))
    proc.send_signal(signal.SIGTERM)
    continued = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    proc.send_signal(signal.SIGCONT)
    return _ended(proc), continued


def _waiting_for_data(proc: subprocess.Popen, port: int) -> bool:
    """The collector has read all the kernel held for its connection and sleeps (in its read's poll)."""
    return _queued_bytes(port, "tcp") == 0 and Path(f"/proc/{proc.pid}/stat").read_text().split()[2] == "S"


def _stamps(out: Path) -> list[int]:
    return [int(row.split(" ", 1)[0]) for row in out.read_text().splitlines()]


def _given(stamps: list[int], ended: dict) -> list[int]:
    """The stamps given, once those left out (negative, minus when read: a set of CLOCK_REALTIME may have moved
    them, collector.Arrivals) are seen to be exactly those its figures count."""
    assert sum(t < 0 for t in stamps) == ended["events_across_clock_set"]
    return [t for t in stamps if t > 0]


def test_what_waits_for_the_collector_when_it_is_told_to_stop_is_taken(tmp_path):
    out = tmp_path / "bbo.received"
    proc, port = _collector(out)
    lines = [f"{seq},1,100,{seq},101,1\n".encode() for seq in range(1, 501)]
    ended, continued = _send_while_stopped(proc, port, lines)
    assert ended["ended"] == "sigterm" and ended["reads"] == 500 and ended["socket_drops"] == 0
    received = [line.split(" ", 1)[1] + "\n" for line in out.read_text().splitlines()]
    assert received == [line.decode() for line in lines]
    # Stamped with each datagram's arrival, all before the collector was continued and read them: never late.
    stamps = _given(_stamps(out), ended)
    assert stamps == sorted(stamps) and all(t < continued for t in stamps)
    assert ended["events_earlier_than_stamp"] == ended["events_stamp_unknown"] == 0


def test_a_stream_is_stamped_with_its_arrival_and_lines_read_together_are_bounded(tmp_path):
    # TCP: 200 lines, each sent once the collector has read the one before and sleeps waiting: each its own read,
    # at its own arrival. Then 4,000 more (141 KiB) sent while it is stopped: stamped with their arrival, before
    # it was continued, and those read with later bytes counted, with a bound.
    out = tmp_path / "bbo.received"
    proc, port = _collector(out, "tcp")
    line = lambda seq: f"{seq:08},1,1000000,100,1000100,2000\n".encode()  # noqa: E731 - 36 bytes
    sent = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert proc.stdout is not None and proc.stdout.readline() == "CONNECTED\n"
        for seq in range(1, 201):
            _until(lambda: _waiting_for_data(proc, port), proc)
            sent.append(time.clock_gettime_ns(time.CLOCK_MONOTONIC))
            sock.sendall(line(seq))
        _until(lambda: _waiting_for_data(proc, port), proc)
        proc.send_signal(signal.SIGSTOP)
        sender = threading.Thread(target=sock.sendall, args=(b"".join(line(seq) for seq in range(201, 4201)),))
        sender.start()
        _until(lambda: _queued_bytes(port, "tcp") > 1 << 16, proc)
        continued = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        proc.send_signal(signal.SIGCONT)
        sender.join(30)
    ended = _ended(proc)
    assert ended["ended"] == "eof" and ended["bytes"] == 4200 * 36 and ended["events_stamp_unknown"] == 0
    assert [row.split(" ", 1)[1] for row in out.read_text().splitlines()] == \
        [line(seq).decode().rstrip("\n") for seq in range(1, 4201)]
    stamps = _stamps(out)
    _given(stamps, ended)
    # Each paced line after its send and before the next; the burst's first read, of bytes queued while the
    # collector was stopped, at their arrival: before it was continued (a stamp left out is minus when read).
    assert all(stamps[i] < 0 or sent[i] < stamps[i] < sent[i + 1] for i in range(199)) and stamps[200] < continued
    # Of the burst only (each paced line its own read), all of it when every read of it ends inside a line; some,
    # unless a read of it had its stamp left out.
    earlier = ended["events_earlier_than_stamp"]
    assert earlier <= 4000 and (earlier > 0 or any(t < 0 for t in stamps[200:]))
    assert (ended["max_earlier_ns"] > 0) == (earlier > 0)


def test_what_a_gateway_sent_before_the_collector_took_its_connection_is_stamped_on_arrival(tmp_path):
    # The gateway connects and writes while the collector is stopped before it has taken the connection: the
    # lines are stamped when they came, bounded by the collector's start.
    out = tmp_path / "bbo.received"
    proc, port = _collector(out, "tcp")
    proc.send_signal(signal.SIGSTOP)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"1,1,100,1,101,1\n2,1,100,2,101,1\n")
        _until(lambda: _queued_bytes(port, "tcp") > 0, proc)
        continued = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        proc.send_signal(signal.SIGCONT)
        _until(lambda: _waiting_for_data(proc, port), proc)  # read before the end comes (its FIN has a stamp too)
    ended = _ended(proc)
    stamps = _stamps(out)
    _given(stamps, ended)
    assert stamps[0] == stamps[1] < continued
    # Both may have come earlier than their stamp: the first, read with the second; the second, read last (unless
    # their read's stamp was left out).
    assert ended["events_stamp_unknown"] == 0 and ended["events_earlier_than_stamp"] == (2 if stamps[0] > 0 else 0)


def test_datagrams_its_full_socket_dropped_are_counted(tmp_path):
    # 20,000 datagrams of 1 KiB, far beyond the 8 MiB its socket may hold: those the kernel kept are read, the rest
    # counted as the socket's drops, and the two add up to what was sent.
    out = tmp_path / "bbo.received"
    proc, port = _collector(out)
    ended, _ = _send_while_stopped(proc, port, [b"x" * 1023 + b"\n"] * 20_000)
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


def test_a_line_longer_than_any_event_is_kept_cut_and_the_lines_after_it_whole(tmp_path):
    """A gateway writing with no line end had the collector hold the line whole as it came, copying it at every
    read: 400 MB took it to 1.2 GB and 45 s. Kept: its first LONGEST_LINE bytes, marked; the rest counted."""
    from itchbench.gateways import collector
    out = tmp_path / "bbo.received"
    proc, port = _collector(out, "tcp")
    long_a, long_b = b"A" * (10 << 20), b"B" * (3 << 20)
    chunks = [b"1,1,100,1,101,1\n", *(long_a[i:i + (1 << 20)] for i in range(0, len(long_a), 1 << 20)),
              b"\n2,1,100,2,101,1\n", long_b]  # the last line never ended: the stream closes inside it
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert proc.stdout is not None and proc.stdout.readline() == "CONNECTED\n"
        for chunk in chunks:
            sock.sendall(chunk)
    ended = _ended(proc)
    assert ended["bytes"] == sum(map(len, chunks)) and ended["long_lines_cut"] == 2
    assert ended["long_line_bytes_dropped"] == len(long_a) + len(long_b) - 2 * collector.LONGEST_LINE
    mark = collector.CUT_MARK.decode()
    assert [row.split(" ", 1)[1] for row in out.read_text().splitlines()] == \
        ["1,1,100,1,101,1", "A" * collector.LONGEST_LINE + mark, "2,1,100,2,101,1", "B" * collector.LONGEST_LINE + mark]
