"""The BBO log's version 2 (gateway/log/FORMAT.md, "BBO slot"): slots built by hand with struct from the format's
text, not the reader's dtypes, read back into the version-1 records a gateway used to write."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from itchbench.analysis import logs
from itchbench.analysis.bbo_follow import BboDigestFollower

from slot_refusals import assert_refused_everywhere

NINE_THIRTY = 34_200_000_000_000  # 09:30, ns since midnight


def _event(bid_px: int, ask_px: int, bid_low: int, ask_low: int, timestamp_off: int, locate: int, seq_off: int,
           flags: int) -> bytes:
    return struct.pack("<IIIIIHBB", bid_px, ask_px, bid_low, ask_low, timestamp_off, locate, seq_off, flags)


def _anchor(seq: int, timestamp: int) -> bytes:
    return struct.pack("<QQ", seq, timestamp) + bytes(7) + bytes([0x80 | 0x10])


def _high(bid_high: int, ask_high: int) -> bytes:
    return struct.pack("<II", bid_high, ask_high) + bytes(15) + bytes([0x80 | 0x20])


def _log(path: Path, slots: list[bytes], finalized: bool = True) -> Path:
    h = np.zeros(1, logs.HEADER_DTYPE)
    h["magic"], h["version"], h["header_size"], h["record_size"], h["kind"] = logs.MAGIC, 2, 128, 24, 2
    h["flags"], h["record_count"] = (logs.FLAG_FINALIZED, len(slots)) if finalized else (0, 0)
    path.write_bytes(h.tobytes() + b"".join(slots))
    return path


def _record(seq: int, timestamp: int, bid_qty: int, ask_qty: int, bid_px: int, ask_px: int, locate: int,
            flags: int) -> bytes:
    """A version-1 BBO record (FORMAT.md, "BBO record"): what each event must read back as, byte for byte."""
    return struct.pack("<QQQQIIHB", seq, timestamp, bid_qty, ask_qty, bid_px, ask_px, locate, flags) + bytes(5)


# Offsets at their widest (seq + 255, timestamp + 2^32 - 1), an anchor moving both on, a bid of 5,000,000,000 shares
# (0x1_2A05_F200) and an ask of 6,000,000,000 (0x1_65A0_BC00) over a high-shares slot and the event's low 32 bits,
# an empty side, and each flag.
SLOTS = [
    _anchor(1000, NINE_THIRTY),
    _event(1234500, 1235000, 300, 200, 0, 7, 0, 0x80),
    _event(0, 1235000, 0, 100, 5, 8, 1, 0x80 | 0x01),
    _event(1, 2, 5, 6, 2**32 - 1, 9, 255, 0x80),
    _anchor(1256, NINE_THIRTY + 10),
    _high(1, 1),
    _event(7, 8, 0x2A05F200, 0x65A0BC00, 3, 9, 1, 0x80 | 0x02),
    _event(3, 4, 7, 8, 4, 9, 2, 0x80),
]
READ_BACK = b"".join([
    _record(1000, NINE_THIRTY, 300, 200, 1234500, 1235000, 7, 0x80),
    _record(1001, NINE_THIRTY + 5, 0, 100, 0, 1235000, 8, 0x81),
    _record(1255, NINE_THIRTY + 2**32 - 1, 5, 6, 1, 2, 9, 0x80),
    _record(1257, NINE_THIRTY + 13, 5_000_000_000, 6_000_000_000, 7, 8, 9, 0x82),
    _record(1258, NINE_THIRTY + 14, 7, 8, 3, 4, 9, 0x80),
])


def test_bbo_slots_read_back_as_the_records_a_version_1_log_holds(tmp_path):
    log = logs.read_bbo(_log(tmp_path / "v2.bbo", SLOTS))
    assert log.slots and log.records.dtype == logs.BBO_DTYPE and log.count == 5
    assert log.records.tobytes() == READ_BACK
    # The digest is the records', whichever version holds them.
    v1 = tmp_path / "v1.bbo"
    writer = logs.LogWriter(v1, logs.KIND_BBO, 0)
    writer.append(np.frombuffer(READ_BACK, logs.BBO_DTYPE).copy())
    writer.close()
    assert logs.read_bbo(v1).header["version"] == 1
    assert logs.bbo_digest(log) == logs.bbo_digest(logs.read_bbo(v1))


@pytest.mark.parametrize("part", range(1, len(SLOTS) + 1))
def test_bbo_slots_read_a_part_at_a_time_are_the_slots_read_whole(tmp_path, part):
    # Every part size: parts that begin with no anchor of their own (the last one before carried over), a part that
    # ends with a high-shares slot (its event in the next part), and a part that is all anchors.
    log = logs.read_bbo(_log(tmp_path / "v2.bbo", SLOTS))
    assert b"".join(p.tobytes() for p in logs.iter_records(log, part)) == READ_BACK


def test_a_log_never_closed_is_read_to_its_last_whole_event(tmp_path):
    # Cut after the high-shares slot: its event was not written, and it is left out, not refused.
    with pytest.warns(logs.TruncatedLogWarning, match="never closed"):
        log = logs.read_bbo(_log(tmp_path / "open.bbo", SLOTS[:6] + [bytes(24)], finalized=False))
    assert log.records.tobytes() == READ_BACK[:3 * 48]


@pytest.mark.parametrize("slots, words", [
    ([_event(1, 1, 1, 1, 0, 1, 0, 0x80), _anchor(5, 0)], "BBO slot 0 is a BBO event with no anchor before it"),
    ([_anchor(5, 0), _high(1, 0), _anchor(6, 0), _event(1, 1, 1, 1, 0, 1, 0, 0x80)],
     "BBO slot 1 holds high shares, and no BBO event follows it"),
    ([_anchor(5, 0), _event(1, 1, 1, 1, 0, 1, 0, 0x80), _high(0, 1)],
     "BBO slot 2 holds high shares, and no BBO event follows it"),
    ([_anchor(5, 0), _event(1, 1, 1, 1, 0, 1, 0, 0x80 | 0x04)], "BBO slot 1 has flags 0x84, no slot's"),
    ([_anchor(5, 0), _event(1, 1, 1, 1, 0, 1, 0, 0x80 | 0x30)], "BBO slot 1 has flags 0xb0, no slot's"),
])
def test_bbo_slots_out_of_their_order_are_refused_with_the_slot_named(tmp_path, slots, words):
    log = logs.read_bbo(_log(tmp_path / "bad.bbo", slots))  # the header is whole: refused when read back
    assert_refused_everywhere(log, words)


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "ending in a high-shares slot"])
def test_the_follower_takes_slots_as_a_reader_of_the_closed_log_does(tmp_path, closed):
    # The digest follower on a log that is whole when it first looks: the same digest and count as the log read
    # after; a closed log ending in a high-shares slot (no event after it) is no whole log, and it takes nothing.
    slots = SLOTS if closed else SLOTS + [_high(1, 1)]
    path = _log(tmp_path / "bbo.bbo", slots)
    follower = BboDigestFollower(path)
    follower.writer_ended()
    got = follower.result()
    if not closed:
        assert got is None
        return
    assert got is not None and (got.records, got.slots) == (5, len(SLOTS))
    assert got.digest == logs.bbo_digest(logs.read_bbo(path))
