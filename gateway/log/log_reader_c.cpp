#include "log/log_reader_c.h"

#include <cstring>
#include <type_traits>

#include "log/compact_reader.hpp"

using namespace itchbench;

static_assert(sizeof(itchlog_clock_line) == sizeof(logfmt::StageClockLine) &&
              std::is_standard_layout_v<logfmt::StageClockLine>);

namespace {

logfmt::StageClockLine line_of(const itchlog_clock_line& c) { return {c.tsc0, c.ns0, c.ns_per_tick_q32, c.reserved}; }

}  // namespace

extern "C" int64_t itchlog_decode_compact(const void* slots, uint64_t n_slots, uint8_t stages,
                                          const itchlog_clock_line* line, itchlog_compact_state* state, void* out,
                                          uint64_t* consumed) {
  CompactState s{state->next_seq, state->prev_origin, state->base};
  const logfmt::StageClockLine clock = line ? line_of(*line) : logfmt::StageClockLine{};
  try {
    const DecodedSlots d = decode_compact(static_cast<const uint8_t*>(slots), n_slots, stages, line ? &clock : nullptr,
                                          s, static_cast<uint8_t*>(out));
    *state = {s.next_seq, s.prev_origin, s.base};
    *consumed = d.consumed;
    return int64_t(d.records);
  } catch (const BadEscape& e) {
    *consumed = e.slot;
    return -1;
  }
}

extern "C" void itchlog_ticks_to_ns(const itchlog_clock_line* line, void* first, uint64_t n, uint64_t stride) {
  const logfmt::StageClockLine clock = line_of(*line);
  auto* p = static_cast<uint8_t*>(first);
  for (uint64_t i = 0; i < n; ++i, p += stride) {
    uint64_t t;
    std::memcpy(&t, p, 8);
    t = ticks_to_ns(clock, t);
    std::memcpy(p, &t, 8);
  }
}
