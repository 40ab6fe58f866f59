"""Feed selection on tap-like captures (tap_captures.py builds them byte by
byte): inspect names the flows and the feed and counts the rest by kind;
simulation reads only the feed and gives the fixture's golden BBO digest; a
UDP replay sends only the feed and balances; two sessions are refused by
name unless a feed is chosen. Expected counts come from the builder, the
digest from the fixture manifest, and tshark checks the builder."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from itchbench import rundir
from itchbench.captures import fixtures, inspect
from itchbench.captures.inspect import CaptureError, check_capture, inspect_capture
from itchbench.cli import main as itchbench_main
from itchbench.runs import runner

from live_helpers import config
from tap_captures import FEED, tap_capture, two_session_capture

SEED = next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload")
FEED_TEXT = f"{FEED[0]}:{FEED[1]}"
ROOT = os.geteuid() == 0


@pytest.fixture(scope="session")
def tap(tmp_path_factory):
    return tap_capture(SEED.path, tmp_path_factory.mktemp("tap") / "tap.pcap")


@pytest.fixture(scope="session")
def two_sessions(tmp_path_factory):
    return two_session_capture(SEED.path, tmp_path_factory.mktemp("two") / "two.pcap")


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_tshark_reads_the_built_capture_as_built(tap):
    """The builder is checked by a third party: frames, VLAN tags and the feed's datagrams."""
    def count(display_filter: str) -> int:
        out = subprocess.run(["tshark", "-r", str(tap.path), "-Y", display_filter, "-T", "fields", "-e",
                              "frame.number"], capture_output=True, text=True, check=True).stdout
        return len(out.split())

    assert count(f"ip.dst == {FEED[0]} && udp.dstport == {FEED[1]}") == tap.feed_datagrams
    assert count("arp") == tap.not_feed["not_ipv4"]
    assert count("vlan.id == 100 && udp.dstport == 26477") == 2 * tap.feed_datagrams // 3
    assert count("tcp") == tap.not_feed["not_udp"]


def test_inspect_names_the_feed_and_counts_what_is_not(tap):
    rep = inspect_capture(tap.path)
    cap = rep["capture_stats"]
    assert cap["feed"] == FEED_TEXT
    assert cap["udp_datagrams"] == tap.feed_datagrams
    assert cap["not_feed"] == {k: tap.not_feed[k] for k in ("other_flow", "not_udp", "not_ipv4", "fragment")}
    assert len(rep["flows"]) == tap.flows
    assert rep["flows"][0]["destination"] == FEED_TEXT  # the most MoldUDP64 messages, though HSRP came first
    assert rep["mold"]["rejected_count_mismatch"] == 0  # HSRP hellos are no longer read as damaged MoldUDP64
    plain = inspect_capture(SEED.path)
    assert rep["decode"]["per_type"] == plain["decode"]["per_type"] and rep["rejected"] == 0


def test_simulation_reads_the_feed_and_reproduces_the_golden_digest(tap, tmp_path):
    run = runner.execute(config(tap.path, "sim"), "tap", root=tmp_path, echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["lossless"] and s["balanced"] and s["verdict"]["exit_status"] == 0, s["verdict"]["headline"]
    assert s["bbo"]["digest"] == SEED.golden["bbo_digest"]
    assert s["feed"]["address"] == FEED_TEXT and s["feed"]["not_feed"]["other_flow"] == tap.not_feed["other_flow"]
    assert s["capture"] == str(tap.path.resolve())  # the capture's path stays where readers of summaries look
    assert f"Feed `{FEED_TEXT}`" in (run / "report.md").read_text()


@pytest.mark.skipif(not ROOT, reason="network namespaces need root")
@pytest.mark.parametrize("sender", ["tcpreplay", "udp-replay"])
def test_a_udp_replay_sends_only_the_feed_and_balances(tap, sender, tmp_path):
    values = config(tap.path, "udp", replay={"sender": sender, "rate": "pps", "pps": 20000}, subscribers=1)
    run = runner.execute(values, f"tap-{sender}", root=tmp_path, echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["exit_status"] == 0 and s["balanced"] and s["lossless"], s["verdict"]["headline"]
    assert f"; {sum(tap.not_feed.values()):,} frames not of the feed skipped" in s["verdict"]["headline"]
    udp = s["reconciliation"]["udp"]
    assert udp["sender_sent"] == tap.feed_datagrams and udp["kernel_delivered"] == tap.feed_datagrams
    assert s["bbo"]["digest"] == SEED.golden["bbo_digest"]
    assert s["reconciliation"]["checks"]["BBO digest = simulation's digest"]


@pytest.mark.skipif(not ROOT, reason="network namespaces need root")
def test_a_brought_gateway_is_told_what_of_the_capture_was_skipped(tap, tmp_path):
    """The same capture into a brought gateway: LOSSLESS, its headline without the frames that are not the feed,
    which the built-in gateway's says. Now both say them."""
    gateway = Path(__file__).resolve().parents[2] / "examples" / "py-gateway" / "itchbench.toml"
    values = config(tap.path, "udp", replay={"rate": "pps", "pps": 20000}, subscribers=0, gateway_file=str(gateway))
    s = rundir.read_json(runner.execute(values, "tap-brought", root=tmp_path, echo=False) / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    assert s["verdict"]["headline"].endswith(f"; {sum(tap.not_feed.values()):,} frames not of the feed skipped")


def test_two_sessions_are_refused_by_name_before_any_run(two_sessions, tmp_path):
    path, sessions = two_sessions
    with pytest.raises(CaptureError) as e:
        check_capture(path)
    assert all(f"'{name}'" in str(e.value) for name in sessions.values()) and "--feed" in str(e.value)
    root = tmp_path / "runs"
    with pytest.raises(CaptureError):
        runner.execute(config(path, "sim"), "two", root=root, echo=False)
    assert not root.exists() or not any(root.iterdir())  # no run directory was made


def test_a_chosen_feed_reads_its_session_alone(two_sessions, tmp_path):
    path, sessions = two_sessions
    for feed in sessions:
        values = config(path, "sim")
        values["feed"] = feed
        run = runner.execute(values, "chosen", root=tmp_path, echo=False)
        s = rundir.read_json(run / "summary.json")
        assert s["lossless"] and s["verdict"]["exit_status"] == 0, s["verdict"]["headline"]
        assert s["feed"]["address"] == feed and s["feed"]["not_feed"]["other_flow"] > 0
        # Both sessions carry the same messages: each, alone, gives the fixture's book.
        assert s["bbo"]["digest"] == SEED.golden["bbo_digest"]


def test_a_capture_without_a_udp_datagram_is_refused_before_any_run(tmp_path, capsys):
    # A pcap of its 24-byte header alone (libpcap's format: magic, version 2.4, snaplen 65535, Ethernet) ran as
    # "LOSSLESS: 0 messages, 0 BBO events, balanced", exit 0: a verdict that had checked nothing.
    empty = tmp_path / "header-only.pcap"
    empty.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    with pytest.raises(CaptureError, match="no UDP datagram in the capture [(]no packets[)]: no feed to replay"):
        check_capture(empty)
    out = tmp_path / "run"
    assert itchbench_main(["sim", str(empty), "--out", str(out)]) == 2
    assert "no feed to replay" in capsys.readouterr().err and not out.exists()


def test_a_capture_is_asked_its_kind_once_however_its_path_is_spelled(tmp_path, monkeypatch):
    # A run checks the path it was given and then the resolved one: itch-inspect ran twice before the gateway.
    day = tmp_path / "day.itch"
    day.write_bytes(struct.pack(">H", 12) + b"S" + bytes(10) + b"O")  # one system event, length-prefixed
    asked: list[list[str]] = []
    run = inspect.subprocess.run
    monkeypatch.setattr(inspect.subprocess, "run", lambda cmd, **kw: asked.append(cmd) or run(cmd, **kw))
    monkeypatch.chdir(tmp_path)
    inspect._kind.cache_clear()
    assert inspect.capture_kind(Path("day.itch")) == inspect.capture_kind(day) == "itch"
    assert len(asked) == 1
    os.utime(day, ns=(day.stat().st_atime_ns, day.stat().st_mtime_ns + 1_000_000_000))  # a file written again
    assert inspect.capture_kind(day) == "itch" and len(asked) == 2


def test_inspect_of_a_capture_without_a_udp_datagram_says_it_has_no_feed(tmp_path, capsys):
    # It printed a table of zeros and "rejected: none", exit 0. One frame of IPv6 (ethertype 0x86DD), 54 bytes.
    frame = b"\x33\x33\x00\x00\x00\x01" + b"\x02" * 6 + b"\x86\xdd" + bytes(40)
    capture = tmp_path / "ipv6.pcap"
    capture.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                        + struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
    assert itchbench_main(["inspect", str(capture)]) == 1
    assert "NO FEED: no UDP datagram in the capture (its packets: 1 not ipv4)" in capsys.readouterr().out


def test_a_feed_that_is_not_in_the_capture_is_refused(tap):
    with pytest.raises(CaptureError, match="233.54.12.111:9"):
        check_capture(tap.path, f"{FEED[0]}:9")


def test_a_feed_that_is_no_address_is_said_as_the_users_argument(tap, capsys):
    # itch-inspect's refusal had been passed on with its own pointer, "(see itch-inspect --help)", a tool the user
    # never ran.
    assert itchbench_main(["sim", str(tap.path), "--feed", "127.0.0.1:0"]) == 2
    assert capsys.readouterr().err == "itchbench: --feed '127.0.0.1:0': port must be 1..65535\n"


def test_the_cli_takes_feed_and_explains_two_sessions(two_sessions):
    path, sessions = two_sessions
    cli = [sys.executable, "-m", "itchbench.cli"]
    r = subprocess.run([*cli, "inspect", str(path)], capture_output=True, text=True)
    assert r.returncode == 2 and "ZZSECOND" in r.stderr, r.stderr
    feed = next(f for f, name in sessions.items() if name == "ZZSECOND")
    r = subprocess.run([*cli, "inspect", str(path), "--feed", feed], capture_output=True, text=True)
    assert r.returncode == 0 and f"{feed}" in r.stdout and "<- feed" in r.stdout, r.stderr
