"""The report's second pass counted while the gateway writes its latency log (analysis/latency_follow.py): on
the real gateway, followed from its start, every figure equals the numpy reader's over the finished log; a
followed pass that does not fit the first pass's findings is set aside and said; `itchbench sim` takes it, and its
report is the report made after the run."""

from __future__ import annotations

import subprocess
import types
import warnings
from pathlib import Path

import pytest

from itchbench import paths
from itchbench.analysis import drawing, latency_follow, latency_pass, logs, native
from itchbench.cli import main as itchbench_main
from itchbench.runs import reconcile

from test_compact_log import nasdaq_day_itch  # noqa: F401 (a fixture)
from test_compiled_scan import assert_equal


def followed_run(capture: Path, out: Path, warmup: int) -> latency_pass.Followed | None:
    """The gateway on the capture in simulation, its log followed from before the gateway starts."""
    out.mkdir()
    follower = latency_follow.LatencyFollower(out, warmup)
    gateway = subprocess.Popen([str(paths.tool("itch-gateway")), "--source", "sim", "--capture", str(capture),
                                "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = gateway.communicate()
    assert gateway.returncode == 0, err
    follower.writer_ended()
    return follower.result()


@pytest.mark.parametrize("warmup", [0, 70_000])  # the warm-up ends in the second block
def test_a_followed_pass_counts_what_the_numpy_reader_counts_after_the_run(tmp_path, nasdaq_day_itch, warmup):
    followed = followed_run(nasdaq_day_itch, tmp_path / "run", warmup)
    assert followed is not None and followed.scan is not None, followed
    assert followed.covered.blocks == 4 and followed.covered.messages == 200_000  # 65,536 messages a block
    passes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", latency_pass.FollowedSetAsideWarning)
        got = latency_pass.scan(tmp_path / "run", warmup, followed=lambda: followed,
                                progress=lambda name, _: passes.append(name))
    assert latency_pass.SECOND_PASS_FOLLOWED in passes and latency_pass.SECOND_PASS not in passes
    assert got.hop_tables is not None and got.by_symbol.count() > 0 and len(got.throughput_counts) > 64
    assert_equal(got, latency_pass.scan(tmp_path / "run", warmup, compiled=False))


def test_a_followed_pass_made_for_another_warmup_is_set_aside_and_the_log_read(tmp_path, nasdaq_day_itch):
    followed = followed_run(nasdaq_day_itch, tmp_path / "run", 0)
    told: list[tuple[str, int]] = []
    with pytest.warns(latency_pass.FollowedSetAsideWarning, match="another warm-up"):
        got = latency_pass.scan(tmp_path / "run", 1000, followed=lambda: followed,
                                progress=lambda name, records: told.append((name, records)))
    passes = [name for name, _ in told]
    assert passes[-3:] == [latency_pass.SECOND_PASS_FOLLOWED, latency_pass.SECOND_PASS, latency_pass.SECOND_PASS]
    assert told[-3] == (latency_pass.SECOND_PASS_FOLLOWED, latency_pass.SET_ASIDE)
    assert_equal(got, latency_pass.scan(tmp_path / "run", 1000, compiled=False))


def test_a_follower_that_finds_no_index_gives_nothing(tmp_path):
    follower = latency_follow.LatencyFollower(tmp_path, 0)
    follower.writer_ended()
    assert follower.result() is None


def test_itchbench_sim_reports_from_the_followed_pass_what_a_report_after_the_run_says(tmp_path, nasdaq_day_itch):
    run = tmp_path / "run"
    assert itchbench_main(["sim", str(nasdaq_day_itch), "--out", str(run)]) == 0
    assert f"report, {latency_pass.SECOND_PASS_FOLLOWED}" in (run / "progress.log").read_text()
    followed = (run / "report.md").read_text()
    assert itchbench_main(["report", str(run)]) == 0  # made again, from the log
    assert (run / "report.md").read_text() == followed
    assert "time bins of" in followed


def test_reconciliation_counts_the_log_from_the_followed_pass_only_when_it_decoded_every_slot(
        tmp_path, nasdaq_day_itch):
    followed = followed_run(nasdaq_day_itch, tmp_path / "run", 0)
    lat_path = tmp_path / "run" / "latency.lat"
    counted_here = logs.read_latency(lat_path).count  # every slot read again, after the run
    assert counted_here == 200_000

    class Follower:  # the run's follower, as the runner holds it
        def __init__(self, result: latency_pass.Followed | None) -> None:
            self._result = result

        def result(self) -> latency_pass.Followed | None:
            return self._result

    def messages(result: latency_pass.Followed | None) -> int:
        return reconcile._latency_messages(types.SimpleNamespace(follower=Follower(result)), lat_path)

    assert messages(followed) == counted_here
    # A pass that decoded fewer slots than the log holds (here: it says so, with a wrong count) is not taken.
    short = latency_pass.Followed(followed.plan, followed.scan, native.Followed.from_buffer_copy(followed.covered))
    short.covered.slots -= 1
    short.covered.messages = 7
    assert messages(short) == counted_here
    abandoned = latency_pass.Followed(followed.plan, followed.scan,
                                      native.Followed.from_buffer_copy(followed.covered))
    abandoned.covered.abandoned, abandoned.covered.messages = 1, 7
    assert messages(abandoned) == counted_here
    assert messages(None) == counted_here


def test_a_follower_whose_drawing_process_cannot_start_still_counts(tmp_path, nasdaq_day_itch, monkeypatch):
    def refused() -> None:
        raise OSError(11, "Resource temporarily unavailable")  # fork refused: the process table is full
    monkeypatch.setattr(drawing, "start_drawer", refused)
    followed = followed_run(nasdaq_day_itch, tmp_path / "run", 0)
    assert followed is not None and followed.covered is not None and followed.covered.messages == 200_000
