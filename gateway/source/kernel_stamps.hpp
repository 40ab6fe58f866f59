// The kernel's receive stamps (SO_TIMESTAMPNS, on CLOCK_REALTIME) put on the stage clock by their age on
// CLOCK_REALTIME. That clock can be set while a datagram waits to be read — by whatever keeps a VM's time: steps
// of about +500 µs in one CI test command, hitting 12 of its runs — and the age is then off by the step: a
// stamp put 500 µs before its datagram was sent, and a right gateway judged NOT BALANCED. Between sets,
// CLOCK_REALTIME is CLOCK_MONOTONIC plus a constant, and the stage clock is a line fitted to CLOCK_MONOTONIC, so
// the offset between them, read with every stamp, jumps only when the clock was set. A stamp read after a jump
// was seen on a socket not yet found empty since may have been taken before it: it is left out (0) and counted.
#pragma once
#include <time.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "source/feed_line.hpp"
#include "util/stage_clock.hpp"

namespace itchbench {

template <class OtherNow>
class KernelStamps {
 public:
  // A jump beyond a bracket's width and the line's drift between readings, allowed for the time since the last:
  // the fit's error (a few ppm) and a change of CLOCK_MONOTONIC's rate under NTP since. 50 ppm: a 500 µs set is
  // seen across a pause in reading of up to 9.6 s; a slew faster than that over a long pause is taken for a set,
  // and costs only stamps left out.
  static constexpr uint64_t kStepNs = 20'000;
  static constexpr uint64_t kDriftDivisor = 20'000;  // 50 ppm

  KernelStamps(const StageClock& clock, OtherNow other_now) : clock_(clock), other_now_(other_now) {}

  // t_kernel of a datagram just read on `line` that the kernel stamped then_ns; 0 when left out.
  uint64_t place(Line line, uint64_t then_ns) {
    const StageClock::OtherReading r = clock_.read_other(other_now_);
    if (!r.stamp) {
      ++unplaced_;
      return 0;
    }
    observe(r);
    if (waiting_across_step_[size_t(line)]) {
      ++across_step_;
      ++unplaced_;
      return 0;
    }
    return clock_.place(r, then_ns);
  }
  // A reading with no datagram: at the start (else a set while the first datagram waited had no reading before it
  // to be seen against: its stamp hundreds of µs before its send) and now and then while idle, so that a set and
  // its undoing while a datagram waits are seen apart, not taken for no set at all.
  void look() {
    const StageClock::OtherReading r = clock_.read_other(other_now_);
    if (r.stamp) observe(r);
  }
  // The line's socket was found empty: whatever it holds next arrived after every step seen so far.
  void emptied(Line line) { waiting_across_step_[size_t(line)] = false; }

  uint64_t unplaced() const { return unplaced_; }        // left out, for either reason
  uint64_t across_step() const { return across_step_; }  // of those, read after a step on a socket not yet emptied
  uint64_t steps() const { return steps_; }
  uint64_t largest_step_ns() const { return largest_step_ns_; }

 private:
  // The offset at this reading against the last: a jump is a set, and every socket may hold a datagram that waited
  // across it.
  void observe(const StageClock::OtherReading& r) {
    const uint64_t at = clock_.to_ns(r.stamp);
    const int64_t offset = int64_t(r.other_ns - at);
    if (read_before_) {
      const int64_t jump = offset - offset_;
      const uint64_t size = uint64_t(jump < 0 ? -jump : jump);
      if (size > kStepNs + (at - at_) / kDriftDivisor) {
        ++steps_;
        largest_step_ns_ = std::max(largest_step_ns_, size);
        waiting_across_step_.fill(true);
      }
    }
    read_before_ = true;
    offset_ = offset;
    at_ = at;
  }

  const StageClock& clock_;
  OtherNow other_now_;
  bool read_before_ = false;
  int64_t offset_ = 0;  // the other clock minus the stage clock's line, at the last reading
  uint64_t at_ = 0;     // that reading's time on the line
  std::array<bool, kLines> waiting_across_step_{};
  uint64_t unplaced_ = 0, across_step_ = 0, steps_ = 0, largest_step_ns_ = 0;
};

inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
using RealtimeKernelStamps = KernelStamps<uint64_t (*)()>;

}  // namespace itchbench
