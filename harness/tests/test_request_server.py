"""mold-request-server, the exchange's MoldUDP64 re-request server, through real UDP sockets on loopback: what it
answers is checked against the capture's own messages, read here from the pcap's bytes (tap_captures.read_pcap),
not through itchbench's readers; bad requests are counted by reason and never stop it."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths
from itchbench.analysis import logs

from tap_captures import mold_payload, read_pcap

SEED = paths.repo_root() / "fixtures" / "seed-workload.pcap"


def capture_messages(pcap: Path) -> tuple[bytes, dict[int, bytes]]:
    """The session name and every message by sequence number, from the pcap's frames."""
    session, messages = b"", {}
    for _, frame in read_pcap(pcap):
        p = mold_payload(frame)
        session, (seq, count) = p[:10], struct.unpack_from(">QH", p, 10)
        at = 20
        for i in range(count if count != 0xFFFF else 0):
            (n,) = struct.unpack_from(">H", p, at)
            messages[seq + i] = p[at + 2:at + 2 + n]
            at += 2 + n
    return session, messages


class Server:
    def __init__(self, tmp: Path, *options: str) -> None:
        self.report, self.log = tmp / "server.json", tmp / "requests.log"
        self.proc = subprocess.Popen([str(paths.tool("mold-request-server")), str(SEED), "--port", "0",
                                      "--log", str(self.log), "--report", str(self.report), *options],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("LISTENING udp="), line
        self.port = int(line.split()[1].split("=")[1])
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.3)

    def ask(self, request: bytes) -> list[bytes]:
        """Every answer packet that arrives until the server has been quiet for 0.3 s."""
        self.sock.sendto(request, ("127.0.0.1", self.port))
        out = []
        try:
            while True:
                out.append(self.sock.recv(65536))
        except socket.timeout:
            return out

    def stop(self) -> dict:
        self.proc.terminate()
        assert self.proc.wait(10) == 0
        return json.loads(self.report.read_text())


@pytest.fixture(scope="session")
def capture() -> tuple[bytes, dict[int, bytes]]:
    return capture_messages(SEED)


@pytest.fixture
def start(tmp_path):
    """Servers started by a test, each stopped at its end whatever the test's outcome."""
    started: list[Server] = []

    def make(*options: str) -> Server:
        started.append(Server(tmp_path, *options))
        return started[-1]
    yield make
    for server in started:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def unpack(packets: list[bytes]) -> list[tuple[int, bytes]]:
    """(sequence, message) of every message in answer packets, in the order they came."""
    out = []
    for p in packets:
        seq, count = struct.unpack_from(">QH", p, 10)
        at = 20
        for i in range(count):
            (n,) = struct.unpack_from(">H", p, at)
            out.append((seq + i, p[at + 2:at + 2 + n]))
            at += 2 + n
        assert at == len(p)
    return out


def test_a_request_is_answered_with_the_captures_messages_cut_to_the_payload(capture, start):
    session, messages = capture
    server = start("--max-payload", "200")
    packets = server.ask(session + struct.pack(">QH", 100, 25))
    assert [m for m in unpack(packets)] == [(s, messages[s]) for s in range(100, 125)]
    assert all(len(p) <= 200 for p in packets) and all(p[:10] == session for p in packets)
    counts = server.stop()
    assert counts["by_outcome"]["served"] == 1 and counts["messages_answered"] == 25
    assert counts["answer_packets"] == len(packets)
    log = logs.read_log(server.log, logs.KIND_REQUEST).records
    answers = log[(log["flags"] & logs.REQUEST_ANSWER) != 0]
    assert len(log) == 1 + len(packets) and answers["count"].sum() == 25
    assert np.all(np.diff(log["t"].astype(np.int64)) >= 0)  # in the order they happened, stamped


def test_a_flood_of_malformed_requests_is_counted_by_reason_and_it_still_answers(capture, start):
    session, messages = capture
    server = start("--rate-limit", "1000")
    bad = {"wrong_length": [b"", b"x" * 19, session + struct.pack(">QH", 1, 1) + b"!"],
           "wrong_session": [b"NOTTHEONE0" + struct.pack(">QH", 1, 1)],
           "sequence_zero": [session + struct.pack(">QH", 0, 3)],
           "count_zero": [session + struct.pack(">QH", 5, 0)],
           "beyond_session": [session + struct.pack(">QH", max(messages) + 1, 1), session + struct.pack(">QH", 2**64 - 1, 9)]}
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(100):
        for requests in bad.values():
            for r in requests:
                sender.sendto(r, ("127.0.0.1", server.port))
    assert unpack(server.ask(session + struct.pack(">QH", 7000, 1))) == [(7000, messages[7000])]
    counts = server.stop()
    # Whatever the kernel could not queue is counted too: nothing is lost unsaid.
    assert counts["requests"] + counts["socket_dropped"] == 100 * 8 + 1
    if counts["socket_dropped"] == 0:
        for reason, requests in bad.items():
            assert counts["by_outcome"][reason] == 100 * len(requests), reason
    assert counts["by_outcome"]["served"] == 1


def test_a_requester_over_its_rate_is_refused(capture, start):
    session, _ = capture
    server = start("--rate-limit", "5")
    flood = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(20):  # well within one second
        flood.sendto(session + struct.pack(">QH", 1, 1), ("127.0.0.1", server.port))
    server.ask(session + struct.pack(">QH", 2, 1))  # another requester's: answered once the flood was read
    counts = server.stop()
    counts["by_outcome"]["served"] -= 1
    assert counts["by_outcome"]["served"] + counts["by_outcome"]["rate_limited"] == 20
    assert counts["by_outcome"]["served"] >= 5 and counts["by_outcome"]["rate_limited"] >= 10


def test_dropped_answers_are_not_sent_and_are_counted(capture, start):
    session, _ = capture
    server = start("--drop-answers", "1")
    assert server.ask(session + struct.pack(">QH", 1, 10)) == []
    counts = server.stop()
    assert counts["answers_dropped"] == 1 and counts["answer_packets"] == 0
    log = logs.read_log(server.log, logs.KIND_REQUEST).records
    assert (log["flags"] & logs.REQUEST_ANSWER_DROPPED).astype(bool).sum() == 1


def test_a_capture_with_a_gap_cannot_be_served(tmp_path):
    # Every third packet left out: the server must hold every message, so it refuses to start.
    frames = read_pcap(SEED)
    from tap_captures import write_pcap
    write_pcap(tmp_path / "gappy.pcap", [r for i, r in enumerate(frames) if i % 3 != 2])
    proc = subprocess.run([str(paths.tool("mold-request-server")), str(tmp_path / "gappy.pcap")], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 1 and "must hold every message" in proc.stderr
