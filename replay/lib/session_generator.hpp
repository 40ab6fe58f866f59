// Deterministic ITCH 5.0 session generator: a seed and a configuration give
// the same message stream, byte for byte, on every machine.
//
// Book dynamics are valid: executions, cancels, deletes and replaces name
// live orders only (unless unknown_ref_ppm asks for references to orders
// that never existed, as in a capture joined mid-session), shares never go
// below zero, replaced orders keep their side.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "protocol/itch.hpp"
#include "replay/lib/rng.hpp"

namespace itchbench::replay {

// Relative weights per message type for the body of the session (after the
// preamble). Integer weights keep the draw exact and portable.
using MessageMix = std::array<uint32_t, itch::kTypeCount>;
MessageMix parse_mix(const std::string& spec);  // "A=44,D=43,U=7"; throws on bad input
std::string format_mix(const MessageMix& mix);

struct Timing {
  // Two-state arrival process: quiet and burst, each with uniformly drawn
  // gaps of the given mean; switching with the given per-message chances.
  uint64_t quiet_mean_gap_ns = 2409639;  // ~415 msg/s
  uint64_t burst_mean_gap_ns = 0;        // 0: no bursts
  uint32_t enter_burst_ppm = 0;
  uint32_t leave_burst_ppm = 0;
};

struct GeneratorConfig {
  std::string profile;
  uint64_t seed = 1;
  uint64_t messages = 7000;  // total, preamble and end-of-day events included
  std::vector<std::string> symbols;
  MessageMix mix{};
  bool price_changing_replaces = false;  // U always moves the price
  uint32_t unknown_ref_ppm = 0;          // E/C/X/D/U naming orders that never existed
  uint64_t start_ns = 34200000000000ull; // 09:30:00 in ns since midnight
  Timing timing;
  bool end_of_day_events = false;        // S M/E/C at the end
  // Where a new order's price falls: 0, a few ticks from the mid (geometric, as most of a real day); N, anywhere
  // in the N ticks from the mid (uniform), which builds hundreds of levels a side.
  uint32_t price_band_ticks = 0;
  // Fields at the widths the spec gives them, where a real day's values stay narrow (the wide-fields profile).
  uint64_t first_order_ref = 1;
  bool spread_locates = false;      // the wire's locates spread over 1..65,535, the directory's order kept
  bool wide_prices = false;         // mids from $0.01 to $199,000; below $1 in $0.0001 ticks
  uint32_t block_order_ppm = 0;     // adds and replaces of 65,536 to 50,000,000 shares
  // Adds of 2^31 to 2^32 - 1 shares on the last symbol's bid (the least traded, whose mid stays put), a tick below
  // its mid: two live at once make a level of more than 2^32 shares, most often its best bid.
  uint32_t stacked_order_ppm = 0;
};

GeneratorConfig seed_workload_profile();
GeneratorConfig nasdaq_day_profile(size_t symbol_count = 500);
GeneratorConfig deep_book_profile();
GeneratorConfig wide_fields_profile();
// Names "profile" resolves to; throws std::invalid_argument for others.
GeneratorConfig profile_by_name(const std::string& name);
std::vector<std::string> synthetic_symbols(size_t count);  // deterministic names

struct GeneratorStats {
  uint64_t messages = 0;
  uint64_t per_type[itch::kTypeCount] = {};
  uint64_t max_live_orders = 0;
  uint64_t last_timestamp_ns = 0;
};

// Calls sink(bytes, length, itch_timestamp_ns) for every message, in order.
using MessageSink = std::function<void(const uint8_t*, uint16_t, uint64_t)>;
GeneratorStats generate_session(const GeneratorConfig& config, const MessageSink& sink);

}  // namespace itchbench::replay
