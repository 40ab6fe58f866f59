"""What every reader of a log of slots (the depth log's version 3, the BBO log's version 2) must do with slots out of
their order: refuse them, naming the slot, whether it reads the log whole, digests it, or reads it a slot at a time."""

from __future__ import annotations

import pytest

from itchbench.analysis import logs


def assert_refused_everywhere(log: logs.LogFile, words: str) -> None:
    with pytest.raises(logs.LogFormatError, match=words):
        log.records
    with pytest.raises(logs.LogFormatError, match=words):
        logs.bbo_digest(log)
    with pytest.raises(logs.LogFormatError, match=words):  # a slot at a time: the slot named by its place in the log
        list(logs.iter_records(log, 1))
