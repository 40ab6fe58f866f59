"""A white box's own latency log is held together before its stages are reported (gateways/white_box.py): logs
written by the writer teams copy (gateway/log/whitebox/itchbench_stamps.py), each broken one way, and what the run
must then say, counted by hand from the records written here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths
from itchbench.gateways import white_box

_spec = importlib.util.spec_from_file_location(
    "itchbench_stamps", paths.repo_root() / "gateway" / "log" / "whitebox" / "itchbench_stamps.py")
stamps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stamps)

STAGES = stamps.READ | stamps.DECODED | stamps.BOOK


def _log(path: Path, rows: list[tuple[int, tuple[int, int, int]]], close: bool = True) -> Path:
    """rows: (seq, (read, decoded, book)); every record an add of stock 1."""
    path.parent.mkdir(parents=True, exist_ok=True)
    log = stamps.LatencyLog(str(path), STAGES)
    for seq, st in rows:
        log.record(seq, b"A", 1, 0, st)
    if close:
        log.close()
    else:
        log._file.close()  # flushed, the header never finalized: a gateway that exits without closing its log
    return path


def _in_order(seqs) -> list[tuple[int, tuple[int, int, int]]]:
    return [(s, (1000 * s, 1000 * s + 10, 1000 * s + 20)) for s in seqs]


@pytest.fixture
def reference(tmp_path) -> Path:
    return _log(tmp_path / "reference" / "latency.lat", _in_order(range(1, 6)))


def _checks(tmp_path: Path, reference: Path, rows, every_message: bool = True, close: bool = True) -> dict[str, bool]:
    _log(tmp_path / "out" / white_box.LOG, rows, close)
    return white_box.checks(tmp_path / "out", reference, every_message)


def test_a_log_of_every_message_in_stage_order_passes(tmp_path, reference):
    assert _checks(tmp_path, reference, _in_order(range(1, 6))) == {
        white_box.WRITTEN: True, white_box.IN_ORDER: True, white_box.ONE_A_MESSAGE: True}


def test_a_stage_stamped_before_an_earlier_one_is_named_at_its_first_record(tmp_path, reference):
    rows = _in_order(range(1, 6))
    rows[2] = (3, (3000, 3010, 3005))   # book before decoded
    rows[4] = (5, (5000, 0, 4999))      # decoded not stamped (0: did not happen), book before read
    rows[1] = (2, (2000, 0, 2001))      # decoded not stamped, book after read: in order
    got = _checks(tmp_path, reference, rows)
    assert got == {white_box.WRITTEN: True, white_box.ONE_A_MESSAGE: True,
                   f"{white_box.IN_ORDER}: 2 records with a stage stamped before the one before it (first: seq 3, "
                   "t_book before t_decoded)": False}


def test_missing_repeated_and_foreign_sequence_numbers_are_counted(tmp_path, reference):
    rows = _in_order([1, 3, 4, 4, 5, 9, 5, 0])  # 2 missing; 4 and 5 twice; 9 and 0 not in the capture
    got = _checks(tmp_path, reference, rows)
    assert got[f"{white_box.ONE_A_MESSAGE}: 1 of 5 messages have no record (first: seq 2); 2 recorded more than "
               "once (first: seq 4); 2 records of a sequence number the capture does not have (first: seq 9)"] is False
    # Where messages may not have reached it once (lost, recovered, joined), only the stamps are held.
    assert _checks(tmp_path / "lossy", reference, rows, every_message=False) == {
        white_box.WRITTEN: True, white_box.IN_ORDER: True}


def test_a_log_never_closed_or_never_written_fails(tmp_path, reference):
    got = _checks(tmp_path, reference, _in_order(range(1, 6)), close=False)
    assert got == {f"{white_box.WRITTEN}: log was never closed (writer crashed or still running): read 5 whole "
                   "records": False, white_box.IN_ORDER: True, white_box.ONE_A_MESSAGE: True}
    assert white_box.checks(tmp_path / "nothing", reference, True) == {
        f"{white_box.WRITTEN}: latency.lat is missing from nothing/": False}
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / white_box.LOG).write_bytes(b"not a log at all, but long enough to hold a header " * 4)
    [(name, ok)] = white_box.checks(tmp_path / "garbage", reference, True).items()
    assert not ok and name.startswith(f"{white_box.WRITTEN}: not an itchbench log")


def test_stamps_off_the_runs_clock_are_named_on_whichever_side_they_fall(tmp_path, reference):
    # Message s sent at 1000 s - 500 and its BBO event arrived at 1000 s + 500 (seq 4 published nothing): the log's
    # stamps (1000 s, + 10, + 20) lie between. On CLOCK_REALTIME they lie decades after the event; in µs, long
    # before the send; one stamp taken a microsecond early names that record alone.
    seqs = np.arange(1, 6)
    run = white_box.RunStamps(seqs, 1000 * seqs - 500, np.array([1, 2, 3, 5, 5]), np.array([1520, 2520, 3520, 5400,
                                                                                           5520]))
    def held(rows, name):
        _log(tmp_path / name / white_box.LOG, rows)
        return white_box.checks(tmp_path / name, reference, True, run)
    assert held(_in_order(seqs), "right")[white_box.ON_THE_CLOCK] is True
    wall = [(s, tuple(t + 1_764_000_000 * 10**9 for t in st)) for s, st in _in_order(seqs)]
    assert held(wall, "wall")[f"{white_box.ON_THE_CLOCK}: 4 records stamped after its BBO event arrived (first: "
                              "seq 1, 1,764,000,000.0 s after)"] is False
    micro = [(s, tuple(t // 1000 for t in st)) for s, st in _in_order(seqs)]
    assert held(micro, "micro")[f"{white_box.ON_THE_CLOCK}: 5 records stamped before its message was sent (first: "
                                "seq 1, 499 ns before)"] is False
    early = _in_order(seqs)
    early[2] = (3, (2499, 3010, 3020))  # read 1 ns before its message was sent
    assert held(early, "early")[f"{white_box.ON_THE_CLOCK}: 1 record stamped before its message was sent (first: "
                                "seq 3, 1 ns before)"] is False
    # Nothing stamped by itchbench on either side (the file read by the gateway itself): no such check made.
    assert white_box.ON_THE_CLOCK not in white_box.checks(tmp_path / "right", reference, True, white_box.RunStamps(
        *(np.zeros(0, np.int64),) * 4))


def test_a_log_is_held_to_one_record_a_message_only_where_each_message_came_once():
    plain = {"expected_messages": 8000}
    assert white_box.each_message_once(plain, lossless=True, recovering=False, faulted_capture=False)
    assert not white_box.each_message_once(plain, lossless=False, recovering=False, faulted_capture=False)
    assert not white_box.each_message_once(plain, lossless=True, recovering=True, faulted_capture=False)
    assert not white_box.each_message_once(plain, lossless=True, recovering=False, faulted_capture=True)
    # A serial line that corrupted lines (their messages never came), a capture sent three times over.
    assert not white_box.each_message_once({**plain, "corrupted_lines": 40}, True, False, False)
    assert white_box.each_message_once({**plain, "corrupted_lines": 0}, True, False, False)
    assert not white_box.each_message_once({**plain, "loops": 3}, True, False, False)


def test_a_count_in_the_thousands_is_said_as_the_headlines_say_it(tmp_path, reference):
    got = _checks(tmp_path, reference, _in_order(range(1, 1201)), close=False)
    assert f"{white_box.WRITTEN}: log was never closed (writer crashed or still running): read 1,200 whole " \
           "records" in got
