#include "pipeline/sequence_tracker.hpp"

namespace itchbench {

uint64_t SequenceTracker::on_packet_out_of_line(uint64_t first, uint64_t count) {
  if (!started_) {
    // A capture may join mid-session: the first sequence seen is the start.
    started_ = true;
    expected_ = first;
  }
  if (first > expected_) {
    ++counters_.gap_events;
    counters_.gap_messages += first - expected_;
    remember_gap(expected_, first);
    expected_ = first;
  }
  const uint64_t end = first + count;
  uint64_t skip = 0;
  for (uint64_t seq = first; seq < end && seq < expected_; ++seq, ++skip) {
    if (fill_gap(seq))
      ++counters_.reordered_messages;
    else
      ++counters_.duplicate_messages;
  }
  if (end > expected_) expected_ = end;
  return skip;
}

void SequenceTracker::remember_gap(uint64_t lo, uint64_t hi) {
  gaps_[gap_next_] = {lo, hi};
  gap_next_ = (gap_next_ + 1) % kGapMemory;
}

bool SequenceTracker::fill_gap(uint64_t seq) {
  for (Range& r : gaps_) {
    if (seq < r.lo || seq >= r.hi) continue;
    // Split the range; the part above seq goes into the slot of the oldest
    // entry when both halves remain.
    if (seq == r.lo) {
      ++r.lo;
    } else if (seq + 1 == r.hi) {
      --r.hi;
    } else {
      const Range upper{seq + 1, r.hi};
      r.hi = seq;
      remember_gap(upper.lo, upper.hi);
    }
    return true;
  }
  return false;
}

}  // namespace itchbench
