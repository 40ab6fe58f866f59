// Sequence accounting for a MoldUDP64 (or serial-line) stream. Messages are
// applied in sequence order only: a message behind the expected sequence is
// never applied, but it is told apart as a duplicate (already applied) or a
// late arrival that fills an earlier gap (reordered).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace itchbench {

struct SequenceCounters {
  uint64_t gap_events = 0;          // times the stream jumped ahead
  uint64_t gap_messages = 0;        // sequence numbers skipped by those jumps
  uint64_t duplicate_messages = 0;  // arrived again after being applied
  uint64_t reordered_messages = 0;  // arrived late into a gap (not applied)
  // Skipped and never seen again: the loss a report must account for.
  uint64_t missing_messages() const { return gap_messages - reordered_messages; }
};

class SequenceTracker {
 public:
  // A packet of `count` messages starting at `first`; returns how many of
  // them, from the front, to skip (those behind the expected sequence).
  // The remaining messages are to be applied. Heartbeats pass count 0: their
  // sequence is the next expected one, which reveals a gap at the tail.
  uint64_t on_packet(uint64_t first, uint64_t count) {
    if (first == expected_ && started_) {  // the in-sequence case, inline
      expected_ += count;
      return 0;
    }
    return on_packet_out_of_line(first, count);
  }

  // A stream joined at next (after a snapshot): anything before it is a duplicate, not the start.
  void start_at(uint64_t next) {
    started_ = true;
    expected_ = next;
  }
  bool started() const { return started_; }
  uint64_t expected() const { return expected_; }
  const SequenceCounters& counters() const { return counters_; }

 private:
  struct Range {
    uint64_t lo = 0, hi = 0;  // [lo, hi) still missing
  };
  // Recent gaps only: a late message older than the last kGapMemory gaps is
  // counted as a duplicate. Fixed size keeps this allocation-free.
  static constexpr size_t kGapMemory = 64;
  uint64_t on_packet_out_of_line(uint64_t first, uint64_t count);
  void remember_gap(uint64_t lo, uint64_t hi);
  bool fill_gap(uint64_t seq);

  bool started_ = false;
  uint64_t expected_ = 0;
  SequenceCounters counters_;
  std::array<Range, kGapMemory> gaps_{};
  size_t gap_next_ = 0;
};

}  // namespace itchbench
