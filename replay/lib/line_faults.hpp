// Faults a feed line suffers at send time (A and B lines, docs/exchange.md):
// packets dropped one by one, in bursts, or all of them while the line is
// silent for a window; packets sent twice; a packet sent after the line's
// next one (reordered). Drawn in send order from seeded streams per line (the
// losses from one, duplicates and reorders from another, so adding these
// leaves a seed's losses as they were): the same seed and capture give the
// same faults on every run. An end-of-session packet is never dropped or
// reordered: the line's end is always seen, last.
#pragma once
#include <cstdint>
#include <string>

#include "replay/lib/rng.hpp"

namespace itchbench::replay {

// "LEN@P": LEN packets in a row, starting at a packet with probability P. False when the text is not that.
bool parse_burst(const std::string& text, uint32_t& length, uint32_t& ppm);
// "FROM:TO", seconds from the start of the schedule. False when the text is not that.
bool parse_window(const std::string& text, uint64_t& from_ns, uint64_t& to_ns);

class LineFaults {
 public:
  LineFaults(uint64_t seed, uint32_t drop_ppm, uint32_t burst_length, uint32_t burst_ppm, uint64_t silent_from_ns,
             uint64_t silent_to_ns, uint32_t duplicate_ppm = 0, uint32_t reorder_ppm = 0)
      : rng_(seed), order_rng_(seed ^ 0xD1B54A32D192ED03ull), drop_ppm_(drop_ppm), burst_length_(burst_length),
        burst_ppm_(burst_ppm), duplicate_ppm_(duplicate_ppm), reorder_ppm_(reorder_ppm), silent_from_(silent_from_ns),
        silent_to_(silent_to_ns) {}

  // Whether the line loses the packet due `at_ns` after the schedule's start. Call once a packet, in order.
  bool drops(uint64_t at_ns, bool end_of_session) {
    // The draws are made for every packet, lost or not, so a window does not shift the rest of the stream.
    const bool burst_starts = burst_left_ == 0 && burst_ppm_ && rng_.chance_ppm(burst_ppm_);
    const bool single = rng_.chance_ppm(drop_ppm_);
    if (burst_starts) burst_left_ = burst_length_;
    const bool in_burst = burst_left_ > 0;
    if (in_burst) --burst_left_;
    if (end_of_session) return false;
    return in_burst || single || (at_ns >= silent_from_ && at_ns < silent_to_);
  }

  // For a packet the line sends: whether it goes twice, and whether it goes after the line's next packet. Call once
  // a packet sent, in order, after drops().
  void order(bool end_of_session, bool& duplicate, bool& reorder) {
    duplicate = order_rng_.chance_ppm(duplicate_ppm_);
    reorder = order_rng_.chance_ppm(reorder_ppm_) && !end_of_session;
  }

 private:
  Rng rng_, order_rng_;
  uint32_t drop_ppm_, burst_length_, burst_ppm_, duplicate_ppm_, reorder_ppm_;
  uint64_t silent_from_, silent_to_;
  uint32_t burst_left_ = 0;
};

}  // namespace itchbench::replay
