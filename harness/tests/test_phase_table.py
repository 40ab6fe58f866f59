"""The phase table of a benchmark document (documents/aggregate.phase_table):
figures by hand from made-up run summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from itchbench.documents.aggregate import phase_table
from itchbench.documents.collect import Configuration, RunRecord


def _config(label: str, parse_p50: list[float], wakeup_p50: list[float] | None) -> Configuration:
    runs = []
    for i, p in enumerate(parse_p50):
        stages = {"parse": {"p50": p, "p99": 3 * p, "mean": p + 1}}
        if wakeup_p50 is not None:
            stages["wakeup"] = {"p50": wakeup_p50[i], "p99": 2 * wakeup_p50[i], "mean": wakeup_p50[i]}
        runs.append(RunRecord(Path(f"/runs/{label}-{i}"), {"run_id": f"{label}-{i}"}, {"latency": {"stages": stages}}))
    return Configuration(label, runs)


def test_each_phase_against_the_one_before_and_the_baseline():
    base = _config("udp", [300, 340, 320], [16_000, 15_000, 17_000])
    rt = _config("rt", [200, 210, 190], [8_000, 8_000, 8_000])
    xdp = _config("xdp", [40, 40, 50], [500, 400, 600])
    table = phase_table([base, rt, xdp], base)
    assert table is not None and [s for s, _ in table["stages"]] == ["parse", "wakeup"]
    first, second, third = (r["cells"] for r in table["rows"])
    assert first["parse"]["vs_previous"] is None and first["parse"]["vs_baseline"] is None
    # Medians: parse 320 -> 200 -> 40; wake-up 16,000 -> 8,000 -> 500.
    assert second["parse"]["vs_previous"].value == pytest.approx(320 / 200)
    assert third["parse"]["vs_previous"].value == pytest.approx(200 / 40)
    assert third["parse"]["vs_baseline"].value == pytest.approx(320 / 40)
    assert third["wakeup"]["vs_baseline"].value == pytest.approx(16_000 / 500)
    assert third["parse"]["p99"].median == 120 and third["parse"]["mean"].median == 41
    lo, hi = third["parse"]["vs_baseline"].ci
    assert lo <= 320 / 40 <= hi


def test_a_stage_some_run_lacks_is_left_out_and_one_configuration_has_no_phases():
    serial = _config("serial", [500, 510], None)  # no kernel stamp: no wake-up stage
    udp = _config("udp", [300, 310], [9_000, 9_500])
    table = phase_table([serial, udp], serial)
    assert table is not None and [s for s, _ in table["stages"]] == ["parse"]
    assert phase_table([udp], udp) is None
