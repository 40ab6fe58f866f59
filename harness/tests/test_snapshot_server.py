"""The snapshot server as a late joiner meets it: a real TCP connection on loopback, a SoupBinTCP client and an
order book written here in Python from the protocol's layout and docs/book-and-bbo.md (independent_bbo.Book),
sharing no code with the server. The snapshot of a seeded session after message N, then the session's messages
from the number its End of Snapshot carries, must leave the same orders as the whole session applied from its
start; bad logins and garbage get SoupBinTCP's answers and are counted, and the server lives on."""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
from pathlib import Path

import pytest

from itchbench import paths

from independent_bbo import Book, mold_messages
from live_helpers import make_capture


@pytest.fixture(scope="session")
def session(tmp_path_factory) -> Path:
    """A deep book: thousands of live orders at any point."""
    return make_capture(tmp_path_factory.mktemp("snap"), "deep.pcap", "--profile", "deep-book", "--seed", "3",
                        "--messages", "30000")


class Server:
    def __init__(self, capture: Path, *args: str) -> None:
        self.proc = subprocess.Popen([str(paths.tool("snapshot-server")), str(capture), "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("LISTENING"), line + self.proc.stderr.read()
        self.port = int(line.split("tcp=")[1].split()[0])

    def report(self) -> dict:
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=10)
        assert self.proc.returncode == 0, err
        return json.loads(out)


def packet(kind: bytes, payload: bytes = b"") -> bytes:
    return struct.pack(">H", len(payload) + 1) + kind + payload


def login(user: str = "itch", password: str = "bench", session: str = "", seq: int = 1) -> bytes:
    return packet(b"L", user.ljust(6).encode() + password.ljust(10).encode() + session.ljust(10).encode()
                  + str(seq).rjust(20).encode())


def read_packets(sock: socket.socket, *, stop_after: int | None = None) -> list[tuple[str, bytes]]:
    """Every packet until the server closes (or stop_after sequenced messages)."""
    buf, got, sequenced = b"", [], 0
    while True:
        while len(buf) >= 2 and len(buf) >= 2 + struct.unpack_from(">H", buf)[0]:
            n = struct.unpack_from(">H", buf)[0]
            got.append((chr(buf[2]), buf[3:2 + n]))
            buf = buf[2 + n:]
            sequenced += got[-1][0] == "S"
            if stop_after is not None and sequenced == stop_after:
                return got
        data = sock.recv(65536)
        if not data:
            return got
        buf += data


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def whole_session_orders(capture: Path, through: int) -> tuple[dict, dict]:
    """The independent book after message `through`, and after the whole session."""
    book, at = Book(), None
    for seq, m in mold_messages(capture):
        if seq == through + 1:
            at = {k: list(v) for k, v in book.orders.items()}
        book.apply(m)
    return (at if at is not None else book.orders), book.orders


@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_the_snapshot_then_the_feed_from_its_number_is_the_whole_session(session, share):
    messages = sum(1 for _ in mold_messages(session))
    through = int(messages * share)
    server = Server(session, "--through", str(through))
    with connect(server.port) as s:
        s.sendall(login())
        got = read_packets(s)
    kinds = [k for k, _ in got]
    assert kinds[0] == "A" and kinds[-1] == "Z" and set(kinds[1:-1]) == {"S"}, kinds[:3]
    assert got[0][1][:10] == b"GLIMPSE   " and int(got[0][1][10:]) == 1
    snapshot = [p for k, p in got if k == "S"]
    end = snapshot[-1]
    assert end[:1] == b"G" and int(end[1:]) == through + 1  # the next message to apply, by the docs
    book = Book()
    for m in snapshot[:-1]:
        book.apply(m)
    at_join, at_end = whole_session_orders(session, through)
    assert book.orders == at_join and len(at_join) > 100
    for seq, m in mold_messages(session):
        if seq >= int(end[1:]):
            book.apply(m)
    assert book.orders == at_end
    report = server.report()
    assert report["completed"] == 1 and report["snapshot"]["orders"] == len(at_join)
    assert report["clients"][0]["messages_sent"] == len(snapshot)


def test_a_connection_cut_midway_is_resumed_at_the_next_sequence(session):
    server = Server(session, "--through", "15000", "--cut-after", "500")
    with connect(server.port) as s:
        s.sendall(login())
        first = [p for k, p in read_packets(s) if k == "S"]
    assert len(first) == 500  # the fault: the server cut it there, with no end of session
    with connect(server.port) as s:
        s.sendall(login(seq=len(first) + 1))
        second = read_packets(s)
    assert second[0] == ("A", b"GLIMPSE   " + str(len(first) + 1).rjust(20).encode())
    rest = [p for k, p in second if k == "S"]
    whole = first + rest
    assert whole[-1][:1] == b"G" and second[-1][0] == "Z"
    book = Book()
    for m in whole[:-1]:
        book.apply(m)
    assert book.orders == whole_session_orders(session, 15000)[0]
    report = server.report()
    assert report["cut"] == 1 and report["ends"]["cut"] == 1 and report["ends"]["completed"] == 1


def test_bad_logins_and_garbage_are_answered_counted_and_survived(session):
    server = Server(session, "--through", "100")
    answers = {}
    for name, request in [("password", login(password="nope")), ("session", login(session="OTHER")),
                          ("past the end", login(seq=10**9))]:
        with connect(server.port) as s:
            s.sendall(request)
            answers[name] = read_packets(s)
    assert answers == {"password": [("J", b"A")], "session": [("J", b"S")], "past the end": [("J", b"S")]}
    for garbage in [b"\x00\x00", b"\xff\xffxxxx", packet(b"x"), packet(b"L", b"short")]:
        with connect(server.port) as s:
            s.sendall(garbage)
            assert read_packets(s) == []  # ended, nothing said
    with connect(server.port) as s:  # and it still serves
        s.sendall(login())
        assert read_packets(s)[-1][0] == "Z"
    report = server.report()
    assert report["rejected"] == {"not_authorized": 1, "session_not_available": 2}
    assert {k: v for k, v in report["malformed"].items() if v} == \
        {"empty_packet": 1, "oversize": 1, "unknown_type": 1, "login_length": 1}
    assert report["completed"] == 1 and report["connections"] == 8
