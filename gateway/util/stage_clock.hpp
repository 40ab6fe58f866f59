// The clock that stamps pipeline stages. On an invariant TSC (the usual
// case, and the kernel's own clocksource here) a stamp is one rdtsc and a
// multiply: about 10 ns against about 22 ns for clock_gettime on these VMs.
// Ticks are mapped to CLOCK_MONOTONIC nanoseconds by a line fitted at start;
// without an invariant TSC, clock_gettime(CLOCK_MONOTONIC) is used instead.
#pragma once
#include <time.h>
#include <x86intrin.h>

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
  static StageClock monotonic();  // clock_gettime only

  uint64_t now() const {
    if (!tsc_) return monotonic_ns();
    const uint64_t dt = __rdtsc() - tsc0_;
    return ns0_ + uint64_t((unsigned __int128)dt * mult_ >> 32);
  }
  logfmt::StageClock source() const { return tsc_ ? logfmt::StageClock::kTsc : logfmt::StageClock::kMonotonic; }
  double ticks_per_ns() const { return tsc_ ? 4294967296.0 / double(mult_) : 0.0; }
  // The stage time at which the clock equalled CLOCK_MONOTONIC (the end of calibration).
  uint64_t anchor_ns() const { return ns0_; }

 private:
  bool tsc_ = false;
  uint64_t tsc0_ = 0, ns0_ = 0;
  uint64_t mult_ = 0;  // ns per tick, 32.32 fixed point
};

}  // namespace itchbench
