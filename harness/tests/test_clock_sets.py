"""Runs while CLOCK_REALTIME is set ahead and back, as the time keeper of a VM does (+500 µs steps hit 12 right runs
of one CI test command): the kernel stamps arrivals on that clock, and a right gateway stays LOSSLESS, the stamps a
set may have moved left out and counted — the built-in gateway's (gateway/source/kernel_stamps.hpp) and, for a
brought one, its collector's (gateways/collector.py Arrivals). The machine's clock is set here, so these run alone
and undo every set they make."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from itchbench import rundir
from itchbench.captures import fixtures
from itchbench.runs import runner
from itchbench.selftest import runner as zoo_runner
from itchbench.selftest import zoo

from live_helpers import config

pytestmark = [pytest.mark.alone,
              pytest.mark.skipif(os.geteuid() != 0, reason="setting the clock and network namespaces need root")]

SEED = next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload")
PY_GATEWAY = Path(__file__).resolve().parents[2] / "examples" / "py-gateway" / "itchbench.toml"


@contextmanager
def clock_set_ahead_and_back(step_ns: int, every_s: float) -> Iterator[list[int]]:
    """CLOCK_REALTIME set step_ns ahead, then back, every every_s until the block ends, the last set undone; yields
    the count of sets made so far (one item)."""
    made, stop = [0], threading.Event()

    def set_by(ns: int) -> None:
        time.clock_settime_ns(time.CLOCK_REALTIME, time.clock_gettime_ns(time.CLOCK_REALTIME) + ns)
        made[0] += 1

    def keep_setting() -> None:
        ahead = False
        while not stop.wait(every_s):
            set_by(-step_ns if ahead else step_ns)
            ahead = not ahead
        if ahead:
            set_by(-step_ns)

    setter = threading.Thread(target=keep_setting, name="clock-setter")
    setter.start()
    try:
        yield made
    finally:
        stop.set()
        setter.join()


def test_the_built_in_gateway_leaves_out_the_kernel_stamps_a_set_may_have_moved(tmp_path):
    values = config(SEED.path, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 20000}, subscribers=0)
    with clock_set_ahead_and_back(500_000, 0.01) as made:
        run = runner.execute(values, "clock-sets", root=tmp_path, echo=False)
    s = rundir.read_json(run / "summary.json")
    assert made[0] > 0
    # Before: 2 of 3 such runs NOT BALANCED, a few stamps 470-500 µs before their datagram was sent.
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    assert s["bbo"]["digest"] == SEED.golden["bbo_digest"]
    udp = s["gateway"]["udp"]
    # The feed takes 0.35 s, a set every 10 ms: sets between its reads are seen, each about 500 µs.
    assert udp["realtime_steps"] > 0 and 400_000 < udp["realtime_largest_step_ns"] < 5_000_000
    assert udp["kernel_timestamps_across_step"] <= udp["kernel_timestamps_unplaced"] < udp["kernel_timestamps"]
    assert "CLOCK_REALTIME, which the kernel stamps on, was set" in (run / "report.md").read_text()


def test_a_brought_gateways_collector_leaves_out_the_stamps_a_set_may_have_moved(tmp_path):
    values = config(SEED.path, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 2000}, subscribers=0,
                    gateway_file=str(PY_GATEWAY))
    # 2 ms sets: past the 1 ms the check that events came after their send allows a stamp.
    with clock_set_ahead_and_back(2_000_000, 0.02) as made:
        run = runner.execute(values, "clock-sets-brought", root=tmp_path, echo=False)
    s = rundir.read_json(run / "summary.json")
    assert made[0] > 0
    # Before: 3 of 3 such runs NOT BALANCED, events "received before their message was sent" by 2 ms.
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    collected = s["wire_to_wire"]["collector"]
    assert collected["clock_sets"] > 0 and 1_500_000 < collected["largest_clock_set_ns"] < 5_000_000
    assert s["wire_to_wire"]["events"] + collected["events_across_clock_set"] <= s["bbo"]["events"]


def test_a_gateway_that_publishes_from_a_recording_is_never_lossless_across_sets(tmp_path):
    # The zoo's mutant that publishes its whole output at start, before the feed: read in one burst across a set,
    # every event's stamp was left out and nothing held it to its send: LOSSLESS. Now caught by its early events,
    # or, every stamp left out, the check said not made.
    mutants, _ = zoo.select(quick=False, names=["output-from-a-recording"])
    with clock_set_ahead_and_back(500_000, 0.01) as made:
        (outcome,) = zoo_runner.run(mutants, [], tmp_path / "runs", say=lambda _: None)
    assert made[0] > 0
    assert outcome.got == "unbalanced" and outcome.headline.startswith(
        "NOT BALANCED: failed: each BBO event received after its message was sent (itchbench's stamps on both "
        "sides): "), outcome.headline
