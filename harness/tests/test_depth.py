"""Depth of book (docs/book-and-bbo.md, "Depth"): itchbench sim --levels N and dump depth, as a user runs them. The
expected events come from an independent Python book (independent_bbo.DepthBook), never from the gateway's own."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from itchbench import paths, rundir
from itchbench.analysis import dump, logs
from itchbench.captures import fixtures
from itchbench.cli import main as itchbench_main
from itchbench.gateways import blackbox, contract
from itchbench.history import store
from itchbench.runs import reconcile, runner, scenario, sim, verdict
from itchbench.selftest import zoo

from independent_bbo import DepthBook, depth_events, level_changes, mold_messages, top_level_changes
from live_helpers import another_run, config, make_capture
from test_compiled_scan import assert_same

SAMPLE = next(f for f in fixtures.load_manifest() if f.name == "nasdaq-day-sample").path
# References, locates, prices and shares across the spec's widths, levels of more than 2^32 shares among them.
WIDE = next(f for f in fixtures.load_manifest() if f.name == "wide-fields-sample").path


@pytest.fixture(scope="session")
def deep_session(tmp_path_factory):
    """An unseen generated session whose books stand many levels deep (the deep-book profile)."""
    return make_capture(tmp_path_factory.mktemp("deep"), "deep.pcap", "--profile", "deep-book", "--seed", "29",
                        "--messages", "20000")


def _dumped(run, capsys, what: str) -> tuple[str, list[tuple]]:
    capsys.readouterr()
    assert itchbench_main(["dump", what, str(run)]) == 0
    text = capsys.readouterr().out
    rows = [(int(r[0]), r[1], *map(int, r[2:])) for r in list(csv.reader(io.StringIO(text)))[1:]]
    return text.splitlines()[0], rows


def test_one_level_is_the_bbo_stream(tmp_path, capsys):
    run = sim.run_sim(SAMPLE, tmp_path / "run", echo=False, levels=1)
    header, depth = _dumped(run, capsys, "depth")
    assert header == "seq,stock,bid1_px,bid1_qty,ask1_px,ask1_qty"
    _, bbo = _dumped(run, capsys, "bbo")
    assert depth == [row[:-1] for row in bbo] and len(depth) > 1000  # the stale column aside, event for event


@pytest.mark.parametrize("levels", [5, 10])
@pytest.mark.parametrize("capture", ["sample", "deep", "wide"])
def test_depth_equals_an_independent_book(capture, levels, deep_session, tmp_path, capsys, monkeypatch):
    path = {"sample": SAMPLE, "deep": deep_session, "wide": WIDE}[capture]
    # The log read back (for the run's summary, and by dump) in parts of 7 events: events carried between parts.
    monkeypatch.setattr(logs, "DEPTH_EVENT_BYTES_AT_ONCE", 7 * logs.depth_dtype(levels).itemsize)
    run = sim.run_sim(path, tmp_path / "run", echo=False, levels=levels)
    header, rows = _dumped(run, capsys, "depth")
    assert header.split(",") == dump.depth_columns(levels)
    assert header.endswith(f"ask{levels}_px,ask{levels}_qty")
    expected = depth_events(path, levels)
    assert rows == expected
    summary = rundir.read_json(run / "summary.json")
    assert summary["balanced"] and summary["depth"] == {"levels": levels, "events": len(expected),
                                                         "digest": summary["depth"]["digest"]}
    assert f"{len(expected):,} depth events ({levels} levels)" in summary["verdict"]["headline"]
    if capture == "deep":  # deep books: events below the top, and a level filled beyond the fifth
        assert len(expected) > len(depth_events(path, 1)) * 1.2
        assert any(row[2 + 2 * (levels - 1)] for row in expected)
    if capture == "wide":  # a level of more than 2^32 shares among them (test_fixtures.py: the other widths)
        assert any(q > 1 << 32 for row in expected for q in row[3::2])


@pytest.mark.parametrize("capture", ["sample", "deep", "wide"])
def test_every_level_equals_an_independent_book(capture, deep_session, tmp_path, capsys):
    path = {"sample": SAMPLE, "deep": deep_session, "wide": WIDE}[capture]
    run = sim.run_sim(path, tmp_path / "run", echo=False, levels="all")
    capsys.readouterr()
    assert itchbench_main(["dump", "depth", str(run)]) == 0
    lines = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert lines[0] == ["seq", "stock", "side", "price", "shares"]
    rows = [(int(seq), stock, side, int(price), int(shares)) for seq, stock, side, price, shares in lines[1:]]
    expected = level_changes(path)
    assert rows == expected
    summary = rundir.read_json(run / "summary.json")
    assert summary["balanced"] and summary["depth"]["levels"] == "all" and summary["depth"]["events"] == len(expected)
    assert f"{len(expected):,} level changes (every level)" in summary["verdict"]["headline"]
    # Levels left (shares 0) and replaces that moved two levels at once (the old price's first) are among them.
    assert any(r[4] == 0 for r in rows)
    assert sum(a[0] == b[0] and a[1:3] == b[1:3] for a, b in zip(rows, rows[1:])) > 10
    if capture == "deep":  # far more changes than the top five show
        assert len(expected) > len(depth_events(path, 5)) * 1.2
    if capture == "wide":  # a level's shares past 2^32: the log's high-shares slots (FORMAT.md)
        assert any(r[4] > 1 << 32 for r in rows)
    # The results store keeps their count; "every level" is no number of levels to judge a trend of.
    metrics = store.metrics_of(run)
    assert metrics["depth.events"] == len(expected) and "depth.levels" not in metrics


def test_the_same_capture_gives_the_same_depth_bytes(deep_session, tmp_path):
    first = sim.run_sim(deep_session, tmp_path / "a", echo=False, levels=5)
    second = sim.run_sim(deep_session, tmp_path / "b", echo=False, levels=5)
    assert (first / "depth.dep").read_bytes()[128:] == (second / "depth.dep").read_bytes()[128:]
    assert rundir.read_json(first / "summary.json")["depth"] == rundir.read_json(second / "summary.json")["depth"]


# Version-3 slots built from FORMAT.md ("Level change slot") with struct, not the reader's dtypes.
NINE_THIRTY = 34_200_000_000_000  # 09:30, ns since midnight


def _change(px: int, qty_low: int, timestamp_off: int, locate: int, seq_off: int, flags: int) -> bytes:
    return struct.pack("<IIIHBB", px, qty_low, timestamp_off, locate, seq_off, flags)


def _anchor(seq: int, timestamp: int) -> bytes:
    return struct.pack("<Q", seq) + timestamp.to_bytes(6, "little") + bytes([0, 0x80 | 0x10])


def _high(shares_high: int) -> bytes:
    return struct.pack("<I", shares_high) + bytes(11) + bytes([0x80 | 0x20])


def _slots_log(path: Path, slots: list[bytes], finalized: bool = True) -> Path:
    """A version-3 depth log of every level (its records are its events) holding these slots."""
    h = np.zeros(1, logs.HEADER_DTYPE)
    h["magic"], h["version"], h["header_size"], h["record_size"], h["kind"] = logs.MAGIC, 3, 128, 16, 6
    h["flags"], h["record_count"] = (logs.FLAG_FINALIZED, len(slots)) if finalized else (0, 0)
    path.write_bytes(h.tobytes() + b"".join(slots))
    return path


# Offsets at their widest (seq + 255, timestamp + 2^32 - 1), an anchor moving both on, shares of 5,000,000,000
# (0x1_2A05_F200) split over a high-shares slot and the change's low 32 bits, the flags and side of each.
SLOTS = [
    _anchor(1000, NINE_THIRTY),
    _change(1234500, 300, 0, 7, 0, 0x80 | 0x04),
    _change(1235000, 0, 0, 7, 0, 0x80 | 0x01),
    _change(1, 5, 2**32 - 1, 9, 255, 0x80),
    _anchor(1256, NINE_THIRTY + 10),
    _high(1),
    _change(2, 0x2A05F200, 3, 9, 1, 0x80 | 0x02 | 0x04),
    _change(3, 7, 4, 9, 2, 0x80),
]
SLOTS_READ_BACK = [
    (1000, NINE_THIRTY, 7, 0x80, b"B", 1234500, 300),
    (1000, NINE_THIRTY, 7, 0x81, b"S", 1235000, 0),
    (1255, NINE_THIRTY + 2**32 - 1, 9, 0x80, b"S", 1, 5),
    (1257, NINE_THIRTY + 13, 9, 0x82, b"B", 2, 5_000_000_000),
    (1258, NINE_THIRTY + 14, 9, 0x80, b"S", 3, 7),
]


def _tuples(rec: np.ndarray) -> list[tuple]:
    return [(int(r["seq"]), int(r["timestamp"]), int(r["stock_locate"]), int(r["flags"]), r["side"], int(r["px"]),
             int(r["qty"])) for r in rec]


def test_depth_slots_read_back_as_level_change_records(tmp_path):
    rec = logs.read_depth(_slots_log(tmp_path / "v3.dep", SLOTS)).records
    assert rec.dtype == logs.LEVEL_CHANGE_DTYPE
    assert _tuples(rec) == SLOTS_READ_BACK


@pytest.mark.parametrize("part", range(1, len(SLOTS) + 1))
def test_depth_slots_read_a_part_at_a_time_are_the_slots_read_whole(tmp_path, part):
    # Every part size: parts that begin with no anchor of their own (the last one before carried over), a part
    # that ends with a high-shares slot (its change in the next part), and a part that is all anchors.
    log = logs.read_depth(_slots_log(tmp_path / "v3.dep", SLOTS))
    assert _tuples(np.concatenate([p.copy() for p in logs.iter_records(log, part)])) == SLOTS_READ_BACK


@pytest.mark.parametrize("slots, words", [
    ([_change(1, 1, 0, 1, 0, 0x80), _anchor(5, 0)], "depth slot 0 is a level change with no anchor before it"),
    ([_anchor(5, 0), _high(1), _anchor(6, 0), _change(1, 1, 0, 1, 0, 0x80)],
     "depth slot 1 holds high shares, and no level change follows it"),
    ([_anchor(5, 0), _change(1, 1, 0, 1, 0, 0x80), _high(1)],
     "depth slot 2 holds high shares, and no level change follows it"),
    ([_anchor(5, 0), _change(1, 1, 0, 1, 0, 0x80 | 0x40)], "depth slot 1 has flags 0xc0, no slot's"),
    ([_anchor(5, 0), _change(1, 1, 0, 1, 0, 0x80 | 0x30)], "depth slot 1 has flags 0xb0, no slot's"),
])
def test_depth_slots_out_of_their_order_are_refused_with_the_slot_named(tmp_path, slots, words):
    log = logs.read_depth(_slots_log(tmp_path / "bad.dep", slots))  # the header is whole: refused when read back
    with pytest.raises(logs.LogFormatError, match=words):
        log.records
    with pytest.raises(logs.LogFormatError, match=words):
        logs.bbo_digest(log)
    with pytest.raises(logs.LogFormatError, match=words):  # a slot at a time: the slot named by its place in the log
        list(logs.iter_records(log, 1))


def test_a_run_whose_depth_slots_are_out_of_order_does_not_balance_and_names_the_slot(tmp_path):
    # A gateway's depth log whose second slot carries a flag bit no slot has: reconciliation reads the log (its
    # header is whole), cannot read its level changes back, and says so with the slot named; nothing crashes.
    run = tmp_path / "run"
    assert itchbench_main(["sim", str(SAMPLE), "--levels", "5", "--no-latency-log", "--out", str(run)]) == 0
    path = run / "depth.dep"
    data = bytearray(path.read_bytes())
    data[logs.HEADER_SIZE + 16 + 15] |= 0x40
    path.write_bytes(bytes(data))
    checks: dict[str, bool] = {}
    got = reconcile._depth(SimpleNamespace(dir=run, values={"levels": 5}, say=None),
                           rundir.read_json(run / "gateway.json"), checks)
    assert got["events"] == 0 and "depth slot 1 has flags" in got["refused"]
    refused = [k for k, v in checks.items() if k.startswith("depth log holds together")]
    assert len(refused) == 1 and not checks[refused[0]] and "depth slot 1 has flags" in refused[0]


def test_a_depth_log_never_closed_is_read_to_its_last_whole_level_change(tmp_path):
    # Cut after the anchor and high-shares slot of a change never written: the changes before it are read.
    path = _slots_log(tmp_path / "crashed.dep", [_anchor(5, 100), _change(1, 1, 0, 1, 0, 0x80), _anchor(900, 200),
                                                 _high(3), bytes(16)], finalized=False)
    with pytest.warns(logs.TruncatedLogWarning, match="never closed"):
        rec = logs.read_depth(path).records
    assert [(int(r["seq"]), int(r["qty"])) for r in rec] == [(5, 1)]


def test_the_depth_summary_read_a_part_at_a_time_is_the_log_read_whole(tmp_path, monkeypatch):
    # Reconciliation's one pass (events, level changes, digest) against the log read back whole and hashed at once,
    # with parts of a few events each: events that go on from one part into the next, carried over.
    run = tmp_path / "run"
    assert itchbench_main(["sim", str(SAMPLE), "--levels", "5", "--no-latency-log", "--out", str(run)]) == 0
    log = logs.read_depth(run / "depth.dep")
    whole = logs.DepthSummary(len(log.changes), len(log.records),
                              "sha256:" + hashlib.sha256(log.records.tobytes()).hexdigest())
    assert whole.events > 1000 and whole.changes > whole.events
    assert logs.depth_summary(logs.read_depth(run / "depth.dep")) == whole
    monkeypatch.setattr(logs, "DEPTH_EVENT_BYTES_AT_ONCE", 7 * logs.depth_dtype(5).itemsize)
    assert logs.depth_summary(logs.read_depth(run / "depth.dep")) == whole


def test_a_malformed_depth_log_is_refused_with_the_record_named(tmp_path):
    # The sample's depth log with its 100th record made to take out a level its stock's top 5 does not hold (a
    # price one tick off), then with that record's side byte neither B nor S: each read is refused, the record named.
    run = tmp_path / "run"
    assert itchbench_main(["sim", str(SAMPLE), "--levels", "5", "--no-latency-log", "--out", str(run)]) == 0
    path = run / "depth.dep"
    stored = logs.read_depth(path).changes.copy()
    for field, value, words in (("px", None, "depth record 99 takes price"), ("side", b"X", "depth record 99 has side")):
        broken = stored.copy()
        if value is None:
            broken["px"][99], broken["qty"][99] = broken["px"][99] + 1, 0
        else:
            broken[field][99] = value
        as_version_2(path, broken)
        with pytest.raises(logs.LogFormatError, match=words):
            logs.read_depth(path).records
        with pytest.raises(logs.LogFormatError, match=words):
            logs.bbo_digest(logs.read_depth(path))


def test_levels_out_of_range_and_a_run_without_depth_are_refused(tmp_path, capsys):
    itchbench = [sys.executable, "-m", "itchbench.cli"]
    bad = subprocess.run([*itchbench, "sim", str(SAMPLE), "--levels", "65", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--levels" in bad.stderr and not (tmp_path / "x").exists()
    # The gateway itself says so too, and exits 2: it once aborted (SIGABRT) on an exception no one caught.
    (tmp_path / "gw").mkdir()
    gateway = subprocess.run([str(paths.tool("itch-gateway")), "--source", "sim", "--capture", str(SAMPLE), "--out",
                              str(tmp_path / "gw"), "--levels", "65"], capture_output=True, text=True)
    assert gateway.returncode == 2 and "--levels 65: 0 to 64 levels a side, or all" in gateway.stderr, gateway.stderr
    words = subprocess.run([*itchbench, "sim", str(SAMPLE), "--levels", "every", "--out", str(tmp_path / "y")],
                           capture_output=True, text=True)
    assert words.returncode == 2 and "'every': levels take 0 to 64" in words.stderr and not (tmp_path / "y").exists()
    run = sim.run_sim(SAMPLE, tmp_path / "plain", echo=False)
    no_depth = subprocess.run([*itchbench, "dump", "depth", str(run)], capture_output=True, text=True)
    assert no_depth.returncode == 2 and "no depth.dep" in no_depth.stderr and no_depth.stdout == ""


def _depth_ref() -> pd.DataFrame:
    """Two depth events of two levels a side, written by hand."""
    return pd.DataFrame([[10, 1, 1000, 100, 900, 50, 1100, 70, 1200, 30],
                         [11, 1, 1000, 100, 900, 50, 1100, 70, 0, 0]], columns=blackbox.columns(2))


def _compared_depth_differs(tmp_path, capsys) -> dict:
    """itchbench compare of tmp_path/base against tmp_path/head, whose depth differs: a regression of the depth
    output, said so; the one capture's outputs compared."""
    capsys.readouterr()
    assert itchbench_main(["compare", str(tmp_path / "base"), str(tmp_path / "head"), "--bbo-only", "--out",
                           str(tmp_path / "cmp")]) == 1
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert result["headline"].startswith("REGRESSION: DEPTH OUTPUT DIFFERS on ")
    (out,) = result["outputs"].values()
    return out


def test_a_brought_gateways_depth_lines_are_read_in_csv_and_jsonl(tmp_path):
    rows = _depth_ref()
    csv_file, jsonl_file = tmp_path / "out.csv", tmp_path / "out.jsonl"
    csv_file.write_text("".join(",".join(map(str, r)) + "\n" for r in rows.itertuples(index=False))
                        + "12,1,1000,100\n")  # a BBO-wide line in a depth stream: malformed, not a short event
    jsonl_file.write_text("".join(json.dumps(dict(zip(rows.columns, map(int, r)))) + "\n"
                                  for r in rows.itertuples(index=False)))
    for path, fmt, bad in ((csv_file, "csv", 1), (jsonl_file, "jsonl", 0)):
        events, malformed, _ = blackbox.read_events(path, fmt, stamped=False, levels=2)
        assert malformed == bad
        assert events[blackbox.columns(2)].values.tolist() == rows.values.tolist()


def test_a_wrong_depth_event_names_the_level_that_differs():
    ref = _depth_ref()
    got = ref.copy()
    got.loc[1, "ask2_px"], got.loc[1, "ask2_qty"] = 1200, 25  # the second event kept a level that left
    check = blackbox.check(got.assign(t_recv=0), ref, {}, "exact")
    assert (check["wrong"], check["missing"], check["extra"]) == (1, 0, 0)
    assert check["first_difference"]["level"] == "ask level 2: 25 shares at 1200, expected no level"
    assert "ask level 2: 25 shares at 1200, expected no level; expected seq 11" in verdict.difference_words(check)


def test_a_contract_asks_one_to_sixty_four_levels_or_all(tmp_path):
    text = (zoo.example_dir(zoo.PY) / "itchbench.toml").read_text()
    for levels, ok in ((0, True), (5, True), (64, True), ('"all"', True), (65, False), (-1, False), ('"5"', False),
                       ('"every"', False)):
        (tmp_path / "itchbench.toml").write_text(re.sub(r"(?m)^levels = 0 .*$", f"levels = {levels}", text))
        if ok:
            assert contract.load(tmp_path / "itchbench.toml").bbo_levels == (levels if levels != '"all"' else "all")
        else:
            with pytest.raises(contract.ContractError, match="bbo.levels"):
                contract.load(tmp_path / "itchbench.toml")
    # Every level's changes are matched change by change: a state check has nothing to compare them with.
    (tmp_path / "itchbench.toml").write_text(re.sub(r"(?m)^levels = 0 .*$", 'levels = "all"',
                                                    text.replace('check = "exact"', 'check = "state"')))
    with pytest.raises(contract.ContractError, match='bbo.check.*levels = "all" is checked change by change'):
        contract.load(tmp_path / "itchbench.toml")


def test_a_brought_gateways_level_changes_are_read_in_csv_and_jsonl_and_the_wrong_one_named(tmp_path):
    # Three changes written by hand: a replace's two (seq 10) and an execution's; by symbol too.
    rows = [(10, "AAPL", "S", 1100, 0), (10, "AAPL", "S", 1200, 300), (11, "1", "B", 900, 40)]
    lines = [",".join(map(str, r)) for r in rows]
    csv_file, jsonl_file = tmp_path / "out.csv", tmp_path / "out.jsonl"
    csv_file.write_text("\n".join(lines) + "\n12,1,X,900,40\n12,1,900,40\n")  # a side that is none, none at all
    jsonl_file.write_text("".join(json.dumps(dict(zip(blackbox.LEVEL_CHANGE_COLUMNS, r))) + "\n" for r in rows)
                          + json.dumps({"seq": 12, "stock": 1, "side": "Q", "price": 1, "shares": 1}) + "\n")
    want = [[10, 1, ord("S"), 1100, 0], [10, 1, ord("S"), 1200, 300], [11, 1, ord("B"), 900, 40]]
    for path, fmt in ((csv_file, "csv"), (jsonl_file, "jsonl")):
        events, malformed, _ = blackbox.read_events(path, fmt, stamped=False, symbols={"AAPL": 1}, levels="all")
        assert malformed == (2 if fmt == "csv" else 1)
        assert events[blackbox.LEVEL_CHANGE_COLUMNS].values.tolist() == want
    ref = pd.DataFrame(want, columns=blackbox.LEVEL_CHANGE_COLUMNS)
    got = ref.copy()
    got.loc[1, "shares"] = 250
    check = blackbox.check(got.assign(t_recv=0), ref, {}, "exact")
    assert (check["wrong"], check["missing"], check["extra"], check["out_of_order"]) == (1, 0, 0, 0)
    assert check["first_difference"]["level"] == "ask 1200: 250 shares, expected 300"
    # The replace's two changes swapped: both right, the second out of its stock's order; one at a price the
    # reference has not: missing and extra, never matched to another price's.
    swapped = ref.iloc[[1, 0, 2]]
    assert blackbox.check(swapped.assign(t_recv=0), ref, {}, "exact")["out_of_order"] == 1
    moved = ref.copy()
    moved.loc[2, "price"] = 901
    c = blackbox.check(moved.assign(t_recv=0), ref, {}, "exact")
    assert (c["missing"], c["extra"], c["wrong"]) == (1, 1, 0)


@pytest.mark.parametrize("levels", [1, 5, 10, "all"])
def test_the_cpp_example_publishes_depth_equal_to_the_simulation(levels, tmp_path):
    # The example reading the capture itself, its contract asking for N levels: judged against the simulation's
    # depth of N levels, event for event.
    gateway = zoo.materialise(zoo.CPP, (), tmp_path / "gw")
    toml = gateway / "itchbench.toml"
    toml.write_text(re.sub(r"(?m)^levels = 0 .*$", f"levels = {json.dumps(levels)}", toml.read_text()))
    values = {**scenario.load(zoo.scenario_path("file"))[0].values, "gateway_file": str(toml)}
    run = runner.execute(values, "cpp-depth", root=tmp_path / "runs", echo=False)
    summary = rundir.read_json(run / "summary.json")
    assert summary["verdict"]["status"] == "lossless", summary["verdict"]["headline"]
    if levels == "all":  # every level: as many changes as the independent book makes
        said = f"{len(level_changes(SAMPLE)):,} level changes (every level) = simulation (exact)"
    else:
        said = (f"{len(depth_events(SAMPLE, levels)):,} depth events ({levels} {'level' if levels == 1 else 'levels'}) "
                "= simulation (exact)")
    assert said in summary["verdict"]["headline"]


def test_compare_holds_a_brought_gateways_level_changes_change_by_change(tmp_path, capsys):
    # The C++ example writing every level's changes, run twice on the file: the same changes are SAME; one share
    # more in one line head sent is one wrong change, matched by key (seq, stock, side, price) as a run's are, and
    # named.
    gateway = zoo.materialise(zoo.CPP, zoo.CPP_CLAIMS_EVERY_LEVEL, tmp_path / "gw")
    values = {**scenario.load(zoo.scenario_path("file"))[0].values, "gateway_file": str(gateway / "itchbench.toml")}
    runs = {side: runner.execute(values, "cpp-every-level", root=tmp_path / side, echo=False)
            for side in ("base", "head")}
    capsys.readouterr()
    assert itchbench_main(["compare", str(tmp_path / "base"), str(tmp_path / "head"), "--bbo-only", "--out",
                           str(tmp_path / "same")]) == 0
    summary = rundir.read_json(runs["head"] / "summary.json")
    output = runs["head"] / summary["transport_details"]["bbo_output"]
    lines = output.read_text().splitlines()
    seq, _, _, _, shares = lines[99].split(" ")[-1].split(",")
    lines[99] = lines[99].removesuffix(shares) + str(int(shares) + 1)
    output.write_text("\n".join(lines) + "\n")
    as_written_by_its_run(runs["head"])
    capsys.readouterr()
    assert itchbench_main(["compare", str(tmp_path / "base"), str(tmp_path / "head"), "--bbo-only", "--out",
                           str(tmp_path / "cmp")]) == 1
    (out,) = json.loads((tmp_path / "cmp" / "compare.json").read_text())["outputs"].values()
    words = out["bbo"]["difference_words"]
    assert not out["bbo"]["equal"] and (out["bbo"]["wrong"], out["bbo"]["missing"], out["bbo"]["extra"]) == (1, 0, 0)
    assert words.startswith(f"0 missing, 0 extra, 1 wrong of {len(lines):,} base events; first at seq {int(seq):,}")
    assert "reference event #100: wrong: " in words and f"{int(shares) + 1:,} shares, expected {int(shares):,}" in words


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
@pytest.mark.parametrize("simulation", ["as it is", "another digest"])
def test_the_built_in_gateway_over_udp_logs_the_simulations_depth(simulation, tmp_path, monkeypatch):
    if simulation == "another digest":  # what a gateway whose depth drifted from the simulation's would meet
        monkeypatch.setattr(reconcile, "sim_depth", lambda *_: ("sha256:" + "0" * 64, 0))
    values = {**config(SAMPLE, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000}),
              "subscribers": 1, "levels": 5}
    run = runner.execute(values, "udp-depth", root=tmp_path / "runs", echo=False)
    summary = rundir.read_json(run / "summary.json")
    expected = depth_events(SAMPLE, 5)
    assert summary["depth"]["events"] == len(expected)
    if simulation == "as it is":
        assert summary["reconciliation"]["checks"]["depth digest = simulation's digest"]
        assert summary["verdict"]["headline"].endswith("balanced, BBO and depth digests = simulation")
        # The run's depth subscriber received the depth log over TCP, byte for byte: a frame for each level an
        # event changed, as the independent book's events change them, and read back whole they are its events.
        sub = next(s for s in summary["reconciliation"]["subscribers"] if s.get("depth"))
        changes = top_level_changes(SAMPLE, 5)
        assert sub["identical_to_depth_log"] and sub["frames"] == len(changes) and sub["frames_dropped"] == 0
        assert summary["reconciliation"]["checks"][f"subscriber {sub['index']} (TCP, depth) received the depth log "
                                                   "exactly"]
        frames = np.fromfile(run / sub["file"], logs.LEVEL_CHANGE_DTYPE)
        assert [(int(r["seq"]), r["side"].decode(), int(r["px"]), int(r["qty"])) for r in frames] == \
            [(c[0], *c[2:]) for c in changes]
        received = blackbox.depth_frame(logs.depth_events(run / sub["file"], frames, 5)).drop(columns="stock")
        assert [tuple(r) for r in received.itertuples(index=False)] == [(e[0], *e[2:]) for e in expected]
        # Its latency, hop by hop to it: every depth event it received (each a message of its own here), the
        # book applied to its receive the last hop; the compiled scan's figures the numpy reader's.
        hop_rows = summary["latency"]["hops"]["to_depth_subscriber"]["0"]
        assert hop_rows[-2]["hop"] == "depth subscriber 0 (book applied → received)"
        # A chain needs every stamp: a message whose datagram's kernel stamp the gateway left out
        # (kernel_timestamps_unplaced: a bracket too wide, a set of CLOCK_REALTIME) has none, nor do the others of
        # that datagram (at most all the capture's messages past one a datagram).
        udp = summary["gateway"]["udp"]
        most = udp["kernel_timestamps_unplaced"] + summary["reconciliation"]["received"] - udp["datagrams"]
        assert hop_rows[-2]["count"] == hop_rows[-1]["count"]
        assert (len(expected) - most if udp["kernel_timestamps_unplaced"] else len(expected)) <= hop_rows[-1]["count"]
        assert hop_rows[-1]["count"] <= len(expected)
        assert "### Depth events, to the depth subscriber 0" in (run / "report.md").read_text()
        assert_same(run)
        _a_changed_or_cut_depth_stream_is_named(run, sub)
    else:
        assert summary["reconciliation"]["checks"]["depth digest = simulation's digest"] is False
        assert summary["verdict"]["status"] == "unbalanced" and summary["verdict"]["exit_status"] == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_the_built_in_gateway_over_udp_logs_and_publishes_every_levels_changes(tmp_path):
    values = {**config(SAMPLE, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 5000}),
              "subscribers": 1, "levels": "all"}
    run = runner.execute(values, "udp-every-level", root=tmp_path / "runs", echo=False)
    summary = rundir.read_json(run / "summary.json")
    expected = level_changes(SAMPLE)
    assert summary["verdict"]["status"] == "lossless", summary["verdict"]["headline"]
    assert summary["depth"] == {"levels": "all", "events": len(expected), "digest": summary["depth"]["digest"]}
    assert summary["reconciliation"]["checks"]["depth digest = simulation's digest"]
    # Its depth subscriber received every level change over TCP, byte for byte: (seq, stock) is no key for them
    # (a replace changes two levels of its stock), so frames are matched with their price too.
    sub = next(s for s in summary["reconciliation"]["subscribers"] if s.get("depth"))
    assert sub["identical_to_depth_log"] and sub["frames"] == len(expected) and sub["first_frame_not_in_log"] is None
    rec = np.fromfile(run / sub["file"], logs.LEVEL_CHANGE_DTYPE)
    assert [(int(r["seq"]), r["side"].decode(), int(r["px"]), int(r["qty"])) for r in rec] == \
        [(e[0], e[2], e[3], e[4]) for e in expected]
    # The second of a replace's two changes, swapped with the first: out of the log's order, and named.
    pair = next(i for i in range(len(rec) - 1) if rec["seq"][i] == rec["seq"][i + 1])
    swapped = rec.copy()
    swapped[[pair, pair + 1]] = rec[[pair + 1, pair]]
    log = logs.read_depth(run / "depth.dep").changes.tobytes()  # its slots read back: the frames' records
    assert reconcile._first_frame_not_in_log(swapped.tobytes(), log, logs.LEVEL_CHANGE_DTYPE) == pair + 1
    assert reconcile._first_frame_not_in_log(rec.tobytes(), log, logs.LEVEL_CHANGE_DTYPE) is None


def test_a_scenarios_levels_and_every_level_compared_change_by_change(tmp_path, capsys):
    toml = tmp_path / "levels.toml"
    for levels, error in (("65", "must be 0 to 64"), ('"every"', "must be 0 to 64"), ('"5"', "must be a number")):
        toml.write_text(f'name = "j"\ntransport = "sim"\ncapture = "{SAMPLE}"\nlevels = {levels}\n')
        with pytest.raises(scenario.ScenarioError, match=error):
            scenario.load(toml)
    toml.write_text(f'name = "j"\ntransport = "sim"\ncapture = "{SAMPLE}"\nlevels = "all"\n')
    assert scenario.load(toml)[0].values["levels"] == "all"
    # Two runs of every level, one share more in one of head's changes: compare names that change, one wrong.
    base, head = tmp_path / "base" / "r1", tmp_path / "head" / "r1"
    assert itchbench_main(["sim", str(SAMPLE), "--levels", "all", "--no-latency-log", "--out", str(base)]) == 0
    another_run(base, head)
    path = head / "depth.dep"
    rec = logs.read_depth(path).records.copy()
    rec["qty"][99] += 1
    as_version_2(path, rec)
    as_written_by_its_run(head)
    out = _compared_depth_differs(tmp_path, capsys)
    assert out["bbo"]["equal"] and not out["depth"]["equal"]
    words, qty = out["depth"]["difference_words"], int(rec["qty"][99])
    assert (out["depth"]["wrong"], out["depth"]["missing"], out["depth"]["extra"]) == (1, 0, 0)
    assert f"first at seq {int(rec['seq'][99]):,}" in words and "reference event #100: wrong: " in words, words
    assert f"{qty:,} shares, expected {qty - 1:,}" in words


def _a_changed_or_cut_depth_stream_is_named(run, sub) -> None:
    """What the depth subscriber's checks say of a stream that differs from the depth log: one share more in its
    10th frame, or its last frame cut off."""
    gw = rundir.read_json(run / "gateway.json")
    path = run / sub["file"]
    whole = path.read_bytes()
    frame = logs.LEVEL_CHANGE_DTYPE.itemsize
    rec = np.frombuffer(whole, logs.LEVEL_CHANGE_DTYPE).copy()
    rec["qty"][9] += 1
    for name, data, wrong_at in (("changed", rec.tobytes(), 9), ("cut", whole[:-frame], None)):
        path.write_bytes(data)
        checks: dict[str, bool] = {}
        got = reconcile._depth_subscriber(sub, gw, run, checks)
        named = f"subscriber {sub['index']} (TCP, depth)"
        assert checks[f"{named} received the depth log exactly"] is False, name
        assert got["first_frame_not_in_log"] == wrong_at, name
        assert checks[f"{named} received only the depth log's frames, in its order, whole"] is (wrong_at is None)
    path.write_bytes(whole)


@pytest.mark.parametrize("levels", [5, "all"])
def test_the_built_in_gateway_over_serial_logs_and_publishes_the_simulations_depth(levels, tmp_path):
    values = {**config(SAMPLE, "serial", serial={"baud": 2_000_000}), "subscribers": 1, "levels": levels}
    run = runner.execute(values, "serial-depth", root=tmp_path / "runs", echo=False)
    summary = rundir.read_json(run / "summary.json")
    assert summary["verdict"]["status"] == "lossless", summary["verdict"]["headline"]
    expected = level_changes(SAMPLE) if levels == "all" else depth_events(SAMPLE, levels)
    assert summary["depth"]["events"] == len(expected)
    assert summary["reconciliation"]["checks"]["depth digest = simulation's digest"]
    sub = next(s for s in summary["reconciliation"]["subscribers"] if s.get("depth"))
    records = len(expected) if levels == "all" else len(top_level_changes(SAMPLE, levels))
    assert sub["identical_to_depth_log"] and sub["frames"] == records


def test_a_scenario_asking_depth_of_a_gateway_that_publishes_other_depth_is_skipped(tmp_path):
    values = {**scenario.load(zoo.scenario_path("udp"))[0].values, "levels": 5}
    bbo_only = contract.load(zoo.example_dir(zoo.PY) / "itchbench.toml")
    assert "publishes the BBO (bbo.levels = 0)" in scenario.input_not_taken(values, bbo_only)
    five = zoo.materialise(zoo.PY, (), tmp_path / "five") / "itchbench.toml"
    five.write_text(re.sub(r"(?m)^levels = 0 .*$", "levels = 5", five.read_text()))
    assert scenario.input_not_taken(values, contract.load(five)) == ""
    assert "publishes 5 (bbo.levels)" in scenario.input_not_taken({**values, "levels": 10}, contract.load(five))
    built_in = contract.load(zoo.example_dir(zoo.PY).parent.parent / "itchbench.toml")  # its run files carry depth
    assert scenario.input_not_taken(values, built_in) == ""


def as_version_2(path: Path, rec: np.ndarray) -> None:
    """Level change records written over path as a version-2 depth log (a 32-byte record a level change, as builds
    wrote before slots), its header otherwise the log's own."""
    h = np.frombuffer(path.read_bytes()[:logs.HEADER_SIZE], logs.HEADER_DTYPE).copy()
    h["version"], h["record_size"], h["record_count"] = logs.DEPTH_LEVEL_CHANGES_VERSION, rec.dtype.itemsize, len(rec)
    path.write_bytes(h.tobytes() + rec.tobytes())


def as_written_by_its_run(run: Path) -> None:
    """A run whose depth log or brought gateway's output a test rewrote made one whose gateway wrote it: its
    summary's digests those of what the log or output now holds (compare refuses a run directory whose log or output
    changed since its run)."""
    summary = rundir.read_json(run / "summary.json")
    if (run / "depth.dep").is_file():
        summary["depth"]["digest"] = logs.depth_summary(logs.read_depth(run / "depth.dep")).digest
    if summary["bbo"].get("output_sha256"):
        summary["bbo"]["output_sha256"] = logs.file_digest(run / summary["bbo"]["output"])
    rundir.write_json(run / "summary.json", summary)


def as_version_1(path: Path, rec: np.ndarray) -> None:
    """Depth events written over path as a version-1 depth log (a whole event a record, as builds wrote before level
    change records), its header otherwise the log's own."""
    h = np.frombuffer(path.read_bytes()[:logs.HEADER_SIZE], logs.HEADER_DTYPE).copy()
    h["version"], h["record_size"], h["levels"], h["record_count"] = 1, rec.dtype.itemsize, 0, len(rec)
    path.write_bytes(h.tobytes() + rec.tobytes())


def test_compare_holds_heads_depth_to_bases_and_names_the_level(tmp_path, capsys):
    # Two builds' runs of the same capture with 5 levels: head's depth has one share more at bid level 3 of one
    # event (its BBO untouched), in a log of the version builds wrote before (a whole event a record). compare says
    # DEPTH OUTPUT DIFFERS and names the level; the same events in either version are SAME.
    base, head = tmp_path / "base" / "r1", tmp_path / "head" / "r1"
    assert itchbench_main(["sim", str(SAMPLE), "--levels", "5", "--no-latency-log", "--out", str(base)]) == 0
    another_run(base, head)
    rec = logs.read_depth(base / "depth.dep").records
    as_version_1(head / "depth.dep", rec)
    assert itchbench_main(["compare", str(tmp_path / "base"), str(tmp_path / "head"), "--bbo-only", "--out",
                           str(tmp_path / "versions")]) == 0
    k = int(np.flatnonzero(rec["bids"]["px"][:, 2] > 0)[0])  # the first event with a third bid level
    changed = rec.copy()
    changed["bids"]["qty"][k, 2] += 1
    as_version_1(head / "depth.dep", changed)
    as_written_by_its_run(head)
    out = _compared_depth_differs(tmp_path, capsys)
    assert out["bbo"]["equal"] and not out["depth"]["equal"] and out["depth"]["wrong"] == 1
    first = out["depth"]["first_difference"]
    assert first["seq"] == int(rec["seq"][k]) and first["level"].startswith("bid level 3: ")


def test_a_document_says_what_depth_its_runs_published(tmp_path):
    from itchbench.analysis import logs
    run = tmp_path / "runs" / "r1"
    assert itchbench_main(["sim", str(SAMPLE), "--levels", "5", "--out", str(run)]) == 0
    assert itchbench_main(["doc", str(tmp_path / "runs"), "--out", str(tmp_path / "doc")]) == 0
    events = len(logs.read_depth(run / "depth.dep").records)
    bbo = len(logs.read_bbo(run / "bbo.bbo").records)
    workload = (tmp_path / "doc" / "report.md").read_text().split("### Workload")[1].split("###")[0]
    assert f"| {bbo:,} BBO events, {events:,} depth events (5 levels a side) |" in workload


# A book bug below the top (issue 55): an add, or a replace's new order, at a price behind its side's best puts one
# share more into its level than the order has, and the level keeps that share after its orders leave. Planted in
# the Python example; judged once on its BBO (contract bbo.levels = 0) and once on 5 levels of depth.
_PHANTOM_SHARE = (zoo.Edit("        level[price] = level.get(price, 0) + shares\n",
                           "        behind = bool(level) and (price < max(level) if side == BID else price > min(level))"
                           "  # MUTANT\n        level[price] = level.get(price, 0) + shares + behind\n"),)


class _PhantomShareBook(DepthBook):
    """The planted bug, modelled independently of the example: the true levels (DepthBook) plus the phantom shares,
    with the example's rule for when a share is added (behind the best of the levels as the bug leaves them)."""

    def __init__(self) -> None:
        super().__init__()
        self.phantom: dict[tuple[int, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))

    def levels(self, locate: int, side: str) -> dict[int, int]:
        true, extra = self.sides[(locate, side)], self.phantom[(locate, side)]
        return {p: true.get(p, 0) + extra.get(p, 0) for p in set(true) | set(extra) if true.get(p, 0) + extra.get(p, 0)}

    def apply(self, m: bytes) -> int | None:
        t, added = chr(m[0]), None
        if t in "AF":
            locate, (ref,), side = struct.unpack_from(">H", m, 1)[0], struct.unpack_from(">Q", m, 11), chr(m[19])
            shares, price = struct.unpack_from(">I", m, 20)[0], struct.unpack_from(">I", m, 32)[0]
            if ref not in self.orders and shares:
                added = (locate, side, price, self.levels(locate, side))
        elif t == "U":
            old, new, shares, price = struct.unpack_from(">QQII", m, 11)
            order = self.orders.get(old)
            if order is not None and shares and (new == old or new not in self.orders):
                locate, side, left, at = order
                levels = self.levels(locate, side)
                levels[at] -= left  # the old order leaves first
                added = (locate, side, price, {p: q for p, q in levels.items() if q})
        touched = super().apply(m)
        if added is not None:
            locate, side, price, levels = added
            if levels and (price < max(levels) if side == "B" else price > min(levels)):
                self.phantom[(locate, side)][price] += 1
        return touched

    def top(self, locate: int, n: int) -> tuple[int, ...]:
        out: list[int] = []
        for side, best_first in (("B", True), ("S", False)):
            levels = sorted(self.levels(locate, side).items(), reverse=best_first)[:n]
            out += [x for level in levels + [(0, 0)] * (n - len(levels)) for x in level]
        return tuple(out)


def _first_difference(pcap, n: int) -> int | None:
    """The first seq whose events (n levels a side; n = 1: the BBO) differ between the true book and the bug's."""
    books = {"true": (DepthBook(), DepthBook.depth), "bug": (_PhantomShareBook(), _PhantomShareBook.top)}
    last: dict[str, dict[int, tuple]] = {name: {} for name in books}
    for seq, m in mold_messages(pcap):
        said = {}
        for name, (book, levels) in books.items():
            touched = book.apply(m)
            now = levels(book, touched, n) if touched is not None else None
            said[name] = None
            if now is not None and now != last[name].get(touched, (0,) * (4 * n)):
                last[name][touched] = now
                said[name] = (touched, now)
        if said["true"] != said["bug"]:
            return seq
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_a_bug_below_the_top_is_caught_by_depth_before_the_bbo_shows_it(tmp_path):
    values = scenario.load(zoo.scenario_path("udp"))[0].values
    firsts = {}
    for judged, edits in (("BBO", _PHANTOM_SHARE), ("depth", zoo.CLAIMS_DEPTH + _PHANTOM_SHARE)):
        gateway = zoo.materialise(zoo.PY, edits, tmp_path / judged)
        run = runner.execute({**values, "gateway_file": str(gateway / "itchbench.toml")}, judged,
                             root=tmp_path / "runs", echo=False)
        summary = rundir.read_json(run / "summary.json")
        first = summary["reconciliation"]["bbo_check"].get("first_difference")
        firsts[judged] = (summary["verdict"]["status"], first["seq"] if first else None)
    bbo_at, depth_at = _first_difference(SAMPLE, 1), _first_difference(SAMPLE, 5)
    assert depth_at is not None and (bbo_at is None or depth_at < bbo_at)
    assert firsts["depth"] == ("bbo_differs", depth_at)
    assert firsts["BBO"] == (("bbo_differs", bbo_at) if bbo_at is not None else ("lossless", None))
