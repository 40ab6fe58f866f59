#include "log/compact_reader.hpp"

#include <cstring>
#include <string>

namespace itchbench {

BadEscape::BadEscape(size_t slot_, uint8_t kind_)
    : std::runtime_error("escape slot " + std::to_string(slot_) + " has kind " + std::to_string(kind_) +
                         ", which a log of these stages does not hold"),
      slot(slot_), kind(kind_) {}

namespace {

constexpr size_t kSlot = sizeof(logfmt::CompactLatencyRecord);

bool is_escape(const uint8_t* slot) { return slot[kSlot - 1] & logfmt::kEscapeSlot; }

}  // namespace

DecodedSlots decode_compact(const uint8_t* slots, size_t n, uint8_t stages, const logfmt::StageClockLine* line,
                            CompactState& state, uint8_t* out) {
  unsigned order[logfmt::kStageCount];
  unsigned count = 0;
  for (unsigned i = 0; i < logfmt::kStageCount; ++i)
    if (stages >> i & 1) order[count++] = i;
  const size_t record_size = logfmt::latency_record_size(stages);

  size_t end = n;  // one past the last message slot
  while (end > 0 && is_escape(slots + (end - 1) * kSlot)) --end;

  // A message's escapes, gathered until its slot comes.
  bool has_seq = false, has_origin = false;
  uint64_t seq = 0, origin = 0;
  uint64_t stamp_escape[logfmt::kStageCount];
  unsigned escaped_stages = 0;  // bit per stage index
  size_t records = 0;
  CompactState s = state;
  for (size_t i = 0; i < end; ++i) {
    const uint8_t* p = slots + i * kSlot;
    if (is_escape(p)) {
      logfmt::LatencyEscape e;
      std::memcpy(&e, p, sizeof e);
      const uint64_t value = uint64_t(e.value_hi) << 32 | e.value_lo;
      if (e.kind == logfmt::kEscapeSeq) {
        has_seq = true, seq = value;
      } else if (e.kind == logfmt::kEscapeOrigin) {
        has_origin = true, origin = value;
      } else if (e.kind == logfmt::kEscapeBase) {
        s.base = value;
      } else {
        const unsigned stage = unsigned(e.kind) - logfmt::kEscapeStamp;
        // The first stage is never escaped: its difference moves the base instead.
        if (e.kind < logfmt::kEscapeStamp || stage >= logfmt::kStageCount || !(stages >> stage & 1) ||
            stage == order[0])
          throw BadEscape(i, e.kind);
        stamp_escape[stage] = value;
        escaped_stages |= 1u << stage;
      }
      continue;
    }
    logfmt::CompactLatencyRecord m;
    std::memcpy(&m, p, sizeof m);
    logfmt::LatencyRecord head{};
    head.seq = has_seq ? seq : s.next_seq;
    head.t_origin = has_origin ? origin : s.prev_origin + m.origin_delta;
    head.stock_locate = m.stock_locate;
    head.msg_type = m.msg_type;
    head.flags = m.flags;
    uint8_t* rec = out + records * record_size;
    std::memcpy(rec, &head, sizeof head);
    uint64_t prev = s.base;
    for (unsigned j = 0; j < count; ++j) {
      const unsigned stage = order[j];
      const uint64_t field = j == 0 ? m.first : m.steps[j - 1];
      uint64_t t = field ? prev + field - 1 : 0;
      if (escaped_stages >> stage & 1) t = stamp_escape[stage];
      prev = t ? t : prev;
      if (line) t = ticks_to_ns(*line, t);
      std::memcpy(rec + sizeof head + 8 * j, &t, 8);
    }
    s.next_seq = head.seq + 1;
    s.prev_origin = head.t_origin;
    has_seq = has_origin = false;
    escaped_stages = 0;
    ++records;
  }
  state = s;
  return {records, end};
}

}  // namespace itchbench
