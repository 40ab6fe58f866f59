"""A brought gateway's output held to the simulation a part at a time (gateways/in_parts.py), in parts far smaller
than a line's share of them so that lines and events cross every boundary: an output that is the simulation's
events is equal (their count the fixture manifest's golden one, or the whole reader's), and every edit is judged
exactly as the whole check (blackbox.check over both streams read whole, an implementation of its own) judges it:
the same counts, the same first difference in the same words."""

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
from itchbench.runs import join, verdict

SAMPLE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    monkeypatch.setattr(in_parts, "OUTPUT_BYTES_AT_ONCE", 257)
    monkeypatch.setattr(in_parts, "REFERENCE_RECORDS_AT_ONCE", 7)
    monkeypatch.setattr(in_parts, "BUCKET_BYTES", 1000)  # an output that cannot be cut by seq: buckets of a few stocks


def _golden_events() -> int:
    manifest = json.loads((paths.repo_root() / "fixtures" / "manifest.json").read_text())
    return next(f["golden"]["bbo_events"] for f in manifest["fixtures"] if f["file"] == SAMPLE.name)


def _lines(levels: Levels) -> list[str]:
    """The simulation's events as csv lines, from its log read whole (a level change's side as its letter)."""
    rec = logs.read_log(blackbox.reference_run(SAMPLE, "", levels).events_log).records
    rows = blackbox.event_block(rec).tolist()
    return [",".join(chr(v) if levels == ALL_LEVELS and i == 2 else str(v) for i, v in enumerate(row)) for row in rows]


def _judged(tmp_path: Path, text: str, levels: Levels = 0, stamped: bool = False, keep_stamps: bool = False,
            check: str = "exact"):
    out = tmp_path / "bbo.out"
    out.write_bytes(text.encode())
    bbo = {"format": "csv", "via": "tcp" if stamped else "file", "levels": levels, "check": check}
    return in_parts.judged(out, bbo, blackbox.reference_run(SAMPLE, "", levels), False, keep_stamps)


def _whole(tmp_path: Path, levels: Levels, check: str = "exact") -> tuple[dict, int, list[str]]:
    """blackbox.check of the output read whole, its malformed lines and the first of them."""
    events, malformed, examples = blackbox.read_events(tmp_path / "bbo.out", "csv", stamped=False,
                                                       symbols=blackbox.stock_directory(SAMPLE, "", levels),
                                                       levels=levels)
    ref, kinds = blackbox.reference(SAMPLE, "", levels)
    return blackbox.check(events, ref, kinds, check), malformed, examples


def _as_whole(tmp_path: Path, judged: in_parts.Judged, levels: Levels, check: str = "exact") -> None:
    """The judgement equals the whole check's, figure for figure and word for word."""
    check, malformed, examples = _whole(tmp_path, levels, check)
    assert (judged.events, judged.reference_events) == (check["events"], check["reference_events"])
    assert judged.counts == {k: check[k] for k in blackbox.DIFFERENCES} and judged.equal == check["equal"]
    assert judged.first == check.get("first_difference")
    assert (judged.malformed, judged.examples) == (malformed, examples)


@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_the_simulations_events_are_held_equal_across_every_part(tmp_path, levels):
    lines = _lines(levels)
    expected = _golden_events() if levels == 0 else len(blackbox.reference(SAMPLE, "", levels)[0])
    assert len(lines) == expected > 1000
    # Every 200th line not plain (a no-break space after its first comma): an event line by line, in its place.
    odd = [line.replace(",", ",\u00a0", 1) if i % 200 == 0 else line for i, line in enumerate(lines)]
    for text in ("\n".join(lines) + "\n", "\n".join(lines), "\r\n".join(lines) + "\r\n",
                 "\n\n".join(lines) + "\n", "\n".join(", ".join(line.split(",")) for line in lines), "\n".join(odd)):
        judged = _judged(tmp_path, text, levels)
        assert judged is not None and judged.equal and judged.events == judged.reference_events == expected
        assert judged.last_seq == judged.reference_last_seq == int(lines[-1].split(",")[0])
        _as_whole(tmp_path, judged, levels)


@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_json_lines_are_held_a_part_at_a_time_too(tmp_path, monkeypatch, levels):
    # The simulation's events as stamped json lines, a warning among them (a part with it is read line by
    # line): equal, the warning counted; one share more on the last event: one wrong event. Parts of a few lines
    # each (a line of 5 levels is about 400 bytes).
    monkeypatch.setattr(in_parts, "OUTPUT_BYTES_AT_ONCE", 4099)
    cols = blackbox.columns(levels)

    def jsonl(line: str) -> str:
        values = line.split(",")
        return json.dumps({c: v if c == "side" else int(v) for c, v in zip(cols, values)})
    lines = [f"{1000 + i} {jsonl(line)}" for i, line in enumerate(_lines(levels))]
    out = tmp_path / "bbo.jsonl"
    out.write_text("\n".join([*lines[:40], "1 WARN not json", *lines[40:]]) + "\n")
    bbo = {"format": "jsonl", "via": "tcp", "levels": levels}
    judged = in_parts.judged(out, bbo, blackbox.reference_run(SAMPLE, "", levels), False, keep_stamps=True)
    assert judged is not None and judged.equal and judged.events == len(lines)
    assert (judged.malformed, judged.examples) == (1, ["WARN not json"])
    assert judged.stamps[:, 1].tolist() == [1000 + i for i in range(len(lines))]
    wrong = json.loads(lines[-1].split(" ", 1)[1])
    wrong[cols[-1]] += 1
    out.write_text("\n".join([*lines[:-1], f"9 {json.dumps(wrong)}"]) + "\n")
    judged = in_parts.judged(out, bbo, blackbox.reference_run(SAMPLE, "", levels), False, keep_stamps=False)
    assert judged is not None and judged.counts["wrong"] == 1 and sum(judged.counts.values()) == 1


def _more_shares(line: str) -> str:
    """An event's line with one share more at its last level (a wrong event)."""
    fields = line.split(",")
    fields[-1] = str(int(fields[-1]) + 1)
    return ",".join(fields)


def _same_stock_pair(lines: list[str]) -> int:
    """A line whose next is an event of the same stock at a later seq: swapped, they are out of order."""
    seq, stock = zip(*(line.split(",")[:2] for line in lines))
    return next(i for i in range(len(lines) // 2, len(lines) - 1) if stock[i] == stock[i + 1] and seq[i] != seq[i + 1])


@pytest.mark.parametrize("edit", ["missing", "extra", "wrong", "last missing", "one more at the end",
                                  "unknown symbol", "a stretch of a stock missing", "wrong and extra far apart",
                                  "every 50th wrong", "nothing at all"])
@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_a_difference_is_judged_a_part_at_a_time_as_whole(tmp_path, levels, edit):
    lines = _lines(levels)
    k = len(lines) // 2
    stock = lines[k].split(",")[1]
    if edit == "missing":
        del lines[k]
    elif edit == "extra":
        lines.insert(k, lines[k])
    elif edit == "wrong":  # one more share at its last level
        lines[k] = _more_shares(lines[k])
    elif edit == "last missing":
        lines.pop()
    elif edit == "one more at the end":
        lines.append(lines[-1])
    elif edit == "unknown symbol":
        fields = lines[k].split(",")
        lines[k] = ",".join([fields[0], "NOSUCH", *fields[2:]])
    elif edit == "a stretch of a stock missing":  # a gateway that dropped one stock for 500 events
        lines = [line for i, line in enumerate(lines) if not (k <= i < k + 500 and line.split(",")[1] == stock)]
    elif edit == "every 50th wrong":  # a broken book: the same events, some with wrong shares
        lines = [_more_shares(line) if i % 50 == 7 else line for i, line in enumerate(lines)]
    elif edit == "wrong and extra far apart":
        lines[10] = _more_shares(lines[10])
        lines.insert(len(lines) - 10, lines[len(lines) - 10])
    else:
        lines = []
    judged = _judged(tmp_path, "\n".join(lines) + "\n", levels)
    assert judged is not None and not judged.equal and judged.cut_by == "seq"
    _as_whole(tmp_path, judged, levels)


def _shards(lines: list[str], shards: int, run: int) -> list[str]:
    """A gateway that publishes each stock from one of `shards` threads: its stock's events in order, the threads'
    runs of `run` events interleaved in turn."""
    queues = [[line for line in lines if int(line.split(",")[1]) % shards == k] for k in range(shards)]
    out: list[str] = []
    while any(queues):
        for q in queues:
            out += q[:run]
            del q[:run]
    return out


@pytest.mark.parametrize("edit", ["a stock's two events swapped", "published stock by stock", "three shards",
                                  "three shards, one missing, one extra, one wrong, one swapped",
                                  "three shards, an event given to another stock", "three shards, every 40th wrong",
                                  "three shards, shares past 32 bits",
                                  "last stock's events first, one dropped"])
@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_an_output_whose_seqs_go_back_is_judged_by_stock_as_whole(tmp_path, levels, edit):
    # A gateway that publishes per stock, per thread or per partition cannot be cut into windows of whole seqs: it
    # is judged in buckets of stocks (as many as the output has parts here, so every few stocks a bucket), with
    # the same counts and the same first difference, numbered and ordered in the whole streams, as the whole check.
    lines = _lines(levels)
    k = len(lines) // 3
    if edit == "a stock's two events swapped":
        i = _same_stock_pair(lines)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    elif edit == "published stock by stock":
        lines = sorted(lines, key=lambda line: int(line.split(",")[1]))
    elif edit.startswith("three shards"):
        if edit.endswith("one missing, one extra, one wrong, one swapped"):
            i = _same_stock_pair(lines)
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
            lines[k] = _more_shares(lines[k])
            lines.insert(2 * k, lines[2 * k])
            del lines[k // 2]
        elif edit.endswith("an event given to another stock"):  # missing for one stock, extra for another
            fields = lines[k].split(",")
            other = next(line.split(",")[1] for line in lines[k + 1:] if line.split(",")[1] != fields[1])
            lines[k] = ",".join([fields[0], other, *fields[2:]])
        elif edit.endswith("every 40th wrong"):
            lines = [_more_shares(line) if i % 40 == 3 else line for i, line in enumerate(lines)]
        elif edit.endswith("shares past 32 bits"):  # a part written as 64 bits, the rest of its bucket as 32
            fields = lines[k].split(",")
            lines[k] = ",".join([*fields[:-1], str(5_000_000_000 + int(fields[-1]))])
        lines = _shards(lines, 3, 37)
    else:
        last = lines[-1].split(",")[1]
        mine = [line for line in lines if line.split(",")[1] == last]
        lines = [*mine[1:], *(line for line in lines if line.split(",")[1] != last)]
    judged = _judged(tmp_path, "\n".join(lines) + "\n", levels)
    assert judged is not None and judged.cut_by == "stock"
    if edit in ("published stock by stock", "three shards"):
        assert judged.equal
    else:
        assert not judged.equal
    _as_whole(tmp_path, judged, levels)


@pytest.mark.parametrize("edit", ["none", "conflated", "three shards, conflated", "a stock's two events swapped",
                                  "a stock's last event dropped", "every 40th wrong", "three shards, one wrong",
                                  "three shards, one swapped and one wrong"])
@pytest.mark.parametrize("levels", [0, 5])
def test_states_are_judged_by_stock_as_whole(tmp_path, levels, edit):
    # check = "state" (a gateway that conflates): each event held to its stock's book at its seq, whose last event
    # may lie anywhere before it, so judged in buckets of stocks from the start: the same counts and the same first
    # difference as blackbox.check's state mode over both streams read whole.
    lines = _lines(levels)
    k = len(lines) // 3
    if "conflated" in edit:  # of each stock's events, only every other one sent (its last always)
        last = {line.split(",")[1]: i for i, line in enumerate(lines)}
        lines = [line for i, line in enumerate(lines) if i % 2 == 0 or last[line.split(",")[1]] == i]
    if "swapped" in edit:
        i = _same_stock_pair(lines)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    if edit == "a stock's last event dropped":
        stock = lines[k].split(",")[1]
        del lines[max(i for i, line in enumerate(lines) if line.split(",")[1] == stock)]
    if edit == "every 40th wrong":
        lines = [_more_shares(line) if i % 40 == 3 else line for i, line in enumerate(lines)]
    if "one wrong" in edit:
        lines[k] = _more_shares(lines[k])
    if edit.startswith("three shards"):
        lines = _shards(lines, 3, 37)
    judged = _judged(tmp_path, "\n".join(lines) + "\n", levels, check="state")
    assert judged is not None and judged.cut_by == "stock"
    assert judged.equal == (edit in ("none", "conflated", "three shards, conflated"))
    _as_whole(tmp_path, judged, levels, "state")


def test_an_output_by_stock_keeps_its_stamps_and_last_seq(tmp_path):
    lines = _shards(_lines(0), 3, 37)
    text = "".join(f"{1000 + i} {line}\n" for i, line in enumerate(lines))
    judged = _judged(tmp_path, text, stamped=True, keep_stamps=True)
    assert judged is not None and judged.equal and judged.cut_by == "stock"
    assert judged.stamps.tolist() == [[int(line.split(",")[0]), 1000 + i] for i, line in enumerate(lines)]
    assert judged.last_seq == judged.reference_last_seq == max(int(line.split(",")[0]) for line in lines)
    assert not list(tmp_path.glob(f"{in_parts.BUCKETS_PREFIX}*"))  # its buckets removed


@pytest.mark.parametrize("edit", ["as simulated", "a book wrong at the join", "an event after it missing",
                                  "published by shards", "a stock's events at the join out of order"])
@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_a_late_join_is_judged_a_part_at_a_time_as_whole(tmp_path, levels, edit):
    # A black box that joined at `through`: its events at or before it are the snapshot's (each stock's last is
    # its book at the join), those after it held exactly. Read a part at a time (runs/join.py check_output), the
    # judgement is the one of its events read whole (check_events), figure for figure.
    lines = _lines(levels)
    through = int(lines[len(lines) // 2].split(",")[0])
    before = [i for i, line in enumerate(lines) if int(line.split(",")[0]) <= through]
    if edit == "a book wrong at the join":
        fields = lines[before[-1]].split(",")
        lines[before[-1]] = ",".join([*fields[:-1], str(int(fields[-1]) + 1)])
    elif edit == "an event after it missing":
        del lines[before[-1] + 3]
    elif edit == "published by shards":
        lines = _shards(lines, 3, 37)
    elif edit == "a stock's events at the join out of order":
        i = max(i for i in range(len(before) - 1) if lines[i].split(",")[1] == lines[i + 1].split(",")[1]
                and lines[i].split(",")[0] != lines[i + 1].split(",")[0])
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    out = tmp_path / "bbo.out"
    out.write_text("\n".join(lines) + "\n")
    bbo = {"format": "csv", "via": "file", "levels": levels, "check": "exact"}
    held = join.check_output(out, bbo, blackbox.reference_run(SAMPLE, "", levels), through)
    events, _, _ = blackbox.read_events(out, "csv", stamped=False, symbols=blackbox.stock_directory(SAMPLE, "", levels),
                                        levels=levels)
    cols = blackbox.columns(levels)
    whole = join.check_events(events[cols], events["seq"].to_numpy() <= through, SAMPLE, "", through, levels)
    assert held == whole
    assert whole["equal"] == (edit in ("as simulated", "published by shards"))


def test_buckets_are_as_many_as_the_files_the_process_may_open(tmp_path, monkeypatch):
    # A stream holds a file open for each bucket it fills: with few files allowed, fewer buckets, the same judgement.
    lines = _shards(_lines(0), 3, 37)
    monkeypatch.setattr(in_parts.resource, "getrlimit", lambda _: (132, 132))  # room for 2 buckets a stream
    opened: list[int] = []
    real = in_parts._Buckets.__init__
    monkeypatch.setattr(in_parts._Buckets, "__init__", lambda self, stem, count, width: (
        opened.append(count), real(self, stem, count, width))[1])
    judged = _judged(tmp_path, "\n".join(lines) + "\n")
    assert opened == [2, 2] and judged is not None and judged.cut_by == "stock" and judged.equal
    _as_whole(tmp_path, judged, 0)


def test_with_no_room_for_the_buckets_the_whole_check_judges(tmp_path, monkeypatch):
    # Writing the buckets would leave less than DISK_LEFT_FREE on the disk: nothing is judged here (no partial
    # verdict), no bucket is left behind, and the whole check judges the output.
    monkeypatch.setattr(in_parts, "DISK_LEFT_FREE", 1 << 60)
    assert _judged(tmp_path, "\n".join(_shards(_lines(0), 3, 37)) + "\n") is None
    assert not list(tmp_path.glob(f"{in_parts.BUCKETS_PREFIX}*"))
    assert _whole(tmp_path, 0)[0]["equal"]


@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_a_line_longer_than_a_part_is_malformed_and_the_events_after_it_are_read(tmp_path, levels):
    """Left to the whole check, which read the output whole, such a line took memory in proportion: a gateway that
    wrote 400 MB with no line end took the harness to 2.1 GB, and its summary.json to 400 MB (the line kept whole as
    the example)."""
    lines = _lines(levels)
    lines.insert(len(lines) // 2, "1" * 300)  # the parts are 257 bytes
    lines.insert(len(lines) // 3, "x" * 1000)  # four parts' worth
    judged = _judged(tmp_path, "\n".join(lines) + "\n", levels)
    assert judged is not None and judged.equal and judged.malformed == 2  # the events all there, the lines malformed
    assert judged.examples == ["x" * 200 + "…", "1" * 200 + "…"]
    _as_whole(tmp_path, judged, levels)


def test_an_output_that_ends_inside_a_line_longer_than_a_part_is_read_to_its_end(tmp_path):
    lines = _lines(0)
    judged = _judged(tmp_path, "\n".join(lines) + "\n" + "y" * 1000, 0)
    assert judged is not None and judged.equal and judged.malformed == 1 and judged.examples == ["y" * 200 + "…"]
    _as_whole(tmp_path, judged, 0)


def test_a_stamped_line_longer_than_a_part_shows_its_body(tmp_path):
    lines = [f"{1000 + i} {line}" for i, line in enumerate(_lines(0))]
    lines.insert(10, "999 " + "z" * 600)
    judged = _judged(tmp_path, "\n".join(lines) + "\n", 0, stamped=True)
    assert judged is not None and judged.equal and judged.malformed == 1 and judged.examples == ["z" * 200 + "…"]


@pytest.mark.parametrize("levels", [0, 5])
def test_lines_that_hold_no_event_are_counted_and_the_events_still_held(tmp_path, levels):
    # A gateway's warnings among its events, the first line and the last among them (the last with no newline).
    lines = _lines(levels)
    junk = ["WARNING: slow consumer", "1 2 3", "", "\f", "#", "DEBUG book rebuilt"]
    text = "\n".join([junk[0], *lines[:100], junk[1], junk[2], junk[3], *lines[100:], junk[4], junk[5]])
    judged = _judged(tmp_path, text, levels)
    assert judged is not None and judged.equal and judged.events == len(lines)
    assert judged.malformed == 4 and judged.examples == ["WARNING: slow consumer", "1 2 3", "#"]
    _as_whole(tmp_path, judged, levels)


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
    judged = _judged(tmp_path, text, stamped=True, keep_stamps=True)
    assert judged is not None and judged.equal and judged.events == _golden_events()
    assert judged.stamps.tolist() == stamps


def test_a_gateways_own_log_is_held_with_its_stale_flags(tmp_path):
    ref = blackbox.reference_run(SAMPLE)
    bbo = {"format": "itchbench", "via": "file", "levels": 0}
    judged = in_parts.judged(ref.events_log, bbo, ref, True, keep_stamps=False)
    assert judged is not None and judged.equal and judged.events == _golden_events()
    # One record's stale flag set: the flags are held too, so one wrong event; without them, the book alone is equal.
    changed = tmp_path / "bbo.bbo"
    raw = np.fromfile(ref.events_log, np.uint8)
    log = logs.read_bbo(ref.events_log)
    flags_at = log.header_size + 10 * log.stored.dtype.itemsize + log.stored.dtype.fields["flags"][1]
    raw[flags_at] |= logs.FLAG_BOOK_MAY_BE_STALE
    raw.tofile(changed)
    flagged = in_parts.judged(changed, bbo, ref, True, keep_stamps=False)
    assert flagged is not None and flagged.counts["wrong"] == 1 and flagged.first["seq"] == int(log.records["seq"][10])
    assert in_parts.judged(changed, bbo, ref, False, keep_stamps=False).equal


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
    # Digests that differ: head held to base a part at a time, by key as a run's events are, as read whole.
    differs = outputs.compare_bbo(run, other)
    assert not differs["equal"] and differs["wrong"] == 1 and differs["missing"] == differs["extra"] == 0
    assert differs["base_events"] == differs["head_events"] == len(lines)
    whole = outputs._compare(outputs.bbo_records(run), outputs.bbo_records(other), run, ())
    assert {k: differs[k] for k in whole} == whole


@pytest.mark.parametrize("levels", [0, 5, ALL_LEVELS])
def test_runs_whose_stocks_interleave_differently_share_a_digest(tmp_path, levels):
    # A gateway that publishes per thread interleaves its stocks differently from run to run, as it may: the runs
    # are the same (compare SAME, bisect's digest unchanged). A stock's two events swapped is another stream.
    lines = [f"{1000 + i} {line}" for i, line in enumerate(_lines(levels))]  # as the collector stamps them
    unstamped = lambda stamped: [line.split(" ", 1)[1] for line in stamped]  # noqa: E731
    run = _contract_run(tmp_path, "a", "\n".join(lines) + "\n", levels)
    sharded = _contract_run(tmp_path, "b", "\n".join(_shards(lines, 3, 37)) + "\n", levels)
    assert outputs.bbo_digest(sharded) == outputs.bbo_digest(run) == (outputs.bbo_records(sharded)[1], len(lines))
    assert outputs.compare_bbo(run, sharded)["equal"]
    i = _same_stock_pair(unstamped(lines))
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    swapped = _contract_run(tmp_path, "c", "\n".join(_shards(lines, 3, 37)) + "\n", levels)
    assert outputs.bbo_digest(swapped)[0] != outputs.bbo_digest(run)[0]
    differs = outputs.compare_bbo(run, swapped)
    assert not differs["equal"]
    if levels != ALL_LEVELS:
        assert differs["out_of_order"] == 1 and differs["missing"] == differs["extra"] == differs["wrong"] == 0


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
    # Buckets of stocks a killed run left in its run directory: removed when another output there is cut by stock.
    buckets = tmp_path / f"{in_parts.BUCKETS_PREFIX}{ended.pid}-ghi"
    buckets.mkdir()
    _judged(tmp_path, "\n".join(_shards(_lines(0), 3, 37)) + "\n")
    assert not buckets.exists() and live.exists()


def test_the_buckets_disk_is_looked_at_again_as_they_fill_it(tmp_path, monkeypatch):
    # The disk is asked once for a few small blocks, again once DISK_LOOK_BYTES are written; a block that would
    # leave less than DISK_LEFT_FREE is refused even when the last look had room for more.
    looks, free = [], [in_parts.DISK_LEFT_FREE + (1 << 30)]
    monkeypatch.setattr(in_parts.shutil, "disk_usage", lambda _: looks.append(1) or type("U", (), {"free": free[0]}))
    monkeypatch.setattr(in_parts, "DISK_LOOK_BYTES", 4096)
    buckets = in_parts._Buckets(tmp_path / "b", 4, 2)
    block = np.arange(20).reshape(10, 2)  # 10 rows of 3 int32 columns with their places: 120 bytes a block
    for _ in range(30):
        buckets.add(block)
    assert len(looks) == 1
    for _ in range(10):  # past 4096 bytes: looked at again
        buckets.add(block)
    assert len(looks) == 2
    free[0] = in_parts.DISK_LEFT_FREE + 100  # someone else filled the disk
    with pytest.raises(in_parts._DiskFull):
        for _ in range(40):
            buckets.add(block)
    buckets.close()


def test_an_output_repeating_one_event_is_a_flood_read_no_further(tmp_path, monkeypatch):
    # A gateway stuck re-sending one event: a window of seqs holds a seq's events whole, so all it sent was held at
    # once (a 30 s loop of a Python gateway: 2.4 GB of output, 9.4 GB of harness). Past ONE_SEQ_MOST events of one
    # seq still going, the output is judged up to that seq and read no further.
    monkeypatch.setattr(in_parts, "ONE_SEQ_MOST", 50)
    lines = _lines(0)
    seqs = [int(line.split(",")[0]) for line in lines]
    at = next(i for i in range(len(lines) // 2, len(lines)) if seqs[i + 1] != seqs[i])  # its seq's last event
    seq = seqs[at]
    looped = lines[:at + 1] + [lines[at]] * 5000 + lines[at + 1:]
    text = "".join(line + "\n" for line in looped)
    judged = _judged(tmp_path, text)
    assert judged.flood is not None and not judged.equal
    assert judged.flood["seq"] == seq and judged.flood["most"] == 50
    # Read no further than the part that passed the most (parts of 257 bytes, a line under 64): the first part
    # beyond 50 events of the seq. Every one of them past the reference's own is extra; no event after it judged.
    same = seqs.count(seq)
    assert 50 < judged.flood["events_of_seq"] <= 50 + 257 // 10 + same
    assert judged.counts == {"missing": 0, "extra": judged.flood["events_of_seq"] - same, "wrong": 0,
                             "out_of_order": 0}
    before = sum(1 for s in seqs if s < seq)
    assert judged.events == before + judged.flood["events_of_seq"] and judged.reference_events == before + same
    # What was read is whole lines, those judged: the rest of the file is the bytes said unread.
    read = text[:len(text) - judged.flood["bytes_not_read"]]
    assert judged.flood["bytes_not_read"] > 0 and read.endswith("\n") and read.count("\n") == judged.events
    assert judged.first is not None and judged.first["kind"] == "extra" and judged.first["seq"] == seq
    words = verdict.difference_words({**judged.counts, "reference_events": judged.reference_events,
                                      "first_difference": judged.first, "flood": judged.flood})
    assert words.endswith(f"; judged up to seq {seq:,} only: the output then held {judged.flood['events_of_seq']:,} "
                          f"events of that one seq (more than 50, a flood) and was read no further, "
                          f"{judged.flood['bytes_not_read']:,} bytes unread")
    # Repeated fewer times than the most: judged whole, each copy an extra event, nothing called a flood.
    monkeypatch.setattr(in_parts, "ONE_SEQ_MOST", 6000)
    judged = _judged(tmp_path, text)
    assert judged.flood is None and judged.counts["extra"] == 5000 and judged.events == len(looped)


def test_a_flood_is_one_however_the_parts_fall(tmp_path, monkeypatch):
    # 60 copies of an event past a most of 50, read in parts of 257 bytes, 4,099, or all at once: the part that
    # passes the most may hold where the flood ended too (the CI test command of 2026-12-07: a flood of 4,500,001
    # read whole, by its stamps' digits), and it is a flood all the same, the events read after it counted.
    monkeypatch.setattr(in_parts, "ONE_SEQ_MOST", 50)
    lines = _lines(0)
    seqs = [int(line.split(",")[0]) for line in lines]
    at = next(i for i in range(len(lines) // 2, len(lines)) if seqs[i + 1] != seqs[i])
    seq, same = seqs[at], seqs.count(seqs[at])
    text = "".join(line + "\n" for line in lines[:at + 1] + [lines[at]] * 60 + lines[at + 1:])
    for part_bytes in (257, 4099, 1 << 20):
        monkeypatch.setattr(in_parts, "OUTPUT_BYTES_AT_ONCE", part_bytes)
        judged = _judged(tmp_path, text)
        assert judged.flood is not None and judged.flood["seq"] == seq, part_bytes
        assert 50 < judged.flood["events_of_seq"] <= 60 + same, part_bytes
        assert judged.counts["extra"] == judged.flood["events_of_seq"] - same, part_bytes
    # Read in one part: the whole flood judged, every event after it read and not judged, no byte unread.
    assert judged.flood["events_of_seq"] == 60 + same
    assert judged.flood["events_read_after"] == len(lines) - at - 1 and judged.flood["bytes_not_read"] == 0
    words = verdict.flood_words(judged.flood)
    assert words == (f"judged up to seq {seq:,} only: the output then held {60 + same:,} events of that one seq "
                     f"(more than 50, a flood) and was judged no further, {len(lines) - at - 1:,} events read after "
                     "them, 0 bytes unread")


def test_an_output_replaying_its_last_events_in_a_loop_is_a_flood_by_stock_too(tmp_path, monkeypatch):
    # Its seqs go back, so it is judged in buckets of stocks, each read whole: a gateway replaying its last events
    # in a loop would fill one. Past FLOOD_TIMES the simulation's events and ONE_SEQ_MOST more, it is read no further.
    monkeypatch.setattr(in_parts, "ONE_SEQ_MOST", 50)
    lines = _lines(0)
    looped = lines + lines[-100:] * 300
    text = "".join(line + "\n" for line in looped)
    judged = _judged(tmp_path, text)
    most = in_parts.FLOOD_TIMES * len(lines) + 50
    assert judged.cut_by == "stock" and not judged.equal
    assert judged.flood is not None and {k: judged.flood[k] for k in ("events", "reference_events")} == {
        "events": most, "reference_events": len(lines)}
    assert judged.events == most and judged.reference_events == len(lines)
    # Every reference event is among the first `most`; the rest of those are the loop's copies.
    assert judged.counts["missing"] == 0 and judged.counts["wrong"] == 0
    assert judged.counts["extra"] + judged.counts["out_of_order"] == most - len(lines), judged.counts
    judged_bytes = len("".join(line + "\n" for line in looped[:most]))
    assert 0 < judged.flood["bytes_not_read"] <= len(text) - judged_bytes
    assert verdict.flood_words(judged.flood).startswith(
        f"judged on its first {most:,} events only: an output of more (the simulation's {len(lines):,} four times "
        "over, and more) is a flood, read no further, ")
    # Fewer copies: all judged, nothing called a flood.
    judged = _judged(tmp_path, "".join(line + "\n" for line in lines + lines[-100:] * 3))
    assert judged.cut_by == "stock" and judged.flood is None and judged.events == len(lines) + 300
