"""A brought gateway's output held to the simulation a part at a time (gateways/in_parts.py), in parts far smaller
than a line's share of them so that lines and events cross every boundary: an output that is the simulation's
events is held equal (their count the fixture manifest's golden one, or the whole reader's), and every edit of one
line is not — the whole check, which counts and names it, must then decide."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths
from itchbench.analysis import logs
from itchbench.compare import outputs
from itchbench.depth_levels import ALL_LEVELS, Levels
from itchbench.gateways import blackbox, in_parts

SAMPLE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    monkeypatch.setattr(in_parts, "OUTPUT_BYTES_AT_ONCE", 257)
    monkeypatch.setattr(in_parts, "REFERENCE_RECORDS_AT_ONCE", 7)


def _golden_events() -> int:
    manifest = json.loads((paths.repo_root() / "fixtures" / "manifest.json").read_text())
    return next(f["golden"]["bbo_events"] for f in manifest["fixtures"] if f["file"] == SAMPLE.name)


def _lines(levels: Levels) -> list[str]:
    """The simulation's events as csv lines, from its log read whole (a level change's side as its letter)."""
    rec = logs.read_log(blackbox.reference_run(SAMPLE, "", levels).events_log).records
    rows = blackbox.event_block(rec).tolist()
    return [",".join(chr(v) if levels == ALL_LEVELS and i == 2 else str(v) for i, v in enumerate(row)) for row in rows]


def _held(tmp_path: Path, text: str, levels: Levels = 0, stamped: bool = False, keep_stamps: bool = False):
    out = tmp_path / "bbo.out"
    out.write_bytes(text.encode())
    bbo = {"format": "csv", "via": "tcp" if stamped else "file", "levels": levels}
    return in_parts.held(out, bbo, blackbox.reference_run(SAMPLE, "", levels), False, keep_stamps)


def _whole_equal(tmp_path: Path, levels: Levels) -> bool:
    events, malformed, _ = blackbox.read_events(tmp_path / "bbo.out", "csv", stamped=False,
                                                symbols=blackbox.stock_directory(SAMPLE, "", levels), levels=levels)
    ref, kinds = blackbox.reference(SAMPLE, "", levels)
    return malformed == 0 and blackbox.check(events, ref, kinds, "exact")["equal"]


@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_the_simulations_events_are_held_equal_across_every_part(tmp_path, levels):
    lines = _lines(levels)
    expected = _golden_events() if levels == 0 else len(blackbox.reference(SAMPLE, "", levels)[0])
    assert len(lines) == expected > 1000
    # Every 200th line not plain (a no-break space after its first comma): an event line by line, in its place.
    odd = [line.replace(",", ",\u00a0", 1) if i % 200 == 0 else line for i, line in enumerate(lines)]
    for text in ("\n".join(lines) + "\n", "\n".join(lines), "\r\n".join(lines) + "\r\n",
                 "\n\n".join(lines) + "\n", "\n".join(", ".join(line.split(",")) for line in lines), "\n".join(odd)):
        held = _held(tmp_path, text, levels)
        assert held is not None and held.events == expected
        assert held.last_seq == int(lines[-1].split(",")[0])
        assert _whole_equal(tmp_path, levels)


@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_json_lines_are_held_a_part_at_a_time_too(tmp_path, monkeypatch, levels):
    # The simulation's events as stamped json lines, a warning among them (a part with it is read line by line):
    # held, the warning counted; one share more on the last event: not held. Parts of a few lines each (a line of
    # 5 levels is about 400 bytes).
    monkeypatch.setattr(in_parts, "OUTPUT_BYTES_AT_ONCE", 4099)
    cols = blackbox.columns(levels)

    def jsonl(line: str) -> str:
        values = line.split(",")
        return json.dumps({c: v if c == "side" else int(v) for c, v in zip(cols, values)})
    lines = [f"{1000 + i} {jsonl(line)}" for i, line in enumerate(_lines(levels))]
    out = tmp_path / "bbo.jsonl"
    out.write_text("\n".join([*lines[:40], "1 WARN not json", *lines[40:]]) + "\n")
    bbo = {"format": "jsonl", "via": "tcp", "levels": levels}
    held = in_parts.held(out, bbo, blackbox.reference_run(SAMPLE, "", levels), False, keep_stamps=True)
    assert held is not None and held.events == len(lines) and (held.malformed, held.examples) == (1, ["WARN not json"])
    assert held.stamps[:, 1].tolist() == [1000 + i for i in range(len(lines))]
    wrong = json.loads(lines[-1].split(" ", 1)[1])
    wrong[cols[-1]] += 1
    out.write_text("\n".join([*lines[:-1], f"9 {json.dumps(wrong)}"]) + "\n")
    assert in_parts.held(out, bbo, blackbox.reference_run(SAMPLE, "", levels), False, keep_stamps=False) is None


def _same_stock_pair(lines: list[str]) -> int:
    """A line whose next is an event of the same stock at a later seq: swapped, they are out of order."""
    seq, stock = zip(*(line.split(",")[:2] for line in lines))
    return next(i for i in range(len(lines) // 2, len(lines) - 1) if stock[i] == stock[i + 1] and seq[i] != seq[i + 1])


@pytest.mark.parametrize("edit", ["missing", "extra", "wrong", "out of order", "last missing", "one more at the end",
                                  "unknown symbol", "a line past the buffer"])
@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_any_difference_leaves_the_verdict_to_the_whole_check(tmp_path, levels, edit):
    lines = _lines(levels)
    k = len(lines) // 2
    if edit == "missing":
        del lines[k]
    elif edit == "extra":
        lines.insert(k, lines[k])
    elif edit == "wrong":  # one more share at its last level
        fields = lines[k].split(",")
        fields[-1] = str(int(fields[-1]) + 1)
        lines[k] = ",".join(fields)
    elif edit == "out of order":
        i = _same_stock_pair(lines)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    elif edit == "last missing":
        lines.pop()
    elif edit == "one more at the end":
        lines.append(lines[-1])
    elif edit == "unknown symbol":
        fields = lines[k].split(",")
        lines[k] = ",".join([fields[0], "NOSUCH", *fields[2:]])
    else:
        lines.insert(k, "1" * 300)
    assert _held(tmp_path, "\n".join(lines) + "\n", levels) is None
    assert not _whole_equal(tmp_path, levels)


@pytest.mark.parametrize("levels", [0, 5])
def test_lines_that_hold_no_event_are_counted_and_the_events_still_held(tmp_path, levels):
    # A gateway's warnings among its events, the first line and the last among them (the last with no newline).
    lines = _lines(levels)
    junk = ["WARNING: slow consumer", "1 2 3", "", "\f", "#", "DEBUG book rebuilt"]
    text = "\n".join([junk[0], *lines[:100], junk[1], junk[2], junk[3], *lines[100:], junk[4], junk[5]])
    held = _held(tmp_path, text, levels)
    assert held is not None and held.events == len(lines)
    assert held.malformed == 4 and held.examples == ["WARNING: slow consumer", "1 2 3", "#"]
    events, malformed, examples = blackbox.read_events(tmp_path / "bbo.out", "csv", stamped=False,
                                                       symbols=blackbox.stock_directory(SAMPLE, "", levels),
                                                       levels=levels)
    assert (len(events), malformed, examples) == (held.events, held.malformed, held.examples)


def test_stocks_named_by_symbol_and_receive_stamps_are_read(tmp_path):
    lines = _lines(0)
    names = {locate: symbol for symbol, locate in blackbox.stock_directory(SAMPLE).items()}
    text, stamps = "", []
    for i, line in enumerate(lines):
        seq, stock, rest = line.split(",", 2)
        stamp = 0 if i % 3 == 0 else 1_000_000 + i  # a stamp of 0 is none
        text += f"{stamp} {seq},{names[int(stock)]},{rest}\n"
        if stamp:
            stamps.append([int(seq), stamp])
    held = _held(tmp_path, text, stamped=True, keep_stamps=True)
    assert held is not None and held.events == _golden_events()
    assert held.stamps.tolist() == stamps


def test_a_gateways_own_log_is_held_with_its_stale_flags(tmp_path):
    ref = blackbox.reference_run(SAMPLE)
    bbo = {"format": "itchbench", "via": "file", "levels": 0}
    held = in_parts.held(ref.events_log, bbo, ref, True, keep_stamps=False)
    assert held is not None and held.events == _golden_events()
    # One record's stale flag set: the flags are held too, so not equal; without them, the book alone is.
    changed = tmp_path / "bbo.bbo"
    raw = np.fromfile(ref.events_log, np.uint8)
    log = logs.read_bbo(ref.events_log)
    flags_at = log.header_size + 10 * log.stored.dtype.itemsize + log.stored.dtype.fields["flags"][1]
    raw[flags_at] |= logs.FLAG_BOOK_MAY_BE_STALE
    raw.tofile(changed)
    assert in_parts.held(changed, bbo, ref, True, keep_stamps=False) is None
    assert in_parts.held(changed, bbo, ref, False, keep_stamps=False) is not None


def _contract_run(tmp_path: Path, name: str, text: str, levels: Levels) -> Path:
    """A run directory of a contract gateway whose output is text (the parts compare reads)."""
    run = tmp_path / name
    run.mkdir()
    (run / "bbo.received").write_text(text)
    (run / "summary.json").write_text(json.dumps({"gateway": {"contract": {"bbo": {
        "format": "csv", "via": "tcp", "check": "exact", "levels": levels}}},
        "transport_details": {"bbo_output": "bbo.received"}}))
    (run / "manifest.json").write_text(json.dumps({"scenario": {"capture": str(SAMPLE), "feed": ""}}))
    return run


@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_a_contract_runs_digest_read_in_parts_is_its_digest_read_whole(tmp_path, levels):
    # compare and bisect take a brought gateway's digest a part at a time: the same as its events read whole and
    # made records at once, warnings and receive stamps left out; and a run that differs by one share does not
    # share it, so compare reads both whole and names the difference.
    lines = _lines(levels)
    stamped = [f"{1000 + i} {line}" for i, line in enumerate(lines)]
    run = _contract_run(tmp_path, "a", "\n".join([*stamped[:50], "WARN late", *stamped[50:]]) + "\n", levels)
    digest, events = outputs.bbo_digest(run)
    rec, whole = outputs.bbo_records(run)
    assert (digest, events) == (whole, len(rec)) and events == len(lines)
    values = np.array([[ord(v) if v in "BS" else int(v) for v in line.split(",")] for line in lines])
    assert (rec["seq"] == values[:, 0]).all() and (rec["stock_locate"] == values[:, 1]).all()  # the lines' fields
    if levels == ALL_LEVELS:
        assert (rec["side"].view(np.uint8) == values[:, 2]).all() and (rec["qty"] == values[:, 4]).all()
    elif levels:
        assert (rec["bids"]["px"] == values[:, 2:2 + 2 * levels:2]).all()
        assert (rec["asks"]["qty"] == values[:, 3 + 2 * levels::2]).all()
    else:
        assert (rec["bid_px"] == values[:, 2]).all() and (rec["ask_qty"] == values[:, 5]).all()
    fields = lines[-1].split(",")
    fields[-1] = str(int(fields[-1]) + 1)
    other = _contract_run(tmp_path, "b", "\n".join([*stamped[:-1], "9 " + ",".join(fields)]) + "\n", levels)
    assert outputs.bbo_digest(other)[0] != digest
    same = outputs.compare_bbo(run, _contract_run(tmp_path, "c", "\n".join(stamped) + "\n", levels))
    assert same["equal"] and same["base_events"] == same["head_events"] == len(lines)
    differs = outputs.compare_bbo(run, other)
    assert not differs["equal"]
    if levels == ALL_LEVELS:  # level changes are named by their place (no key to count them by)
        assert differs["difference_words"].startswith(f"level change {len(lines):,} differs")
    else:
        assert differs["wrong"] == 1 and differs["missing"] == differs["extra"] == 0


def test_a_reference_folder_a_killed_process_left_is_removed_by_the_next(tmp_path):
    # Folders named after a process that has ended go; one of a live process (this one), and anything else, stay.
    ended = subprocess.Popen(["true"])
    ended.wait()
    left = tmp_path / f"{blackbox.REFERENCE_PREFIX}{ended.pid}-abc"
    live = tmp_path / f"{blackbox.REFERENCE_PREFIX}{os.getpid()}-def"
    other = tmp_path / f"{blackbox.REFERENCE_PREFIX}xyz"
    for folder in (left, live, other):
        folder.mkdir()
        (folder / "latency.lat").write_bytes(b"x")
    assert blackbox.remove_left_behind(tmp_path) == [left]
    assert not left.exists() and live.exists() and other.exists()
