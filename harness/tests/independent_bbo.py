"""An independent BBO computation in plain Python, for cross-checking the
gateway: its own pcap, MoldUDP64 and ITCH parsing (struct), its own book
(dicts), the BBO semantics of docs/book-and-bbo.md. Slow and simple on purpose; only for
small captures."""

from __future__ import annotations

import struct
from collections import defaultdict
from pathlib import Path


def udp_payloads(pcap: Path):
    """The UDP payload (a MoldUDP64 packet) of every frame, for Ethernet pcaps as itch-synth writes them."""
    data = pcap.read_bytes()
    magic = struct.unpack_from("<I", data, 0)[0]
    assert magic in (0xA1B2C3D4, 0xA1B23C4D), "little-endian pcap expected"
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        frame = data[off + 16: off + 16 + incl]
        off += 16 + incl
        ihl = (frame[14] & 0x0F) * 4
        yield frame[14 + ihl + 8:]


def mold_messages(pcap: Path):
    """(sequence, message bytes) of every message, for Ethernet pcaps as itch-synth writes them."""
    for payload in udp_payloads(pcap):
        seq, count = struct.unpack_from(">QH", payload, 10)
        if count in (0, 0xFFFF):
            continue
        p = 20
        for i in range(count):
            (n,) = struct.unpack_from(">H", payload, p)
            yield seq + i, payload[p + 2: p + 2 + n]
            p += 2 + n


class Book:
    """Orders by reference, per docs/book-and-bbo.md: apply() a message, bbo() of a stock."""

    def __init__(self) -> None:
        self.orders: dict[int, list] = {}  # ref -> [locate, side, shares, price]
        self.names: dict[int, str] = {}

    def bbo(self, locate: int) -> tuple[int, int, int, int]:
        bids: dict[int, int] = defaultdict(int)
        asks: dict[int, int] = defaultdict(int)
        for loc, side, shares, price in self.orders.values():
            if loc == locate:
                (bids if side == "B" else asks)[price] += shares
        bp = max(bids) if bids else 0
        ap = min(asks) if asks else 0
        return bp, bids.get(bp, 0), ap, asks.get(ap, 0)

    def _reduce(self, ref: int, n: int) -> int | None:
        o = self.orders.get(ref)
        if o is None:
            return None
        o[2] -= min(n, o[2])
        if o[2] == 0:
            del self.orders[ref]
        return o[0]

    def apply(self, m: bytes) -> int | None:
        """The stock whose book the message touched, or None."""
        t = chr(m[0])
        (locate,) = struct.unpack_from(">H", m, 1)
        if t == "R":
            self.names[locate] = m[11:19].decode().rstrip(" ")
        elif t in "AF":
            ref, side, shares, price = struct.unpack_from(">QcI8xI", m, 11)
            if ref not in self.orders and side in (b"B", b"S") and shares > 0:
                self.orders[ref] = [locate, side.decode(), shares, price]
                return locate
        elif t in "ECX":
            ref, n = struct.unpack_from(">QI", m, 11)
            return self._reduce(ref, n)
        elif t == "D":
            (ref,) = struct.unpack_from(">Q", m, 11)
            o = self.orders.pop(ref, None)
            return o[0] if o else None
        elif t == "U":
            orig, new, shares, price = struct.unpack_from(">QQII", m, 11)
            o = self.orders.get(orig)
            if o is not None and (new == orig or new not in self.orders):
                del self.orders[orig]
                if shares > 0:
                    self.orders[new] = [o[0], o[1], shares, price]
                return o[0]
        return None


def bbo_events(pcap: Path) -> list[tuple[int, str, int, int, int, int]]:
    book = Book()
    last: dict[int, tuple[int, int, int, int]] = defaultdict(lambda: (0, 0, 0, 0))
    events = []
    for seq, m in mold_messages(pcap):
        touched = book.apply(m)
        if touched is not None:
            now = book.bbo(touched)
            if now != last[touched]:
                last[touched] = now
                events.append((seq, book.names.get(touched, str(touched)), now[0], now[1], now[2], now[3]))
    return events


class DepthBook(Book):
    """The same book, with each stock side's price levels (price -> aggregate shares) kept as orders come and go:
    the orders a message names, before and after it, taken out of and put back into their levels."""

    def __init__(self) -> None:
        super().__init__()
        self.sides: dict[tuple[int, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))

    @staticmethod
    def _refs(m: bytes) -> list[int]:
        t = chr(m[0])
        if t in "AFECXD":
            return [struct.unpack_from(">Q", m, 11)[0]]
        if t == "U":
            return list(dict.fromkeys(struct.unpack_from(">QQ", m, 11)))
        return []

    def _count(self, order: tuple, sign: int) -> None:
        locate, side, shares, price = order
        level = self.sides[(locate, side)]
        level[price] += sign * shares
        if level[price] == 0:
            del level[price]

    def apply(self, m: bytes) -> int | None:
        refs = self._refs(m)
        before = [tuple(self.orders[r]) for r in refs if r in self.orders]
        touched = super().apply(m)
        for o in before:
            self._count(o, -1)
        for r in refs:
            if r in self.orders:
                self._count(tuple(self.orders[r]), +1)
        return touched

    def depth(self, locate: int, n: int) -> tuple[int, ...]:
        """bid1_px, bid1_qty … bidN_qty, ask1_px … askN_qty: best first, empty levels 0, 0."""
        out: list[int] = []
        for side, best_first in (("B", True), ("S", False)):
            levels = sorted(self.sides[(locate, side)].items(), reverse=best_first)[:n]
            levels += [(0, 0)] * (n - len(levels))
            out += [x for level in levels for x in level]
        return tuple(out)


def depth_events(pcap: Path, n: int) -> list[tuple]:
    """(seq, stock, bid1_px, bid1_qty, …, askN_qty) after each book message that changed the touched stock's top
    n levels a side (docs/book-and-bbo.md, "Depth")."""
    book = DepthBook()
    last: dict[int, tuple[int, ...]] = defaultdict(lambda: (0,) * (4 * n))
    events = []
    for seq, m in mold_messages(pcap):
        touched = book.apply(m)
        if touched is not None:
            now = book.depth(touched, n)
            if now != last[touched]:
                last[touched] = now
                events.append((seq, book.names.get(touched, str(touched)), *now))
    return events


def top_level_changes(pcap: Path, n: int) -> list[tuple]:
    """(seq, stock, side, price, shares) for each price whose shares among a stock's top n levels a side differ from
    its depth event before (0: it left the top n), bids before asks, each side best first: the depth log's records
    of depth_events (FORMAT.md, "Level change record"), from the two events' levels as maps of price to shares."""
    last: dict[str, tuple[int, ...]] = defaultdict(lambda: (0,) * (4 * n))
    out = []
    for seq, stock, *now in depth_events(pcap, n):
        for side, at, best_first in (("B", 0, True), ("S", 2 * n, False)):
            was = {p: q for p, q in zip(last[stock][at:at + 2 * n:2], last[stock][at + 1:at + 2 * n:2]) if q}
            got = {p: q for p, q in zip(now[at:at + 2 * n:2], now[at + 1:at + 2 * n:2]) if q}
            changed = sorted((p for p in was.keys() | got.keys() if was.get(p, 0) != got.get(p, 0)),
                             reverse=best_first)
            out += [(seq, stock, side, p, got.get(p, 0)) for p in changed]
        last[stock] = tuple(now)
    return out


def level_changes(pcap: Path) -> list[tuple]:
    """(seq, stock, side, price, shares) for each price level a book message changed, its aggregate shares after
    the message (0: the level left the book), a replace's old price first (docs/book-and-bbo.md, "Every level"):
    the touched stocks' sides copied whole before each message and compared whole after it."""
    book = DepthBook()
    out = []
    for seq, m in mold_messages(pcap):
        refs = [r for r in book._refs(m) if r in book.orders]
        locates = {book.orders[r][0] for r in refs} | ({struct.unpack_from(">H", m, 1)[0]} if m[:1] == b"A" or
                                                        m[:1] == b"F" else set())
        keys = [(loc, side) for loc in sorted(locates) for side in "BS"]
        before = {key: dict(book.sides[key]) for key in keys}
        old_price = book.orders[refs[0]][3] if m[:1] == b"U" and refs else None
        book.apply(m)
        for key in keys:
            after = book.sides[key]
            changed = sorted((p for p in before[key].keys() | after.keys()
                              if before[key].get(p, 0) != after.get(p, 0)), key=lambda p: p != old_price)
            out += [(seq, book.names.get(key[0], str(key[0])), key[1], p, after.get(p, 0)) for p in changed]
    return out
