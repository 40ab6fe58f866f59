"""Depth of book (docs/book-and-bbo.md, "Depth"): itchbench sim --levels N and dump depth, as a user runs them. The
expected events come from an independent Python book (independent_bbo.DepthBook), never from the gateway's own."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import pytest

from itchbench import rundir
from itchbench.analysis import dump
from itchbench.captures import fixtures
from itchbench.cli import main as itchbench_main
from itchbench.runs import sim

from independent_bbo import depth_events
from live_helpers import make_capture

SAMPLE = next(f for f in fixtures.load_manifest() if f.name == "nasdaq-day-sample").path


@pytest.fixture(scope="module")
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
@pytest.mark.parametrize("capture", ["sample", "deep"])
def test_depth_equals_an_independent_book(capture, levels, deep_session, tmp_path, capsys):
    path = SAMPLE if capture == "sample" else deep_session
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


def test_the_same_capture_gives_the_same_depth_bytes(deep_session, tmp_path):
    first = sim.run_sim(deep_session, tmp_path / "a", echo=False, levels=5)
    second = sim.run_sim(deep_session, tmp_path / "b", echo=False, levels=5)
    assert (first / "depth.dep").read_bytes()[128:] == (second / "depth.dep").read_bytes()[128:]
    assert rundir.read_json(first / "summary.json")["depth"] == rundir.read_json(second / "summary.json")["depth"]


def test_levels_out_of_range_and_a_run_without_depth_are_refused(tmp_path, capsys):
    itchbench = [sys.executable, "-m", "itchbench.cli"]
    bad = subprocess.run([*itchbench, "sim", str(SAMPLE), "--levels", "65", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--levels" in bad.stderr and not (tmp_path / "x").exists()
    run = sim.run_sim(SAMPLE, tmp_path / "plain", echo=False)
    no_depth = subprocess.run([*itchbench, "dump", "depth", str(run)], capture_output=True, text=True)
    assert no_depth.returncode == 2 and "no depth.dep" in no_depth.stderr and no_depth.stdout == ""
