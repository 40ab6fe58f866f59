"""Which runs compare holds head's output against base's with: a run that lost messages published what the loss
left, and one that recorded less than its gateway published holds what the recording left, so an unchanged build
would differ from itself by either."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from itchbench import rundir
from itchbench.cli import main as itchbench_main
from itchbench.compare import outputs, session
from itchbench.runs import runner

from live_helpers import config

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "nasdaq-day-sample.pcap"
DAY = SAMPLE.with_name("nasdaq-day-1m.pcap")


def _as_lost(run: Path) -> Path:
    """The run's verdict made LOST, as a run whose socket dropped datagrams on a busy machine ends."""
    summary = rundir.read_json(run / "summary.json")
    summary["verdict"] = {"status": "lost", "headline": "LOST: 80 datagrams dropped by the kernel"}
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_output_is_compared_on_runs_that_passed_never_on_one_that_lost(tmp_path):
    whole = [runner.execute(config(SAMPLE, "sim"), f"whole{i}", root=tmp_path, echo=False) for i in range(2)]
    # The same session with 1 % of its packets gone: what a run that lost them published.
    lossy = _as_lost(runner.execute(config(SAMPLE, "sim", faults={"seed": 7, "drop": 0.01}), "lossy", root=tmp_path,
                                    echo=False))
    assert [rundir.read_json(r / "summary.json")["verdict"]["status"] for r in whole] == ["lossless", "lossless"]
    assert not outputs.compare_bbo(lossy, whole[1])["equal"]  # what taking each side's first run would have said

    base, head = session.Side("base", "a"), session.Side("head", "a")
    for run in (lossy, whole[0]):
        session.add_run(base, "w", run)
    session.add_run(head, "w", whole[1])
    compared, not_compared = session.output_differences(base, head)
    assert compared["w"]["bbo"]["equal"] and not not_compared
    assert base.failed == {"w": "LOST: 80 datagrams dropped by the kernel"}  # the lost run is still said

    head = session.Side("head", "a")
    session.add_run(head, "w", lossy)
    compared, not_compared = session.output_differences(base, head)
    assert compared == {}
    assert not_compared == {"w": "none of head's 1 run(s) has an output to judge (the first: it lost messages: LOST: "
                                 "80 datagrams dropped by the kernel)"}


def test_a_journey_step_says_where_the_output_was_not_compared():
    from itchbench.documents import journey
    why = "none of step1's 7 run(s) has an output to judge (the first: it lost messages: LOST: 80 datagrams dropped)"
    judged = {"not_comparable": [], "metrics": {}, "outputs": {}, "outputs_not_compared": {"udp": why}}
    j = journey.Journey([session.Side("step0", "a"), session.Side("step1", "b")], [], [judged], judged)
    # Never "BBO SAME" where nothing was compared.
    said = f"no change; BBO not compared on udp ({session.NOT_COMPARED_WHY})"
    assert journey.step_lines(j) == [f"step 1 b : {said}", f"first -> last: {said}"]
    assert journey._bbo_of(judged, "udp") == {"bbo": None, "bbo_not_compared": why}


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_run_whose_logs_filled_its_disk_has_no_output_to_judge(tmp_path, capsys):
    """The 1 M-message day simulated into a 28 MiB tmpfs: the gateway's logs cannot grow, their records are
    dropped, and the run is rightly NOT BALANCED. Compared with a whole run of the same build, it was `REGRESSION:
    BBO OUTPUT DIFFERS`: the digest of what the full disk kept, not of anything the build did. Now its output is not
    compared, said with why, and with nothing else judged (one run a side, --bbo-only) the two are not comparable."""
    whole = tmp_path / "whole"
    assert itchbench_main(["sim", str(DAY), "--out", str(whole)]) == 0
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=28m", "tmpfs", str(small)], check=True)
    try:
        assert itchbench_main(["sim", str(DAY), "--out", str(small / "run")]) == 1
        summary = rundir.read_json(small / "run" / "summary.json")
        unrecorded = summary["reconciliation"]["output_unrecorded"]
        assert summary["verdict"]["status"] == "unbalanced" and unrecorded and all(
            name.startswith("no bbo log record dropped (") and "No space left on device" in name
            for name in unrecorded), unrecorded
        # Its events are fewer than the whole run's: a digest of them is not the build's.
        assert summary["bbo"]["events"] < rundir.read_json(whole / "summary.json")["bbo"]["events"]
        capsys.readouterr()
        assert itchbench_main(["compare", str(whole), str(small / "run"), "--bbo-only",
                               "--out", str(tmp_path / "compare")]) == 2
        result = rundir.read_json(tmp_path / "compare" / "compare.json")
    finally:
        subprocess.run(["umount", str(small)], check=True)
    headline = result["headline"]
    assert "OUTPUT DIFFERS" not in headline and result["outputs"] == {}, headline
    assert headline.startswith(f"NOT COMPARABLE: nothing judged on sim (BBO output not compared on sim "
                               f"({session.NOT_COMPARED_WHY}))"), headline
    assert result["outputs_not_compared"] == {"sim": "none of head's 1 run(s) has an output to judge (the first: it "
                                                     f"recorded less of the output than the gateway published: "
                                                     f"{unrecorded[0]})"}
    assert "| HEAD RUNS DID NOT PASS on sim: NOT BALANCED: " in headline, headline
