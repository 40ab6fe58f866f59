// When each captured packet or message is due, relative to the first, at
// capture timing divided by a speed multiplier. Capture timestamps are not
// trusted to be monotone (clock steps, merged captures, hostile files): one
// earlier than the latest seen so far is due at once — never a deadline in
// the past that makes the replay rush, never an unsigned underflow that
// makes it sleep for centuries. Such steps are counted for the report.
#pragma once
#include <cstdint>

namespace itchbench::replay {

class CaptureSchedule {
 public:
  explicit CaptureSchedule(double multiplier) : multiplier_(multiplier) {}

  // Nanoseconds after the start at which the item stamped capture_ns is due;
  // never less than for any earlier item.
  uint64_t due(uint64_t capture_ns) {
    if (!started_) {
      started_ = true;
      first_ = latest_ = capture_ns;
    } else if (capture_ns < latest_) {
      ++backwards_;
      capture_ns = latest_;
    }
    latest_ = capture_ns;
    return uint64_t(double(capture_ns - first_) / multiplier_);
  }

  uint64_t backwards_steps() const { return backwards_; }

 private:
  double multiplier_;
  bool started_ = false;
  uint64_t first_ = 0, latest_ = 0, backwards_ = 0;
};

}  // namespace itchbench::replay
