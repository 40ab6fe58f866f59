"""Log readers against cut, crashed and corrupt files."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

from itchbench.analysis import latency_pass, logs
from itchbench.captures import fixtures
from itchbench.runs import sim
from stamps_in_ns import stamps_in_ns

HEADER = logs.HEADER_SIZE


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    return sim.run_sim(fixtures.load_manifest()[1].path, tmp_path_factory.mktemp("logs") / "run", echo=False)


def copy_with(src: Path, dst: Path, data: bytes) -> Path:
    dst.write_bytes(data)
    return dst


def test_whole_log_reads_without_warnings(run_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = logs.read_bbo(run_dir / "bbo.bbo")
    assert log.complete and len(log.records) == log.header["record_count"] > 0


def test_cut_mid_record_reads_whole_records_with_a_warning(run_dir, tmp_path):
    raw = (run_dir / "latency.lat").read_bytes()
    full = logs.read_latency(run_dir / "latency.lat").records
    size, head = 20, 160  # a compact log (version 5): 20-byte slots after the 160-byte header (FORMAT.md)
    cut = copy_with(run_dir, tmp_path / "cut.lat", raw[:head + 100 * size + 17])
    with pytest.warns(logs.TruncatedLogWarning, match="17 trailing bytes"):
        log = logs.read_latency(cut)
    # The messages among the first 100 slots: those whose flags byte (the slot's last) lacks the escape bit 0x40.
    messages = sum(1 for k in range(100) if not raw[head + k * size + 19] & 0x40)
    # The first message escapes its base (so fewer than 100); how many more escape depends on the stamps' gaps, so on
    # how busy the machine was: the count is read from the bytes above, never assumed.
    assert 0 < messages < 100
    assert len(log.records) == messages and not log.complete
    assert np.array_equal(log.records, full[:messages])


def test_crashed_writer_is_read_to_the_last_written_record(run_dir, tmp_path):
    raw = bytearray((run_dir / "bbo.bbo").read_bytes())
    n = (len(raw) - HEADER) // 48
    raw[20:24] = b"\0\0\0\0"                     # not finalized
    raw[24:32] = b"\0" * 8                       # no count
    keep = n // 2
    raw[HEADER + keep * 48:] = b"\0" * (len(raw) - HEADER - keep * 48)  # zeros after, as mapped pages
    raw += b"\0" * 48 * 1000
    with pytest.warns(logs.TruncatedLogWarning, match="never closed"):
        log = logs.read_bbo(copy_with(run_dir, tmp_path / "crash.bbo", bytes(raw)))
    assert len(log.records) == keep


def test_finalized_count_larger_than_the_file(run_dir, tmp_path):
    raw = (run_dir / "bbo.bbo").read_bytes()
    with pytest.warns(logs.TruncatedLogWarning, match="header counts"):
        log = logs.read_bbo(copy_with(run_dir, tmp_path / "short.bbo", raw[:HEADER + 48 * 10]))
    assert len(log.records) == 10


@pytest.mark.parametrize("mutate, message", [
    (lambda b: b[:50], "shorter than the 128-byte log header"),
    (lambda b: b"NOTALOG!" + b[8:], "not an itchbench log"),
    (lambda b: b[:8] + b"\x09\x00" + b[10:], "version 9"),
    (lambda b: b[:12] + b"\x20\x00" + b[14:], "record size 32"),
    (lambda b: b[:14] + b"\x63\x00" + b[16:], "unknown log kind 99"),
])
def test_corrupt_headers_are_errors_not_misreads(run_dir, tmp_path, mutate, message):
    bad = copy_with(run_dir, tmp_path / "bad.bbo", mutate((run_dir / "bbo.bbo").read_bytes()))
    with pytest.raises(logs.LogFormatError, match=message):
        logs.read_bbo(bad)


def test_wrong_kind_is_an_error(run_dir):
    with pytest.raises(logs.LogFormatError, match="a latency log, expected a bbo log"):
        logs.read_bbo(run_dir / "latency.lat")


def test_empty_file(tmp_path):
    empty = tmp_path / "e.bbo"
    empty.write_bytes(b"")
    with pytest.raises(logs.LogFormatError, match="0 bytes"):
        logs.read_bbo(empty)


def test_a_version_1_latency_log_is_still_read(tmp_path):
    """Version 1 (56-byte records, one t_receive), written here byte by byte from FORMAT.md's layout."""
    header = bytearray(HEADER)
    header[0:8] = b"ITCHBLOG"
    struct.pack_into("<HHHHHHIQQ", header, 8, 1, HEADER, 56, 1, 1, 0, 1, 2, 0)  # v1, latency, monotonic, finalized
    recs = b"".join(struct.pack("<QQQQQQHcB4x", seq, 0, 1000 * seq, 1000 * seq + 70, 1000 * seq + 100, 0, 7, b"A", 0x80)
                    for seq in (1, 2))
    path = tmp_path / "latency.lat"
    path.write_bytes(bytes(header) + recs)
    log = logs.read_latency(path)
    assert log.header["version"] == 1 and log.complete and list(log.records["seq"]) == [1, 2]
    lat = latency_pass.scan(tmp_path)
    assert [name for name, _ in lat.stages] == ["decode", "book", "receive_to_book"]  # no wake-up or parse hop in v1
    for stage, value in (("decode", 70), ("book", 30)):
        v, c = lat.stage[stage].values_counts()
        assert list(v) == [value] and list(c) == [2]


def _latency_header(version: int, record_size: int, stages: int, stage_clock: int = 1,
                    header_size: int = HEADER) -> bytearray:
    header = bytearray(header_size)
    header[0:8] = b"ITCHBLOG"
    # version, header size, record size, kind latency, stage clock, no origin clock, finalized, 2 records
    struct.pack_into("<HHHHHHIQQ", header, 8, version, header_size, record_size, 1, stage_clock, 0, 1, 2, 0)
    header[120] = stages
    return header


# A clock line for version 4, by hand: a 3 GHz TSC is 1/3 ns a tick, 0x55555555 in 32.32 fixed point.
TSC0, NS0, Q32 = 10**6, 5 * 10**9, 0x55555555


def _v4_log(path: Path, read_ticks: list[int], book_ticks: list[int], q32: int = Q32, stage_clock: int = 3) -> Path:
    """Version 4, stages read and book, stamps as raw ticks (stage_clock 3) after a 160-byte header whose last 32
    bytes are the clock line (FORMAT.md)."""
    header = _latency_header(4, 40, 0b01010, stage_clock=stage_clock, header_size=160)
    struct.pack_into("<QQQQ", header, 128, TSC0, NS0, q32, 0)
    recs = b"".join(struct.pack("<QQHcB4xQQ", seq, 0, 7, b"A", 0x80, r, b)
                    for seq, (r, b) in enumerate(zip(read_ticks, book_ticks), 1))
    path.write_bytes(bytes(header) + recs)
    return path


def test_a_version_4_log_of_raw_ticks_is_read_in_ns(tmp_path):
    # 3,000 ticks on is 999 ns, not 1,000 (0x55555555 is (2^32 - 1) / 3, and the product is floored); 2^40 ticks
    # on (~6 minutes: the 64-bit product would overflow without the halves) is 2^8 * 0x55555555 ns exactly.
    # Book 750 ticks after read: 250 ns, or 249 where the floors fall the other way.
    read = [TSC0 + 3000, TSC0 + (1 << 40)]
    book = [t + 750 for t in read]
    path = _v4_log(tmp_path / "latency.lat", read, book)
    log = logs.read_latency(path)
    assert log.header["version"] == 4 and log.header["stage_clock"] == "tsc-ticks" and log.complete
    assert list(log.records["t_read"]) == read  # as stored
    want_read, want_book = (list(stamps_in_ns(path, np.array(t, np.uint64))) for t in (read, book))
    ns = logs.in_ns(log, log.records)
    assert list(ns["t_read"]) == want_read == [NS0 + 999, NS0 + 0x5555555500]
    assert list(ns["t_book"]) == want_book
    assert [int(c["t_book"][0]) for c in logs.iter_records(log, 1)] == want_book  # one buffer, reused
    lat = latency_pass.scan(tmp_path)
    v, c = lat.stage["receive_to_book"].values_counts()
    assert sorted(np.repeat(v, c)) == sorted(b - r for r, b in zip(want_read, want_book)) == [249, 250]


def test_a_zero_stamp_of_raw_ticks_stays_zero(tmp_path):
    log = logs.read_latency(_v4_log(tmp_path / "latency.lat", [TSC0 + 300, TSC0 + 600], [TSC0 + 450, 0]))
    assert list(logs.in_ns(log, log.records)["t_book"]) == [NS0 + 149, 0]  # 450 / 3 - 2^-32 * 450 / 3, floored


@pytest.mark.parametrize("q32, stage_clock, message", [
    (0, 3, "outside 1"),
    (1 << 32, 3, "outside 1"),
])
def test_a_version_4_clock_line_that_cannot_convert_is_refused(tmp_path, q32, stage_clock, message):
    with pytest.raises(logs.LogFormatError, match=message):
        logs.read_latency(_v4_log(tmp_path / "latency.lat", [TSC0 + 1], [TSC0 + 2], q32=q32, stage_clock=stage_clock))


def test_raw_ticks_without_a_clock_line_are_refused(tmp_path):
    path = tmp_path / "latency.lat"
    path.write_bytes(bytes(_latency_header(3, 40, 0b01010, stage_clock=3)) + bytes(80))
    with pytest.raises(logs.LogFormatError, match="no clock line"):
        logs.read_latency(path)


def test_a_run_logs_raw_ticks_that_map_onto_its_own_clock(run_dir):
    """The gateway's own log: version 5, the line its clock fitted, and stamps that land between the anchor and
    the end-of-run measurement it reports in gateway.json (both CLOCK_MONOTONIC ns)."""
    import json
    clock = json.loads((run_dir / "gateway.json").read_text())["clock"]
    log = logs.read_latency(run_dir / "latency.lat")
    assert log.header["version"] == 5
    if clock["stage"] != "tsc":
        pytest.skip("no invariant TSC here: the stamps are CLOCK_MONOTONIC ns")
    assert log.header["stage_clock"] == "tsc-ticks" and log.clock_line.ns0 == clock["anchor_ns"]
    book = logs.in_ns(log, log.records)["t_book"]
    assert book.min() >= clock["anchor_ns"] and book.max() <= clock["offset_measured_at_ns"]
    assert not (log.records["t_book"] == book).all()  # stored as ticks, not as ns


def test_a_version_2_latency_log_is_still_read(tmp_path):
    """Version 2 (64-byte records, all five stamps, zero where not stamped), byte by byte from FORMAT.md."""
    recs = b"".join(struct.pack("<QQQQQQQHcB4x", seq, 0, 0, 1000 * seq, 1000 * seq + 40, 1000 * seq + 100, 0, 7, b"A",
                                0x80) for seq in (1, 2))
    (tmp_path / "latency.lat").write_bytes(bytes(_latency_header(2, 64, 0)) + recs)
    log = logs.read_latency(tmp_path / "latency.lat")
    assert log.header["version"] == 2 and log.complete and list(log.records["t_read"]) == [1000, 2000]
    lat = latency_pass.scan(tmp_path)
    assert [name for name, _ in lat.stages] == ["parse", "decode", "book", "receive_to_book"]
    for stage, value in (("parse", 40), ("book", 60), ("receive_to_book", 100)):
        v, c = lat.stage[stage].values_counts()
        assert list(v) == [value] and list(c) == [2]


def test_a_version_3_latency_log_holds_the_stages_its_header_names(tmp_path):
    """Version 3 with stages read and book (bits 1 and 3): a 24-byte head, then t_read and t_book, byte by byte
    from FORMAT.md. The stages it does not hold read as zero and are left out."""
    recs = b"".join(struct.pack("<QQHcB4xQQ", seq, 0, 7, b"A", 0x80, 1000 * seq, 1000 * seq + 250) for seq in (1, 2))
    (tmp_path / "latency.lat").write_bytes(bytes(_latency_header(3, 40, 0b01010)) + recs)
    log = logs.read_latency(tmp_path / "latency.lat")
    assert log.header["stages"] == ["t_read", "t_book"] and log.complete
    assert list(log.records["t_book"]) == [1250, 2250] and list(log.records["stock_locate"]) == [7, 7]
    assert list(logs.stamp(log.records, "t_decoded")) == [0, 0]
    lat = latency_pass.scan(tmp_path)
    assert [name for name, _ in lat.stages] == ["receive_to_book"]
    v, c = lat.stage["receive_to_book"].values_counts()
    assert list(v) == [250] and list(c) == [2]


@pytest.mark.parametrize("record_size, stages, message", [
    (40, 0b100010, "unknown stages"),      # a stage bit beyond published
    (48, 0b01010, "do not match"),         # two stages make 40-byte records, not 48
])
def test_a_version_3_header_that_disagrees_with_itself_is_refused(tmp_path, record_size, stages, message):
    path = tmp_path / "latency.lat"
    path.write_bytes(bytes(_latency_header(3, record_size, stages)) + bytes(2 * record_size))
    with pytest.raises(logs.LogFormatError, match=message):
        logs.read_latency(path)


def test_a_latency_log_written_by_the_harness_reads_back_whole(tmp_path):
    path = tmp_path / "w.lat"
    w = logs.LogWriter(path, logs.KIND_LATENCY, stage_clock=1)
    rec = np.zeros(3, logs.FORMATS[(logs.KIND_LATENCY, 3)])
    rec["seq"], rec["t_book"] = [1, 2, 3], [10, 20, 30]
    w.append(rec)
    w.close()
    log = logs.read_latency(path)
    assert log.complete and log.header["stages"] == list(logs.STAGE_STAMPS) and log.header["record_size"] == 64
    assert list(log.records["t_book"]) == [10, 20, 30]


def test_an_unknown_version_is_refused_by_name(run_dir, tmp_path):
    raw = bytearray((run_dir / "latency.lat").read_bytes())
    raw[8] = 9
    path = tmp_path / "v9.lat"
    path.write_bytes(bytes(raw))
    with pytest.raises(logs.LogFormatError, match="latency log format version 9, this reader knows 1, 2, 3, 4"):
        logs.read_latency(path)
