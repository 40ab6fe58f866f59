"""The collector's arrival stamps against a set of CLOCK_REALTIME, the clock the kernel stamps on: the stamps of the
read that sees a set, and of the reads after it whose bytes waited, are left out (0) and counted, never given a time
off by the set. The clocks here are the test's own: CLOCK_MONOTONIC a counter that moves 10 ns a read,
CLOCK_REALTIME that plus an offset the test sets, so every right stamp is known exactly."""

from __future__ import annotations

import socket

from itchbench.gateways import collector

EPOCH = 1_800_000_000_000_000_000  # a CLOCK_REALTIME of 2027, ns


class Clocks:
    def __init__(self) -> None:
        self.t, self.offset = 1_000_000_000, EPOCH

    def monotonic(self) -> int:
        self.t += 10
        return self.t

    def realtime(self) -> int:
        self.t += 10
        return self.t + self.offset

    def kernel(self, monotonic_ns: int) -> list[tuple[int, int, bytes]]:
        """The ancillary data of a read whose bytes the kernel stamped at monotonic_ns, on CLOCK_REALTIME now."""
        realtime = monotonic_ns + self.offset
        return [(socket.SOL_SOCKET, collector.SO_TIMESTAMPNS,
                 collector.TIMESPEC.pack(realtime // 1_000_000_000, realtime % 1_000_000_000))]


def test_bytes_that_waited_across_a_set_are_left_out_until_a_read_begins_with_none_waiting():
    clocks = Clocks()
    arrivals = collector.Arrivals(clocks.monotonic, clocks.realtime)
    came = clocks.t
    assert arrivals.of(clocks.kernel(came), True) == came  # no set: the arrival, exactly
    # Two reads' bytes come, then the clock is set 500 µs ahead before they are read: by the lead after the set,
    # the first would be put 500 µs early; it is left out, and so is the next read's (bytes waited for it too).
    first, second = clocks.t, clocks.t + 1_000
    stamp_first, stamp_second = clocks.kernel(first), clocks.kernel(second)
    clocks.offset += 500_000
    clocks.t += 2_000
    assert arrivals.of(stamp_first, True) == 0
    assert arrivals.sets == 1 and abs(arrivals.largest_set_ns - 500_000) <= 20
    assert arrivals.of(stamp_second, True) == 0
    # A read that began with nothing waiting: its bytes came after the set, and keep their stamp.
    began = clocks.t
    came = clocks.t + 3_000
    clocks.t += 5_000
    assert arrivals.of(clocks.kernel(came), False) == came
    assert not arrivals.after_set and arrivals.sets == 1


def test_the_read_that_sees_a_set_leaves_its_stamp_out_for_it_may_have_been_several():
    clocks = Clocks()
    arrivals = collector.Arrivals(clocks.monotonic, clocks.realtime)
    assert arrivals.of(clocks.kernel(clocks.t), True) != 0
    # Two sets of 2 ms between looks, the bytes coming between them: by the lead before the first they would be put
    # 2 ms after they came, by the lead after the second 2 ms before. A look sees one move of 4 ms. (Kept when one
    # lead put it within its read, the stamp went in 2 ms early: the lead before put it after the read returned.)
    clocks.offset += 2_000_000
    came = clocks.t + 1_000
    stamp = clocks.kernel(came)
    clocks.offset += 2_000_000
    clocks.t += 100_000
    assert arrivals.of(stamp, True) == 0
    assert arrivals.sets == 1 and abs(arrivals.largest_set_ns - 4_000_000) <= 20
    # One set, the bytes coming after it within a read that began with nothing waiting: left out too, as the look
    # cannot tell one set from several.
    began = clocks.t
    clocks.offset += 500_000
    came = began + 1_000
    stamp = clocks.kernel(came)
    clocks.t += 2_000
    assert arrivals.of(stamp, False) == 0
    assert arrivals.sets == 2
    # The next read that began with nothing waiting keeps its arrival, exactly.
    began = clocks.t
    came = began + 1_000
    clocks.t += 2_000
    assert arrivals.of(clocks.kernel(came), False) == came
    assert not arrivals.after_set


def test_a_lead_that_creeps_is_no_set_and_no_stamp_is_left_out():
    clocks = Clocks()
    arrivals = collector.Arrivals(clocks.monotonic, clocks.realtime)
    for _ in range(1_000):  # 3 µs a read, 3 ms in all: each look within LOOKS_MOVED_NS, measured again when not
        clocks.offset += 3_000
        assert arrivals.of(clocks.kernel(clocks.t - 100), True) != 0
    assert arrivals.sets == 0 and not arrivals.after_set


def test_the_lines_left_out_are_counted_and_said():
    out = collector._Output("/dev/null", "csv", "tcp")
    out.take(b"1,1,100,1,101,1\n2,1,100,2,101,1\n", collector.left_out_stamp(4_000), 0)
    out.take(b"3,1,100,3,101,1\n", 5_000, 0)
    assert out.left_out == 2 and out.unknown == 0
    w2w = {"events": 1, "collector": {"events_across_clock_set": 2, "clock_sets": 1, "largest_clock_set_ns": 500_400}}
    assert collector.stamp_words(w2w) == (
        "2 events were left out of these figures: CLOCK_REALTIME, which the kernel stamps arrivals on, was set 1 time "
        "during the run (by up to 500.4 µs) while they may have waited to be read, and their stamps would be off by "
        "it; each was held to its send by when it was read")
