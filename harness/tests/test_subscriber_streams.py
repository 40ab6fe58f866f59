"""What a TCP subscriber received, held to the BBO log whatever else happened to it (docs/verdicts.md): dropped
to, or cut off by the gateway, it may have fewer frames, never others, changed ones or ones out of order."""

from __future__ import annotations

import numpy as np
import pytest

from itchbench.analysis import logs
from itchbench.runs import reconcile


def _log(n: int) -> np.ndarray:
    r = np.zeros(n, dtype=logs.BBO_DTYPE)
    r["seq"] = np.arange(1, n + 1) * 3
    r["stock_locate"] = np.arange(n) % 4 + 1
    r["bid_px"] = 1_000_000 + np.arange(n)
    return r


LOG = _log(10)


def _got(rows: list[int]) -> bytes:
    return LOG[rows].tobytes()


@pytest.mark.parametrize("rows, first_wrong", [
    (list(range(10)), None),           # all of it
    ([0, 1, 2], None),                 # cut off after three
    ([0, 2, 5, 9], None),              # some dropped to it
    ([], None),                        # nothing
    ([0, 2, 1, 3], 2),                 # one arrived after a later one
    ([0, 1, 1, 2], 2),                 # one twice
])
def test_received_frames_must_be_the_logs_in_its_order(rows, first_wrong):
    assert reconcile._first_frame_not_in_log(_got(rows), LOG.tobytes()) == first_wrong


def test_a_frame_with_one_byte_changed_or_one_the_log_lacks_is_named():
    changed = LOG[[0, 1, 2]].copy()
    changed["bid_qty"][1] += 1
    assert reconcile._first_frame_not_in_log(changed.tobytes(), LOG.tobytes()) == 1
    alien = LOG[[0, 1]].copy()
    alien["seq"][1] = 4  # a seq the log has no event for
    assert reconcile._first_frame_not_in_log(alien.tobytes(), LOG.tobytes()) == 1
    # Frames torn by a write that shifted the stream by a few bytes: none of them is the log's.
    assert reconcile._first_frame_not_in_log(LOG.tobytes()[5:53 * 3], LOG.tobytes()) == 0
