"""Targets, sweeps and the measures under them (docs/capacity.md). Expected values are hand calculations or numpy's
own fit, not the code under test; the live cases run real scenarios through `itchbench run` and check what it
prints, exits with and records against the runs' own summaries."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths, rundir
from itchbench.analysis.trend import Trend
from itchbench.capacity import sweep, targets
from itchbench.documents.aggregate import Factor, times
from itchbench.runs import scenario

from independent_bbo import mold_messages

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SEED = paths.repo_root() / "fixtures" / "seed-workload.pcap"


def test_trend_slope_is_numpys_least_squares_fit_over_chunks():
    rng = np.random.default_rng(5)
    due = np.sort(rng.integers(10**12, 10**12 + 3 * 10**9, 50_000))
    latency = 40_000 + 0.002 * (due - due[0]) + rng.normal(0, 3_000, due.size)  # 2 ms a second
    t = Trend()
    for part in np.array_split(np.arange(due.size), 7):
        t.add(due[part], latency[part].astype(np.int64))
    slope, _ = np.polyfit((due - due[0]) / 1e9, latency.astype(np.int64) / 1e3, 1)
    got = t.result()
    assert got["slope_us_per_s"] == pytest.approx(slope, rel=1e-6)
    assert got["span_s"] == pytest.approx((due[-1] - due[0]) / 1e9)
    assert Trend().result() == {}


def _m(**kw):
    return [{"status": "lossless", "lost_messages": 0, **{k: v[i] for k, v in kw.items()}}
            for i in range(len(next(iter(kw.values()))))]


def test_targets_are_judged_on_the_median_with_the_runs_spread():
    runs = _m(p99_us=[90.0, 118.0, 130.0], throughput_msg_s=[5e5, 6e5, 7e5], loss=[0.0, 0.0, 0.0],
              cpu_pct=[math.nan] * 3)
    judged = {j.key: j for j in targets.judge({"p99_us": 100.0, "throughput_msg_s": 4e5, "loss": 0.0,
                                               "cpu_pct": 50.0, "p50_us": 10.0}, runs)}
    assert judged["p99_us"].status == "UNDECIDED" and judged["p99_us"].median == 118.0
    assert judged["throughput_msg_s"].status == "MET" and judged["loss"].status == "MET"
    assert judged["cpu_pct"].status == "NOT MEASURED" and judged["p50_us"].status == "NOT MEASURED"
    assert targets.judge({"p99_us": 80.0}, runs)[0].status == "MISSED"
    assert targets.judge({"throughput_msg_s": 8e5}, runs)[0].status == "MISSED"
    one = targets.judge({"p99_us": 100.0}, _m(p99_us=[118.0]))
    assert one[0].status == "MISSED"
    assert targets.headline(one) == "TARGET MISSED: p99 latency 118.0 µs > 100.0 µs"
    assert targets.headline(targets.judge({"p99_us": 200.0}, runs)) == "TARGETS MET: 1 of 1"
    # Four of five runs crashed: the one that ended meets the bound, but no target is met on what the others
    # did not measure.
    crashed = [*_m(p99_us=[50.0]), *({"status": "incomplete"} for _ in range(4))]
    (j,) = targets.judge({"p99_us": 200.0}, crashed)
    assert j.status == "NOT MEASURED" and not targets.passed([j])
    assert targets.headline([j]) == "TARGET NOT MEASURED: p99 latency not measured in the 4 of 5 runs that did not " \
                                    "pass (target ≤ 200.0 µs)"
    assert not targets.passed(list(judged.values()), allow_undecided=True)  # NOT MEASURED is never a pass
    assert targets.passed(targets.judge({"p99_us": 100.0}, runs), allow_undecided=True)
    assert not targets.passed(targets.judge({"p99_us": 100.0}, runs))


def test_sweep_steps_saturation_and_knee():
    bounds = {"key": "replay.pps", "steps": [], "start": 10_000.0, "factor": 4.0, "end": 700_000.0,
              "stop_on_loss": True, "p99_us": 500.0, "max_slope_us_per_s": 10_000.0}
    assert sweep.values_of(bounds, "x") == [10_000, 40_000, 160_000, 640_000]
    assert sweep.values_of({**bounds, "steps": [1.6, 2.4, 3]}, "x") == [2, 3]  # typed as the key, each once
    # Falling steps, both within bounds, named the lower the highest: refused.
    with pytest.raises(ValueError, match=r"sweep.steps \[20000, 5000\] must rise"):
        sweep.values_of({**bounds, "steps": [20000, 5000]}, "x")
    with pytest.raises(ValueError):
        sweep.values_of({**bounds, "start": 0.0}, "x")
    ok = _m(p99_us=[40.0, 60.0], gateway_slope_us_per_s=[5.0, -3.0], sender_slope_us_per_s=[0.0, 9_000.0])
    assert sweep.past_saturation(bounds, ok) == []
    assert sweep.past_saturation(bounds, _m(p99_us=[40.0, 600.0, 700.0], gateway_slope_us_per_s=[0.0] * 3)) == \
        ["p99: 600.0 µs > 500.0 µs"]
    behind = sweep.past_saturation(bounds, _m(p99_us=[40.0], gateway_slope_us_per_s=[250_000.0]))
    assert behind and behind[0].startswith("behind: latency from the actual send grew 250,000 µs/s")
    lagging = _m(p99_us=[4_000.0], gateway_slope_us_per_s=[20.0], sender_slope_us_per_s=[2e6])
    why = sweep.past_saturation(bounds, lagging)
    assert why[0].startswith("sender: it fell behind") and why[1].startswith("p99")
    rows = [{**sweep.step_row(1, ok, []), "value": 1}, {**sweep.step_row(2, lagging, why), "value": 2}]
    c = sweep.conclusions(rows)
    assert c["sender_limited"] and not c["reached"] and c["saturation_value"] == 1
    unmeasured = _m(p99_us=[math.nan], gateway_slope_us_per_s=[math.nan], slope_us_per_s=[math.nan])
    assert sweep.past_saturation(bounds, unmeasured) == ["p99: not measured, so not within 500.0 µs"]
    assert sweep.not_checked(unmeasured) and not sweep.not_checked(ok)
    lost = [{"status": "lost", "lost_messages": 12, "p99_us": 40.0}]
    assert sweep.past_saturation(bounds, lost) == ["lost: 1 of 1 runs lost 12 messages at most"]
    rows = [{"value": v, "throughput_msg_s": t, "offered_msg_s": v, "p50_us": p, "past_saturation": w}
            for v, t, p, w in [(1, 1e4, 50.0, []), (2, 4e4, 90.0, []), (3, 1.5e5, 120.0, []),
                               (4, 2e5, 900.0, ["p99"])]]
    c = sweep.conclusions(rows)
    assert (c["saturation_value"], c["saturation_msg_s"], c["knee_value"]) == (3, 1.5e5, 3)  # p50 120 > 2 × 50
    assert c["reached"] and c["first_past"]["value"] == 4


def test_factors_read_as_people_read_them():
    assert times(1110.4) == "1,110×" and times(12.34) == "12.3×" and times(1.184) == "1.18×"
    assert Factor(1 / 1110.4, None).cell() == "1,110× slower (one run: no CI)"
    assert Factor(2.0, (1.8, 2.2)).cell() == "2.00× (CI 1.80–2.20)"
    assert Factor(0.5, (0.4, 0.625)).cell() == "2.00× slower (CI 1.60–2.50)"
    assert Factor(1 / 1110.4, None).phrase("p99", "B").startswith("1,110× higher p99 than B")


def _scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(f'name = "cap"\ncapture = "{SEED}"\n' + text)
    return path


def test_scenarios_expand_sweeps_and_refuse_what_cannot_be_judged(tmp_path):
    configs = scenario.load(_scenario(tmp_path, 'transport = "udp"\n[replay]\nsender = "udp-replay"\nrate = "pps"\n'
                                                '[sweep]\nkey = "replay.pps"\nsteps = [1000, 4000]\n'))
    assert [(c.label, c.step, c.swept, c.values["replay"]["pps"]) for c in configs] == \
        [("cap-pps=1000", 0, "cap", 1000), ("cap-pps=4000", 1, "cap", 4000)]
    with pytest.raises(scenario.ScenarioError, match="saturation_msg_s only"):
        scenario.load(_scenario(tmp_path, 'transport = "udp"\n[sweep]\nkey = "replay.pps"\nsteps = [1]\n'
                                          '[targets]\np99_us = 10\n'))
    with pytest.raises(scenario.ScenarioError, match="needs sweep.key"):
        scenario.load(_scenario(tmp_path, 'transport = "sim"\n[targets]\nsaturation_msg_s = 10\n'))
    with pytest.raises(scenario.ScenarioError, match="targets.p99_us"):
        scenario.load(_scenario(tmp_path, 'transport = "sim"\n[targets]\np99_us = -5\n'))
    # Bounds no run could miss, or none could meet: a gate that cannot fail, or fails every unchanged build.
    for text, said in (("p99_us = inf", "targets.p99_us: inf must be above 0 and finite"),
                       ("p99_us = 0", "targets.p99_us: 0.0 must be above 0"),
                       ("throughput_msg_s = 0", "targets.throughput_msg_s: 0.0 must be above 0"),
                       ("loss = 2", r"targets.loss: 2.0 must be a share from 0 to 1 \(0.01 is 1 %\)")):
        with pytest.raises(scenario.ScenarioError, match=said):
            scenario.load(_scenario(tmp_path, f'transport = "sim"\n[targets]\n{text}\n'))
    (none_lost,) = scenario.load(_scenario(tmp_path, 'transport = "sim"\n[targets]\nloss = 0\n'))
    assert none_lost.values["targets"]["loss"] == 0
    symbols = scenario.load(_scenario(tmp_path, 'transport = "sim"\n[sweep]\nkey = "symbols"\nsteps = [3, 40]\n'
                                                 'session_messages = 2000\n'))
    for c, n in zip(symbols, (3, 40)):  # each step's capture a session of its own, with that many symbols
        # Stock Directory (R) names each stock (ITCH 5.0: the stock at offset 11, 8 bytes); adds (A) its locate.
        messages = list(mold_messages(Path(c.values["capture"])))
        directory = {m[11:19] for _, m in messages if m[:1] == b"R"}
        traded = {m[1:3] for _, m in messages if m[:1] == b"A"}
        assert c.label == f"cap-symbols={n}" and len(directory) == n and len(traded) == n
    assert symbols[0].values["capture"] != symbols[1].values["capture"]
    mixes = scenario.load(_scenario(tmp_path, 'transport = "sim"\n[sweep]\nkey = "mix"\n'
                                              'steps = ["A=50,D=50", "A=50,U=50"]\nsession_messages = 2000\n'))
    kinds = [{m[:1] for _, m in mold_messages(Path(c.values["capture"]))} for c in mixes]
    assert b"U" not in kinds[0] and b"U" in kinds[1] and b"D" in kinds[0] and b"D" not in kinds[1]
    mixed = scenario.load(_scenario(tmp_path, 'transport = "sim"\n[sweep]\nkey = "symbols"\nsteps = [3]\n'
                                             'session_messages = 2000\n[[configurations]]\nlabel = "swept"\n'
                                             '[[configurations]]\nlabel = "plain"\nsweep = { key = "" }\n'))
    assert [(c.label, c.step) for c in mixed] == [("swept-symbols=3", 0), ("plain", None)]
    with pytest.raises(scenario.ScenarioError, match="mixes are key"):
        scenario.load(_scenario(tmp_path, 'transport = "udp"\n[sweep]\nkey = "subscribers"\nsteps = ["A=1"]\n'))
    plain = scenario.load(_scenario(tmp_path, 'transport = "sim"\n'))[0]
    judged = scenario.load(_scenario(tmp_path, 'transport = "sim"\n[targets]\np99_us = 5\n'))[0]
    assert plain.hash() == judged.hash()  # a target judges the workload; it is not another one


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "itchbench.cli", "run", *args], capture_output=True, text=True,
                          timeout=600)


def test_a_configuration_outside_the_sweep_runs_beside_it(tmp_path):
    text = ('transport = "sim"\n[sweep]\nkey = "symbols"\nsteps = [3, 5]\nsession_messages = 2000\n'
            '[[configurations]]\nlabel = "swept"\n[[configurations]]\nlabel = "plain"\nsweep = { key = "" }\n')
    done = _run([str(_scenario(tmp_path, text)), "--out", str(tmp_path / "m")])
    assert done.returncode == 0, done.stdout
    labels = sorted(rundir.read_json(d / "manifest.json")["label"] for d in (tmp_path / "m").glob("*/")
                    if (d / "manifest.json").is_file())
    assert labels == ["plain", "swept-symbols=3", "swept-symbols=5"]


def test_a_missed_target_fails_the_run_and_one_at_the_median_is_undecided(tmp_path):
    first = _run([str(_scenario(tmp_path, 'transport = "sim"\nrepetitions = 3\n[targets]\np99_us = 1_000_000\n'
                                          'p50_us = 0.001\n')), "--out", str(tmp_path / "a")])
    assert first.returncode == 1, first.stdout
    summaries = [rundir.read_json(d / "summary.json") for d in sorted((tmp_path / "a").glob("*/"))]
    p50s = sorted(s["latency"]["stages"]["receive_to_book"]["p50"] / 1e3 for s in summaries)
    line = next(x for x in first.stdout.splitlines() if x.startswith("cap: TARGET MISSED: p50 latency "))
    assert line.endswith(" µs > 0.001 µs") and "p99" not in line
    assert "targets not met by 1 configuration(s) — FAILED" in first.stdout
    record = json.loads(next((tmp_path / "a").glob("capacity-cap-*.json")).read_text())
    rows = {r["key"]: r for r in record["configurations"][0]["targets"]}
    assert rows["p99_us"]["status"] == "MET" and rows["p50_us"]["status"] == "MISSED"
    assert rows["p50_us"]["median"] == pytest.approx(statistics.median(p50s))

    at_median = str(_scenario(tmp_path, f'transport = "sim"\nrepetitions = 3\n[targets]\n'
                                        f'p50_us = {statistics.median(p50s)}\n'))
    second = _run([at_median, "--out", str(tmp_path / "b")])
    again = sorted(rundir.read_json(d / "summary.json")["latency"]["stages"]["receive_to_book"]["p50"] / 1e3
                   for d in sorted((tmp_path / "b").glob("*/")))
    target = statistics.median(p50s)
    expected = _status(again, target)
    assert f"TARGET {expected}" in second.stdout or (expected == "MET" and "TARGETS MET" in second.stdout)
    assert second.returncode == (0 if expected == "MET" else 1)
    # --allow-undecided: an undecided target passes; a missed one still fails. Which this third set of runs is
    # depends on its own medians, as the second's did.
    third = _run([at_median, "--out", str(tmp_path / "c"), "--allow-undecided"])
    status = _status(sorted(rundir.read_json(d / "summary.json")["latency"]["stages"]["receive_to_book"]["p50"] / 1e3
                            for d in sorted((tmp_path / "c").glob("*/"))), target)
    assert f"TARGET {status}" in third.stdout or (status == "MET" and "TARGETS MET" in third.stdout), third.stdout
    assert third.returncode == (1 if status == "MISSED" else 0)


@needs_root
def test_a_configuration_the_gateway_cannot_take_is_named_and_its_targets_are_not_measured(tmp_path):
    """A gate of a file and a UDP configuration, each with targets, run on a gateway that takes UDP and serial (the
    py example): the file configuration cannot run. Its targets had gone unjudged and the run said "ok"."""
    text = ('repetitions = 1\n[[configurations]]\nlabel = "file"\ntransport = "sim"\n'
            'targets = { throughput_msg_s = 1 }\n[[configurations]]\nlabel = "udp"\ntransport = "udp"\n'
            'replay = { sender = "udp-replay", rate = "pps", pps = 20_000 }\ntargets = { loss = 0 }\n')
    done = _run([str(_scenario(tmp_path, text)), "--gateway", str(paths.repo_root() / "examples" / "py-gateway"),
                 "--out", str(tmp_path / "g")])
    assert done.returncode == 1, done.stdout
    lines = done.stdout.splitlines()
    assert "udp: TARGETS MET: 1 of 1" in lines
    assert any(x.startswith("file: TARGET NOT MEASURED: throughput not measured (target ≥ 1 msg/s) (not run: "
                            "transport sim needs a gateway that takes file input") for x in lines), done.stdout
    assert lines[-1] == ("1 run(s): 1 lossless; targets not met by 1 configuration(s); 1 configuration(s) not run, "
                         "the gateway taking none of their input: file — FAILED")
    record = json.loads(next((tmp_path / "g").glob("capacity-cap-*.json")).read_text())
    file_entry = next(c for c in record["configurations"] if c["label"] == "file")
    assert file_entry["runs"] == [] and file_entry["not_run"].startswith("transport sim needs a gateway")
    assert [t["status"] for t in file_entry["targets"]] == ["NOT MEASURED"]


def _status(values: list[float], target: float) -> str:
    """A target on the runs' values (sorted): met by all of them, missed by all, or undecided between."""
    return "MET" if values[-1] <= target else "MISSED" if values[0] > target else "UNDECIDED"


@needs_root
def test_a_sweep_stops_at_the_first_step_past_its_bound_and_keeps_the_steps_before(tmp_path):
    common = ('transport = "udp"\n[replay]\nsender = "udp-replay"\nrate = "pps"\n[sweep]\nkey = "replay.pps"\n'
              'steps = [2000, 4000, 8000]\n')
    stopped = _run([str(_scenario(tmp_path, common + "p99_us = 0.5\n")), "--out", str(tmp_path / "s")])
    assert stopped.returncode == 0, stopped.stdout  # a sweep past saturation is what it is for: not a failure
    assert len(list((tmp_path / "s").glob("*-cap-pps=*"))) == 1
    assert "past saturation at replay.pps = 2000: p99:" in stopped.stdout
    assert "SWEEP cap: no step of replay.pps within every bound" in stopped.stdout

    whole = _run([str(_scenario(tmp_path, common + "max_slope_us_per_s = 1e12\n[targets]\n"
                                               "saturation_msg_s = 1e9\n")), "--out", str(tmp_path / "w")])
    assert whole.returncode == 1 and "TARGET MISSED: saturation" in whole.stdout, whole.stdout
    assert "saturation not reached: the last step met every bound" in whole.stdout
    record = json.loads(next((tmp_path / "w").glob("capacity-cap-*.json")).read_text())
    steps = record["sweeps"]["cap"]["steps"]
    assert [s["value"] for s in steps] == [2000, 4000, 8000]
    for s in steps:  # each step's offered rate is the send log's own: messages over the span of their due times
        run = tmp_path / "w" / s["run_dirs"][0]
        summary = rundir.read_json(run / "summary.json")
        assert s["offered_msg_s"] == pytest.approx(s["value"], rel=0.02)  # one message a packet in this capture
        assert summary["verdict"]["status"] == "lossless"


@needs_root
def test_hundreds_of_subscribers_are_one_process_and_each_fast_one_gets_every_frame(tmp_path):
    from itchbench.runs import runner
    from live_helpers import config
    values = {**config(SEED, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 20_000}),
              "subscribers": 200, "subscriber_modes": ["stuck"]}
    run = runner.execute(values, "fan", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    pool = s["transport_details"]["subscriber_pool"]
    assert pool["connections"] == 200 and pool["reads"] > 0
    bbo = (run / "bbo.bbo").read_bytes()
    log_body = bbo[-1123 * 48:]  # the gateway's BBO log: its 1,123 events after the header (fixture golden)
    for k in (1, 57, 199):  # fast ones: every frame, byte for byte, in order
        assert (run / f"subscriber-{k}.bbo").read_bytes() == log_body
        info = json.loads((run / f"subscriber-{k}.json").read_text())
        assert info["ended"] == "end of stream" and info["frames"] == 1123
    stuck = json.loads((run / "subscriber-0.json").read_text())
    assert stuck["frames"] == 0 and stuck["local_ports"]
    report = (run / "report.md").read_text()
    assert "### Subscribers by rank (199 with events)" in report
    assert report.count("### BBO events, to subscriber ") == 8


@pytest.mark.parametrize("args", [["--port", "1", "--dir", "/tmp", "--numbers", "5-2"],
                                  ["--port", "1", "--dir", "/tmp", "--numbers", "a"],
                                  ["--port", "1", "--dir", "/tmp", "--numbers", "0-3", "--stuck", "7"],
                                  ["--port", "1", "--dir", "/tmp"]])
def test_the_subscriber_pool_refuses_bad_arguments_with_usage(tool, args):
    done = tool("bbo-tcp-subscribers", *args)
    assert done.returncode == 2 and done.stderr.strip()


def test_the_subscriber_pool_names_a_subscriber_it_cannot_connect(tool, tmp_path):
    done = tool("bbo-tcp-subscribers", "--port", "9", "--dir", tmp_path, "--numbers", "0",
                "--connect-timeout-ms", "100")
    assert done.returncode == 1 and "subscriber-0" in done.stderr and "connect" in done.stderr
