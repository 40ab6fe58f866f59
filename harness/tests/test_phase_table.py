"""The phase table of a benchmark document (documents/aggregate.phase_table):
figures by hand from made-up run summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from itchbench.documents.aggregate import distribution_table, phase_table
from itchbench.documents.collect import Configuration, RunRecord


def _config(label: str, parse_p50: list[float], wakeup_p50: list[float] | None) -> Configuration:
    runs = []
    for i, p in enumerate(parse_p50):
        stages = {"parse": {"p50": p, "p99": 3 * p, "mean": p + 1}}
        if wakeup_p50 is not None:
            stages["wakeup"] = {"p50": wakeup_p50[i], "p99": 2 * wakeup_p50[i], "mean": wakeup_p50[i]}
        runs.append(RunRecord(Path(f"/runs/{label}-{i}"), {"run_id": f"{label}-{i}", "scenario": {
            "transport": "udp", "gateway": {"busy_poll": label == "xdp", "cpu": 1 if label != "udp" else -1}}},
            {"latency": {"stages": stages}, "gateway": {"af_xdp": {"attach_mode": "skb", "bind_mode": "copy"}}
             if label == "xdp" else {}}))
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
    assert [r["receive_path"] for r in table["rows"]] == ["UDP socket, epoll", "UDP socket, epoll, CPU 1",
                                                          "AF_XDP (skb, copy), busy poll, CPU 1"]


def test_a_stage_some_run_lacks_is_left_out_and_one_configuration_has_no_phases():
    serial = _config("serial", [500, 510], None)  # no kernel stamp: no wake-up stage
    udp = _config("udp", [300, 310], [9_000, 9_500])
    table = phase_table([serial, udp], serial)
    assert table is not None and [s for s, _ in table["stages"]] == ["parse"]
    assert phase_table([udp], udp) is None


def test_the_distribution_table_sets_each_subscribers_last_hop_beside_its_way():
    def run(i: int, tcp_hop: float, shm_hop: float) -> RunRecord:
        def rows(k: int, hop: float) -> list[dict]:
            return [{"hop": "book", "p50": 1.0, "p99": 2.0, "mean": 1.0},
                    {"hop": f"subscriber {k} (published → received)", "p50": hop, "p99": 2 * hop, "mean": hop},
                    {"hop": "end to end", "p50": hop + 100, "p99": 2 * hop + 100, "mean": hop + 100}]
        summary = {"latency": {"hops": {"to_subscriber": {"0": rows(0, tcp_hop), "1": rows(1, shm_hop)}}},
                   "reconciliation": {"subscribers": [{"index": 0}, {"index": 1, "kind": "shm"}]}}
        return RunRecord(Path(f"/runs/{i}"), {"run_id": str(i)}, summary)
    table = distribution_table([Configuration("af-xdp-shm", [run(0, 60_000, 500), run(1, 62_000, 540),
                                                              run(2, 58_000, 520)])])
    assert [(d["subscriber"], d["kind"]) for d in table] == [("0", "tcp"), ("1", "shm")]
    tcp, shm = table
    assert (tcp["hop"]["p50"].median, shm["hop"]["p50"].median) == (60_000, 520)
    assert shm["end_to_end"]["p99"].median == 2 * 520 + 100 and shm["hop"]["p99"].lo == 1_000
