"""The C++ tools as a user runs them: help, determinism, conversion, bad input."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from itchbench import paths
from itchbench.cli import main as itchbench_main

from pcap_edit import corrupt_first_type_byte


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# Each tool and the positional arguments it requires (a missing one is reported before an unknown option).
TOOLS = {"itch-synth": [], "itch2pcap": ["in.itch"], "itch-inspect": ["cap.pcap"], "itch-gateway": [],
         "serial-replay": ["cap.pcap"], "pcap-feed": ["cap.pcap"], "udp-replay": ["cap.pcap"],
         "itch-faults": ["in.pcap", "out.pcap"], "latency-log-compact": ["in.lat", "out.lat"],
         "bbo-shm-subscriber": [], "bbo-mqtt-subscriber": [], "bbo-kafka-subscriber": [],
         "mold-request-server": ["cap.pcap"], "snapshot-server": ["cap.pcap"]}


@pytest.mark.parametrize("name", TOOLS)
def test_help_and_bad_arguments(tool, name):
    """CLI11's help and its words for an argument it does not know; exit 2 and a pointer to --help, ours."""
    ok = tool(name, "--help")
    assert ok.returncode == 0 and "Usage: " + name in ok.stdout and "--config FILE" in ok.stdout
    bad = tool(name, *TOOLS[name], "--no-such-option")
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr == f"{name}: The following argument was not expected: --no-such-option\n(see {name} --help)\n"


def test_options_come_from_a_config_file_as_from_the_command_line(tool, tmp_path):
    """`--config FILE` (TOML, one `name = value` a line): the same bytes as the same options given directly."""
    config = tmp_path / "synth.toml"
    config.write_text('profile = "nasdaq-day"\nmessages = 3000\nseed = 7\nformat = "itch"\n')
    assert tool("itch-synth", "--config", config, "--out", tmp_path / "a.itch").returncode == 0
    assert tool("itch-synth", "--profile", "nasdaq-day", "--messages", "3000", "--seed", "7", "--format", "itch",
                "--out", tmp_path / "b.itch").returncode == 0
    assert digest(tmp_path / "a.itch") == digest(tmp_path / "b.itch")
    assert digest(tmp_path / "a.itch") != digest(tool_output(tool, tmp_path, "--seed", "8"))
    missing = tool("itch-synth", "--config", tmp_path / "none.toml", "--out", tmp_path / "c.itch")
    assert missing.returncode == 2 and "none.toml" in missing.stderr


def tool_output(tool, tmp_path, *args) -> Path:
    out = tmp_path / "other.itch"
    assert tool("itch-synth", "--profile", "nasdaq-day", "--messages", "3000", "--format", "itch", *args,
                "--out", out).returncode == 0
    return out


@pytest.mark.parametrize("name, args, message", [
    ("itch-gateway", ["--source", "sim", "--feed", "1.2.3.4"], "expected ADDR:PORT"),
    ("itch-gateway", ["--source", "sim", "--feed", "1.2.3.4:70000"], "port must be 1..65535"),
    ("itch-gateway", ["--source", "udp", "--feed", "1.2.3.4:5"], "--feed applies to --source sim"),
    ("itch-gateway", ["--source", "sim", "--port", "5"], "in simulation --feed ADDR:PORT picks the flow"),
    ("itch-gateway", ["--source", "sim", "--stamps", "book,bogus"], "unknown stage 'bogus'"),
    ("itch-inspect", ["--feed", "nonsense"], "expected ADDR:PORT"),
    ("pcap-feed", [], "--out is required"),
    ("itch-gateway", ["--source", "sim", "--latency-format", "tiny"], "--latency-format must be compact or wide"),
    ("itch-gateway", ["--source", "sim", "--latency-histogram", "--no-latency-log"], "choose one"),
    ("itch-gateway", ["--source", "sim", "--latency-histogram", "--latency-format", "wide"], "writes none"),
])
def test_feed_and_stamps_options_refuse_bad_values(tool, tmp_path, name, args, message):
    fx = paths.fixtures_dir() / "seed-workload.pcap"
    extra = ["--out", str(tmp_path), "--capture", str(fx)] if name == "itch-gateway" else [str(fx)]
    r = tool(name, *extra, *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_pcap_feed_refuses_a_binary_itch_file_and_writes_nothing(tool, tmp_path):
    itch = tmp_path / "s.itch"
    assert tool("itch-synth", "--messages", "100", "--format", "itch", "--out", itch).returncode == 0
    out = tmp_path / "feed.pcap"
    r = tool("pcap-feed", itch, "--out", out)
    assert r.returncode == 2 and "binary ITCH file" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.itch"]  # no feed.pcap, no temporary file of it


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a CPU to be kept from the gateway")
def test_a_publisher_cpu_the_gateway_may_not_use_stops_it_before_it_starts(tmp_path):
    """Asked to pin its publisher to a CPU its process may not use, the gateway recorded the pin as not granted and
    ran on: `itchbench run` of udp-pinned under `taskset -c 1` passed, LOSSLESS, its publisher unpinned. As for the
    receive thread's CPU (docs/scenarios.md: an option the machine does not grant stops the run), it now refuses."""
    kept, allowed = sorted(os.sched_getaffinity(0))[:2]
    done = subprocess.run([str(paths.tool("itch-gateway")), "--source", "udp", "--port", "0", "--out", str(tmp_path),
                           "--publisher-cpu", str(kept), "--idle-exit-ms", "100"], capture_output=True, text=True,
                          preexec_fn=lambda: os.sched_setaffinity(0, {allowed}), timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"itch-gateway: cpu {kept} is not available to this process (allowed: {allowed})\n"
    assert not (tmp_path / "gateway.json").exists()


def test_itchbench_help(capsys):
    with pytest.raises(SystemExit) as e:
        itchbench_main(["--help"])
    assert e.value.code == 0
    assert "demo" in capsys.readouterr().out


HEAVY = ("numpy", "pandas", "matplotlib", "pyarrow", "scipy", "jinja2")


@pytest.mark.parametrize("argv", [["--help"], ["no-such-command"]] + [
    [name, "--help"] for name in ("demo", "fixtures", "sim", "run", "merge", "faults", "compare", "bisect", "doc",
                                  "history", "performance", "report", "stats", "dump", "export", "inspect")])
def test_help_and_usage_errors_load_no_analysis_stack(argv):
    # In a fresh interpreter (this one has pandas already): the parser is built from the commands alone.
    probe = ("import sys\n"
             "from itchbench.cli import main\n"
             "try:\n"
             f"    main({argv!r})\n"
             "except SystemExit as e:\n"
             "    code = e.code\n"
             f"print('LOADED', code, sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stderr.splitlines()[-1] == f"LOADED {0 if '--help' in argv else 2} []", done.stderr


def test_an_out_that_is_in_the_way_is_said_without_a_traceback(tmp_path, capsys):
    """doc --out naming a file (a folder is made there) ended in a FileExistsError traceback, then in a bare "[Errno
    17] File exists"; a path in the way is said on one line, as a usage error, before anything runs."""
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("kept\n")
    run = tmp_path / "run"
    assert itchbench_main(["sim", str(paths.repo_root() / "fixtures" / "seed-workload.pcap"), "--out", str(run)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        itchbench_main(["doc", str(run), "--out", str(in_the_way)])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and "Traceback" not in err, err
    assert err.endswith(f"itchbench doc: error: argument --out: {in_the_way}: not a folder (a file is there); name a "
                        "folder, or one to make\n"), err
    assert in_the_way.read_text() == "kept\n"


def test_synth_is_deterministic_and_seed_sensitive(tool, tmp_path):
    args = ["--profile", "nasdaq-day", "--messages", "3000", "--symbol-count", "10"]
    for name, seed in [("a", "5"), ("b", "5"), ("c", "6")]:
        r = tool("itch-synth", *args, "--seed", seed, "--out", tmp_path / f"{name}.pcap")
        assert r.returncode == 0, r.stderr
    assert digest(tmp_path / "a.pcap") == digest(tmp_path / "b.pcap")
    assert digest(tmp_path / "a.pcap") != digest(tmp_path / "c.pcap")


def test_synth_rejects_bad_values_without_leaving_output(tool, tmp_path):
    out = tmp_path / "x.pcap"
    for bad in (["--profile", "nope"], ["--mix", "A=1,Z=2"], ["--messages", "3"], ["--port", "70000"],
                ["--start", "25:00:00"], ["--seed", "-1"]):
        r = tool("itch-synth", *bad, "--out", out)
        assert r.returncode != 0, bad
        assert r.stderr.strip(), bad
        assert not list(tmp_path.iterdir()), bad  # neither x.pcap nor a temporary file of it


def test_a_writer_leaves_another_writers_temporary_file_alone(tool, tmp_path):
    # Every writer had used OUT.tmp: two at once to one file (`itchbench faults` twice) shared it, one truncating the
    # file the other renamed into place. What another process is writing there now stays its own.
    out = tmp_path / "s.itch"
    (tmp_path / "s.itch.tmp").write_bytes(b"another writer's")
    assert tool("itch-synth", "--messages", "100", "--format", "itch", "--out", out).returncode == 0
    assert (tmp_path / "s.itch.tmp").read_bytes() == b"another writer's"
    assert tool("itch-synth", "--messages", "100", "--format", "itch", "--out", tmp_path / "t.itch").returncode == 0
    assert out.read_bytes() == (tmp_path / "t.itch").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.itch", "s.itch.tmp", "t.itch"]


def test_itch2pcap_round_trip(tool, tmp_path):
    itch = tmp_path / "s.itch"
    r = tool("itch-synth", "--profile", "nasdaq-day", "--messages", "4000", "--symbol-count", "8",
             "--format", "itch", "--out", itch)
    assert r.returncode == 0, r.stderr
    pcap = tmp_path / "s.pcap"
    r = tool("itch2pcap", itch, "--out", pcap, "--per-packet", "8")
    assert r.returncode == 0, r.stderr
    from_itch = json.loads(tool("itch-inspect", itch, "--json").stdout)
    from_pcap = json.loads(tool("itch-inspect", pcap, "--json").stdout)
    assert from_itch["kind"] == "itch" and from_pcap["kind"] == "pcap"
    assert from_itch["decode"]["per_type"] == from_pcap["decode"]["per_type"]
    assert from_pcap["messages"] == 4000
    assert from_pcap["sequence"]["gap_messages"] == 0
    assert from_pcap["mold"]["end_of_session"] == 1
    # messages per packet honoured
    assert from_pcap["mold"]["packets"] >= 4000 / 8


def test_itch2pcap_stamps_a_message_too_short_for_a_timestamp_as_the_one_before(tool, tmp_path):
    """A message may keep the framing with no header (here 2 bytes of an unknown type, a valid message after it): it
    goes into the pcap, stamped as the message before it. Its timestamp was read from the bytes after it, the next
    message's locate among them: a system event of locate 0xFFFF made it 78 hours on, and the packetizer filled the
    jump with heartbeats."""
    itch = tmp_path / "s.itch"
    assert tool("itch-synth", "--messages", "100", "--format", "itch", "--out", itch).returncode == 0
    whole = tool("itch2pcap", itch, "--out", tmp_path / "whole.pcap")
    data, at, stamp = itch.read_bytes(), 0, b""
    for _ in range(50):  # past the 50th message: a 2-byte big-endian length before each (ITCH 5.0 header: type,
        stamp = data[at + 2 + 5:at + 2 + 11]  # locate, tracking number, a 6-byte timestamp)
        at += 2 + int.from_bytes(data[at:at + 2], "big")
    event = b"S" + b"\xff\xff" + b"\x00\x00" + stamp + b"Q"  # system event, at the 50th message's time
    itch.write_bytes(data[:at] + bytes([0, 2]) + b"z\xff" + len(event).to_bytes(2, "big") + event + data[at:])
    short = tool("itch2pcap", itch, "--out", tmp_path / "short.pcap")
    assert whole.returncode == short.returncode == 0, short.stderr
    counts = [re.search(r"(\d+) messages in \d+ packets \((\d+) heartbeats\)", r.stderr) for r in (whole, short)]
    assert counts[0] and counts[1], short.stderr
    assert int(counts[1][1]) == int(counts[0][1]) + 2 and int(counts[1][2]) == int(counts[0][2]), short.stderr


def test_itch2pcap_reports_offset_of_a_bad_prefix(tool, tmp_path):
    itch = tmp_path / "s.itch"
    tool("itch-synth", "--messages", "100", "--format", "itch", "--out", itch)
    data = bytearray(itch.read_bytes())
    # First message is S (12 bytes) at offset 0; the second prefix is at 14.
    data[15] = 13  # lie: 'R' is 39 bytes
    itch.write_bytes(bytes(data))
    out = tmp_path / "out.pcap"
    r = tool("itch2pcap", itch, "--out", out)
    assert r.returncode == 1
    assert "offset 14 (message 2)" in r.stderr
    assert "'R' is 39 bytes, prefix says 13" in r.stderr
    assert not out.exists()


def test_inspect_counts_malformed_and_truncated(tool, tmp_path):
    pcap = tmp_path / "s.pcap"
    tool("itch-synth", "--messages", "200", "--out", pcap)
    corrupt_first_type_byte(pcap, 19)  # the 20th packet, then cut the file mid-record
    data = pcap.read_bytes()
    # The file ends with the end-of-session record (16 + 62 bytes); cut through it
    # and 7 bytes into the last message's record.
    pcap.write_bytes(bytes(data[:-(16 + 62 + 7)]))
    r = tool("itch-inspect", pcap, "--json")
    assert r.returncode == 1
    rep = json.loads(r.stdout)
    assert rep["decode"]["rejected_unknown_type"] == 1 and rep["rejected"] == 1
    assert rep["complete"] is False and "truncated" in rep["error"]
    assert rep["messages"] == 200 - 1 - 1  # the unknown one and the one cut short
    assert rep["mold"]["end_of_session"] == 0


def test_inspect_errors_on_non_captures(tool, tmp_path):
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    r = tool("itch-inspect", empty)
    assert r.returncode == 2 and "empty capture" in r.stderr
    text = tmp_path / "notes.txt"
    text.write_text("not a capture at all\n")
    r = tool("itch-inspect", text)
    assert r.returncode == 2 and "not a capture" in r.stderr
    r = tool("itch-inspect", tmp_path / "missing.pcap")
    assert r.returncode == 2 and "No such file" in r.stderr


@pytest.mark.parametrize("name, args, message", [
    ("itch-gateway", ["--source", "carrier-pigeon", "--out", "/tmp"], "--source takes sim, udp, af_xdp or serial"),
    ("itch-gateway", ["--source", "sim", "--out", "/nonexistent-dir", "--capture", "x"], "is not a directory"),
    ("itch-gateway", ["--source", "sim", "--out", "/tmp"], "--capture is required"),
    ("itch-gateway", ["--source", "serial", "--out", "/tmp"], "--device is required"),
    ("itch-gateway", ["--source", "udp", "--out", "/tmp", "--sched-fifo", "120"], "priority from 1 to 99"),
    ("itch-gateway", ["--source", "udp", "--out", "/tmp", "--slow-subscriber", "ignore"], "drop or disconnect"),
    ("itch-gateway", ["--source", "af_xdp", "--out", "/tmp"], "--port (the feed's UDP port) is required with af_xdp"),
    ("itch-gateway", ["--source", "udp", "--out", "/tmp", "--xdp-attach", "turbo"], "--xdp-attach takes auto, drv or skb"),
    ("itch-gateway", ["--source", "udp", "--out", "/tmp", "--shm-capacity", "1000"], "--shm-capacity must be a power"),
    ("itch-gateway", ["--source", "udp", "--out", "/tmp", "--publish-mqtt", "nohost"], "--publish-mqtt takes ADDR:PORT"),
    ("itch-gateway", ["--source", "udp", "--out", "/tmp", "--mqtt-qos", "3"], "--mqtt-qos takes 0, 1 or 2"),
    ("bbo-shm-subscriber", ["--name", "/x"], "--name and --out are required"),
    ("bbo-shm-subscriber", ["--name", "/x", "--out", "x", "--mode", "lazy"], "--mode takes fast, slow or stuck"),
    ("bbo-mqtt-subscriber", ["--out", "x"], "--port and --out are required"),
    ("bbo-mqtt-subscriber", ["--port", "1", "--out", "x", "--mode", "lazy"], "--mode takes fast, slow or reconnect"),
    ("bbo-kafka-subscriber", ["--brokers", "b:1", "--out", "x", "--mode", "lazy"], "--mode takes fast, slow or reconnect"),
    ("bbo-kafka-subscriber", ["--brokers", "b:1", "--out", "x", "--collect", "xml"], "--collect takes csv, jsonl"),
    ("serial-replay", ["cap.pcap"], "--device is required"),
    ("serial-replay", ["cap.pcap", "--device", "/dev/null", "--baud", "12"], "--baud must be 300..100000000"),
    ("serial-replay", ["cap.pcap", "--device", "/dev/null", "--timing", "vibes"], "--timing takes baud or capture"),
    ("serial-replay", ["cap.pcap", "--device", "/dev/null", "--multiplier", "0"], "--multiplier must be positive"),
])
def test_bad_values_are_refused_with_the_reason(tool, name, args, message):
    r = tool(name, *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr


@pytest.mark.parametrize("name, args", [
    ("itch-faults", ["{in}", "{in}", "--seed", "1", "--drop", "0.1"]),
    ("itch-faults", ["{in}", "{link}", "--seed", "1", "--drop", "0.1"]),  # the same file by another name
    ("itch2pcap", ["{in}", "--out", "{in}"]),
    ("pcap-feed", ["{in}", "--out", "{dir}/./{base}"]),  # another spelling of its path
    ("latency-log-compact", ["{in}", "{in}"]),
])
def test_a_tool_refuses_to_write_over_its_own_input(tool, tmp_path, name, args):
    # Written through OUT.PID.tmp and renamed, the output would replace the file it is made from: the bundled
    # fixture was lost so (itchbench faults IN IN). Refused, and the input left as it was.
    src = tmp_path / "in" / "input"
    src.parent.mkdir()
    src.write_bytes((paths.repo_root() / "fixtures" / "seed-workload.pcap").read_bytes())
    (tmp_path / "link").hardlink_to(src)
    before = src.read_bytes()
    names = {"in": src, "link": tmp_path / "link", "dir": src.parent, "base": src.name}
    r = tool(name, *[a.format(**names) for a in args])
    assert r.returncode == 2 and "is the input" in r.stderr and "write elsewhere" in r.stderr, r.stderr
    assert src.read_bytes() == before and not list(src.parent.glob("*.tmp"))


def test_itchbench_faults_and_export_refuse_to_write_over_their_input(tmp_path, capsys):
    src = tmp_path / "seed.pcap"
    src.write_bytes((paths.repo_root() / "fixtures" / "seed-workload.pcap").read_bytes())
    before = src.read_bytes()
    assert itchbench_main(["faults", str(src), str(src), "--seed", "1", "--drop", "0.1"]) == 2
    assert "is the input" in capsys.readouterr().err and src.read_bytes() == before
    assert not (tmp_path / "seed.pcap.faults.json").exists()
    # A value the tool refuses is the user's error too (exit 2), as the tool says.
    assert itchbench_main(["faults", str(src), str(tmp_path / "out.pcap"), "--seed", "1", "--drop", "2"]) == 2
    assert "--drop is a probability between 0 and 1" in capsys.readouterr().err
    run = tmp_path / "run"
    assert itchbench_main(["sim", str(src), "--out", str(run)]) == 0
    log = (run / "latency.lat").read_bytes()
    for own in ("latency.lat", "manifest.json"):
        assert itchbench_main(["export", str(run), "--out", str(run / own)]) == 2
        assert "is one of the run's own files" in capsys.readouterr().err
    assert (run / "latency.lat").read_bytes() == log


def test_serial_replay_reports_an_unopenable_device(tool, tmp_path):
    cap = tmp_path / "s.pcap"
    tool("itch-synth", "--messages", "50", "--out", cap)
    r = tool("serial-replay", cap, "--device", str(tmp_path / "no-such-pty"))
    assert r.returncode == 2 and "no-such-pty: No such file or directory" in r.stderr


@pytest.mark.parametrize("name, args, message", [
    ("itch-gateway", ["--source", "udp", "--depth-port", "70000"], "--depth-port must be 0..65535"),
    ("itch-gateway", ["--source", "udp", "--wait-depth-shm-subscribers", "1"],
     "--wait-depth-shm-subscribers needs --publish-shm and --levels"),
    ("bbo-tcp-subscribers", ["--port", "1", "--numbers", "0", "--levels", "65"], "--levels takes 0 to 64"),
    ("bbo-mqtt-subscriber", ["--port", "1", "--levels", "65"], "--levels takes 0 to 64"),
    ("bbo-kafka-subscriber", ["--brokers", "127.0.0.1:1", "--levels", "65"], "--levels takes 0 to 64"),
])
def test_depth_publishing_options_refuse_bad_values(tool, tmp_path, name, args, message):
    where = {"bbo-tcp-subscribers": ["--dir", str(tmp_path)], "itch-gateway": ["--out", str(tmp_path)]}.get(
        name, ["--out", str(tmp_path / "out")])
    r = tool(name, *where, *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
