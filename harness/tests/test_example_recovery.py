"""The Python example's re-request policy (examples/py-gateway, Recovery), driven tick by tick with a fake clock
and a server that answers two messages a request: a long gap is asked for until it is whole while answers bring
some of it, and given up after TRIES requests in a row that brought nothing (docs/recovery.md, `capped`)."""

from __future__ import annotations

import importlib.util

from itchbench import paths

_EXAMPLE = paths.repo_root() / "examples" / "py-gateway" / "gateway.py"
_SPEC = importlib.util.spec_from_file_location("py_gateway", _EXAMPLE)
gateway = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gateway)


class _Feed:
    """A gap [first, first + count) that holds everything back; `have` is how much of it has come."""

    def __init__(self, first: int, count: int) -> None:
        self.gaps, self.next_seq, self.have, self.given_up = {first: count}, first, 0, False

    def first_missing(self, first: int, count: int) -> int | None:
        return first + self.have if self.have < count else None

    def give_up(self) -> None:
        self.given_up = True


class _Socket:
    def __init__(self) -> None:
        self.requests: list[bytes] = []

    def sendto(self, data: bytes, addr: object) -> None:
        self.requests.append(data)


def _recover(monkeypatch, answer: int, ticks: int = 100) -> tuple[_Feed, _Socket]:
    """Ticks 0.3 s apart (past every timeout); each request is answered with `answer` messages before the next."""
    now = [0.0]
    monkeypatch.setattr(gateway.time, "monotonic", lambda: now[0])
    sock, feed = _Socket(), _Feed(100, 40)
    recovery = gateway.Recovery(sock, ("127.0.0.1", 1))
    recovery.session = b"S" * 10
    for _ in range(ticks):
        asked = len(sock.requests)
        recovery.tick(feed)
        feed.have = min(40, feed.have + answer * (len(sock.requests) - asked))
        if not feed.gaps or feed.given_up:
            break
        now[0] += 0.3
    return feed, sock


def test_a_gap_answered_two_messages_at_a_time_is_asked_for_until_whole(monkeypatch):
    feed, sock = _recover(monkeypatch, answer=2)
    assert not feed.given_up and not feed.gaps  # 40 messages: 20 answers, more than TRIES requests
    assert len(sock.requests) == 20 > gateway.Recovery.TRIES


def test_a_gap_whose_requests_bring_nothing_is_given_up_after_tries(monkeypatch):
    feed, sock = _recover(monkeypatch, answer=0)
    assert feed.given_up and len(sock.requests) == gateway.Recovery.TRIES
