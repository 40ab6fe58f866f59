#!/usr/bin/env python3
"""An independent example gateway, written from itchbench's gateway contract
(docs/gateway-contract.md) and its book semantics (docs/book-and-bbo.md)
alone: it shares no code with itchbench but the white-box writer that
itchbench gives gateways to copy (--latency-log, below).

It reads NASDAQ TotalView-ITCH 5.0 as MoldUDP64 over UDP, or as the serial
line format (gateway/protocol/SERIAL_LINE.md) from a tty, keeps a book per
stock, and writes each BBO change to a TCP connection (or UDP datagrams, or
messages to an MQTT or Kafka broker) as a CSV line, or a JSON line with the
same keys:

    seq,stock,bid_px,bid_qty,ask_px,ask_qty

With --levels N it publishes depth instead: after each book message that
changed any of the stock's top N price levels a side, the whole top N,
best first, empty levels 0,0:

    seq,stock,bid1_px,bid1_qty,...,bidN_px,bidN_qty,ask1_px,ask1_qty,...,askN_qty

With --levels all, a line for each price level a book message changed, its
shares after the message (0: the level is gone), a replace's old price
first (side B or S):

    seq,stock,side,price,shares

With --shards N it publishes as a gateway with a thread a shard does: each
stock's events through one of N buffers (its locate modulo N), a buffer
written whole once it holds four events, so that stocks interleave
otherwise than by seq while each stock's events keep their order (allowed:
docs/book-and-bbo.md, "Order").

Given a multicast group as the UDP address, it joins it on the loopback
interface. It stops at the feed's end of session, or on SIGTERM; either way
it then sends all it still holds (a broker client's queue), and a SIGTERM
that comes meanwhile does not cut that short.

With --latency-log PATH it is a white box (the contract's white_box = true):
it writes each message's read, decoded and book stamps in itchbench's
latency log, through gateway/log/whitebox/itchbench_stamps.py (linked
beside this file), and itchbench reports its stages.

    gateway.py --udp ADDR:PORT --bbo ADDR:PORT [--bbo-via tcp|udp|mqtt|kafka] [--bbo-topic T]
               [--bbo-format csv|jsonl] [--levels N|all] [--shards N] [--udp-b ADDR:PORT]
               [--rerequest ADDR:PORT] [--latency-log PATH]
    gateway.py --serial /dev/pts/N --bbo ADDR:PORT [--latency-log PATH]

MQTT needs paho-mqtt (Debian: python3-paho-mqtt), Kafka confluent-kafka
(python3-confluent-kafka); each message carries the lines of one packet.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import select
import signal
import socket
import struct
import sys
import time

# Type byte -> length of the message (type byte included), ITCH 5.0.
LENGTHS = {b"S": 12, b"R": 39, b"H": 25, b"Y": 20, b"L": 26, b"V": 35, b"W": 12, b"K": 28, b"J": 35, b"h": 21,
           b"A": 36, b"F": 40, b"E": 31, b"C": 36, b"X": 23, b"D": 19, b"U": 35, b"P": 44, b"Q": 40, b"B": 19,
           b"I": 50, b"N": 20, b"O": 48}
BID, ASK = 0, 1
IP_MULTICAST_ALL = 49  # <linux/in.h>; Python's socket module does not name it


class Book:
    """Orders by reference; per stock and side, shares per price; the last BBO (or depth) said per stock."""

    def __init__(self, emit, depth: int | str = 0) -> None:
        self.orders: dict[int, list[int]] = {}  # ref -> [stock, side, price, shares]
        self.levels: dict[int, tuple[dict[int, int], dict[int, int]]] = {}
        self.said: dict[int, tuple[int, ...]] = {}
        self.said_levels: dict[int, tuple[dict[int, int], dict[int, int]]] = {}  # every level: the book last said
        self.emit = emit
        self.every_level = depth == "all"
        self.depth = 0 if self.every_level else int(depth)  # 0: the BBO; N: the top N levels a side

    def _side(self, stock: int, side: int) -> dict[int, int]:
        if stock not in self.levels:
            self.levels[stock] = ({}, {})
        return self.levels[stock][side]

    def _add(self, ref: int, stock: int, side: int, price: int, shares: int) -> bool:
        if ref in self.orders or shares == 0:
            return False
        self.orders[ref] = [stock, side, price, shares]
        level = self._side(stock, side)
        level[price] = level.get(price, 0) + shares
        return True

    def _reduce(self, ref: int, shares: int) -> int | None:
        order = self.orders.get(ref)
        if order is None:
            return None
        stock, side, price, left = order
        cut = min(shares, left)
        level = self._side(stock, side)
        level[price] -= cut
        if level[price] == 0:
            del level[price]
        order[3] = left - cut
        if order[3] == 0:
            del self.orders[ref]
        return stock

    def apply(self, seq: int, m: bytes) -> None:
        kind = m[0:1]
        stock = None
        first_price = None  # a replace's old price: its change is said first
        if kind in (b"A", b"F"):
            ref, side, shares = struct.unpack_from(">QcI", m, 11)
            price = struct.unpack_from(">I", m, 32)[0]
            if side in (b"B", b"S") and self._add(ref, struct.unpack_from(">H", m, 1)[0], BID if side == b"B" else ASK,
                                                 price, shares):
                stock = struct.unpack_from(">H", m, 1)[0]
        elif kind in (b"E", b"C", b"X"):
            ref, shares = struct.unpack_from(">QI", m, 11)
            stock = self._reduce(ref, shares)
        elif kind == b"D":
            order = self.orders.get(struct.unpack_from(">Q", m, 11)[0])
            stock = self._reduce(struct.unpack_from(">Q", m, 11)[0], order[3]) if order else None
        elif kind == b"U":
            old, new, shares, price = struct.unpack_from(">QQII", m, 11)
            order = self.orders.get(old)
            if order is not None and (new == old or new not in self.orders):
                stock, side, first_price = order[0], order[1], order[2]
                self._reduce(old, order[3])
                self._add(new, stock, side, price, shares)
        if stock is not None and self.every_level:
            self._say_levels(seq, stock, first_price)
        elif stock is not None:
            self._say(seq, stock)

    def _say_levels(self, seq: int, stock: int, first_price: int | None) -> None:
        """Every level: each price whose shares differ from what was last said of the stock, first_price's first."""
        said = self.said_levels.setdefault(stock, ({}, {}))
        for side, letter in ((BID, "B"), (ASK, "S")):
            now, was = self.levels.get(stock, ({}, {}))[side], said[side]
            changed = sorted((p for p in now.keys() | was.keys() if now.get(p, 0) != was.get(p, 0)),
                             key=lambda p: (p != first_price, p))
            for price in changed:
                self.emit(seq, stock, (letter, price, now.get(price, 0)))
            said[side].clear()
            said[side].update(now)

    def _say(self, seq: int, stock: int) -> None:
        bids, asks = self.levels.get(stock, ({}, {}))
        if self.depth:  # price, shares of each of the top N levels, bids then asks, best first; empty ones 0, 0
            n = self.depth
            now = tuple(x for side, best_first in ((bids, True), (asks, False))
                        for level in (sorted(side.items(), reverse=best_first) + [(0, 0)] * n)[:n] for x in level)
        else:
            bid = max(bids) if bids else None
            ask = min(asks) if asks else None
            now = (bid or 0, bids[bid] if bid is not None else 0, ask or 0, asks[ask] if ask is not None else 0)
        if now != self.said.get(stock, (0,) * len(now)):
            self.said[stock] = now
            self.emit(seq, stock, now)


class Feed:
    """Messages in sequence order: duplicates and late ones are dropped, a gap is skipped over — or, given a way
    to fill it (a B line, a re-request server), later messages wait until it is filled or given up."""

    def __init__(self, book: Book, recovery: "Recovery | None" = None, stamps: "Stamps | None" = None) -> None:
        self.book, self.next_seq, self.recovery, self.stamps = book, 0, recovery, stamps
        # Messages past a gap, by sequence, until the gap is filled; None marks where a heartbeat or the end of
        # session said the next message would be (nothing to apply there: it ends the gap).
        self.waiting: dict[int, bytes | None] = {}
        self.top = 0                         # one past the highest sequence seen
        self.gaps: dict[int, int] = {}       # each gap found, first sequence -> how many, until filled or given up
        self.ended = False                   # an end-of-session packet came
        self.ends = 0                        # end-of-session packets seen (one a line)
        self.first_end = 0.0                 # when the first came (time.monotonic)

    def _apply(self, seq: int, m: bytes) -> None:
        self.next_seq = seq + 1
        decoded = self.stamps.now() if self.stamps else 0
        valid = len(m) > 0 and LENGTHS.get(m[0:1]) == len(m)
        if valid:
            self.book.apply(seq, m)
        if self.stamps:
            self.stamps.record(seq, m, valid, decoded)

    def _seen(self, seq: int) -> None:
        """A sequence number arrived (or was announced): past the highest seen, what lies between is a gap."""
        if self.recovery is not None and self.top and seq > self.top:
            self.gaps[self.top] = seq - self.top
        self.top = max(self.top, seq + 1)

    def message(self, seq: int, m: bytes) -> None:
        if seq < self.next_seq or self.waiting.get(seq) is not None:
            return  # a duplicate, or a late one already covered
        self._seen(seq)
        if self.recovery is None or seq == self.next_seq or self.next_seq == 0:
            self.waiting.pop(seq, None)
            self._apply(seq, m)
        else:
            self.waiting[seq] = m
        self._drain()

    def _drain(self) -> None:
        """Applies what waited once the gap before it is filled; a mark is only taken away."""
        while self.next_seq in self.waiting:
            m = self.waiting.pop(self.next_seq)
            if m is None:
                return
            self._apply(self.next_seq, m)

    def expect(self, next_seq: int) -> None:
        """A heartbeat or end of session says the next sequence is next_seq: what lies before it is a gap."""
        if self.recovery is not None and next_seq > self.next_seq > 0:
            self._seen(next_seq - 1)
            self.waiting.setdefault(next_seq, None)

    def first_missing(self, first: int, count: int) -> int | None:
        """The first message of the gap [first, first + count) still missing, or None."""
        return next((s for s in range(max(first, self.next_seq), first + count) if self.waiting.get(s) is None), None)

    def give_up(self) -> None:
        """The first gap stays lost: go on from the first message after it."""
        self.next_seq = min(self.waiting)
        self._drain()

    def give_up_all(self) -> None:
        """At a stop: every gap stays lost, and everything that waited is applied, in order."""
        while self.waiting:
            self.give_up()

    def done(self) -> bool:
        return self.ended and not self.waiting

    def packet(self, p: bytes) -> bool:
        """Applies one MoldUDP64 packet; False once the session has ended (with nothing missing, when gaps are
        filled)."""
        if self.stamps:
            self.stamps.received()
        if len(p) < 20:
            return True
        if self.recovery is not None:
            self.recovery.session = p[:10]
        seq, count = struct.unpack_from(">QH", p, 10)
        if count in (0, 0xFFFF):  # a heartbeat or the end of session: seq is the next one to come
            self.expect(seq)
            if count == 0xFFFF:
                self.ends += 1
                self.first_end = self.first_end or time.monotonic()
            self.ended = self.ended or count == 0xFFFF
            return not self.done() if self.recovery is not None else count != 0xFFFF
        # The whole packet is framed before any of it is applied: one whose count its messages do not fill exactly
        # (cut short, or bytes left after them) is rejected whole, as MoldUDP64 validation does (docs/faults.md).
        messages, at = [], 20
        for _ in range(count):
            if at + 2 > len(p):
                return True
            n = struct.unpack_from(">H", p, at)[0]
            if at + 2 + n > len(p):
                return True
            messages.append(p[at + 2:at + 2 + n])
            at += 2 + n
        if at != len(p):
            return True
        for i, m in enumerate(messages):
            self.message(seq + i, m)
        return not self.done()

    def line(self, text: bytes) -> bool:
        """Applies one serial line ($seq,t_send,HEX*CK); False at the end of session."""
        if self.stamps:
            self.stamps.received()
        start = text.find(b"$")
        star = text.rfind(b"*")
        if start < 0 or star < start:
            return True
        body = text[start + 1:star]
        check = 0
        for b in body:
            check ^= b
        try:
            if int(text[star + 1:star + 3], 16) != check:
                return True
            seq, _, payload = body.split(b",", 2)
            if payload == b"END":
                return False
            self.message(int(seq), bytes.fromhex(payload.decode()))
        except ValueError:
            pass
        return True


class Stamps:
    """The white box: each message applied, in itchbench's latency log (gateway/log/FORMAT.md) — when its packet or
    line was read, when it was taken to be applied, when the book had it; a message the book cannot take is flagged
    rejected. CLOCK_MONOTONIC, the clock itchbench's senders stamp."""

    def __init__(self, path: str) -> None:
        try:
            import itchbench_stamps  # only a white box needs it
        except ImportError:  # a copy made with `cp -r` keeps the link to it, which then leads nowhere
            sys.exit("gateway.py: itchbench_stamps.py is missing: copy itchbench's gateway/log/whitebox/"
                     "itchbench_stamps.py beside this file (or copy this example with cp -rL)")

        self.w = itchbench_stamps
        self.log = itchbench_stamps.LatencyLog(path, itchbench_stamps.READ | itchbench_stamps.DECODED
                                               | itchbench_stamps.BOOK)
        self.now, self.read = itchbench_stamps.now_ns, 0

    def received(self) -> None:
        self.read = self.now()

    def record(self, seq: int, m: bytes, valid: bool, decoded: int) -> None:
        locate = struct.unpack_from(">H", m, 1)[0] if len(m) >= 3 else 0
        self.log.record(seq, m[0:1] or b"?", locate, 0 if valid else self.w.REJECTED, (self.read, decoded, self.now()))

    def close(self) -> None:
        self.log.close()


class Recovery:
    """Fills every gap the feed found: asks the session's re-request server for each (a 20-byte request:
    session, first sequence, count), oldest first and BURST a tick at most, again after TIMEOUT_S for what is still
    missing of it, and gives a gap up after TRIES requests in a row that brought nothing of it, once it holds
    everything back (a capped server answers a long gap a few messages at a time: each answer is progress, however
    long a busy machine took to bring it). Without a server only the other line can fill a gap, and its copy is due
    within its skew: a gap is given up after 50 ms."""

    TIMEOUT_S, TRIES, BURST = 0.2, 8, 4  # BURST: requests a tick at most, so as not to flood the server

    def __init__(self, sock: socket.socket, server: tuple[str, int] | None) -> None:
        self.sock, self.server = sock, server
        if server is None:
            self.TIMEOUT_S, self.TRIES = 0.05, 1
        self.session = b""
        # A gap's first sequence -> when last asked, requests since one brought something, what was missing then.
        self.asked: dict[int, tuple[float, int, int]] = {}

    def tick(self, feed: Feed) -> None:
        if not self.session:
            return
        now, sent = time.monotonic(), 0
        for first, count in sorted(feed.gaps.items()):
            still = feed.first_missing(first, count)
            if still is None:
                del feed.gaps[first]
                self.asked.pop(first, None)
                continue
            when, tries, before = self.asked.get(first, (0.0, 0, still))
            tries = tries if still == before else 0  # the last answer brought some of it
            if tries and now - when < self.TIMEOUT_S:
                continue
            if tries == self.TRIES:
                if first <= feed.next_seq:  # it holds everything back: lost
                    feed.give_up()
                    del feed.gaps[first]
                    self.asked.pop(first, None)
                continue
            if self.server is not None:  # what is still missing of it: a capped answer leaves the rest to ask for
                if sent == self.BURST:
                    break
                self.sock.sendto(self.session + struct.pack(">QH", still, min(first + count - still, 0xFFFF)),
                                 self.server)
                sent += 1
            self.asked[first] = (now, tries + 1, still)


def take_snapshot(addr: str, port: int, user: str, password: str, apply) -> int:
    """A late join's book (docs/snapshot.md): logs in to the snapshot service over SoupBinTCP, applies each
    snapshot message as it comes, and returns the number its End of Snapshot ('G') carries: the first live message
    to apply. A connection lost midway is taken up with a login at the next message, five connections at most."""
    received = 0
    for _ in range(5):
        try:
            conn = socket.create_connection((addr, port), timeout=10)
        except OSError:
            time.sleep(0.2)
            continue
        body = user.ljust(6).encode() + password.ljust(10).encode() + b" " * 10 + str(received + 1).rjust(20).encode()
        conn.sendall(struct.pack(">H", len(body) + 1) + b"L" + body)
        buf = b""
        with conn:
            while True:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    break
                if not chunk:
                    break  # cut: another connection takes up from `received`
                buf += chunk
                while len(buf) >= 2 and len(buf) >= 2 + struct.unpack_from(">H", buf)[0]:
                    n = struct.unpack_from(">H", buf)[0]
                    kind, payload, buf = buf[2:3], buf[3:2 + n], buf[2 + n:]
                    if kind == b"J":
                        raise SystemExit(f"py-gateway: the snapshot server rejected the login ({payload.decode()})")
                    if kind == b"S":
                        received += 1
                        if payload[:1] == b"G":
                            return int(payload[1:])
                        apply(payload)
    raise SystemExit("py-gateway: the snapshot was not complete after 5 connections")


def join(sock: socket.socket, group: str) -> None:
    """Joins a group on the loopback interface; only this socket's own groups are delivered (IP_MULTICAST_ALL off)."""
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton("127.0.0.1"))
    sock.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_ALL, 0)


def open_feed(addr: str, port: int) -> socket.socket:
    """A feed socket: a group is joined with the socket bound to every address (so a unicast answer to it comes
    too), a unicast address is bound as it is."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    if ipaddress.IPv4Address(addr).is_multicast:
        sock.bind(("0.0.0.0", port))
        join(sock, addr)
    else:
        sock.bind((addr, port))
    return sock


def _levels(text: str) -> int | str:
    """--levels: 0 to 64, or all."""
    if text == "all":
        return text
    if not text.isdigit() or int(text) > 64:
        raise argparse.ArgumentTypeError(f"{text!r}: 0 to 64 levels a side, or all")
    return int(text)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--udp", metavar="ADDR:PORT")
    src.add_argument("--serial", metavar="TTY")
    p.add_argument("--bbo", metavar="ADDR:PORT", required=True)
    p.add_argument("--udp-b", metavar="ADDR:PORT", help="udp: the session's B line too (a group or an address; port "
                   "0: none): whichever line brings a message first, it is applied once")
    p.add_argument("--rerequest", metavar="ADDR:PORT", help="udp: the session's re-request server: gaps are asked "
                   "for again and filled before later messages are applied")
    p.add_argument("--snapshot", metavar="ADDR:PORT", help="udp: join mid-session: take the book from this "
                   "SoupBinTCP snapshot service, then apply the feed from the number its End of Snapshot carries "
                   "(port 0: none)")
    p.add_argument("--snapshot-login", metavar="USER:PASSWORD", default="itch:bench")
    p.add_argument("--bbo-via", choices=("tcp", "udp", "mqtt", "kafka"), default="tcp")
    p.add_argument("--bbo-topic", default="itchbench/bbo", help="mqtt, kafka: the topic (Kafka: partition 0)")
    p.add_argument("--bbo-format", choices=("csv", "jsonl"), default="csv")
    p.add_argument("--levels", type=_levels, default=0, metavar="N",
                   help="publish depth, the top N price levels a side (1 to 64), or every level's changes (all), "
                   "instead of the BBO (0)")
    p.add_argument("--shards", type=int, default=0, metavar="N",
                   help="publish each stock's events through one of N buffers (its locate modulo N), each written "
                   "whole once it holds 4 events, as a thread a shard would (0: every packet's events at once)")
    p.add_argument("--latency-log", metavar="PATH", help="write each message's read, decoded and book stamps "
                   "here, in itchbench's latency log (a white box: white_box = true in the contract)")
    args = p.parse_args()
    # SIGTERM ends the reading, once: the close that follows sends what is still held (a broker client's queue)
    # whatever comes next. Set before the reading is left, by either way, so no SIGTERM interrupts the close.
    closing = False

    def stop_reading(*_: object) -> None:
        nonlocal closing
        if not closing:
            closing = True
            sys.exit(0)
    signal.signal(signal.SIGTERM, stop_reading)

    bbo_host, bbo_port = args.bbo.rsplit(":", 1)
    bbo_to = (bbo_host, int(bbo_port))
    send, close = _bbo_output(args.bbo_via, bbo_to, args.bbo_topic)
    pending: list[str] = []

    names = (["seq", "stock", "side", "price", "shares"] if args.levels == "all" else
             ["seq", "stock", *(f"{side}{i}_{f}" for side in ("bid", "ask") for i in range(1, args.levels + 1)
                                for f in ("px", "qty"))])

    def emit(seq: int, stock: int, bbo: tuple[int, ...]) -> None:
        if args.levels:  # depth
            values = (seq, stock, *bbo)
            pending.append(",".join(map(str, values)) + "\n" if args.bbo_format == "csv"
                           else json.dumps(dict(zip(names, values))) + "\n")
            return
        if args.bbo_format == "csv":
            pending.append(f"{seq},{stock},{bbo[0]},{bbo[1]},{bbo[2]},{bbo[3]}\n")
        else:
            pending.append(json.dumps({"seq": seq, "stock": stock, "bid_px": bbo[0], "bid_qty": bbo[1],
                                       "ask_px": bbo[2], "ask_qty": bbo[3]}) + "\n")

    shards: list[list[str]] = [[] for _ in range(args.shards)]

    def flush(last: bool = False) -> None:
        if args.shards:  # each event to its stock's shard; a shard's events go out four at a time, the rest last
            for line in pending:
                stock = json.loads(line)["stock"] if line.startswith("{") else line.split(",", 2)[1]
                shards[int(stock) % args.shards].append(line)
            pending.clear()
            for shard in shards:
                if len(shard) >= 4 or (last and shard):
                    send("".join(shard).encode())
                    shard.clear()
        if pending:
            send("".join(pending).encode())
            pending.clear()

    recovery = None
    stamps = Stamps(args.latency_log) if args.latency_log else None
    feed = Feed(Book(emit, args.levels), stamps=stamps)
    try:
        if args.udp:
            addr, port = args.udp.rsplit(":", 1)
            sock = open_feed(addr, int(port))
            sockets = [sock]
            if args.udp_b and not args.udp_b.endswith(":0"):  # the session's B line: the first copy wins
                b_addr, b_port = args.udp_b.rsplit(":", 1)
                if int(b_port) == int(port) and ipaddress.IPv4Address(b_addr).is_multicast:
                    join(sock, b_addr)  # another group on the same port: the same socket takes both
                else:
                    sockets.append(open_feed(b_addr, int(b_port)))
            server = None
            if args.rerequest and not args.rerequest.endswith(":0"):  # port 0: the run has no server
                # Requests go from the feed's own socket: the answers come back to it.
                host, rport = args.rerequest.rsplit(":", 1)
                server = (host, int(rport))
            joining = args.snapshot and not args.snapshot.endswith(":0")
            lines = 2 if args.udp_b and not args.udp_b.endswith(":0") else 1
            if server is not None or len(sockets) > 1 or lines > 1 or joining:
                # A gap may be filled (by the other line, or the server): hold what comes after it meanwhile.
                feed.recovery = recovery = Recovery(sock, server)
            if joining:
                # The feed's sockets are open: the kernel holds its packets while the snapshot comes. The snapshot's
                # book is said at its last message's number; the feed goes on from the number it carries.
                s_addr, s_port = args.snapshot.rsplit(":", 1)
                user, _, password = args.snapshot_login.partition(":")
                staged: list[bytes] = []
                feed.next_seq = feed.top = take_snapshot(s_addr, int(s_port), user, password, staged.append)
                for m in staged:
                    feed.book.apply(feed.next_seq - 1, m)
                flush()
            while True:
                ready, _, _ = select.select(sockets, [], [], 0.05)
                more = not feed.done()
                for s in ready:
                    more = feed.packet(s.recv(65536)) and more
                if recovery is not None:
                    recovery.tick(feed)
                    more = more and not feed.done()
                flush()  # a packet's events go out with it
                # Done, and the other line's last copies read too (they follow its own end of session, a second
                # at most): what a gateway leaves queued on a socket as it closes, nothing counts.
                if not more and (feed.ends >= lines or time.monotonic() - feed.first_end > 1.0):
                    break
        else:
            fd = os.open(args.serial, os.O_RDONLY | os.O_NOCTTY)
            buf = b""
            running = True
            while running:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for text in lines:
                    if not feed.line(text):
                        running = False
                        break
                flush()
        closing = True
    finally:
        closing = True
        feed.give_up_all()  # stopped with gaps open: what waited behind them is applied, the gaps stay lost
        if stamps:
            stamps.close()
        flush(last=True)
        close()
    return 0


def _bbo_output(via: str, to: tuple[str, int], topic: str):
    """(send(bytes), close()) for the BBO output: whole lines each time."""
    if via == "tcp":
        conn = socket.create_connection(to)
        return conn.sendall, conn.close
    if via == "udp":
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        return (lambda data: sock.sendto(data, to)), sock.close
    if via == "mqtt":
        import paho.mqtt.client as mqtt
        client = mqtt.Client()
        client.connect(to[0], to[1])
        client.loop_start()
        sent = []

        def close_mqtt() -> None:
            for info in sent:
                info.wait_for_publish()
            client.loop_stop()
            client.disconnect()
        return (lambda data: sent.append(client.publish(topic, data, qos=1))), close_mqtt
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": f"{to[0]}:{to[1]}", "linger.ms": 0})

    def produce(data: bytes) -> None:
        producer.produce(topic, data, partition=0)
        producer.poll(0)
    return produce, lambda: producer.flush(10)


if __name__ == "__main__":
    sys.exit(main())
