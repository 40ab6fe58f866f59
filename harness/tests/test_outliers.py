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


def test_the_scheduler_time_line_names_who_had_the_hot_threads_cpu():
    from itchbench.analysis.switches import Switches
    lines = [  # perf script -F cpu,time,event,trace, as perf prints its events (hot thread: pid 77 on CPU 1)
        # The hog comes on as `chrt` and execs `sh` while it holds the CPU: it is named as it left, `sh`.
        "[001] 100.000000100: sched:sched_switch: prev_comm=gw prev_pid=77 prev_prio=120 prev_state=R ==> "
        "next_comm=chrt next_pid=90 next_prio=120",
        "[000] 100.000000200: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> "
        "next_comm=sender next_pid=55 next_prio=120",
        "[001] 100.000900000: sched:sched_switch: prev_comm=sh prev_pid=90 prev_prio=120 prev_state=R ==> "
        "next_comm=gw next_pid=77 next_prio=120",
        "garbage that is no switch",
        "[001] 100.000500000: irq:softirq_entry: vec=3 [action=NET_RX]",        # on its CPU, in message 0's hop
        "[000] 100.000500000: irq:softirq_entry: vec=1 [action=TIMER]",         # another CPU's
        "[001] 100.500000000: irq:irq_handler_entry: irq=36 name=virtio1-req.0",  # in no outlier's hop
        "[001] 101.000500000: irq:softirq_entry: vec=9 [action=RCU]",           # in message 1's hop
        "[000] 100.000600000: sched:sched_migrate_task: comm=gw pid=77 prio=120 orig_cpu=0 dest_cpu=1",
        "[001] 100.000700000: irq:softirq_entry: vec=3 [action=",               # cut short: not an event
        "[000] 101.500000000: irq:softirq_entry: vec=1 [action=TIMER]",         # the trace goes on past both
        "[000] 99.000000000: irq:softirq_entry: vec=1 [action=TIMER]",          # and began before them
        "[001] 100.000510000: irq:softirq_exit: vec=3 [action=NET_RX]",         # NET_RX ran 10 us
        "[001] 101.000530000: irq:softirq_exit: vec=9 [action=RCU]",            # RCU 30 us
        "[001] 100.500000700: irq:irq_handler_exit: irq=36 ret=handled",        # the virtio handler 700 ns
        "[000] 101.000000000: irq:softirq_exit: vec=2 [action=NET_TX]",         # an exit with no entry: ignored
    ]
    sw = Switches.parse(lines)
    assert sw.t_ns.tolist() == [100_000_000_100, 100_000_000_200, 100_000_900_000]
    assert sw.irq_what.tolist() == ["softirq TIMER", "softirq NET_RX", "softirq TIMER", "irq virtio1-req.0",
                                    "softirq RCU", "softirq TIMER"]
    assert sw.span == (99_000_000_000, 101_500_000_000)
    assert sw.interrupts(1, 100_000_000_000, 100_001_000_000) == ["softirq NET_RX"]
    assert sw.moved(77, 100_000_000_000, 100_001_000_000) and not sw.moved(77, 100_001_000_000, 102_000_000_000)
    assert sw.irq_end_ns.tolist() == [-1, 100_000_510_000, -1, 100_500_000_700, 101_000_530_000, -1]
    assert sw.who_took(77, 100_000_000_000, 100_001_000_000) == (True, ["sh"])
    assert sw.who_took(77, 100_000_950_000, 100_002_000_000) == (False, [])  # nothing in that interval
    # A hop that opens with the hog already on the CPU: the hog held it, though it was switched in before.
    assert sw.who_took(77, 100_000_000_150, 100_001_000_000) == (False, ["sh"])
    assert sw.held(1, 100_000_000_150, 100_001_000_000, 77) == [("sh", 100_000_000_150, 100_000_900_000)]
    # An outlier whose wake-up hop spans the hog's turn is tied to it; one elsewhere is not.
    out = Outliers(CHAIN, kept=2)
    cols = _cols(2, 0, {0: (1_000, 1_000, 950_000, 1_000), 1: (1_000, 1_000, 900_000, 1_000)})
    shift = 99_999_998_000 - cols["t_intended"][0] + np.array([0, 10**9])  # message 0's wake-up hop: 100.000002–.000952 s
    cols = {k: (v if k == "seq" else v + shift) for k, v in cols.items()}
    out.add(cols, np.full(2, ord("A"), np.uint8))
    got = out.result(threshold_ns=100_000, typical_ns=[1_000] * 4, switches=sw, hot_tid=77)
    # By hand: message 0's wake-up hop is 100.000000000-100.000950000 s (its stamps start 2 us before), in which
    # sh held CPU 1 from 100.0000001 to 100.0009 (899,900 ns; NET_RX's 10 us fall inside that turn); message 1's
    # is a second later, with RCU's 30 us. Excess over the hops' p50 (1,000 ns): 949,000 + 899,000.
    assert got["scheduler"] == {"outliers": 2, "cpu_taken": 1, "share": 0.5, "hot_thread_preempted": 1,
                                "by_task": {"sh": 1}, "not_traced": 0, "interrupted": 2, "interrupted_share": 1.0,
                                "by_interrupt": {"softirq NET_RX": 1, "softirq RCU": 1}, "migrated": 1,
                                "none_of_these": 0,
                                "held": [{"who": "sh", "kind": "task", "held_ns": 899_900, "outliers": 1},
                                         {"who": "softirq RCU", "kind": "interrupt", "held_ns": 30_000, "outliers": 1},
                                         {"who": "softirq NET_RX", "kind": "interrupt", "held_ns": 10_000,
                                          "outliers": 1}],
                                "excess_ns": 1_848_000, "explained_ns": 899_900 + 30_000,
                                "explained_share": (899_900 + 30_000) / 1_848_000}
    # A time line that begins after an outlier's hop did not look at it: counted apart, never as "none of these".
    late = Switches.parse(lines[1:3])
    assert out.result(threshold_ns=100_000, typical_ns=[1_000] * 4, switches=late, hot_tid=77)["scheduler"][
        "not_traced"] == 2


def test_a_stretch_whose_switch_in_perf_dropped_is_the_task_seen_leaving():
    from itchbench.analysis.switches import Switches
    # perf lost the switch that put the loop (pid 90) on CPU 1 after the gateway (77) went idle: the stretch from
    # the gateway's switch out to the loop's is the loop's, the task seen leaving, not idle's.
    sw = Switches.parse([
        "[001] 10.000100: sched:sched_switch: prev_comm=gw prev_pid=77 prev_prio=120 prev_state=S ==> "
        "next_comm=swapper/1 next_pid=0 next_prio=120",
        "[001] 10.900100: sched:sched_switch: prev_comm=sh prev_pid=90 prev_prio=10 prev_state=R ==> "
        "next_comm=gw next_pid=77 next_prio=120",
    ])
    assert sw.held(1, 10_000_000_000, 11_000_000_000, 77) == [("sh", 10_000_100_000, 10_900_100_000)]
