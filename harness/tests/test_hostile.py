"""Hostile but well-framed input, end to end through `itchbench sim`: the
values hash tables use as sentinels, replaces onto themselves, extreme share
counts, invalid sides, and non-ASCII and control bytes in alpha fields. Each
is counted or applied as the spec says; nothing crashes; every JSON written
is valid. The message bytes are packed here by hand (struct), not by the
project's encoder, and the expected BBO events are worked out by hand from
the book semantics in docs/book-and-bbo.md."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from itchbench import rundir
from itchbench.cli import main as itchbench_main

ALL_ONES = 2**64 - 1
SYMBOL = b"\xff\xfeAB\x00\x1b\x7f "  # not ASCII, not UTF-8, with control bytes


def head(kind: bytes, locate: int, ts: int) -> bytes:
    return kind + struct.pack(">HH", locate, 0) + ts.to_bytes(6, "big")


def stock_directory(locate: int, symbol: bytes) -> bytes:
    return head(b"R", locate, 1) + symbol + b"Q" + b"N" + struct.pack(">I", 100) + b"N" + b"C" + b"Z " + b"P" \
        + b"N" + b"N" + b"1" + b"N" + struct.pack(">I", 0) + b"N"


def add(ref: int, side: bytes, shares: int, price: int, ts: int) -> bytes:
    return head(b"A", 1, ts) + struct.pack(">Q", ref) + side + struct.pack(">I", shares) + b"TEST    " \
        + struct.pack(">I", price)


def execute(ref: int, shares: int, ts: int) -> bytes:
    return head(b"E", 1, ts) + struct.pack(">QIQ", ref, shares, 1)


def replace(orig: int, new: int, shares: int, price: int, ts: int) -> bytes:
    return head(b"U", 1, ts) + struct.pack(">QQII", orig, new, shares, price)


def cancel(ref: int, shares: int, ts: int) -> bytes:
    return head(b"X", 1, ts) + struct.pack(">QI", ref, shares)


def delete(ref: int, ts: int) -> bytes:
    return head(b"D", 1, ts) + struct.pack(">Q", ref)


def itch_file(path: Path, messages: list[bytes]) -> Path:
    lengths = {b"R": 39, b"A": 36, b"E": 31, b"U": 35, b"X": 23, b"D": 19}
    for m in messages:
        assert len(m) == lengths[m[:1]], m[:1]
    path.write_bytes(b"".join(struct.pack(">H", len(m)) + m for m in messages))
    return path


def test_sentinel_references_and_hostile_fields(tmp_path, capsys):
    capture = itch_file(tmp_path / "hostile.itch", [
        stock_directory(1, SYMBOL),
        add(ALL_ONES, b"B", 100, 10000, 2),       # (10000 x100 | -)
        add(0, b"S", 50, 10100, 3),               # (10000 x100 | 10100 x50)
        execute(ALL_ONES, 30, 4),                 # (10000 x70 | 10100 x50)
        replace(ALL_ONES, ALL_ONES, 10, 10050, 5),  # onto itself: (10050 x10 | 10100 x50)
        cancel(0, 2**32 - 1, 6),                  # more than it has: ask gone (10050 x10 | -)
        delete(ALL_ONES, 7),                      # empty book
        delete(ALL_ONES, 8),                      # gone already: unknown reference, no event
        add(5, b"Z", 10, 10000, 9),               # no such side: invalid, no event
    ])
    assert itchbench_main(["sim", str(capture), "--out", str(tmp_path / "run")]) == 0
    assert "LOSSLESS" in capsys.readouterr().out
    run = tmp_path / "run"
    assert itchbench_main(["dump", "bbo", str(run)]) == 0
    rows = [line.split(",") for line in capsys.readouterr().out.strip().splitlines()[1:]]
    got = [(int(r[0]), int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in rows]
    assert got == [(2, 10000, 100, 0, 0), (3, 10000, 100, 10100, 50), (4, 10000, 70, 10100, 50),
                   (5, 10050, 10, 10100, 50), (6, 10050, 10, 0, 0), (7, 0, 0, 0, 0)]
    gw = json.loads((run / "gateway.json").read_bytes().decode("ascii"))  # pure ASCII, valid JSON
    assert gw["book"]["unknown_refs"] == 1 and gw["book"]["invalid_orders"] == 1
    # Trimmed, each byte not printable ASCII written \xNN (itch.hpp Alpha::printable): one line of text anywhere.
    assert gw["symbols"]["1"] == "\\xFF\\xFEAB\\x00\\x1B\\x7F"
    for name in ("summary.json", "manifest.json"):
        json.loads((run / name).read_bytes().decode("utf-8"))
    assert (run / "report.md").read_text(encoding="utf-8")
    assert rundir.read_json(run / "summary.json")["verdict"]["status"] == "lossless"


def _set_record_time(pcap: Path, record: int, seconds: int) -> None:
    from pcap_edit import record_offsets

    data = bytearray(pcap.read_bytes())
    off = record_offsets(bytes(data))[record]
    data[off:off + 8] = struct.pack("<II", seconds, 0)
    pcap.write_bytes(bytes(data))


def test_backward_capture_timestamps_neither_hang_nor_underflow(tmp_path):
    from itchbench.runs import runner

    from live_helpers import config, make_capture, summary_of

    cap = make_capture(tmp_path, "back.pcap", "--profile", "seed-workload", "--messages", "300", "--rate", "2000")
    _set_record_time(cap, 100, 0)    # back to 1970
    _set_record_time(cap, 200, 10)   # and again
    for transport, table in [("udp", {"replay": {"rate": "capture"}}),
                             ("serial", {"serial": {"baud": 2_000_000, "timing": "capture"}})]:
        run = runner.execute(config(cap, transport, **table), f"back-{transport}", root=tmp_path, echo=False)
        s = summary_of(run)
        assert s["verdict"]["status"] == "lossless", s["verdict"]
        if transport == "serial":
            assert s["reconciliation"]["serial"]["timestamps_backwards"] == 2
        # Paced by the capture, the whole replay takes about its real span (~0.15 s), not decades.
        assert s["transport_details"]["deadlines_s"][{"udp": "tcpreplay", "serial": "serial-replay"}[transport]] < 120


def test_a_record_cut_by_a_small_snaplen_is_counted_and_its_loss_said(tmp_path, capsys):
    from pcap_edit import RECORD_HEADER, record_offsets

    from live_helpers import make_capture

    cap = make_capture(tmp_path, "cut.pcap", "--profile", "seed-workload", "--messages", "300")
    data = bytearray(cap.read_bytes())
    off = record_offsets(bytes(data))[150]
    incl = struct.unpack_from("<I", data, off + 8)[0]
    # Keep 40 bytes of that frame (a 40-byte snaplen); its wire length stays.
    struct.pack_into("<I", data, off + 8, 40)
    del data[off + RECORD_HEADER + 40: off + RECORD_HEADER + incl]
    cap.write_bytes(bytes(data))
    assert itchbench_main(["sim", str(cap), "--out", str(tmp_path / "run")]) == 1
    out = capsys.readouterr().out
    assert "LOST: 1 of" in out
    s = rundir.read_json(tmp_path / "run" / "summary.json")
    assert s["gateway"]["capture_stats"]["truncated_frames"] == 1
    assert s["complete"] and s["balanced"] and s["reconciliation"]["missing"] == 1
