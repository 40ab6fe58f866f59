"""Compact latency records (version 5) against wide ones (version 4): every field of every message equal.

The expected values are the wide log's: a gateway run writes one (`--latency-format wide`), or the test writes one
byte by byte from FORMAT.md's version-4 layout with values at the edges of each compact field; `latency-log-compact`
rewrites it with the encoder the gateway itself writes through, and the reader decodes it.
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from itchbench import paths
from itchbench.analysis import latency_pass, logs
from itchbench.captures import fixtures

HEAD = 160  # version 4 and 5: the common header and the clock line
SLOT = 20
U64 = 2**64


def compact(src: Path, dst: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(paths.tool("latency-log-compact")), str(src), str(dst)], capture_output=True,
                          text=True, check=False)


def gateway_run(capture: Path, out: Path, *flags: str) -> Path:
    out.mkdir()
    subprocess.run([str(paths.tool("itch-gateway")), "--source", "sim", "--capture", str(capture), "--out", str(out),
                    *flags], check=True, capture_output=True)
    return out / "latency.lat"


def assert_same_messages(wide: logs.LogFile, small: logs.LogFile) -> None:
    assert wide.header["version"] == 4 and small.header["version"] == 5
    assert small.dtype == wide.dtype and small.count == wide.count
    assert small.records.tobytes() == wide.records.tobytes()  # every stamp, seq, origin, locate, type and flag
    for name in ("stage_clock", "origin_clock", "stages", "run_id", "commit"):
        assert small.header[name] == wide.header[name]
    assert small.clock_line == wide.clock_line


@pytest.fixture(scope="session")
def nasdaq_day_itch(tmp_path_factory) -> Path:
    """A binary ITCH file: one read stamp and one ITCH-timestamp origin a message (a pcap has them a datagram)."""
    path = tmp_path_factory.mktemp("itch") / "day.itch"
    subprocess.run([str(paths.tool("itch-synth")), "--profile", "nasdaq-day", "--messages", "200000", "--seed", "3",
                    "--format", "itch", "--out", str(path)], check=True, capture_output=True)
    return path


@pytest.mark.parametrize("source", ["seed-workload", "nasdaq-day-sample", "itch-file"])
def test_a_real_run_compacted_holds_every_stamp_of_every_message(tmp_path, source, nasdaq_day_itch):
    capture = nasdaq_day_itch if source == "itch-file" else next(
        f.path for f in fixtures.load_manifest() if f.name == source)
    wide_path = gateway_run(capture, tmp_path / "wide", "--latency-format", "wide", "--run-id", "r1",
                            "--commit", "abc")
    done = compact(wide_path, tmp_path / "compact.lat")
    assert done.returncode == 0, done.stderr
    wide, small = logs.read_latency(wide_path), logs.read_latency(tmp_path / "compact.lat")
    assert_same_messages(wide, small)
    # Read in chunks whose ends fall anywhere, escapes included: the same messages, in ns.
    for chunk in (1, 7, 4096):
        got = np.concatenate(list(logs.iter_records(small, chunk)))
        assert got.tobytes() == logs.in_ns(wide, wide.records).tobytes()
    # Well under half the bytes: the point of the format.
    assert (tmp_path / "compact.lat").stat().st_size < 0.45 * wide_path.stat().st_size


def test_the_gateway_writes_compact_logs_by_default_and_reports_read_them(tmp_path, nasdaq_day_itch):
    run = gateway_run(nasdaq_day_itch, tmp_path / "run").parent
    log = logs.read_latency(run / "latency.lat")
    gateway = __import__("json").loads((run / "gateway.json").read_text())
    assert log.header["version"] == 5 and log.count == 200000 == gateway["logs"]["latency_records"]
    # The file is the header and the slots: one a message, one an escape.
    assert (run / "latency.lat").stat().st_size == HEAD + SLOT * (200000 + gateway["logs"]["latency_escapes"])
    assert gateway["logs"]["latency_format"] == "compact"
    rec = log.records
    assert np.array_equal(rec["seq"], np.arange(1, 200001))
    assert np.all(rec["t_read"] <= rec["t_decoded"]) and np.all(rec["t_decoded"] <= rec["t_book"])
    lat = latency_pass.scan(run)
    assert lat.stage["receive_to_book"].count() == 200000


def _wide_log(path: Path, stages: int, rows: list[tuple[int, int, list[int]]]) -> Path:
    """Version 4 by hand (FORMAT.md): rows of (seq, t_origin, stamps of the stages named), stage clock 1 (ns)."""
    n = bin(stages).count("1")
    header = bytearray(HEAD)
    header[0:8] = b"ITCHBLOG"
    struct.pack_into("<HHHHHHIQQ", header, 8, 4, HEAD, 24 + 8 * n, 1, 1, 3, 1, len(rows), 0)
    header[120] = stages
    body = b"".join(struct.pack("<QQHcB4x", seq, origin, 7 + i % 3, b"AEX"[i % 3:i % 3 + 1], 0x80 | (i % 8))
                    + struct.pack(f"<{n}Q", *stamps) for i, (seq, origin, stamps) in enumerate(rows))
    path.write_bytes(bytes(header) + body)
    return path


# Values at the edges of each compact field (FORMAT.md, version 5): `first` holds a difference up to 2^32 - 2 from
# the base, a step up to 2^16 - 2 from the stamp before it, origin_delta up to 2^32 - 1, all modulo 2^64; beyond, an
# escape slot carries the value. Each row: seq, origin, (read, decoded, book, published), and the escape slots the
# format calls for, counted by hand from the state the row before left (next seq, previous origin, base).
B = 10**15
EDGES = [
    (1, 0, [B, B + 10, B + 20, 0], 1),             # base 0 -> B (the difference 10^15 does not fit)
    (2, 2**32 - 1, [B + 2**32 - 2, B + 2**32 - 2 + 0xFFFE, B + 2**32 - 2 + 0xFFFE, 0], 0),  # each at its largest
    (3, 2**33, [B + 2**32 - 1, B + 2**32 - 1 + 0xFFFF, B + 2**32 + 0xFFFF, 0], 3),  # origin +2^32 + 1, first
    #                                                 2^32 - 1 (base moves), step 0xFFFF (stamp escaped)
    (4, 2**33, [0, B + 2**40, 0, 0], 1),          # no read stamp: decoded measured from the base, too far
    (9, 2**33 - 5, [B + 2**40, B + 2**40, B + 2**40, B + 2**40 + 1], 3),  # seq jump, origin back, base moves
    (7, 2**64 - 1, [U64 - 3, U64 - 2, U64 - 2, U64 - 1], 3),  # seq back, origin far, base to the top of u64
    (8, 2**64 - 1, [5, 4, 3, 0], 2),              # read: 5 - (2^64 - 3) = 8 modulo 2^64, fits; the two after go back
    (9, 2**64 - 1, [0, 0, 0, 0], 0),              # nothing stamped
    (2**64 - 1, 0, [6, 7, 8, 9], 1),              # the largest seq; origin 0 - (2^64 - 1) = 1 and read 9 modulo 2^64
]


def test_values_at_the_edges_of_every_field_round_trip_with_the_escapes_the_format_calls_for(tmp_path):
    stages = 0b11110  # read, decoded, book, published
    wide_path = _wide_log(tmp_path / "edges.lat", stages, [(seq, origin, stamps) for seq, origin, stamps, _ in EDGES])
    done = compact(wide_path, tmp_path / "compact.lat")
    assert done.returncode == 0, done.stderr
    wide, small = logs.read_latency(wide_path), logs.read_latency(tmp_path / "compact.lat")
    assert_same_messages(wide, small)
    escape = (small.stored["flags"] & logs.ESCAPE_SLOT) != 0
    per_message = np.diff(np.concatenate([[-1], np.flatnonzero(~escape)])) - 1
    assert list(per_message) == [e for *_, e in EDGES]
    for chunk in (1, 2, 3):
        assert np.concatenate(list(logs.iter_records(small, chunk))).tobytes() == wide.records.tobytes()


def test_a_kernel_stamp_first_and_the_step_to_the_read_round_trip(tmp_path):
    """UDP records every stage; the read comes tens of µs after the kernel's stamp (beyond a step's 2^16 ticks)."""
    rows = [(s, 0, [B + 1000 * s, B + 1000 * s + d, B + 1000 * s + d + 30, B + 1000 * s + d + 60, 0])
            for s, d in zip(range(1, 200), [50, 0xFFFE, 0xFFFF, 180_000] * 50)]
    wide_path = _wide_log(tmp_path / "udp.lat", 0b11111, rows)
    assert compact(wide_path, tmp_path / "compact.lat").returncode == 0
    assert_same_messages(logs.read_latency(wide_path), logs.read_latency(tmp_path / "compact.lat"))


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:HEAD + 8] + b"\x63" + b[HEAD + 9:], "kind 99"),  # the first slot is an escape: its kind byte
])
def test_an_escape_of_an_unknown_kind_is_refused(tmp_path, damage, message):
    wide_path = _wide_log(tmp_path / "w.lat", 0b11110, [(1, 0, [B, B + 1, B + 2, 0])])
    compact(wide_path, tmp_path / "c.lat")
    bad = tmp_path / "bad.lat"
    bad.write_bytes(damage((tmp_path / "c.lat").read_bytes()))
    with pytest.raises(logs.LogFormatError, match=message):
        logs.read_latency(bad).records


@pytest.mark.parametrize("why, edit", [
    ("version 5 in", lambda b: b[:8] + b"\x05" + b[9:]),
    ("never finalized", lambda b: b[:20] + b"\x00" + b[21:]),
    ("does not match", lambda b: b[:-3]),
])
def test_the_rewriter_refuses_what_it_cannot_rewrite_whole(tmp_path, why, edit):
    wide_path = _wide_log(tmp_path / "w.lat", 0b11110, [(1, 0, [B, B + 1, B + 2, 0]), (2, 0, [B + 9, 0, 0, 0])])
    bad = tmp_path / "bad.lat"
    bad.write_bytes(edit(wide_path.read_bytes()))
    done = compact(bad, tmp_path / "out.lat")
    assert done.returncode == 2 and done.stderr.startswith("latency-log-compact: ")


# Any sequence of messages: values drawn near each field's edges (and anywhere in u64), zeros included.
_EDGE = st.sampled_from([0, 1, 0xFFFE, 0xFFFF, 0x10000, 2**32 - 2, 2**32 - 1, 2**32, 2**63, U64 - 1])
_STEP = st.one_of(st.integers(0, 300), _EDGE, st.integers(0, U64 - 1))
_ROW = st.tuples(st.one_of(st.just(None), st.integers(0, U64 - 1)),  # seq: None = the previous plus 1
                 _STEP, st.lists(st.one_of(st.just(0), _STEP), min_size=5, max_size=5))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_ROW, min_size=1, max_size=40), stages=st.integers(1, 31))
# Found by this test: after the largest sequence number the next one wraps to 0, also when the reader carries it
# from one chunk to the next.
@example(rows=[(None, 0, [0, 0, 0, 1, 0xFFFF]), (None, 2**32, [0, 0, 0, 1, 0xFFFF]), (0, 0, [0, 0, 0, 0, 1]),
               (U64 - 1, 0, [0, 0, 0, 1, 0xFFFF]), (None, 0, [0, 0, 0, 1, 0xFFFF])], stages=31)
def test_any_messages_round_trip_through_the_compact_form(tmp_path, rows, stages):
    """Stamps drawn as differences (small, at an encoding's edge, or anywhere in u64) added modulo 2^64 to a
    running value, zeros where not stamped: whatever the gateway could hand over, the compact log gives back."""
    n = bin(stages).count("1")
    seq, origin, t, wide_rows = 0, 0, 10**15, []
    for next_seq, d_origin, steps in rows:
        seq = (seq + 1) % U64 if next_seq is None else next_seq
        origin = (origin + d_origin) % U64
        stamps = []
        for step in steps[:n]:
            t = (t + step) % U64
            stamps.append(t if step else 0)
        wide_rows.append((seq, origin, stamps))
    wide_path = _wide_log(tmp_path / f"w{stages}.lat", stages, wide_rows)
    done = compact(wide_path, tmp_path / f"c{stages}.lat")
    assert done.returncode == 0, done.stderr
    wide, small = logs.read_latency(wide_path), logs.read_latency(tmp_path / f"c{stages}.lat")
    assert small.records.tobytes() == wide.records.tobytes()
    assert np.concatenate(list(logs.iter_records(small, 3))).tobytes() == wide.records.tobytes()
