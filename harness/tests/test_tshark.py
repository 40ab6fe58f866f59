"""Independent check: Wireshark's MoldUDP64 dissector sees what our reader sees."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from itchbench.captures import fixtures
from itchbench.captures.inspect import message_sequences

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def tshark_sequences(path, port: int) -> list[int]:
    out = subprocess.run(
        ["tshark", "-r", str(path), "-d", f"udp.port=={port},moldudp64", "-T", "fields", "-e", "moldudp64.msgseq"],
        capture_output=True, text=True, check=True,
    ).stdout
    return [int(s) for line in out.splitlines() for s in line.split(",") if s]


@pytest.mark.parametrize("fx", fixtures.load_manifest(), ids=lambda f: f.name)
def test_tshark_agrees_on_count_and_sequences(fx):
    port = int(fx.args[fx.args.index("--port") + 1])
    theirs = tshark_sequences(fx.path, port)
    ours = message_sequences(fx.path)
    assert len(ours) > 0
    assert len(theirs) == len(ours)
    assert theirs == ours
