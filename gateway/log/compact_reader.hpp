// Reading a compact (version-5) latency log back: slots of differences and
// escapes decoded into the version-3 records of the log's stages, the stamps
// optionally mapped from raw TSC ticks to ns by the log's clock line. The
// harness's report reads a whole day's log through this (via log_reader_c.h),
// the sequential state machine the format is being a poor fit for numpy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "log/log_format.hpp"

namespace itchbench {

// What a slot is read against: the previous message's values and the base (FORMAT.md).
struct CompactState {
  uint64_t next_seq = 1;
  uint64_t prev_origin = 0;
  uint64_t base = 0;
  friend bool operator==(const CompactState& a, const CompactState& b) {
    return a.next_seq == b.next_seq && a.prev_origin == b.prev_origin && a.base == b.base;
  }
};

// An escape slot whose kind a log of these stages cannot hold.
struct BadEscape : std::runtime_error {
  BadEscape(size_t slot, uint8_t kind);
  size_t slot;
  uint8_t kind;
};

// A log's stamp in ns: 0 (not stamped) stays 0.
inline uint64_t ticks_to_ns(const logfmt::StageClockLine& line, uint64_t t) {
  return t ? logfmt::ns_on_line(line, t) : 0;
}

struct DecodedSlots {
  size_t records;   // written to out
  size_t consumed;  // slots read: up to the last message slot (escapes after it wait for the slots that follow)
};

// Decodes slots[0, n), calling sink(head, stamps) for each message: its head (as version 3 writes it) and its
// stamps as stored, indexed by stage (0 kernel .. 4 published; 0 where not stamped or not in `stages`). Moves
// state past them. Arithmetic modulo 2^64, as the writer's. Throws BadEscape.
template <class Sink>
DecodedSlots for_each_compact(const uint8_t* slots, size_t n, uint8_t stages, CompactState& state, Sink&& sink) {
  constexpr size_t kSlot = sizeof(logfmt::CompactLatencyRecord);
  const auto is_escape = [](const uint8_t* slot) { return slot[kSlot - 1] & logfmt::kEscapeSlot; };
  uint8_t order[logfmt::kStageCount];
  const unsigned count = logfmt::stage_order(stages, order);

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
    uint64_t t[logfmt::kStageCount] = {};
    // A stamp is the last one's plus its step (0: not stamped), or its escape's value. Nearly every message has no
    // escape: that loop tests none (the tests took 22 of the 171 instructions a row of reading and decoding).
    const auto stamps = [&](auto escapes) {
      uint64_t prev = s.base;
      for (unsigned j = 0; j < count; ++j) {
        const unsigned stage = order[j];
        const uint64_t field = j == 0 ? m.first : m.steps[j - 1];
        uint64_t v = field ? prev + field - 1 : 0;
        if (decltype(escapes)::value && (escaped_stages >> stage & 1)) v = stamp_escape[stage];
        prev = v ? v : prev;
        t[stage] = v;
      }
    };
    if (__builtin_expect(escaped_stages == 0, 1))
      stamps(std::false_type{});
    else
      stamps(std::true_type{});
    sink(head, t);
    s.next_seq = head.seq + 1;
    s.prev_origin = head.t_origin;
    has_seq = has_origin = false;
    escaped_stages = 0;
    ++records;
  }
  state = s;
  return {records, end};
}

// Decodes slots[0, n) into out, latency_record_size(stages) bytes a record (room for n records), moving state
// past them. line: map the stamps to ns (nullptr: keep them as stored). Arithmetic modulo 2^64, as the writer's.
// Throws BadEscape.
DecodedSlots decode_compact(const uint8_t* slots, size_t n, uint8_t stages, const logfmt::StageClockLine* line,
                            CompactState& state, uint8_t* out);

}  // namespace itchbench
