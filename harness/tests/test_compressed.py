"""Compressed captures (gzip, zstd) of each kind — pcap, pcapng, binary ITCH —
read as a stream by the gateway and itch-inspect, decompressed once for the
tools that need a plain file. The reference for every result is the same
capture uncompressed."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from itchbench import rundir
from itchbench.captures import fixtures
from itchbench.captures.digest import sim_bbo
from itchbench.captures.inspect import CaptureError, check_capture, inspect_capture
from itchbench.runs import runner

from live_helpers import config, make_capture

SEED = next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload")


def _gzip(src: Path, dst: Path) -> Path:
    with open(src, "rb") as a, gzip.open(dst, "wb") as b:
        shutil.copyfileobj(a, b)
    return dst


def _zstd(src: Path, dst: Path) -> Path:
    subprocess.run(["zstd", "-q", "-f", str(src), "-o", str(dst)], check=True)
    return dst


@pytest.fixture(scope="session")
def plain(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("plain")
    pcapng = tmp / "seed.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(SEED.path), str(pcapng)], check=True)
    itch = make_capture(tmp, "day.itch", "--profile", "nasdaq-day", "--messages", "5000", "--format", "itch",
                        "--seed", "4")
    return {"pcap": SEED.path, "pcapng": pcapng, "itch": itch}


@pytest.mark.parametrize("kind", ["pcap", "pcapng", "itch"])
@pytest.mark.parametrize("compress", [_gzip, _zstd], ids=["gzip", "zstd"])
def test_a_compressed_capture_reads_as_the_plain_one(plain, kind, compress, tmp_path):
    packed = compress(plain[kind], tmp_path / f"capture.{kind}.packed")  # the name says nothing: content decides
    assert check_capture(packed)
    a, b = inspect_capture(plain[kind]), inspect_capture(packed)
    assert a["decode"]["per_type"] == b["decode"]["per_type"] and sum(a["decode"]["per_type"].values()) > 1000
    assert sim_bbo(packed) == sim_bbo(plain[kind])  # the BBO digest and events of the plain capture
    if kind == "pcap":
        assert sim_bbo(packed)[0] == SEED.golden["bbo_digest"]


def test_garbage_inside_gzip_is_refused_by_name(tmp_path):
    bad = tmp_path / "notes.gz"
    with gzip.open(bad, "wb") as f:
        f.write(b"these are not packets\n" * 100)
    with pytest.raises(CaptureError, match="gzip-compressed data that is neither a pcap"):
        check_capture(bad)


def test_a_cut_compressed_capture_ends_in_an_error_never_as_whole(plain, tmp_path):
    packed = _gzip(plain["pcap"], tmp_path / "seed.pcap.gz")
    cut = tmp_path / "cut.pcap.gz"
    cut.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    values = config(cut, "sim")
    run = runner.execute(values, "cut", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert not s["complete"] and s["verdict"]["exit_status"] == 1
    assert s["verdict"]["headline"].startswith("INCOMPLETE")


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
@pytest.mark.parametrize("sender", ["tcpreplay", "udp-replay"])
def test_a_compressed_capture_replays_over_udp_with_either_sender(plain, sender, tmp_path):
    packed = _zstd(plain["pcap"], tmp_path / "seed.pcap.zst")
    values = config(packed, "udp", replay={"sender": sender, "rate": "pps", "pps": 20000}, subscribers=1)
    run = runner.execute(values, f"zst-{sender}", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["lossless"], s["verdict"]["headline"]
    assert s["bbo"]["digest"] == SEED.golden["bbo_digest"]


@pytest.mark.parametrize("compress", [_gzip, _zstd], ids=["gzip", "zstd"])
def test_itch2pcap_converts_a_compressed_day_to_the_same_pcap(plain, compress, tool, tmp_path):
    packed = compress(plain["itch"], tmp_path / "day.itch.packed")
    a, b = tmp_path / "plain.pcap", tmp_path / "packed.pcap"
    assert tool("itch2pcap", plain["itch"], "--out", a).returncode == 0
    r = tool("itch2pcap", packed, "--out", b)
    assert r.returncode == 0, r.stderr
    assert a.read_bytes() == b.read_bytes()
    cut = tmp_path / "cut.itch.packed"
    cut.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    r = tool("itch2pcap", cut, "--out", tmp_path / "cut.pcap")
    # Refused at the start (nothing decompresses) or where the data ends: an error either way, no pcap.
    assert r.returncode == 1 and str(cut) in r.stderr and not (tmp_path / "cut.pcap").exists()


def test_a_compressed_itch_file_is_counted_beside_its_run_and_held_to_that_count(plain, tmp_path, monkeypatch):
    # The count of a compressed binary ITCH file runs beside the gateway (runner._count_beside_the_run), and the
    # run is still reconciled with it: the summary's expected messages are itch-inspect's count of the plain file.
    from itchbench.captures import inspect as inspect_module
    counted_on: list[str] = []
    original = inspect_module._read_facts

    def recording(capture: Path, feed: str):
        counted_on.append(threading.current_thread().name)
        return original(capture, feed)

    monkeypatch.setattr(inspect_module, "_read_facts", recording)
    packed = _gzip(plain["itch"], tmp_path / "day.itch.gz")
    run = runner.execute(config(packed, "sim"), "beside", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["headline"].startswith("LOSSLESS"), s["verdict"]
    expected = inspect_capture(plain["itch"])["capture_stats"]["itch_messages"]
    assert s["reconciliation"]["capture_messages"] == expected > 1000
    assert [name.split("_")[0] for name in counted_on] == ["count-beside"]  # counted once, beside the run


def test_a_cut_compressed_itch_file_counted_beside_its_run_ends_incomplete(plain, tmp_path):
    packed = _gzip(plain["itch"], tmp_path / "day.itch.gz")
    cut = tmp_path / "cut.itch.gz"
    cut.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    run = runner.execute(config(cut, "sim"), "cut-itch", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert not s["complete"] and s["verdict"]["exit_status"] == 1
    assert s["verdict"]["headline"].startswith("INCOMPLETE")


@pytest.mark.parametrize("mutant", [None, "cpp-empty-level-kept"], ids=["correct", "mutant"])
def test_a_brought_gateway_reading_a_gzip_itch_file_counted_beside_is_judged_as_ever(mutant, plain, tmp_path):
    # The C++ example reads the compressed file itself while itch-inspect counts it beside the run: the correct
    # example is LOSSLESS, held to that count; the zoo's mutant that leaves a level at zero shares is BBO DIFFERS.
    from itchbench.selftest import zoo
    edits = next(m.edits for m in zoo.MUTANTS if m.name == mutant) if mutant else ()
    gateway = zoo.materialise(zoo.CPP, edits, tmp_path / "gw")
    packed = _gzip(plain["itch"], tmp_path / "day.itch.gz")
    values = {**config(packed, "sim"), "gateway_file": str(gateway / "itchbench.toml")}
    run = runner.execute(values, "brought", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    expected = inspect_capture(plain["itch"])["capture_stats"]["itch_messages"]
    if mutant is None:
        assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
        assert f"{expected:,} messages in the capture it reads itself" in s["verdict"]["headline"]
    else:
        assert s["verdict"]["status"] == "bbo_differs" and s["verdict"]["exit_status"] == 1, s["verdict"]["headline"]
