"""Which runs compare holds head's output against base's with: a run that lost messages published what the loss
left, so an unchanged build would differ from itself by it."""

from __future__ import annotations

import json
from pathlib import Path

from itchbench import rundir
from itchbench.compare import outputs, session
from itchbench.runs import runner

from live_helpers import config

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "nasdaq-day-sample.pcap"


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
    assert not_compared == {"w": "every one of head's 1 runs lost messages (first: LOST: 80 datagrams dropped by the "
                                 "kernel)"}


def test_a_journey_step_says_where_the_output_was_not_compared():
    from itchbench.documents import journey
    why = "every one of step1's 7 runs lost messages (first: LOST: 80 datagrams dropped by the kernel)"
    judged = {"not_comparable": [], "metrics": {}, "outputs": {}, "outputs_not_compared": {"udp": why}}
    j = journey.Journey([session.Side("step0", "a"), session.Side("step1", "b")], [], [judged], judged)
    # Never "BBO SAME" where nothing was compared.
    said = "no change; BBO not compared on udp (every run of a side LOST messages)"
    assert journey.step_lines(j) == [f"step 1 b : {said}", f"first -> last: {said}"]
    assert journey._bbo_of(judged, "udp") == {"bbo": None, "bbo_not_compared": why}
