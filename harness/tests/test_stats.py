"""Statistics against values computed by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from itchbench.analysis import stats
from itchbench.analysis.histogram import KeyedHistogram, describe_counts
from itchbench.cli import main as itchbench_main


def test_default_method_by_hand():
    # 1..10, numpy's `higher`: index ceil(9p): p50 -> ceil(4.5) = 5 -> 6; p90 -> ceil(8.1) = 9 -> 10
    d = stats.describe(np.arange(1, 11))
    assert d["count"] == 10 and d["min"] == 1 and d["max"] == 10
    assert d["mean"] == 5.5
    assert d["p50"] == 6 and d["p90"] == 10 and d["p95"] == 10 and d["p99"] == 10
    assert math.isclose(d["stddev"], math.sqrt(8.25))  # population: mean of squared deviations = 8.25


def test_default_method_on_1000_values():
    v = np.arange(1000, 0, -1)  # unsorted input: 1000 .. 1
    d = stats.describe(v)
    assert d["p50"] == 501      # index ceil(999 * 0.5) = 500 of 1..1000
    assert d["p90"] == 901      # ceil(899.1) = 900
    assert d["p99"] == 991      # ceil(989.01) = 990
    assert d["p999"] == 1000    # ceil(998.001) = 999
    assert d["p9999"] == 1000


def test_textbook_nearest_rank_is_one_rank_lower_when_np_is_whole():
    # 1..1000, 1-based rank ceil(1000 * 0.5) = 500 -> 500 (the default gives 501)
    d = stats.describe(np.arange(1, 1001), stats.NEAREST_RANK)
    assert d["p50"] == 500 and d["p90"] == 900 and d["p99"] == 990 and d["p999"] == 999
    # 1..7: 7 * 0.5 = 3.5 is not whole: rank 4 -> 4, the same value as the default's index ceil(3) = 3
    assert stats.describe(np.arange(1, 8), stats.NEAREST_RANK)["p50"] == 4 == stats.describe(np.arange(1, 8))["p50"]


@pytest.mark.parametrize("n", [*range(1, 120), 999, 1000, 1001, 9999, 10_000, 10_001, 123_457])
def test_default_method_is_numpys_higher_and_floor_np(n):
    rng = np.random.default_rng(n)
    v = rng.integers(0, 10**6, n).astype(float)
    d = stats.describe(v)
    s = np.sort(v)
    for name, p in stats.PERCENTILES.items():
        assert d[name] == np.quantile(v, p, method="higher"), (name, n)  # (q/100 in np.percentile rounds)
        assert d[name] == s[min(math.floor(n * p), n - 1)], (name, n)  # the same index for p = 1 - 1/m
    h = KeyedHistogram()
    h.add(v.astype(np.int64))
    g = describe_counts(*h.values_counts())
    assert [g[k] for k in stats.PERCENTILES] == [d[k] for k in stats.PERCENTILES]


def test_other_methods_are_numpy_percentiles():
    v = np.array([10.0, 20.0, 30.0, 40.0])
    lin = stats.describe(v, "linear")
    assert lin["p50"] == 25.0 and math.isclose(lin["p90"], 37.0)
    assert stats.describe(v, "lower")["p50"] == 20.0
    with pytest.raises(stats.StatsError, match="unknown percentile method"):
        stats.describe(v, "vibes")


@pytest.mark.parametrize("method", stats.METHODS)
def test_keyed_histograms_equal_describe_per_key(method):
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 7, 5000)
    values = rng.exponential(1000, 5000).astype(np.int64)
    h = KeyedHistogram(7, dense=512)  # the tail beyond 512 ns is kept apart: both parts are crossed
    for k, v in zip(np.array_split(keys, 3), np.array_split(values, 3)):
        h.add(v, k)
    frame = h.stats(method)
    for k in range(7):
        expect = stats.describe(values[keys == k].astype(float), method)
        for col, want in expect.items():
            if method == "closest_observation" and col.startswith("p"):
                continue  # numpy's own rounding of q/100 can move this method by one rank; see below
            assert math.isclose(frame.loc[k, col], want, rel_tol=1e-12), (k, col)


def test_empty_sample():
    d = stats.describe(np.array([]))
    assert d["count"] == 0 and math.isnan(d["p50"])


def test_closest_observation_is_numpys_for_exact_fractions():
    # np.quantile with p itself (not np.percentile's q/100, which rounds) is the reference.
    rng = np.random.default_rng(9)
    for n in (1, 2, 10, 1000, 5500):
        v = rng.integers(0, 10**6, n)
        h = KeyedHistogram()
        h.add(v)
        got = describe_counts(*h.values_counts(), "closest_observation")
        for name, p in stats.PERCENTILES.items():
            assert got[name] == np.quantile(v, p, method="closest_observation"), (n, name)


def write_csv(tmp_path, text: str):
    p = tmp_path / "lat.csv"
    p.write_text(text)
    return p


def test_stats_command_json(tmp_path, capsys):
    p = write_csv(tmp_path, "id,latency_ns\n" + "".join(f"{i},{i * 10}\n" for i in range(1, 101)))
    assert itchbench_main(["stats", str(p), "--column", "latency_ns", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["count", "mean", "min", "max", "p50", "p90", "p95", "p99", "p999", "p9999", "stddev"]
    assert out["count"] == 100 and out["min"] == 10 and out["max"] == 1000
    assert out["p50"] == 510 and out["p90"] == 910 and out["p99"] == 1000 and out["mean"] == 505


def test_stats_command_table_names_the_method(tmp_path, capsys):
    p = write_csv(tmp_path, "ns\n5\n1\n3\n")
    assert itchbench_main(["stats", str(p)]) == 0
    out = capsys.readouterr().out
    assert "percentiles by numpy's `higher` method" in out and "3 latencies" in out and "population" in out


@pytest.mark.parametrize("text, args, message", [
    ("a,b\n1,2\n", [], "has 2 columns (a, b): choose one with --column"),
    ("a\n1\n", ["--column", "zz"], "no column 'zz' (columns: a)"),
    ("a\n1\nfast\n3\n", [], "1 value(s) in 'a' are not numbers (first at line 3: 'fast')"),
    ("a\n", [], "no values in 'a'"),
    ("", [], "empty file"),
    ("a\n5\n-1\n", [], "negative latencies"),
    # Line numbers are the file's, blank lines counted.
    ("a\n1\n\n\n2\nfast\n", [], "1 value(s) in 'a' are not numbers (first at line 6: 'fast')"),
    ("a,b\n1,2\n\n3,-4\n", ["--column", "b"], "negative latencies in 'b' (first at line 4)"),
    # No header row: its first line is the first latency, line numbers counted from it.
    ("1,2\n3,4\n", [], "has 2 columns and no header row (its first line is numbers)"),
    ("1\n2\n", ["--column", "ns"], "no header row (its first line is numbers), so no column is named 'ns'"),
    ("1\n2\nfast\n", [], "1 value(s) in the file are not numbers (first at line 3: 'fast')"),
    ("inf\n2\n", [], "1 value(s) in the file are not numbers (first at line 1: 'inf')"),
    ("4\n\n-2\n", [], "negative latencies in the file (first at line 3)"),
    # 2^53 + 1 reads back as 2^53: refused rather than reported as another number.
    ("a\n5\n9007199254740993\n", [],
     "of 2^53 ns (104 days) or more in 'a', which are not held exactly (first at line 3"),
])
def test_stats_command_errors(tmp_path, capsys, text, args, message):
    p = write_csv(tmp_path, text)
    assert itchbench_main(["stats", str(p), *args]) == 2
    assert message in capsys.readouterr().err


def test_a_file_without_a_header_row_keeps_its_first_latency(tmp_path, capsys):
    # "one latency in ns per line": read as a header, the first line (the largest here) would be dropped unsaid.
    p = write_csv(tmp_path, "900\n5\n7\n")
    assert itchbench_main(["stats", str(p), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == 3 and out["max"] == 900 and out["min"] == 5 and out["mean"] == 304
    assert itchbench_main(["stats", str(p)]) == 0
    assert "(no header row: its first line is a latency): 3 latencies" in capsys.readouterr().out
    # Saved by a spreadsheet: a byte-order mark before the first latency, CRLF line ends.
    p.write_bytes(b"\xef\xbb\xbf900\r\n5\r\n7\r\n")
    assert itchbench_main(["stats", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 3


def test_a_row_without_the_columns_value_is_said_as_such_not_as_a_blank_line(tmp_path, capsys):
    p = write_csv(tmp_path, "a,b\n1,2\n3\n4,\n5,6\n")
    assert itchbench_main(["stats", str(p), "--column", "b"]) == 0
    assert "column 'b': 2 latencies (ns) (2 rows with no value skipped)" in capsys.readouterr().out


def test_blank_lines_are_skipped_and_said(tmp_path, capsys):
    p = write_csv(tmp_path, "ns\n5\n\n1\n \n3\n")
    assert itchbench_main(["stats", str(p)]) == 0
    assert "3 latencies (ns) (2 rows with no value skipped)" in capsys.readouterr().out
    assert itchbench_main(["stats", str(p), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == 3 and out["p50"] == 3 and out["min"] == 1


def test_stats_command_missing_file(tmp_path, capsys):
    assert itchbench_main(["stats", str(tmp_path / "none.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert itchbench_main(["stats", str(tmp_path)]) == 2
    assert f"{tmp_path}: a directory; a CSV file of figures is wanted" in capsys.readouterr().err
    # A device is there, and is no file of figures: it had been said to be missing.
    assert itchbench_main(["stats", "/dev/null"]) == 2
    assert capsys.readouterr().err == ("itchbench: /dev/null: not a regular file (a device or a pipe); a CSV file of "
                                       "figures is wanted\n")


@pytest.mark.parametrize("data, at", [
    (b"\xff\xfe1\n2\n", 0),  # UTF-16's byte-order mark: a file saved as UTF-16
    (b"ns\n" + b"100\n" * 300_000 + b"1\xe92\n", 3 + 4 * 300_000 + 1),  # Latin-1's "é", far past pandas' first block
    # A character of two bytes cut by the 1 MiB block in which the bad byte is looked for, a bad byte after it.
    (b"ns\n" + b"1" * ((1 << 20) - 4) + b"\xc3\xa9\xff", (1 << 20) + 1),
])
def test_a_csv_that_is_not_utf8_is_refused_naming_its_first_bad_byte(tmp_path, capsys, data, at):
    # pandas' UnicodeDecodeError had ended the command in a traceback, its place within the block it read.
    p = tmp_path / "lat.csv"
    p.write_bytes(data)
    assert itchbench_main(["stats", str(p)]) == 2
    assert capsys.readouterr().err == (f"itchbench: {p}: not UTF-8 text, as a CSV of latencies must be "
                                       f"(byte {at}: {data[at]:#04x})\n")
