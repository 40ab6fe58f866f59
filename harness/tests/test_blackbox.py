"""The black-box checks of a contract gateway's BBO output
(gateways/blackbox), on streams written here by hand: each expected count
is worked out from the edit that made the stream."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from itchbench.analysis import hops, native
from itchbench.gateways import blackbox
from itchbench.runs.verdict import difference_words

REF = pd.DataFrame([[10, 1, 100, 5, 0, 0], [11, 2, 200, 7, 210, 3], [12, 1, 101, 2, 0, 0], [13, 2, 200, 7, 0, 0]],
                   columns=blackbox.COLUMNS)
KINDS = {10: "A", 11: "A", 12: "A", 13: "D"}


def _events(rows: list[list[int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=blackbox.COLUMNS).assign(t_recv=0)


def test_csv_lines_parse_and_garbage_is_counted(tmp_path: Path):
    path = tmp_path / "bbo.received"
    path.write_text("1000 10,1,100,5,0,0\n1001 hello\n1002 11, 2, 200, 7, 210, 3\n1003 12,1,101\n\n1004 13,2,200,7,0,0\n")
    events, malformed, examples = blackbox.read_events(path, "csv", stamped=True)
    assert malformed == 2 and examples == ["hello", "12,1,101"]
    assert events[blackbox.COLUMNS].values.tolist() == [REF.values[0].tolist(), REF.values[1].tolist(),
                                                        REF.values[3].tolist()]
    assert events["t_recv"].tolist() == [1000, 1002, 1004]


def test_lines_of_numbers_alone_are_read_as_line_by_line(tmp_path: Path):
    # Plain lines (a blank one among them, none after the last newline), and the same with spaces after their
    # commas and \r\n endings, are read at once by the compiled reader; with a no-break space after a comma (a
    # blank to the line-by-line reader, not to the compiled one) they are read line by line: the same events.
    rows = [[1000, *REF.values[0]], [1002, *REF.values[1]], [1004, *REF.values[3]]]
    plain = tmp_path / "plain.received"
    plain.write_text("\n".join(f"{r[0]} " + ",".join(map(str, r[1:])) for r in rows[:2]) + "\n\n"
                     + f"{rows[2][0]} " + ",".join(map(str, rows[2][1:])))
    spaced = tmp_path / "spaced.received"
    spaced.write_bytes("".join(f"{r[0]} " + ", ".join(map(str, r[1:])) + "\r\n" for r in rows).encode())
    unusual = tmp_path / "unusual.received"
    unusual.write_text("".join(f"{r[0]} " + ",\u00a0".join(map(str, r[1:])) + "\n" for r in rows))
    assert native.parse_plain_csv(plain.read_bytes(), 6, True) is not None  # the compiled reader takes these
    assert native.parse_plain_csv(spaced.read_bytes(), 6, True) is not None
    assert native.parse_plain_csv(unusual.read_bytes(), 6, True) is None    # and leaves this one
    for path in (plain, spaced, unusual):
        events, malformed, _ = blackbox.read_events(path, "csv", stamped=True)
        assert malformed == 0 and events.columns.tolist() == [*blackbox.COLUMNS, "t_recv"]
        assert events.values.tolist() == [[*r[1:], r[0]] for r in rows]
    silent = tmp_path / "silent.received"  # a gateway that sent nothing: no event, no malformed line
    silent.write_text("")
    events, malformed, _ = blackbox.read_events(silent, "csv", stamped=True)
    assert (len(events), malformed) == (0, 0) and events.columns.tolist() == [*blackbox.COLUMNS, "t_recv"]
    unstamped = tmp_path / "bbo.csv"
    unstamped.write_text("10,1,100,5,0,0\n11,2,200,7,210,3\n")
    events, malformed, _ = blackbox.read_events(unstamped, "csv", stamped=False)
    assert malformed == 0 and events.values.tolist() == [[*REF.values[0], 0], [*REF.values[1], 0]]


def test_lines_that_are_not_plain_are_read_line_by_line_in_their_places(tmp_path: Path, monkeypatch):
    # Plain lines with others among them: garbage first, two in a row, one with a \r inside (two lines to the
    # line-by-line reader), a no-break space after a comma (an event line by line, not plain), a form feed alone
    # (blank line by line), and garbage last with no newline. Expected: the events of the lines that parse, in
    # file order, and the garbage in order, as written here.
    r = [[1000 + i, *row] for i, row in enumerate(REF.values.tolist())]
    line = lambda row, sep=",": f"{row[0]} " + sep.join(map(str, row[1:]))  # noqa: E731
    text = "\n".join(["1999 junk at the start", line(r[0]), "1998 two", "1997 in a row", line(r[1]),
                      "1996 before\r1995 after a lone CR", line(r[2], ",\u00a0"), "\f", line(r[3]),
                      "1994 junk at the end"])
    path = tmp_path / "bbo.received"
    path.write_text(text)
    plain = native.parse_plain_csv(path.read_bytes(), 6, True, set_aside=True)
    assert plain is not None and len(plain.rows) == 3 and len(plain.others) == 7  # the form feed too
    events, malformed, examples = blackbox.read_events(path, "csv", stamped=True)
    assert events.values.tolist() == [[*row[1:], row[0]] for row in r]
    assert malformed == 6 and examples == ["junk at the start", "two", "in a row"]
    # The same as the output read wholly line by line.
    monkeypatch.setattr(blackbox, "_csv_mixed", lambda *args: None)
    whole, whole_malformed, whole_examples = blackbox.read_events(path, "csv", stamped=True)
    assert whole.values.tolist() == events.values.tolist()
    assert (whole_malformed, whole_examples) == (malformed, examples)


def test_a_number_past_int64_is_a_malformed_line_not_a_crash(tmp_path: Path):
    # 2^63 in an event's field: the line is malformed (it once raised OverflowError); in the receive stamp: no stamp.
    path = tmp_path / "bbo.received"
    path.write_text("1000 10,1,100,5,0,0\n1001 11,2,9223372036854775808,7,210,3\n"
                    "9223372036854775808 12,1,101,2,0,0\n1003 13,2,200,7,0,0000000000009223372036854775807\n")
    events, malformed, examples = blackbox.read_events(path, "csv", stamped=True)
    assert malformed == 1 and examples == ["11,2,9223372036854775808,7,210,3"]
    assert events.values.tolist() == [[*REF.values[0], 1000], [*REF.values[2], 0],
                                      [13, 2, 200, 7, 0, 2**63 - 1, 1003]]
    jsonl = tmp_path / "bbo.jsonl"
    jsonl.write_text('{"seq": 10, "stock": 1, "bid_px": 100, "bid_qty": 5, "ask_px": 0, "ask_qty": 0}\n'
                     '{"seq": 11, "stock": 2, "bid_px": 9223372036854775808, "bid_qty": 7, "ask_px": 0, '
                     '"ask_qty": 0}\n')
    events, malformed, _ = blackbox.read_events(jsonl, "jsonl", stamped=False)
    assert malformed == 1 and events[blackbox.COLUMNS].values.tolist() == [REF.values[0].tolist()]


def test_json_lines_of_integers_are_read_at_once_as_one_by_one(tmp_path: Path):
    # Objects of integers, stamped: read at once by pyarrow. The same with one seq written as a string ("11"), which
    # pyarrow's reader cannot type, are read one by one, and int() takes the string: the same events either way.
    path = tmp_path / "bbo.received"
    lines = [f"{1000 + i} " + json.dumps(dict(zip(blackbox.COLUMNS, map(int, r)))) for i, r in enumerate(REF.values)]
    path.write_text("\n".join(lines) + "\n")
    assert blackbox._jsonl_at_once(path.read_bytes(), blackbox.COLUMNS, True, {}) is not None
    expected = [[*r, 1000 + i] for i, r in enumerate(REF.values.tolist())]
    events, malformed, _ = blackbox.read_events(path, "jsonl", stamped=True)
    assert malformed == 0 and events.values.tolist() == expected
    path.write_text("\n".join(lines).replace('"seq": 11', '"seq": "11"') + "\n")
    assert blackbox._jsonl_at_once(path.read_bytes(), blackbox.COLUMNS, True, {}) is None
    events, malformed, _ = blackbox.read_events(path, "jsonl", stamped=True)
    assert malformed == 0 and events.values.tolist() == expected
    # Blank lines and lines of blanks among them, \r\n endings, no last newline: still at once, the same events.
    path.write_bytes(("\n \t\n".join(lines[:2]) + "\r\n\n" + "\r\n".join(lines[2:])).encode())
    assert blackbox._jsonl_at_once(path.read_bytes(), blackbox.COLUMNS, True, {}) is not None
    events, malformed, _ = blackbox.read_events(path, "jsonl", stamped=True)
    assert malformed == 0 and events.values.tolist() == expected
    # Odd stamps (a sign, none, a letter, leading zeros, past int64 and past uint64): whichever reader takes them,
    # the stamp is what the line-by-line reader makes of it (none: 0), the event the same.
    for stamp, t_recv in (("+1001", 1001), ("", 0), ("10a1", 0), ("9223372036854775808", 0),
                          ("00000000000000000001001", 1001), ("18446744073709551617", 0)):
        edited = [*lines[:1], stamp + " " + lines[1].split(" ", 1)[1], *lines[2:]]
        path.write_text("\n".join(edited) + "\n")
        events, malformed, _ = blackbox.read_events(path, "jsonl", stamped=True)
        assert events.values.tolist() == [expected[0], [*expected[1][:-1], t_recv], *expected[2:]], stamp


def test_a_json_level_change_whose_side_is_a_number_is_malformed_either_way(tmp_path: Path):
    # Every level (levels = all): a side is "B" or "S", read at once as its byte. Written as a number (66, 83) on
    # every line, which pyarrow types as integers, each line is malformed, as one by one.
    path = tmp_path / "changes.jsonl"
    path.write_text('{"seq": 10, "stock": 1, "side": "B", "price": 100, "shares": 5}\n'
                    '{"seq": 11, "stock": 1, "side": "S", "price": 101, "shares": 0}\n')
    assert blackbox._jsonl_at_once(path.read_bytes(), blackbox.LEVEL_CHANGE_COLUMNS, False, {}) is not None
    events, malformed, _ = blackbox.read_events(path, "jsonl", stamped=False, levels="all")
    assert malformed == 0 and events.values.tolist() == [[10, 1, 66, 100, 5, 0], [11, 1, 83, 101, 0, 0]]
    path.write_text(path.read_text().replace('"B"', "66").replace('"S"', "83"))
    events, malformed, _ = blackbox.read_events(path, "jsonl", stamped=False, levels="all")
    assert malformed == 2 and events.empty


def test_a_json_field_that_is_not_a_whole_number_is_malformed_not_rounded(tmp_path: Path):
    # int() had taken 100.4 shares as 100 and true as 1: a gateway off by a fraction matched the simulation. The
    # first line is REF's first event as it should be; each other is it with one field spoilt.
    good = {"seq": 10, "stock": 1, "bid_px": 100, "bid_qty": 5, "ask_px": 0, "ask_qty": 0}
    spoilt = [{**good, "bid_qty": 5.4}, {**good, "bid_px": True}, {**good, "bid_px": -100}, {**good, "seq": 10.0}]
    path = tmp_path / "bbo.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in [good, *spoilt]) + "\n")
    events, malformed, examples = blackbox.read_events(path, "jsonl", stamped=False)
    assert malformed == 4 and events[blackbox.COLUMNS].values.tolist() == [REF.values[0].tolist()]
    assert [blackbox.why_malformed(e, "jsonl", blackbox.COLUMNS, {}) for e in examples] == [
        "bid_qty 5.4 is not a whole number from 0 to 2^63 - 1",
        "bid_px true is not a whole number from 0 to 2^63 - 1 (a price is a whole number of 1/10,000 dollars)",
        "bid_px -100 is not a whole number from 0 to 2^63 - 1 (a price is a whole number of 1/10,000 dollars)"]
    # Negative integers alone, which pyarrow reads at once as integers, are malformed there too.
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "seq": 11, "ask_qty": -1}) + "\n")
    assert blackbox._jsonl_at_once(path.read_bytes(), blackbox.COLUMNS, False, {}) is None
    assert blackbox.read_events(path, "jsonl", stamped=False)[1] == 1


def test_a_malformed_line_is_said_with_what_is_wrong_with_it():
    cols = blackbox.COLUMNS
    cases = {
        "12,8,0.0000,0,196.7900,100": "bid_px '0.0000' is not a whole number from 0 to 2^63 - 1 (a price is a "
                                      "whole number of 1/10,000 dollars)",
        "12,8,1,2,3": "5 fields where 6 are due (seq, stock, bid_px, …)",
        "12,ZZZZ,1,2,3,4": "stock 'ZZZZ' is neither a locate nor a symbol of the session's stock directory",
        "12,AAPL,1,2,3,4": "",  # nothing wrong taken alone
        "12,8,1,2,3,9223372036854775808": "ask_qty '9223372036854775808' is not a whole number from 0 to 2^63 - 1",
        "x" * (blackbox.EXAMPLE_CHARS + 1): "",  # cut short as kept: not told
        # Digits other than 0-9, which Python's int() reads ("\u0665" as 5): not a number of an event.
        "12,8,\u0665,0,0,0": "bid_px '\u0665' is not a whole number from 0 to 2^63 - 1 (a price is a whole number of "
                             "1/10,000 dollars)",
        "12,\u0668,5,0,0,0": "stock '\u0668' is neither a locate nor a symbol of the session's stock directory",
    }
    for line, why in cases.items():
        assert blackbox.why_malformed(line, "csv", cols, {"AAPL": 1}) == why, line
        if line.count(",") == 5 and why:  # and the reader counts it malformed
            assert len(blackbox.events_of((line + "\n").encode(), "csv", cols, False, {"AAPL": 1})[1]) == 1, line
    assert blackbox.why_malformed("not json", "jsonl", cols, {}) == "not a JSON object"
    assert blackbox.why_malformed('{"seq": 1}', "jsonl", cols, {}) == "no stock, bid_px, bid_qty, …"
    sided = blackbox.LEVEL_CHANGE_COLUMNS
    assert blackbox.why_malformed("1,1,X,100,5", "csv", sided, {}) == "side 'X' is neither B nor S"


def test_json_lines_parse_and_garbage_is_counted(tmp_path: Path):
    path = tmp_path / "bbo.jsonl"
    path.write_text('{"seq": 10, "stock": 1, "bid_px": 100, "bid_qty": 5, "ask_px": 0, "ask_qty": 0}\n'
                    '{"seq": 11}\nnot json\n')
    events, malformed, _ = blackbox.read_events(path, "jsonl", stamped=False)
    assert malformed == 2 and events[blackbox.COLUMNS].values.tolist() == [REF.values[0].tolist()]


def test_json_lines_among_malformed_ones_are_read_in_parts_each_event_in_its_place(monkeypatch):
    # 3,000 stamped events (expected: the tuples that wrote them), with malformed lines at the start, in the middle,
    # two together and at the end: the events and the malformed lines, in order, as json.loads a line would read
    # them; the parts around the malformed lines read at once (pyarrow asked a few dozen times, not a line at a
    # time), so the lines read one by one are those parts' few.
    monkeypatch.setattr(blackbox, "JSONL_LINE_BY_LINE_LINES", 16)
    rows = [(seq, seq % 7, 1_000 + seq % 13, seq * 3, 0 if seq % 5 else 2_000, seq % 11) for seq in range(1, 3_001)]
    lines = [f"{50_000 + r[0]} " + json.dumps(dict(zip(blackbox.COLUMNS, r))) for r in rows]
    malformed_at = {0: "1 not json", 1_500: '2 {"seq": 1.5}', 1_501: "3 {", 2_999: '4 {"seq": 9, "stock": "ZZZ"}'}
    written = [malformed_at.get(i, line) for i, line in enumerate(lines)]
    expected = [[*r, 50_000 + r[0]] for i, r in enumerate(rows) if i not in malformed_at]
    calls = []
    at_once = blackbox._jsonl_at_once
    monkeypatch.setattr(blackbox, "_jsonl_at_once", lambda data, *a: calls.append(len(data.splitlines())) or
                        at_once(data, *a))
    events, bad = blackbox.events_of(("\n".join(written) + "\n").encode(), "jsonl", blackbox.COLUMNS, True, {})
    assert events.tolist() == expected
    assert bad.tolist() == ["not json", '{"seq": 1.5}', "{", '{"seq": 9, "stock": "ZZZ"}']
    assert 10 < len(calls) < 80 and calls[0] == 3_000


def test_exact_counts_missing_extra_and_wrong_apart():
    got = _events([[10, 1, 100, 5, 0, 0], [11, 2, 200, 8, 210, 3], [13, 2, 200, 7, 0, 0], [14, 3, 1, 1, 0, 0]])
    out = blackbox.check(got, REF, KINDS, "exact")
    # 12 never came (missing), 14 is not in the reference (extra), 11's bid size is 8, not 7 (wrong).
    assert (out["missing"], out["extra"], out["wrong"], out["equal"]) == (1, 1, 1, False)
    first = out["first_difference"]
    assert first["index"] == 1 and first["expected"].startswith("seq 11 (message A), stock 2: bid 200 × 7")
    assert first["got"].startswith("seq 11 (message A), stock 2: bid 200 × 8")
    assert blackbox.check(_events(REF.values.tolist()), REF, KINDS, "exact")["equal"]


def test_state_accepts_conflation_and_repeats_but_not_a_wrong_book():
    # Stock 1's event at 10 skipped (conflated into 12), stock 2 reported again at 12 unchanged: each is the
    # reference book of its stock at its seq.
    conflated = _events([[11, 2, 200, 7, 210, 3], [12, 1, 101, 2, 0, 0], [12, 2, 200, 7, 210, 3], [13, 2, 200, 7, 0, 0]])
    assert blackbox.check(conflated, REF, KINDS, "state")["equal"]
    # Stock 2 last reported with its ask still there: its final state is wrong, and so is that event.
    stale = _events([[11, 2, 200, 7, 210, 3], [12, 1, 101, 2, 0, 0], [13, 2, 200, 7, 210, 3]])
    out = blackbox.check(stale, REF, KINDS, "state")
    assert (out["wrong"], out["missing"]) == (1, 1) and out["first_difference"]["index"] == 2


def _states_by_hand(got: pd.DataFrame, ref: pd.DataFrame) -> tuple[dict[str, int], tuple[str, int] | None]:
    """The state check's rule event by event: each received event against its stock's last reference event at or
    before its seq (an empty book when none), a stock's last state received against its last reference event, a
    seq below one of its stock received before it out of order; the first event either, by place (named wrong when
    it is both)."""
    fields = ["bid_px", "bid_qty", "ask_px", "ask_qty"]
    wrong, late, first = 0, 0, None
    highest: dict[int, int] = {}
    for at, event in enumerate(got.itertuples(index=False)):
        earlier = ref[(ref["stock"] == event.stock) & (ref["seq"] <= event.seq)]
        expected = earlier[fields].values[-1].tolist() if len(earlier) else [0, 0, 0, 0]
        is_late = event.seq < highest.get(event.stock, event.seq)
        is_wrong = [getattr(event, f) for f in fields] != expected
        wrong, late = wrong + is_wrong, late + is_late
        if first is None and (is_wrong or is_late):
            first = ("wrong" if is_wrong else "out of order", at)
        highest[event.stock] = max(highest.get(event.stock, event.seq), event.seq)
    missing = 0
    for stock, events in ref.groupby("stock", sort=False):
        received = got[got["stock"] == stock]
        missing += not len(received) or received[fields].values[-1].tolist() != events[fields].values[-1].tolist()
    return {"missing": missing, "extra": 0, "wrong": wrong, "out_of_order": late}, first


def test_states_are_judged_as_the_rule_says_event_by_event():
    # Random sessions of a few stocks (several reference events at one seq now and then), received with events
    # conflated away, two swapped, a share changed, a stock renamed, or seqs past 2^40 (which do not fit beside a
    # stock in one 64-bit key): the counts and the first difference are the rule's, worked out event by event.
    rng = np.random.default_rng(11)
    for case in range(400):
        n = int(rng.integers(1, 40))
        seqs = np.sort(rng.integers(1, 30, n)) + (1 << 41 if case % 5 == 0 else 0)
        ref = pd.DataFrame({"seq": seqs, "stock": rng.integers(1, 4, n), "bid_px": rng.integers(0, 3, n),
                            "bid_qty": rng.integers(0, 3, n), "ask_px": rng.integers(0, 3, n),
                            "ask_qty": rng.integers(0, 3, n)})
        got = ref[rng.random(n) < 0.7].reset_index(drop=True)
        if len(got) > 1 and case % 2:
            i = int(rng.integers(0, len(got) - 1))
            got = got.iloc[[*range(i), i + 1, i, *range(i + 2, len(got))]].reset_index(drop=True)
        if len(got) and case % 3 == 0:
            got.loc[int(rng.integers(0, len(got))), "bid_qty"] += 1
        if len(got) and case % 7 == 0:
            got.loc[int(rng.integers(0, len(got))), "stock"] = 9
        counts, first = blackbox.state(got, ref, {}, ("bid_px", "bid_qty", "ask_px", "ask_qty"), 100)
        expected, expected_first = _states_by_hand(got, ref)
        assert counts == expected, case
        assert (first["kind"], first["index"] - 100) == expected_first if first else expected_first is None, case


def _exact_by_hand(got: list[tuple[int, ...]], ref: list[tuple[int, ...]], key: int, got_at: int,
                   ref_at: int) -> tuple[dict[str, int], tuple[str, int, int, int, int] | None]:
    """The exact check's rule event by event: the n-th event of a key (its first `key` values) received is the
    reference's n-th of that key; a matched one is wrong when a value differs, and out of order when a later
    reference event of its stock was received before it; the first difference by seq, then place in its stream
    (received for an extra event; events from got_at and ref_at on), then key. Counts; the first's kind, seq,
    stock, index, and for one out of order the seq of the later event received before it."""
    def numbered(rows: list[tuple[int, ...]]) -> list[tuple[tuple[int, ...], int]]:
        seen: dict[tuple[int, ...], int] = {}
        out = []
        for row in rows:
            out.append((row[:key], seen.get(row[:key], 0)))
            seen[row[:key]] = seen.get(row[:key], 0) + 1
        return out
    in_ref = {kn: i for i, kn in enumerate(numbered(ref))}
    received = {kn: j for j, kn in enumerate(numbered(got))}
    counts = dict.fromkeys(blackbox.DIFFERENCES, 0)
    found: list[tuple[int, int, tuple[int, ...], int, str, int]] = []
    for kn, i in in_ref.items():
        if kn not in received:
            counts["missing"] += 1
            found.append((kn[0][0], ref_at + i, kn[0], kn[1], "missing", 0))
    for kn, j in received.items():
        if kn not in in_ref:
            counts["extra"] += 1
            found.append((kn[0][0], got_at + j, kn[0], kn[1], "extra", 0))
    latest: dict[int, int] = {}  # per stock, the latest reference place received so far
    for kn, j in received.items():
        if kn not in in_ref:
            continue
        i, stock = in_ref[kn], kn[0][1]
        is_wrong, is_late = ref[i][key:] != got[j][key:], latest.get(stock, -1) > i
        counts["wrong"] += is_wrong
        counts["out_of_order"] += is_late
        if is_wrong or is_late:
            found.append((kn[0][0], ref_at + i, kn[0], kn[1], "wrong" if is_wrong else "out of order",
                          ref[latest.get(stock, -1)][0]))
        latest[stock] = max(latest.get(stock, -1), i)
    if not found:
        return counts, None
    seq, at, k, _, kind, later = min(found)
    return counts, (kind, seq, k[1], at, later)


def test_exact_matches_as_the_rule_says_event_by_event():
    # Random sessions of a few stocks, BBO events and level changes (several events of one key now and then),
    # received with events dropped, repeated, a value changed, two swapped, a stock renamed, or all shuffled; seqs
    # and stocks past 2^40 and 2^30 now and then (no one 64-bit key holds them side by side): the counts and the
    # first difference are the rule's, worked out event by event.
    rng = np.random.default_rng(12)
    for case in range(600):
        changes = case % 3 == 0
        cols = blackbox.LEVEL_CHANGE_COLUMNS if changes else blackbox.COLUMNS
        key = len(blackbox.event_key(cols))
        n = int(rng.integers(0, 30))
        seqs = np.sort(rng.integers(1, 12, n)) + (1 << 41 if case % 5 == 0 else 0)
        stocks = rng.choice([1, 2, 3, 1 << 30] if case % 4 == 0 else [1, 2, 3], n)
        rest = ([rng.choice([66, 83], n), rng.integers(1, 3, n), rng.integers(0, 3, n)] if changes else
                [rng.integers(0, 2, n) for _ in range(4)])
        ref = [tuple(int(v) for v in row) for row in zip(seqs, stocks, *rest)]
        got = [row for row in ref if rng.random() < 0.85]
        for _ in range(int(rng.integers(0, 3))):
            if not got:
                break
            i, edit = int(rng.integers(0, len(got))), int(rng.integers(0, 4))
            if edit == 0:
                got.insert(int(rng.integers(0, len(got) + 1)), got[i])
            elif edit == 1:
                got[i] = (*got[i][:-1], got[i][-1] + 1)
            elif edit == 2 and i + 1 < len(got):
                got[i], got[i + 1] = got[i + 1], got[i]
            else:
                got[i] = (got[i][0], 2, *got[i][2:])
        if case % 11 == 0:
            got = [got[i] for i in rng.permutation(len(got))]
        frame = lambda rows: pd.DataFrame(np.array(rows, np.int64).reshape(-1, len(cols)), columns=cols)  # noqa: E731
        counts, first = blackbox.exact(frame(got), frame(ref), {}, tuple(cols[key:]), cols[:key], 50, 70)
        expected, expected_first = _exact_by_hand(got, ref, key, 50, 70)
        assert counts == expected, case
        if expected_first is None:
            assert first is None, case
            continue
        kind, seq, stock, index, later = expected_first
        assert (first["kind"], first["seq"], first["stock"], first["index"]) == (kind, seq, stock, index), case
        if kind == "out of order":
            assert f"after the stock's event of seq {later:,} " in first["got"], case


def test_a_stock_may_be_named_by_its_symbol(tmp_path: Path):
    # The stock directory of the session (R messages): AAPL is locate 1, MSFT locate 2. ZZZZ is in no directory.
    directory = {"AAPL": 1, "MSFT": 2}
    path = tmp_path / "bbo.received"
    path.write_text("1000 10,AAPL,100,5,0,0\n1001 11, MSFT ,200,7,210,3\n1002 12,1,101,2,0,0\n1003 13,ZZZZ,1,1,0,0\n")
    events, malformed, examples = blackbox.read_events(path, "csv", stamped=True, symbols=directory)
    assert malformed == 1 and examples == ["13,ZZZZ,1,1,0,0"]
    assert events[blackbox.COLUMNS].values.tolist() == [REF.values[i].tolist() for i in range(3)]
    assert events["t_recv"].tolist() == [1000, 1001, 1002]
    # Symbols in lines of numbers alone: read by the compiled reader, each symbol mapped through the directory.
    plain = tmp_path / "plain.received"
    plain.write_text("1000 10,AAPL,100,5,0,0\n1001 11,MSFT,200,7,210,3\n1002 12,1,101,2,0,0\n")
    assert native.parse_plain_csv(plain.read_bytes(), 6, True) is not None
    events, malformed, _ = blackbox.read_events(plain, "csv", stamped=True, symbols=directory)
    assert malformed == 0 and events[blackbox.COLUMNS].values.tolist() == [REF.values[i].tolist() for i in range(3)]
    plain.write_text("1000 10,AAPL,100,5,0,0\n1003 13,ZZZZ,1,1,0,0\n")  # one the directory does not name
    events, malformed, examples = blackbox.read_events(plain, "csv", stamped=True, symbols=directory)
    assert malformed == 1 and examples == ["13,ZZZZ,1,1,0,0"] and len(events) == 1
    jsonl = tmp_path / "bbo.jsonl"
    jsonl.write_text('{"seq": 10, "stock": "AAPL", "bid_px": 100, "bid_qty": 5, "ask_px": 0, "ask_qty": 0}\n'
                     '{"seq": 13, "stock": "ZZZZ", "bid_px": 1, "bid_qty": 1, "ask_px": 0, "ask_qty": 0}\n')
    events, malformed, _ = blackbox.read_events(jsonl, "jsonl", stamped=False, symbols=directory)
    assert malformed == 1 and events[blackbox.COLUMNS].values.tolist() == [REF.values[0].tolist()]


def test_the_first_difference_is_by_seq_and_names_an_extra_events_message():
    # An event inserted before everything (seq 9, not in the reference) and one missing (12): by position every
    # event after the insertion would differ; by seq only those two do, and the first is the extra one at seq 9.
    kinds = {9: "X", 10: "A", 11: "A", 12: "A", 13: "D"}
    got = _events([[9, 1, 1, 1, 0, 0], *REF.values[[0, 1, 3]].tolist()])
    out = blackbox.check(got, REF, kinds, "exact")
    assert (out["missing"], out["extra"], out["wrong"]) == (1, 1, 0)
    first = out["first_difference"]
    assert (first["seq"], first["kind"], first["message"], first["stream"], first["event"]) == (9, "extra", "X",
                                                                                               "received", 1)
    words = difference_words(out)
    assert words.startswith("1 missing, 1 extra, 0 wrong of 4 reference events; first at seq 9 (message X), stock 1")


def test_a_stocks_event_after_its_later_event_is_out_of_order_but_stocks_may_interleave():
    # Stocks 1 and 2 interleaved differently from the reference: allowed (each stock's own order is kept).
    interleaved = _events(REF.values[[1, 0, 3, 2]].tolist())
    assert blackbox.check(interleaved, REF, KINDS, "exact")["equal"]
    # Stock 1's event of seq 10 sent after its event of seq 12: a subscriber ends holding the older quote. Every
    # event is there with the right values, so only the order can catch it: one event out of order (seq 10).
    swapped = _events(REF.values[[2, 1, 0, 3]].tolist())
    out = blackbox.check(swapped, REF, KINDS, "exact")
    assert (out["missing"], out["extra"], out["wrong"], out["out_of_order"], out["equal"]) == (0, 0, 0, 1, False)
    first = out["first_difference"]
    assert (first["kind"], first["seq"], first["stock"]) == ("out of order", 10, 1)
    assert "received as event #3, after the stock's event of seq 12 (message A)" in first["got"]
    assert "1 out of order" in difference_words(out)
    # The same edit in state mode: a state older than one already reported for its stock.
    state = blackbox.check(swapped, REF, KINDS, "state")
    assert (state["out_of_order"], state["equal"]) == (1, False)
    assert state["first_difference"]["kind"] == "out of order" and state["first_difference"]["seq"] == 10
    # A duplicate is extra, not out of order: the order check looks only at matched events.
    dup = blackbox.check(_events(REF.values[[0, 1, 2, 0, 3]].tolist()), REF, KINDS, "exact")
    assert (dup["extra"], dup["out_of_order"]) == (1, 0)


def _send_log(path: Path, packets: list[tuple[int, int, int]], flags: int = 0) -> Path:
    """A send log of (first seq, count, t_sent ns) packets, each due 1 µs before it was sent."""
    from itchbench.analysis import logs
    w = logs.LogWriter(path, logs.KIND_SEND, stage_clock=1)
    rec = np.zeros(len(packets), logs.SEND_DTYPE)
    for i, (seq, count, sent) in enumerate(packets):
        rec[i]["seq"], rec[i]["count"], rec[i]["t_sent"], rec[i]["t_intended"] = seq, count, sent, sent - 1_000
    rec["flags"] = flags
    w.append(rec)
    w.close()
    return path


def test_an_event_received_before_its_message_was_sent_is_counted_and_named(tmp_path: Path):
    # Packets: seq 10-11 sent at 1 s, seq 12-13 at 1.010 s; seq 12 again (line B's copy) at 1.005 s, written after.
    log = _send_log(tmp_path / "send.log", [(10, 2, 1_000_000_000), (12, 2, 1_010_000_000), (12, 1, 1_005_000_000)])
    events = _events(REF.values.tolist())
    # seq 10: 50 µs after its send; 11: 2 ms before it; 12: 4.5 ms after its earliest send (line B's copy), 0.5 ms
    # before line A's; 13: 0.4 ms before its send, within the slack a slewed clock is allowed.
    events["t_recv"] = [1_000_050_000, 998_000_000, 1_009_500_000, 1_009_600_000]
    w2w = blackbox.wire_to_wire(events, log)
    assert w2w["before_sent"] == {"events": 1, "held": 4, "first_seq": 11, "first_by_ns": 2_000_000}
    assert w2w["from_sent"]["min"] == -2_000_000 and w2w["events"] == 4
    (name, ok), = blackbox.after_the_send(w2w["before_sent"]).items()
    assert not ok and name == (f"{blackbox.AFTER_THE_SEND}: 1 of 4 events received before their message was sent "
                               "(first: seq 11, 2.0 ms before): not made from the feed it was sent")
    # A late join's snapshot made the events of seq 11 and below: not made by a message sent, left out.
    joined = blackbox.wire_to_wire(events, log, after=11)
    assert joined["events"] == 2 and joined["before_sent"] == {"events": 0, "held": 2}
    assert blackbox.after_the_send(joined["before_sent"]) == {blackbox.AFTER_THE_SEND: True}
    # 1.5 ms late instead: no event before its send.
    events["t_recv"] = events["t_recv"].where(events["seq"] != 11, 1_001_500_000)
    assert blackbox.wire_to_wire(events, log)["before_sent"] == {"events": 0, "held": 4}


def test_an_event_whose_arrival_was_left_out_is_held_to_its_send_by_when_it_was_read(tmp_path: Path):
    """An event whose kernel stamp the collector left out (CLOCK_REALTIME set while it waited) is stamped minus when
    its read returned, which it came before: it is in no wire-to-wire figure, and held to its send by that bound.
    With every stamp left out, a gateway publishing from a recording, read in one burst before the feed was sent,
    had no event held and passed; a right gateway publishing at its end, read after the sends, was said not
    checked. Now the first is early by its reads, the second held and passing."""
    log = _send_log(tmp_path / "send.log", [(10, 2, 1_000_000_000), (12, 2, 1_010_000_000)])
    events = _events(REF.values.tolist())
    events["t_recv"] = [-990_000_000] * 4  # all read 10 ms before the first send: a recording played back
    assert blackbox.wire_to_wire(events, log) is None  # no arrival: no figure
    before = blackbox.before_the_send(events, hops.send_stamps(log))
    assert before == {"events": 4, "held": 4, "first_seq": 10, "first_by_ns": 10_000_000, "held_by_read": 4}
    (name, ok), = blackbox.after_the_send(before).items()
    assert not ok and name == (
        f"{blackbox.AFTER_THE_SEND}: 4 of 4 events received before their message was sent (first: seq 10, 10.0 ms "
        "before): not made from the feed it was sent (4 of the 4 events held by when the collector read them: "
        "CLOCK_REALTIME was set while they waited)")
    events["t_recv"] = [1_000_050_000, -1_020_000_000, -1_020_000_000, -1_020_000_000]  # read 10 ms after the sends
    w2w = blackbox.wire_to_wire(events, log)
    assert w2w["events"] == 1 and w2w["before_sent"] == {"events": 0, "held": 4, "held_by_read": 3}
    assert blackbox.after_the_send(w2w["before_sent"]) == {
        f"{blackbox.AFTER_THE_SEND} (3 of the 4 events held by when the collector read them: CLOCK_REALTIME was set "
        "while they waited)": True}
