"""The statistics and verdicts of itchbench compare, against an independent
implementation (scipy) and hand-made samples."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from itchbench.compare import verdicts
from itchbench.compare.statistics import bootstrap_ratio_ci, mann_whitney_u


@pytest.mark.parametrize("n1, n2", [(3, 3), (5, 9), (9, 9), (12, 4), (30, 30)])
@pytest.mark.parametrize("shift", [0.0, 0.7, 3.0])
def test_exact_u_matches_scipy(n1, n2, shift):
    rng = np.random.default_rng(n1 * 100 + n2)
    a, b = rng.normal(0, 1, n1), rng.normal(shift, 1, n2)
    mine = mann_whitney_u(a, b)
    ref = mannwhitneyu(a, b, alternative="two-sided", method="exact")
    assert mine.method == "exact"
    assert mine.u == ref.statistic
    assert mine.p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)


def test_ties_use_the_corrected_normal_approximation_like_scipy():
    a = np.array([1, 2, 2, 3, 5, 5, 5, 8.0])
    b = np.array([2, 4, 5, 6, 6, 9, 9, 10.0])
    mine = mann_whitney_u(a, b)
    ref = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert mine.method == "normal" and mine.p == pytest.approx(ref.pvalue, rel=1e-9)


def test_bootstrap_is_seeded_and_covers_the_true_ratio():
    rng = np.random.default_rng(3)
    base, head = rng.normal(100, 2, 9), rng.normal(120, 2, 9)
    ci = bootstrap_ratio_ci(base, head, seed=7)
    assert ci == bootstrap_ratio_ci(base, head, seed=7)
    assert ci[0] < 1.2 < ci[1] and ci[1] - ci[0] < 0.1


def test_timing_verdicts():
    rng = np.random.default_rng(11)
    base = list(rng.normal(1000, 10, 9))
    same = list(rng.normal(1000, 10, 9))
    slower = list(rng.normal(1200, 10, 9))
    small = list(rng.normal(1030, 10, 9))  # +3 %: below the 5 % threshold
    assert verdicts.timing(base, same, higher_is_better=False, threshold=0.05, seed=1)["verdict"] == "unchanged"
    assert verdicts.timing(base, slower, higher_is_better=False, threshold=0.05, seed=1)["verdict"] == "slower"
    assert verdicts.timing(base, slower, higher_is_better=True, threshold=0.05, seed=1)["verdict"] == "faster"
    assert verdicts.timing(base, small, higher_is_better=False, threshold=0.05, seed=1)["verdict"] == "unchanged"
    # Three a side can never reach p < 0.002 (at best 2 / C(6, 3) = 0.1): neither "slower" nor "unchanged" is said.
    few = verdicts.timing(base[:3], slower[:3], higher_is_better=False, threshold=0.05, seed=1)
    assert few["verdict"] == "not comparable" and "smallest possible p is 0.1" in few["reason"]
    # Seven a side can (2 / C(14, 7) = 0.00058), six cannot (2 / C(12, 6) = 0.0022).
    assert verdicts.timing_repetitions() == 7
    assert verdicts.timing(base[:7], slower[:7], higher_is_better=False, threshold=0.05, seed=1)["verdict"] == "slower"
    assert verdicts.timing(base[:6], slower[:6], higher_is_better=False, threshold=0.05, seed=1)["verdict"] == \
        "not comparable"
    assert verdicts.timing(base[:2], slower[:2], higher_is_better=False, threshold=0.05, seed=1)["verdict"] == \
        "not comparable"


def test_an_effect_the_runs_do_not_show_is_too_noisy_and_one_they_show_unsized_is_inconclusive():
    # Head's median is 30 % above base's, but three of its nine runs fall among base's: the exact Mann-Whitney p
    # is above 0.002, so the runs do not show a change; at this noise they cannot rule one out. Never "unchanged".
    base = [100, 102, 98, 101, 99, 103, 97, 100, 104]
    head = [95, 180, 130, 99, 140, 101, 160, 129, 131]
    v = verdicts.timing(base, head, higher_is_better=False, threshold=0.05, seed=1)
    assert v["ratio"] == 130 / 100 and v["p"] >= verdicts.ALPHA
    assert v["verdict"] == "too noisy" and verdicts.words("wire_to_wire.p50", v["verdict"]) == "TOO NOISY"
    assert v["repetitions_to_decide"] > len(base)
    # Every head run above every base run (p = 2 / C(18, 9) < 0.002) and the median 7 % up, but the interval of
    # the ratio reaches down to 105 / 102 < 1.05: a change shown whose size is not established.
    shown = verdicts.timing(base, [105, 105, 106, 107, 107, 108, 109, 110, 125], higher_is_better=False,
                            threshold=0.05, seed=1)
    assert shown["p"] < verdicts.ALPHA and shown["ci"][0] < 1.05 < shown["ratio"]
    assert shown["verdict"] == "inconclusive" and verdicts.words("book.p50", shown["verdict"]) == "INCONCLUSIVE"
    # The same effect with all of head above base is decided.
    decided = verdicts.timing(base, [129, 180, 130, 135, 140, 131, 160, 129, 131], higher_is_better=False,
                              threshold=0.05, seed=1)
    assert decided["verdict"] == "slower" and "repetitions_to_decide" not in decided


def test_instruction_verdicts_are_exact():
    assert verdicts.exact(300.0, 301.0)["verdict"] == "unchanged"   # +0.33 %
    assert verdicts.exact(300.0, 302.0)["verdict"] == "slower"      # +0.67 %
    assert verdicts.exact(300.0, 290.0)["verdict"] == "faster"
    assert verdicts.exact(None, 290.0)["verdict"] == "not comparable"


def test_each_kind_of_metric_has_its_own_verdict_words():
    # Instructions and memory are not time: a step with more instructions is never called slower.
    assert verdicts.words("instructions.message_path", verdicts.WORSE) == "MORE instructions"
    assert verdicts.words("instructions.book", verdicts.BETTER) == "FEWER instructions"
    assert verdicts.words("instructions.book", verdicts.SAME) == "SAME instructions"
    assert verdicts.words("receive_to_book.p50", verdicts.WORSE) == "SLOWER"
    assert verdicts.words("throughput_msg_s", verdicts.BETTER) == "FASTER"
    assert verdicts.words("wire_to_wire.p99", verdicts.SAME) == "NO CHANGE"
    assert verdicts.words("peak_rss_kib", verdicts.WORSE) == "MORE memory"
    assert verdicts.words("receive_to_book.max", verdicts.SHOWN) == "SHOWN, NOT JUDGED"
    assert (verdicts.bbo_words(True), verdicts.bbo_words(False)) == ("SAME", "DIFFERENT")


def test_each_subscribers_last_hop_is_a_metric_named_by_how_it_received():
    from itchbench.compare.session import distribution_metrics

    def rows(k: int, p50: int) -> list[dict]:
        return [{"hop": "book", "p50": 1},
                {"hop": f"subscriber {k} (published → received)", "p50": p50, "p99": 2 * p50, "p999": 3 * p50},
                {"hop": "end to end", "p50": p50 + 1}]
    summary = {"latency": {"hops": {"to_subscriber": {"0": rows(0, 60_000), "1": rows(1, 500)}}},
               "reconciliation": {"subscribers": [{"index": 0}, {"index": 1, "kind": "shm"}]}}
    assert distribution_metrics(summary) == {
        "distribution.tcp0.p50": 60_000, "distribution.tcp0.p99": 120_000, "distribution.tcp0.p999": 180_000,
        "distribution.shm1.p50": 500, "distribution.shm1.p99": 1_000, "distribution.shm1.p999": 1_500}
    assert distribution_metrics({"latency": {}}) == {}


def _runs(root, name: str, n: int, *, stages: bool, messages: int = 7000, slower: float = 1.0,
          wire: dict | None = None, sources: str | None = None, executable: str | None = None) -> list:
    """n run directories with a hand-written summary: throughput, and (stages) the book stage's percentiles
    over `messages` messages; with wire, wire to wire too (the same percentiles, its collector's counts wire);
    with sources, the manifest names the build measured (its sources_id); with executable, the digest of the binary
    its runs executed."""
    import json

    from itchbench import rundir
    out = []
    for i in range(n):
        d = root / f"{name}{i}"
        d.mkdir(parents=True)
        s = {"performance": {"messages_per_s": 1e6 + i}, "verdict": {"status": "lossless", "headline": "LOSSLESS"}}
        if stages:
            s["latency"] = {"stages": {"book": {"count": messages, "p50": 100 * slower + i, "p90": 200 * slower + i,
                                                "p99": 400 * slower + i, "p999": 900 * slower + i,
                                                "max": 5000.0}}}
        if wire is not None:
            s["wire_to_wire"] = {"events": messages, "collector": wire,
                                 "from_intended": {"count": messages, "p50": 100 * slower + i, "p90": 200 * slower + i,
                                                   "p99": 400 * slower + i, "p999": 900 * slower + i, "max": 5000.0}}
        (d / "summary.json").write_text(json.dumps(s))
        (d / "manifest.json").write_text(json.dumps({"label": "w", "gateway_under_test": {
            "sources_id": sources, "executable_sha256": executable}}))
        assert rundir.read_json(d / "summary.json")["verdict"]["status"] == "lossless"
        out.append(d)
    return out


def test_a_metric_measured_on_one_side_only_is_not_comparable_never_dropped(tmp_path):
    from itchbench.compare import session
    base, head = session.Side("base", "a"), session.Side("head", "b")
    base.runs["w"] = _runs(tmp_path, "a", 7, stages=True)
    head.runs["w"] = _runs(tmp_path, "b", 7, stages=False)  # it stopped writing its latency log
    table = session.metric_verdicts(base, head, 0.05, 1)["w"]
    assert table["book.p50"]["verdict"] == verdicts.NOT_COMPARABLE and table["book.p50"]["one_side"] == "base"
    assert table["book.p50"]["reason"] == "measured on base only"
    assert table["throughput_msg_s"]["verdict"] == verdicts.SAME and "one_side" not in table["throughput_msg_s"]


def test_a_percentile_with_few_messages_beyond_it_is_shown_not_judged(tmp_path):
    from itchbench.compare import session
    base, head = session.Side("base", "a"), session.Side("head", "b")
    # 7,000 messages a run: 7 lie beyond p99.9 (fewer than 50: shown), 70 beyond p99 (judged). Head is 3x slower
    # everywhere, so a judged percentile is SLOWER and the thin one, whatever it shows, is not a verdict.
    base.runs["w"] = _runs(tmp_path, "a", 7, stages=True)
    head.runs["w"] = _runs(tmp_path, "b", 7, stages=True, slower=3.0)
    table = session.metric_verdicts(base, head, 0.05, 1)["w"]
    assert table["book.p999"]["verdict"] == verdicts.SHOWN
    assert table["book.p999"]["reason"].startswith("only 7 messages lie beyond p999 in the smallest run (7,000")
    assert table["book.p99"]["verdict"] == verdicts.WORSE
    # 50,000 messages a run: 50 beyond p99.9, judged.
    base.runs["w"] = _runs(tmp_path / "big", "a", 7, stages=True, messages=50_000)
    head.runs["w"] = _runs(tmp_path / "big", "b", 7, stages=True, messages=50_000, slower=3.0)
    assert session.metric_verdicts(base, head, 0.05, 1)["w"]["book.p999"]["verdict"] == verdicts.WORSE


def test_wire_to_wire_stamped_when_read_is_shown_not_judged_and_left_out_of_the_store(tmp_path):
    # Head 3x slower wire to wire. Where every collector had the kernel's arrival stamps, that is judged; where
    # one run's collector had to stamp events when it read them (no arrival stamp), its wait is in the figures:
    # shown, not judged, and the results store keeps no wire-to-wire figure of that run.
    from itchbench.compare import session
    from itchbench.history import store
    exact = {"events_stamp_unknown": 0, "events_earlier_than_stamp": 0}
    base, head = session.Side("base", "a"), session.Side("head", "b")
    base.runs["w"] = _runs(tmp_path, "a", 7, stages=False, wire=exact)
    head.runs["w"] = _runs(tmp_path, "b", 7, stages=False, slower=3.0, wire=exact)
    assert session.metric_verdicts(base, head, 0.05, 1)["w"]["wire_to_wire.p50"]["verdict"] == verdicts.WORSE
    head.runs["w"] = _runs(tmp_path / "read", "b", 6, stages=False, slower=3.0, wire=exact) + \
        _runs(tmp_path / "read", "c", 1, stages=False, slower=3.0, wire={**exact, "events_stamp_unknown": 12})
    row = session.metric_verdicts(base, head, 0.05, 1)["w"]["wire_to_wire.p50"]
    assert row["verdict"] == verdicts.SHOWN
    assert row["reason"].startswith("the collector stamped 12 events when it read them, for want of the kernel's "
                                    "arrival stamp, in 1 of the 14 runs")
    assert "wire_to_wire.p50" in store.metrics_of(head.runs["w"][0])
    assert not [m for m in store.metrics_of(head.runs["w"][-1]) if m.startswith("wire_to_wire")]


def test_timings_of_one_build_are_shown_as_the_machines_never_judged(tmp_path):
    # Head's runs 3x slower at the book stage. Of another build, that is SLOWER; of the same build (the same
    # sources: an A/A compare, or a head that changed only documentation), it is the machine's, shown, not judged.
    from itchbench.compare import session
    base, head = session.Side("base", "a"), session.Side("head", "b")
    base.runs["w"] = _runs(tmp_path / "a", "a", 7, stages=True, sources="src-1")
    head.runs["w"] = _runs(tmp_path / "b", "b", 7, stages=True, slower=3.0, sources="src-2")
    assert session.same_build(base, head) is None
    assert session.metric_verdicts(base, head, 0.05, 1)["w"]["book.p50"]["verdict"] == verdicts.WORSE
    head.runs["w"] = _runs(tmp_path / "c", "c", 7, stages=True, slower=3.0, sources="src-1")
    assert session.same_build(base, head) == "sources src-1"
    row = session.metric_verdicts(base, head, 0.05, 1)["w"]["book.p50"]
    assert row["verdict"] == verdicts.SHOWN and row["machine"]
    assert row["reason"] == ("SLOWER by the statistics, but base and head are one build (sources src-1): the "
                             "difference is the machine's, not the code's (shown, not judged)")
    # A side whose runs name no build, or two, is not one build with anything.
    head.runs["w"] = _runs(tmp_path / "d", "d", 7, stages=True, slower=3.0)
    assert session.same_build(base, head) is None
    # Other sources, the same executable byte for byte (a head that changed only a test beside the gateway): one
    # build too. Another executable of other sources is judged.
    exe, other = "ab" * 32, "cd" * 32
    base.runs["w"] = _runs(tmp_path / "e", "e", 7, stages=True, sources="src-1", executable=exe)
    head.runs["w"] = _runs(tmp_path / "f", "f", 7, stages=True, slower=3.0, sources="src-2", executable=exe)
    assert session.same_build(base, head) == f"the same executable, sha256 {exe[:16]}…"
    row = session.metric_verdicts(base, head, 0.05, 1)["w"]["book.p50"]
    assert row["verdict"] == verdicts.SHOWN and row["machine"]
    assert row["reason"].startswith(f"SLOWER by the statistics, but base and head are one build (the same executable, "
                                    f"sha256 {exe[:16]}…): the difference is the machine's")
    head.runs["w"] = _runs(tmp_path / "g", "g", 7, stages=True, slower=3.0, sources="src-2", executable=other)
    assert session.same_build(base, head) is None
    assert session.metric_verdicts(base, head, 0.05, 1)["w"]["book.p50"]["verdict"] == verdicts.WORSE


def test_an_estimate_of_millions_of_runs_is_said_as_none_affordable():
    # Seen on compare HEAD HEAD: "~14289640 runs a side would likely decide it" for a metric 5 % off by noise.
    from itchbench.commands.compare import inconclusive_words
    metric = {"delta_pct": 5.0, "ci": [0.86, 1.14], "p": 0.99, "verdict": "too noisy"}
    words = inconclusive_words({"w": {"a": {**metric, "repetitions_to_decide": 14_289_640},
                                      "b": {**metric, "repetitions_to_decide": 161}}}, "too noisy")
    assert words[0].endswith("no affordable number of runs would decide it: the change, if any, is well inside "
                             "the noise)")
    assert words[1].endswith("~161 runs a side would likely decide it)")
