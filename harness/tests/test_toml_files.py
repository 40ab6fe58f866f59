"""The TOML files a user writes (a scenario, a gateway's contract, a results store's thresholds), given bytes that
are not UTF-8: each refused with its own error, naming the file and the first byte that is not UTF-8. They had
ended in Python's UnicodeDecodeError and its traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from itchbench.gateways import contract
from itchbench.history import alerts
from itchbench.runs import scenario

# "name = " then Latin-1's "é" (0xe9), which UTF-8 takes for the start of a 3-byte character, then a quote: at byte 8.
NOT_UTF8 = b'name = "\xe9t\xe9"\n'
AT = NOT_UTF8.index(b"\xe9")


def _scenario(tmp_path: Path) -> Callable[[], object]:
    (tmp_path / "s.toml").write_bytes(NOT_UTF8)
    return lambda: scenario.load(tmp_path / "s.toml")


def _contract(tmp_path: Path) -> Callable[[], object]:
    (tmp_path / contract.FILE_NAME).write_bytes(NOT_UTF8)
    return lambda: contract.load(tmp_path)


def _thresholds(tmp_path: Path) -> Callable[[], object]:
    (tmp_path / alerts.THRESHOLDS_FILE).write_bytes(NOT_UTF8)
    return lambda: alerts.stored_thresholds(tmp_path)


@pytest.mark.parametrize("write, error, name", [
    (_scenario, scenario.ScenarioError, "s.toml"),
    (_contract, contract.ContractError, contract.FILE_NAME),
    (_thresholds, alerts.ThresholdError, alerts.THRESHOLDS_FILE),
])
def test_a_toml_file_that_is_not_utf8_is_refused_naming_the_byte(tmp_path, write, error, name):
    load = write(tmp_path)
    with pytest.raises(error) as refused:
        load()
    assert str(refused.value) == f"{tmp_path / name}: not UTF-8 text, as TOML must be (byte {AT}: 0xe9)"
