"""Writes the committed seed corpora of the fuzz targets from the fixtures
(deterministic: run it again and nothing changes). Usage:
    .venv/bin/python gateway/fuzz/make_seeds.py
"""

from __future__ import annotations

import struct
from functools import reduce
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parents[1] / "fixtures" / "nasdaq-day-sample.pcap"


def records(pcap: bytes) -> list[bytes]:
    off, out = 24, []
    while off + 16 <= len(pcap):
        incl = struct.unpack_from("<I", pcap, off + 8)[0]
        out.append(pcap[off: off + 16 + incl])
        off += 16 + incl
    return out


def payload(record: bytes) -> bytes:
    frame = record[16:]
    ihl = (frame[14] & 0x0F) * 4
    udp_len = struct.unpack_from(">H", frame, 14 + ihl + 4)[0]
    return frame[14 + ihl + 8: 14 + ihl + udp_len]


def messages(payloads: list[bytes]) -> list[bytes]:
    out = []
    for p in payloads:
        count = struct.unpack_from(">H", p, 18)[0]
        off = 20
        for _ in range(count if count != 0xFFFF else 0):
            (n,) = struct.unpack_from(">H", p, off)
            out.append(p[off + 2: off + 2 + n])
            off += 2 + n
    return out


def pieces(items: list[bytes]) -> bytes:
    return b"".join(struct.pack(">H", len(i)) + i for i in items)


def serial_line(seq: int, t_send: int, msg: bytes) -> bytes:
    body = f"{seq},{t_send},{msg.hex()}".encode()
    ck = reduce(lambda a, b: a ^ b, body, 0)
    return b"$" + body + b"*" + f"{ck:02x}".encode() + b"\n"


def soup(kind: bytes, payload: bytes = b"") -> bytes:
    """A SoupBinTCP packet: 2-byte length (type and payload), type, payload."""
    return struct.pack(">H", len(payload) + 1) + kind + payload


def main() -> None:
    pcap = FIXTURE.read_bytes()
    recs = records(pcap)
    pays = [payload(r) for r in recs]
    msgs = messages(pays)
    corpus = {
        "mold_framer/in_order": pieces(pays[:40]),
        "mold_framer/gap_duplicate_late": pieces([pays[0], pays[2], pays[1], pays[2], pays[3]]),
        "mold_framer/heartbeat_and_end": pieces([pays[0], pays[0][:10] + pays[1][10:18] + b"\x00\x00",
                                                 pays[0][:18] + b"\xff\xff"]),
        # fuzz_gap_recovery: a control byte first (0 line A, 1 line B, 2 an answer, 3 + ms << 2: time passes).
        "gap_recovery/two_lines_gap_answer": pieces([b"\x00" + pays[0], b"\x00" + pays[2], b"\x01" + pays[0],
                                                     bytes([3 | (6 << 2)]), b"\x02" + pays[1], b"\x01" + pays[2],
                                                     b"\x00" + pays[3]]),
        "gap_recovery/given_up": pieces([b"\x00" + pays[0], b"\x00" + pays[3]] + [bytes([3 | (50 << 2)])] * 4
                                        + [b"\x02" + pays[1], b"\x00" + pays[4]]),
        # fuzz_soupbintcp: a control byte first (bit 0: time passes; high nibble: the send budget), then client bytes.
        "soupbintcp/login_and_read": pieces([b"\xf0" + soup(b"L", b"itch  bench     " + b" " * 10 + b"1".rjust(20)),
                                             b"\x31", b"\xf0" + soup(b"R"), b"\xf0" + soup(b"O")]),
        "soupbintcp/resume_and_garbage": pieces([b"\x00" + soup(b"L", b"itch  bench     GLIMPSE   " + b"30".rjust(20)),
                                                 b"\x21", b"\x00" + soup(b"x"), b"\x00\x00\x00"]),
        "book_lockstep/session_start": pieces(msgs[:200]),
        "book_lockstep/session_middle": pieces(msgs[2000:2300]),
        "serial_line/lines": b"".join(serial_line(i + 1, 1000 * i, m) for i, m in enumerate(msgs[:20]) if len(m) <= 64)
        + b"$21,1,END*" + f"{reduce(lambda a, b: a ^ b, b'21,1,END', 0):02x}".encode() + b"\n",
        "serial_line/noise": b"~!noise#%" + serial_line(1, 5, msgs[0]) + b"$1,2,zz*00\n",
        "capture_readers/small_pcap": pcap[:24] + b"".join(recs[:12]),
        "capture_readers/small_itch": pieces(msgs[:50]),
        # fuzz_plain_csv: a byte of settings first (fields - 1 in bits 0-2, 8 stamped, 16 sided), then an output.
        "plain_csv/bbo_stamped_with_junk": bytes([5 | 8]) + b"1000 10,1,100,5,0,0\n1001 junk\n\n1002 11, AAPL ,200,7"
                                            b",210,3\r\n1003 12,1\r2,3,4,5\n1004 13,2,200,7,0,0",
        "plain_csv/level_changes": bytes([4 | 16]) + b"10,1,B,100,5\n10,1,S,101,0\n11,2,X,5,5\n\f\n12,BRK.A,B,7,7\n",
        # fuzz_mold_requests' session is FUZZ000001, sequences 5..44: requests in it, around it and beside it.
        "mold_requests/requests": pieces([b"FUZZ000001" + struct.pack(">QH", seq, count) for seq, count in
                                          ((5, 1), (10, 40), (44, 3), (45, 1), (0, 2), (7, 0))]
                                         + [b"OTHER00001" + struct.pack(">QH", 5, 1), b"short"]),
    }
    for name, data in corpus.items():
        (HERE / "corpus" / name).parent.mkdir(exist_ok=True)
        (HERE / "corpus" / name).write_bytes(data)


if __name__ == "__main__":
    main()
