#include "log/compact_reader.hpp"

#include <cstring>
#include <string>

namespace itchbench {

BadEscape::BadEscape(size_t slot_, uint8_t kind_)
    : std::runtime_error("escape slot " + std::to_string(slot_) + " has kind " + std::to_string(kind_) +
                         ", which a log of these stages does not hold"),
      slot(slot_), kind(kind_) {}

DecodedSlots decode_compact(const uint8_t* slots, size_t n, uint8_t stages, const logfmt::StageClockLine* line,
                            CompactState& state, uint8_t* out) {
  uint8_t order[logfmt::kStageCount];
  const unsigned count = logfmt::stage_order(stages, order);
  const size_t record_size = logfmt::latency_record_size(stages);
  return for_each_compact(slots, n, stages, state, [&](const logfmt::LatencyRecord& head, const uint64_t* t) {
    std::memcpy(out, &head, sizeof head);
    for (unsigned j = 0; j < count; ++j) {
      const uint64_t v = line ? ticks_to_ns(*line, t[order[j]]) : t[order[j]];
      std::memcpy(out + sizeof head + 8 * j, &v, 8);
    }
    out += record_size;
  });
}

}  // namespace itchbench
