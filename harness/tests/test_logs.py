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
    cut = copy_with(run_dir, tmp_path / "cut.lat", raw[:HEADER + 100 * 64 + 17])
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


def test_an_unknown_version_is_refused_by_name(run_dir, tmp_path):
    raw = bytearray((run_dir / "latency.lat").read_bytes())
    raw[8] = 9
    path = tmp_path / "v9.lat"
    path.write_bytes(bytes(raw))
    with pytest.raises(logs.LogFormatError, match="latency log format version 9, this reader knows 1, 2"):
        logs.read_latency(path)
