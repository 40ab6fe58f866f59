"""Captures that look like what a tap records, built byte by byte here (not
by the code under test): a feed's frames re-addressed to a multicast group,
some behind an 802.1Q tag or a QinQ pair, among ARP, HSRP hellos on a VLAN,
another UDP flow, TCP and an IP fragment — or beside a second MoldUDP64
session. Each builder returns what it put in, so tests know the counts."""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

PCAP_NS_MAGIC = 0xA1B23C4D
ETH_IPV4, ETH_ARP, ETH_8021Q, ETH_8021AD = 0x0800, 0x0806, 0x8100, 0x88A8
FEED = ("233.54.12.111", 26477)
HSRP = ("224.0.0.2", 1985)
OTHER = ("10.1.2.3", 5353)


def read_pcap(path: Path) -> list[tuple[int, bytes]]:
    """(timestamp ns, frame) of every record of a nanosecond Ethernet pcap."""
    data = path.read_bytes()
    magic, _, _, _, _, _, linktype = struct.unpack_from("<IHHiIII", data, 0)
    assert magic == PCAP_NS_MAGIC and linktype == 1, "expects a nanosecond Ethernet pcap"
    out, off = [], 24
    while off + 16 <= len(data):
        sec, nsec, incl, _ = struct.unpack_from("<IIII", data, off)
        out.append((sec * 1_000_000_000 + nsec, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def write_pcap(path: Path, records: list[tuple[int, bytes]]) -> None:
    parts = [struct.pack("<IHHiIII", PCAP_NS_MAGIC, 2, 4, 0, 0, 65535, 1)]
    for ts, frame in records:
        parts.append(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000, len(frame), len(frame)))
        parts.append(frame)
    path.write_bytes(b"".join(parts))


def _ip(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4(src: str, dst: str, proto: int, payload: bytes, *, flags_frag: int = 0x4000) -> bytes:
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, flags_frag, 64, proto, 0, _ip(src), _ip(dst))
    return head[:10] + struct.pack("!H", _checksum(head)) + head[12:] + payload


def udp(src_port: int, dst_port: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", src_port, dst_port, 8 + len(payload), 0) + payload  # checksum 0: none (IPv4)


def ethernet(ethertype: int, body: bytes, tags: tuple[int, ...] = ()) -> bytes:
    """Ethernet II; tags are VLAN ids, outermost first (two: an 802.1ad + 802.1Q QinQ pair)."""
    out = bytes.fromhex("01005e000001") + bytes.fromhex("020000000002")
    for i, vid in enumerate(tags):
        out += struct.pack("!HH", ETH_8021AD if len(tags) == 2 and i == 0 else ETH_8021Q, vid)
    return out + struct.pack("!H", ethertype) + body


def mold_payload(frame: bytes) -> bytes:
    """The UDP payload of an untagged Ethernet/IPv4/UDP frame from itch-synth."""
    return frame[14 + 20 + 8:]


def with_session(payload: bytes, session: str) -> bytes:
    return session.encode().ljust(10) + payload[10:]


@dataclass
class Tap:
    path: Path
    feed_datagrams: int
    not_feed: Counter = field(default_factory=Counter)  # other_flow, not_udp, not_ipv4, fragment
    flows: int = 0


def tap_capture(feed_pcap: Path, out: Path) -> Tap:
    """The feed's frames to 233.54.12.111:26477, a third behind 802.1Q and a
    third behind QinQ, with an ARP request, an HSRP hello on VLAN 20, an
    mDNS-like datagram, a TCP segment and an IP fragment between them."""
    records, tap = [], Tap(out, 0)
    for i, (ts, frame) in enumerate(read_pcap(feed_pcap)):
        tags = ((), (100,), (200, 100))[i % 3]
        body = ipv4("10.0.0.1", FEED[0], 17, udp(26400, FEED[1], mold_payload(frame)))
        records.append((ts, ethernet(ETH_IPV4, body, tags)))
        tap.feed_datagrams += 1
        if i % 500 == 0:
            arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, b"\x02" * 6, _ip("10.0.0.1"), b"\0" * 6,
                              _ip("10.0.0.254"))
            records.append((ts, ethernet(ETH_ARP, arp)))
            tap.not_feed["not_ipv4"] += 1
            hello = bytes([0, 0, 16, 3, 10, 100, 1, 0]) + b"cisco\0\0\0" + _ip("10.0.0.254")  # HSRPv1, 20 bytes
            records.append((ts, ethernet(ETH_IPV4, ipv4("10.0.0.2", HSRP[0], 17, udp(1985, HSRP[1], hello)), (20,))))
            tap.not_feed["other_flow"] += 1
        if i % 700 == 0:
            records.append((ts, ethernet(ETH_IPV4, ipv4("10.0.0.3", OTHER[0], 17, udp(5353, OTHER[1], b"\0" * 30)))))
            tap.not_feed["other_flow"] += 1
            tcp = struct.pack("!HHIIBBHHH", 443, 51000, 1, 0, 0x50, 0x10, 1024, 0, 0)
            records.append((ts, ethernet(ETH_IPV4, ipv4("10.0.0.4", "10.0.0.1", 6, tcp))))
            tap.not_feed["not_udp"] += 1
            frag = ipv4("10.0.0.5", FEED[0], 17, udp(26400, FEED[1], b"\0" * 40), flags_frag=0x2000)  # more fragments
            records.append((ts, ethernet(ETH_IPV4, frag)))
            tap.not_feed["fragment"] += 1
    write_pcap(out, records)
    tap.flows = 3  # the feed, HSRP, mDNS-like (both asides start at the first frame)
    return tap


def two_session_capture(feed_pcap: Path, out: Path) -> tuple[Path, dict[str, str]]:
    """The feed (its own session) to 233.54.12.111:26477 and the same packets,
    renamed to session ZZSECOND, to 233.54.12.112:26478: two sessions in one
    capture. Returns the path and {feed: session}."""
    records = []
    for ts, frame in read_pcap(feed_pcap):
        payload = mold_payload(frame)
        records.append((ts, ethernet(ETH_IPV4, ipv4("10.0.0.1", FEED[0], 17, udp(26400, FEED[1], payload)))))
        second = with_session(payload, "ZZSECOND")
        records.append((ts, ethernet(ETH_IPV4, ipv4("10.0.0.1", "233.54.12.112", 17, udp(26400, 26478, second)))))
    write_pcap(out, records)
    session = read_pcap(feed_pcap)[0][1][42:52].decode().rstrip()
    return out, {f"{FEED[0]}:{FEED[1]}": session, "233.54.12.112:26478": "ZZSECOND"}
