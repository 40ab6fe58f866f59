"""Runs while CLOCK_REALTIME is stepped ahead, as the time keeper of a VM does (+500 µs steps hit 12 right runs
of one CI test command): the kernel stamps arrivals on that clock, and a right gateway stays LOSSLESS, the stamps a
set may have moved left out and counted — the built-in gateway's (gateway/source/kernel_stamps.hpp) and, for a
brought one, its collector's (gateways/collector.py Arrivals). The machine's clock is set here, so these run alone
and undo every set they make."""

from __future__ import annotations

import os
import signal
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

from live_helpers import EVENTS_HELD_TO_THE_END, config, our_processes

pytestmark = [pytest.mark.alone,
              pytest.mark.skipif(os.geteuid() != 0, reason="setting the clock and network namespaces need root")]

SEED = next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload")
PY_GATEWAY = Path(__file__).resolve().parents[2] / "examples" / "py-gateway" / "itchbench.toml"


@contextmanager
def clock_stepped_ahead(step_ns: int, every_s: float) -> Iterator[list[int]]:
    """CLOCK_REALTIME set step_ns ahead every every_s until the block ends, then back by all of it at once; yields
    the count of sets made so far (one item). One way, as a VM's time keeper steps it: a set and its undoing both
    while a datagram waits (ahead, then back, between two readings) leave no trace any reader of the clock could
    see, and made here every few ms they failed right runs now and then."""
    made, stop = [0], threading.Event()

    def set_by(ns: int) -> None:
        time.clock_settime_ns(time.CLOCK_REALTIME, time.clock_gettime_ns(time.CLOCK_REALTIME) + ns)

    def keep_setting() -> None:
        while not stop.wait(every_s):
            set_by(step_ns)
            made[0] += 1

    setter = threading.Thread(target=keep_setting, name="clock-setter")
    setter.start()
    try:
        yield made
    finally:
        stop.set()
        setter.join()
        set_by(-step_ns * made[0])


def test_the_built_in_gateway_leaves_out_the_kernel_stamps_a_set_may_have_moved(tmp_path):
    values = config(SEED.path, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 20000}, subscribers=0)
    with clock_stepped_ahead(500_000, 0.01) as made:
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
    with clock_stepped_ahead(2_000_000, 0.02) as made:
        run = runner.execute(values, "clock-sets-brought", root=tmp_path, echo=False)
    s = rundir.read_json(run / "summary.json")
    assert made[0] > 0
    # Before: 3 of 3 such runs NOT BALANCED, events "received before their message was sent" by 2 ms.
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    collected = s["wire_to_wire"]["collector"]
    # Seen between the collector's readings, a set is the steps made since the last: 2 ms at least.
    assert collected["clock_sets"] > 0 and 1_500_000 < collected["largest_clock_set_ns"] <= 2_000_000 * made[0] + 1e6
    assert s["wire_to_wire"]["events"] + collected["events_across_clock_set"] <= s["bbo"]["events"]


def test_a_gateway_that_publishes_from_a_recording_is_never_lossless_across_sets(tmp_path):
    # The zoo's mutant that publishes its whole output at start, before the feed: read in one burst across a set,
    # every event's stamp was left out and nothing held it to its send: LOSSLESS. Now caught by its early events,
    # each held to its send by its arrival, or by when it was read where its arrival was left out.
    mutants, _ = zoo.select(quick=False, names=["output-from-a-recording"])
    with clock_stepped_ahead(500_000, 0.01) as made:
        (outcome,) = zoo_runner.run(mutants, [], tmp_path / "runs", say=lambda _: None)
    assert made[0] > 0
    assert outcome.got == "unbalanced" and outcome.headline.startswith(
        "NOT BALANCED: failed: each BBO event received after its message was sent (itchbench's stamps on both "
        "sides): "), outcome.headline


def _running(*markers: str) -> list[int]:
    """Our live processes (live_helpers.our_processes: not a zombie) whose command line holds every marker."""
    return [pid for pid, args in our_processes() if all(marker in args for marker in markers)]


def test_a_right_gateway_publishing_at_its_end_is_held_to_its_send_across_a_set(tmp_path):
    """The example holding every event until its end, its whole output read in one burst after a set of the clock:
    the collector left out every arrival stamp, and with none kept the run was NOT BALANCED (the check that events
    came after their send "not checked"): a right gateway failed by the machine's clock. Now each event is held to
    its send by when it was read: LOSSLESS. Made so in order, not by timing: the collector is stopped once the feed
    is being sent (the gateway connected to it), the clock set 2 ms ahead once the gateway has ended (its output
    waiting), then it goes on, and the clock is set back once it has read to the end."""
    gateway = zoo.materialise(zoo.PY, (EVENTS_HELD_TO_THE_END,), tmp_path / "held")
    values = config(SEED.path, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 20000}, subscribers=0,
                    gateway_file=str(gateway / "itchbench.toml"))
    done = threading.Event()

    def hold_the_collector_across_a_set() -> None:
        # The feed's sending begins once the gateway is ready: connected to the collector, which took it.
        while not any(tmp_path.glob("*/send.log")) and not done.wait(0.01):
            pass
        collector = ("itchbench.gateways.collector", str(tmp_path))
        held = (str(gateway / "gateway.py"), "--bbo")
        collectors = _running(*collector)
        if done.is_set() or not collectors or not _running(*held):
            return
        os.kill(collectors[0], signal.SIGSTOP)
        ns, set_ahead = 2_000_000, False  # past the 1 ms a stamp is allowed
        try:
            while _running(*held) and not done.wait(0.01):
                pass
            time.clock_settime_ns(time.CLOCK_REALTIME, time.clock_gettime_ns(time.CLOCK_REALTIME) + ns)
            set_ahead = True
            os.kill(collectors[0], signal.SIGCONT)
            while _running(*collector) and not done.wait(0.01):  # it reads the burst, to its end
                pass
        finally:
            if _running(*collector):
                os.kill(collectors[0], signal.SIGCONT)
            if set_ahead:
                time.clock_settime_ns(time.CLOCK_REALTIME, time.clock_gettime_ns(time.CLOCK_REALTIME) - ns)

    holder = threading.Thread(target=hold_the_collector_across_a_set, name="collector-holder")
    holder.start()
    try:
        run = runner.execute(values, "held-across-a-set", root=tmp_path, echo=False)
    finally:
        done.set()
        holder.join()
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    collected = rundir.read_json(run / "bbo.received.json")
    assert collected["clock_sets"] >= 1 and collected["events_across_clock_set"] == s["bbo"]["events"] > 0
    assert s["wire_to_wire"] is None  # no arrival kept: no figure, and the check made by when they were read
    check = next(name for name in s["reconciliation"]["checks"] if name.startswith(
        "each BBO event received after its message was sent"))
    assert check.endswith(f"({s['bbo']['events']:,} of the {s['bbo']['events']:,} events held by when the collector "
                          "read them: CLOCK_REALTIME was set while they waited)"), check
