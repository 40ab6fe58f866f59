"""The slowest messages and why (analysis/outliers.py), on stamps made by hand: which messages are kept across
chunks, and the hop each is charged to."""

from __future__ import annotations

import numpy as np

from itchbench.analysis.outliers import CAUSES, Outliers

CHAIN = ["t_intended", "t_sent", "t_kernel", "t_read", "t_book"]


def _cols(n: int, first_seq: int, delays: dict[int, tuple[int, int, int, int]]) -> dict[str, np.ndarray]:
    """Every message 1 µs a hop, except those in delays (seq -> four hop lengths in ns)."""
    seq = np.arange(first_seq, first_seq + n, dtype=np.int64)
    hops = np.full((n, 4), 1_000, np.int64)
    for s, d in delays.items():
        hops[s - first_seq] = d
    start = 10**12 + seq * 100_000
    stamps = np.concatenate([start[:, None], start[:, None] + np.cumsum(hops, axis=1)], axis=1)
    return {"seq": seq, **{c: stamps[:, i] for i, c in enumerate(CHAIN)}}


def test_the_slowest_are_kept_across_chunks_and_charged_to_the_hop_that_ran_long():
    out = Outliers(CHAIN, kept=3)
    types = np.full(100, ord("A"), np.uint8)
    out.add(_cols(100, 0, {7: (1_000, 1_000, 90_000, 1_000)}), types)          # woken late: 93 µs
    out.add(_cols(100, 100, {150: (60_000, 1_000, 1_000, 1_000),               # the sender late: 63 µs
                             151: (20_000, 20_000, 20_000, 20_000)}), types)  # spread: 80 µs
    out.add(_cols(100, 200, {}), types)
    assert sorted(out.seq.tolist()) == [7, 150, 151]  # the three largest of 300
    got = out.result(threshold_ns=50_000, typical_ns=[1_000] * 4)
    assert got["outliers"] == 3 and got["unexplained"] == 1
    causes = {c["cause"]: c for c in got["causes"]}
    assert causes[CAUSES[("t_kernel", "t_read")]]["outliers"] == 1
    assert causes[CAUSES[("t_kernel", "t_read")]]["median_excess_ns"] == 89_000
    assert causes[CAUSES[("t_intended", "t_sent")]]["outliers"] == 1
    assert [r["seq"] for r in got["slowest"]] == [7, 151, 150]
    assert got["slowest"][1]["cause"] == "spread over hops"
    assert got["types"] == {"A": 3}
    assert Outliers(CHAIN).result(1, [0] * 4)["outliers"] == 0
