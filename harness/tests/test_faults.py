"""The fault injector: deterministic for a seed, its sidecar equal to an
independent count of its output, and every run of the output reconciled with
the sidecar exactly, kind by kind (docs/faults.md)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths, rundir
from itchbench.analysis import logs
from itchbench.captures import faults, fixtures
from itchbench.cli import main as itchbench_main
from itchbench.runs import reconcile, runner

from live_helpers import config, leftover_processes, summary_of

DAY = next(fx for fx in fixtures.load_manifest() if fx.name == "nasdaq-day-sample").path
ITCH_TYPES = set(b"SRHYLVWKJhAFECXDUPQBINO")
ALL_FAULTS = ["--drop", "0.02", "--duplicate", "0.02", "--reorder", "0.02", "--truncate", "0.02",
              "--corrupt", "0.03", "--burst-drop", "3@0.005"]


def packets(pcap: Path) -> list[bytes]:
    """UDP payloads in file order: a reader of our own, not the C++ one."""
    data = pcap.read_bytes()
    off, out = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        frame = data[off + 16: off + 16 + incl]
        off += 16 + incl
        ihl = (frame[14] & 0x0F) * 4
        udp_len = struct.unpack_from(">H", frame, 14 + ihl + 4)[0]
        out.append(frame[14 + ihl + 8: 14 + ihl + udp_len])
    return out


def mold(payload: bytes) -> tuple[int, int, list[bytes]] | None:
    """(first sequence, count, messages), or None when MoldUDP64 validation fails."""
    if len(payload) < 20:
        return None
    seq, count = struct.unpack_from(">QH", payload, 10)
    if count in (0, 0xFFFF):
        return (seq, 0, []) if len(payload) == 20 else None
    msgs, p = [], 20
    for _ in range(count):
        if p + 2 > len(payload):
            return None
        (n,) = struct.unpack_from(">H", payload, p)
        if p + 2 + n > len(payload):
            return None
        msgs.append(payload[p + 2: p + 2 + n])
        p += 2 + n
    return (seq, count, msgs) if p == len(payload) else None


def independent_count(original: Path, faulty: Path) -> dict[str, int]:
    before = {m[0]: m for m in (mold(p) for p in packets(original)) if m and m[1]}
    out = packets(faulty)
    parsed = [mold(p) for p in out]
    seen = Counter((m[0], m[1]) for m in parsed if m and m[1])
    present = {seq for seq, _ in seen}
    highest, reordered_packets, reordered_messages = 0, 0, 0
    first_copy: set[int] = set()
    for m in parsed:
        if not m:
            continue
        seq, count, _ = m
        if seq < highest and seq not in first_copy:  # arrives after a higher sequence
            reordered_packets += 1
            reordered_messages += count
        first_copy.add(seq)
        highest = max(highest, seq + count)
    bad_types = decoded = 0
    for m in parsed:
        if m and m[1]:
            for i, msg in enumerate(m[2]):
                if msg[0] not in ITCH_TYPES:
                    bad_types += 1
                elif msg != before[m[0]][2][i]:
                    decoded += 1
    dup_packets = sum(n - 1 for n in seen.values())
    return {
        "packets_out": len(out),
        "truncated_packets": sum(1 for m in parsed if m is None),
        "duplicated_packets": dup_packets,
        "duplicated_messages": sum((n - 1) * count for (seq, count), n in seen.items()),
        "reordered_messages": reordered_messages,
        "corrupted_messages_rejected": bad_types,
        "corrupted_messages_decoded": decoded,
        # Messages that reach the gateway nowhere, valid: dropped or truncated.
        "lost_messages": sum(c for s, (_, c, _) in before.items() if s not in present),
    }


@pytest.mark.parametrize("seed", [1, 2, 3, 11])
def test_sidecar_equals_an_independent_count_of_the_output(tmp_path, seed):
    out = tmp_path / "faulty.pcap"
    assert itchbench_main(["faults", str(DAY), str(out), "--seed", str(seed), *ALL_FAULTS]) == 0
    side = json.loads((tmp_path / "faulty.pcap.faults.json").read_text())
    mine = independent_count(DAY, out)
    for key in ("packets_out", "truncated_packets", "duplicated_packets", "duplicated_messages",
                "reordered_messages", "corrupted_messages_rejected", "corrupted_messages_decoded"):
        assert side[key] == mine[key], key
    assert side["dropped_messages"] + side["truncated_messages"] == mine["lost_messages"]
    assert side["packets_out"] == side["packets_in"] - side["dropped_packets"] + side["duplicated_packets"]
    assert side["seed"] == seed
    # Every kind was drawn at least once at these rates: the counts are not vacuous.
    assert all(side[k] > 0 for k in ("dropped_packets", "duplicated_packets", "reordered_packets",
                                     "truncated_packets", "corrupted_messages_rejected"))
    assert len(side["sequences"]["dropped"]) == side["dropped_messages"]


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    outs = []
    for name, seed in [("a", 5), ("b", 5), ("c", 6)]:
        out = tmp_path / f"{name}.pcap"
        faults.inject(DAY, out, seed=seed, drop=0.02, reorder=0.02, corrupt=0.02)
        outs.append((out.read_bytes(), faults.sidecar_path(out).read_text()))
    assert outs[0] == outs[1]
    assert outs[0][0] != outs[2][0]


def test_faults_onto_a_pipe_are_refused_and_leave_it(tmp_path, capsys):
    """`itchbench faults IN /dev/null`, as root, replaced /dev/null with a pcap file (its output is renamed into
    place). A pipe stands in for the device: refused before any work, left as it was, no sidecar made."""
    fifo = tmp_path / "out.pcap"
    os.mkfifo(fifo)
    assert itchbench_main(["faults", "--seed", "1", "--drop", "0.1", str(DAY), str(fifo)]) == 1
    assert f"{fifo}: not a regular file (a device, a pipe or a folder)" in capsys.readouterr().err
    assert stat.S_ISFIFO(fifo.stat().st_mode) and [p.name for p in tmp_path.iterdir()] == ["out.pcap"]


def test_faults_on_a_binary_itch_file_are_refused_with_the_way_to_a_pcap(tmp_path, capsys):
    """A binary ITCH file holds messages and no packets: itch-faults said only that it could not read it (unknown
    file format). The messages of a pcap's packets, length-prefixed, make one."""
    itch = tmp_path / "day.itch"
    itch.write_bytes(b"".join(struct.pack(">H", len(m)) + m for _, _, msgs in (mold(p) for p in packets(DAY))
                              for m in msgs))
    assert itchbench_main(["faults", "--seed", "1", "--drop", "0.1", str(itch), str(tmp_path / "out.pcap")]) == 2
    err = capsys.readouterr().err
    assert f"{itch}: a binary ITCH file" in err and "itch2pcap" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day.itch"]
    # A scenario's [faults] on it: refused before a run exists (it failed inside the run, on the tool's words).
    toml = tmp_path / "faulted.toml"
    toml.write_text(f'name = "f"\ntransport = "sim"\ncapture = "{itch}"\n[faults]\nseed = 1\ndrop = 0.01\n')
    assert itchbench_main(["run", str(toml), "--out", str(tmp_path / "runs")]) == 2
    assert f"{itch}: a binary ITCH file" in capsys.readouterr().err
    assert not list((tmp_path / "runs").rglob("manifest.json"))


def test_messages_named_to_be_rejected_are_damaged_and_nothing_else(tmp_path):
    # The first message of the capture, two inside packets and the last: each type byte a digit, every other byte
    # of every message as it was; the simulation rejects exactly those four as of an unknown type.
    named = [1, 45, 600, 8000]
    out = tmp_path / "rejected.pcap"
    side = faults.inject(DAY, out, seed=0, reject=np.array(named))
    assert side["sequences"]["corrupted_rejected"] == named and side["corrupted_messages_rejected"] == 4
    assert side["packets_out"] == side["packets_in"] and side["dropped_packets"] == 0
    before = [mold(p) for p in packets(DAY)]
    after = [mold(p) for p in packets(out)]
    assert len(before) == len(after)
    damaged = []
    for was, now in zip(before, after):
        assert was is not None and now is not None and was[:2] == now[:2]
        for i, (a, b) in enumerate(zip(was[2], now[2])):
            if a != b:
                assert b[:1] == b"0" and a[1:] == b[1:] and a[0] in ITCH_TYPES
                damaged.append(was[0] + i)
    assert damaged == named
    assert itchbench_main(["sim", str(out), "--out", str(tmp_path / "run"), "--no-latency-log"]) == 0
    assert rundir.read_json(tmp_path / "run" / "gateway.json")["decode"]["rejected_unknown_type"] == 4


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_simulation_counters_equal_the_sidecar(tmp_path, seed):
    out = tmp_path / "faulty.pcap"
    assert itchbench_main(["faults", str(DAY), str(out), "--seed", str(seed), *ALL_FAULTS]) == 0
    assert itchbench_main(["sim", str(out), "--out", str(tmp_path / "run"), "--no-latency-log"]) == 0
    s = rundir.read_json(tmp_path / "run" / "summary.json")
    rec, side = s["reconciliation"], faults.sidecar_of(out)
    assert s["verdict"]["status"] == "faults_accounted" and s["balanced"] and not s["lossless"]
    assert rec["duplicates"] == side["duplicated_messages"]
    assert rec["reordered"] == side["reordered_messages"]
    assert rec["rejected_packets"] == side["truncated_packets"]
    assert rec["rejected"] == side["corrupted_messages_rejected"]
    assert side["messages_in"] - rec["received"] == (side["dropped_messages"] + side["truncated_messages"]
                                                     + side["reordered_messages"])


def test_events_after_the_first_loss_are_marked_stale(tmp_path, capsys):
    out = tmp_path / "faulty.pcap"
    side = faults.inject(DAY, out, seed=2, drop=0.01, truncate=0.01, corrupt=0.01)
    seqs = side["sequences"]
    first_loss = min(seqs["dropped"] + seqs["truncated"] + seqs["corrupted_rejected"])
    assert itchbench_main(["sim", str(out), "--out", str(tmp_path / "run"), "--no-latency-log"]) == 0
    capsys.readouterr()
    assert itchbench_main(["dump", "bbo", str(tmp_path / "run")]) == 0
    rows = [line.split(",") for line in capsys.readouterr().out.splitlines()[1:]]
    before = [r for r in rows if int(r[0]) < first_loss]
    after = [r for r in rows if int(r[0]) > first_loss]
    assert before and after
    assert all(r[-1] == "0" for r in before) and all(r[-1] == "1" for r in after)
    # The run holds the gateway to the same rule itself, from the sidecar.
    s = rundir.read_json(tmp_path / "run" / "summary.json")
    assert s["reconciliation"]["stale"]["after_seq"] == first_loss
    assert s["reconciliation"]["checks"][f"BBO events flagged stale = those after seq {first_loss:,}, the first "
                                         "message lost or rejected (sidecar)"] is True


def _bbo(path: Path, seqs: list[int], flags: list[int]) -> logs.LogFile:
    """A BBO log of these events, written and read back as a run's is."""
    records = np.zeros(len(seqs), dtype=logs.BBO_DTYPE)
    records["seq"], records["flags"] = seqs, flags
    writer = logs.LogWriter(path, logs.KIND_BBO, stage_clock=1)  # CLOCK_MONOTONIC
    writer.append(records)
    writer.close()
    return logs.read_bbo(path)


@pytest.mark.parametrize("flags, first_wrong", [
    ([0, 0, 1, 1], None),
    ([0, 0, 0, 1], 30),   # the first event after the loss not flagged: a gap missed
    ([0, 1, 1, 1], 20),   # flagged before anything was lost
    ([0, 0, 1, 0], 40),   # the flag dropped again later
])
def test_the_stale_flag_check_names_the_first_event_flagged_wrongly(flags, first_wrong, tmp_path):
    # Hand-made: seq 25 lost, so events 30 and 40 are stale and 10 and 20 are not.
    bbo = _bbo(tmp_path / "bbo.bbo", [10, 20, 30, 40], flags)
    checks: dict[str, bool] = {}
    got = reconcile._stale_flags(bbo, 25, "sidecar", checks)
    assert list(checks.values()) == [first_wrong is None]
    assert got.get("first_wrong_seq") == first_wrong and got["expected"] == 2
    # What the digest's pass saw gives the same answer, whether it can settle it alone or the log is read again.
    seen_checks: dict[str, bool] = {}
    assert reconcile._stale_flags(bbo, 25, "sidecar", seen_checks, logs.digest_and_stale(bbo)[1]) == got
    assert seen_checks == checks


@pytest.mark.parametrize("seqs, flags, after, exact", [
    ([10, 20, 30, 40], [0, 0, 1, 1], 25, True),
    ([10, 20, 30, 40], [0, 0, 1, 1], 20, True),   # the last message before the loss is 20 itself
    ([10, 20, 30, 40], [0, 0, 1, 1], 30, False),  # 30 flagged, but it is not after the loss
    ([10, 20, 30, 40], [0, 0, 0, 0], 45, True),   # lost after the last event: none is stale
    ([10, 20, 30, 40], [1, 1, 1, 1], 5, True),    # lost before the first
    ([10, 20, 30, 40], [0, 0, 0, 0], None, True),
    ([10, 20, 30, 40], [0, 0, 0, 1], None, False),
    ([], [], None, True),
    ([], [], 25, True),
])
def test_where_the_stale_flags_lie_is_seen_in_the_digests_pass(seqs, flags, after, exact, tmp_path):
    bbo = _bbo(tmp_path / "bbo.bbo", seqs, flags)
    digest, seen = logs.digest_and_stale(bbo)
    assert digest == logs.bbo_digest(bbo) == "sha256:" + hashlib.sha256(bbo.records.tobytes()).hexdigest()
    assert seen.flagged == sum(flags) and seen.exactly_after(after) is exact


def test_with_nothing_lost_no_event_may_be_flagged_stale(tmp_path):
    bbo = _bbo(tmp_path / "bbo.bbo", [10, 20], [0, 1])
    for seen in (None, logs.digest_and_stale(bbo)[1]):
        checks: dict[str, bool] = {}
        assert reconcile._stale_flags(bbo, None, "nothing lost", checks, seen)["first_wrong_seq"] == 20
        assert checks == {"no BBO event flagged stale (nothing lost)": False}


@pytest.mark.parametrize("damage, said", [
    (lambda d: b'{"seed": 4, "dropped', "not JSON (Unterminated string"),
    (lambda d: b"[]", "not a JSON object"),
    (lambda d: {**d, "dropped_messages": "57"}, "'dropped_messages' is '57', not a whole number 0 or more"),
    (lambda d: {**d, "duplicated_messages": True}, "'duplicated_messages' is True, not a whole number 0 or more"),
    (lambda d: {k: v for k, v in d.items() if k != "messages_in"}, "'messages_in' is missing"),
    (lambda d: {**d, "sequences": {**d["sequences"], "dropped": [5, "6"]}},
     "sequences.dropped is missing or not a list of sequence numbers"),
    (lambda d: {**d, "source": "day.pcap"}, "'source' is not an object with a path and a sha256"),
])
def test_a_damaged_sidecar_is_refused_before_any_run(tmp_path, capsys, damage, said):
    # A sidecar that is not one had ended the run in a traceback (JSONDecodeError, KeyError) or, with a count of
    # another type, been held to.
    out = tmp_path / "faulty.pcap"
    faults.inject(DAY, out, seed=4, drop=0.05)
    side = faults.sidecar_path(out)
    damaged = damage(json.loads(side.read_text()))
    side.write_bytes(damaged if isinstance(damaged, bytes) else json.dumps(damaged).encode())
    assert itchbench_main(["sim", str(out), "--out", str(tmp_path / "run"), "--no-latency-log"]) == 2
    err = capsys.readouterr().err
    assert f"itchbench: {side}: not a fault sidecar: {said}" in err and "Traceback" not in err, err
    assert not (tmp_path / "run").exists()


def test_sidecar_that_does_not_match_is_not_balanced(tmp_path):
    out = tmp_path / "faulty.pcap"
    faults.inject(DAY, out, seed=4, drop=0.05)
    side = faults.sidecar_path(out)
    data = json.loads(side.read_text())
    data["dropped_messages"] += 1  # a claim the gateway's counters contradict
    side.write_text(json.dumps(data))
    assert itchbench_main(["sim", str(out), "--out", str(tmp_path / "run"), "--no-latency-log"]) == 1
    s = rundir.read_json(tmp_path / "run" / "summary.json")
    assert s["verdict"]["status"] == "unbalanced" and not s["balanced"]


@pytest.mark.parametrize("source", ["udp", "af_xdp"])
def test_udp_counters_equal_the_sidecar_through_a_scenario(tmp_path, source):
    # AF_XDP with a shared-memory consumer beside the TCP one: the same faults, the same accounting.
    values = config(DAY, "udp", replay={"rate": "pps", "pps": 20000}, gateway={"source": source},
                    shm_subscribers=int(source == "af_xdp"),
                    faults={"seed": 9, "drop": 0.02, "duplicate": 0.02, "reorder": 0.02, "truncate": 0.01,
                            "corrupt": 0.01, "burst_drop": "3@0.005"})
    run = runner.execute(values, "udp-faults", root=tmp_path, echo=False)
    s = summary_of(run)
    assert s["verdict"]["status"] == "faults_accounted", s["verdict"]
    assert s["reconciliation"]["faults"]["injected"]["seed"] == 9
    assert s["reconciliation"]["udp"]["kernel_dropped"] == 0
    assert all(sub["identical_to_bbo_log"] for sub in s["reconciliation"]["subscribers"])
    assert leftover_processes() == []


@pytest.mark.parametrize("fault, counted, key, built_in, brought", [
    ("drop", "dropped_messages", "capture_missing_messages", "in sequence gaps, all missing from the capture itself",
     "missing from the capture itself"),
    ("reorder", "reordered_messages", "capture_late_messages",
     "arrived late (discarded), all out of order in the capture itself", "out of order in the capture itself")])
def test_what_a_capture_lacks_or_holds_late_is_lost_on_every_path(fault, counted, key, built_in, brought, tmp_path,
                                                                  capsys):
    """A capture whose session lacks messages (a recording that missed packets), or holds some after later ones:
    here the injector's drops or moves, its sidecar removed. In simulation the built-in gateway was LOST; the same
    gateway over UDP was NOT BALANCED, blaming its own stale flags, which were right ("no BBO event flagged stale
    (nothing lost or rejected)"); a brought gateway over UDP was LOSSLESS, and `itchbench inspect` said nothing of
    the gaps, exit 0. Now each path is LOST by those messages (the sidecar's count, before it was removed), said as
    the capture's own, and inspect says them, exit 1."""
    faulty = tmp_path / "faulty.pcap"
    faults.inject(DAY, faulty, seed=5, **{fault: 0.01})
    n = json.loads(faults.sidecar_path(faulty).read_text())[counted]
    faults.sidecar_path(faulty).unlink()
    assert n > 0
    capsys.readouterr()
    assert itchbench_main(["inspect", str(faulty)]) == 1
    assert (f": MISSING {n:,} message(s) of its session: " if fault == "drop" else f"no gap; {n:,} out of order") in \
        capsys.readouterr().out
    gateway = str(paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml")
    for transport, tables in (("sim", {}), ("udp", {"replay": {"rate": "pps", "pps": 20000}}),
                              ("udp", {"replay": {"rate": "pps", "pps": 20000}, "gateway_file": gateway,
                                       "subscribers": 0})):
        run = runner.execute(config(faulty, transport, **tables), transport, root=tmp_path, echo=False)
        s = summary_of(run)
        loss = s["reconciliation"]["loss"]
        assert s["verdict"]["status"] == "lost", (transport, tables, s["verdict"])
        assert loss[key] == n and not loss["lossless"], loss
        said = f"{n:,} messages {brought if 'gateway_file' in tables else built_in}"
        assert said in s["verdict"]["headline"], s["verdict"]["headline"]
    assert leftover_processes() == []


def test_a_capture_cut_short_ends_every_path_as_its_own_end(tmp_path):
    """The sample's pcap cut inside its last record (a capture whose writer was killed). Its simulation ended
    INCOMPLETE (input_ended_early); the same capture over UDP or serial ended INCOMPLETE (sender_failed), as if
    the sender were at fault, built-in or brought gateway alike, or (tcpreplay) INCOMPLETE (setup), its copy for
    the loopback not made. Now every path names the capture's own end, at the record its reader stopped on (counted
    here from the file's record headers)."""
    data = DAY.read_bytes()
    records = len(packets(DAY))
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:-10])
    gateway = str(paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml")
    udp_replay = {"sender": "udp-replay", "rate": "pps", "pps": 20000}
    for transport, tables in (("sim", {}), ("udp", {"replay": udp_replay}),
                              ("udp", {"replay": {"sender": "tcpreplay"}}), ("serial", {"serial": {"baud": 2_000_000}}),
                              ("udp", {"replay": udp_replay, "gateway_file": gateway, "subscribers": 0})):
        s = summary_of(runner.execute(config(cut, transport, **tables), transport, root=tmp_path, echo=False))
        headline = s["verdict"]["headline"]
        assert headline.startswith("INCOMPLETE (input_ended_early): "), (transport, tables, headline)
        assert f"{cut}: record {records}: truncated dump file" in headline, headline
    assert leftover_processes() == []


def test_what_a_capture_lacks_no_b_line_brings_back(tmp_path):
    """The capture with messages missing, sent on an A and a B line: the B line carries the same recording, so
    nothing of what it lacks comes back. The built-in gateway, which gave them up, and a brought one were LOSSLESS,
    "= the simulation of the whole session" — a session the run never had whole. Now LOST by what the capture
    lacks, and not said to have been offered again on the other line."""
    capture = tmp_path / "gapped.pcap"
    missing = faults.inject(DAY, capture, seed=5, drop=0.01)["dropped_messages"]
    faults.sidecar_path(capture).unlink()
    gateway = str(paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml")
    lines = {"replay": {"sender": "udp-replay", "rate": "pps", "pps": 20000}, "lines": {"b": True}}
    for tables in (lines, {**lines, "gateway_file": gateway, "subscribers": 0}):
        s = summary_of(runner.execute(config(capture, "udp", **tables), "ab", root=tmp_path, echo=False))
        headline = s["verdict"]["headline"]
        assert s["verdict"]["status"] == "lost", headline
        assert s["reconciliation"]["loss"]["capture_missing_messages"] == missing
        assert f"{missing:,} messages" in headline and "missing from the capture itself" in headline, headline
        assert "offered again" not in headline, headline


def test_what_cannot_be_declared_is_refused_and_nothing_is_written(tmp_path, capsys):
    """--declare of a binary ITCH file (numbered by place: nothing to declare there), of a capture cut short (no run
    reaches its end), and of a whole capture (nothing to declare): each said, and no sidecar left beside it."""
    itch = tmp_path / "day.itch"
    itch.write_bytes(b"".join(struct.pack(">H", len(m)) + m for _, _, msgs in (mold(p) for p in packets(DAY))
                              for m in msgs))
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(DAY.read_bytes()[:-10])
    whole = tmp_path / "whole.pcap"
    whole.write_bytes(DAY.read_bytes())
    capsys.readouterr()
    for capture, code, said in ((itch, 2, f"{itch}: a binary ITCH file numbers its messages by their place"),
                                (cut, 2, f"{cut}: it ends early ("), (whole, 0, f"{whole}: nothing to declare")):
        assert itchbench_main(["inspect", str(capture), "--declare"]) == code, capture
        out = capsys.readouterr()
        assert said in out.out + out.err, out
        assert not faults.sidecar_path(capture).exists()


def test_a_capture_holding_messages_twice_is_said_so_on_every_path(tmp_path):
    """A capture with second copies of some packets (its sidecar set aside): the built-in gateway over UDP said
    "127 duplicate messages ignored"; over serial, where serial-replay sends each message once, and of a brought
    gateway over UDP, which was sent them, nothing was said. Now each path says what became of them (the count
    the injector drew)."""
    capture = tmp_path / "twice.pcap"
    twice = faults.inject(DAY, capture, seed=3, duplicate=0.02)["duplicated_messages"]
    faults.sidecar_path(capture).unlink()
    gateway = str(paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml")
    udp = {"replay": {"sender": "udp-replay", "rate": "pps", "pps": 20000}}
    for transport, tables, said in (
            ("udp", udp, f"; {twice:,} duplicate messages ignored"),
            ("serial", {"serial": {"baud": 2_000_000}},
             f"; {twice:,} duplicated messages of the capture not sent (a line carries each message once)"),
            ("udp", {**udp, "gateway_file": gateway, "subscribers": 0},
             f"; {twice:,} duplicated messages of the capture sent twice")):
        s = summary_of(runner.execute(config(capture, transport, **tables), transport, root=tmp_path, echo=False))
        assert s["verdict"]["status"] == "lossless" and said in s["verdict"]["headline"], s["verdict"]["headline"]


def test_a_capture_holding_malformed_messages_is_rejected_whichever_gateway_reads_it(tmp_path):
    """A capture with malformed messages of its own (its sidecar set aside): the built-in gateway's run of it was
    REJECTED (exit 1), a brought gateway's LOSSLESS (exit 0), the messages unsaid, its BBO equal to a simulation
    that skips them. Now both REJECTED, the count the injector drew said. Of a capture with malformed packets, a
    brought gateway's LOST said only the messages missing; now its malformed packets too, as the built-in's does."""
    from itchbench.selftest import zoo

    corrupt, cut = tmp_path / "corrupt.pcap", tmp_path / "cut.pcap"
    rejected = faults.inject(DAY, corrupt, seed=3, corrupt=0.01)["corrupted_messages_rejected"]
    drawn = faults.inject(DAY, cut, seed=3, truncate=0.01)
    for capture in (corrupt, cut):
        faults.sidecar_path(capture).unlink()
    assert rejected and drawn["truncated_packets"]
    gateway = str(paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml")
    udp = {"replay": {"sender": "udp-replay", "rate": "pps", "pps": 20000}}
    for tables, said in (({}, f"REJECTED: {rejected:,} of 8,000 messages malformed ("),
                         ({"gateway_file": gateway, "subscribers": 0},
                          f"REJECTED: {rejected:,} of 8,000 messages malformed (")):
        s = summary_of(runner.execute(config(corrupt, "udp", **udp, **tables), "udp", root=tmp_path, echo=False))
        assert s["verdict"]["status"] == "rejected" and said in s["verdict"]["headline"], s["verdict"]["headline"]
        assert s["verdict"]["exit_status"] == 1 and not s["lossless"]
    # A gateway broken on purpose is still caught first: the zoo's that ends a packet at a message of a type it does
    # not know, losing the packet's messages after it.
    mutant = next(m for m in zoo.MUTANTS if m.name == "unknown-type-ends-packet")
    copy = zoo.materialise(mutant.example, mutant.edits, tmp_path / mutant.name)
    values = config(corrupt, "udp", **udp, gateway_file=str(copy / "itchbench.toml"), subscribers=0)
    s = summary_of(runner.execute(values, mutant.name, root=tmp_path, echo=False))
    assert s["verdict"]["status"] == "bbo_differs", s["verdict"]["headline"]
    values = config(cut, "udp", **udp, gateway_file=gateway, subscribers=0)
    s = summary_of(runner.execute(values, "udp", root=tmp_path, echo=False))
    assert s["verdict"]["status"] == "lost", s["verdict"]["headline"]
    assert (f"; {drawn['truncated_packets']:,} of {drawn['packets_out']:,} packets malformed ("
            in s["verdict"]["headline"]), s["verdict"]["headline"]


MIXED = {"drop": 0.01, "reorder": 0.01, "duplicate": 0.01, "truncate": 0.01, "corrupt": 0.01, "burst_drop": "3@0.005"}


def test_a_serial_line_is_held_to_a_sidecar_as_it_carries_the_capture(tmp_path):
    """Every kind of fault on the sample, over a serial line. serial-replay reads the capture in sequence order: a
    late message, a duplicate, a malformed packet never reach the line, and the gateway sees a late one as a gap.
    The sidecar's checks held the line's gateway to UDP's counters (late discards = reordered messages): the
    built-in gateway, right, was NOT BALANCED. Now the line's own rule: FAULTS ACCOUNTED, the built-in gateway
    and a brought one."""
    faulty = tmp_path / "faulty.pcap"
    faults.inject(DAY, faulty, seed=7, **MIXED)
    gateway = str(paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml")
    for tables in ({}, {"gateway_file": gateway, "subscribers": 0}):
        values = config(faulty, "serial", serial={"baud": 2_000_000}, **tables)
        s = summary_of(runner.execute(values, "serial", root=tmp_path, echo=False))
        assert s["verdict"]["status"] == "faults_accounted", (tables, s["verdict"]["headline"])


def test_a_capture_declares_its_own_faults_and_every_path_is_held_to_them(tmp_path, capsys):
    """A capture with faults of its own (a recording's: here the injector's, its sidecar set aside) is LOST on
    every path. `itchbench inspect --declare` writes the sidecar of what the capture itself holds — counted by the
    gateway's own sequence accounting in itch-inspect, checked here against the injector's sidecar —, and every
    path is then FAULTS ACCOUNTED, exactly; a gateway broken on purpose (a duplicate applied again, a cut packet
    applied to its cut) is still BBO DIFFERS."""
    from itchbench.selftest import zoo

    capture = tmp_path / "own.pcap"
    faults.inject(DAY, capture, seed=7, **MIXED)
    drawn = json.loads(faults.sidecar_path(capture).read_text())
    faults.sidecar_path(capture).unlink()
    capsys.readouterr()
    assert itchbench_main(["inspect", str(capture), "--declare"]) == 0
    assert "the capture's own: " in capsys.readouterr().out
    declared = faults.sidecar_of(capture)
    assert declared is not None
    # What it does not hold whole is what the injector dropped and cut; the rest as drawn.
    assert declared["dropped_messages"] == drawn["dropped_messages"] + drawn["truncated_messages"]
    for key in ("messages_in", "reordered_messages", "duplicated_messages", "truncated_packets",
                "corrupted_messages_rejected"):
        assert declared[key] == drawn[key], key
    assert faults.stale_from(declared) == faults.stale_from(drawn)
    assert itchbench_main(["inspect", str(capture), "--declare"]) == 2  # declared once
    gateway = paths.repo_root() / "examples" / "py-gateway"
    udp = {"replay": {"sender": "udp-replay", "rate": "pps", "pps": 20000}}
    for transport, tables in (("sim", {}), ("udp", udp), ("serial", {"serial": {"baud": 2_000_000}}),
                              ("udp", {**udp, "gateway_file": str(gateway / "itchbench.toml"), "subscribers": 0})):
        s = summary_of(runner.execute(config(capture, transport, **tables), transport, root=tmp_path, echo=False))
        assert s["verdict"]["status"] == "faults_accounted", (transport, tables, s["verdict"]["headline"])
    for name in ("copy-applied-twice", "cut-packet-applied"):
        mutant = next(m for m in zoo.MUTANTS if m.name == name)
        copy = zoo.materialise(mutant.example, mutant.edits, tmp_path / name)
        values = config(capture, "udp", **udp, gateway_file=str(copy / "itchbench.toml"), subscribers=0)
        s = summary_of(runner.execute(values, name, root=tmp_path, echo=False))
        assert s["verdict"]["status"] == "bbo_differs", (name, s["verdict"]["headline"])
    assert leftover_processes() == []


def test_a_capture_whose_type_bytes_are_a_newline_a_space_or_not_ascii_is_declared(tmp_path, capsys):
    """A damaged capture whose messages' type bytes are a newline, a space and 0xFF: `inspect --declare` failed
    with a traceback (ValueError: itch-inspect --list wrote the newline as itself, and the harness read a line with
    no sequence number). Now each is listed as one word (0x0A, 0x20, 0xFF), declared rejected with its sequence
    number (read here from the packets' MoldUDP64 headers), and a run of the capture is FAULTS ACCOUNTED."""
    data = bytearray(DAY.read_bytes())
    damaged: dict[int, int] = {}  # sequence number -> the type byte written
    off, index = 24, 0
    while off + 16 <= len(data) and len(damaged) < 3:
        incl = struct.unpack_from("<I", data, off + 8)[0]
        payload = off + 16 + 14 + (data[off + 16 + 14] & 0x0F) * 4 + 8
        seq, n = struct.unpack_from(">QH", data, payload + 10)
        if 0 < n < 0xFFFF and index % 400 == 399:  # the first message's type byte, after its 2-byte length
            data[payload + 22] = (0x0A, 0x20, 0xFF)[len(damaged)]
            damaged[seq] = data[payload + 22]
        off, index = off + 16 + incl, index + 1
    capture = tmp_path / "odd.pcap"
    capture.write_bytes(bytes(data))
    listing = subprocess.run([str(paths.tool("itch-inspect")), str(capture), "--list"], capture_output=True).stdout
    for seq, byte in damaged.items():
        assert f"\n{seq} 0x{byte:02X} rejected\n".encode() in listing, (seq, byte)
    assert itchbench_main(["inspect", str(capture), "--declare"]) == 0
    declared = faults.sidecar_of(capture)
    assert declared is not None and declared["corrupted_messages_rejected"] == 3
    assert declared["sequences"]["corrupted_rejected"] == sorted(damaged)
    s = summary_of(runner.execute(config(capture, "sim"), "sim", root=tmp_path, echo=False))
    assert s["verdict"]["status"] == "faults_accounted", s["verdict"]["headline"]


def test_a_sidecar_left_beside_another_capture_is_refused_not_held_to_it(tmp_path, capsys):
    """A capture's faults declared, then the capture recorded again (here: the whole sample put in its place) with
    the old sidecar still beside it. Every run of it was held to the faults of the capture before: the built-in
    gateway, right, NOT BALANCED by counters the new capture never had. So for a faulted capture replaced by one of
    another seed. Each is now refused before a run exists (exit 2), the sidecar and the way out named; the same
    capture back in place runs as before."""
    declared = tmp_path / "own.pcap"
    faults.inject(DAY, declared, seed=7, drop=0.01, duplicate=0.01)
    kept = declared.read_bytes()
    faults.sidecar_path(declared).unlink()
    assert itchbench_main(["inspect", str(declared), "--declare"]) == 0
    faulted, other = tmp_path / "faulted.pcap", tmp_path / "other.pcap"
    faults.inject(DAY, faulted, seed=7, drop=0.01)
    faults.inject(DAY, other, seed=8, drop=0.01)
    declared.write_bytes(DAY.read_bytes())
    faulted.write_bytes(other.read_bytes())
    capsys.readouterr()
    for capture, again in ((declared, "declare its faults again"), (faulted, "make it again with itchbench faults")):
        out = tmp_path / f"run-{capture.stem}"
        assert itchbench_main(["sim", str(capture), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"{faults.sidecar_path(capture)} describes another capture than {capture.name} is now" in err, err
        assert again in err and not out.exists()
    declared.write_bytes(kept)
    s = summary_of(runner.execute(config(declared, "sim"), "sim", root=tmp_path, echo=False))
    assert s["verdict"]["status"] == "faults_accounted", s["verdict"]["headline"]


def test_bad_fault_options_are_clear_errors(tmp_path, capsys):
    out = tmp_path / "x.pcap"
    # Refused by itch-faults (its exit 2): the user's bad argument, so a usage error of itchbench's too.
    assert itchbench_main(["faults", str(DAY), str(out), "--seed", "1", "--burst-drop", "nonsense"]) == 2
    # Said as the user's argument refused, not as a tool's failure the user never ran ("itch-faults failed (exit
    # 2): itch-faults: … (see itch-faults --help)", as it had been).
    assert capsys.readouterr().err == ("itchbench: --burst-drop takes LEN@P, e.g. 5@0.001 (LEN >= 1, 0 <= P <= 1)\n")
    assert not out.exists()


def test_a_list_of_messages_to_reject_that_is_not_sequence_numbers_is_refused_with_its_line(tmp_path):
    listed = tmp_path / "reject.txt"
    listed.write_text("45\n600\nsix hundred\n")
    out = tmp_path / "x.pcap"
    done = subprocess.run([str(paths.tool("itch-faults")), str(DAY), str(out), "--seed", "0", "--reject-seqs",
                           str(listed)], capture_output=True, text=True)
    assert done.returncode == 2 and "reject.txt line 3 is not a sequence number: 'six hundred'" in done.stderr
    assert not out.exists()
