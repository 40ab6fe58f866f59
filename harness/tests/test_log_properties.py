"""Property-based tests (hypothesis) of the log readers over cut and
corrupted logs: whatever happened to the file, a reader either refuses it
with LogFormatError or returns a prefix of the records that were written —
never a misread record, never another exception. The reference is the
untouched log of a real run."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itchbench.analysis import logs
from itchbench.captures import fixtures
from itchbench.runs import sim

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="session")
def original(tmp_path_factory) -> dict[str, bytes]:
    fx = next(f for f in fixtures.load_manifest() if f.name == "seed-workload")
    run = sim.run_sim(fx.path, tmp_path_factory.mktemp("run") / "run", echo=False)
    return {"bbo": (run / "bbo.bbo").read_bytes(), "latency": (run / "latency.lat").read_bytes()}


def read(tmp_path: Path, data: bytes) -> logs.LogFile | None:
    path = tmp_path / "log"
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", logs.TruncatedLogWarning)
        try:
            log = logs.read_log(path)
            log.records  # a compact log is decoded on first use: a damaged one may be refused only then
            return log
        except logs.LogFormatError:
            return None


def head(kind: str) -> int:
    """Where the records start: a latency log's header carries its clock line too (FORMAT.md, versions 4 and 5)."""
    return logs.LATENCY_V4_HEADER_SIZE if kind == "latency" else logs.HEADER_SIZE


def layout(data: bytes, kind: str) -> np.dtype:
    """The original log's layout as stored: the gateway writes a latency log as compact 20-byte slots (version 5:
    messages and escapes)."""
    return logs.BBO_DTYPE if kind == "bbo" else logs.COMPACT_SLOT_DTYPE


def records_of(data: bytes, kind: str) -> np.ndarray:
    dtype = layout(data, kind)
    body = data[head(kind):]
    return np.frombuffer(body[: len(body) // dtype.itemsize * dtype.itemsize], dtype=dtype)


def assert_prefix(got: logs.LogFile, data: bytes, kind: str) -> None:
    """What was read is a prefix of what was written: the stored slots, and for a compact latency log the messages
    decoded from them (every message slot they hold; escapes after the last one belong to a message not read)."""
    full = records_of(data, kind)
    assert len(got.stored) <= len(full)
    assert got.stored.tobytes() == full[: len(got.stored)].tobytes()
    if got.compact_stages is not None:
        messages = int(np.count_nonzero((got.stored["flags"] & logs.ESCAPE_SLOT) == 0))
        decoded = logs.decode_compact(Path("original"), full, got.compact_stages, logs.CompactState())[0]
        assert len(got.records) == messages
        assert got.records.tobytes() == decoded[:messages].tobytes()


@SETTINGS
@given(kind=st.sampled_from(["bbo", "latency"]), cut=st.floats(0, 1))
def test_a_cut_log_reads_to_its_last_whole_record(original, tmp_path, kind, cut):
    data = original[kind]
    n = int(cut * len(data))
    got = read(tmp_path, data[:n])
    if n < head(kind):
        assert got is None
        return
    assert got is not None
    size = layout(data, kind).itemsize
    assert len(got.stored) == (n - head(kind)) // size
    assert_prefix(got, data, kind)
    assert got.complete == (n == len(data))


@SETTINGS
@given(kind=st.sampled_from(["bbo", "latency"]), cut=st.floats(0, 1), data=st.data())
def test_a_crashed_writer_log_reads_to_its_first_unwritten_record(original, tmp_path, kind, cut, data):
    raw = bytearray(original[kind])
    raw[20] &= ~logs.FLAG_FINALIZED  # as if the writer never closed it
    dtype = layout(original[kind], kind)
    size = dtype.itemsize
    whole = (len(raw) - head(kind)) // size
    unwritten = data.draw(st.integers(0, whole))
    flag_at = head(kind) + unwritten * size + dtype.fields["flags"][1]
    if unwritten < whole:
        raw[flag_at] &= ~logs.WRITTEN  # that record's flags byte never stored
    n = head(kind) + int(cut * (len(raw) - head(kind)))
    got = read(tmp_path, bytes(raw[:n]))
    assert got is not None and not got.complete
    assert len(got.stored) == min(unwritten, (n - head(kind)) // size)
    assert_prefix(got, bytes(raw), kind)


@SETTINGS
@given(kind=st.sampled_from(["bbo", "latency"]), flips=st.lists(st.tuples(st.integers(0, 127), st.integers(0, 255)),
                                                                min_size=1, max_size=4))
def test_a_damaged_header_is_refused_or_read_as_a_prefix(original, tmp_path, kind, flips):
    raw = bytearray(original[kind])
    for at, value in flips:
        raw[at] = value
    got = read(tmp_path, bytes(raw))
    if got is not None:  # still a valid header: what is read is what was written
        assert_prefix(got, original[kind], got.kind)


@SETTINGS
@given(garbage=st.binary(min_size=0, max_size=600))
def test_garbage_is_refused_with_a_clear_error(tmp_path, garbage):
    got = read(tmp_path, garbage)
    assert got is None or garbage[:8] == logs.MAGIC
