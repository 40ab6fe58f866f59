"""The BBO log's digest taken while its writer writes it (analysis/bbo_follow.py): the same digest and stale flags
as a pass over the closed log, whatever the follower saw in between; nothing taken from a log never closed."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from itchbench import rundir
from itchbench.analysis import bbo_follow, logs
from itchbench.runs import runner

from live_helpers import config

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "nasdaq-day-sample.pcap"
_FLAGS_AT = logs.BBO_DTYPE.fields["flags"][1]


def _records(n: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    rec = np.zeros(n, logs.BBO_DTYPE)
    rec["seq"] = np.arange(1, n + 1) * 3
    rec["bid_px"], rec["bid_qty"] = rng.integers(1, 10**6, n), rng.integers(1, 10**4, n)
    rec["stock_locate"] = rng.integers(1, 9000, n)
    rec["flags"] = logs.WRITTEN | np.where(np.arange(n) >= n // 2, logs.FLAG_BOOK_MAY_BE_STALE, 0)
    return rec


def _write_as_the_gateway_does(path: Path, rec: np.ndarray, close: bool) -> None:
    """The log grown ahead of the writer in zeros, each record's fields stored before its flags byte, a few
    records at a time; closed (the header's count and finalized flag, the file cut to its records) or left."""
    size = rec.dtype.itemsize
    header = np.zeros(1, logs.HEADER_DTYPE)
    header["magic"], header["version"], header["header_size"] = logs.MAGIC, 1, logs.HEADER_SIZE
    header["record_size"], header["kind"] = size, logs.KIND_BBO
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        os.pwrite(fd, header.tobytes(), 0)
        os.ftruncate(fd, logs.HEADER_SIZE + 512 * size)
        for i, r in enumerate(rec):
            at = logs.HEADER_SIZE + i * size
            if at + size > os.fstat(fd).st_size:
                os.ftruncate(fd, at + 512 * size)
            raw = bytearray(r.tobytes())
            flags, raw[_FLAGS_AT] = raw[_FLAGS_AT], 0
            os.pwrite(fd, bytes(raw), at)
            os.pwrite(fd, bytes([flags]), at + _FLAGS_AT)
            if i % 97 == 0:
                time.sleep(0.001)
        if close:
            os.ftruncate(fd, logs.HEADER_SIZE + len(rec) * size)
            header["flags"], header["record_count"] = logs.FLAG_FINALIZED, len(rec)
            os.pwrite(fd, header.tobytes(), 0)
    finally:
        os.close(fd)


def test_the_digest_taken_while_the_log_grows_is_the_closed_logs(tmp_path):
    path = tmp_path / "bbo.bbo"
    rec = _records(30_000)
    follower = bbo_follow.BboDigestFollower(path)  # before the file exists, as beside a gateway starting
    writer = threading.Thread(target=_write_as_the_gateway_does, args=(path, rec, True))
    writer.start()
    writer.join()
    follower.writer_ended()
    got = follower.result()
    digest, stale = logs.digest_and_stale(logs.read_bbo(path))
    assert got is not None and (got.digest, got.stale, got.records) == (digest, stale, len(rec))
    assert stale.flagged == len(rec) // 2 and stale.lowest_flagged_seq == int(rec["seq"][len(rec) // 2])


def test_a_log_never_closed_gives_no_digest(tmp_path):
    path = tmp_path / "bbo.bbo"
    follower = bbo_follow.BboDigestFollower(path)
    _write_as_the_gateway_does(path, _records(2_000), close=False)
    follower.writer_ended()
    assert follower.result() is None


def test_a_gateway_that_writes_no_log_gives_no_digest(tmp_path):
    follower = bbo_follow.BboDigestFollower(tmp_path / "bbo.bbo")
    follower.writer_ended()
    assert follower.result() is None


def test_a_simulation_takes_the_followed_digest(tmp_path, monkeypatch):
    # Reconciliation reads the log for its digest only when the follower's does not cover it: here it does.
    def not_called(log):
        raise AssertionError(f"the BBO log {log.path} was read again for its digest")
    monkeypatch.setattr(logs, "digest_and_stale", not_called)
    run = runner.execute(config(SAMPLE, "sim"), "sim", root=tmp_path, echo=False)
    summary = rundir.read_json(run / "summary.json")
    monkeypatch.undo()
    assert summary["verdict"]["status"] == "lossless", summary["verdict"]["headline"]
    assert summary["bbo"]["digest"] == logs.bbo_digest(logs.read_bbo(run / "bbo.bbo"))
