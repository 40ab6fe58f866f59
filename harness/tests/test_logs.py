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

HEADER = logs.HEADER_SIZE


@pytest.fixture(scope="module")
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
    size = 24 + 4 * 8  # simulation, every stamp: the head, then read, decoded, book, published (FORMAT.md)
    cut = copy_with(run_dir, tmp_path / "cut.lat", raw[:HEADER + 100 * size + 17])
    with pytest.warns(logs.TruncatedLogWarning, match="17 trailing bytes"):
        log = logs.read_latency(cut)
    assert len(log.records) == 100 and not log.complete
    assert np.array_equal(log.records, full[:100])


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
    (lambda b: b[:14] + b"\x07\x00" + b[16:], "unknown log kind 7"),
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


def _latency_header(version: int, record_size: int, stages: int) -> bytearray:
    header = bytearray(HEADER)
    header[0:8] = b"ITCHBLOG"
    # version, header size, record size, kind latency, stage clock monotonic, no origin clock, finalized, 2 records
    struct.pack_into("<HHHHHHIQQ", header, 8, version, HEADER, record_size, 1, 1, 0, 1, 2, 0)
    header[120] = stages
    return header


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
    with pytest.raises(logs.LogFormatError, match="latency log format version 9, this reader knows 1, 2, 3"):
        logs.read_latency(path)
