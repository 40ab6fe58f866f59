#include "pipeline/gap_recovery.hpp"

#include <algorithm>

#include "util/stage_clock.hpp"

namespace itchbench {

namespace {
RecoveryOptions with_clock(RecoveryOptions o) {
  if (!o.clock_ns) o.clock_ns = &monotonic_ns;
  return o;
}
}  // namespace

GapRecovery::GapRecovery(const RecoveryOptions& options)
    : options_(with_clock(options)),
      joining_(options.join),
      bytes_(new uint8_t[size_t(options.hold_packets) * kSlotBytes]),
      slots_(new SlotInfo[options.hold_packets]) {
  // Everything the hold will use, taken now: holding a packet allocates nothing.
  free_.reserve(options.hold_packets);
  for (uint32_t s = options.hold_packets; s > 0; --s) free_.push_back(s - 1);
  order_.reserve(options.hold_packets);
}

void GapRecovery::drop_front() {
  free_.push_back(order_[head_++].slot);
  if (--held_ == 0) {
    order_.clear();
    head_ = 0;
  }
}

bool GapRecovery::held_copy(uint64_t first, uint64_t end) const {
  auto it = std::lower_bound(order_.begin() + ptrdiff_t(head_), order_.end(), first,
                             [](const Held& h, uint64_t f) { return h.first < f; });
  for (; it != order_.end() && it->first == first; ++it)
    if (it->end >= end) return true;
  return false;
}

void GapRecovery::hold(const uint8_t* data, size_t len, uint64_t first, uint64_t end, Line line,
                       const logfmt::Arrival& arrival) {
  const uint32_t slot = free_.back();
  free_.pop_back();
  std::memcpy(bytes_.get() + size_t(slot) * kSlotBytes, data, len);
  slots_[slot] = SlotInfo{uint32_t(len), line, arrival};
  const Held h{first, end, slot};
  auto at = std::upper_bound(order_.begin() + ptrdiff_t(head_), order_.end(), first,
                             [](uint64_t f, const Held& e) { return f < e.first; });
  if (at == order_.begin() + ptrdiff_t(head_) && head_ > 0) {
    order_[--head_] = h;
  } else {
    if (order_.size() == order_.capacity()) {  // the room is before head_: take it back (reserved, no allocation)
      const ptrdiff_t offset = at - order_.begin() - ptrdiff_t(head_);
      order_.erase(order_.begin(), order_.begin() + ptrdiff_t(head_));
      head_ = 0;
      at = order_.begin() + offset;
    }
    order_.insert(at, h);
  }
  ++held_;
  ++counters_.held_packets;
  counters_.held_most = std::max<uint64_t>(counters_.held_most, held_);
}

void GapRecovery::open_gap(uint64_t lo, uint64_t hi, uint64_t now_ns) {
  ++counters_.gaps;
  // With a B line a gap is the other line's to fill first; without a server, that is all the time it has.
  const uint64_t wait = options_.server && !options_.line_b ? 0 : options_.line_wait_ns;
  if (gap_count_ == kMaxGaps) {
    // Out of room: the newest gap takes this one in (what lies between is held or handed on, and missing_run
    // asks only for what is missing).
    gaps_[gap_count_ - 1].hi = hi;
    return;
  }
  gaps_[gap_count_++] = Gap{lo, hi, now_ns + wait, 0, false};
}

void GapRecovery::close_gaps() {
  size_t kept = 0;
  for (size_t i = 0; i < gap_count_; ++i) {
    const Gap& g = gaps_[i];
    if (g.hi <= expected_) {
      ++(g.given_up ? counters_.gaps_given_up : counters_.gaps_filled);
      continue;
    }
    gaps_[kept++] = g;
  }
  gap_count_ = kept;
}

void GapRecovery::answered_in_part(uint64_t answer_first, uint64_t now_ns) {
  for (size_t i = 0; i < gap_count_; ++i) {
    Gap& g = gaps_[i];
    if (g.lo <= answer_first && answer_first < g.hi && expected_ < g.hi && g.requests) {
      g.requests = 0;
      g.due_ns = std::min(g.due_ns, now_ns + kAnswerPauseNs);
      return;
    }
  }
}

void GapRecovery::missing_run(uint64_t lo, uint64_t hi, uint64_t& run_lo, uint64_t& run_hi) const {
  uint64_t start = lo;
  for (size_t i = head_; i < order_.size() && start < hi; ++i) {
    const Held& h = order_[i];
    if (h.end <= h.first || h.end <= start) continue;  // a heartbeat, or behind start
    if (h.first > start) {
      run_lo = start;
      run_hi = std::min(h.first, hi);
      return;
    }
    start = h.end;  // held from before start to past it
  }
  run_lo = std::min(start, hi);
  run_hi = hi;
}

}  // namespace itchbench
