// The clock that stamps pipeline stages. On an invariant TSC (the usual
// case, and the kernel's own clocksource here) a stamp is one rdtsc, stored
// raw: 8-10 ns back to back against about 22 ns for clock_gettime on these
// VMs, and the conversion to ns (a line onto CLOCK_MONOTONIC fitted at
// start) is left to whoever reads the log, which carries the line. Without
// an invariant TSC of at least 1 GHz, a stamp is clock_gettime in ns.
// Amid work a read can cost much more: on the Intel VMs nothing after it
// starts until the loads before it are done, so the cache misses it
// separates no longer overlap (book_bench BM_StageClockAmidMisses); yet it
// reads the counter without waiting for those loads (now_after_loading).
#pragma once
#include <time.h>
#include <x86intrin.h>

#include <cstddef>
#include <cstdint>

#include "log/log_format.hpp"

namespace itchbench {

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

class StageClock {
 public:
  // Measures the TSC rate against CLOCK_MONOTONIC over calibration_ms.
  static StageClock calibrate(unsigned calibration_ms = 20);
  // The same, the two clocks read by tsc_now() and monotonic_now() (a test's clocks), whatever the CPU. Each end
  // of the fit is the narrowest of kReadings brackets of a CLOCK_MONOTONIC read between two TSC reads: an
  // interrupt or a preemption between a pair of reads took 1-2 us on a busy VM, which over 20 ms put the rate
  // 100-500 ppm off and the line's origin as far; a kernel stamp's age (seconds, behind a slow consumer) moved
  // back by that rate then landed before its datagram was sent.
  static constexpr int kReadings = 16;
  template <class TscNow, class MonotonicNow>
  static StageClock calibrate_with(TscNow tsc_now, MonotonicNow monotonic_now, unsigned calibration_ms);
  static StageClock monotonic();  // clock_gettime only

  // A stamp: raw TSC ticks, or CLOCK_MONOTONIC ns (source()).
  uint64_t now() const { return tsc_ ? __rdtsc() : monotonic_ns(); }
  // A stamp once the bytes [p, p + n) are loaded: every cache line of them
  // read, then a load fence. A TSC read does not wait for the loads before
  // it to read the counter, so a datagram handed over from a capture in memory was stamped
  // before its lines arrived and their misses counted as its decoding (seed
  // fixture: decode p99 18 -> 30 ns); a live receive is stamped after
  // recvmsg has copied the datagram, and this stamp means the same.
  uint64_t now_after_loading(const uint8_t* p, size_t n) const {
    constexpr uintptr_t kLine = 64;
    const uintptr_t end = uintptr_t(p) + n;
    // p's own line through p, then each later line at its start: no byte outside [p, p + n) is read.
    for (uintptr_t at = uintptr_t(p); at < end; at = (at & ~(kLine - 1)) + kLine)
      static_cast<void>(*reinterpret_cast<volatile const uint8_t*>(at));
    _mm_lfence();
    return now();
  }
  // A stamp of now() in ns on the line (CLOCK_MONOTONIC at calibration);
  // stamps before the line's origin map to ns0.
  uint64_t to_ns(uint64_t stamp) const {
    return tsc_ ? logfmt::ns_on_line(line_, stamp) : stamp;
  }
  // The stamp ns nanoseconds before `stamp`, no earlier than the line's origin.
  uint64_t earlier(uint64_t stamp, uint64_t ns) const;
  // Another clock read between two stamps close together: the stamp at the bracket's middle, and that clock's
  // value then. A preemption between the reads would misplace what is put on the stage clock by it by its length,
  // hundreds of µs on a busy VM (a kernel stamp put before its datagram was sent), so a bracket wider than
  // kMaxBracketNs is read again, up to 4 times; {0, 0} when none was that close.
  static constexpr uint64_t kMaxBracketNs = 2000;  // a clock_gettime between two TSC reads takes ~40 ns
  struct OtherReading {
    uint64_t stamp = 0, other_ns = 0;
  };
  template <class OtherNow>
  OtherReading read_other(OtherNow other_now) const {
    for (int attempt = 0; attempt < 4; ++attempt) {
      const uint64_t before = now();
      const uint64_t other = other_now();
      const uint64_t after = now();
      if (to_ns(after) - to_ns(before) < kMaxBracketNs) return {before + (after - before) / 2, other};
    }
    return {};
  }
  // The stamp of then_ns, an instant on the other clock (a kernel's arrival stamp): its age on that clock at the
  // reading, taken back from the reading's stamp; 0 (no stamp) for no reading.
  uint64_t place(const OtherReading& r, uint64_t then_ns) const {
    return r.stamp ? earlier(r.stamp, r.other_ns > then_ns ? r.other_ns - then_ns : 0) : 0;
  }
  template <class OtherNow>
  uint64_t from_other_clock(uint64_t then_ns, OtherNow other_now) const {
    return place(read_other(other_now), then_ns);
  }

  logfmt::StageClock source() const { return tsc_ ? logfmt::StageClock::kTscTicks : logfmt::StageClock::kMonotonic; }
  // What a log needs to convert the stamps (all zero for monotonic stamps).
  const logfmt::StageClockLine& line() const { return line_; }
  double ticks_per_ns() const { return tsc_ ? 4294967296.0 / double(line_.ns_per_tick_q32) : 0.0; }
  // The stage time in ns at which the clock equalled CLOCK_MONOTONIC (the end of calibration).
  uint64_t anchor_ns() const { return line_.ns0; }

 private:
  // Both clocks at one instant: the TSC at the middle of the narrowest bracket, and the CLOCK_MONOTONIC read in it.
  struct Reading {
    uint64_t tsc, ns;
  };
  template <class TscNow, class MonotonicNow>
  static Reading read_together(TscNow& tsc_now, MonotonicNow& monotonic_now) {
    Reading best{0, 0};
    uint64_t narrowest = UINT64_MAX;
    for (int i = 0; i < kReadings; ++i) {
      const uint64_t before = tsc_now();
      const uint64_t ns = monotonic_now();
      const uint64_t after = tsc_now();
      if (after >= before && after - before < narrowest) {
        narrowest = after - before;
        best = {before + narrowest / 2, ns};
      }
    }
    return best;
  }

  bool tsc_ = false;
  logfmt::StageClockLine line_{};
};

template <class TscNow, class MonotonicNow>
StageClock StageClock::calibrate_with(TscNow tsc_now, MonotonicNow monotonic_now, unsigned calibration_ms) {
  StageClock c;
  const Reading a = read_together(tsc_now, monotonic_now);
  while (monotonic_now() - a.ns < uint64_t(calibration_ms) * 1000000ull) {
    // busy-wait: sleeping would add scheduler noise to the fit
  }
  const Reading b = read_together(tsc_now, monotonic_now);
  if (b.tsc <= a.tsc || b.ns <= a.ns) return c;
  const uint64_t q32 = uint64_t(((unsigned __int128)(b.ns - a.ns) << 32) / (b.tsc - a.tsc));
  // Readers convert with 64-bit halves (FORMAT.md), exact only for a rate below 2^32 (a TSC of 1 GHz or more).
  if (q32 == 0 || q32 >= (uint64_t(1) << 32)) return c;
  c.tsc_ = true;
  c.line_.tsc0 = b.tsc;
  c.line_.ns0 = b.ns;
  c.line_.ns_per_tick_q32 = q32;
  return c;
}

}  // namespace itchbench
