"""Every input kind × every compression × simulation and UDP: the run
balances and holds exactly one latency record per message.

The expected counts come from outside the gateway: a walk of the binary
ITCH file's length prefixes written here, and Wireshark's MoldUDP64 dissector
(tshark) for pcap and pcapng. Compressed files are made by the gzip and zstd
command-line tools in several members/frames, and are larger, once
decompressed, than any first guess the gateway makes from their size on disk
(its log reservation) or any read buffer (1 MiB walk, 4 MiB read-ahead)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from itchbench import rundir
from itchbench.runs import runner

from live_helpers import config, itch_file_messages, make_capture

PORT = 26400
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def tshark_messages(path: Path) -> int:
    out = subprocess.run(["tshark", "-r", str(path), "-d", f"udp.port=={PORT},moldudp64", "-T", "fields",
                          "-e", "moldudp64.count"], capture_output=True, text=True, check=True).stdout
    return sum(int(n) for line in out.splitlines() for n in line.split(",") if n and int(n) != 0xFFFF)


def in_pieces(tool: str, plain: Path, out: Path, pieces: int = 3) -> Path:
    """`tool` (gzip or zstd) over `pieces` slices of the file, concatenated: several gzip members or zstd
    frames, which a reader must all decompress."""
    data = plain.read_bytes()
    cuts = [len(data) * i // pieces for i in range(pieces + 1)]
    with open(out, "wb") as f:
        for a, b in zip(cuts, cuts[1:]):
            f.write(subprocess.run([tool, "-c", "-q"] if tool == "zstd" else [tool, "-c"], input=data[a:b],
                                   capture_output=True, check=True).stdout)
    return out


@pytest.fixture(scope="session")
def inputs(tmp_path_factory) -> dict[str, tuple[Path, int]]:
    """Each kind, plain: (path, messages counted independently). Sim gets 200,000 messages (6 MB as a binary
    ITCH file, which gzip makes 2.5 MB: its size on disk guesses 177,000 records); UDP 20,000."""
    tmp = tmp_path_factory.mktemp("matrix")
    out: dict[str, tuple[Path, int]] = {}
    for size, messages in (("large", 200_000), ("small", 20_000)):
        itch = make_capture(tmp, f"{size}.itch", "--profile", "nasdaq-day", "--messages", str(messages),
                            "--format", "itch", "--seed", "7")
        pcap = make_capture(tmp, f"{size}.pcap", "--profile", "nasdaq-day", "--messages", str(messages),
                            "--seed", "7", "--port", str(PORT))
        pcapng = tmp / f"{size}.pcapng"
        subprocess.run(["editcap", "-F", "pcapng", str(pcap), str(pcapng)], check=True)
        out[f"itch-{size}"] = (itch, itch_file_messages(itch.read_bytes()))
        out[f"pcap-{size}"] = (pcap, tshark_messages(pcap))
        out[f"pcapng-{size}"] = (pcapng, tshark_messages(pcapng))
    for key, (_, n) in out.items():
        assert n == (200_000 if key.endswith("large") else 20_000), key  # the generator's own count agrees
    return out


@pytest.mark.parametrize("transport", ["sim", pytest.param("udp", marks=pytest.mark.skipif(
    os.geteuid() != 0, reason="network namespaces need root"))])
@pytest.mark.parametrize("compression", ["plain", "gzip", "zstd"])
@pytest.mark.parametrize("kind", ["itch", "pcap", "pcapng"])
def test_every_input_balances_with_one_latency_record_per_message(inputs, kind, compression, transport, tmp_path):
    plain, expected = inputs[f"{kind}-{'large' if transport == 'sim' else 'small'}"]
    capture = plain if compression == "plain" else in_pieces(compression, plain, tmp_path / f"{plain.name}.packed")
    tables = {} if transport == "sim" else {"replay": {"rate": "pps", "pps": 20000}}
    run = runner.execute(config(capture, transport, **tables), f"{kind}-{compression}", root=tmp_path / "runs",
                         echo=False)
    s = rundir.read_json(run / "summary.json")
    rec = s["reconciliation"]
    assert s["verdict"]["status"] == "lossless" and s["verdict"]["exit_status"] == 0, s["verdict"]["headline"]
    assert rec["received"] == expected
    assert rec["latency_records"] == expected
    assert rec["loss"]["expected_messages"] == expected
